#include "shards/shard_identity.hpp"

#include "shards/mariadb_conn.hpp"

#include <fmt/format.h>

#include <array>

namespace cairn::shards {
namespace asio = boost::asio;

namespace {

constexpr std::string_view create_sql = R"(CREATE TABLE IF NOT EXISTS shard_identity (
  id TINYINT UNSIGNED NOT NULL PRIMARY KEY COMMENT 'always 1: one row',
  shard_index INT UNSIGNED NOT NULL COMMENT 'its place among the [[shards]] of the gateways, from 0',
  shard_count INT UNSIGNED NOT NULL COMMENT 'how many shards those gateways list',
  map_version INT UNSIGNED NOT NULL COMMENT 'the shard map version (1: the order of [[shards]])',
  created_at DATETIME(6) NOT NULL
) ENGINE=InnoDB)";
constexpr std::string_view read_sql = "SELECT shard_index, shard_count, map_version FROM shard_identity WHERE id = 1";
constexpr std::string_view insert_sql =
    "INSERT IGNORE INTO shard_identity (id, shard_index, shard_count, map_version, created_at) VALUES (1, ?, ?, ?, NOW(6))";

std::string failed(const mariadb_conn& conn, std::string_view what) {
    return fmt::format("checking the shard's identity failed ({}): MariaDB error {}: {}", what, conn.last_errno(), conn.last_error());
}

}  // namespace

asio::awaitable<core::result<std::optional<shard_identity>>> async_read_shard_identity(mariadb_conn& conn) {
    auto row = co_await conn.async_query(read_sql);
    if (!row && tables_missing(conn)) co_return std::optional<shard_identity>();
    if (!row) co_return row.error();
    if (row.value().size() == 0) co_return std::optional<shard_identity>();
    shard_identity id;
    id.index = static_cast<std::uint32_t>(row.value().uint64_at(0, 0));
    id.count = static_cast<std::uint32_t>(row.value().uint64_at(0, 1));
    id.map_version = static_cast<std::uint32_t>(row.value().uint64_at(0, 2));
    co_return id;
}

asio::awaitable<core::result<void>> async_raise_map_version(mariadb_conn& conn, std::uint32_t version) {
    if (auto w = co_await conn.async_execute(
            fmt::format("UPDATE shard_identity SET map_version = GREATEST(map_version, {}) WHERE id = 1", version));
        !w) {
        co_return w;
    }
    auto id = co_await async_read_shard_identity(conn);
    if (!id) co_return id.error();
    if (!id.value()) co_return core::errc::not_found;
    co_return core::success();
}

asio::awaitable<core::result<void>> async_connect_checked(mariadb_conn& conn, std::uint32_t index, std::uint32_t count,
                                                          std::string* why) {
    if (auto r = co_await conn.async_connect(); !r) co_return r;
    auto mismatch = co_await async_check_shard_identity(conn, index, count);
    if (mismatch.empty()) co_return core::success();
    if (why != nullptr) *why = std::move(mismatch);
    co_return core::errc::shard_rejected;
}

namespace {

// The check of both kinds: a primary's (may_write: the first gateway writes the identity) and a
// replica's (reads only).
asio::awaitable<std::string> check_identity(mariadb_conn& conn, std::uint32_t index, std::uint32_t count, bool may_write) {
    auto row = co_await conn.async_query(read_sql);
    if (!may_write && ((!row && tables_missing(conn)) || (row && row.value().size() == 0))) {
        // A replica gets the primary's row through replication. One written here would make the
        // replica's data differ from its primary's, and replication would stop at the primary's own
        // insert of it (duplicate key).
        co_return fmt::format("the replica holds no shard identity yet (shard {} of {}): replication has not brought "
                              "the primary's row, or this server does not replicate the shard's primary; it serves no "
                              "reads until it has",
                              index, count);
    }
    if (!row && tables_missing(conn)) {
        if (auto c = co_await conn.async_execute(create_sql); !c) co_return failed(conn, "creating table shard_identity");
        row = co_await conn.async_query(read_sql);
    }
    if (!row) co_return failed(conn, "reading shard_identity");
    if (row.value().size() == 0) {
        // The first gateway to reach this database: it is what this gateway's config says it is.
        const std::array<sql_param, 3> params{std::uint64_t{index}, std::uint64_t{count}, std::uint64_t{shard_map_version}};
        if (auto w = co_await conn.async_query_prepared(insert_sql, params); !w) co_return failed(conn, "writing shard_identity");
        row = co_await conn.async_query(read_sql);  // another gateway may have been first
        if (!row || row.value().size() == 0) co_return failed(conn, "reading shard_identity");
    }
    const auto held_index = row.value().uint64_at(0, 0);
    const auto held_count = row.value().uint64_at(0, 1);
    const auto held_version = row.value().uint64_at(0, 2);
    // A config may list more shards than the first gateway's did (a shard added ahead of a split,
    // docs/resharding.md): the map on shard 0, not the count, says where keys live. Fewer it may not.
    if (held_index == index && held_count <= count) co_return std::string();
    co_return fmt::format(
        "this database is shard {} of {} (shard map version {}), but this gateway's config lists it as shard {} of {}: "
        "every gateway must list the same [[shards]] in the same order, at least as many as the first gateway did "
        "(docs/operations.md, \"The shard map\"); nothing is read from or applied to it until the config is fixed",
        held_index, held_count, held_version, index, count);
}

}  // namespace

asio::awaitable<std::string> async_check_shard_identity(mariadb_conn& conn, std::uint32_t index, std::uint32_t count) {
    return check_identity(conn, index, count, true);
}

asio::awaitable<std::string> async_check_replica_identity(mariadb_conn& conn, std::uint32_t index, std::uint32_t count) {
    return check_identity(conn, index, count, false);
}

}  // namespace cairn::shards
