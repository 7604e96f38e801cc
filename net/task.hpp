// log_task_end: the completion handler of every co_spawn in the net layer. It logs how a
// background task ended (an exception with the task's name) and never rethrows, so one failed
// session cannot take down an I/O thread. Thread-safe; copy freely.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace cairn::net {

struct log_task_end {
    // Names are short literals ("http_session"), which fit std::string's inline buffer.
    explicit log_task_end(std::string_view task_name) : name(task_name) {}

    void operator()(std::exception_ptr e) const noexcept;

    std::string name;
};

}  // namespace cairn::net
