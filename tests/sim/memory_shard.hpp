// An in-memory shard behind the apply face (shards/apply_target.hpp), with faults drawn from a
// seed: the simulation (tests/sim/simulator.hpp) gives it to the real apply worker in place of
// MariaDB. It keeps the rows of the ops it applied (edges and node registers with the same
// last-writer-wins rules as the real tables, entities and their index rows last-writer-wins by ts,
// cells first-writer-wins with their index rows at the greatest version, index definitions
// newest-wins, counters deduplicated by op id) and a log of every
// apply, so the simulator can check what was applied, how often and when. Single-threaded: used
// from the simulation's one io_context thread only.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"
#include "core/op.hpp"
#include "shards/apply_target.hpp"
#include "tests/support/edge_model.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>

namespace cairn::sim {

// Chances per statement (or per open), in 1/1000.
struct fault_rates {
    int open_fails = 0;   // no connection (shard_unavailable)
    int lost_before = 0;  // the connection is lost before the commit: nothing applied (shard_timeout)
    int lost_after = 0;   // lost after the commit: everything applied, the caller sees shard_unavailable
    int lost_partway = 0; // the ops of a prefix applied (each model commits on its own), then lost
    int deadlock = 0;     // shard_retry: nothing applied
    int rejected = 0;     // a transient refusal of a healthy shard (shard_rejected): nothing applied
    int duplicated = 0;   // applied twice (a retried statement that had committed)
    int crash_after = 0;  // applied, then the gateway crashes before it hears of it
};

// (metric, dimensions joined by '\x1f', hour)
using counter_key = std::tuple<std::string, std::string, std::int64_t>;
// A counter table whose key leaves the shard_on dimension out: (metric, hour).
using total_key = std::pair<std::string, std::int64_t>;

// An entity row: the write with the greatest ts wins (a tombstone too).
struct entity_row {
    std::uint64_t ts = 0;
    bool deleted = false;
    std::string body;
    friend bool operator==(const entity_row&, const entity_row&) = default;
};
using entity_key = std::pair<std::string, std::string>;  // (kind, id)
// An index row of an entity: (index, values, entity id) -> the greatest ts that wrote it.
using index_row_key = std::tuple<std::string, std::vector<core::index_value>, std::string>;

// A cell (table, row_key, column, ref_key): the write with the smaller (ts, body) wins
// (core::cell_version_wins), so the first writer keeps it whatever order they arrive in.
using cell_key = std::tuple<std::string, std::string, std::string, std::int64_t>;
struct cell_row {
    std::uint64_t ts = 0;
    std::string body;
    friend bool operator==(const cell_row&, const cell_row&) = default;
};

// An index definition as every shard's index_defs holds it: the newest ts wins, a drop wins a tie.
struct index_def_row {
    std::uint64_t ts = 0;
    bool dropped = false;
    std::string definition;
    friend bool operator==(const index_def_row&, const index_def_row&) = default;
};
// Whether a (ts, dropped) write replaces the stored definition (as shards/index_store.cpp decides).
constexpr bool index_def_wins(std::uint64_t ts, bool dropped, const index_def_row& stored) noexcept {
    return ts > stored.ts || (ts == stored.ts && dropped && !stored.dropped);
}

struct counter_cell {
    std::int64_t sum = 0;
    std::set<std::uint64_t> op_ids;
};

class memory_shard final : public shards::apply_target {
public:
    memory_shard(core::shard_index index, std::uint64_t seed);

    boost::asio::awaitable<core::result<std::unique_ptr<shards::apply_session>>> async_open() override;

    // The in-memory shard has no connections; a failover counts as one new connection (to the
    // promoted replica), which is what makes the apply worker check its mark again.
    std::uint64_t connections_made() const noexcept override { return connections_; }

    void set_faults(const fault_rates& f) noexcept { faults_ = f; }
    // While down, every open and statement fails with shard_unavailable.
    void set_down(bool down) noexcept { down_ = down; }
    bool down() const noexcept { return down_; }
    // A poisoned op is refused (shard_rejected) every time, with whatever shares its statement,
    // until heal(): what makes ops dead letters.
    void poison(std::uint64_t op_id) { poisoned_.insert(op_id); }
    void heal() { poisoned_.clear(); }
    bool poisoned(std::uint64_t op_id) const { return poisoned_.contains(op_id); }
    // Whether a statement holding op_id ever failed on the healthy shard (refused or deadlocked).
    bool refused(std::uint64_t op_id) const { return refused_.contains(op_id); }
    // Set when a crash_after fault fired; the simulator crashes the gateway and clears it.
    bool take_crash_request() noexcept { return std::exchange(crash_requested_, false); }

    // A deliberately broken shard face, for the test that the simulator catches a lost write:
    // a refused statement is reported as success (as a face that forgot one error class would).
    void set_swallow_rejections_for_test(bool on) noexcept { swallow_rejections_ = on; }
    // The identity row's map version (shard_identity.map_version; 1 unless a test raises it).
    void set_map_version(std::uint32_t v) noexcept { map_version_ = v; }

