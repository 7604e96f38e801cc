// Deterministic tests of the apply worker and its error queue: the real worker and journal, stepped
// one round at a time (apply_worker::async_step) on a manual clock, against the in-memory shard.
// No sleeps and no server: each test says exactly which round does what.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/hlc.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "journal/journal.hpp"
#include "shards/apply_worker.hpp"
#include "shards/journal_await.hpp"
#include "tests/sim/memory_shard.hpp"
#include "tests/sim/run_to_end.hpp"
#include "tests/support/wait.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <future>
#include <optional>
#include <thread>

#include <unistd.h>

namespace cairn::sim {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using step = shards::apply_worker::step_outcome;

class apply_worker_test : public ::testing::Test {
protected:
    apply_worker_test() {
        static int n = 0;
        dir_ = fmt::format("{}/cairn-worker-test-{}-{}", std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp",
                           ::getpid(), ++n);
        std::filesystem::remove_all(dir_);
        lim_.apply_batch_ops_max = 100;
        lim_.retry_attempts_max = 3;
        lim_.retry_backoff_initial = 100ms;
        lim_.retry_backoff_max = 1'000ms;
        lim_.outage_backoff_max = 400ms;
        reopen();
    }
    ~apply_worker_test() override {
        worker_.reset();
        journal_.reset();
        std::filesystem::remove_all(dir_);
    }

    void reopen() {
        worker_.reset();
        journal_.reset();
        journal::options o;
        o.path = dir_;
        o.size_bytes_max = 16u << 20;
        o.wall_ms = [this] { return now_; };
        auto j = journal::journal::open(o, clock_);
        ASSERT_TRUE(j) << j.error().message();
        journal_ = std::move(j).value();
        shards::apply_worker_options wo;
        wo.lim = lim_;
        wo.wall_ms = [this] { return now_; };
        wo.late_check = late_check_;
        metrics_ = std::make_unique<core::registry>();
        worker_ = std::make_unique<shards::apply_worker>(ioc_.get_executor(), *journal_, routing_, shard_, wo, *metrics_);
    }

    template <class T>
    T run(asio::awaitable<T> a) {
        return run_to_end(ioc_, std::move(a));
    }

    // The next n edge ops 1->2, 1->3, ...
    std::vector<core::op> edge_ops(int n) {
        std::vector<core::op> ops;
        for (int i = 0; i < n; ++i) {
            core::op o;
            o.ts = clock_.now();
            o.body = core::edge_op{"follows", 1, next_destination_++, core::edge_state::normal, 5, true};
            ops.push_back(std::move(o));
        }
        return ops;
    }

    // Appends the next n edge ops and returns their op ids.
    std::vector<std::uint64_t> append_edges(int n) {
        std::vector<core::op> ops = edge_ops(n);
        auto r = run(shards::async_append(*journal_, std::move(ops), ""));
        EXPECT_TRUE(r);
        return r ? r.value().op_ids : std::vector<std::uint64_t>{};
    }

    step step_once() { return run(worker_->async_step()); }

    std::vector<journal::error_task> queued() { return journal_->list_errors(0, std::nullopt, 100).value(); }
    std::vector<journal::dead_letter> dead() { return journal_->list_dead(100).value(); }
    std::uint32_t applies(std::uint64_t op_id) {
        const auto it = shard_.applies().find(op_id);
        return it == shard_.applies().end() ? 0 : it->second;
    }

