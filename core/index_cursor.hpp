// The opaque cursor of a page of an index query (GET /v1/indexes/{name}/query): where the page ends
// — the last row's key, its values and object id — bound to the query that made it. Pure values
// and a text encoding; no I/O, any thread.
//
// Encoding (docs/api.md calls it opaque): lowercase hex of msgpack [values..., id] (integers and
// booleans as msgpack integers, ids and strings as bin, the object id as bin of 16 bytes), then 12
// hex digits of core::cursor_check(scope, those bytes), so that a cursor of another query (index
// and conditions) or a changed one is refused rather than paging something else.
#pragma once

#include "core/indexes.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

struct index_cursor {
    std::vector<index_value> values;  // the last row's values, in key order
    std::string object_id;            // 16 bytes: the entity id, or a cell's row_key

    friend bool operator==(const index_cursor&, const index_cursor&) = default;
};

inline constexpr std::size_t index_cursor_chars_max = 2048;

std::string encode_index_cursor(const index_cursor& c, std::string_view scope);
// nullopt unless text is a cursor of def (one value per property, of the property's type, and a
// 16-byte id) for this scope, spelt as encode_index_cursor spells it, at most index_cursor_chars_max.
std::optional<index_cursor> decode_index_cursor(const index_def& def, std::string_view text, std::string_view scope) noexcept;

}  // namespace cairn::core
