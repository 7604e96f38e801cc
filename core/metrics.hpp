// Lock-free metric cells (counter, gauge, histogram) that any thread may update, and a
// registry that renders them in the Prometheus text format (version 0.0.4). prometheus-cpp
// is not packaged in Debian 12, so cairn keeps this small and owns it. Register at start-up;
// update from any thread; render from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cairn::core {

class counter {
public:
    void inc(std::uint64_t n = 1) noexcept { v_.fetch_add(n, std::memory_order_relaxed); }
    std::uint64_t value() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> v_{0};
};

class gauge {
public:
    void set(double v) noexcept { v_.store(v, std::memory_order_relaxed); }
    void add(double d) noexcept { v_.fetch_add(d, std::memory_order_relaxed); }
    double value() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> v_{0};
};

// Fixed buckets (upper bounds, in the metric's unit); observations are lock-free.
class histogram {
public:
    explicit histogram(std::vector<double> bounds);
    // Latency buckets in seconds from 50 us to 10 s.
    static std::vector<double> latency_bounds();
    // Size buckets 1, 2, 4, ... 65536.
    static std::vector<double> size_bounds();

    void observe(double v) noexcept;
    void observe(std::chrono::nanoseconds d) noexcept { observe(static_cast<double>(d.count()) / 1e9); }

    const std::vector<double>& bounds() const noexcept { return bounds_; }
    // Cumulative count of observations <= bounds()[i]; the last entry is +Inf.
    std::vector<std::uint64_t> cumulative_counts() const;
    double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1
    std::atomic<double> sum_{0};
    std::atomic<std::uint64_t> count_{0};
};

// A label set rendered as {k="v",...}; values are escaped on rendering.
using labels = std::vector<std::pair<std::string, std::string>>;

class registry {
public:
    registry();
    ~registry();
    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;

    // Each returns a cell that lives as long as the registry. Asking twice for the same
    // name and labels returns the same cell.
    counter& add_counter(const std::string& name, const std::string& help, const labels& l = {});
    gauge& add_gauge(const std::string& name, const std::string& help, const labels& l = {});
    histogram& add_histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                             const labels& l = {});
    // A gauge computed at render time (e.g. an LMDB count); fn must be thread-safe.
    void add_callback_gauge(const std::string& name, const std::string& help, const labels& l,
                            std::function<double()> fn);

    // A counter read at render time from a cell owned elsewhere; fn must be thread-safe.
    void add_callback_counter(const std::string& name, const std::string& help, const labels& l,
                              std::function<double()> fn);
    // A histogram owned elsewhere (e.g. by the journal), which must outlive the registry's use.
    void attach_histogram(const std::string& name, const std::string& help, const labels& l, const histogram& h);

    // The whole registry in Prometheus text format.
    std::string render() const;

private:
    struct family;
    family& family_for(const std::string& name, const std::string& help, const char* type);
    mutable std::mutex mu_;
    std::vector<std::unique_ptr<family>> families_;
};

}  // namespace cairn::core
