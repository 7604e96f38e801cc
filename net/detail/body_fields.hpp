// The small JSON bodies of the admin API (an object of scalars: booleans, non-negative integers,
// strings), parsed with this thread's depth-limited simdjson parser: each field's type is checked
// when it is taken, and a field the request does not know is refused by name.
#pragma once

#include "net/edge_json.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace cairn::net::detail {

class body_fields {
public:
    // An empty body is the empty object. Errors name the field (or "body").
    std::optional<input_error> parse(std::string_view body, std::span<const std::string_view> known);

    std::variant<std::optional<std::uint64_t>, input_error> uint(const std::string& key, std::uint64_t max) const;
    std::variant<std::optional<bool>, input_error> boolean(const std::string& key) const;
    std::variant<std::optional<std::string>, input_error> string(const std::string& key) const;

private:
    std::map<std::string, std::uint64_t> uints_;
    std::map<std::string, bool> bools_;
    std::map<std::string, std::string> strings_;
};

// Takes one field's value into out, or its error.
template <class T>
std::optional<input_error> take(std::variant<std::optional<T>, input_error> v, std::optional<T>& out) {
    if (auto* e = std::get_if<input_error>(&v)) return *e;
    out = std::get<std::optional<T>>(v);
    return std::nullopt;
}

}  // namespace cairn::net::detail
