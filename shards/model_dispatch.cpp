#include "shards/model_dispatch.hpp"

#include "core/assert.hpp"
#include "shards/cell_store.hpp"
#include "shards/counter_store.hpp"
#include "shards/edge_store.hpp"
#include "shards/entity_store.hpp"
#include "shards/gateways.hpp"
#include "shards/index_store.hpp"

#include <algorithm>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

// Models whose ops share one apply function (and so one transaction per batch).
enum class apply_family : std::uint8_t { edges, index_defs, entities, cells, counters };

apply_family family_of(const core::op& o) noexcept {
    switch (o.kind()) {
        case core::model::edge: return apply_family::edges;
        case core::model::node: return apply_family::edges;  // node ops change edge rows and counts
        case core::model::entity: return apply_family::entities;
        case core::model::index: return apply_family::index_defs;
        case core::model::cell: return apply_family::cells;
        case core::model::counter: return apply_family::counters;
        default: break;
    }
    CAIRN_ASSERT(false && "an op of a model without an apply function");
    return apply_family::edges;
}

asio::awaitable<core::result<void>> async_apply_family(apply_family f, mariadb_conn& conn, const apply_context& ctx,
                                                       core::shard_index shard, std::span<const core::op* const> ops) {
    switch (f) {
        case apply_family::edges: co_return co_await async_apply_edges(conn, ctx.map, shard, ops);
        case apply_family::index_defs: co_return co_await async_apply_index_defs(conn, ops);
        case apply_family::entities: co_return co_await async_apply_entities(conn, ctx.entities, ctx.map, shard, ops);
        case apply_family::cells: co_return co_await async_apply_cells(conn, ctx.cells, ctx.map, shard, ops);
        case apply_family::counters:
            co_return co_await async_apply_counters(
                conn, ctx.counters, ops, ctx.now_ms,
                {&ctx.map, ctx.base != nullptr ? ctx.base : &ctx.map, shard});
    }
    co_return core::errc::shard_rejected;
}

// The rows' shards of one model's op body.
void add_shards(const core::edge_op& e, const core::shard_map& map, std::vector<core::shard_index>& out) {
    out.push_back(map.shard_of_id(e.source_id));       // the forward row (edge_rows_of)
    out.push_back(map.shard_of_id(e.destination_id));  // the backward row
}
// A node's registers live on every shard, as its edges' rows do (backward rows sit on the
// other endpoint's shard).
void add_shards(const core::node_op&, const core::shard_map& map, std::vector<core::shard_index>& out) {
    for (core::shard_index s = 0; s < map.size(); ++s) out.push_back(s);
}
// An entity lives on the shard of its id; its index rows on the shards of their shard_on values.
void add_shards(const core::entity_op& e, const core::shard_map& map, std::vector<core::shard_index>& out) {
    out.push_back(map.shard_of_hash(core::hash_bytes(e.id)));
    for (const auto& entry : e.entries) out.push_back(map.shard_of_hash(entry.shard_hash));
}
// Index definitions are on every shard.
void add_shards(const core::index_def_op&, const core::shard_map& map, std::vector<core::shard_index>& out) {
    for (core::shard_index s = 0; s < map.size(); ++s) out.push_back(s);
}
// A cell lives on the shard of its row_key; its index rows on the shards of their shard_on values.
void add_shards(const core::cell_op& c, const core::shard_map& map, std::vector<core::shard_index>& out) {
    out.push_back(map.shard_of_hash(core::hash_bytes(c.row_key)));
    for (const auto& entry : c.entries) out.push_back(map.shard_of_hash(entry.shard_hash));
}
// Every row of an increment lives on the shard of its metric's shard_on value.
void add_shards(const core::counter_op& c, const core::shard_map& map, std::vector<core::shard_index>& out) {
    out.push_back(map.shard_of_hash(c.shard_hash));
}

}  // namespace

std::vector<core::shard_index> shards_of(const core::op& o, const core::shard_map& map, const counter_maps* counters) {
    std::vector<core::shard_index> out;
    if (const auto* c = std::get_if<core::counter_op>(&o.body); c != nullptr && counters != nullptr) {
        out.push_back(counters->keyed.shard_of_hash(c->shard_hash));
        out.push_back(counters->unkeyed.shard_of_hash(c->shard_hash));
    } else {
        std::visit([&](const auto& body) { add_shards(body, map, out); }, o.body);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool touches_shard(const core::op& o, const core::shard_map& map, core::shard_index shard, const counter_maps* counters) {
    if (const auto* e = std::get_if<core::edge_op>(&o.body)) {  // the hot case: no vector built
        return map.shard_of_id(e->source_id) == shard || map.shard_of_id(e->destination_id) == shard;
    }
    const auto s = shards_of(o, map, counters);
    return std::binary_search(s.begin(), s.end(), shard);
}

asio::awaitable<core::result<void>> async_create_schema(mariadb_conn& conn, const apply_context& ctx) {
    if (auto r = co_await async_create_gateway_schema(conn); !r) co_return r;
    if (auto r = co_await async_create_edge_schema(conn); !r) co_return r;
    if (auto r = co_await async_create_entity_schema(conn); !r) co_return r;
    if (auto r = co_await async_create_index_schema(conn); !r) co_return r;
    if (auto r = co_await async_create_cell_schema(conn, ctx.cells); !r) co_return r;
    co_return co_await async_create_counter_schema(conn, ctx.counters);
}

asio::awaitable<core::result<void>> async_apply_ops(mariadb_conn& conn, const apply_context& ctx,
                                                    core::shard_index shard, std::span<const core::op* const> ops) {
    if (ops.empty()) co_return core::success();
    const apply_family first = family_of(*ops.front());
    const bool one_family =
        std::all_of(ops.begin(), ops.end(), [&](const core::op* o) { return family_of(*o) == first; });
    if (one_family) co_return co_await async_apply_family(first, conn, ctx, shard, ops);
    // Mixed batch: one transaction per family, in the order the families first appear.
    std::vector<apply_family> order;
    for (const core::op* o : ops) {
        if (std::find(order.begin(), order.end(), family_of(*o)) == order.end()) order.push_back(family_of(*o));
    }
    std::vector<const core::op*> group;
    for (const apply_family f : order) {
        group.clear();
        for (const core::op* o : ops) {
            if (family_of(*o) == f) group.push_back(o);
        }
        auto r = co_await async_apply_family(f, conn, ctx, shard, group);
        if (!r) co_return r;
    }
    co_return core::success();
}

}  // namespace cairn::shards
