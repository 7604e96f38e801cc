// Cells on one shard (issue 6): the declared cell tables, the apply upsert and the reads. The
// caller owns the connection and keeps it valid until the awaitable completes. Any executor.
//
// Apply is one statement per table, no transaction: a cell has no derived rows, and the upsert
// keeps the smaller (ts, body) of the stored and the new version (core::cell_version_wins),
// which is idempotent and commutative on its own.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/cells.hpp"
#include "core/op.hpp"
#include "core/result.hpp"

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

// Applies the cell ops (each on the shard of its row_key, the caller's). Errors: undeclared (a
// table the config does not declare) and those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_apply_cells(mariadb_conn& conn, const core::cell_config& cells,
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

// Test helper: every cell of a table on the connection's shard, by key.
boost::asio::awaitable<core::result<std::vector<stored_cell>>> async_dump_cells(mariadb_conn& conn, std::string table);

}  // namespace cairn::shards
