// Counters on one shard (issue 6): the declared tables, the exactly-once apply transaction and
// the grouped range reads. The caller owns the connection and keeps it valid until the
// awaitable completes. Runs on any executor.
//
// Exactly once: every applied increment's op id is inserted into counter_ops in the same
// transaction as its additions, after a locking read of the batch's op ids, so an op applied
// again (a retry, the error queue, a replay, a re-injected dead letter) adds nothing. Op ids are
// kept counters.op_ids_keep_hours; an op older than that which is not in counter_ops is refused
// (errc::op_expired) instead of risking a second count.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/counters.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// counter_ops and every declared table (counts_<name>), if missing. A table whose declaration
// changed keeps its old layout: declare a new table name instead. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_counter_schema(mariadb_conn& conn,
                                                                       const core::counter_catalog& catalog);

// Which of an op's tables one shard counts (docs/resharding.md, counters): a table whose key holds
// the metric's shard_on dimension on the op's owner in `keyed` (the map its rows are applied by, as
// every model's rows), a table whose key leaves it out on the op's owner in `unkeyed` (the
// deployment's first map, core::route_table::base_map: reads sum such a table over every shard, so
// no split may move where an op counts in it). Null maps: every table (one shard, no split).
struct counter_placement {
    const core::shard_map* keyed = nullptr;
    const core::shard_map* unkeyed = nullptr;
    core::shard_index shard = 0;
    // Whether the shard counts the op in table t of metric m.
    bool counts(const core::counter_metric& m, const core::counter_table& t, const core::counter_op& c) const;
};

// Applies the counter ops, each in the tables `where` gives this shard, in one transaction, then
// deletes up to 1000 op ids older than the keep window. An op is counted once per shard: its id is
// recorded with its additions (an op with no table here records nothing). now_ms: the wall clock.
// Errors: undeclared (a metric or dimension count the catalog does not know), op_expired, and those
// of mariadb_conn (shard_unavailable, shard_timeout, shard_retry, shard_rejected).
boost::asio::awaitable<core::result<void>> async_apply_counters(mariadb_conn& conn,
                                                                const core::counter_catalog& catalog,
                                                                std::span<const core::op* const> ops,
                                                                std::uint64_t now_ms,
                                                                counter_placement where = {});

// One grouped range read of one table: the sum of count over [from_ms, to_ms) (bucket starts)
// for rows matching filters, grouped by bucket (by_bucket) and/or by one dimension.
struct counter_read {
    const core::counter_metric* metric = nullptr;
    const core::counter_table* table = nullptr;
    std::vector<std::pair<std::size_t, std::string>> filters;  // checked values
    std::optional<std::size_t> group_by;
    // Also grouped by this dimension (the metric's shard_on, which the table's key holds), its value
    // in counter_read_row::route_value: for a reader that must leave out the rows of one hash range
    // (a split's moved half on its old shard, net/counter_routes.cpp).
    std::optional<std::size_t> route_by;
    bool by_bucket = false;
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
};
struct counter_read_row {
    std::int64_t bucket_ms = 0;  // 0 unless by_bucket
    std::string group;           // empty unless group_by
    std::string route_value;     // empty unless route_by
    std::int64_t count = 0;
    friend bool operator==(const counter_read_row&, const counter_read_row&) = default;
};

// The statement of a read (exposed for EXPLAIN tests): its WHERE is an equality prefix of the
// table's primary key followed by a range on the bucket.
std::string counter_read_sql(const counter_read& q, std::size_t rows_max);

// Runs the read; more than rows_max groups is errc::too_large. Errors: those of async_query.
boost::asio::awaitable<core::result<std::vector<counter_read_row>>> async_read_counters(mariadb_conn& conn,
                                                                                       const counter_read& q,
                                                                                       std::size_t rows_max);

// Test and tooling helpers: every row of a table (key values in key order, bucket in decimal,
// then the count), and the number of remembered op ids.
boost::asio::awaitable<core::result<std::vector<std::pair<std::vector<std::string>, std::int64_t>>>>
async_dump_counter_table(mariadb_conn& conn, const core::counter_metric& metric, const core::counter_table& table);
boost::asio::awaitable<core::result<std::uint64_t>> async_count_counter_op_ids(mariadb_conn& conn);

}  // namespace cairn::shards
