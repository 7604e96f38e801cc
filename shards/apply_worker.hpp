// One apply worker per shard: reads the journal from the shard's cursor, applies batches of
// ops through the shard's face (shards/apply_target.hpp: MariaDB, or the simulation's in-memory
// shard), advances the cursor, and re-feeds the shard's error queue through the same apply
// function. Runs as one coroutine on its own strand (or is stepped by a simulation, see
// async_step); notify() and the accessors are thread-safe. Owns nothing it is given: journal,
// routing and target must outlive it.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/entities.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/minute_window.hpp"
#include "core/op.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::journal {
class journal;
struct error_task;
}  // namespace cairn::journal

namespace cairn::shards {

class apply_target;
class apply_session;

struct apply_worker_options {
    core::shard_index shard = 0;
    core::limits lim;
    bool paused = false;
    std::function<std::uint64_t()> wall_ms;  // default: core::system_wall_clock_ms
    std::shared_ptr<const core::counter_catalog> counters;  // default: none declared
    std::shared_ptr<const core::cell_config> cells;         // default: none declared
    std::shared_ptr<const core::entity_config> entities;    // default: none declared
    // The mark check after the start and every outage (async_check_mark). Only the simulation's
    // broken variant turns it off, to show what it catches.
    bool mark_check = true;
    // Its second half: the late applications past the shard's late mark applied again
    // (async_reapply_late). Only the simulation's third broken variant turns it off.
    bool late_check = true;
};

class apply_worker {
public:
    // Ops are routed by the table routing holds when each batch is read (core/routing.hpp); after
    // installing a new one, notify() the worker so that a held shard looks again.
    apply_worker(boost::asio::any_io_executor ex, journal::journal& j, const core::routing& routing,
                 apply_target& target, apply_worker_options opts, core::registry& metrics);
    ~apply_worker();

    // Starts the loop; stop() ends it at its next suspension point.
    void start();
    void stop();
    // New ops were committed (called from the journal's writer thread).
    void notify() noexcept;
    // While paused the worker neither applies new ops nor retries its error queue; a batch
    // already under way finishes. Writes keep being journaled.
    void set_paused(bool paused) noexcept;
    // Until cairnd's split follower has read the shards' map once, the worker applies nothing (it may
    // still rewind): the journal's route record may be older than the map in force (a split ran while
    // this gateway was down), and ops applied by it would land on the wrong shard. Any thread.
    void hold_for_routing(bool held) noexcept;
    bool paused() const noexcept { return paused_.load(); }
    // Applies every op from seq + 1 on again by the route table in force (any thread; done at the
    // worker's next step, the lowest of several requests): a split adopted late routes ops of the
    // moved half to the new shard that its worker had passed under the old map (split_follower).
    // Returns a ticket: rewinds_done() reaches it once the cursor was moved back (committed) or found
    // at or below seq already.
    std::uint64_t rewind_to(std::uint64_t seq) noexcept;
    std::uint64_t rewinds_done() const noexcept { return rewind_done_.load(); }

    std::uint64_t applied_seq() const noexcept { return applied_seq_.load(); }

    // Read-your-writes: waits until applied_seq() >= seq (every op through seq was applied on
    // this shard, or moved to its error queue) and returns true; false once timeout passed or
    // stop() was called first. No polling: the worker wakes waiters when the seq advances, by
    // posting a cancel to a timer on the caller's executor, which must therefore be a strand
    // or a single-threaded io_context (an HTTP session's strand is). Cancellation: none; the
    // wait ends within timeout. Any thread; the worker must outlive the wait.
    boost::asio::awaitable<bool> async_wait_applied(std::uint64_t seq, std::chrono::milliseconds timeout);
    bool shard_up() const noexcept { return shard_up_.load(); }
    // The last attempt to reach the shard failed. Not the negation of shard_up(): before the
    // first attempt ends (just after start) a shard is neither up nor known down.
    bool shard_known_down() const noexcept { return known_down_.load(); }
    // Ops applied and ops that failed on the healthy shard (queued for retry or dead-lettered)
    // over the last minute, by this worker's wall clock; outages are not failures.
    core::minute_window::totals last_minute() const { return outcomes_.last_minute(now_ms()); }
    core::shard_index shard() const noexcept { return opts_.shard; }

