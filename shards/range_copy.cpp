#include "shards/range_copy.hpp"

#include "core/assert.hpp"
#include "shards/index_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

namespace cairn::shards {
namespace asio = boost::asio;

namespace {

// The throttle's wait until due, in slices, so that a stop (stop_requested) ends it within 100 ms.
asio::awaitable<void> async_wait_until(asio::steady_timer& timer, std::chrono::steady_clock::time_point due,
                                       const range_copy_options& options) {
    while (std::chrono::steady_clock::now() < due) {
        if (options.stop_requested && options.stop_requested()) co_return;
        timer.expires_at(std::min(due, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
        core::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

// Placeholders per INSERT stay below MariaDB's 65,535, and its bytes below max_allowed_packet.
constexpr std::size_t insert_params_max = 60'000;
constexpr std::size_t insert_bytes_max = std::size_t{4} << 20;

copy_table whole(std::string name, std::vector<std::string> columns, std::vector<key_column> key) {
    copy_table t;
    t.name = std::move(name);
    t.columns = std::move(columns);
    for (const auto& k : key) t.unique.push_back(k.name);
    t.scan_key = std::move(key);
    return t;
}

copy_table routed(std::string name, std::vector<std::string> columns, std::vector<key_column> scan_key,
                  std::vector<std::string> unique, route_by route, std::string route_column, std::string sum_column = {}) {
    copy_table t;
    t.name = std::move(name);
    t.columns = std::move(columns);
    t.scan_key = std::move(scan_key);
    t.unique = std::move(unique);
    t.route = route;
    t.route_column = std::move(route_column);
    t.sum_column = std::move(sum_column);
    return t;
}

copy_table with_diff_key(copy_table t, std::vector<key_column> key) {
    t.diff_key = std::move(key);
    return t;
}

std::vector<copy_group> all_groups(const std::vector<stored_index_def>& defs, const core::counter_catalog& counters,
                                   const core::cell_config& cells) {
    using enum key_type;
    std::vector<copy_group> out;
    out.push_back({"edges",
                   {whole("node_registers", {"graph", "node_id", "direction", "removed_ts", "action_ts", "action"},
                          {{"graph", bytes}, {"node_id", int64}, {"direction", uint64}}),
                    routed("edges",
                           // Not prev_state: the merging upsert's note to itself of the state its statement found.
                           {"graph", "node_id", "direction", "other_id", "state", "own_state", "position", "ts", "pos_ts", "pos_set"},
                           {{"graph", bytes}, {"node_id", int64}, {"direction", uint64}, {"other_id", int64}},
                           {"graph", "node_id", "direction", "other_id"}, route_by::integer, "node_id"),
                    routed("edge_counts", {"graph", "node_id", "direction", "state", "count"},
                           {{"graph", bytes}, {"node_id", int64}, {"direction", uint64}, {"state", uint64}},
                           {"graph", "node_id", "direction", "state"}, route_by::integer, "node_id", "count")}});
    out.push_back({"entities",
                   {with_diff_key(routed("entities", {"kind", "id", "ts", "deleted", "body"}, {{"added_id", uint64}}, {"kind", "id"},
                                         route_by::bytes, "id"),
                                  {{"kind", bytes}, {"id", bytes}}),
                    whole("index_defs", {"name", "ts", "dropped", "definition"}, {{"name", bytes}})},
                   true});
    for (const auto& d : defs) {
        if (!d.def) continue;
        const auto& def = *d.def;
        std::vector<std::string> columns;
        std::vector<key_column> key;
        for (std::size_t i = 0; i < def.properties.size(); ++i) {
            const auto type = def.properties[i].type;
            columns.push_back(fmt::format("p{}", i));
            key.push_back({columns.back(), type == core::index_value_type::integer   ? int64
                                           : type == core::index_value_type::boolean ? uint64
                                                                                     : bytes});
        }
        columns.push_back("entity_id");
        key.push_back({"entity_id", bytes});
        std::vector<std::string> unique = columns;
        columns.push_back("ts");
        columns.push_back("deleted");
        const auto route = key[def.shard_on].type == bytes ? route_by::bytes : route_by::integer;
        auto route_column = key[def.shard_on].name;
        out.push_back({"index " + def.name,
                       {routed(def.sql_name(), std::move(columns), std::move(key), std::move(unique), route, std::move(route_column))},
                       true});
    }
    for (const auto& t : cells.tables) {
        out.push_back({"cells " + t,
                       {with_diff_key(routed("cells_" + t, {"row_key", "column_name", "ref_key", "body", "ts"}, {{"added_id", uint64}},
                                             {"row_key", "column_name", "ref_key"}, route_by::bytes, "row_key"),
                                      {{"row_key", bytes}, {"column_name", bytes}, {"ref_key", int64}})},
                       true});
    }
    copy_group c{"counters", {whole("counter_ops", {"op_id", "applied_ms"}, {{"op_id", uint64}})}};
    for (const auto& m : counters.metrics) {
        const auto& shard_on = m.dimensions[m.shard_on];
        for (const auto& t : m.tables) {
            if (!t.has_dimension(m.shard_on)) continue;  // sums both halves: stays (docs/resharding.md)
            std::vector<std::string> columns;
            std::vector<key_column> key;
            for (const int k : t.key) {
                if (k == core::counter_key_time) {
                    columns.push_back(t.granularity == core::counter_granularity::hour ? "hour" : "day");
                    key.push_back({columns.back(), int64});
                    continue;
                }
                const auto& d = m.dimensions[static_cast<std::size_t>(k)];
                columns.push_back(d.name);
                key.push_back({d.name, d.type == core::dimension_type::integer ? int64 : bytes});
            }
            std::vector<std::string> unique = columns;
            columns.push_back("count");
            c.tables.push_back(routed(t.sql_name(), std::move(columns), std::move(key), std::move(unique),
                                      shard_on.type == core::dimension_type::integer ? route_by::integer : route_by::bytes,
                                      shard_on.name, "count"));
        }
    }
    out.push_back(std::move(c));
    return out;
}

std::size_t position_of(const std::vector<std::string>& columns, const std::string& name) {
    const auto it = std::find(columns.begin(), columns.end(), name);
    CAIRN_ASSERT(it != columns.end());
    return static_cast<std::size_t>(it - columns.begin());
}

// SELECT <scan key>, <columns> FROM t [WHERE key > (?, ...)] ORDER BY key LIMIT n. The comparison is
// spelled out (k1 > ? OR k1 = ? AND k2 > ? ...), which the range optimizer reads as one range.
std::string select_sql(const copy_table& t, bool after, std::size_t limit) {
    std::string sql = "SELECT ";
    for (const auto& k : t.scan_key) fmt::format_to(std::back_inserter(sql), "{}, ", k.name);
    for (std::size_t i = 0; i < t.columns.size(); ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? ", " : "", t.columns[i]);
    fmt::format_to(std::back_inserter(sql), " FROM {}", t.name);
    if (after) {
        sql += " WHERE ";
        for (std::size_t i = 0; i < t.scan_key.size(); ++i) {
            sql += i ? " OR (" : "(";
            for (std::size_t j = 0; j < i; ++j) fmt::format_to(std::back_inserter(sql), "{} = ? AND ", t.scan_key[j].name);
            fmt::format_to(std::back_inserter(sql), "{} > ?)", t.scan_key[i].name);
        }
    }
    sql += " ORDER BY ";
    for (std::size_t i = 0; i < t.scan_key.size(); ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? ", " : "", t.scan_key[i].name);
    fmt::format_to(std::back_inserter(sql), " LIMIT {}", limit);
    return sql;
}

// SELECT <scan key>, <columns> FROM t WHERE [key > (?, ...)] [AND key <= (?, ...)] ORDER BY key LIMIT n:
// the rows between two scan keys (either bound may be left out). Its parameters: the lower bound's as
// select_sql's, then for the upper bound's term i key[0..i], and key[0..n-1] for the equality.
std::string select_between_sql(const copy_table& t, bool after, bool upto, std::size_t limit) {
    std::string sql = "SELECT ";
    for (const auto& k : t.scan_key) fmt::format_to(std::back_inserter(sql), "{}, ", k.name);
    for (std::size_t i = 0; i < t.columns.size(); ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? ", " : "", t.columns[i]);
    fmt::format_to(std::back_inserter(sql), " FROM {}", t.name);
    const auto n = t.scan_key.size();
    if (after || upto) sql += " WHERE ";
    if (after) {
        sql += "(";
        for (std::size_t i = 0; i < n; ++i) {
            sql += i ? " OR (" : "(";
            for (std::size_t j = 0; j < i; ++j) fmt::format_to(std::back_inserter(sql), "{} = ? AND ", t.scan_key[j].name);
            fmt::format_to(std::back_inserter(sql), "{} > ?)", t.scan_key[i].name);
        }
        sql += ")";
    }
    if (upto) {
        sql += after ? " AND (" : "(";
        for (std::size_t i = 0; i < n; ++i) {
            sql += "(";
            for (std::size_t j = 0; j < i; ++j) fmt::format_to(std::back_inserter(sql), "{} = ? AND ", t.scan_key[j].name);
            fmt::format_to(std::back_inserter(sql), "{} < ?) OR ", t.scan_key[i].name);
        }
        sql += "(";
        for (std::size_t j = 0; j < n; ++j) fmt::format_to(std::back_inserter(sql), "{}{} = ?", j ? " AND " : "", t.scan_key[j].name);
        sql += "))";
    }
    sql += " ORDER BY ";
    for (std::size_t i = 0; i < n; ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? ", " : "", t.scan_key[i].name);
    fmt::format_to(std::back_inserter(sql), " LIMIT {}", limit);
    return sql;
}

// The last row's scan key, typed, kept while the next chunk is read.
struct scan_position {
    std::vector<std::int64_t> ints;
    std::vector<std::uint64_t> uints;
    std::vector<std::string> texts;
    std::vector<sql_param> key;  // one per key column, pointing into the above

    // From a resume point's text (copy_resume::after); false if it does not fit t's scan key.
    bool take_text(const copy_table& t, const std::vector<std::string>& after) {
        if (after.size() != t.scan_key.size() || after.empty()) return false;
        ints.assign(t.scan_key.size(), 0);
        uints.assign(t.scan_key.size(), 0);
        texts.assign(after.begin(), after.end());
        key.clear();
        for (std::size_t i = 0; i < t.scan_key.size(); ++i) {
            const auto& v = texts[i];
            const auto* end = v.data() + v.size();
            switch (t.scan_key[i].type) {
                case key_type::int64:
                    if (v.empty() || std::from_chars(v.data(), end, ints[i]).ptr != end) return false;
                    key.emplace_back(ints[i]);
                    break;
                case key_type::uint64:
                    if (v.empty() || std::from_chars(v.data(), end, uints[i]).ptr != end) return false;
                    key.emplace_back(uints[i]);
                    break;
                case key_type::bytes: key.emplace_back(std::string_view(texts[i])); break;
            }
        }
        return true;
    }

    void take(const copy_table& t, const rows& r, std::size_t row) {
        ints.assign(t.scan_key.size(), 0);
        uints.assign(t.scan_key.size(), 0);
        texts.assign(t.scan_key.size(), {});
        key.clear();
        for (std::size_t i = 0; i < t.scan_key.size(); ++i) {
            switch (t.scan_key[i].type) {
                case key_type::int64: key.emplace_back(ints[i] = r.int64_at(row, i)); break;
                case key_type::uint64: key.emplace_back(uints[i] = r.uint64_at(row, i)); break;
                case key_type::bytes:
                    texts[i] = std::string(r.at(row, i).value_or(""));
                    key.emplace_back(std::string_view(texts[i]));
                    break;
            }
        }
    }
    // The WHERE's parameters: for term i, key[0..i-1] then key[i].
    std::vector<sql_param> params() const {
        std::vector<sql_param> out;
        for (std::size_t i = 0; i < key.size(); ++i) {
            for (std::size_t j = 0; j <= i; ++j) out.push_back(key[j]);
        }
        return out;
    }
    // As an upper bound (select_between_sql): the terms' parameters, then the equality's.
    std::vector<sql_param> upto_params() const {
        auto out = params();
        out.insert(out.end(), key.begin(), key.end());
        return out;
    }
    // The key's text, as copy_resume::after.
    std::vector<std::string> text(const copy_table& t) const {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < t.scan_key.size(); ++i) {
            switch (t.scan_key[i].type) {
                case key_type::int64: out.push_back(std::to_string(ints[i])); break;
                case key_type::uint64: out.push_back(std::to_string(uints[i])); break;
                case key_type::bytes: out.push_back(texts[i]); break;
            }
        }
        return out;
    }
    // A copy that owns its key's parameters (they point into its own vectors).
    scan_position clone(const copy_table& t) const {
        scan_position c = *this;
        c.key.clear();
        for (std::size_t i = 0; i < t.scan_key.size(); ++i) {
            switch (t.scan_key[i].type) {
                case key_type::int64: c.key.emplace_back(c.ints[i]); break;
                case key_type::uint64: c.key.emplace_back(c.uints[i]); break;
                case key_type::bytes: c.key.emplace_back(std::string_view(c.texts[i])); break;
            }
        }
        return c;
    }
};

bool in_range(const copy_table& t, const rows& r, std::size_t row, std::size_t route_col, core::hash_range range) {
    switch (t.route) {
        case route_by::whole: return true;
        case route_by::integer: return range.contains(core::hash_id(r.int64_at(row, route_col)));
        case route_by::bytes: return range.contains(core::hash_bytes(r.at(row, route_col).value_or("")));
    }
    return false;
}

// Reads a table of the range chunk by chunk on conn (inside the caller's snapshot) and hands each
// chunk's rows of the range to on_rows(rows, row indices), with the copied columns starting at
// column scan_key.size().
// after: start past this scan key (a resumed copy), not at the table's first row.
template <class OnRows>
asio::awaitable<core::result<void>> async_scan(mariadb_conn& conn, const copy_table& t, core::hash_range range,
                                               const range_copy_options& options, OnRows on_rows,
                                               const scan_position* after = nullptr) {
    const std::size_t chunk_rows = options.chunk_rows;
    const auto first_sql = select_sql(t, false, chunk_rows);
    const auto next_sql = select_sql(t, true, chunk_rows);
    const std::size_t route_col =
        t.route == route_by::whole ? 0 : t.scan_key.size() + position_of(t.columns, t.route_column);
    scan_position at;
    bool first = true;
    if (after != nullptr) {
        at = after->clone(t);
        first = false;
    }
    while (true) {
        if (options.stop_requested && options.stop_requested()) co_return core::errc::shutting_down;
        const auto params = at.params();
        auto r = co_await conn.async_query_prepared(first ? first_sql : next_sql, params);
        if (!r) co_return r.error();
        first = false;
        const auto& got = r.value();
        std::vector<std::size_t> mine;
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (in_range(t, got, i, route_col, range)) mine.push_back(i);
        }
        if (auto w = co_await on_rows(got, mine); !w) co_return w;
        if (got.size() < chunk_rows) co_return core::success();
        at.take(t, got, got.size() - 1);
    }
}

std::string insert_sql(const copy_table& t, std::size_t row_count) {
    std::string row = "(";
    for (std::size_t i = 0; i < t.columns.size(); ++i) row += i ? ", ?" : "?";
    row += ')';
    std::string sql = fmt::format("INSERT INTO {} (", t.name);
    for (std::size_t i = 0; i < t.columns.size(); ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? ", " : "", t.columns[i]);
    sql += ") VALUES ";
    for (std::size_t i = 0; i < row_count; ++i) {
        if (i) sql += ", ";
        sql += row;
    }
    bool any = false;
    for (const auto& c : t.columns) {
        if (std::find(t.unique.begin(), t.unique.end(), c) != t.unique.end()) continue;
        fmt::format_to(std::back_inserter(sql), "{}{} = VALUES({})", any ? ", " : " ON DUPLICATE KEY UPDATE ", c, c);
        any = true;
    }
    return sql;
}

// Writes rows[picked] (copied columns from column `skip`) to t on conn: an upsert per batch that
// stays below the placeholder and packet limits.
asio::awaitable<core::result<void>> async_write(mariadb_conn& conn, const copy_table& t, const rows& got,
                                                const std::vector<std::size_t>& picked, std::size_t skip) {
    const std::size_t per_row = t.columns.size();
    std::vector<sql_param> params;
    std::size_t batch_rows = 0;
    std::size_t batch_bytes = 0;
    const auto flush = [&]() -> asio::awaitable<core::result<void>> {
        if (batch_rows == 0) co_return core::success();
        const auto sql = insert_sql(t, batch_rows);
        auto w = co_await conn.async_query_prepared(sql, params);
        params.clear();
        batch_rows = 0;
        batch_bytes = 0;
        if (!w) co_return w.error();
        co_return core::success();
    };
    for (const auto i : picked) {
        for (std::size_t c = 0; c < per_row; ++c) {
            const auto v = got.at(i, skip + c);
            if (!v) co_return core::errc::shard_rejected;  // the copied tables have no NULL columns
            params.emplace_back(*v);
            batch_bytes += v->size();
        }
        ++batch_rows;
        if (params.size() + per_row > insert_params_max || batch_bytes >= insert_bytes_max) {
            if (auto w = co_await flush(); !w) co_return w;
        }
    }
    co_return co_await flush();
}

asio::awaitable<core::result<std::set<std::string>>> async_tables_of(mariadb_conn& conn) {
    auto r = co_await conn.async_query("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()");
    if (!r) co_return r.error();
    std::set<std::string> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) out.emplace(r.value().at(i, 0).value_or(""));
    co_return out;
}

// Creates t on `to` as `from` defines it, unless `to` has it.
asio::awaitable<core::result<void>> async_ensure_table(mariadb_conn& from, mariadb_conn& to, const std::string& table) {
    auto r = co_await from.async_query(fmt::format("SHOW CREATE TABLE {}", table));
    if (!r) co_return r.error();
    if (r.value().size() != 1 || r.value().columns() < 2) co_return core::errc::shard_rejected;
    std::string ddl(r.value().at(0, 1).value_or(""));
    constexpr std::string_view create = "CREATE TABLE ";
    if (!ddl.starts_with(create)) co_return core::errc::shard_rejected;
    ddl.insert(create.size(), "IF NOT EXISTS ");
    co_return co_await to.async_execute(ddl);
}

// Runs body() inside a consistent snapshot on conn (REPEATABLE READ for this transaction only), then
// ends it: read only, so rolled back.
template <class Body>
asio::awaitable<core::result<void>> async_in_snapshot(mariadb_conn& conn, Body body) {
    if (auto r = co_await conn.async_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); !r) co_return r;
    if (auto r = co_await conn.async_execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); !r) co_return r;
    auto r = co_await body();
    co_await async_rollback(conn);
    co_return r;
}

// What tag_sql answers on conn as one line (rows joined by ';', columns by ','; empty where its
// tables are missing: nothing applied there yet).
asio::awaitable<core::result<std::string>> async_tag_text(mariadb_conn& conn, std::string_view tag_sql) {
    auto tag = co_await conn.async_query(tag_sql);
    if (!tag && !tables_missing(conn)) co_return tag.error();
    std::string text;
    for (std::size_t i = 0; tag && i < tag.value().size(); ++i) {
        for (std::size_t c = 0; c < tag.value().columns(); ++c) {
            fmt::format_to(std::back_inserter(text), "{}{}", c ? "," : i ? ";" : "", tag.value().at(i, c).value_or("NULL"));
        }
    }
    co_return text;
}

// An order-free digest of a row's copied columns: each value with its length, hashed.
std::uint64_t row_hash(const rows& r, std::size_t row, std::size_t skip, std::size_t count) {
    std::string bytes;
    for (std::size_t c = 0; c < count; ++c) {
        const auto v = r.at(row, skip + c);
        const std::string_view text = v.value_or(std::string_view("\xff\xfe", 2));
        bytes += std::to_string(text.size());
        bytes += ':';
        bytes += text;
    }
    return core::hash_bytes(bytes);
}

}  // namespace

