#include "shards/counter_store.hpp"

#include "core/hlc.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view create_ops_sql = R"(CREATE TABLE IF NOT EXISTS counter_ops (
  op_id BIGINT UNSIGNED NOT NULL COMMENT 'an applied counter op: applying it again adds nothing',
  applied_ms BIGINT UNSIGNED NOT NULL COMMENT 'when; deleted after counters.op_ids_keep_hours',
  PRIMARY KEY (op_id),
  KEY by_age (applied_ms)
) ENGINE=InnoDB)";

// Op ids deleted per applied batch at most (the deletions keep pace with batches of up to
// apply.batch_ops_max ops).
constexpr std::size_t prune_rows = 1000;

std::string_view bucket_column(const core::counter_table& t) {
    return t.granularity == core::counter_granularity::hour ? "hour" : "day";
}

std::string_view column_of(const core::counter_metric& m, const core::counter_table& t, int key) {
    return key == core::counter_key_time ? bucket_column(t) : std::string_view(m.dimensions[static_cast<std::size_t>(key)].name);
}

// Names are checked by core::check_catalog ([a-z][a-z0-9_]*); values: integers are checked
// canonical decimals, strings go as hex literals, binary-safe with nothing to escape.
void append_value(std::string& sql, const core::counter_dimension& d, std::string_view value) {
    if (d.type == core::dimension_type::integer) {
        sql += value;
        return;
    }
    sql += "X'";
    for (unsigned char c : value) fmt::format_to(std::back_inserter(sql), "{:02x}", c);
    sql += '\'';
}

std::string create_table_sql(const core::counter_metric& m, const core::counter_table& t) {
    std::string sql = fmt::format("CREATE TABLE IF NOT EXISTS {} (\n", t.sql_name());
    for (int k : t.key) {
        if (k == core::counter_key_time) {
            fmt::format_to(std::back_inserter(sql), "  {} BIGINT NOT NULL COMMENT 'UTC: ms since the Unix epoch at the start of the {}',\n",
                           bucket_column(t), bucket_column(t));
            continue;
        }
        const auto& d = m.dimensions[static_cast<std::size_t>(k)];
        if (d.type == core::dimension_type::integer) {
            fmt::format_to(std::back_inserter(sql), "  {} BIGINT NOT NULL,\n", d.name);
        } else {
            fmt::format_to(std::back_inserter(sql), "  {} VARBINARY({}) NOT NULL,\n", d.name, d.length_max);
        }
    }
    sql += "  count BIGINT NOT NULL,\n  PRIMARY KEY (";
    for (std::size_t i = 0; i < t.key.size(); ++i) {
        if (i) sql += ", ";
        sql += column_of(m, t, t.key[i]);
    }
    fmt::format_to(std::back_inserter(sql), ")\n) ENGINE=InnoDB COMMENT 'counter metric {}'", m.name);
    return sql;
}

// A table's key values of one increment, in key order (the bucket in decimal).
std::vector<std::string> key_of(const core::counter_table& t, const core::counter_op& c) {
    std::vector<std::string> out;
    out.reserve(t.key.size());
    for (int k : t.key) {
        out.push_back(k == core::counter_key_time ? std::to_string(core::bucket_start_ms(c.time_ms, t.granularity))
                                                  : c.dimensions[static_cast<std::size_t>(k)]);
    }
    return out;
}

}  // namespace

asio::awaitable<core::result<void>> async_create_counter_schema(mariadb_conn& conn, const core::counter_catalog& catalog) {
    if (auto r = co_await conn.async_execute(create_ops_sql); !r) co_return r;
    for (const auto& m : catalog.metrics) {
        for (const auto& t : m.tables) {
            if (auto r = co_await conn.async_execute(create_table_sql(m, t)); !r) co_return r;
        }
    }
    co_return core::success();
}

bool counter_placement::counts(const core::counter_metric& m, const core::counter_table& t, const core::counter_op& c) const {
    const core::shard_map* by = t.has_dimension(m.shard_on) ? keyed : unkeyed;
    return by == nullptr || by->shard_of_hash(c.shard_hash) == shard;
}

