// net::run_io_loop: the spin before a blocking wait, that it ends as io_context::run() does, and
// when it runs its idle tasks.
#include <utility>

#include "net/io_loop.hpp"

#include "core/idle_tasks.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include "tests/support/wait.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using cairn::net::io_loop_shared;
using cairn::net::run_io_loop;

namespace {

// Posts `n` handlers one after another from another thread, each once the one before has run, and
// returns how many ran. The loop's thread is never without work for long between them.
int post_chain(asio::io_context& ioc, int n) {
    std::atomic<int> ran{0};
    for (int i = 0; i < n; ++i) {
        asio::post(ioc, [&ran] { ran.fetch_add(1); });
        const bool ok = cairn::test::wait_until([&] { return ran.load() == i + 1; }, 10s, 1ms);
        if (!ok) break;
    }
    return ran.load();
}

}  // namespace

TEST(io_loop, returns_when_the_io_context_runs_out_of_work) {
    for (const std::chrono::microseconds spin : {0us, 50us, 100'000us}) {
        asio::io_context ioc;
        int ran = 0;
        asio::steady_timer t(ioc, 1ms);
        t.async_wait([&](auto) { ++ran; });
        io_loop_shared shared;
        run_io_loop(ioc, spin, shared);  // hangs if it does not see the end of the work
        EXPECT_EQ(ran, 1) << "spin " << spin.count() << " us";
        EXPECT_TRUE(ioc.stopped());
    }
}

TEST(io_loop, returns_on_stop_while_spinning_or_blocked) {
    for (const std::chrono::microseconds spin : {0us, 10'000'000us}) {
        asio::io_context ioc;
        auto work = asio::make_work_guard(ioc);
        io_loop_shared shared;
        std::atomic<bool> done{false};
        std::thread t([&] {
            run_io_loop(ioc, spin, shared);
            done = true;
        });
        EXPECT_EQ(post_chain(ioc, 3), 3);
        ioc.stop();
        EXPECT_TRUE(cairn::test::wait_until([&] { return done.load(); }, 10s)) << "spin " << spin.count() << " us";
        t.join();
    }
}

// The point of the loop: work that arrives within the spin after other work is picked up without a
// blocking wait. With a window far longer than the gaps between the handlers, no wait blocks after
// the first; without a spin, every handler is a blocking wait's.
TEST(io_loop, a_thread_within_its_spin_picks_up_work_without_blocking) {
    for (const std::chrono::microseconds spin : {0us, 10'000'000us}) {
        asio::io_context ioc;
        auto work = asio::make_work_guard(ioc);
        io_loop_shared shared;
        std::thread t([&] { run_io_loop(ioc, spin, shared); });
        EXPECT_EQ(post_chain(ioc, 1), 1);  // the loop has run a handler: it spins from here
        const auto blocked_before = shared.stats.blocked_waits.load();
        EXPECT_EQ(post_chain(ioc, 20), 20);
        const auto blocked = shared.stats.blocked_waits.load() - blocked_before;
        work.reset();
        ioc.stop();
        t.join();
        if (spin.count() == 0) {
            EXPECT_EQ(shared.stats.spins_found_work.load(), 0u);
        } else {
            EXPECT_EQ(blocked, 0u) << "a handler posted within the spin waited in a blocking call";
            // A handler posted just as the one before ended is found by the loop's own poll, not the spin.
            EXPECT_GE(shared.stats.spins_found_work.load(), 1u);
        }
    }
}

// Two threads on one io_context: only one spins at a time, the other blocks, and both stop.
TEST(io_loop, at_most_one_thread_spins) {
    asio::io_context ioc(2);
    auto work = asio::make_work_guard(ioc);
    io_loop_shared shared;
    std::thread a([&] { run_io_loop(ioc, 10'000'000us, shared); });
    std::thread b([&] { run_io_loop(ioc, 10'000'000us, shared); });
    EXPECT_EQ(post_chain(ioc, 10), 10);
    // One thread holds the spinner slot; the other has gone to a blocking wait.
    EXPECT_TRUE(cairn::test::wait_until([&] { return shared.stats.blocked_waits.load() >= 1; }, 10s));
    EXPECT_TRUE(cairn::test::wait_until([&] { return shared.spinning.load(); }, 10s, 1ms));
    ioc.stop();
    a.join();
    b.join();
}

// Idle tasks (core/idle_tasks.hpp): a task deferred by a handler runs once the handlers ready with
// it have run, before the loop waits again; a loop that never runs dry still runs it; and on a
// thread that is not running the loop nothing is deferred.
TEST(io_loop, an_idle_task_runs_after_the_handlers_ready_with_it) {
    for (const std::chrono::microseconds spin : {0us, 50us}) {
        asio::io_context ioc;
        std::vector<int> order;
        asio::post(ioc, [&] {
            order.push_back(0);
            ASSERT_TRUE(cairn::core::idle_loop_running());
            cairn::core::defer_to_idle(cairn::core::idle_task([&] { order.push_back(-1); }));
        });
        for (int i = 1; i <= 5; ++i) asio::post(ioc, [&order, i] { order.push_back(i); });
        io_loop_shared shared;
        run_io_loop(ioc, spin, shared);
        EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, -1})) << "spin " << spin.count() << " us";
        EXPECT_EQ(shared.stats.idle_task_runs.load(), 1U);
        EXPECT_FALSE(cairn::core::idle_loop_running());  // only inside the loop
    }
}

TEST(io_loop, an_idle_task_runs_even_when_the_loop_never_runs_dry) {
    asio::io_context ioc;
    std::atomic<bool> task_ran{false};
    int handlers = 0;
    // Each handler posts the next until the task has run: the queue is never empty.
    std::function<void()> next = [&] {
        ++handlers;
        if (!task_ran.load()) asio::post(ioc, next);
    };
    asio::post(ioc, [&] {
        cairn::core::defer_to_idle(cairn::core::idle_task([&] { task_ran = true; }));
        asio::post(ioc, next);
    });
    io_loop_shared shared;
    run_io_loop(ioc, 0us, shared);
    EXPECT_TRUE(task_ran.load());
    EXPECT_LE(handlers, 100) << "the task waited for the loop to run dry";
}

TEST(io_loop, idle_tasks_left_when_the_loop_stops_still_run) {
    asio::io_context ioc;
    bool ran = false;
    asio::post(ioc, [&] {
        cairn::core::defer_to_idle(cairn::core::idle_task([&] { ran = true; }));
        ioc.stop();
    });
    io_loop_shared shared;
    run_io_loop(ioc, 0us, shared);
    EXPECT_TRUE(ran);
}
