#include "net/task.hpp"

#include <spdlog/spdlog.h>

namespace cairn::net {

void log_task_end::operator()(std::exception_ptr e) const noexcept {
    if (!e) {
        return;  // A normal end is the common case (every connection); not worth a log line.
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::error("task {} ended with an exception: {}", name, ex.what());
    } catch (...) {
        spdlog::error("task {} ended with an unknown exception", name);
    }
}

}  // namespace cairn::net
