// The typed values an entity body gives an index (writes compute index entries with it; queries
// re-filter canonical entities with it). Included by the entity and index routes (simdjson).
#pragma once

#include "core/indexes.hpp"
#include "net/edge_json.hpp"

#include <simdjson.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cairn::net::detail {

// A body's values for def, in key order: nullopt when a property is missing or null (the entity
// is not in the index); an input_error naming "body.<property>" when a value does not fit its
// type (id: 16 bytes as hex or UUID text; int: a 64-bit integer; string: at most its length;
// bool: true or false).
std::variant<std::optional<std::vector<core::index_value>>, input_error> index_values_of(
    const core::index_def& def, const simdjson::dom::element& body);

// The entries of a body for the indexes of defs that read `column` (empty: entity indexes; a
// cell's column: that column's cell indexes), with their routing hashes.
std::variant<std::vector<core::index_entry>, input_error> index_entries_of(const std::vector<core::index_def>& defs,
                                                                           const simdjson::dom::element& body,
                                                                           std::string_view column);

// A query parameter's text as a property's typed value, or why not.
std::variant<core::index_value, std::string> index_value_of_text(const core::index_property& p, std::string_view text);

}  // namespace cairn::net::detail
