#include "shards/gateways.hpp"

#include "shards/mariadb_conn.hpp"

#include <fmt/format.h>

#include <array>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view create_marks_sql = R"(CREATE TABLE IF NOT EXISTS applied_marks (
  node_id BIGINT UNSIGNED NOT NULL COMMENT 'the gateway (its node_id)',
  seq BIGINT UNSIGNED NOT NULL COMMENT 'every op of that gateway through this journal seq is applied here or queued as an error',
  updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (node_id)
) ENGINE=InnoDB COMMENT 'read-your-writes across gateways (docs/operations.md)')";

constexpr std::string_view create_late_marks_sql = R"(CREATE TABLE IF NOT EXISTS late_marks (
  node_id BIGINT UNSIGNED NOT NULL COMMENT 'the gateway (its node_id)',
  late BIGINT UNSIGNED NOT NULL COMMENT 'that gateway''s late applications (retries, re-injections) through this number are applied here',
  updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (node_id)
) ENGINE=InnoDB COMMENT 'what a promoted replica lacks of the ops applied late (docs/operations.md)')";

constexpr std::string_view create_heartbeats_sql = R"(CREATE TABLE IF NOT EXISTS heartbeats (
  node_id BIGINT UNSIGNED NOT NULL COMMENT 'the gateway (its node_id)',
  ts TIMESTAMP(6) NOT NULL COMMENT 'written on the primary every probe; read on its replicas, it says how old their data is',
  PRIMARY KEY (node_id)
) ENGINE=InnoDB COMMENT 'replica lag (shards/replicas.hpp)')";

constexpr std::string_view write_late_mark_sql =
    "INSERT INTO late_marks (node_id, late, updated_at) VALUES (?, ?, NOW(6)) "
    "ON DUPLICATE KEY UPDATE updated_at = IF(VALUES(late) > late, NOW(6), updated_at), late = GREATEST(late, VALUES(late))";

constexpr std::string_view read_late_mark_sql = "SELECT late FROM late_marks WHERE node_id = ?";

constexpr std::string_view create_leases_sql = R"(CREATE TABLE IF NOT EXISTS gateway_leases (
  node_id BIGINT UNSIGNED NOT NULL,
  journal_id BIGINT UNSIGNED NOT NULL COMMENT 'the journal holding the node id',
  holder VARCHAR(255) NOT NULL COMMENT 'host:port (pid) of the gateway, for operators',
  last_seq BIGINT UNSIGNED NOT NULL COMMENT 'the journal''s last seq at the last renewal',
  renewed_at TIMESTAMP(6) NOT NULL,
  expires_at TIMESTAMP(6) NOT NULL,
  released TINYINT UNSIGNED NOT NULL DEFAULT 0 COMMENT '1 after a clean stop',
  PRIMARY KEY (node_id)
) ENGINE=InnoDB COMMENT 'node id leases: one live gateway per node id (shard 0 only; docs/operations.md)')";

constexpr std::string_view write_mark_sql =
    "INSERT INTO applied_marks (node_id, seq, updated_at) VALUES (?, ?, NOW(6)) "
    "ON DUPLICATE KEY UPDATE updated_at = IF(VALUES(seq) > seq, NOW(6), updated_at), seq = GREATEST(seq, VALUES(seq))";

constexpr std::string_view read_mark_sql = "SELECT seq FROM applied_marks WHERE node_id = ?";

constexpr std::string_view insert_lease_sql =
    "INSERT IGNORE INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) "
    "VALUES (?, ?, ?, ?, NOW(6), NOW(6) + INTERVAL ? SECOND, 0)";

// The row as the claim judges it; times relative to the server's now.
constexpr std::string_view select_lease_sql =
    "SELECT journal_id, holder, last_seq, released, expires_at > NOW(6), "
    "TIMESTAMPDIFF(MICROSECOND, renewed_at, NOW(6)) DIV 1000, "
    "TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) DIV 1000 FROM gateway_leases WHERE node_id = ?";

constexpr std::string_view renew_lease_sql =
    "UPDATE gateway_leases SET holder = ?, last_seq = ?, renewed_at = NOW(6), expires_at = NOW(6) + INTERVAL ? SECOND, "
    "released = 0 WHERE node_id = ? AND journal_id = ?";

