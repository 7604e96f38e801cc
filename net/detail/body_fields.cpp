#include "net/detail/body_fields.hpp"

#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>

namespace cairn::net::detail {

namespace {
constexpr std::size_t body_fields_depth_max = 8;
}

std::optional<input_error> body_fields::parse(std::string_view body, std::span<const std::string_view> known) {
    thread_local simdjson::dom::parser parser(64 * 1024);
    if (parser.max_depth() != body_fields_depth_max) {
        if (parser.allocate(64 * 1024, body_fields_depth_max) != simdjson::SUCCESS) return input_error{"body", "cannot be parsed"};
    }
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
    simdjson::dom::element root;
    if (auto err = parser.parse(body.data(), body.size(), true).get(root); err) {
        return input_error{"body", fmt::format("is not valid JSON: {}", simdjson::error_message(err))};
    }
    if (!root.is_object()) return input_error{"body", "must be a JSON object"};
    const simdjson::dom::object fields = root.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            return input_error{std::string(key), "is not a field of this request"};
        }
        if (value.is_bool()) {
            bools_[std::string(key)] = value.get_bool().value_unsafe();
        } else if (value.is_uint64()) {
            uints_[std::string(key)] = value.get_uint64().value_unsafe();
        } else if (value.is_string()) {
            strings_[std::string(key)] = std::string(value.get_string().value_unsafe());
        } else {
            return input_error{std::string(key), "must be a boolean, a non-negative integer or a string"};
        }
    }
    return std::nullopt;
}

std::variant<std::optional<std::uint64_t>, input_error> body_fields::uint(const std::string& key, std::uint64_t max) const {
    if (strings_.contains(key) || bools_.contains(key)) return input_error{key, "must be a non-negative integer"};
    auto it = uints_.find(key);
    if (it == uints_.end()) return std::optional<std::uint64_t>{};
    if (it->second > max) return input_error{key, fmt::format("must be at most {}", max)};
    return std::optional<std::uint64_t>{it->second};
}

std::variant<std::optional<bool>, input_error> body_fields::boolean(const std::string& key) const {
    if (strings_.contains(key) || uints_.contains(key)) return input_error{key, "must be true or false"};
    auto it = bools_.find(key);
    if (it == bools_.end()) return std::optional<bool>{};
    return std::optional<bool>{it->second};
}

std::variant<std::optional<std::string>, input_error> body_fields::string(const std::string& key) const {
    if (uints_.contains(key) || bools_.contains(key)) return input_error{key, "must be a string"};
    auto it = strings_.find(key);
    if (it == strings_.end()) return std::optional<std::string>{};
    return std::optional<std::string>{it->second};
}

}  // namespace cairn::net::detail
