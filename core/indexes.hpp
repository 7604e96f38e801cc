// Secondary indexes (issue 5, FriendFeed) of entities and of cells (issue 6): definitions, the
// typed values a body gives an index, and the op that creates or drops an index. Plain values,
// no I/O.
//
// An index is its own table on every shard, index_<name>(p0 [, p1 ...], entity_id, ts, deleted,
// PRIMARY KEY (p0 [, p1 ...], entity_id)); the row of an object lives on the shard of its
// shard_on property's value. Index rows may lag or be stale: a query re-applies its filter to
// the canonical object, so a stale row never produces a wrong result.
//
// An entity index reads the bodies of one entity kind; entity_id is the entity's id and ts the
// hlc of the entity write. A cell index reads one column of one cell table, the latest ref_key
// of that column being the row's current value; entity_id is the cell's row_key and ts its
// ref_key in order (cell_index_version), so that a newer version's row wins over an older one's
// exactly as a newer entity write's does.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::core {

enum class model : std::uint8_t;

// Stored codes: never change their meaning.
enum class index_value_type : std::uint8_t { id = 0, integer = 1, string = 2, boolean = 3 };
std::string_view index_type_name(index_value_type t) noexcept;
std::optional<index_value_type> index_type_from_name(std::string_view name) noexcept;

struct index_property {
    std::string name;  // the entity body's top-level property: 1..64 bytes of [A-Za-z0-9_]
    index_value_type type = index_value_type::string;
    std::size_t length_max = 0;  // strings: bytes, 1..255

    friend bool operator==(const index_property&, const index_property&) = default;
};

inline constexpr std::size_t index_properties_max = 4;

struct index_def {
    std::string name;    // [a-z][a-z0-9_]{0,47}; the table is index_<name>
    std::string kind;  // an entity kind; for a cell index, the cell table
    std::vector<index_property> properties;  // 1..index_properties_max, in key order
    std::size_t shard_on = 0;                // index into properties
    std::string column;  // empty: an entity index; else the cell column it reads (1..64 bytes)

    bool on_cells() const noexcept { return !column.empty(); }
    std::string sql_name() const { return "index_" + name; }
    friend bool operator==(const index_def&, const index_def&) = default;
};

bool valid_index_name(std::string_view name) noexcept;
// Every rule of a definition; the first broken one as "field: why" (fields as in the API body).
std::optional<std::string> check_index_def(const index_def& d);

// Definitions as stored on the shards and in journal records (msgpack).
std::string encode_index_def(const index_def& d);
result<index_def> decode_index_def(std::string_view bytes);

// One typed value of an index property. id: its 16 bytes in the string; bool: 0 or 1.
using index_value = std::variant<std::int64_t, std::string>;

// Creates (dropped = false) or drops an index: written on every shard's index_defs, last writer
// wins by ts; creating makes the table, dropping removes it.
struct index_def_op {
    static constexpr model kind = static_cast<model>(6);  // model::index
    std::string name;
    bool dropped = false;
    std::string definition;  // encode_index_def; empty for a drop

    friend bool operator==(const index_def_op&, const index_def_op&) = default;
};

// The row an entity write adds to one index: the index, its typed values in key order, and the
// routing hash of the shard_on value (the row's shard). Carried in the entity op, so that applying
// never depends on the definitions a gateway holds at apply time.
struct index_entry {
    std::string index;
    std::vector<index_value> values;
    std::uint64_t shard_hash = 0;

    friend bool operator==(const index_entry&, const index_entry&) = default;
};

// The ts column of a cell index row: the cell's ref_key, mapped to unsigned in the same order.
constexpr std::uint64_t cell_index_version(std::int64_t ref_key) noexcept {
    return static_cast<std::uint64_t>(ref_key) ^ (std::uint64_t{1} << 63);
}

// The routing hash of a typed value: hash_id of an integer, hash_bytes of bytes.
std::uint64_t index_value_hash(const index_value& v) noexcept;

}  // namespace cairn::core
