#include "apps/bench/sustained.hpp"

#include "apps/bench/cairnd_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace cairn::bench {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr std::uint64_t default_lag_floor = 2000;  // two apply batches
constexpr double search_start = 1000;
constexpr int search_refinements = 3;

std::uint64_t rss_kib_of(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    std::string key;
    while (in >> key) {
        if (key == "VmRSS:") {
            std::uint64_t kib = 0;
            in >> kib;
            return kib;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return 0;
}

// Polls lag and RSS every 200 ms on its own thread until stopped.
class sampler {
public:
    sampler(std::uint16_t port, pid_t pid) : port_(port), pid_(pid), thread_([this] { loop(); }) {}
    ~sampler() {
        stop_ = true;
        thread_.join();
    }
    // Starts a new series (a new step); returns the previous one.
    std::vector<lag_sample> restart() {
        std::lock_guard lock(mu_);
        started_ = clock_type::now();
        return std::exchange(samples_, {});
    }
    std::vector<lag_sample> take() {
        std::lock_guard lock(mu_);
        return std::exchange(samples_, {});
    }
    std::uint64_t last_lag() const { return last_lag_.load(); }
    std::uint64_t peak_rss_kib() const { return peak_rss_.load(); }

private:
    void loop() {
        while (!stop_) {
            lag_sample s;
            auto v = http_get_sync("127.0.0.1", port_, "/readyz?verbose", 1s);
            if (v) {
                if (auto lag = parse_total_lag(v.value().body)) s.lag_ops = *lag;
            }
            s.rss_kib = rss_kib_of(pid_);
            peak_rss_ = std::max(peak_rss_.load(), s.rss_kib);
            last_lag_ = s.lag_ops;
            {
                std::lock_guard lock(mu_);
                s.t_s = std::chrono::duration<double>(clock_type::now() - started_).count();
                samples_.push_back(s);
            }
            std::this_thread::sleep_for(200ms);
        }
    }

    std::uint16_t port_;
    pid_t pid_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> last_lag_{0};
    std::atomic<std::uint64_t> peak_rss_{0};
    std::mutex mu_;
    clock_type::time_point started_ = clock_type::now();
    std::vector<lag_sample> samples_;
    std::thread thread_;  // last: starts after the members it uses
};

// Waits until the lag is 0 (true) or timeout passes.
bool wait_drained(sampler& s, std::chrono::seconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    // The sampler's last value may predate the step's last writes: require two zero readings.
    int zeros = 0;
    while (clock_type::now() < deadline) {
        std::this_thread::sleep_for(250ms);
        zeros = s.last_lag() == 0 ? zeros + 1 : 0;
        if (zeros >= 2) return true;
    }
    return false;
}

run_report failed_report(run_report r, std::string why) {
    r.status = run_status::failed;
    r.note = std::move(why);
    return r;
}

}  // namespace

std::uint64_t lag_bound(double rate, std::uint64_t lag_floor) noexcept {
    return std::max(lag_floor, static_cast<std::uint64_t>(rate * 0.5));
}

bool apply_kept_up(const std::vector<lag_sample>& samples, double duration_s, double rate,
                   std::uint64_t lag_floor) noexcept {
    const std::uint64_t bound = lag_bound(rate, lag_floor);
    bool any = false;
    for (const auto& s : samples) {
        // Samples after the window count too: they show the backlog the step left behind.
        if (s.t_s < duration_s / 2) continue;
        any = true;
        if (s.lag_ops > bound) return false;
    }
    return any;
}

bool acks_kept_up(const run_report& step, double p50_max_ms) noexcept {
    const auto& h = step.latency_ns;
    return h.count() > 0 && static_cast<double>(h.percentile(50)) <= p50_max_ms * 1e6;
}

bool rss_flat(const std::vector<lag_sample>& samples) noexcept {
    std::vector<double> rss;
    for (const auto& s : samples) {
        if (s.rss_kib > 0) rss.push_back(static_cast<double>(s.rss_kib));
    }
    if (rss.size() < 8) return true;  // too short to tell a trend
    const std::size_t q = rss.size() / 4;
    auto mean = [&](std::size_t from, std::size_t to) {
        double sum = 0;
        for (std::size_t i = from; i < to; ++i) sum += rss[i];
        return sum / static_cast<double>(to - from);
    };
    const double early = mean(q, 2 * q);
    const double late = mean(rss.size() - q, rss.size());
    return late <= early * 1.10 || late - early <= 16.0 * 1024;
}

rate_search::rate_search(double start, double max, int refinements)
    : max_(max), refinements_left_(refinements), next_(start) {}

std::optional<double> rate_search::next() const { return next_; }

void rate_search::record(double rate, bool good) {
    if (good) {
        best_ = std::max(best_, rate);
    } else {
        bad_ = bad_ ? std::min(*bad_, rate) : rate;
    }
    if (!bad_) {
        // Still doubling.
        next_ = rate * 2 <= max_ ? std::optional<double>(rate * 2) : std::nullopt;
        return;
    }
    if (best_ == 0) {
        // Even the first rate failed: go down until one is good (or give up below 50/s).
        next_ = rate / 2 >= 50 ? std::optional<double>(rate / 2) : std::nullopt;
        return;
    }
    if (refinements_left_-- <= 0) {
        next_ = std::nullopt;
        return;
    }
    next_ = std::round((best_ + *bad_) / 2);
    if (*next_ <= best_ || *next_ >= *bad_) next_ = std::nullopt;
}

run_report run_sustained_cairn(const bench_config& cfg, const std::string& work_dir, const writer_factory& make) {
    run_report r;
    r.scenario = cfg.scenario;
    r.target = cfg.target;
    r.mode = "open";
    r.concurrency = cfg.load.concurrency;
    if (cfg.cairnd_binary.empty() || cfg.cairnd_config.empty()) {
        return failed_report(r, "sustained needs --cairnd and --cairnd-config");
    }
    cairnd_spec spec;
    spec.binary = cfg.cairnd_binary;
    spec.config = cfg.cairnd_config;
    spec.journal_dir = work_dir + "/sustained-journal";
    spec.log_path = work_dir + "/sustained-cairnd.log";
    spec.port = pick_free_port();
    std::error_code fs_ec;
    std::filesystem::remove_all(spec.journal_dir, fs_ec);
    cairnd_child child(spec);
    if (auto s = child.spawn(false); !s) return failed_report(r, "cannot start cairnd: " + s.error().message());
    if (auto ready = child.wait_ready(60s); !ready) {
        // The log is in the bench's temporary folder, gone after the run: its last line goes into the report.
        std::string last;
        std::ifstream log(spec.log_path);
        for (std::string line; std::getline(log, line);) {
            if (!line.empty()) last = line;
        }
        return failed_report(r, fmt::format("cairnd did not become ready ({}); its log's last line: {}",
                                            child.running() ? ready.error().message() : std::string("it exited"), last));
    }
    bench_config step_cfg = cfg;
    step_cfg.host = "127.0.0.1";
    step_cfg.port = spec.port;

    sampler samples(spec.port, child.pid());
    rate_search search(cfg.load.rate > 0 ? cfg.load.rate : search_start, cfg.rate_max, search_refinements);
    std::uint64_t steps = 0;
    run_report best;
    double best_lag = 0;
    const double step_s = cfg.load.duration.count();
    std::string last_failure;
    // Open loop charges every request to its intended send time, so "ops in the window" is the
    // target rate even when cairn falls behind; the achieved rate is ops over the wall time
    // until the last request completed.
    double step_wall_s = 0;
    auto run_step = [&](double rate, double duration_s, run_report& out, std::vector<lag_sample>& series) {
        load_options o = cfg.load;
        o.rate = rate;
        o.warmup = std::chrono::duration<double>(0.5);
        o.duration = std::chrono::duration<double>(duration_s);
        out = run_report{};
        out.scenario = cfg.scenario;
        out.target = cfg.target;
        asio::io_context ioc(static_cast<int>(std::max<std::uint32_t>(1, o.threads)));
        samples.restart();
        const auto started = clock_type::now();
        auto lr = run_load(ioc, o, [&](asio::any_io_executor ex, std::uint32_t i) { return make(std::move(ex), step_cfg, i); },
                           out);
        step_wall_s = std::chrono::duration<double>(clock_type::now() - started).count() - 0.5;
        series = samples.take();
        return static_cast<bool>(lr);
    };
    while (auto rate = search.next()) {
        ++steps;
        run_report step;
        std::vector<lag_sample> series;
        const bool ran = run_step(*rate, step_s, step, series);
        const double achieved =
            step_wall_s > 0 ? static_cast<double>(step.ops) / std::max(step.duration_s, step_wall_s) : 0;
        // The sampler's clock starts before the 0.5 s warm-up; shift so that 0 is the measured window.
        for (auto& s : series) s.t_s -= 0.5;
        const double p50_ms = static_cast<double>(step.latency_ns.percentile(50)) / 1e6;
        const double p99_ms = static_cast<double>(step.latency_ns.percentile(99)) / 1e6;
        bool good = ran && step.errors == 0 && achieved >= 0.95 * *rate && acks_kept_up(step, ack_p50_max_ms) &&
                    apply_kept_up(series, step_s, *rate, default_lag_floor);
        std::uint64_t lag_max = 0;
        for (const auto& s : series) lag_max = std::max(lag_max, s.lag_ops);
        fmt::print(stderr, "sustained: {:.0f}/s -> achieved {:.0f}/s, errors {}, ack p50 {:.1f} ms (bound {:.0f}) p99 {:.1f} ms, lag max {} (bound {}): {}\n",
                   *rate, achieved, step.errors, p50_ms, ack_p50_max_ms, p99_ms, lag_max, lag_bound(*rate, default_lag_floor),
                   good ? "keeps up" : "falls behind");
        if (!good) {
            last_failure = fmt::format("{:.0f}/s: achieved {:.0f}/s, {} errors{}, ack p50 {:.1f} ms, lag max {}", *rate, achieved,
                                       step.errors, step.first_error.empty() ? "" : " (" + step.first_error + ")", p50_ms, lag_max);
        }
        // The next step starts from an empty backlog.
        const bool drained = wait_drained(samples, 120s);
        if (!drained) good = false;
        search.record(*rate, good);
        if (good && *rate >= search.best()) {
            best = std::move(step);
            best_lag = static_cast<double>(lag_max);
        }
        if (!drained) break;
        if (!child.running()) return failed_report(r, "cairnd exited during the search; see " + spec.log_path);
    }
    if (search.best() == 0) return failed_report(r, "no rate kept up: " + last_failure);

    // Soak at the best rate, twice as long: memory peak and flatness.
    run_report soak;
    std::vector<lag_sample> soak_series;
    run_step(search.best(), 2 * step_s, soak, soak_series);
    const bool flat = rss_flat(soak_series);
    wait_drained(samples, 120s);
    const std::uint64_t peak_kib = samples.peak_rss_kib();
    child.stop();
    std::filesystem::remove_all(spec.journal_dir, fs_ec);

    r = std::move(best);
    r.scenario = cfg.scenario;
    r.target = cfg.target;
    r.mode = "open";
    r.concurrency = cfg.load.concurrency;
    r.rate_target = 0;  // one line per concurrency in the summary, whatever rate was found
    r.note = fmt::format("highest open-loop rate with acknowledgements and apply keeping up (ack p50 within {:.0f} ms; "
                         "lag within max({}, 0.5 s of writes) in the second half of a {:.0f} s step); {} steps",
                         ack_p50_max_ms, default_lag_floor, step_s, steps);
    r.extra["ack_p50_max_ms"] = ack_p50_max_ms;
    r.extra["steps"] = static_cast<double>(steps);
    r.extra["sustained_rate"] = search.best();
    r.extra["lag_max_ops"] = best_lag;
    r.extra["peak_rss_mib"] = static_cast<double>(peak_kib) / 1024.0;
    r.extra["rss_flat"] = flat ? 1 : 0;
    r.extra["soak_s"] = 2 * step_s;
    return r;
}

}  // namespace cairn::bench
