// Cells on one shard (issue 6): the declared cell tables, the apply upsert and the reads. The
// caller owns the connection and keeps it valid until the awaitable completes. Any executor.
//
// Apply is one statement per table: the upsert keeps the smaller (ts, body) of the stored and
// the new version (core::cell_version_wins), which is idempotent and commutative on its own.
// When the batch has index rows on the shard (cell indexes, core/indexes.hpp), they are written
// in one transaction with the cells.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/cells.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// cells_<name> for every declared table, if missing. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_cell_schema(mariadb_conn& conn, const core::cell_config& cells);

// Applies the cell ops' rows on `shard`: the cells whose row_key lives there, and the index rows
// of their entries that live there (shards::async_write_index_rows). Errors: undeclared (a table
// the config does not declare) and those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_apply_cells(mariadb_conn& conn, const core::cell_config& cells,
                                                             const core::shard_map& map, core::shard_index shard,
                                                             std::span<const core::op* const> ops);

struct stored_cell {
    std::string row_key;  // 16 bytes
    std::string column;
    std::int64_t ref_key = 0;
    std::string body;  // stored (format byte first)
    std::uint64_t ts = 0;
    std::uint64_t added_id = 0;
    friend bool operator==(const stored_cell&, const stored_cell&) = default;
};

using cell_key = std::tuple<std::string, std::string, std::int64_t>;  // row_key, column, ref_key

// The cells of many keys of one table: result[i] belongs to keys[i]. keys must stay valid until
// the awaitable completes. Errors: those of mariadb_conn::async_query.
boost::asio::awaitable<core::result<std::vector<std::optional<stored_cell>>>> async_get_cells(
    mariadb_conn& conn, std::string table, std::span<const cell_key> keys);

// The versions of one column, newest ref_key first, below `before` (nullopt: from the newest):
// one range read of the cell key. limit >= 1.
boost::asio::awaitable<core::result<std::vector<stored_cell>>> async_cell_versions(
    mariadb_conn& conn, std::string table, std::string row_key, std::string column, std::optional<std::int64_t> before,
    std::size_t limit);

// The latest version of each column of a row, by column name, at most limit columns after
// `after_column` (nullopt: from the first).
boost::asio::awaitable<core::result<std::vector<stored_cell>>> async_row_cells(mariadb_conn& conn, std::string table,
                                                                               std::string row_key,
                                                                               std::optional<std::string> after_column,
                                                                               std::size_t limit);

// ---- cell indexes (net/index_routes.cpp, indexing/cleaner.cpp) -----------------------------------------

// The latest version (greatest ref_key) of one column for many row keys: result[i] belongs to
// row_keys[i], nullopt where the row has no such column.
boost::asio::awaitable<core::result<std::vector<std::optional<stored_cell>>>> async_latest_cells(
    mariadb_conn& conn, std::string table, std::string column, std::span<const std::string> row_keys);

// The cleaner's walk: the latest version of one column of up to limit rows, by row_key, after
// `after_row_key` (nullopt: from the first).
boost::asio::awaitable<core::result<std::vector<stored_cell>>> async_scan_latest_cells(
    mariadb_conn& conn, std::string table, std::string column, std::optional<std::string> after_row_key, std::size_t limit);

// The number of rows that have the column on this shard: the cleaner's total.
boost::asio::awaitable<core::result<std::uint64_t>> async_count_column_rows(mariadb_conn& conn, std::string table,
                                                                            std::string column);

// Test helper: every cell of a table on the connection's shard, by key.
boost::asio::awaitable<core::result<std::vector<stored_cell>>> async_dump_cells(mariadb_conn& conn, std::string table);

}  // namespace cairn::shards