asio::awaitable<core::result<std::vector<copy_group>>> async_plan_range_copy(mariadb_conn& from, const core::counter_catalog& counters,
                                                                             const core::cell_config& cells) {
    auto tables = co_await async_tables_of(from);
    if (!tables) co_return tables.error();
    std::vector<stored_index_def> defs;
    if (tables.value().contains("index_defs")) {
        auto d = co_await async_read_index_defs(from);
        if (!d) co_return d.error();
        defs = std::move(d.value());
    }
    auto groups = all_groups(defs, counters, cells);
    for (auto& g : groups) std::erase_if(g.tables, [&](const copy_table& t) { return !tables.value().contains(t.name); });
    std::erase_if(groups, [](const copy_group& g) { return g.tables.empty(); });
    co_return groups;
}

asio::awaitable<core::result<range_copy_stats>> async_copy_range(mariadb_conn& from, mariadb_conn& to,
                                                                 const std::vector<copy_group>& groups, core::hash_range range,
                                                                 range_copy_options options,
                                                                 std::function<void(const range_copy_progress&)> progress,
                                                                 range_part_done done) {
    options.chunk_rows = std::clamp<std::size_t>(options.chunk_rows, 1, 10'000);
    auto target_tables = co_await async_tables_of(to);
    if (!target_tables) co_return target_tables.error();
    range_copy_stats stats;
    const auto started = std::chrono::steady_clock::now();
    asio::steady_timer throttle(co_await asio::this_coro::executor);
    // Waits until the rows read so far fit the throttle's rate since the start.
    const auto keep_pace = [&]() -> asio::awaitable<void> {
        if (options.rows_per_second_max <= 0) co_return;
        const auto due = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(static_cast<double>(stats.rows_read) / options.rows_per_second_max));
        co_await async_wait_until(throttle, due, options);
    };
    for (const auto& g : groups) {
        const range_copy_stats before = stats;
        // A resume point inside this group: the tables before its table are skipped, and that table's
        // scan starts past its key. One that does not fit is ignored (the group is copied whole).
        std::size_t first_table = 0;
        scan_position resume_at;
        bool resuming = false;
        if (options.resume && options.resume->group == g.name && g.resumable) {
            const auto it = std::find_if(g.tables.begin(), g.tables.end(),
                                         [&](const copy_table& t) { return t.name == options.resume->table; });
            if (it != g.tables.end() && resume_at.take_text(*it, options.resume->after)) {
                first_table = static_cast<std::size_t>(it - g.tables.begin());
                resuming = true;
            }
        }
        auto r = co_await async_in_snapshot(from, [&]() -> asio::awaitable<core::result<void>> {
            for (std::size_t i = first_table; i < g.tables.size(); ++i) {
                const auto& t = g.tables[i];
                if (!target_tables.value().contains(t.name)) {
                    if (auto c = co_await async_ensure_table(from, to, t.name); !c) co_return c;
                    target_tables.value().insert(t.name);
                }
                range_copy_progress p{g.name, t.name, 0, 0, {}};
                const auto on_rows = [&](const rows& got, const std::vector<std::size_t>& mine) -> asio::awaitable<core::result<void>> {
                    p.rows_read += got.size();
                    p.rows_copied += mine.size();
                    stats.rows_read += got.size();
                    stats.rows_copied += mine.size();
                    if (auto w = co_await async_write(to, t, got, mine, t.scan_key.size()); !w) co_return w;
                    if (got.size() != 0) {
                        p.last_key.clear();
                        for (std::size_t k = 0; k < t.scan_key.size(); ++k) p.last_key.emplace_back(got.at(got.size() - 1, k).value_or(""));
                    }
                    if (progress) progress(p);
                    co_await keep_pace();
                    co_return core::success();
                };
                const bool resumed_here = resuming && i == first_table;
                auto s = co_await async_scan(from, t, range, options, on_rows, resumed_here ? &resume_at : nullptr);
                if (!s) co_return s;
            }
            co_return core::success();
        });
        if (!r) co_return r.error();
        if (done) done({g.name, {}, stats.rows_read - before.rows_read, stats.rows_copied - before.rows_copied, {}});
    }
    co_return stats;
}

