#include "shards/map_store.hpp"

#include "shards/mariadb_conn.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <span>

namespace cairn::shards {
namespace asio = boost::asio;

namespace {

constexpr std::string_view create_maps_sql = R"(CREATE TABLE IF NOT EXISTS shard_maps (
  version INT UNSIGNED NOT NULL COMMENT '2, 3, ...: version 1 is the config''s equal ranges, never written',
  map TEXT NOT NULL COMMENT 'the map after this split: start:shard per range in hash order (core::shard_map)',
  split_shard INT UNSIGNED NOT NULL COMMENT 'the shard whose range split',
  new_shard INT UNSIGNED NOT NULL COMMENT 'the shard that took the upper half',
  new_address VARCHAR(300) NOT NULL COMMENT 'host:port of the new shard, as every gateway lists it',
  state VARCHAR(16) NOT NULL COMMENT 'docs/resharding.md: planned, adopting, copying, ... retired, failed',
  state_ms BIGINT UNSIGNED NOT NULL COMMENT 'when the split entered its state',
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (version)
) ENGINE=InnoDB COMMENT 'the shard map versions (docs/resharding.md)')";

constexpr std::string_view create_adoptions_sql = R"(CREATE TABLE IF NOT EXISTS shard_map_adoptions (
  version INT UNSIGNED NOT NULL,
  node_id INT UNSIGNED NOT NULL COMMENT 'the gateway',
  from_seq BIGINT UNSIGNED NOT NULL COMMENT 'its first journal seq routed by this version',
  seen_state TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'the latest state it routes by (shards::split_state)',
  cut_over_seq BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'from this seq it routes the moved half to the new shard alone',
  adopted_at DATETIME(6) NOT NULL,
  PRIMARY KEY (version, node_id)
) ENGINE=InnoDB COMMENT 'which gateway routes by which map version from which seq (docs/resharding.md)')";

constexpr std::string_view create_progress_sql = R"(CREATE TABLE IF NOT EXISTS shard_map_progress (
  version INT UNSIGNED NOT NULL,
  driver INT UNSIGNED NOT NULL COMMENT 'node id of the gateway driving the split',
  note VARCHAR(1000) NOT NULL COMMENT 'what it does or waits for',
  tbl VARCHAR(200) NOT NULL COMMENT 'the table the copy or clean is in',
  rows_read BIGINT UNSIGNED NOT NULL,
  rows_done BIGINT UNSIGNED NOT NULL,
  rows_estimate BIGINT UNSIGNED NOT NULL,
  started_ms BIGINT UNSIGNED NOT NULL,
  updated_ms BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (version)
) ENGINE=InnoDB COMMENT 'a split''s progress, for cairn reshard status (docs/resharding.md)')";

constexpr std::string_view create_steps_sql = R"(CREATE TABLE IF NOT EXISTS shard_map_steps (
  version INT UNSIGNED NOT NULL,
  step VARCHAR(8) NOT NULL COMMENT 'copy or clean',
  unit VARCHAR(200) NOT NULL COMMENT 'the copy group, or the table cleaned, that is done',
  rows_read BIGINT UNSIGNED NOT NULL,
  rows_done BIGINT UNSIGNED NOT NULL COMMENT 'of them, copied (or deleted)',
  driver INT UNSIGNED NOT NULL COMMENT 'node id of the gateway that did it',
  done_ms BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (version, step, unit)
) ENGINE=InnoDB COMMENT 'the parts of a split''s copy and clean that are done: a driver that restarts skips them (docs/resharding.md)')";

constexpr std::string_view create_resume_sql = R"(CREATE TABLE IF NOT EXISTS shard_map_resume (
  version INT UNSIGNED NOT NULL,
  unit VARCHAR(200) NOT NULL COMMENT 'the copy group',
  tbl VARCHAR(200) NOT NULL COMMENT 'its table the copy was in',
  after_key MEDIUMBLOB NOT NULL COMMENT 'the scan key of the last row written: per column, its length in decimal, a colon, its bytes',
  rows_read BIGINT UNSIGNED NOT NULL,
  driver INT UNSIGNED NOT NULL,
  at_ms BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (version, unit)
) ENGINE=InnoDB COMMENT 'how far a split''s copy got inside a group whose rows stand alone: a driver that restarts resumes there (docs/resharding.md)')";

constexpr std::array<std::string_view, 10> state_names{"planned",   "adopting", "copying", "catching_up", "verifying",
                                                       "switched",  "done",     "cleaning", "retired",    "failed"};

constexpr unsigned er_dup_entry = 1062;

