// A whole-node op (issue 4): remove, archive or un-archive every edge of one node of a graph
// in one write ("put a spammer on ice" and the way back). The rules that combine it with the
// edge ops racing with it are in core/edge_rules.hpp (node_registers, edge_effective_state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::core {

enum class model : std::uint8_t;

// Stored codes: never change their meaning.
enum class node_action : std::uint8_t { remove = 0, archive = 1, unarchive = 2 };

std::string_view node_action_name(node_action a) noexcept;
std::optional<node_action> node_action_from_name(std::string_view name) noexcept;
std::optional<node_action> node_action_from_code(std::uint64_t code) noexcept;

struct node_op {
    static constexpr model kind = static_cast<model>(2);  // model::node
    std::string graph;         // [A-Za-z0-9_]{1,32}
    std::int64_t node_id = 0;  // >= 0
    node_action action = node_action::remove;

    friend bool operator==(const node_op&, const node_op&) = default;
};

}  // namespace cairn::core
