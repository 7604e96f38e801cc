#include "net/io_loop.hpp"

#include "core/idle_tasks.hpp"

#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace cairn::net {

namespace {

// A loop with idle tasks queued runs at most this many ready handlers before it runs them.
constexpr std::size_t handlers_before_idle_tasks_max = 64;

// Polls `ioc` for up to `spin`; true once a handler ran. The caller holds the spinner slot.
bool spin_for_work(boost::asio::io_context& ioc, std::chrono::microseconds spin) {
    const auto until = std::chrono::steady_clock::now() + spin;
    do {
        if (ioc.poll_one() != 0) return true;
        if (ioc.stopped()) return false;
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

}  // namespace

void run_io_loop(boost::asio::io_context& ioc, std::chrono::microseconds spin, io_loop_shared& shared) {
    core::idle_loop_scope idle_scope;
    for (;;) {
        if (core::idle_tasks_pending()) {
            {
                // The tasks hold handlers the io_context does not count as work: without the guard,
                // poll_one would stop it for lack of work while they wait.
                const auto work = boost::asio::make_work_guard(ioc);
                // End of the turn first: the handlers ready now (and what the sockets have ready,
                // which poll_one looks at once the queue is empty) may defer work that joins the
                // tasks'. Bounded, so that a loop that never runs dry still runs its tasks soon.
                for (std::size_t ran = 0; ran < handlers_before_idle_tasks_max && ioc.poll_one() != 0; ++ran) {
                }
                if (ioc.stopped()) return;
                shared.stats.idle_task_runs.fetch_add(1, std::memory_order_relaxed);
                core::run_idle_tasks();
            }
            if (ioc.stopped()) return;  // the guard was the last work
            continue;
        }
        if (spin.count() <= 0) {
            if (ioc.run_one() == 0) return;  // stopped, or out of work
            continue;
        }
        if (ioc.poll_one() != 0) continue;
        if (ioc.stopped()) return;
        bool expected = false;
        if (shared.spinning.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
            const bool found = spin_for_work(ioc, spin);
            shared.spinning.store(false, std::memory_order_release);
            if (found) {
                shared.stats.spins_found_work.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            if (ioc.stopped()) return;
        }
        shared.stats.blocked_waits.fetch_add(1, std::memory_order_relaxed);
        if (ioc.run_one() == 0) return;  // stopped, or out of work
    }
}

}  // namespace cairn::net