    std::string dir_;
    std::uint64_t now_ = 1'750'000'000'000;
    core::hlc clock_{1, [this] { return now_; }};
    core::limits lim_;
    core::shard_map map_ = core::shard_map::equal_ranges(1);
    core::routing routing_{core::route_table(1, map_)};
    asio::io_context ioc_{1};
    memory_shard shard_{0, 7};
    std::unique_ptr<core::registry> metrics_;
    std::unique_ptr<journal::journal> journal_;
    std::unique_ptr<shards::apply_worker> worker_;
    std::int64_t next_destination_ = 2;
    bool late_check_ = true;
};

// The map fence: a shard whose identity row names a newer map version than the table the worker routes
// by (a split done while this gateway did not follow) gets nothing from it — the step is an outage and
// the journal keeps the ops — until a table of that version is installed.
TEST_F(apply_worker_test, a_shard_at_a_newer_map_version_gets_nothing_until_the_table_catches_up) {
    const auto ids = append_edges(2);
    shard_.set_map_version(2);
    EXPECT_EQ(step_once(), step::outage);
    EXPECT_EQ(applies(ids[0]), 0u);
    EXPECT_EQ(journal_->cursor(0), 0u);
    routing_.install(core::route_table(2, map_));
    EXPECT_EQ(step_once(), step::progressed);
    for (const auto id : ids) EXPECT_EQ(applies(id), 1u);
    EXPECT_EQ(journal_->cursor(0), 2u);
    // An older version on the shard is no fence: a table of version 2 applies on a shard at 1.
    shard_.set_map_version(1);
    const auto more = append_edges(1);
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(applies(more[0]), 1u);
}

TEST_F(apply_worker_test, applies_a_batch_once_and_advances_the_cursor) {
    const auto ids = append_edges(3);
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(journal_->cursor(0), 3u);
    EXPECT_EQ(worker_->applied_seq(), 3u);
    for (const auto id : ids) EXPECT_EQ(applies(id), 1u);
    EXPECT_EQ(step_once(), step::idle);
    EXPECT_TRUE(worker_->shard_up());
}

TEST_F(apply_worker_test, an_outage_commits_nothing_backs_off_doubling_and_applies_when_the_shard_returns) {
    const auto ids = append_edges(2);
    shard_.set_down(true);
    EXPECT_EQ(step_once(), step::outage);
    EXPECT_EQ(worker_->outage_delay(), 50ms);
    EXPECT_EQ(step_once(), step::outage);
    EXPECT_EQ(worker_->outage_delay(), 100ms);
    for (int i = 0; i < 4; ++i) (void)step_once();
    EXPECT_EQ(worker_->outage_delay(), lim_.outage_backoff_max);  // capped
    EXPECT_FALSE(worker_->shard_up());
    EXPECT_EQ(journal_->cursor(0), 0u);
    EXPECT_TRUE(queued().empty());  // an outage is not the ops' fault
    shard_.set_down(false);
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(journal_->cursor(0), 2u);
    EXPECT_TRUE(worker_->shard_up());
    EXPECT_EQ(worker_->outage_delay(), 0ms);
    for (const auto id : ids) EXPECT_EQ(applies(id), 1u);
}

TEST_F(apply_worker_test, a_refused_op_is_queued_retried_after_its_back_off_then_dead_and_re_injected) {
    const auto ids = append_edges(3);
    shard_.poison(ids[1]);
    EXPECT_EQ(step_once(), step::progressed);
    // The batch failed, so each op went alone: the others are applied, the refused one queued.
    EXPECT_EQ(journal_->cursor(0), 3u);
    EXPECT_EQ(applies(ids[0]), 1u);
    EXPECT_EQ(applies(ids[1]), 0u);
    EXPECT_EQ(applies(ids[2]), 1u);
    auto q = queued();
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0].seq, 2u);
    EXPECT_EQ(q[0].attempts, 1u);
    // Due after the first back-off (100 ms, jittered down to no less than half of it).
    EXPECT_GE(q[0].due_ms, now_ + 50);
    EXPECT_LE(q[0].due_ms, now_ + 100);
    EXPECT_NE(q[0].errors.at(0).find("memory shard 0"), std::string::npos) << q[0].errors[0];
    EXPECT_EQ(step_once(), step::idle);  // not due yet
    now_ += 100;
    EXPECT_EQ(step_once(), step::progressed);
    q = queued();
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0].attempts, 2u);
    now_ += 1'000;
    EXPECT_EQ(step_once(), step::progressed);
    // The third failure reaches retry_attempts_max: a dead letter, no longer retried.
    EXPECT_TRUE(queued().empty());
    auto d = dead();
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].task.seq, 2u);
    EXPECT_EQ(d[0].task.errors.size(), 3u);
    now_ += 10'000;
    EXPECT_EQ(step_once(), step::idle);
    EXPECT_EQ(applies(ids[1]), 0u);
    // Fixed and re-injected: applied on the next round, through the same path.
    shard_.heal();
    ASSERT_TRUE(run(shards::async_commit_outcome(*journal_, journal::reinject_outcome(0, d, now_, true))));
    EXPECT_EQ(queued().size(), 1u);
    EXPECT_TRUE(dead().empty());
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(applies(ids[1]), 1u);
    EXPECT_TRUE(queued().empty());
}

