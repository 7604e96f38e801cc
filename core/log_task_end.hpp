// The completion handler of every co_spawn: logs how a background task ended (an exception
// is logged with the task's name, never rethrown), and counts the task as live, by name, from
// the spawn until the handler is gone (run, or dropped with an io_context that never ran it),
// so that a stop that does not finish can name what is still pending. Thread-safe.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cairn::core {

namespace detail {
struct live_task_mark;
}

class log_task_end {
public:
    explicit log_task_end(std::string name);
    void operator()(std::exception_ptr e) const noexcept;
    const std::string& name() const noexcept;

private:
    // Shared by the handler's copies; its end takes the task off the live count.
    std::shared_ptr<const detail::live_task_mark> mark_;
};

// Tasks spawned with log_task_end and not ended yet, as (name, count), largest count first;
// names with none live are left out.
std::vector<std::pair<std::string, std::size_t>> live_tasks();
// The same, as one line: "http_session x2, apply shard 0" ("none" when there are none).
std::string describe_live_tasks();

}  // namespace cairn::core
