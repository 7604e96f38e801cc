// The objects an index reads, as the index query and the cleaner see them: an entity of the
// index's kind, or, for a cell index, the latest version (greatest ref_key) of the index's column
// of a row. One shape for both, so that neither the query nor the cleaner names a model.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"
#include "core/op.hpp"
#include "core/result.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::shards {
class mariadb_conn;
}

namespace cairn::indexing {

struct indexed_object {
    std::string id;            // the entity id; the cell's row_key
    std::uint64_t version = 0;  // what an index row's ts holds: the entity's ts; core::cell_index_version
    bool deleted = false;      // an entity tombstone (a cell is never deleted)
    std::string body;          // stored (format byte first); empty for a tombstone
    std::uint64_t ts = 0;      // the write's hlc
    std::int64_t ref_key = 0;  // cells
    std::uint64_t added_id = 0;  // cells
};

// The current objects of ids on the connection's shard: result[i] belongs to ids[i], nullopt
// where there is none. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<std::vector<std::optional<indexed_object>>>> async_current_objects(
    shards::mariadb_conn& conn, const core::index_def& def, std::span<const std::string> ids);

// The cleaner's walk of one shard, up to limit objects after `after` (nullopt: from the start),
// tombstones included; pass the last object of a page as the next `after`. Entities: most
// recently updated first; cells: by row_key.
boost::asio::awaitable<core::result<std::vector<indexed_object>>> async_scan_objects(
    shards::mariadb_conn& conn, const core::index_def& def, const std::optional<indexed_object>& after, std::size_t limit);

// The number of objects on the connection's shard (the cleaner's total).
boost::asio::awaitable<core::result<std::uint64_t>> async_count_objects(shards::mariadb_conn& conn, const core::index_def& def);

class index_registry;

// Recomputes the index entries of an entity or cell op from its stored body with the definitions
// reg holds now (the kind's indexes; the table's indexes on the cell's column): the entries a write
// of that body would carry today. For ops journaled again later (a replay), which must carry the
// rows of indexes created since. Other models, deletes and bodies that do not decode (or no longer
// fit an index's type) keep the entries they had. True if the entries changed.
bool recompute_entries(core::op& o, const index_registry& reg);

// How reports name an object: "entity <uuid>" or "row <uuid>" (of a cell index's table).
std::string object_name(const core::index_def& def, std::string_view id);

// The index values of an object now, or nullopt: a tombstone, a body that does not decode, a
// property missing or null, or a value that does not fit its type (not in the index).
std::optional<std::vector<core::index_value>> index_values_now(const core::index_def& def, const indexed_object& o);
// The same from a live object's body as JSON text (stored_body_json of its body).
std::optional<std::vector<core::index_value>> index_values_of_json(const core::index_def& def, std::string_view json);

}  // namespace cairn::indexing