asio::awaitable<core::result<range_copy_stats>> async_delete_range(mariadb_conn& conn, const std::vector<copy_group>& groups,
                                                                   core::hash_range range, range_copy_options options,
                                                                   std::function<void(const range_copy_progress&)> progress,
                                                                   range_part_done done) {
    options.chunk_rows = std::clamp<std::size_t>(options.chunk_rows, 1, 10'000);
    range_copy_stats stats;
    const auto started = std::chrono::steady_clock::now();
    asio::steady_timer throttle(co_await asio::this_coro::executor);
    for (const auto& g : groups) {
        for (const auto& t : g.tables) {
            if (t.route == route_by::whole) continue;  // on every shard: nothing of it moved
            // DELETE FROM t WHERE (k1 = ? AND k2 = ?) OR (...): the rows of one chunk in the range, by
            // their scan key (unique). Each chunk commits on its own: the scan goes on past deleted rows.
            range_copy_progress p{g.name, t.name, 0, 0, {}};
            auto s = co_await async_scan(conn, t, range, options,
                                         [&](const rows& got, const std::vector<std::size_t>& mine) -> asio::awaitable<core::result<void>> {
                                             p.rows_read += got.size();
                                             stats.rows_read += got.size();
                                             if (!mine.empty()) {
                                                 std::string sql = fmt::format("DELETE FROM {} WHERE ", t.name);
                                                 std::vector<scan_position> keys(mine.size());
                                                 std::vector<sql_param> params;
                                                 for (std::size_t m = 0; m < mine.size(); ++m) {
                                                     keys[m].take(t, got, mine[m]);
                                                     sql += m ? " OR (" : "(";
                                                     for (std::size_t k = 0; k < t.scan_key.size(); ++k) {
                                                         fmt::format_to(std::back_inserter(sql), "{}{} = ?", k ? " AND " : "", t.scan_key[k].name);
                                                         params.push_back(keys[m].key[k]);
                                                     }
                                                     sql += ')';
                                                 }
                                                 auto d = co_await conn.async_query_prepared(sql, params);
                                                 if (!d) co_return d.error();
                                                 p.rows_copied += mine.size();
                                                 stats.rows_copied += mine.size();
                                             }
                                             if (progress) progress(p);
                                             if (options.rows_per_second_max > 0) {
                                                 const auto due = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                                std::chrono::duration<double>(static_cast<double>(stats.rows_read) /
                                                                                                              options.rows_per_second_max));
                                                 co_await async_wait_until(throttle, due, options);
                                             }
                                             co_return core::success();
                                         });
            if (!s) co_return s.error();
            if (done) done(p);
        }
    }
    co_return stats;
}

