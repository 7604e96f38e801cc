#include "shards/index_store.hpp"

#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <fmt/format.h>

#include <set>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view create_defs_sql = R"(CREATE TABLE IF NOT EXISTS index_defs (
  name VARBINARY(48) NOT NULL,
  ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the create or drop that holds: the newest wins',
  dropped TINYINT UNSIGNED NOT NULL,
  definition BLOB NOT NULL COMMENT 'msgpack (core::encode_index_def); empty when dropped',
  PRIMARY KEY (name)
) ENGINE=InnoDB COMMENT 'entity and cell index definitions, the same on every shard (docs/entities.md)')";

void append_hex(std::string& sql, std::string_view bytes) {
    sql += "X'";
    for (unsigned char c : bytes) fmt::format_to(std::back_inserter(sql), "{:02x}", c);
    sql += '\'';
}

void append_value(std::string& sql, const core::index_value& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
        fmt::format_to(std::back_inserter(sql), "{}", *i);
    } else {
        append_hex(sql, std::get<std::string>(v));
    }
}

std::string column_type(const core::index_property& p) {
    switch (p.type) {
        case core::index_value_type::id: return "BINARY(16)";
        case core::index_value_type::integer: return "BIGINT";
        case core::index_value_type::string: return fmt::format("VARBINARY({})", p.length_max);
        case core::index_value_type::boolean: return "TINYINT UNSIGNED";
    }
    return "BLOB";
}

// Index names are checked (core::valid_index_name); property names go only into comments, hex.
std::string create_table_sql(const core::index_def& d) {
    std::string sql = fmt::format("CREATE TABLE IF NOT EXISTS {} (\n", d.sql_name());
    for (std::size_t i = 0; i < d.properties.size(); ++i) {
        fmt::format_to(std::back_inserter(sql), "  p{} {} NOT NULL,\n", i, column_type(d.properties[i]));
    }
    sql += d.on_cells() ? "  entity_id BINARY(16) NOT NULL COMMENT 'the cell row_key',\n"
                          "  ts BIGINT UNSIGNED NOT NULL COMMENT 'the cell ref_key + 2^63: the newest version wins',\n"
                        : "  entity_id BINARY(16) NOT NULL,\n  ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the entity write: the newest wins',\n";
    sql += "  deleted TINYINT UNSIGNED NOT NULL,\n  PRIMARY KEY (";
    for (std::size_t i = 0; i < d.properties.size(); ++i) fmt::format_to(std::back_inserter(sql), "p{}, ", i);
    sql += "entity_id)\n) ENGINE=InnoDB";
    return sql;
}

}  // namespace

asio::awaitable<core::result<void>> async_create_index_schema(mariadb_conn& conn) {
    co_return co_await conn.async_execute(create_defs_sql);
}

asio::awaitable<core::result<std::vector<stored_index_def>>> async_read_index_defs(mariadb_conn& conn) {
    auto r = co_await conn.async_query("SELECT name, ts, dropped, definition FROM index_defs ORDER BY name");
    if (!r) co_return r.error();
    std::vector<stored_index_def> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        stored_index_def d;
        d.name = std::string(*r.value().at(i, 0));
        d.ts = r.value().uint64_at(i, 1);
        d.dropped = r.value().uint64_at(i, 2) != 0;
        if (!d.dropped) {
            auto def = core::decode_index_def(*r.value().at(i, 3));
            if (!def) co_return def.error();
            d.def = std::move(def.value());
        }
        out.push_back(std::move(d));
    }
    co_return out;
}

