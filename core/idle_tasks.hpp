// Work that a thread's event loop runs once it has no ready handler left: at the end of its turn,
// before it polls the sockets again or blocks. A point read that finds its shard idle waits there
// for the reads that arrived in the same turn (the other frames of one WebSocket read, the other
// connections of one epoll wakeup), so that they share its query (shards/point_batcher.cpp).
//
// Per thread: a loop declares itself with an idle_loop_scope (net::run_io_loop does) and calls
// run_idle_tasks() when it runs dry; on any other thread idle_loop_running() is false and callers
// do their work at once. A task must be cheap and must not block: it typically posts a handler.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace cairn::core {

// A move-only callable of no arguments (std::move_only_function is C++23).
class idle_task {
public:
    template <class F>
    explicit idle_task(F f) : p_(std::make_unique<model<F>>(std::move(f))) {}
    void operator()() { p_->call(); }

private:
    struct base {
        virtual ~base() = default;
        virtual void call() = 0;
    };
    template <class F>
    struct model final : base {
        F f;
        explicit model(F x) : f(std::move(x)) {}
        void call() override { f(); }
    };
    std::unique_ptr<base> p_;
};

// While one lives, the calling thread runs a loop that calls run_idle_tasks(). Not nestable.
class idle_loop_scope {
public:
    idle_loop_scope();
    ~idle_loop_scope();
    idle_loop_scope(const idle_loop_scope&) = delete;
    idle_loop_scope& operator=(const idle_loop_scope&) = delete;
};

// True on a thread inside an idle_loop_scope.
bool idle_loop_running() noexcept;

// Queues t for the calling thread's loop. Requires idle_loop_running().
void defer_to_idle(idle_task t);

// True if the calling thread has queued tasks.
bool idle_tasks_pending() noexcept;

// Runs the calling thread's queued tasks, oldest first; a task queued meanwhile waits for the next
// call. Returns how many ran.
std::size_t run_idle_tasks();

}  // namespace cairn::core
