// The seeded simulation of the apply pipeline (issue 14): the real journal (LMDB, in a temporary
// folder), the real apply workers stepped one round at a time (apply_worker::async_step), their
// error queues, retry back-off, dead letters, re-injection, replay, gateway restarts and shard
// failovers to a lagging replica, all on a
// simulated clock, against in-memory shards (memory_shard.hpp) whose faults are drawn from the
// seed. After every step it checks the invariants, at the end convergence and liveness. A seed
// replays exactly: the same seed gives the same steps and the same trace hash.
#pragma once

#include <cstdint>
#include <string>

namespace cairn::sim {

struct sim_options {
    std::uint64_t seed = 1;
    std::size_t steps = 250;   // random steps before the faults stop and the queues must drain
    std::string dir;           // where the seed's journal folder is made (default: /dev/shm, else /tmp)
    bool verbose = false;      // log every step to stderr
    // The broken variant: the shards' face swallows refusals, so refused ops are lost. The
    // simulator must report it (tests/sim/simulator_test.cpp keeps that test).
    bool swallow_rejections = false;
    // The other broken variant: the apply workers skip their mark check, so a failover to a
    // lagging replica loses what the replica lacks (simulator_test.cpp keeps that test too).
    bool skip_mark_check = false;
    // The third: the mark check leaves out the ops applied late (retries, re-injected dead letters),
    // so a failover to a replica that lacks one of them below its applied mark loses it.
    bool skip_late_check = false;
};

struct sim_result {
    bool ok = true;
    std::string failure;        // what failed, at which step; empty when ok
    std::uint64_t trace = 0;    // hash of every step and its outcome (equal for equal seeds)
    std::uint64_t steps = 0;
    std::uint64_t acked_ops = 0;
    std::uint64_t statements = 0;
    std::uint64_t crashes = 0;
    std::uint64_t dead_letters = 0;  // became dead letters over the run
    std::uint64_t reinjected = 0;
    std::uint64_t replayed_ops = 0;
    std::uint64_t failovers = 0;     // a shard's primary lost and a lagging replica promoted
    // Failovers to a replica that lacked an op applied late (a retry, a re-injected dead letter) below
    // its applied mark: what the late marks bring back (docs/operations.md).
    std::uint64_t failovers_late = 0;
    // Splits of a shard to the spare one (seeds with (seed / 2) odd): adopted while the run went on,
    // and the ops the split routed to the new shard.
    std::uint64_t splits = 0;
    std::uint64_t split_ops = 0;
};

// Runs one seed; never throws for a failed check (ok = false, failure says why).
sim_result run_simulation(const sim_options& opts);

}  // namespace cairn::sim
