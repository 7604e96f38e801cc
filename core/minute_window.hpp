// Counts of two kinds of events (ops applied, ops failed) over the last minute, in buckets of
// ten seconds: what `cairn status` shows as a shard's error rate. Thread-safe (a mutex: it is
// updated once per apply batch and read by the admin API). No I/O.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace cairn::core {

class minute_window {
public:
    static constexpr std::uint64_t bucket_ms = 10'000;
    static constexpr std::size_t buckets = 6;  // one minute

    struct totals {
        std::uint64_t ok = 0;
        std::uint64_t failed = 0;

        // Failed of all, 0 when there were none.
        double failed_fraction() const noexcept {
            return ok + failed ? static_cast<double>(failed) / static_cast<double>(ok + failed) : 0.0;
        }
        friend bool operator==(const totals&, const totals&) = default;
    };

    // Adds events at now_ms (wall ms; a time earlier than the newest bucket counts into it).
    void add(std::uint64_t now_ms, std::uint64_t ok, std::uint64_t failed);
    // The events of the buckets that lie within the minute before now_ms (the current one included).
    totals last_minute(std::uint64_t now_ms) const;

private:
    mutable std::mutex mutex_;
    std::array<std::uint64_t, buckets> start_{};  // bucket start in ms; buckets are reused round robin
    std::array<totals, buckets> counts_{};
};

}  // namespace cairn::core