asio::awaitable<core::result<std::vector<range_table_diff>>> async_diff_range(mariadb_conn& from, mariadb_conn& to,
                                                                              const std::vector<copy_group>& groups,
                                                                              core::hash_range range, range_copy_options options,
                                                                              std::string_view tag_sql) {
    options.chunk_rows = std::clamp<std::size_t>(options.chunk_rows, 1, 10'000);
    auto target_tables = co_await async_tables_of(to);
    if (!target_tables) co_return target_tables.error();
    std::vector<range_table_diff> out;
    for (const auto& g : groups) {
        const auto first = out.size();
        for (const auto& t : g.tables) out.push_back(range_table_diff{t.name, 0, 0, 0, 0, {}, {}});
        const auto digest = [&](mariadb_conn& conn, bool source) -> asio::awaitable<core::result<void>> {
            if (!tag_sql.empty()) {
                auto text = co_await async_tag_text(conn, tag_sql);
                if (!text) co_return text.error();
                for (std::size_t k = 0; k < g.tables.size(); ++k) (source ? out[first + k].tag_from : out[first + k].tag_to) = text.value();
            }
            for (std::size_t k = 0; k < g.tables.size(); ++k) {
                const auto& t = g.tables[k];
                auto& d = out[first + k];
                if (!source && !target_tables.value().contains(t.name)) continue;  // empty there
                const auto sum_col = t.sum_column.empty() ? 0 : t.scan_key.size() + position_of(t.columns, t.sum_column);
                auto s = co_await async_scan(conn, t, range, options,
                                             [&](const rows& got, const std::vector<std::size_t>& mine) -> asio::awaitable<core::result<void>> {
                                                 for (const auto i : mine) {
                                                     if (sum_col != 0 && got.int64_at(i, sum_col) == 0) continue;
                                                     const auto h = row_hash(got, i, t.scan_key.size(), t.columns.size());
                                                     (source ? d.rows_from : d.rows_to) += 1;
                                                     (source ? d.checksum_from : d.checksum_to) += h;
                                                 }
                                                 co_return core::success();
                                             });
                if (!s) co_return s;
            }
            co_return core::success();
        };
        if (auto r = co_await async_in_snapshot(from, [&] { return digest(from, true); }); !r) co_return r.error();
        if (auto r = co_await async_in_snapshot(to, [&] { return digest(to, false); }); !r) co_return r.error();
    }
    co_return out;
}

namespace {

// Rows read from one side for a chunk bounded above (a chunk that held chunk_rows rows when it was
// cut may have grown since; far past this it is compared in parts of this size, differing).
constexpr std::size_t interval_rows_max = 100'000;

struct chunk_side {
    std::uint64_t rows = 0;      // of the range (sum rows at 0 left out)
    std::uint64_t checksum = 0;
    std::size_t read = 0;        // rows read, of any range
    std::string tag;
};

// One side of a chunk of t: its rows between after and upto (either may be null), at most limit read,
// in one snapshot that also reads tag_sql. missing: the side lacks the table (only the tag is read).
// last, if set, gets the last row's key.
asio::awaitable<core::result<void>> async_chunk_side(mariadb_conn& conn, const copy_table& t, core::hash_range range,
                                                     const scan_position* after, const scan_position* upto, std::size_t limit,
                                                     std::string_view tag_sql, bool missing, chunk_side& out,
                                                     scan_position* last) {
    out = chunk_side{};
    co_return co_await async_in_snapshot(conn, [&]() -> asio::awaitable<core::result<void>> {
        if (!tag_sql.empty()) {
            auto text = co_await async_tag_text(conn, tag_sql);
            if (!text) co_return text.error();
            out.tag = std::move(text).value();
        }
        if (missing) co_return core::success();
        std::vector<sql_param> params;
        if (after != nullptr) params = after->params();
        if (upto != nullptr) {
            const auto more = upto->upto_params();
            params.insert(params.end(), more.begin(), more.end());
        }
        auto r = co_await conn.async_query_prepared(select_between_sql(t, after != nullptr, upto != nullptr, limit), params);
        if (!r) co_return r.error();
        const auto& got = r.value();
        const std::size_t route_col = t.route == route_by::whole ? 0 : t.scan_key.size() + position_of(t.columns, t.route_column);
        const auto sum_col = t.sum_column.empty() ? 0 : t.scan_key.size() + position_of(t.columns, t.sum_column);
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (!in_range(t, got, i, route_col, range)) continue;
            if (sum_col != 0 && got.int64_at(i, sum_col) == 0) continue;
            out.rows += 1;
            out.checksum += row_hash(got, i, t.scan_key.size(), t.columns.size());
        }
        out.read = got.size();
        if (last != nullptr && got.size() != 0) last->take(t, got, got.size() - 1);
        co_return core::success();
    });
}

void note_if_different(std::vector<range_chunk_diff>& out, const copy_table& t, const scan_position* after, const scan_position* upto,
                       const chunk_side& a, const chunk_side& b) {
    if (a.rows == b.rows && a.checksum == b.checksum) return;
    out.push_back({t.name, after ? after->text(t) : std::vector<std::string>{}, upto ? upto->text(t) : std::vector<std::string>{},
                   a.rows, b.rows, a.checksum, b.checksum, a.tag, b.tag});
}

// The chunks of t from after (null: its start) to its end: each the source's next chunk_rows rows and
// the target's between the same keys.
// t ordered by its diff key (both shards agree on it), for the chunked diff.
copy_table diff_view(const copy_table& t) {
    copy_table v = t;
    if (!t.diff_key.empty()) v.scan_key = t.diff_key;
    return v;
}

// t: a diff_view.
asio::awaitable<core::result<void>> async_diff_table_chunks(mariadb_conn& from, mariadb_conn& to, const copy_table& t,
                                                            bool target_has, core::hash_range range, const scan_position* start,
                                                            const range_copy_options& options, std::string_view tag_sql,
                                                            std::vector<range_chunk_diff>& out) {
    scan_position at;
    bool has_at = start != nullptr;
    if (start != nullptr) at = start->clone(t);
    while (true) {
        if (options.stop_requested && options.stop_requested()) co_return core::errc::shutting_down;
        chunk_side a, b;
        scan_position last;
        if (auto r = co_await async_chunk_side(from, t, range, has_at ? &at : nullptr, nullptr, options.chunk_rows, tag_sql, false, a, &last);
            !r) {
            co_return r;
        }
        const bool end = a.read < options.chunk_rows;
        // The target's rows up to the source's last key (to the end for the last chunk).
        if (auto r = co_await async_chunk_side(to, t, range, has_at ? &at : nullptr, end ? nullptr : &last, interval_rows_max, tag_sql,
                                               !target_has, b, nullptr);
            !r) {
            co_return r;
        }
        note_if_different(out, t, has_at ? &at : nullptr, end ? nullptr : &last, a, b);
        if (end) co_return core::success();
        at = last.clone(t);
        has_at = true;
    }
}

}  // namespace

