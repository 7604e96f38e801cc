// Scenario 2 (sustained writes, apply running) and 7 (cairnd's memory under that load).
//
// cairn-bench starts its own cairnd with apply on and searches for the highest edge write rate
// that apply keeps up with: steps of open-loop load at a fixed rate, doubling until a step
// fails, then halving the gap between the best good and the first bad rate. During every step
// a sampler polls /readyz?verbose (journal lag, summed over shards) and cairnd's VmRSS. A
// step is good when every request succeeded, the achieved rate (in wall time) is within 5% of
// the target, the acknowledgements kept up (their median, from the intended send time, within
// ack_p50_max_ms: a queue of requests that grows through the step lifts the median with it,
// while the disk's flush stalls lift only the tail; a p99 bound failed good rates on one
// stall), and the lag stayed bounded: in the second half of the step it never exceeded
// max(lag_floor, half a second of writes), so apply is not falling behind (samples after the
// window, while the last requests complete, count too). After each step the backlog drains
// before the next one starts. Finally the best rate runs once more, twice as long, for the
// memory figures (peak RSS and whether it stays flat). Blocking.
#pragma once

#include "apps/bench/load.hpp"
#include "apps/bench/report.hpp"
#include "apps/bench/scenarios.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace cairn::bench {

// One sample of the sampler thread.
struct lag_sample {
    double t_s = 0;              // seconds since the step started
    std::uint64_t lag_ops = 0;   // journal ops not yet applied, summed over shards
    std::uint64_t rss_kib = 0;   // cairnd's VmRSS (0: unknown)
};

// The lag bound of a step at `rate` writes/s.
std::uint64_t lag_bound(double rate, std::uint64_t lag_floor) noexcept;

// Whether apply kept up during a step of `duration_s` at `rate`: the samples of its second half
// stayed within lag_bound and the step ended no higher than the bound.
bool apply_kept_up(const std::vector<lag_sample>& samples, double duration_s, double rate,
                   std::uint64_t lag_floor) noexcept;

// The acknowledgement median a sustained step may not exceed, in milliseconds.
inline constexpr double ack_p50_max_ms = 20;

// Whether a step's acknowledgements kept up: it has latencies and their median is at most
// p50_max_ms.
bool acks_kept_up(const run_report& step, double p50_max_ms) noexcept;

// Whether memory stayed flat over a run: the mean RSS of the last quarter of the samples is at
// most 10% (and 16 MiB) above the mean of the second quarter (the first is warm-up).
bool rss_flat(const std::vector<lag_sample>& samples) noexcept;

// The rate search: doubling from `start` until a step fails (or `max` passes), then bisecting
// `refinements` times between the best good and the first bad rate. next() is the rate to
// try now (nullopt: done); record() tells whether it was good.
class rate_search {
public:
    rate_search(double start, double max, int refinements);
    std::optional<double> next() const;
    void record(double rate, bool good);
    double best() const noexcept { return best_; }  // 0 if no rate was good

private:
    double max_;
    int refinements_left_;
    double best_ = 0;
    std::optional<double> bad_;
    std::optional<double> next_;
};

// The write worker of the cairn target for cfg (cfg.port is the cairnd that runs the step).
using writer_factory =
    std::function<std::unique_ptr<worker>(boost::asio::any_io_executor ex, const bench_config& cfg, std::uint32_t index)>;

// Runs the search against a cairnd that cairn-bench starts (cfg.cairnd_binary/_config) in
// work_dir; fills throughput (the best sustained rate), the latency of the best step, and
// extras: steps, lag_max_ops, peak_rss_mib, rss_flat (1/0), soak_s.
run_report run_sustained_cairn(const bench_config& cfg, const std::string& work_dir, const writer_factory& make);

}  // namespace cairn::bench
