#include "tests/sim/memory_shard.hpp"

#include "core/assert.hpp"
#include "core/cells.hpp"
#include "core/shard_map.hpp"
#include "shards/model_dispatch.hpp"

#include <fmt/format.h>

namespace cairn::sim {

namespace asio = boost::asio;

counter_key counter_key_of(const core::counter_op& c) {
    std::string dims;
    for (const auto& d : c.dimensions) {
        dims += d;
        dims += '\x1f';
    }
    return {c.metric, std::move(dims), c.time_ms / 3'600'000};
}

class memory_session final : public shards::apply_session {
public:
    explicit memory_session(memory_shard& s) : shard_(s) {}

    asio::awaitable<core::result<void>> async_create_schema(const shards::apply_context&) override {
        if (shard_.down_) co_return core::errc::shard_unavailable;
        co_return core::success();
    }

    asio::awaitable<core::result<void>> async_apply(const shards::apply_context& ctx, core::shard_index shard,
                                                    std::span<const core::op* const> ops) override {
        co_return shard_.statement(ctx, shard, ops);
    }

    // No fault is drawn in the marks' statements, so that seeds keep replaying the schedules they found.
    asio::awaitable<core::result<void>> async_mark_applied(std::uint64_t node_id, std::uint64_t seq) override {
        co_return raise(shard_.marks_, node_id, seq);
    }

    asio::awaitable<core::result<std::uint32_t>> async_read_map_version() override {
        if (shard_.down_) co_return core::errc::shard_unavailable;
        co_return shard_.map_version_;
    }

    asio::awaitable<core::result<std::uint64_t>> async_read_mark(std::uint64_t node_id) override {
        co_return read(shard_.marks_, node_id);
    }

    asio::awaitable<core::result<void>> async_mark_late(std::uint64_t node_id, std::uint64_t number) override {
        co_return raise(shard_.late_marks_, node_id, number);
    }

    asio::awaitable<core::result<std::uint64_t>> async_read_late_mark(std::uint64_t node_id) override {
        co_return read(shard_.late_marks_, node_id);
    }

    std::string describe(const core::error_code& ec) const override {
        return fmt::format("{} (memory shard {})", ec.message(), shard_.index_);
    }

private:
    using marks = std::map<std::uint64_t, std::uint64_t>;
    core::result<void> raise(marks& m, std::uint64_t node_id, std::uint64_t value) {
        if (shard_.down_) return core::errc::shard_unavailable;
        auto& mark = m[node_id];
        mark = std::max(mark, value);
        return core::success();
    }
    core::result<std::uint64_t> read(const marks& m, std::uint64_t node_id) const {
        if (shard_.down_) return core::errc::shard_unavailable;
        const auto it = m.find(node_id);
        return it == m.end() ? std::uint64_t{0} : it->second;
    }

