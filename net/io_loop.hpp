#pragma once
// How an I/O thread runs the io_context: like io_context::run(), but a thread that has just run a
// handler and finds nothing ready polls for up to `spin` before it blocks in epoll_wait.
//
// Why: on the virtual machines cairn is measured on, a thread asleep in epoll_wait costs some 30–60 µs
// to wake (an inter-processor interrupt and the vCPU's halt exit), more than cairnd's own work for
// a point read. A request/response exchange with one client pays that wake twice per request (the
// client's request, the shard's answer). Polling through the short gaps keeps the thread awake for
// the next event. It costs CPU only right after work: an idle cairnd blocks after one spin, and a
// saturated one never runs out of ready handlers. At most one thread spins at a time, so that the
// spinners never take both cores of a small box from the shards beside them.
// It pays with one I/O thread (listen.threads = 1): with more, Asio's poll_one, finding the queue
// empty, wakes a thread waiting in the io_context, which takes the reactor into a blocking
// epoll_wait, and the spinner polls an empty queue (docs/config.md, "I/O threads and spin_us").
#include <atomic>
#include <chrono>
#include <cstdint>

namespace boost::asio {
class io_context;
}

namespace cairn::net {

struct io_loop_stats {
    std::atomic<std::uint64_t> spins_found_work{0};  // a spin ended because a handler became ready
    std::atomic<std::uint64_t> blocked_waits{0};     // the thread blocked (run_one) for its next handler
    std::atomic<std::uint64_t> idle_task_runs{0};    // the thread ran its idle tasks (core/idle_tasks.hpp)
};

// The spinner slot shared by the threads of one io_context.
struct io_loop_shared {
    std::atomic<bool> spinning{false};
    io_loop_stats stats;
};

// Runs `ioc` on the calling thread until it is stopped or runs out of work, as io_context::run()
// does, and runs the thread's idle tasks (core/idle_tasks.hpp) whenever it has no ready handler
// left, or after 64 handlers while they wait. `spin` zero: no spin, a blocking wait at once.
void run_io_loop(boost::asio::io_context& ioc, std::chrono::microseconds spin, io_loop_shared& shared);

}  // namespace cairn::net