asio::awaitable<core::result<void>> async_apply_counters(mariadb_conn& conn, const core::counter_catalog& catalog,
                                                         std::span<const core::op* const> ops, std::uint64_t now_ms,
                                                         counter_placement where) {
    // One op per op id (a batch may hold a duplicate), each checked against the catalog.
    std::map<std::uint64_t, const core::op*> by_id;
    for (const core::op* o : ops) {
        const auto* c = std::get_if<core::counter_op>(&o->body);
        if (!c) continue;
        const auto* m = catalog.find(c->metric);
        if (!m || m->dimensions.size() != c->dimensions.size()) co_return core::errc::undeclared;
        by_id.emplace(o->op_id, o);
    }
    if (by_id.empty()) co_return core::success();
    const std::uint64_t keep_ms = static_cast<std::uint64_t>(catalog.op_ids_keep.count()) * 3'600'000;

    auto r = co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
        // Locks the op ids (and the gaps of absent ones) until commit: the same op applied by
        // two connections at once serializes here, and the second adds nothing.
        std::string sql = "SELECT op_id FROM counter_ops WHERE op_id IN (";
        bool first = true;
        for (const auto& [id, _] : by_id) {
            if (!first) sql += ',';
            first = false;
            fmt::format_to(std::back_inserter(sql), "{}", id);
        }
        sql += ") FOR UPDATE";
        auto seen = co_await conn.async_query(sql);
        if (!seen) co_return seen.error();
        std::set<std::uint64_t> applied;
        for (std::size_t i = 0; i < seen.value().size(); ++i) applied.insert(seen.value().uint64_at(i, 0));

        // Sums per table and key, over the ops not applied before.
        std::map<const core::counter_table*, std::map<std::vector<std::string>, std::int64_t>> sums;
        std::map<const core::counter_table*, const core::counter_metric*> metric_of;
        std::string record = "INSERT INTO counter_ops (op_id, applied_ms) VALUES ";
        std::size_t fresh = 0;
        for (const auto& [id, o] : by_id) {
            if (applied.contains(id)) continue;
            const auto& c = std::get<core::counter_op>(o->body);
            const auto* m = catalog.find(c.metric);
            const auto here = [&](const core::counter_table& t) { return where.counts(*m, t, c); };
            if (std::none_of(m->tables.begin(), m->tables.end(), here)) continue;
            if (now_ms > core::hlc_ms(o->ts) && now_ms - core::hlc_ms(o->ts) > keep_ms) co_return core::errc::op_expired;
            for (const auto& t : m->tables) {
                if (!here(t)) continue;
                sums[&t][key_of(t, c)] += c.delta;
                metric_of[&t] = m;
            }
            fmt::format_to(std::back_inserter(record), "{}({},{})", fresh++ ? "," : "", id, now_ms);
        }
        if (fresh == 0) co_return core::success();
        for (const auto& [t, rows] : sums) {
            const auto& m = *metric_of[t];
            std::string upsert = fmt::format("INSERT INTO {} (", t->sql_name());
            for (int k : t->key) {
                upsert += column_of(m, *t, k);
                upsert += ", ";
            }
            upsert += "count) VALUES ";
            std::size_t written = 0;
            for (const auto& [key, delta] : rows) {
                if (delta == 0) continue;
                upsert += written++ ? ",(" : "(";
                for (std::size_t i = 0; i < key.size(); ++i) {
                    const int k = t->key[i];
                    if (k == core::counter_key_time) {
                        upsert += key[i];
                    } else {
                        append_value(upsert, m.dimensions[static_cast<std::size_t>(k)], key[i]);
                    }
                    upsert += ',';
                }
                fmt::format_to(std::back_inserter(upsert), "{})", delta);
            }
            if (written == 0) continue;
            upsert += " ON DUPLICATE KEY UPDATE count = count + VALUES(count)";
            if (auto w = co_await conn.async_execute(upsert); !w) co_return w;
        }
        co_return co_await conn.async_execute(record);
    });
    if (!r) co_return r;
    if (now_ms > keep_ms) {
        // Outside the transaction: forgetting old op ids need not wait for, or hold, anything.
        auto p = co_await conn.async_execute(fmt::format(
            "DELETE FROM counter_ops WHERE applied_ms < {} ORDER BY applied_ms LIMIT {}", now_ms - keep_ms, prune_rows));
        if (!p) co_return p;
    }
    co_return core::success();
}