    core::shard_index index() const noexcept { return index_; }
    // op_id -> times its rows were applied here.
    const std::map<std::uint64_t, std::uint32_t>& applies() const noexcept { return applies_; }
    // The edge rows and counts: every edge and node op applied here, folded in the order (and as
    // often) it was applied, then the effective states computed (core/edge_rules.hpp).
    test::edge_model edges() const { return test::edge_model::of(edge_applies_); }
    // As the real counter tables (shards/counter_store.hpp, counter_placement): per dimensions and
    // hour where the op's owner in the rows' map is this shard (the tables keyed by shard_on), per
    // metric and hour where its owner in the deployment's first map is (the others).
    const std::map<counter_key, counter_cell>& counters() const noexcept { return counters_; }
    const std::map<total_key, counter_cell>& totals() const noexcept { return totals_; }
    const std::map<entity_key, entity_row>& entities() const noexcept { return entities_; }
    const std::map<index_row_key, std::uint64_t>& index_rows() const noexcept { return index_rows_; }
    const std::map<cell_key, cell_row>& cells() const noexcept { return cells_; }
    const std::map<std::string, index_def_row>& index_defs() const noexcept { return index_defs_; }
    std::uint64_t statements() const noexcept { return statements_; }
    // node id -> applied mark (shards/gateways.hpp).
    const std::map<std::uint64_t, std::uint64_t>& marks() const noexcept { return marks_; }

    // A replica fed by asynchronous replication that stops now: a copy of the shard's data (rows,
    // counters, applied and late marks, and the log of applies) as it is at this moment.
    void take_replica();
    bool has_replica() const noexcept { return replica_ != nullptr; }
    // The replica's applied mark of node_id, and whether it holds an apply of op_id (has_replica()).
    std::uint64_t replica_mark(std::uint64_t node_id) const;
    bool replica_applied(std::uint64_t op_id) const { return replica_->applies.contains(op_id); }
    // The primary is lost and the replica promoted: the copy becomes the shard's data (whatever was
    // applied since take_replica() is gone). With outage, the shard is down until set_down(false),
    // as a failover usually is for its clients; without, the switch is seamless (an address that
    // moves to the replica between two statements). Requires has_replica(); the replica is used up.
    void fail_over(bool outage);

    // Folds the op's rows that live on this shard into the state (what a successful statement does).
    // counters: where a counter op counts (apply_context); null: by map.
    void apply_op(const core::op& o, const core::shard_map& map, const shards::counter_maps* counters = nullptr);

private:
    friend class memory_session;
    core::result<void> statement(const shards::apply_context& ctx, core::shard_index shard,
                                 std::span<const core::op* const> ops);
    bool roll(int per_mille) { return per_mille > 0 && static_cast<int>(rng_() % 1000) < per_mille; }

    core::shard_index index_;
    std::mt19937_64 rng_;
    fault_rates faults_;
    bool down_ = false;
    bool crash_requested_ = false;
    bool swallow_rejections_ = false;
    std::uint32_t map_version_ = 1;
    std::set<std::uint64_t> poisoned_;
    std::set<std::uint64_t> refused_;
    std::map<std::uint64_t, std::uint32_t> applies_;
    std::map<std::uint64_t, std::uint64_t> marks_;
    std::map<std::uint64_t, std::uint64_t> late_marks_;  // node id -> late mark
    std::vector<core::op> edge_applies_;  // every apply of an edge or node op, in order
    std::map<counter_key, counter_cell> counters_;
    std::map<total_key, counter_cell> totals_;
    std::set<std::uint64_t> counter_ids_;  // counter ops counted here, once each (counter_ops)
    std::map<entity_key, entity_row> entities_;
    std::map<index_row_key, std::uint64_t> index_rows_;
    std::map<cell_key, cell_row> cells_;
    std::map<std::string, index_def_row> index_defs_;
    std::uint64_t statements_ = 0;
    std::uint64_t connections_ = 0;

    struct data {
        std::map<std::uint64_t, std::uint32_t> applies;
        std::map<std::uint64_t, std::uint64_t> marks;
        std::map<std::uint64_t, std::uint64_t> late_marks;
        std::vector<core::op> edge_applies;
        std::map<counter_key, counter_cell> counters;
        std::map<total_key, counter_cell> totals;
        std::set<std::uint64_t> counter_ids;
        std::map<entity_key, entity_row> entities;
        std::map<index_row_key, std::uint64_t> index_rows;
        std::map<cell_key, cell_row> cells;
        std::map<std::string, index_def_row> index_defs;
    };
    std::unique_ptr<data> replica_;
};

// The key of a counter op's cell (its metric, dimensions and hour).
counter_key counter_key_of(const core::counter_op& c);

}  // namespace cairn::sim
