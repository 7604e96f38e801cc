#include "core/op.hpp"

#include <array>
#include <utility>

namespace cairn::core {
namespace {

constexpr std::array<std::pair<model, std::string_view>, 6> model_names{{
    {model::edge, "edge"},
    {model::node, "node"},
    {model::entity, "entity"},
    {model::cell, "cell"},
    {model::counter, "counter"},
    {model::index, "index"},
}};

}  // namespace

std::string_view model_name(model m) noexcept {
    for (const auto& [value, name] : model_names) {
        if (value == m) return name;
    }
    return "unknown";
}

std::optional<model> model_from_name(std::string_view name) noexcept {
    for (const auto& [value, n] : model_names) {
        if (n == name) return value;
    }
    return std::nullopt;
}

}  // namespace cairn::core