asio::awaitable<core::result<std::vector<range_chunk_diff>>> async_diff_range_chunks(mariadb_conn& from, mariadb_conn& to,
                                                                                     const std::vector<copy_group>& groups,
                                                                                     core::hash_range range, range_copy_options options,
                                                                                     std::string_view tag_sql) {
    options.chunk_rows = std::clamp<std::size_t>(options.chunk_rows, 1, 10'000);
    auto target_tables = co_await async_tables_of(to);
    if (!target_tables) co_return target_tables.error();
    std::vector<range_chunk_diff> out;
    for (const auto& g : groups) {
        for (const auto& t : g.tables) {
            if (auto r = co_await async_diff_table_chunks(from, to, diff_view(t), target_tables.value().contains(t.name), range, nullptr,
                                                          options, tag_sql, out);
                !r) {
                co_return r.error();
            }
        }
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<range_chunk_diff>>> async_rediff_chunks(mariadb_conn& from, mariadb_conn& to,
                                                                                 const std::vector<copy_group>& groups,
                                                                                 core::hash_range range,
                                                                                 const std::vector<range_chunk_diff>& chunks,
                                                                                 range_copy_options options, std::string_view tag_sql) {
    options.chunk_rows = std::clamp<std::size_t>(options.chunk_rows, 1, 10'000);
    auto target_tables = co_await async_tables_of(to);
    if (!target_tables) co_return target_tables.error();
    std::vector<range_chunk_diff> out;
    for (const auto& c : chunks) {
        if (options.stop_requested && options.stop_requested()) co_return core::errc::shutting_down;
        std::optional<copy_table> view;
        for (const auto& g : groups) {
            for (const auto& candidate : g.tables) {
                if (candidate.name == c.table) view = diff_view(candidate);
            }
        }
        const copy_table* t = view ? &*view : nullptr;
        scan_position after, last;
        if (t == nullptr || (!c.after.empty() && !after.take_text(*t, c.after)) || (!c.last.empty() && !last.take_text(*t, c.last))) {
            out.push_back(c);  // cannot be compared: still differs
            continue;
        }
        const bool target_has = target_tables.value().contains(t->name);
        if (c.last.empty()) {
            // The table's last chunk: from its start key to the end, in chunks again (it may have grown).
            if (auto r = co_await async_diff_table_chunks(from, to, *t, target_has, range, c.after.empty() ? nullptr : &after, options,
                                                          tag_sql, out);
                !r) {
                co_return r.error();
            }
            continue;
        }
        chunk_side a, b;
        const scan_position* lower = c.after.empty() ? nullptr : &after;
        if (auto r = co_await async_chunk_side(from, *t, range, lower, &last, interval_rows_max, tag_sql, false, a, nullptr); !r) {
            co_return r.error();
        }
        if (auto r = co_await async_chunk_side(to, *t, range, lower, &last, interval_rows_max, tag_sql, !target_has, b, nullptr); !r) {
            co_return r.error();
        }
        note_if_different(out, *t, lower, &last, a, b);
    }
    co_return out;
}

}  // namespace cairn::shards
