// The one way untrusted JSON is parsed: simdjson with cairn's depth limit, on this thread's
// parser. Included only by the files that read JSON bodies (it pulls in simdjson).
#pragma once

#include "net/edge_json.hpp"

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

namespace cairn::net::detail {

// Deep enough for a set expression one level past its own limit (4 operations: 9 levels, so that
// a fifth is refused by name, at 11), and no deeper.
inline constexpr std::size_t json_depth_max = 12;

// Parses body into root (valid until this thread parses again), or says why it is not JSON.
std::optional<input_error> parse_json(std::string_view body, simdjson::dom::element& root);

// The name an input_error gives a member: "prefix.key", or key when the member is at the top.
std::string field_path(std::string_view prefix, std::string_view key);

}  // namespace cairn::net::detail