std::string counter_read_sql(const counter_read& q, std::size_t rows_max) {
    const auto& m = *q.metric;
    const auto& t = *q.table;
    std::string select;
    std::string group;
    if (q.by_bucket) select += fmt::format("{}, ", bucket_column(t));
    if (q.group_by) select += fmt::format("{}, ", m.dimensions[*q.group_by].name);
    if (q.route_by) select += fmt::format("{}, ", m.dimensions[*q.route_by].name);
    if (q.by_bucket) group += bucket_column(t);
    for (const auto& dim : {q.group_by, q.route_by}) {
        if (!dim) continue;
        if (!group.empty()) group += ", ";
        group += m.dimensions[*dim].name;
    }
    std::string sql = fmt::format("SELECT {}SUM(count) FROM {} WHERE ", select, t.sql_name());
    // Key order: the equality prefix, then the bucket range, then the filters after it.
    for (int k : t.key) {
        if (k == core::counter_key_time) {
            fmt::format_to(std::back_inserter(sql), "{} >= {} AND {} < {} AND ", bucket_column(t), q.from_ms,
                           bucket_column(t), q.to_ms);
            continue;
        }
        for (const auto& [dim, value] : q.filters) {
            if (static_cast<int>(dim) != k) continue;
            sql += m.dimensions[dim].name;
            sql += " = ";
            append_value(sql, m.dimensions[dim], value);
            sql += " AND ";
        }
    }
    sql.resize(sql.size() - 5);  // the last " AND "
    if (!group.empty()) fmt::format_to(std::back_inserter(sql), " GROUP BY {} ORDER BY {}", group, group);
    fmt::format_to(std::back_inserter(sql), " LIMIT {}", rows_max + 1);
    return sql;
}

asio::awaitable<core::result<std::vector<counter_read_row>>> async_read_counters(mariadb_conn& conn,
                                                                                const counter_read& q,
                                                                                std::size_t rows_max) {
    auto r = co_await conn.async_query(counter_read_sql(q, rows_max));
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<counter_read_row>{};  // nothing applied yet: no counts
        co_return r.error();
    }
    const auto& rows = r.value();
    if (rows.size() > rows_max) co_return core::errc::too_large;
    std::vector<counter_read_row> out;
    out.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        std::size_t col = 0;
        counter_read_row row;
        if (q.by_bucket) row.bucket_ms = rows.int64_at(i, col++);
        if (q.group_by) row.group = std::string(rows.at(i, col++).value_or(""));
        if (q.route_by) row.route_value = std::string(rows.at(i, col++).value_or(""));
        const auto sum = rows.at(i, col);
        if (!sum) continue;  // SUM over no rows (no GROUP BY): nothing counted
        row.count = rows.int64_at(i, col);
        out.push_back(std::move(row));
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<std::pair<std::vector<std::string>, std::int64_t>>>> async_dump_counter_table(
    mariadb_conn& conn, const core::counter_metric& metric, const core::counter_table& table) {
    std::string sql = "SELECT ";
    for (int k : table.key) {
        sql += column_of(metric, table, k);
        sql += ", ";
    }
    fmt::format_to(std::back_inserter(sql), "count FROM {} ORDER BY ", table.sql_name());
    for (std::size_t i = 0; i < table.key.size(); ++i) {
        if (i) sql += ", ";
        sql += column_of(metric, table, table.key[i]);
    }
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    std::vector<std::pair<std::vector<std::string>, std::int64_t>> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        std::vector<std::string> key;
        for (std::size_t c = 0; c < table.key.size(); ++c) key.emplace_back(r.value().at(i, c).value_or(""));
        out.emplace_back(std::move(key), r.value().int64_at(i, table.key.size()));
    }
    co_return out;
}

asio::awaitable<core::result<std::uint64_t>> async_count_counter_op_ids(mariadb_conn& conn) {
    auto r = co_await conn.async_query("SELECT COUNT(*) FROM counter_ops");
    if (!r) co_return r.error();
    co_return r.value().uint64_at(0, 0);
}

}  // namespace cairn::shards
