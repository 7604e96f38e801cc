// Where each data model's ops meet the apply workers: which shards an op writes rows on, every
// model's tables, and the apply function of each model. The apply worker, the admin API and
// the tools call these and never name a model. A new model adds one line to each function in
// model_dispatch.cpp (see core/op.hpp for the whole list of steps).
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <span>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// What an apply function needs beside its connection: routing, the declared counter metrics,
// and the wall clock of this apply (counter op ids are stamped and aged with it).
struct apply_context {
    const core::shard_map& map;
    const core::counter_catalog& counters;
    const core::cell_config& cells;
    const core::entity_config& entities;
    std::uint64_t now_ms = 0;
    // Where this shard counts counter ops (shards/counter_store.hpp, counter_placement): the tables
    // keyed by the metric's shard_on dimension by `map`, as rows; the others by `base`
    // (core::route_table::base_map). Null: `map` (no split has happened).
    const core::shard_map* base = nullptr;
};

// The maps of a counter op's rows (apply_context): by shard_on value, and the others.
struct counter_maps {
    const core::shard_map& keyed;
    const core::shard_map& unkeyed;
};

// The shards the op writes rows on: sorted, without duplicates, never empty. A counter op's by
// `counters` when given (its owners in both maps), else by `map`.
std::vector<core::shard_index> shards_of(const core::op& o, const core::shard_map& map,
                                         const counter_maps* counters = nullptr);
bool touches_shard(const core::op& o, const core::shard_map& map, core::shard_index shard,
                   const counter_maps* counters = nullptr);

// Creates every model's tables, and the gateways' (shards/gateways.hpp), if missing (counters and cells: the declared ones; ctx.now_ms unused). Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_schema(mariadb_conn& conn, const apply_context& ctx);

// Applies the rows of ops that live on `shard` (ops of several models: each model's ops in
// their own transaction, in the order of the models' first ops). Idempotent and commutative,
// so that a failure part-way leaves nothing that applying again would not fix. Errors: those
// of the models' apply functions (shard_unavailable, shard_timeout, shard_retry, shard_rejected;
// counters also undeclared and op_expired).
boost::asio::awaitable<core::result<void>> async_apply_ops(mariadb_conn& conn, const apply_context& ctx,
                                                           core::shard_index shard,
                                                           std::span<const core::op* const> ops);

}  // namespace cairn::shards