// A prepared write to a table an older cairnd may not have made: on a missing table, create_sql, then
// the write once more.
asio::awaitable<core::result<void>> async_write_creating(mariadb_conn& conn, std::string_view sql, std::span<const sql_param> params,
                                                         std::string_view create_sql) {
    auto w = co_await conn.async_query_prepared(sql, params);
    if (!w && tables_missing(conn)) {
        if (auto c = co_await conn.async_execute(create_sql); !c) co_return c;
        w = co_await conn.async_query_prepared(sql, params);
    }
    if (!w) co_return w.error();
    co_return core::success();
}

}  // namespace

std::string_view split_state_name(split_state s) noexcept { return state_names[static_cast<std::size_t>(s)]; }

std::optional<split_state> split_state_from_name(std::string_view name) noexcept {
    for (std::size_t i = 0; i < state_names.size(); ++i) {
        if (state_names[i] == name) return static_cast<split_state>(i);
    }
    return std::nullopt;
}

bool split_may_move(split_state from, split_state to) noexcept {
    if (to == split_state::failed) return from < split_state::switched;
    return from != split_state::failed && from != split_state::retired && static_cast<int>(to) == static_cast<int>(from) + 1;
}

asio::awaitable<core::result<void>> async_create_map_schema(mariadb_conn& conn) {
    if (auto r = co_await conn.async_execute(create_maps_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_progress_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_steps_sql); !r) co_return r;
    co_return co_await conn.async_execute(create_adoptions_sql);
}

asio::awaitable<core::result<std::vector<stored_map>>> async_read_maps(mariadb_conn& conn, std::string* why) {
    auto r = co_await conn.async_query(
        "SELECT version, map, split_shard, new_shard, new_address, state, state_ms FROM shard_maps ORDER BY version");
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<stored_map>{};
        co_return r.error();
    }
    const auto& rows = r.value();
    std::vector<stored_map> out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        stored_map m;
        m.version = static_cast<std::uint32_t>(rows.uint64_at(i, 0));
        const auto bad = [&](std::string_view what) -> core::errc {
            if (why) *why = fmt::format("shard_maps version {}: {}", m.version, what);
            return core::errc::shard_rejected;
        };
        auto map = core::shard_map::parse(rows.at(i, 1).value_or(""));
        if (!map) co_return bad("the map does not parse");
        m.map = std::move(map.value());
        m.split_shard = static_cast<std::uint32_t>(rows.uint64_at(i, 2));
        m.new_shard = static_cast<std::uint32_t>(rows.uint64_at(i, 3));
        if (m.version < 2 || m.new_shard + 1 != m.map.size() || m.split_shard >= m.new_shard) {
            co_return bad("the version, its map and its shards disagree");
        }
        m.new_address = std::string(rows.at(i, 4).value_or(""));
        const auto state = split_state_from_name(rows.at(i, 5).value_or(""));
        if (!state) co_return bad("unknown state");
        m.state = *state;
        m.state_ms = rows.uint64_at(i, 6);
        out.push_back(std::move(m));
    }
    co_return out;
}

asio::awaitable<core::result<stored_map>> async_propose_split(mariadb_conn& conn, std::uint32_t shard_count, std::uint32_t shard,
                                                              std::string_view new_address, std::uint64_t now_ms) {
    if (shard_count == 0 || shard_count > core::shard_map::shards_max || new_address.empty() || new_address.size() > 300) {
        co_return core::errc::bad_request;
    }
    if (auto s = co_await async_create_map_schema(conn); !s) co_return s.error();
    auto maps = co_await async_read_maps(conn);
    if (!maps) co_return maps.error();
    // The map in force: the newest split that did not fail, or the config's.
    core::shard_map base = core::shard_map::equal_ranges(shard_count);
    std::uint32_t newest = 1;
    for (const auto& m : maps.value()) {
        if (!split_ended(m.state)) co_return core::errc::conflict;
        if (m.state != split_state::failed) base = m.map;
        newest = m.version;
    }
    auto next = base.split(shard);
    if (!next) co_return next.error();
    stored_map m;
    m.version = newest + 1;
    m.map = std::move(next.value());
    m.split_shard = shard;
    m.new_shard = base.size();
    m.new_address = std::string(new_address);
    m.state = split_state::planned;
    m.state_ms = now_ms;
    const auto text = m.map.to_text();
    const std::array<sql_param, 7> params{std::uint64_t{m.version}, std::string_view(text), std::uint64_t{m.split_shard},
                                          std::uint64_t{m.new_shard}, std::string_view(m.new_address),
                                          split_state_name(m.state), m.state_ms};
    auto w = co_await conn.async_query_prepared(
        "INSERT INTO shard_maps (version, map, split_shard, new_shard, new_address, state, state_ms, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, NOW(6))",
        params);
    if (!w) co_return conn.last_errno() == er_dup_entry ? core::errc::conflict : w.error();
    co_return m;
}