    // What one round of the loop did.
    enum class step_outcome {
        idle,           // nothing to apply and no error task due
        progressed,     // a batch was applied (or queued) and its cursor committed, or error tasks were retried
        outage,         // the shard was unreachable: wait outage_delay() before the next round
        journal_error,  // reading or committing the journal failed: wait before the next round
    };
    // One round of the loop, without sleeping: creates the tables if that is not done yet, applies
    // the next batch of journaled ops, then (unless paused) retries the error tasks that are due by
    // the wall clock. async_run loops over it; the simulation (tests/sim/) calls it directly, on
    // its own clock, one round at a time. Must not run concurrently with itself or start().
    boost::asio::awaitable<step_outcome> async_step();
    // The back-off after the last outage (doubling from 50 ms to limits.outage_backoff_max).
    std::chrono::milliseconds outage_delay() const noexcept { return outage_delay_; }

private:
    boost::asio::awaitable<void> async_run();
    boost::asio::awaitable<bool> async_ensure_schema();
    boost::asio::awaitable<step_outcome> async_apply_batch();
    boost::asio::awaitable<step_outcome> async_retry_errors();
    // Writes the applied mark (shards/gateways.hpp) through applied_seq_ on the shard: with the
    // session of a batch, or on a session of its own once the worker is idle or the mark is
    // mark_interval behind, so that another gateway's ?after= never waits on a mark that stays stale.
    boost::asio::awaitable<core::result<void>> async_write_mark(apply_session& s, std::uint64_t seq);
    boost::asio::awaitable<step_outcome> async_flush_mark(bool idle);
    // The mark check, on a session just opened, before anything is applied or marked with it, when
    // mark_check_due(): after the start, after every outage, and whenever the shard's face made a
    // new connection since the last check (a promoted replica may now answer at the same address).
    // The shard's mark for this gateway below the journal's cursor means the shard lacks ops that
    // were applied there (a replica promoted after a failover, a restore): the cursor is rewound
    // to the mark, so they apply again, and the caller returns `progressed` (the batch it read is
    // stale). idle: nothing to rewind, go on with the session.
    boost::asio::awaitable<step_outcome> async_check_mark(apply_session& s);
    // A rewind_to() request: the cursor moves back (never below the journal's first seq - 1).
    // progressed if it moved.
    boost::asio::awaitable<step_outcome> async_requested_rewind();
    // Moves the cursor back to `to` (a durable outcome) and looks past it for held ops.
    boost::asio::awaitable<core::result<void>> async_rewind_cursor(std::uint64_t to);
    // Part of the mark check: the late applications (journal::late_apply) past the shard's late mark
    // are applied again, then the late mark is raised to the journal's last. idle: nothing was
    // missing, or all of it is applied again and marked.
    boost::asio::awaitable<step_outcome> async_reapply_late(apply_session& s);
    bool mark_check_due() const noexcept;
    // The map fence: the shard's identity row names a newer map version than the table this step
    // routes by (a split done while this gateway did not follow): outage (nothing is applied there;
    // backs off), else idle. Read when the table's version or the connection changed, and every
    // fence_interval.
    boost::asio::awaitable<step_outcome> async_check_fence(apply_session& s, const core::route_table& table);
    // This shard's error tasks and dead letters with a seq past cursor.
    core::result<std::set<std::uint64_t>> held_past(std::uint64_t cursor) const;
    // Every idle_probe_ms of idleness: opens a session (which finds a lost connection and makes a
    // new one), and runs the mark check if it is due.
    boost::asio::awaitable<step_outcome> async_idle_probe();
    // Applies ops in one transaction: the one apply function that batches, isolated ops and
    // error-queue retries all go through.
    // By the table's maps for this shard at seq `at` (core::route_table::apply_map, base_map): a
    // batch's first seq, or an error task's route_seq.
    boost::asio::awaitable<core::result<void>> async_apply(apply_session& s, const core::route_table& table, std::uint64_t at,
                                                           std::span<const core::op* const> ops);
    // async_apply of one op with its seq, routed by the table in force.
    boost::asio::awaitable<core::result<void>> async_apply_one(apply_session& s, std::uint64_t seq, const core::op& o);
    boost::asio::awaitable<void> async_sleep(std::chrono::milliseconds d);
    // After a step that applied a batch: waits until lim.apply_batch_interval has passed since that
    // batch began, unless a full batch or more is journaled past it (a backlog is applied at full
    // speed) or a reader waits for the apply of an op already journaled (async_wait_applied: a
    // write's ?wait=applied, a read's ?after=; not a feed's long poll for ops still to come). New
    // ops do not cut it short; stop() and such a reader do.
    boost::asio::awaitable<void> async_pace();
    // Marks the shard down (logged once per outage) and doubles outage_delay_.
    // `detail` is the failure as the target or session describes it (the server's own reason).
    void note_outage(std::string_view what, const std::string& detail);
    // The shard answered: up, not known down, no outage back-off; logs `how` if it was not up.
    void note_up(std::string_view how);
    std::chrono::milliseconds retry_delay(std::uint32_t attempts);
    // The error task of an op's first failure on the healthy shard (logged and counted); `what` is
    // added to the log line after the seq.
    journal::error_task first_failure(std::uint64_t seq, std::string op_bytes, std::string error, std::string_view what);
    std::uint64_t now_ms() const;
    // Wakes the waiters whose seq is now applied (all of them when stopping).
    void wake_waiters();

