// Entities on one shard (issue 5): the entities table, the apply transaction (last writer wins
// by ts, tombstones) and point reads. The caller owns the connection and keeps it valid until
// the awaitable completes. Any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/entities.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// The entities table, if missing. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_entity_schema(mariadb_conn& conn);

// Applies the entity ops in one transaction: for the entities whose id lives on `shard`, locks
// their rows, keeps the winner of each (core::entity_version_wins) and writes the rows that
// changed; then the index rows of the ops' entries that live on `shard`
// (shards::async_write_index_rows). Errors: undeclared (a kind the config does not declare) and
// those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_apply_entities(mariadb_conn& conn, const core::entity_config& entities,
                                                                const core::shard_map& map, core::shard_index shard,
                                                                std::span<const core::op* const> ops);

struct stored_entity {
    std::string kind;
    std::string id;  // 16 bytes
    std::uint64_t ts = 0;
    bool deleted = false;
    std::string body;  // stored; empty for a tombstone
    friend bool operator==(const stored_entity&, const stored_entity&) = default;
};

// The rows of many ids of one kind (tombstones included): result[i] belongs to ids[i].
boost::asio::awaitable<core::result<std::vector<std::optional<stored_entity>>>> async_get_entities(
    mariadb_conn& conn, std::string kind, std::span<const std::string> ids);

// The cleaner's walk: up to limit rows of a kind (tombstones included), most recently updated
// first, before (ts, id) `before` (nullopt: from the newest). Uses the by_updated key.
boost::asio::awaitable<core::result<std::vector<stored_entity>>> async_scan_entities_by_updated(
    mariadb_conn& conn, std::string kind, std::optional<std::pair<std::uint64_t, std::string>> before, std::size_t limit);
// The number of rows of a kind on this shard (tombstones included): the cleaner's total.
boost::asio::awaitable<core::result<std::uint64_t>> async_count_entities(mariadb_conn& conn, std::string kind);

// Test helper: every row on the connection's shard, by (kind, id).
boost::asio::awaitable<core::result<std::vector<stored_entity>>> async_dump_entities(mariadb_conn& conn);

}  // namespace cairn::shards