    memory_shard& shard_;
};

memory_shard::memory_shard(core::shard_index index, std::uint64_t seed) : index_(index), rng_(seed) {}

asio::awaitable<core::result<std::unique_ptr<shards::apply_session>>> memory_shard::async_open() {
    if (down_ || roll(faults_.open_fails)) co_return core::errc::shard_unavailable;
    co_return std::unique_ptr<shards::apply_session>(std::make_unique<memory_session>(*this));
}

void memory_shard::take_replica() {
    replica_ = std::make_unique<data>(
        data{applies_, marks_, late_marks_, edge_applies_, counters_, totals_, counter_ids_, entities_, index_rows_, cells_, index_defs_});
}

std::uint64_t memory_shard::replica_mark(std::uint64_t node_id) const {
    const auto it = replica_->marks.find(node_id);
    return it == replica_->marks.end() ? 0 : it->second;
}

void memory_shard::fail_over(bool outage) {
    CAIRN_ASSERT(replica_ != nullptr);
    applies_ = std::move(replica_->applies);
    marks_ = std::move(replica_->marks);
    late_marks_ = std::move(replica_->late_marks);
    edge_applies_ = std::move(replica_->edge_applies);
    counters_ = std::move(replica_->counters);
    totals_ = std::move(replica_->totals);
    counter_ids_ = std::move(replica_->counter_ids);
    entities_ = std::move(replica_->entities);
    index_rows_ = std::move(replica_->index_rows);
    cells_ = std::move(replica_->cells);
    index_defs_ = std::move(replica_->index_defs);
    replica_.reset();
    ++connections_;
    if (outage) down_ = true;
}

void memory_shard::apply_op(const core::op& o, const core::shard_map& map, const shards::counter_maps* counters) {
    if (!shards::touches_shard(o, map, index_, counters)) return;
    ++applies_[o.op_id];
    if (const auto* c = std::get_if<core::counter_op>(&o.body)) {
        // One record per op and shard, as counter_ops: an op counted here adds nothing again.
        if (!counter_ids_.insert(o.op_id).second) return;
        if ((counters != nullptr ? counters->keyed : map).shard_of_hash(c->shard_hash) == index_) {
            auto& cell = counters_[counter_key_of(*c)];
            cell.op_ids.insert(o.op_id);
            cell.sum += c->delta;
        }
        if ((counters != nullptr ? counters->unkeyed : map).shard_of_hash(c->shard_hash) == index_) {
            auto& cell = totals_[{c->metric, c->time_ms / 3'600'000}];
            cell.op_ids.insert(o.op_id);
            cell.sum += c->delta;
        }
        return;
    }
    if (const auto* e = std::get_if<core::entity_op>(&o.body)) {
        // As the real tables: the entity row on its id's shard and each index row on its value's
        // shard, each replaced only by a greater ts, whatever order the ops arrive in.
        if (map.shard_of_hash(core::hash_bytes(e->id)) == index_) {
            auto& row = entities_[{e->entity_kind, e->id}];
            if (o.ts > row.ts) row = {o.ts, e->deleted, e->body};
        }
        for (const auto& entry : e->entries) {
            if (map.shard_of_hash(entry.shard_hash) != index_) continue;
            auto& ts = index_rows_[{entry.index, entry.values, e->id}];
            ts = std::max(ts, o.ts);
        }
        return;
    }
    if (const auto* c = std::get_if<core::cell_op>(&o.body)) {
        if (map.shard_of_hash(core::hash_bytes(c->row_key)) == index_) {
            auto [it, fresh] = cells_.try_emplace({c->table, c->row_key, c->column, c->ref_key}, cell_row{o.ts, c->body});
            if (!fresh && core::cell_version_wins(o.ts, c->body, it->second.ts, it->second.body)) it->second = {o.ts, c->body};
        }
        // A cell index row is versioned by the cell's ref_key: the greatest version wins.
        for (const auto& entry : c->entries) {
            if (map.shard_of_hash(entry.shard_hash) != index_) continue;
            auto& ts = index_rows_[{entry.index, entry.values, c->row_key}];
            ts = std::max(ts, core::cell_index_version(c->ref_key));
        }
        return;
    }
    if (const auto* d = std::get_if<core::index_def_op>(&o.body)) {
        auto [it, fresh] = index_defs_.try_emplace(d->name, index_def_row{o.ts, d->dropped, d->definition});
        if (!fresh && index_def_wins(o.ts, d->dropped, it->second)) it->second = {o.ts, d->dropped, d->definition};
        return;
    }
    // Edge and node ops: the model keeps both rows of an edge; the simulator compares only the
    // rows that live on this shard.
    edge_applies_.push_back(o);
}

namespace {
// The counter maps of an apply context (null members: its map).
shards::counter_maps counter_maps_of(const shards::apply_context& ctx) {
    return {ctx.map, ctx.base != nullptr ? *ctx.base : ctx.map};
}
}  // namespace

core::result<void> memory_shard::statement(const shards::apply_context& ctx, core::shard_index shard,
                                           std::span<const core::op* const> ops) {
    ++statements_;
    if (shard != index_) return core::errc::bad_request;
    const auto counters = counter_maps_of(ctx);
    if (down_) return core::errc::shard_unavailable;
    if (roll(faults_.lost_before)) return core::errc::shard_timeout;
    if (roll(faults_.deadlock)) {
        for (const core::op* o : ops) refused_.insert(o->op_id);
        return core::errc::shard_retry;
    }
    const bool refused = roll(faults_.rejected) ||
                         std::any_of(ops.begin(), ops.end(), [&](const core::op* o) { return poisoned_.contains(o->op_id); });
    if (refused && swallow_rejections_) return core::success();
    if (refused) {
        for (const core::op* o : ops) refused_.insert(o->op_id);
        return core::errc::shard_rejected;
    }
    if (roll(faults_.lost_partway) && ops.size() > 1) {
        const std::size_t n = 1 + rng_() % (ops.size() - 1);
        for (std::size_t i = 0; i < n; ++i) apply_op(*ops[i], ctx.map, &counters);
        return core::errc::shard_unavailable;
    }
    for (const core::op* o : ops) apply_op(*o, ctx.map, &counters);
    if (roll(faults_.duplicated)) {
        for (const core::op* o : ops) apply_op(*o, ctx.map, &counters);
    }
    if (roll(faults_.crash_after)) {
        crash_requested_ = true;
        return core::errc::shard_unavailable;
    }
    if (roll(faults_.lost_after)) return core::errc::shard_unavailable;
    return core::success();
}

}  // namespace cairn::sim
