// A latency histogram for cairn-bench: HDR-like log-linear buckets over uint64 values
// (nanoseconds by convention), relative error below 1/128, fixed memory (~59 KiB), no
// allocation after construction. Not thread-safe: one per worker, merged at the end.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cairn::bench {

class histogram {
public:
    // Values below 2 * sub_buckets are counted exactly; above, each power of two is split into
    // sub_buckets equal buckets, so a bucket's width is at most 1/sub_buckets of its value.
    static constexpr unsigned sub_bits = 7;
    static constexpr std::uint64_t sub_buckets = std::uint64_t{1} << sub_bits;
    static constexpr std::size_t bucket_count = (64 - sub_bits + 1) * sub_buckets;

    histogram() : counts_(bucket_count, 0) {}

    void record(std::uint64_t value) noexcept { record_n(value, 1); }

    void record_n(std::uint64_t value, std::uint64_t n) noexcept {
        if (n == 0) return;
        counts_[index_of(value)] += n;
        count_ += n;
        sum_ += static_cast<double>(value) * static_cast<double>(n);
        min_ = std::min(min_, value);
        max_ = std::max(max_, value);
    }

    void merge(const histogram& other) noexcept {
        for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
        count_ += other.count_;
        sum_ += other.sum_;
        min_ = std::min(min_, other.min_);
        max_ = std::max(max_, other.max_);
    }

    void reset() noexcept {
        std::fill(counts_.begin(), counts_.end(), 0);
        count_ = 0;
        sum_ = 0;
        min_ = std::numeric_limits<std::uint64_t>::max();
        max_ = 0;
    }

    std::uint64_t count() const noexcept { return count_; }
    std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
    std::uint64_t max() const noexcept { return max_; }
    double mean() const noexcept { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

    // The smallest recorded value v such that at least p percent of the values are <= v, given
    // as the highest value of v's bucket (so never below the truth, at most 1/128 above it), and
    // never above max(). p is clamped to [0, 100]; 0 for an empty histogram.
    std::uint64_t percentile(double p) const noexcept {
        if (count_ == 0) return 0;
        p = std::clamp(p, 0.0, 100.0);
        auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_) + 0.9999999);
        rank = std::clamp<std::uint64_t>(rank, 1, count_);
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < bucket_count; ++i) {
            seen += counts_[i];
            if (seen >= rank) return std::clamp(highest_of(i), min_, max_);
        }
        return max_;
    }

    // Bucket arithmetic, public for tests.
    static constexpr std::size_t index_of(std::uint64_t v) noexcept {
        if (v < 2 * sub_buckets) return static_cast<std::size_t>(v);
        const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(v));
        const unsigned shift = msb - sub_bits;
        return static_cast<std::size_t>((shift + 1) * sub_buckets + ((v >> shift) - sub_buckets));
    }
    static constexpr std::uint64_t lowest_of(std::size_t i) noexcept {
        if (i < 2 * sub_buckets) return i;
        const auto shift = static_cast<unsigned>(i / sub_buckets - 1);
        const std::uint64_t mantissa = i % sub_buckets + sub_buckets;
        return mantissa << shift;
    }
    static constexpr std::uint64_t highest_of(std::size_t i) noexcept {
        if (i + 1 >= bucket_count) return std::numeric_limits<std::uint64_t>::max();
        return lowest_of(i + 1) - 1;
    }

private:
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    double sum_ = 0;
    std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t max_ = 0;
};

}  // namespace cairn::bench
