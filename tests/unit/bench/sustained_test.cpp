#include "apps/bench/report.hpp"
#include "apps/bench/summary.hpp"
#include "apps/bench/sustained.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cairn::bench {
namespace {

std::vector<double> tried(rate_search& s, double capacity) {
    std::vector<double> rates;
    while (auto r = s.next()) {
        rates.push_back(*r);
        s.record(*r, *r <= capacity);
        if (rates.size() > 50) break;
    }
    return rates;
}

TEST(rate_search, doubles_until_a_failure_then_bisects) {
    rate_search s(1000, 256000, 3);
    const auto rates = tried(s, 5000);
    // 1000, 2000, 4000 good; 8000 bad; then 6000 bad, 5000 good, 5500 bad.
    const std::vector<double> expected{1000, 2000, 4000, 8000, 6000, 5000, 5500};
    EXPECT_EQ(rates, expected);
    EXPECT_EQ(s.best(), 5000);
}

TEST(rate_search, stops_at_the_maximum_when_everything_keeps_up) {
    rate_search s(1000, 8000, 3);
    const auto rates = tried(s, 1e9);
    EXPECT_EQ(rates, (std::vector<double>{1000, 2000, 4000, 8000}));
    EXPECT_EQ(s.best(), 8000);
}

TEST(rate_search, goes_down_when_the_first_rate_fails) {
    rate_search s(1000, 256000, 2);
    const auto rates = tried(s, 300);
    ASSERT_GE(rates.size(), 3U);
    EXPECT_EQ(rates[0], 1000);
    EXPECT_EQ(rates[1], 500);
    EXPECT_EQ(rates[2], 250);
    EXPECT_GT(s.best(), 0);
    EXPECT_LE(s.best(), 300);
}

TEST(rate_search, nothing_good_ends_with_best_zero) {
    rate_search s(1000, 256000, 2);
    tried(s, 10);
    EXPECT_EQ(s.best(), 0);
}

std::vector<lag_sample> series(std::initializer_list<std::uint64_t> lags, double step_s) {
    std::vector<lag_sample> out;
    double t = 0;
    for (auto l : lags) {
        out.push_back({t, l, 0});
        t += step_s;
    }
    return out;
}

TEST(apply_kept_up, only_the_second_half_counts_and_must_stay_under_the_bound) {
    // 10 s step at 10000/s: bound max(2000, 5000) = 5000.
    EXPECT_EQ(lag_bound(10000, 2000), 5000U);
    EXPECT_EQ(lag_bound(1000, 2000), 2000U);
    // A burst early on is fine; lag in the second half under 5000.
    EXPECT_TRUE(apply_kept_up(series({9000, 8000, 3000, 1000, 900, 1200, 800, 1000, 700, 600, 500}, 1.0), 10, 10000, 2000));
    // Growing lag: the second half passes the bound.
    EXPECT_FALSE(apply_kept_up(series({100, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000}, 1.0), 10, 10000,
                               2000));
    // A backlog that shows only after the window (the step's last requests) counts too.
    EXPECT_FALSE(apply_kept_up(series({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9000, 20000}, 1.0), 10, 10000, 2000));
    // No sample in the second half: cannot tell, so not kept up.
    EXPECT_FALSE(apply_kept_up(series({0, 0}, 1.0), 10, 10000, 2000));
}

TEST(acks_kept_up, flush_stalls_in_the_tail_pass_and_a_queue_that_grows_through_the_step_fails) {
    constexpr auto ms = [](double v) { return static_cast<std::uint64_t>(v * 1e6); };
    run_report steady;
    // 10,000 acks at 1-3 ms, 5% of them behind flush stalls of 200 ms: the median stays at 2 ms.
    for (int i = 0; i < 9500; ++i) steady.latency_ns.record(ms(1 + (i % 3)));
    steady.latency_ns.record_n(ms(200), 500);
    EXPECT_TRUE(acks_kept_up(steady, ack_p50_max_ms));
    EXPECT_FALSE(acks_kept_up(steady, 1));
    // A queue that grows by 1 ms every 100 requests: the median waits 51 ms.
    run_report growing;
    for (int i = 0; i < 10000; ++i) growing.latency_ns.record(ms(1 + i / 100.0));
    EXPECT_FALSE(acks_kept_up(growing, ack_p50_max_ms));
    // No acknowledgement at all: nothing kept up.
    EXPECT_FALSE(acks_kept_up(run_report{}, ack_p50_max_ms));
}

std::vector<lag_sample> rss_series(std::initializer_list<std::uint64_t> kib) {
    std::vector<lag_sample> out;
    for (auto k : kib) out.push_back({0, 0, k});
    return out;
}

TEST(rss_flat, flat_noise_passes_and_a_steady_climb_fails) {
    EXPECT_TRUE(rss_flat(rss_series({10000, 30000, 30500, 30100, 30400, 30200, 30600, 30300, 30500, 30400, 30600, 30500})));
    EXPECT_FALSE(rss_flat(rss_series({30000, 40000, 50000, 60000, 70000, 80000, 90000, 100000, 110000, 120000, 130000,
                                      140000})));
}

run_report sustained_run(const char* target, const char* mode, std::uint64_t ops_per_s) {
    run_report r;
    r.scenario = "sustained";
    r.target = target;
    r.mode = mode;
    r.concurrency = 64;
    r.duration_s = 1;
    r.ops = ops_per_s;
    finish_throughput(r);
    return r;
}

TEST(summary, sustained_line_pairs_the_searched_rate_with_direct_and_adds_memory) {
    run_report c = sustained_run("cairn-http", "open", 8000);
    c.extra["lag_max_ops"] = 1500;
    c.extra["peak_rss_mib"] = 42;
    c.extra["rss_flat"] = 1;
    c.extra["soak_s"] = 20;
    c.extra["sustained_rate"] = 8000;
    const run_report d = sustained_run("direct", "closed", 2000);
    const auto t = summary_table({to_json(c), to_json(d)});
    EXPECT_NE(t.find("| sustained | 64 | 8000 ops/s (cairn-http), lag ≤ 1500 ops | 2000 ops/s | **4.00** |"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("| memory | 64 | peak RSS 42 MiB, flat over a 20 s soak at 8000 writes/s"), std::string::npos) << t;
    EXPECT_LT(t.find("| sustained |"), t.find("| memory |"));
}

}  // namespace
}  // namespace cairn::bench
