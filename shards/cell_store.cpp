#include "shards/cell_store.hpp"

#include "shards/index_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <fmt/format.h>

#include <map>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view cell_columns = "row_key, column_name, ref_key, body, ts, added_id";

// Table names are checked (core::valid_cell_table); every value goes as a hex literal.
void append_hex(std::string& sql, std::string_view bytes) {
    sql += "X'";
    for (unsigned char c : bytes) fmt::format_to(std::back_inserter(sql), "{:02x}", c);
    sql += '\'';
}

std::string table_sql(std::string_view table) { return fmt::format("cells_{}", table); }

std::string create_table_sql(std::string_view table) {
    return fmt::format(R"(CREATE TABLE IF NOT EXISTS {} (
  added_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  row_key BINARY(16) NOT NULL,
  column_name VARBINARY(64) NOT NULL,
  ref_key BIGINT NOT NULL,
  body MEDIUMBLOB NOT NULL COMMENT 'format byte (0 msgpack, 1 zstd of msgpack), then the body',
  ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the write whose body the cell holds: the smallest (ts, body) wins',
  PRIMARY KEY (added_id),
  UNIQUE KEY cell (row_key, column_name, ref_key)
) ENGINE=InnoDB COMMENT 'immutable versioned cells (docs/cells.md)')",
                       table_sql(table));
}

stored_cell parse_cell(const rows& r, std::size_t i) {
    stored_cell c;
    c.row_key = std::string(*r.at(i, 0));
    c.column = std::string(*r.at(i, 1));
    c.ref_key = r.int64_at(i, 2);
    c.body = std::string(*r.at(i, 3));
    c.ts = r.uint64_at(i, 4);
    c.added_id = r.uint64_at(i, 5);
    return c;
}

asio::awaitable<core::result<std::vector<stored_cell>>> async_cells_of(mariadb_conn& conn, const std::string& sql) {
    auto r = co_await conn.async_query(sql);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<stored_cell>{};  // nothing applied yet
        co_return r.error();
    }
    std::vector<stored_cell> out;
    out.reserve(r.value().size());
    for (std::size_t i = 0; i < r.value().size(); ++i) out.push_back(parse_cell(r.value(), i));
    co_return out;
}

// The cell upserts of one batch, one statement per table: the stored and the new version's
// smaller (ts, body) stays (core::cell_version_wins).
asio::awaitable<core::result<void>> async_write_cells(
    mariadb_conn& conn, const std::map<std::string_view, std::vector<const core::op*>>& by_table) {
    for (const auto& [table, table_ops] : by_table) {
        std::string sql = fmt::format("INSERT INTO {} (row_key, column_name, ref_key, body, ts) VALUES ", table_sql(table));
        bool first = true;
        for (const core::op* o : table_ops) {
            const auto& c = std::get<core::cell_op>(o->body);
            sql += first ? "(" : ",(";
            first = false;
            append_hex(sql, c.row_key);
            sql += ',';
            append_hex(sql, c.column);
            fmt::format_to(std::back_inserter(sql), ",{},", c.ref_key);
            append_hex(sql, c.body);
            fmt::format_to(std::back_inserter(sql), ",{})", o->ts);
        }
        // Assignments run left to right: body compares against the stored ts before ts changes.
        sql +=
            " ON DUPLICATE KEY UPDATE"
            " body = IF(VALUES(ts) < ts OR (VALUES(ts) = ts AND VALUES(body) < body), VALUES(body), body),"
            " ts = LEAST(ts, VALUES(ts))";
        if (auto r = co_await conn.async_execute(sql); !r) co_return r;
    }
    co_return core::success();
}

}  // namespace

asio::awaitable<core::result<void>> async_create_cell_schema(mariadb_conn& conn, const core::cell_config& cells) {
    for (const auto& t : cells.tables) {
        if (auto r = co_await conn.async_execute(create_table_sql(t)); !r) co_return r;
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> async_apply_cells(mariadb_conn& conn, const core::cell_config& cells,
                                                      const core::shard_map& map, core::shard_index shard,
                                                      std::span<const core::op* const> ops) {
    std::map<std::string_view, std::vector<const core::op*>> by_table;
    bool entries_here = false;
    for (const core::op* o : ops) {
        const auto* c = std::get_if<core::cell_op>(&o->body);
        if (!c) continue;
        if (!cells.declared(c->table)) co_return core::errc::undeclared;
        if (map.shard_of_hash(core::hash_bytes(c->row_key)) == shard) by_table[c->table].push_back(o);
        for (const auto& entry : c->entries) entries_here = entries_here || map.shard_of_hash(entry.shard_hash) == shard;
    }
    // Without index rows here, one autocommitted statement per table: each is commutative alone.
    if (!entries_here) co_return co_await async_write_cells(conn, by_table);
    co_return co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
        if (auto r = co_await async_write_cells(conn, by_table); !r) co_return r;
        co_return co_await async_write_index_rows(conn, map, shard, ops);
    });
}