asio::awaitable<core::result<void>> async_move_split(mariadb_conn& conn, std::uint32_t version, split_state from, split_state to,
                                                     std::uint64_t now_ms) {
    if (!split_may_move(from, to)) co_return core::errc::bad_request;
    const std::array<sql_param, 4> params{split_state_name(to), now_ms, std::uint64_t{version}, split_state_name(from)};
    auto w = co_await conn.async_query_prepared("UPDATE shard_maps SET state = ?, state_ms = ? WHERE version = ? AND state = ?", params);
    if (!w) co_return w.error();
    if (conn.affected_rows() != 1) co_return core::errc::conflict;
    co_return core::success();
}

asio::awaitable<core::result<std::uint64_t>> async_adopt(mariadb_conn& conn, std::uint32_t version, std::uint32_t node_id,
                                                         std::uint64_t from_seq) {
    if (auto s = co_await async_create_map_schema(conn); !s) co_return s.error();
    const std::array<sql_param, 3> params{std::uint64_t{version}, std::uint64_t{node_id}, from_seq};
    auto w = co_await conn.async_query_prepared(
        "INSERT IGNORE INTO shard_map_adoptions (version, node_id, from_seq, adopted_at) VALUES (?, ?, ?, NOW(6))", params);
    if (!w) co_return w.error();
    const std::array<sql_param, 2> key{std::uint64_t{version}, std::uint64_t{node_id}};
    auto r = co_await conn.async_query_prepared("SELECT from_seq FROM shard_map_adoptions WHERE version = ? AND node_id = ?", key);
    if (!r) co_return r.error();
    if (r.value().size() != 1) co_return core::errc::shard_rejected;
    co_return r.value().uint64_at(0, 0);
}

asio::awaitable<core::result<std::vector<adoption>>> async_adoptions(mariadb_conn& conn, std::uint32_t version) {
    const std::array<sql_param, 1> key{std::uint64_t{version}};
    auto r = co_await conn.async_query_prepared(
        "SELECT node_id, from_seq, seen_state, cut_over_seq FROM shard_map_adoptions WHERE version = ? ORDER BY node_id", key);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<adoption>{};
        co_return r.error();
    }
    std::vector<adoption> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        const auto seen = r.value().uint64_at(i, 2);
        if (seen > static_cast<std::uint64_t>(split_state::failed)) co_return core::errc::shard_rejected;
        out.push_back({static_cast<std::uint32_t>(r.value().uint64_at(i, 0)), r.value().uint64_at(i, 1),
                       static_cast<split_state>(seen), r.value().uint64_at(i, 3)});
    }
    co_return out;
}

asio::awaitable<core::result<void>> async_mark_seen(mariadb_conn& conn, std::uint32_t version, std::uint32_t node_id,
                                                   split_state state, std::uint64_t cut_over_seq) {
    const std::array<sql_param, 5> params{std::uint64_t{static_cast<std::uint8_t>(state)}, cut_over_seq, std::uint64_t{version},
                                          std::uint64_t{node_id}, std::uint64_t{static_cast<std::uint8_t>(state)}};
    auto w = co_await conn.async_query_prepared(
        "UPDATE shard_map_adoptions SET seen_state = ?, cut_over_seq = ? WHERE version = ? AND node_id = ? AND seen_state < ?",
        params);
    if (!w) co_return w.error();
    co_return core::success();
}

asio::awaitable<core::result<void>> async_write_progress(mariadb_conn& conn, std::uint32_t version, const split_progress& p) {
    const std::string note = p.note.substr(0, 1000);
    const std::string table = p.table.substr(0, 200);
    const std::array<sql_param, 9> params{std::uint64_t{version}, std::uint64_t{p.driver}, std::string_view(note),
                                          std::string_view(table), p.rows_read, p.rows_done, p.rows_estimate, p.started_ms,
                                          p.updated_ms};
    constexpr std::string_view sql =
        "REPLACE INTO shard_map_progress (version, driver, note, tbl, rows_read, rows_done, rows_estimate, started_ms, "
        "updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    co_return co_await async_write_creating(conn, sql, params, create_progress_sql);
}

asio::awaitable<core::result<std::optional<split_progress>>> async_read_progress(mariadb_conn& conn, std::uint32_t version) {
    const std::array<sql_param, 1> key{std::uint64_t{version}};
    auto r = co_await conn.async_query_prepared(
        "SELECT driver, note, tbl, rows_read, rows_done, rows_estimate, started_ms, updated_ms FROM shard_map_progress "
        "WHERE version = ?",
        key);
    if (!r) {
        if (tables_missing(conn)) co_return std::optional<split_progress>{};
        co_return r.error();
    }
    if (r.value().size() != 1) co_return std::optional<split_progress>{};
    const auto& rows = r.value();
    split_progress p;
    p.driver = static_cast<std::uint32_t>(rows.uint64_at(0, 0));
    p.note = std::string(rows.at(0, 1).value_or(""));
    p.table = std::string(rows.at(0, 2).value_or(""));
    p.rows_read = rows.uint64_at(0, 3);
    p.rows_done = rows.uint64_at(0, 4);
    p.rows_estimate = rows.uint64_at(0, 5);
    p.started_ms = rows.uint64_at(0, 6);
    p.updated_ms = rows.uint64_at(0, 7);
    co_return p;
}

