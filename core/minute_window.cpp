#include "core/minute_window.hpp"

namespace cairn::core {

void minute_window::add(std::uint64_t now_ms, std::uint64_t ok, std::uint64_t failed) {
    const std::uint64_t start = now_ms - now_ms % bucket_ms;
    const std::size_t i = static_cast<std::size_t>(start / bucket_ms % buckets);
    const std::lock_guard lock(mutex_);
    if (start_[i] < start) {
        start_[i] = start;
        counts_[i] = {};
    }
    counts_[i].ok += ok;
    counts_[i].failed += failed;
}

minute_window::totals minute_window::last_minute(std::uint64_t now_ms) const {
    const std::uint64_t current = now_ms - now_ms % bucket_ms;
    const std::uint64_t oldest = current >= bucket_ms * (buckets - 1) ? current - bucket_ms * (buckets - 1) : 0;
    totals out;
    const std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < buckets; ++i) {
        if (start_[i] >= oldest && start_[i] <= current) {
            out.ok += counts_[i].ok;
            out.failed += counts_[i].failed;
        }
    }
    return out;
}

}  // namespace cairn::core
