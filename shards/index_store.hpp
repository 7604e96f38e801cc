// Entity and cell indexes on one shard (issues 5 and 6): the index_defs table (every shard holds every
// definition, last writer wins by ts), the index tables, the index rows an entity batch writes,
// and the index reads. The caller owns the connection. Any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// The index_defs table, if missing. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_index_schema(mariadb_conn& conn);

// Applies index definition ops: the newest (ts) create or drop of each name wins in index_defs;
// then the index table is created (CREATE TABLE IF NOT EXISTS) or dropped, after the commit
// (DDL commits implicitly). Idempotent and commutative. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_apply_index_defs(mariadb_conn& conn, std::span<const core::op* const> ops);

// One definition as stored, dropped ones included (their definition is empty).
struct stored_index_def {
    std::string name;
    std::uint64_t ts = 0;
    bool dropped = false;
    std::optional<core::index_def> def;  // nullopt when dropped
};
boost::asio::awaitable<core::result<std::vector<stored_index_def>>> async_read_index_defs(mariadb_conn& conn);

// Within the caller's transaction: writes the index rows of the entity and cell ops' entries that
// live on this shard (shard_of_hash(entry.shard_hash) == shard), for indexes live in this shard's
// index_defs (entries of a dropped or unknown index are skipped). A row keeps the greatest ts
// (an entity write's ts; a cell's core::cell_index_version); deleted follows the newest.
// Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_write_index_rows(mariadb_conn& conn, const core::shard_map& map,
                                                                  core::shard_index shard,
                                                                  std::span<const core::op* const> ops);

// A query's conditions: equality on the first properties, then an optional range on the next.
struct index_range {
    std::vector<core::index_value> equal;                     // p0 .. p(k-1)
    std::optional<std::pair<core::index_value, bool>> lower;  // on pk: (value, inclusive)
    std::optional<std::pair<core::index_value, bool>> upper;
};

// ---- the cleaner's reads and writes (indexing/cleaner.hpp) -------------------------------------------

// One index row as stored.
struct index_row {
    std::vector<core::index_value> values;  // in key order
    std::string entity_id;                  // 16 bytes
    std::uint64_t ts = 0;
    bool deleted = false;
    friend bool operator==(const index_row&, const index_row&) = default;
};

// Writes rows straight into the index table (the cleaner's repairs): a row keeps the greatest
// ts and the deleted flag of the newest, exactly as rows written by entity ops, so repairs and
// live writes commute. Errors: those of mariadb_conn (a missing table: the index was dropped).
boost::asio::awaitable<core::result<void>> async_put_index_rows(mariadb_conn& conn, const core::index_def& def,
                                                                const std::vector<index_row>& rows);

// The rows stored under the keys (values, entity_id) of `keys` (their ts and deleted are not read),
// tombstones included, in no particular order; keys without a row are left out. At most a few
// hundred keys per call (one statement). Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<std::vector<index_row>>> async_get_index_rows(mariadb_conn& conn,
                                                                                 const core::index_def& def,
                                                                                 const std::vector<index_row>& keys);

// The rows of the index table on this shard (tombstones included): the cleaner's total.
boost::asio::awaitable<core::result<std::uint64_t>> async_count_index_rows(mariadb_conn& conn, const core::index_def& def);

// Up to limit live rows matching `range`, in primary-key order, after the key of `after`
// (nullopt: from the first): one range read of the primary key. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<std::vector<index_row>>> async_range_index(mariadb_conn& conn,
                                                                              const core::index_def& def,
                                                                              const index_range& range,
                                                                              std::optional<index_row> after,
                                                                              std::size_t limit);

// Up to limit rows of the index table after `after` (nullopt: from the first) in primary-key
// order, tombstones included. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<std::vector<index_row>>> async_scan_index_rows(mariadb_conn& conn,
                                                                                  const core::index_def& def,
                                                                                  std::optional<index_row> after,
                                                                                  std::size_t limit);

}  // namespace cairn::shards
