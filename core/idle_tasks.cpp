#include "core/idle_tasks.hpp"

#include "core/assert.hpp"

#include <vector>

namespace cairn::core {

namespace {

thread_local bool loop_running = false;
thread_local std::vector<idle_task> queued;

}  // namespace

idle_loop_scope::idle_loop_scope() {
    CAIRN_ASSERT(!loop_running);
    loop_running = true;
}

idle_loop_scope::~idle_loop_scope() {
    // Whatever is still queued runs now: a task holds a waiting coroutine's handler, which must
    // reach its executor (or be destroyed with it) rather than vanish with the thread.
    while (run_idle_tasks() != 0) {
    }
    loop_running = false;
}

bool idle_loop_running() noexcept { return loop_running; }

void defer_to_idle(idle_task t) {
    CAIRN_ASSERT(loop_running);
    queued.push_back(std::move(t));
}

bool idle_tasks_pending() noexcept { return !queued.empty(); }

std::size_t run_idle_tasks() {
    std::vector<idle_task> now;
    now.swap(queued);
    for (auto& t : now) t();
    return now.size();
}

}  // namespace cairn::core
