#include "core/log_task_end.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace cairn::core {

namespace {

// Names are few (one per kind of task, some with a shard number) and are never removed, so a
// mark may keep a pointer to its counter.
struct live_registry {
    std::mutex mu;
    std::map<std::string, std::size_t, std::less<>> counts;
};

live_registry& registry() {
    static auto* r = new live_registry;  // Never destroyed: tasks may end during static destruction.
    return *r;
}

}  // namespace

namespace detail {

struct live_task_mark {
    explicit live_task_mark(std::string n) : name(std::move(n)) {
        auto& r = registry();
        std::lock_guard lock(r.mu);
        auto it = r.counts.find(name);
        if (it == r.counts.end()) it = r.counts.emplace(name, 0).first;
        count = &it->second;
        ++*count;
    }
    ~live_task_mark() {
        std::lock_guard lock(registry().mu);
        --*count;
    }
    live_task_mark(const live_task_mark&) = delete;
    live_task_mark& operator=(const live_task_mark&) = delete;

    const std::string name;
    std::size_t* count = nullptr;  // guarded by the registry's mutex
};

}  // namespace detail

log_task_end::log_task_end(std::string name) : mark_(std::make_shared<const detail::live_task_mark>(std::move(name))) {}

const std::string& log_task_end::name() const noexcept { return mark_->name; }

void log_task_end::operator()(std::exception_ptr e) const noexcept {
    if (!e) {
        spdlog::debug("task {} ended", mark_->name);
        return;
    }
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::error("task {} ended with an exception: {}", mark_->name, ex.what());
    } catch (...) {
        spdlog::error("task {} ended with an unknown exception", mark_->name);
    }
}

std::vector<std::pair<std::string, std::size_t>> live_tasks() {
    std::vector<std::pair<std::string, std::size_t>> out;
    {
        auto& r = registry();
        std::lock_guard lock(r.mu);
        for (const auto& [name, n] : r.counts) {
            if (n > 0) out.emplace_back(name, n);
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return out;
}

std::string describe_live_tasks() {
    const auto tasks = live_tasks();
    if (tasks.empty()) return "none";
    std::string out;
    for (const auto& [name, n] : tasks) {
        if (!out.empty()) out += ", ";
        out += name;
        if (n > 1) out += fmt::format(" x{}", n);
    }
    return out;
}

}  // namespace cairn::core
