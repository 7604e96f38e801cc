// JSON-object bodies of the document models (cells, entities) as stored bodies and back:
// canonical msgpack (object keys sorted; a repeated key is refused), so that equal
// objects are equal bytes whatever the key order a client sent; zstd above a threshold
// (core/document.hpp). Included by the files that parse bodies (it pulls in simdjson).
#pragma once

#include "core/document.hpp"
#include "net/edge_json.hpp"

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cairn::net::detail {

// The largest msgpack a stored body may decompress to (a bomb stops there).
inline constexpr std::size_t stored_body_decoded_max = 16 * core::stored_body_bytes_max;
// Elements of one array, or members of one object, anywhere in a body. One definition for both
// sides: a write over it is refused (400), so that every acknowledged body reads back (issue 13).
inline constexpr std::size_t stored_body_elements_max = 65'536;
// Nesting of a stored body as its reader accepts it; the JSON parsers of the writes allow less.
inline constexpr std::size_t stored_body_depth_max = 64;

// value must be a JSON object with at most stored_body_elements_max elements in any array or
// object, no key twice in one object, and at most stored_body_depth_max levels; the stored body must fit
// core::stored_body_bytes_max. Errors name field.
std::variant<std::string, input_error> stored_body_of(const simdjson::dom::element& value, const std::string& field,
                                                      std::size_t compress_min);

// A stored body as JSON text (keys sorted); nullopt if it does not decode.
std::optional<std::string> stored_body_json(std::string_view stored);

}  // namespace cairn::net::detail