// Another journal's silent lease changes hands only if it is still the row the claim judged.
constexpr std::string_view take_over_sql =
    "UPDATE gateway_leases SET journal_id = ?, holder = ?, last_seq = ?, renewed_at = NOW(6), "
    "expires_at = NOW(6) + INTERVAL ? SECOND, released = 0 "
    "WHERE node_id = ? AND journal_id = ? AND (released = 1 OR expires_at <= NOW(6)) "
    "AND renewed_at <= NOW(6) - INTERVAL ? SECOND";

constexpr std::string_view release_lease_sql =
    "UPDATE gateway_leases SET last_seq = ?, released = 1, expires_at = NOW(6) WHERE node_id = ? AND journal_id = ?";

constexpr std::string_view list_leases_sql =
    "SELECT node_id, journal_id, holder, last_seq, released, released = 0 AND expires_at > NOW(6), "
    "GREATEST(0, TIMESTAMPDIFF(MICROSECOND, renewed_at, NOW(6)) DIV 1000) FROM gateway_leases ORDER BY node_id";

std::string_view text_at(const rows& r, std::size_t row, std::size_t col) { return r.at(row, col).value_or(""); }

std::string describe_duration(std::uint64_t ms) {
    if (ms < 120'000) return fmt::format("{} s", ms / 1000);
    if (ms < 2 * 3'600'000) return fmt::format("{} min", ms / 60'000);
    return fmt::format("{} h", ms / 3'600'000);
}

}  // namespace

asio::awaitable<core::result<void>> async_create_gateway_schema(mariadb_conn& conn) {
    if (auto r = co_await conn.async_execute(create_marks_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_late_marks_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_heartbeats_sql); !r) co_return r;
    co_return co_await conn.async_execute(create_leases_sql);
}

namespace {

// A mark (applied or late) of node_id: raised to value by `sql`, read by `sql` (0 when there is no row).
asio::awaitable<core::result<void>> async_raise_mark(mariadb_conn& conn, std::string_view sql, std::uint64_t node_id,
                                                     std::uint64_t value) {
    const std::array<sql_param, 2> params{node_id, value};
    auto r = co_await conn.async_query_prepared(sql, params);
    if (!r) co_return r.error();
    co_return core::success();
}

asio::awaitable<core::result<std::uint64_t>> async_read_mark_row(mariadb_conn& conn, std::string_view sql,
                                                                 std::uint64_t node_id) {
    const std::array<sql_param, 1> params{node_id};
    auto r = co_await conn.async_query_prepared(sql, params);
    if (!r) co_return r.error();
    co_return r.value().size() == 0 ? std::uint64_t{0} : r.value().uint64_at(0, 0);
}

}  // namespace

asio::awaitable<core::result<void>> async_write_applied_mark(mariadb_conn& conn, std::uint64_t node_id,
                                                             std::uint64_t seq) {
    co_return co_await async_raise_mark(conn, write_mark_sql, node_id, seq);
}

asio::awaitable<core::result<std::uint64_t>> async_read_applied_mark(mariadb_conn& conn, std::uint64_t node_id) {
    co_return co_await async_read_mark_row(conn, read_mark_sql, node_id);
}

asio::awaitable<core::result<void>> async_write_late_mark(mariadb_conn& conn, std::uint64_t node_id,
                                                          std::uint64_t number) {
    co_return co_await async_raise_mark(conn, write_late_mark_sql, node_id, number);
}

asio::awaitable<core::result<std::uint64_t>> async_read_late_mark_of(mariadb_conn& conn, std::uint64_t node_id) {
    co_return co_await async_read_mark_row(conn, read_late_mark_sql, node_id);
}

asio::awaitable<core::result<std::vector<std::pair<std::uint64_t, std::uint64_t>>>> async_read_applied_marks(
    mariadb_conn& conn) {
    auto r = co_await conn.async_query("SELECT node_id, seq FROM applied_marks ORDER BY node_id");
    if (!r) co_return r.error();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) out.emplace_back(r.value().uint64_at(i, 0), r.value().uint64_at(i, 1));
    co_return out;
}