    struct applied_waiter {
        std::uint64_t seq = 0;
        std::shared_ptr<boost::asio::steady_timer> timer;  // on the waiter's executor
    };
    std::mutex waiters_mutex_;
    std::vector<applied_waiter> waiters_;  // guarded by waiters_mutex_

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    journal::journal& journal_;
    const core::routing& routing_;
    apply_target& target_;
    apply_worker_options opts_;
    bool schema_ready_ = false;  // on the strand
    bool check_mark_ = true;     // on the strand: the mark check is due (set by every outage)
    std::uint64_t checked_connections_ = 0;  // on the strand: target_.connections_made() at the last check
    // The map fence (async_check_fence), on the strand: the table version that last passed (0: none),
    // the connections then, and when.
    static constexpr std::chrono::seconds fence_interval{5};
    std::uint32_t fence_passed_version_ = 0;
    std::uint64_t fence_connections_ = 0;
    std::chrono::steady_clock::time_point fence_checked_at_{};
    std::uint64_t last_probe_ms_ = 0;        // on the strand: wall time of the last idle probe
    // On the strand: the batches look for error tasks and dead letters past the cursor (which only
    // a rewind leaves) and skip their ops; set at the start and by each rewind.
    bool look_ahead_ = true;
    std::uint64_t marked_seq_ = 0;                        // on the strand: the mark last written
    std::chrono::steady_clock::time_point marked_at_{};  // on the strand: when
    boost::asio::steady_timer wake_;
    boost::asio::steady_timer pace_;  // async_pace's wait, on the strand
    // On the strand: the last step applied a batch, begun at batch_started_, through seq
    // batch_through_ (see async_pace).
    bool pace_next_ = false;
    std::chrono::steady_clock::time_point batch_started_{};
    std::uint64_t batch_through_ = 0;
    std::atomic<bool> notified_{false};
    static constexpr std::uint64_t no_rewind = ~std::uint64_t{0};
    std::atomic<std::uint64_t> rewind_request_{no_rewind};
    std::atomic<std::uint64_t> rewind_asked_{0};  // tickets handed out (after the request is set)
    std::atomic<std::uint64_t> rewind_done_{0};   // tickets whose rewind is done
    std::atomic<bool> paused_;
    std::atomic<bool> routing_hold_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> applied_seq_{0};
    std::atomic<bool> shard_up_{false};
    std::atomic<bool> known_down_{false};
    std::chrono::milliseconds outage_delay_{0};
    std::minstd_rand rng_;
    core::minute_window outcomes_;

    core::gauge& m_applied_seq_;
    core::gauge& m_up_;
    core::histogram& m_batch_latency_;
    core::histogram& m_batch_ops_;
    core::counter& m_applied_ops_;
    core::counter& m_errors_queued_;
    core::counter& m_dead_;
    core::counter& m_outages_;
    core::counter& m_rewound_;
    core::counter& m_lost_;
    core::counter& m_late_reapplied_;
};

}  // namespace cairn::shards