TEST_F(apply_worker_test, a_statement_lost_after_its_commit_is_applied_again_and_counted_once) {
    std::vector<core::op> ops(1);
    ops[0].ts = clock_.now();
    ops[0].body = core::counter_op{"clicks", {"7"}, 1'750'000'000'000, 5, core::hash_id(7)};
    const auto appended = run(shards::async_append(*journal_, ops, ""));
    ASSERT_TRUE(appended);
    const auto id = appended.value().op_ids[0];
    fault_rates always_lost;
    always_lost.lost_after = 1000;
    shard_.set_faults(always_lost);
    EXPECT_EQ(step_once(), step::outage);
    EXPECT_EQ(applies(id), 1u);            // it was applied,
    EXPECT_EQ(journal_->cursor(0), 0u);    // but the worker cannot know: the cursor stays
    shard_.set_faults({});
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(applies(id), 2u);
    ASSERT_EQ(shard_.counters().size(), 1u);
    EXPECT_EQ(shard_.counters().begin()->second.sum, 5);  // deduplicated by op id
}

TEST_F(apply_worker_test, deadlocks_are_retried_at_once_and_then_isolated) {
    const auto ids = append_edges(2);
    fault_rates deadlocks;
    deadlocks.deadlock = 1000;
    shard_.set_faults(deadlocks);
    const auto before = shard_.statements();
    EXPECT_EQ(step_once(), step::progressed);
    // The batch: 1 + 5 immediate retries; then each op alone, 6 tries each.
    EXPECT_EQ(shard_.statements() - before, 6u + 2u * 6u);
    const auto q = queued();
    ASSERT_EQ(q.size(), 2u);
    // A deadlock-only failure is due after the normal back-off on the first failure.
    EXPECT_GT(q[0].due_ms, now_);
    shard_.set_faults({});
    now_ += 1'000;
    EXPECT_EQ(step_once(), step::progressed);
    for (const auto id : ids) EXPECT_EQ(applies(id), 1u);
}

TEST_F(apply_worker_test, a_paused_worker_applies_and_retries_nothing_until_resumed) {
    const auto ids = append_edges(1);
    EXPECT_EQ(step_once(), step::progressed);  // schema and the first op
    worker_->set_paused(true);
    settle(ioc_);
    const auto more = append_edges(1);
    EXPECT_EQ(step_once(), step::idle);
    EXPECT_EQ(applies(more[0]), 0u);
    EXPECT_EQ(journal_->cursor(0), 1u);
    worker_->set_paused(false);
    settle(ioc_);
    EXPECT_EQ(step_once(), step::progressed);
    EXPECT_EQ(applies(more[0]), 1u);
    EXPECT_EQ(applies(ids[0]), 1u);
}

TEST_F(apply_worker_test, after_a_restart_the_worker_resumes_from_the_journaled_cursor) {
    const auto first = append_edges(2);
    EXPECT_EQ(step_once(), step::progressed);
    const auto second = append_edges(2);
    reopen();  // a crash: the journal is reopened, the worker is new
    EXPECT_EQ(worker_->applied_seq(), 2u);
    EXPECT_EQ(step_once(), step::progressed);
    for (const auto id : first) EXPECT_EQ(applies(id), 1u);  // not applied again
    for (const auto id : second) EXPECT_EQ(applies(id), 1u);
}

// A retry applied after the replica stopped, below the replica's applied mark: the promoted replica
// lacks it although its mark covers the seq, so only the late mark tells. The worker applies it
// again on the first session after the failover; without that half of the check it stays lost.
TEST_F(apply_worker_test, an_op_applied_late_that_a_promoted_replica_lacks_is_applied_again) {
    for (const bool late_check : {true, false}) {
        SCOPED_TRACE(late_check ? "with the late check" : "without it");
        late_check_ = late_check;
        worker_.reset();
        journal_.reset();
        std::filesystem::remove_all(dir_);
        shard_ = memory_shard(0, 7);
        reopen();
        const auto ids = append_edges(3);
        shard_.poison(ids[1]);
        EXPECT_EQ(step_once(), step::progressed);  // ids[1] queued; the mark passes its seq
        ASSERT_EQ(shard_.marks().at(journal_->node_id()), 3u);
        shard_.take_replica();  // replication stops: the replica holds the mark 3, not ids[1]
        shard_.heal();
        now_ += 100;
        EXPECT_EQ(step_once(), step::progressed);  // the retry: applied late, numbered 1
        EXPECT_EQ(applies(ids[1]), 1u);
        EXPECT_EQ(journal_->late_last(0), 1u);
        EXPECT_EQ(journal_->list_late(0, 0, 10).value().at(0).seq, 2u);
        shard_.fail_over(false);  // the replica promoted behind the same address
        EXPECT_EQ(applies(ids[1]), 0u);
        const auto more = append_edges(1);  // the next batch opens a session: the check is due there
        EXPECT_EQ(step_once(), step::progressed);
        EXPECT_EQ(applies(more[0]), 1u);
        EXPECT_EQ(journal_->cursor(0), 4u);  // the applied mark was not behind: no rewind
        const std::string reapplied = "cairn_apply_late_reapplied_total{shard=\"0\"} 1\n";
        if (late_check) {
            EXPECT_EQ(applies(ids[1]), 1u);
            EXPECT_NE(metrics_->render().find(reapplied), std::string::npos) << metrics_->render();
        } else {
            EXPECT_EQ(applies(ids[1]), 0u);  // lost: what the check exists for
        }
    }
}

