// Edges on one shard: the schema, the batch apply transaction and the reads. Every function
// takes a connection the caller owns (from a pool) and keeps it busy until it returns; the
// connection must stay valid across every suspension. Runs on any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/edge_rules.hpp"
#include "core/page_cursor.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"
#include "shards/mariadb_conn.hpp"

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
// core::edge_merge, writes the changed rows and the count deltas. Node ops (core::node_op,
// which touch every shard) merge into node_registers in that transaction first, and each edge
// row's effective state (column state; own_state holds the edge ops' own) is
// core::edge_effective_state of the registers of both endpoints. After that commit, the rows
// of each node op's node (node_id = node, other_id = node) are recomputed in chunks of 1000,
// one transaction each, counts exact in each. Idempotent and commutative. On error the transaction is rolled back (best effort) and the error of
// mariadb_conn is returned (shard_unavailable, shard_timeout, shard_retry, shard_rejected).
boost::asio::awaitable<core::result<void>> async_apply_edges(mariadb_conn& conn, const core::shard_map& map,
                                                             core::shard_index shard,
                                                             std::span<const core::op* const> ops);

// The forward row of (graph, source, destination), or nullopt if there is none.
boost::asio::awaitable<core::result<std::optional<stored_edge>>> async_get_edge(mariadb_conn& conn,
                                                                               std::string_view graph,
                                                                               std::int64_t source_id,
                                                                               std::int64_t destination_id);

// One page of a node's adjacency list in one state, newest first: ordered by (position,
// other_id) descending. limit >= 1. Without a cursor the page starts at the newest edge.
struct edge_page_request {
    std::string graph;
    std::int64_t node_id = 0;
    edge_direction direction = edge_direction::forward;
    // One state, or several: a page over several states merges them in position order (one
    // range read of by_position per state, each at most limit + 1 rows).
    core::edge_state_set states = core::edge_state::normal;
    std::size_t limit = 100;
    std::optional<core::page_cursor> cursor;
    // Empty: every edge of the node in state. Else only the edges whose other end is one of these
    // ("which of these"; at most page_other_ids_max, repeats allowed): primary-key lookups of them.
    std::vector<std::int64_t> other_ids;
};
inline constexpr std::size_t page_other_ids_max = 1024;

struct edge_page {
    std::vector<stored_edge> edges;  // in page order (newest first)
    // Where the following and the preceding page start; nullopt when there is none. A cursor
    // reflects the rows at the time of the read: after concurrent removals it may lead to an
    // empty page, which again carries a cursor back to where it came from.
    std::optional<core::page_cursor> next;
    std::optional<core::page_cursor> previous;
};

// The one statement that reads a page: a range read of index by_position (forced), never
// OFFSET, fetching limit + 1 rows to learn whether more follow; with other_ids, point lookups of
// the primary key (forced) for those ids, sorted by MariaDB (at most page_other_ids_max rows). A
// prepared statement (its text depends only on whether and which way a cursor points, and on the
// id list's length rounded up to a power of two, the last id repeated); params view req.graph,
// so req must outlive them. Exposed for EXPLAIN tests.
struct page_statement {
    std::string sql;
    std::vector<sql_param> params;
};
page_statement page_edges_statement(const edge_page_request& req);

// Reads one page with page_edges_statement. Errors: those of mariadb_conn::async_query.
boost::asio::awaitable<core::result<edge_page>> async_page_edges(mariadb_conn& conn, edge_page_request req);

// One count of a node's edges within a graph (the rest of an edge_counts key).
struct node_count_key {
    std::int64_t node_id = 0;
    edge_direction direction = edge_direction::forward;
    core::edge_state state = core::edge_state::normal;
    friend auto operator<=>(const node_count_key&, const node_count_key&) = default;
};

// The stored counts of many keys of one graph in one statement (one primary-key lookup each):
// result[i] belongs to keys[i] (0 without a row). The caller sends each key to its node's shard.
// keys must stay valid until the awaitable completes. Errors: those of mariadb_conn::async_query.
boost::asio::awaitable<core::result<std::vector<std::int64_t>>> async_count_many(mariadb_conn& conn, std::string graph,
                                                                                 std::span<const node_count_key> keys);

// The forward rows of many (source_id, destination_id) pairs of one graph in one statement:
// result[i] belongs to keys[i] (nullopt: no row on this shard). The caller sends each key to
// the shard of its source. keys must stay valid until the awaitable completes.
// Errors: those of mariadb_conn::async_query.
boost::asio::awaitable<core::result<std::vector<std::optional<core::edge_row>>>> async_multi_get(
    mariadb_conn& conn, std::string graph, std::span<const std::pair<std::int64_t, std::int64_t>> keys);

// What the shard of a node knows of it (GET .../nodes/{id}): its node registers (node_registers is
// on every shard, so the node's own shard has them once the node op is applied there) and its
// edge counts by direction and state. known: it has had a node action or an edge row.
struct node_record {
    bool known = false;
    std::array<core::node_registers, 2> registers{};       // [direction]
    std::array<std::array<std::int64_t, 4>, 2> counts{};  // [direction][state]

    friend bool operator==(const node_record&, const node_record&) = default;
};

// result[i] belongs to node_ids[i] (repeats allowed): one statement on the nodes' shard. A shard
// whose tables do not exist yet knows no node. Errors: those of mariadb_conn::async_query.
boost::asio::awaitable<core::result<std::vector<node_record>>> async_node_records(mariadb_conn& conn, std::string graph,
                                                                                 std::span<const std::int64_t> node_ids);

// Up to `limit` other_ids of the node's edges in one of `states`, past `after` (nullopt: from
// the start) in id order, ascending or descending: one range read of the primary key. Set
// operations merge these.
boost::asio::awaitable<core::result<std::vector<std::int64_t>>> async_scan_other_ids(
    mariadb_conn& conn, std::string graph, std::int64_t node_id, edge_direction direction, core::edge_state_set states,
    std::optional<std::int64_t> after, std::size_t limit, bool descending = false);

// Test and tooling helpers: every edge row and every non-zero count on the connection's shard.
boost::asio::awaitable<core::result<std::vector<stored_edge>>> async_dump_edges(mariadb_conn& conn);
boost::asio::awaitable<core::result<std::vector<std::pair<edge_count_key, std::int64_t>>>> async_dump_edge_counts(
    mariadb_conn& conn);

}  // namespace cairn::shards
