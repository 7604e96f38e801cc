#include "net/io_loop.hpp"

#include <utility>

#include <boost/asio/io_context.hpp>

namespace cairn::net {

namespace {

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
    if (spin.count() <= 0) {
        ioc.run();
        return;
    }
    for (;;) {
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