// ---- the loop's pacing (apply_worker::async_run, lim.apply_batch_interval) ------------------------
// These run the worker's own loop on a thread, in real time: the pacing is the loop's, not a step's.

class apply_worker_pacing_test : public apply_worker_test {
protected:
    ~apply_worker_pacing_test() override { stop(); }

    void start(std::chrono::milliseconds interval) {
        lim_.apply_batch_interval = interval;
        reopen();
        worker_->start();
        guard_.emplace(asio::make_work_guard(ioc_));
        ioc_.restart();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    void stop() {
        if (!thread_.joinable()) return;
        worker_->stop();
        guard_.reset();
        thread_.join();
    }
    // Appends n edge ops from this thread (the io_context runs on the worker's) and returns the last seq.
    std::uint64_t append_now(int n) {
        std::vector<core::op> ops = edge_ops(n);
        std::promise<std::uint64_t> last;
        journal_->append(std::move(ops), "", [&](core::result<journal::appended> r) {
            last.set_value(r ? r.value().last_seq : 0);
        });
        const std::uint64_t seq = last.get_future().get();
        EXPECT_GT(seq, 0u);
        return seq;
    }
    bool applied_within(std::uint64_t seq, std::chrono::milliseconds timeout) {
        return test::wait_until([&] { return worker_->applied_seq() >= seq; }, timeout, std::chrono::milliseconds(2));
    }

    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
    std::thread thread_;
};

// While ops keep coming, a batch starts at most once per interval: an op journaled just after a batch
// waits for the next, which starts no earlier than the interval after the one before.
TEST_F(apply_worker_pacing_test, batches_are_at_least_the_interval_apart_while_ops_keep_coming) {
    constexpr auto interval = std::chrono::milliseconds(400);
    start(interval);
    const auto before_first = std::chrono::steady_clock::now();  // before the first batch began
    ASSERT_TRUE(applied_within(append_now(1), std::chrono::seconds(10)));
    // A reader waiting for ops not journaled yet (a feed's long poll) does not cut the pause.
    auto tail = asio::co_spawn(ioc_, worker_->async_wait_applied(1000, std::chrono::seconds(30)), asio::use_future);
    const std::uint64_t second = append_now(3);
    ASSERT_TRUE(applied_within(second, std::chrono::seconds(10)));
    EXPECT_GE(std::chrono::steady_clock::now() - before_first, interval);
    stop();  // wakes the tail reader too
    EXPECT_FALSE(tail.get());
    EXPECT_EQ(shard_.applies().size(), 4u);
}

// A reader waiting for the apply (?after=, ?wait=applied) is not kept waiting by the pacing.
TEST_F(apply_worker_pacing_test, a_reader_waiting_for_the_apply_cuts_the_pause_short) {
    start(std::chrono::minutes(10));
    ASSERT_TRUE(applied_within(append_now(1), std::chrono::seconds(10)));
    const std::uint64_t second = append_now(1);  // inside the ten minutes of the first batch
    auto waited = asio::co_spawn(ioc_, worker_->async_wait_applied(second, std::chrono::seconds(30)), asio::use_future);
    ASSERT_EQ(waited.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_TRUE(waited.get());
}

// A backlog is applied at full speed: a batch with a full batch or more journaled behind it is not
// paced; the pause comes once less than that is left.
TEST_F(apply_worker_pacing_test, a_backlog_is_not_paced) {
    ASSERT_EQ(lim_.apply_batch_ops_max, 100u);
    const std::uint64_t last = append_edges(300).size();  // seqs 1..300
    start(std::chrono::minutes(10));  // opens the journal again, with the 300 ops in it
    EXPECT_TRUE(applied_within(last, std::chrono::seconds(30)));
    // The stop ends the pause at once.
    const std::uint64_t more = append_now(1);
    const auto stopping = std::chrono::steady_clock::now();
    stop();
    EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::minutes(5));
    EXPECT_LT(worker_->applied_seq(), more);
}

}  // namespace
}  // namespace cairn::sim