asio::awaitable<core::result<std::vector<std::optional<stored_cell>>>> async_get_cells(mariadb_conn& conn,
                                                                                       std::string table,
                                                                                       std::span<const cell_key> keys) {
    std::vector<std::optional<stored_cell>> out(keys.size());
    if (keys.empty()) co_return out;
    std::string sql = fmt::format("SELECT {} FROM {} WHERE (row_key, column_name, ref_key) IN (", cell_columns, table_sql(table));
    for (std::size_t i = 0; i < keys.size(); ++i) {
        sql += i ? ",(" : "(";
        append_hex(sql, std::get<0>(keys[i]));
        sql += ',';
        append_hex(sql, std::get<1>(keys[i]));
        fmt::format_to(std::back_inserter(sql), ",{})", std::get<2>(keys[i]));
    }
    sql += ')';
    auto found = co_await async_cells_of(conn, sql);
    if (!found) co_return found.error();
    std::map<cell_key, stored_cell> by_key;
    for (auto& c : found.value()) by_key.emplace(cell_key{c.row_key, c.column, c.ref_key}, std::move(c));
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (auto it = by_key.find(keys[i]); it != by_key.end()) out[i] = it->second;
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<stored_cell>>> async_cell_versions(mariadb_conn& conn, std::string table,
                                                                            std::string row_key, std::string column,
                                                                            std::optional<std::int64_t> before,
                                                                            std::size_t limit) {
    std::string sql = fmt::format("SELECT {} FROM {} WHERE row_key = ", cell_columns, table_sql(table));
    append_hex(sql, row_key);
    sql += " AND column_name = ";
    append_hex(sql, column);
    if (before) fmt::format_to(std::back_inserter(sql), " AND ref_key < {}", *before);
    fmt::format_to(std::back_inserter(sql), " ORDER BY ref_key DESC LIMIT {}", limit);
    co_return co_await async_cells_of(conn, sql);
}

asio::awaitable<core::result<std::vector<stored_cell>>> async_row_cells(mariadb_conn& conn, std::string table,
                                                                        std::string row_key,
                                                                        std::optional<std::string> after_column,
                                                                        std::size_t limit) {
    // The newest ref_key of each column (a loose scan of the unique key), then those cells.
    std::string where = "row_key = ";
    append_hex(where, row_key);
    std::string inner = fmt::format("SELECT column_name, MAX(ref_key) AS ref_key FROM {} WHERE {}", table_sql(table), where);
    if (after_column) {
        inner += " AND column_name > ";
        append_hex(inner, *after_column);
    }
    fmt::format_to(std::back_inserter(inner), " GROUP BY column_name ORDER BY column_name LIMIT {}", limit);
    const std::string sql = fmt::format(
        "SELECT c.row_key, c.column_name, c.ref_key, c.body, c.ts, c.added_id FROM {} c JOIN ({}) m"
        " ON c.{} AND c.column_name = m.column_name AND c.ref_key = m.ref_key ORDER BY c.column_name",
        table_sql(table), inner, where);
    co_return co_await async_cells_of(conn, sql);
}

namespace {

// The newest ref_key of the column for each row key (a loose scan of the cell key), then those
// cells. `where` selects row keys.
std::string latest_of_column_sql(std::string_view table, std::string_view column, const std::string& where,
                                 std::string_view tail) {
    std::string col;
    append_hex(col, column);
    return fmt::format(
        "SELECT c.row_key, c.column_name, c.ref_key, c.body, c.ts, c.added_id FROM {0} c JOIN ("
        "SELECT row_key, MAX(ref_key) AS ref_key FROM {0} WHERE column_name = {1} AND {2} GROUP BY row_key{3}) m"
        " ON c.row_key = m.row_key AND c.column_name = {1} AND c.ref_key = m.ref_key ORDER BY c.row_key",
        table_sql(table), col, where, tail);
}

}  // namespace

asio::awaitable<core::result<std::vector<std::optional<stored_cell>>>> async_latest_cells(
    mariadb_conn& conn, std::string table, std::string column, std::span<const std::string> row_keys) {
    std::vector<std::optional<stored_cell>> out(row_keys.size());
    if (row_keys.empty()) co_return out;
    std::string where = "row_key IN (";
    for (std::size_t i = 0; i < row_keys.size(); ++i) {
        if (i) where += ',';
        append_hex(where, row_keys[i]);
    }
    where += ')';
    auto found = co_await async_cells_of(conn, latest_of_column_sql(table, column, where, ""));
    if (!found) co_return found.error();
    std::map<std::string, stored_cell> by_row;
    for (auto& c : found.value()) by_row.emplace(c.row_key, std::move(c));
    for (std::size_t i = 0; i < row_keys.size(); ++i) {
        if (auto it = by_row.find(row_keys[i]); it != by_row.end()) out[i] = it->second;
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<stored_cell>>> async_scan_latest_cells(mariadb_conn& conn, std::string table,
                                                                                std::string column,
                                                                                std::optional<std::string> after_row_key,
                                                                                std::size_t limit) {
    std::string where = "1";
    if (after_row_key) {
        where = "row_key > ";
        append_hex(where, *after_row_key);
    }
    co_return co_await async_cells_of(
        conn, latest_of_column_sql(table, column, where, fmt::format(" ORDER BY row_key LIMIT {}", limit)));
}

asio::awaitable<core::result<std::uint64_t>> async_count_column_rows(mariadb_conn& conn, std::string table,
                                                                     std::string column) {
    std::string sql = fmt::format("SELECT COUNT(DISTINCT row_key) FROM {} WHERE column_name = ", table_sql(table));
    append_hex(sql, column);
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return r.value().uint64_at(0, 0);
}

asio::awaitable<core::result<std::vector<stored_cell>>> async_dump_cells(mariadb_conn& conn, std::string table) {
    co_return co_await async_cells_of(
        conn, fmt::format("SELECT {} FROM {} ORDER BY row_key, column_name, ref_key", cell_columns, table_sql(table)));
}

}  // namespace cairn::shards