std::string_view split_step_name(split_step s) noexcept { return s == split_step::copy ? "copy" : "clean"; }

asio::awaitable<core::result<void>> async_mark_step_done(mariadb_conn& conn, const step_done& d) {
    const std::string unit = d.unit.substr(0, 200);
    const std::array<sql_param, 7> params{std::uint64_t{d.version}, split_step_name(d.step), std::string_view(unit), d.rows_read,
                                          d.rows_done, std::uint64_t{d.driver}, d.done_ms};
    constexpr std::string_view sql =
        "REPLACE INTO shard_map_steps (version, step, unit, rows_read, rows_done, driver, done_ms) VALUES (?, ?, ?, ?, ?, ?, ?)";
    co_return co_await async_write_creating(conn, sql, params, create_steps_sql);
}

asio::awaitable<core::result<std::vector<step_done>>> async_steps_done(mariadb_conn& conn, std::uint32_t version, split_step step) {
    const std::array<sql_param, 2> key{std::uint64_t{version}, split_step_name(step)};
    auto r = co_await conn.async_query_prepared(
        "SELECT unit, rows_read, rows_done, driver, done_ms FROM shard_map_steps WHERE version = ? AND step = ? ORDER BY done_ms",
        key);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<step_done>{};
        co_return r.error();
    }
    std::vector<step_done> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        out.push_back({version, step, std::string(r.value().at(i, 0).value_or("")), r.value().uint64_at(i, 1),
                       r.value().uint64_at(i, 2), static_cast<std::uint32_t>(r.value().uint64_at(i, 3)), r.value().uint64_at(i, 4)});
    }
    co_return out;
}

namespace {

std::string encode_key(const std::vector<std::string>& key) {
    std::string out;
    for (const auto& k : key) fmt::format_to(std::back_inserter(out), "{}:{}", k.size(), k);
    return out;
}

std::optional<std::vector<std::string>> decode_key(std::string_view in) {
    std::vector<std::string> out;
    while (!in.empty()) {
        const auto colon = in.find(':');
        if (colon == std::string_view::npos || colon == 0 || colon > 9) return std::nullopt;
        std::size_t n = 0;
        if (std::from_chars(in.data(), in.data() + colon, n).ptr != in.data() + colon) return std::nullopt;
        in.remove_prefix(colon + 1);
        if (n > in.size()) return std::nullopt;
        out.emplace_back(in.substr(0, n));
        in.remove_prefix(n);
    }
    if (out.empty()) return std::nullopt;
    return out;
}

}  // namespace

asio::awaitable<core::result<void>> async_mark_copy_position(mariadb_conn& conn, const copy_position& p) {
    const std::string unit = p.group.substr(0, 200);
    const std::string table = p.table.substr(0, 200);
    const std::string key = encode_key(p.after);
    const std::array<sql_param, 7> params{std::uint64_t{p.version}, std::string_view(unit), std::string_view(table), std::string_view(key),
                                          p.rows_read, std::uint64_t{p.driver}, p.at_ms};
    constexpr std::string_view sql =
        "REPLACE INTO shard_map_resume (version, unit, tbl, after_key, rows_read, driver, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)";
    co_return co_await async_write_creating(conn, sql, params, create_resume_sql);
}

asio::awaitable<core::result<std::vector<copy_position>>> async_copy_positions(mariadb_conn& conn, std::uint32_t version) {
    const std::array<sql_param, 1> key{std::uint64_t{version}};
    auto r = co_await conn.async_query_prepared(
        "SELECT unit, tbl, after_key, rows_read, driver, at_ms FROM shard_map_resume WHERE version = ? ORDER BY unit", key);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<copy_position>{};
        co_return r.error();
    }
    std::vector<copy_position> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        auto after = decode_key(r.value().at(i, 2).value_or(""));
        if (!after) continue;
        out.push_back({version, std::string(r.value().at(i, 0).value_or("")), std::string(r.value().at(i, 1).value_or("")),
                       std::move(*after), r.value().uint64_at(i, 3), static_cast<std::uint32_t>(r.value().uint64_at(i, 4)),
                       r.value().uint64_at(i, 5)});
    }
    co_return out;
}

}  // namespace cairn::shards
