#include "shards/entity_store.hpp"

#include "shards/index_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <fmt/format.h>

#include <map>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view create_entities_sql = R"(CREATE TABLE IF NOT EXISTS entities (
  added_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  kind VARBINARY(32) NOT NULL,
  id BINARY(16) NOT NULL,
  ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the write the row holds: the greatest wins',
  deleted TINYINT UNSIGNED NOT NULL COMMENT '1: a tombstone (body empty)',
  body MEDIUMBLOB NOT NULL COMMENT 'format byte (0 msgpack, 1 zstd of msgpack), then the property bag',
  PRIMARY KEY (added_id),
  UNIQUE KEY entity (kind, id),
  KEY by_updated (kind, ts) COMMENT 'most recently updated first, for the cleaner'
) ENGINE=InnoDB COMMENT 'schema-less entities (docs/entities.md)')";

constexpr std::string_view entity_columns = "kind, id, ts, deleted, body";

// Kinds are checked (core::valid_entity_kind); byte values go as hex literals.
void append_entity_hex(std::string& sql, std::string_view bytes) {
    sql += "X'";
    for (unsigned char c : bytes) fmt::format_to(std::back_inserter(sql), "{:02x}", c);
    sql += '\'';
}

stored_entity parse_entity(const rows& r, std::size_t i) {
    return {std::string(*r.at(i, 0)), std::string(*r.at(i, 1)), r.uint64_at(i, 2), r.uint64_at(i, 3) != 0,
            std::string(*r.at(i, 4))};
}

asio::awaitable<core::result<std::vector<stored_entity>>> async_entities_of(mariadb_conn& conn, const std::string& sql) {
    auto r = co_await conn.async_query(sql);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<stored_entity>{};  // nothing applied yet
        co_return r.error();
    }
    std::vector<stored_entity> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) out.push_back(parse_entity(r.value(), i));
    co_return out;
}

using entity_key = std::pair<std::string, std::string>;  // kind, id

asio::awaitable<core::result<void>> async_write_entities(mariadb_conn& conn,
                                                         const std::map<entity_key, std::vector<const core::op*>>& by_key);

}  // namespace

asio::awaitable<core::result<void>> async_create_entity_schema(mariadb_conn& conn) {
    co_return co_await conn.async_execute(create_entities_sql);
}

asio::awaitable<core::result<void>> async_apply_entities(mariadb_conn& conn, const core::entity_config& entities,
                                                         const core::shard_map& map, core::shard_index shard,
                                                         std::span<const core::op* const> ops) {
    // Sorted keys: every transaction locks rows in the same order (fewer deadlocks between gateways).
    std::map<entity_key, std::vector<const core::op*>> by_key;
    bool entries_here = false;
    for (const core::op* o : ops) {
        const auto* e = std::get_if<core::entity_op>(&o->body);
        if (!e) continue;
        if (!entities.declared(e->entity_kind)) co_return core::errc::undeclared;
        if (map.shard_of_hash(core::hash_bytes(e->id)) == shard) by_key[{e->entity_kind, e->id}].push_back(o);
        for (const auto& entry : e->entries) entries_here = entries_here || map.shard_of_hash(entry.shard_hash) == shard;
    }
    if (by_key.empty() && !entries_here) co_return core::success();
    co_return co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
        if (auto r = co_await async_write_entities(conn, by_key); !r) co_return r;
        co_return co_await async_write_index_rows(conn, map, shard, ops);
    });
}