asio::awaitable<core::result<lease_verdict>> async_claim_lease(mariadb_conn& conn, const lease_claim& c) {
    const auto ttl_s = static_cast<std::uint64_t>(c.ttl.count());
    {
        const std::array<sql_param, 5> params{c.node_id, c.journal_id, std::string_view(c.holder), c.last_seq, ttl_s};
        if (auto r = co_await conn.async_query_prepared(insert_lease_sql, params); !r) co_return r.error();
        if (conn.affected_rows() == 1) co_return lease_verdict{true, {}};
    }
    const std::array<sql_param, 1> key{c.node_id};
    auto row = co_await conn.async_query_prepared(select_lease_sql, key);
    if (!row) co_return row.error();
    if (row.value().size() == 0) co_return lease_verdict{false, "the lease row vanished while it was claimed; try again"};
    const rows& r = row.value();
    const std::uint64_t journal_id = r.uint64_at(0, 0);
    const std::string holder(text_at(r, 0, 1));
    const std::uint64_t last_seq = r.uint64_at(0, 2);
    const bool released = r.uint64_at(0, 3) != 0;
    const bool unexpired = r.uint64_at(0, 4) != 0;
    const std::int64_t silent_ms = r.int64_at(0, 5);
    const std::int64_t expires_in_ms = r.int64_at(0, 6);

    if (journal_id == c.journal_id) {  // this journal's (a restart, a renewal, or after a clean stop)
        const std::array<sql_param, 5> params{std::string_view(c.holder), c.last_seq, ttl_s, c.node_id, c.journal_id};
        if (auto u = co_await conn.async_query_prepared(renew_lease_sql, params); !u) co_return u.error();
        co_return lease_verdict{true, {}};
    }
    if (!released && unexpired) {
        co_return lease_verdict{
            false, fmt::format("node id {} is held by another running gateway, {} (its journal {:016x}, last seq {}, "
                               "renewed {} ago, lapses in {} unless renewed); every gateway needs its own node_id",
                               c.node_id, holder, journal_id, last_seq,
                               describe_duration(static_cast<std::uint64_t>(std::max<std::int64_t>(0, silent_ms))),
                               describe_duration(static_cast<std::uint64_t>(std::max<std::int64_t>(0, expires_in_ms))))};
    }
    const auto reuse_ms = static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(c.reuse_after).count());
    if (silent_ms >= reuse_ms) {
        const auto reuse_s = static_cast<std::uint64_t>(reuse_ms / 1000);
        const std::array<sql_param, 7> params{c.journal_id, std::string_view(c.holder), c.last_seq, ttl_s,
                                              c.node_id,    journal_id,                 reuse_s};
        if (auto u = co_await conn.async_query_prepared(take_over_sql, params); !u) co_return u.error();
        if (conn.affected_rows() == 1) co_return lease_verdict{true, {}};
        co_return lease_verdict{false, fmt::format("node id {} changed hands while it was claimed; try again", c.node_id)};
    }
    co_return lease_verdict{
        false,
        fmt::format("node id {} belonged to another journal ({:016x}, {}, through seq {}), silent for {}: a new journal "
                    "restarts its seqs, so under this node id its op ids would repeat that journal's, and counters drop "
                    "increments whose op id they have seen (for counters.op_ids_keep_hours, {} h). Use a node_id never "
                    "used on these shards; or, if that journal is gone and its ops are applied, wait {} more, or delete its "
                    "row on shard 0 (DELETE FROM gateway_leases WHERE node_id = {}) once its op ids have aged out",
                    c.node_id, journal_id, holder, last_seq,
                    describe_duration(static_cast<std::uint64_t>(std::max<std::int64_t>(0, silent_ms))),
                    c.reuse_after.count(), describe_duration(static_cast<std::uint64_t>(reuse_ms - silent_ms)), c.node_id)};
}

asio::awaitable<core::result<void>> async_release_lease(mariadb_conn& conn, const lease_claim& c) {
    const std::array<sql_param, 3> params{c.last_seq, c.node_id, c.journal_id};
    auto r = co_await conn.async_query_prepared(release_lease_sql, params);
    if (!r) co_return r.error();
    co_return core::success();
}

asio::awaitable<core::result<std::vector<lease_row>>> async_list_leases(mariadb_conn& conn) {
    auto r = co_await conn.async_query(list_leases_sql);
    if (!r) co_return r.error();
    std::vector<lease_row> out;
    const rows& rs = r.value();
    for (std::size_t i = 0; i < rs.size(); ++i) {
        out.push_back({rs.uint64_at(i, 0), rs.uint64_at(i, 1), std::string(text_at(rs, i, 2)), rs.uint64_at(i, 3),
                       rs.uint64_at(i, 4) != 0, rs.uint64_at(i, 5) != 0, rs.uint64_at(i, 6)});
    }
    co_return out;
}

}  // namespace cairn::shards