asio::awaitable<core::result<void>> async_apply_index_defs(mariadb_conn& conn, std::span<const core::op* const> ops) {
    // The newest op of each name in the batch.
    std::map<std::string, const core::op*> newest;
    for (const core::op* o : ops) {
        const auto* d = std::get_if<core::index_def_op>(&o->body);
        if (!d) continue;
        auto [it, fresh] = newest.emplace(d->name, o);
        if (!fresh && o->ts > it->second->ts) it->second = o;
    }
    if (newest.empty()) co_return core::success();
    std::map<std::string, stored_index_def> winners;
    auto r = co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
        std::string sql = "SELECT name, ts, dropped, definition FROM index_defs WHERE name IN (";
        bool first = true;
        for (const auto& [name, _] : newest) {
            if (!first) sql += ',';
            first = false;
            append_hex(sql, name);
        }
        sql += ") FOR UPDATE";
        auto current = co_await conn.async_query(sql);
        if (!current) co_return current.error();
        std::map<std::string, std::pair<std::uint64_t, bool>> stored;
        for (std::size_t i = 0; i < current.value().size(); ++i) {
            stored[std::string(*current.value().at(i, 0))] = {current.value().uint64_at(i, 1),
                                                              current.value().uint64_at(i, 2) != 0};
        }
        std::string upsert = "INSERT INTO index_defs (name, ts, dropped, definition) VALUES ";
        std::size_t changed = 0;
        for (const auto& [name, o] : newest) {
            const auto& d = std::get<core::index_def_op>(o->body);
            const auto it = stored.find(name);
            stored_index_def w{name, o->ts, d.dropped, std::nullopt};
            if (!d.dropped) w.def = core::decode_index_def(d.definition).value();
            // Equal ts: a drop wins over a create (a fixed order, never arrival).
            const bool wins = it == stored.end() || o->ts > it->second.first ||
                              (o->ts == it->second.first && d.dropped && !it->second.second);
            if (!wins) {
                // The stored state holds; its table is made to match it below.
                w = stored_index_def{name, it->second.first, it->second.second, std::nullopt};
                winners[name] = std::move(w);
                continue;
            }
            winners[name] = w;
            upsert += changed++ ? ",(" : "(";
            append_hex(upsert, name);
            fmt::format_to(std::back_inserter(upsert), ",{},{},", o->ts, d.dropped ? 1 : 0);
            append_hex(upsert, d.definition);
            upsert += ')';
        }
        if (changed == 0) co_return core::success();
        upsert += " ON DUPLICATE KEY UPDATE ts = VALUES(ts), dropped = VALUES(dropped), definition = VALUES(definition)";
        co_return co_await conn.async_execute(upsert);
    });
    if (!r) co_return r;
    // The tables follow the winners. A stored create that held needs its definition to create
    // its table: it was created when that create was applied, so nothing is left to do.
    for (const auto& [name, w] : winners) {
        if (w.dropped) {
            if (auto d = co_await conn.async_execute(fmt::format("DROP TABLE IF EXISTS index_{}", name)); !d) co_return d;
        } else if (w.def) {
            if (auto c = co_await conn.async_execute(create_table_sql(*w.def)); !c) co_return c;
        }
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> async_write_index_rows(mariadb_conn& conn, const core::shard_map& map,
                                                           core::shard_index shard, std::span<const core::op* const> ops) {
    // index -> (values, entity id) -> the greatest version: an entity write's ts, or a cell's
    // ref_key in order (core::cell_index_version).
    std::map<std::string, std::map<std::pair<std::vector<core::index_value>, std::string>, std::uint64_t>> rows;
    auto add = [&](const std::vector<core::index_entry>& entries, const std::string& id, std::uint64_t version) {
        for (const auto& entry : entries) {
            if (map.shard_of_hash(entry.shard_hash) != shard) continue;
            auto& v = rows[entry.index][{entry.values, id}];
            v = std::max(v, version);
        }
    };
    for (const core::op* o : ops) {
        if (const auto* e = std::get_if<core::entity_op>(&o->body)) {
            add(e->entries, e->id, o->ts);
        } else if (const auto* c = std::get_if<core::cell_op>(&o->body)) {
            add(c->entries, c->row_key, core::cell_index_version(c->ref_key));
        }
    }
    if (rows.empty()) co_return core::success();
    std::string sql = "SELECT name FROM index_defs WHERE dropped = 0 AND name IN (";
    bool first = true;
    for (const auto& [name, _] : rows) {
        if (!first) sql += ',';
        first = false;
        append_hex(sql, name);
    }
    sql += ") LOCK IN SHARE MODE";
    auto live = co_await conn.async_query(sql);
    if (!live) co_return live.error();
    std::set<std::string> live_names;
    for (std::size_t i = 0; i < live.value().size(); ++i) live_names.emplace(*live.value().at(i, 0));
    for (const auto& [name, index_rows] : rows) {
        if (!live_names.contains(name)) continue;  // dropped, or not created on this shard yet: the cleaner fills it
        const auto& any = index_rows.begin()->first.first;
        std::string upsert = fmt::format("INSERT INTO index_{} (", name);
        for (std::size_t i = 0; i < any.size(); ++i) fmt::format_to(std::back_inserter(upsert), "p{}, ", i);
        upsert += "entity_id, ts, deleted) VALUES ";
        bool first_row = true;
        for (const auto& [key, ts] : index_rows) {
            upsert += first_row ? "(" : ",(";
            first_row = false;
            for (const auto& v : key.first) {
                append_value(upsert, v);
                upsert += ',';
            }
            append_hex(upsert, key.second);
            fmt::format_to(std::back_inserter(upsert), ",{},0)", ts);
        }
        upsert += " ON DUPLICATE KEY UPDATE deleted = IF(VALUES(ts) > ts, VALUES(deleted), deleted), ts = GREATEST(ts, VALUES(ts))";
        if (auto w = co_await conn.async_execute(upsert); !w) co_return w;
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> async_put_index_rows(mariadb_conn& conn, const core::index_def& def,
                                                         const std::vector<index_row>& rows) {
    if (rows.empty()) co_return core::success();
    std::string sql = fmt::format("INSERT INTO {} (", def.sql_name());
    for (std::size_t i = 0; i < def.properties.size(); ++i) fmt::format_to(std::back_inserter(sql), "p{}, ", i);
    sql += "entity_id, ts, deleted) VALUES ";
    for (std::size_t r = 0; r < rows.size(); ++r) {
        sql += r ? ",(" : "(";
        for (const auto& v : rows[r].values) {
            append_value(sql, v);
            sql += ',';
        }
        append_hex(sql, rows[r].entity_id);
        fmt::format_to(std::back_inserter(sql), ",{},{})", rows[r].ts, rows[r].deleted ? 1 : 0);
    }
    sql += " ON DUPLICATE KEY UPDATE deleted = IF(VALUES(ts) > ts, VALUES(deleted), deleted), ts = GREATEST(ts, VALUES(ts))";
    co_return co_await conn.async_execute(sql);
}

asio::awaitable<core::result<std::uint64_t>> async_count_index_rows(mariadb_conn& conn, const core::index_def& def) {
    auto r = co_await conn.async_query(fmt::format("SELECT COUNT(*) FROM {}", def.sql_name()));
    if (!r) co_return r.error();
    co_return r.value().uint64_at(0, 0);
}

namespace {

std::vector<index_row> parse_index_rows(const rows& r, const core::index_def& def) {
    std::vector<index_row> out;
    const std::size_t n = def.properties.size();
    for (std::size_t i = 0; i < r.size(); ++i) {
        index_row row;
        for (std::size_t c = 0; c < n; ++c) {
            const auto type = def.properties[c].type;
            if (type == core::index_value_type::integer || type == core::index_value_type::boolean) {
                row.values.emplace_back(r.int64_at(i, c));
            } else {
                row.values.emplace_back(std::string(*r.at(i, c)));
            }
        }
        row.entity_id = std::string(*r.at(i, n));
        row.ts = r.uint64_at(i, n + 1);
        row.deleted = r.uint64_at(i, n + 2) != 0;
        out.push_back(std::move(row));
    }
    return out;
}

std::string key_columns(const core::index_def& def) {
    std::string cols;
    for (std::size_t i = 0; i < def.properties.size(); ++i) fmt::format_to(std::back_inserter(cols), "p{}, ", i);
    return cols;
}

// " AND (p0, ..., entity_id) > (...)": after a whole row's key.
void append_after(std::string& sql, const std::string& cols, const index_row& after) {
    sql += " AND (" + cols + "entity_id) > (";
    for (const auto& v : after.values) {
        append_value(sql, v);
        sql += ',';
    }
    append_hex(sql, after.entity_id);
    sql += ')';
}

}  // namespace

asio::awaitable<core::result<std::vector<index_row>>> async_scan_index_rows(mariadb_conn& conn, const core::index_def& def,
                                                                           std::optional<index_row> after, std::size_t limit) {
    const std::string cols = key_columns(def);
    std::string sql = fmt::format("SELECT {}entity_id, ts, deleted FROM {} WHERE 1", cols, def.sql_name());
    if (after) append_after(sql, cols, *after);
    fmt::format_to(std::back_inserter(sql), " ORDER BY {}entity_id LIMIT {}", cols, limit);
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return parse_index_rows(r.value(), def);
}

asio::awaitable<core::result<std::vector<index_row>>> async_get_index_rows(mariadb_conn& conn, const core::index_def& def,
                                                                          const std::vector<index_row>& keys) {
    if (keys.empty()) co_return std::vector<index_row>{};
    const std::string cols = key_columns(def);
    std::string sql = fmt::format("SELECT {}entity_id, ts, deleted FROM {} WHERE ", cols, def.sql_name());
    // An OR of equalities on the whole primary key: point reads of the key, whatever the optimizer
    // makes of row constructors.
    for (std::size_t k = 0; k < keys.size(); ++k) {
        sql += k ? " OR (" : "(";
        for (std::size_t i = 0; i < keys[k].values.size(); ++i) {
            fmt::format_to(std::back_inserter(sql), "p{} = ", i);
            append_value(sql, keys[k].values[i]);
            sql += " AND ";
        }
        sql += "entity_id = ";
        append_hex(sql, keys[k].entity_id);
        sql += ')';
    }
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return parse_index_rows(r.value(), def);
}

asio::awaitable<core::result<std::vector<index_row>>> async_range_index(mariadb_conn& conn, const core::index_def& def,
                                                                       const index_range& range, std::optional<index_row> after,
                                                                       std::size_t limit) {
    const std::string cols = key_columns(def);
    std::string sql = fmt::format("SELECT {}entity_id, ts, deleted FROM {} WHERE deleted = 0", cols, def.sql_name());
    for (std::size_t i = 0; i < range.equal.size(); ++i) {
        fmt::format_to(std::back_inserter(sql), " AND p{} = ", i);
        append_value(sql, range.equal[i]);
    }
    const std::size_t k = range.equal.size();
    if (range.lower) {
        fmt::format_to(std::back_inserter(sql), " AND p{} {} ", k, range.lower->second ? ">=" : ">");
        append_value(sql, range.lower->first);
    }
    if (range.upper) {
        fmt::format_to(std::back_inserter(sql), " AND p{} {} ", k, range.upper->second ? "<=" : "<");
        append_value(sql, range.upper->first);
    }
    if (after) append_after(sql, cols, *after);
    fmt::format_to(std::back_inserter(sql), " ORDER BY {}entity_id LIMIT {}", cols, limit);
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return parse_index_rows(r.value(), def);
}

}  // namespace cairn::shards