namespace {

// The entity rows of one batch (statements of the caller's transaction).
asio::awaitable<core::result<void>> async_write_entities(mariadb_conn& conn,
                                                         const std::map<entity_key, std::vector<const core::op*>>& by_key) {
    if (by_key.empty()) co_return core::success();
    std::string sql = fmt::format("SELECT {} FROM entities WHERE (kind, id) IN (", entity_columns);
    bool first = true;
    for (const auto& [key, _] : by_key) {
        sql += first ? "(" : ",(";
        first = false;
        append_entity_hex(sql, key.first);
        sql += ',';
        append_entity_hex(sql, key.second);
        sql += ')';
    }
    sql += ") FOR UPDATE";
    auto current = co_await async_entities_of(conn, sql);
    if (!current) co_return current.error();
    std::map<entity_key, stored_entity> rows;
    for (auto& e : current.value()) rows.emplace(entity_key{e.kind, e.id}, std::move(e));

    std::string upsert = fmt::format("INSERT INTO entities ({}) VALUES ", entity_columns);
    std::size_t changed = 0;
    for (const auto& [key, key_ops] : by_key) {
        const auto it = rows.find(key);
        std::optional<stored_entity> best;
        if (it != rows.end()) best = it->second;
        for (const core::op* o : key_ops) {
            const auto& e = std::get<core::entity_op>(o->body);
            if (!best || core::entity_version_wins(o->ts, e.deleted, e.body, best->ts, best->deleted, best->body)) {
                best = stored_entity{key.first, key.second, o->ts, e.deleted, e.body};
            }
        }
        if (it != rows.end() && *best == it->second) continue;
        upsert += changed++ ? ",(" : "(";
        append_entity_hex(upsert, best->kind);
        upsert += ',';
        append_entity_hex(upsert, best->id);
        fmt::format_to(std::back_inserter(upsert), ",{},{},", best->ts, best->deleted ? 1 : 0);
        append_entity_hex(upsert, best->body);
        upsert += ')';
    }
    if (changed == 0) co_return core::success();
    upsert += " ON DUPLICATE KEY UPDATE ts = VALUES(ts), deleted = VALUES(deleted), body = VALUES(body)";
    co_return co_await conn.async_execute(upsert);
}

}  // namespace

asio::awaitable<core::result<std::vector<std::optional<stored_entity>>>> async_get_entities(
    mariadb_conn& conn, std::string kind, std::span<const std::string> ids) {
    std::vector<std::optional<stored_entity>> out(ids.size());
    if (ids.empty()) co_return out;
    std::string sql = fmt::format("SELECT {} FROM entities WHERE kind = ", entity_columns);
    append_entity_hex(sql, kind);
    sql += " AND id IN (";
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) sql += ',';
        append_entity_hex(sql, ids[i]);
    }
    sql += ')';
    auto found = co_await async_entities_of(conn, sql);
    if (!found) co_return found.error();
    std::map<std::string, stored_entity> by_id;
    for (auto& e : found.value()) by_id.emplace(e.id, std::move(e));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (auto it = by_id.find(ids[i]); it != by_id.end()) out[i] = it->second;
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<stored_entity>>> async_scan_entities_by_updated(
    mariadb_conn& conn, std::string kind, std::optional<std::pair<std::uint64_t, std::string>> before, std::size_t limit) {
    std::string sql = fmt::format("SELECT {} FROM entities WHERE kind = ", entity_columns);
    append_entity_hex(sql, kind);
    if (before) {
        fmt::format_to(std::back_inserter(sql), " AND (ts < {} OR (ts = {} AND id < ", before->first, before->first);
        append_entity_hex(sql, before->second);
        sql += "))";
    }
    fmt::format_to(std::back_inserter(sql), " ORDER BY ts DESC, id DESC LIMIT {}", limit);
    co_return co_await async_entities_of(conn, sql);
}

asio::awaitable<core::result<std::uint64_t>> async_count_entities(mariadb_conn& conn, std::string kind) {
    std::string sql = "SELECT COUNT(*) FROM entities WHERE kind = ";
    append_entity_hex(sql, kind);
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return r.value().uint64_at(0, 0);
}

asio::awaitable<core::result<std::vector<stored_entity>>> async_dump_entities(mariadb_conn& conn) {
    co_return co_await async_entities_of(conn, fmt::format("SELECT {} FROM entities ORDER BY kind, id", entity_columns));
}

}  // namespace cairn::shards
