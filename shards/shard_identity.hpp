// Which place in the shard map a shard's database holds (issue 16): one row in table shard_identity,
// written by the first gateway that connects to it — its index among the config's [[shards]], how
// many shards that config lists, and the map's version (1 until online resharding exists). Every
// new connection of a gateway's pools checks it before it is used (pool::set_connection_check), so
// a gateway whose [[shards]] are in another order, or of another count, than the gateways that came
// first can never apply a write to, or read from, a shard that holds other ids: that shard stays
// "unavailable" with the reason as its last connect failure (/readyz, cairn status, the logs), and
// its writes wait in the journal. The caller owns the connection; any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include <boost/asio/awaitable.hpp>

#include "core/result.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace cairn::shards {

class mariadb_conn;

// The shard map's version a gateway of this build expects (the map a config's [[shards]] make).
inline constexpr std::uint32_t shard_map_version = 1;

// Checks (and on a database that has none yet, writes) the identity of the shard behind conn, which
// the config lists as shard `index` of `count`. It matches when the index is the same and the count
// stored (the first gateway's) is at most `count`: shards listed beyond it wait to take half of a
// split (docs/resharding.md). Returns an empty string when it matches, else why not, as an operator
// reads it (a mismatch, or a failed query: then MariaDB's own error).
boost::asio::awaitable<std::string> async_check_shard_identity(mariadb_conn& conn, std::uint32_t index, std::uint32_t count);
// The same check of a replica of that shard, which only reads: a replica with no identity row yet
// (replication has not brought the primary's) does not match. A write there would make the
// replica's data differ from its primary's and stop replication at the primary's own insert.
boost::asio::awaitable<std::string> async_check_replica_identity(mariadb_conn& conn, std::uint32_t index, std::uint32_t count);

// Connects conn (one of the caller's own, outside the pools) and checks its identity as above. Errors:
// the connect's, or shard_rejected with the reason in *why (if given).
boost::asio::awaitable<core::result<void>> async_connect_checked(mariadb_conn& conn, std::uint32_t index, std::uint32_t count,
                                                                 std::string* why = nullptr);

struct shard_identity {
    std::uint32_t index = 0;
    std::uint32_t count = 0;  // how many shards the first gateway's config listed: the map's version 1
    std::uint32_t map_version = 1;
};
// The identity row, if the database has one (tables missing: none). Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<std::optional<shard_identity>>> async_read_shard_identity(mariadb_conn& conn);

// Raises the identity row's map_version to `version` (never lowers it): the fence of a split that is
// done — a gateway routing by an older table applies nothing on this shard (apply_worker). Errors:
// those of mariadb_conn; not_found when the database has no identity row.
boost::asio::awaitable<core::result<void>> async_raise_map_version(mariadb_conn& conn, std::uint32_t version);

}  // namespace cairn::shards
