#include "net/detail/json_parse.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cairn::net::detail {

// The parser's buffers only ever grow, so a request does not allocate them again, and the body
// is copied once into the parser's padded buffer (simdjson needs padding after the input)
// instead of into a new padded_string.
std::optional<input_error> parse_json(std::string_view body, simdjson::dom::element& root) {
    thread_local simdjson::dom::parser parser;
    if (parser.capacity() < body.size() || parser.max_depth() != json_depth_max) {
        const std::size_t capacity = std::max<std::size_t>({body.size(), parser.capacity(), 64 * 1024});
        if (parser.allocate(capacity, json_depth_max) != simdjson::SUCCESS) {
            return input_error{"body", "cannot be parsed (too large)"};
        }
    }
    if (auto err = parser.parse(body.data(), body.size(), true).get(root); err) {
        return input_error{"body", fmt::format("is not valid JSON: {}", simdjson::error_message(err))};
    }
    return std::nullopt;
}

std::string field_path(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
}

}  // namespace cairn::net::detail
