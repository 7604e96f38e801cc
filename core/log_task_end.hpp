// The completion handler of every co_spawn: logs how a background task ended (an exception
// is logged with the task's name, never rethrown). Thread-safe.
#pragma once

#include <exception>
#include <string>

namespace cairn::core {

struct log_task_end {
    std::string name;
    void operator()(std::exception_ptr e) const noexcept;
};

}  // namespace cairn::core
