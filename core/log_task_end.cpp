#include "core/log_task_end.hpp"

#include <spdlog/spdlog.h>

namespace cairn::core {

void log_task_end::operator()(std::exception_ptr e) const noexcept {
    if (!e) {
        spdlog::debug("task {} ended", name);
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::error("task {} ended with an exception: {}", name, ex.what());
    } catch (...) {
        spdlog::error("task {} ended with an unknown exception", name);
    }
}

}  // namespace cairn::core
