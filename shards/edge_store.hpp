// Edges on one shard: the schema, the batch apply transaction and the reads. Every function
// takes a connection the caller owns (from a pool) and keeps it busy until it returns; the
// connection must stay valid across every suspension. Runs on any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/edge_rules.hpp"
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

enum class edge_direction : std::uint8_t { forward = 0, backward = 1 };

// One stored row: the edge as seen from node_id (forward: node_id is the source).
struct edge_row_key {
    std::string graph;
    std::int64_t node_id = 0;
    edge_direction direction = edge_direction::forward;
    std::int64_t other_id = 0;
    friend auto operator<=>(const edge_row_key&, const edge_row_key&) = default;
};

struct stored_edge {
    edge_row_key key;
    core::edge_row row;
    friend bool operator==(const stored_edge&, const stored_edge&) = default;
};

struct edge_count_key {
    std::string graph;
    std::int64_t node_id = 0;
    edge_direction direction = edge_direction::forward;
    core::edge_state state = core::edge_state::normal;
    friend auto operator<=>(const edge_count_key&, const edge_count_key&) = default;
};

// The rows an edge op writes, with the shard each one lives on: the forward row on the
// source's shard, the backward row on the destination's.
std::vector<std::pair<core::shard_index, edge_row_key>> edge_rows_of(const core::edge_op& e, const core::shard_map& map);

// Creates the edge tables if missing. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_edge_schema(mariadb_conn& conn);

// Applies, in one transaction, every row of ops that lives on `shard` (ops whose rows all
// live elsewhere are ignored): locks the current rows, folds the ops onto them with
// core::edge_merge, writes the changed rows and the count deltas. Idempotent and
// commutative. On error the transaction is rolled back (best effort) and the error of
// mariadb_conn is returned (shard_unavailable, shard_timeout, shard_retry, shard_rejected).
boost::asio::awaitable<core::result<void>> async_apply_edges(mariadb_conn& conn, const core::shard_map& map,
                                                             core::shard_index shard,
                                                             std::span<const core::op* const> ops);

// The forward row of (graph, source, destination), or nullopt if there is none.
boost::asio::awaitable<core::result<std::optional<stored_edge>>> async_get_edge(mariadb_conn& conn,
                                                                               std::string_view graph,
                                                                               std::int64_t source_id,
                                                                               std::int64_t destination_id);

// Test and tooling helpers: every edge row and every non-zero count on the connection's shard.
boost::asio::awaitable<core::result<std::vector<stored_edge>>> async_dump_edges(mariadb_conn& conn);
boost::asio::awaitable<core::result<std::vector<std::pair<edge_count_key, std::int64_t>>>> async_dump_edge_counts(
    mariadb_conn& conn);

}  // namespace cairn::shards
