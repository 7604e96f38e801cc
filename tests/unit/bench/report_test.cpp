#include "apps/bench/cairnd_runner.hpp"
#include "apps/bench/edge_sql.hpp"
#include "apps/bench/report.hpp"
#include "apps/bench/scenarios.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cairn::bench {
namespace {

run_report sample() {
    run_report r;
    r.scenario = "write";
    r.target = "cairn-http";
    r.mode = "closed";
    r.concurrency = 16;
    r.duration_s = 2.0;
    r.ops = 1000;
    r.errors = 3;
    r.first_error = "overloaded";
    for (std::uint64_t i = 1; i <= 1000; ++i) r.latency_ns.record(i * 1000);  // 1 us .. 1 ms
    r.extra["edges_per_request"] = 1;
    finish_throughput(r);
    return r;
}

TEST(report, throughput_is_ops_over_duration) {
    auto r = sample();
    EXPECT_DOUBLE_EQ(r.throughput, 500.0);
    r.duration_s = 0;
    finish_throughput(r);
    EXPECT_EQ(r.throughput, 0.0);
}

TEST(report, json_has_every_field_and_ordered_percentiles) {
    const auto j = nlohmann::json::parse(to_json(sample()));
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["scenario"], "write");
    EXPECT_EQ(j["target"], "cairn-http");
    EXPECT_EQ(j["mode"], "closed");
    EXPECT_EQ(j["status"], "ok");
    EXPECT_EQ(j["concurrency"], 16);
    EXPECT_EQ(j["ops"], 1000);
    EXPECT_EQ(j["errors"], 3);
    EXPECT_EQ(j["unit"], "ops");
    EXPECT_DOUBLE_EQ(j["throughput"].get<double>(), 500.0);
    const auto& l = j["latency"];
    EXPECT_EQ(l["count"], 1000);
    EXPECT_NEAR(l["p50_us"].get<double>(), 500.0, 500.0 / 128 + 0.01);
    EXPECT_NEAR(l["p99_us"].get<double>(), 990.0, 990.0 / 128 + 0.01);
    EXPECT_LE(l["p50_us"].get<double>(), l["p99_us"].get<double>());
    EXPECT_LE(l["p99_us"].get<double>(), l["p999_us"].get<double>());
    EXPECT_LE(l["p999_us"].get<double>(), l["max_us"].get<double>());
    EXPECT_DOUBLE_EQ(l["max_us"].get<double>(), 1000.0);
    EXPECT_EQ(j["extra"]["edges_per_request"], 1);
}

TEST(report, text_names_the_run_and_its_percentiles) {
    const auto t = to_text(sample());
    EXPECT_NE(t.find("write / cairn-http (closed, concurrency 16)"), std::string::npos) << t;
    EXPECT_NE(t.find("500.0 ops/s"), std::string::npos) << t;
    EXPECT_NE(t.find("p99.9"), std::string::npos) << t;
    EXPECT_NE(t.find("first error overloaded"), std::string::npos) << t;
}

TEST(report, not_measurable_says_why_and_nothing_else) {
    run_report r;
    r.scenario = "page";
    r.target = "cairn-http";
    r.mode = "none";
    r.status = run_status::not_measurable;
    r.note = "no page route yet";
    EXPECT_NE(to_text(r).find("not_measurable: no page route yet"), std::string::npos);
    EXPECT_EQ(to_text(r).find("throughput"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(to_json(r))["status"], "not_measurable");
}

TEST(report, unmeasurable_scenarios_say_so_without_touching_anything) {
    bench_config cfg;
    cfg.scenario = "sustained";
    cfg.target = "cairn-ws";
    auto r = run_scenario(cfg);
    EXPECT_EQ(r.status, run_status::not_measurable);
    EXPECT_FALSE(r.note.empty());
    cfg.target = "cairn-http";  // without --cairnd: a failed report that says what is missing
    r = run_scenario(cfg);
    EXPECT_EQ(r.status, run_status::failed);
    EXPECT_NE(r.note.find("--cairnd"), std::string::npos) << r.note;
    cfg.scenario = "restart";
    cfg.target = "cairn-ws";
    EXPECT_EQ(run_scenario(cfg).status, run_status::not_measurable);
    cfg.scenario = "write";
    cfg.target = "nonsense";
    EXPECT_EQ(run_scenario(cfg).status, run_status::failed);
}

TEST(report, parse_shards) {
    std::string bad;
    auto r = parse_shards("127.0.0.1:33061,10.0.0.2:3306", bad);
    ASSERT_TRUE(r);
    ASSERT_EQ(r.value().size(), 2u);
    EXPECT_EQ(r.value()[1].host, "10.0.0.2");
    EXPECT_EQ(r.value()[1].port, 3306);
    EXPECT_FALSE(parse_shards("127.0.0.1", bad));
    EXPECT_EQ(bad, "127.0.0.1");
    EXPECT_FALSE(parse_shards("a:1,b:x", bad));
    EXPECT_EQ(bad, "b:x");
}

TEST(report, readyz_lag_is_summed_over_shards) {
    EXPECT_EQ(parse_total_lag(R"({"ready":true,"checks":{"shards":[{"lag_ops":3},{"lag_ops":4}]}})"), 7u);
    EXPECT_EQ(parse_total_lag(R"({"ready":true})"), std::nullopt);
    EXPECT_EQ(parse_total_lag("not json"), std::nullopt);
}

TEST(report, direct_upsert_guards_every_column_and_sets_ts_last) {
    const auto rows = direct_rows_of(core::shard_map::equal_ranges(2), 12, 34, 99, 7);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].second.node_id, 12);
    EXPECT_EQ(rows[0].second.direction, 0);
    EXPECT_EQ(rows[1].second.node_id, 34);
    EXPECT_EQ(rows[1].second.direction, 1);
    const auto sql = direct_upsert_sql("g", {rows[0].second, rows[1].second});
    EXPECT_NE(sql.find("('g',12,0,34,0,0,99,7,7,1),('g',34,1,12,0,0,99,7,7,1)"), std::string::npos) << sql;
    EXPECT_NE(sql.find("own_state = IF(VALUES(ts) > ts"), std::string::npos);
    EXPECT_NE(sql.find("state = IF(VALUES(ts) > ts"), std::string::npos);
    EXPECT_GT(sql.rfind("ts = GREATEST(ts, VALUES(ts))"), sql.find("pos_set = IF"));
    EXPECT_LT(direct_ts(5, 1), direct_ts(5, 2));
    EXPECT_LT(direct_ts(5, 4095), direct_ts(6, 0));
}

}  // namespace
}  // namespace cairn::bench

#include "apps/bench/summary.hpp"

namespace cairn::bench {
namespace {

run_report closed_run(std::string scenario, std::string target, std::uint32_t c, double tput) {
    run_report r;
    r.scenario = std::move(scenario);
    r.target = std::move(target);
    r.mode = "closed";
    r.concurrency = c;
    r.duration_s = 1;
    r.ops = static_cast<std::uint64_t>(tput);
    r.latency_ns.record(2'000'000);
    finish_throughput(r);
    return r;
}

TEST(summary, table_puts_the_ratio_on_each_line) {
    run_report page;
    page.scenario = "sustained";
    page.target = "cairn-http";
    page.status = run_status::not_measurable;
    page.note = "no rate search yet";
    const auto t = summary_table({to_json(closed_run("write", "cairn-http", 16, 5000)),
                                  to_json(closed_run("write", "direct", 16, 1000)),
                                  to_json(closed_run("write", "cairn-http", 64, 3000)),
                                  to_json(closed_run("write", "direct", 64, 2000)), to_json(page)});
    EXPECT_NE(t.find("| write | 16 | 5000 ops/s (cairn-http) | 1000 ops/s | **5.00** |"), std::string::npos) << t;
    EXPECT_NE(t.find("| write | 64 | 3000 ops/s (cairn-http) | 2000 ops/s | **1.50** |"), std::string::npos) << t;
    EXPECT_NE(t.find("2.00 / 2.00 / 2.00 / 2.00"), std::string::npos) << t;
    EXPECT_NE(t.find("| sustained | — | not yet measurable: no rate search yet"), std::string::npos) << t;
    EXPECT_LT(t.find("| write |"), t.find("| sustained |"));  // issue 3's order
}

TEST(bench_report, rounds_of_a_line_give_the_median_run_and_the_spread_of_the_ratios) {
    // Three alternating rounds: ratios 2.0, 4.0, 3.0 -> median 3.00, spread 2.00–4.00; the figures
    // shown are those of the median run of each target.
    const auto t = summary_table({to_json(closed_run("write", "cairn-http", 16, 2000)),
                                  to_json(closed_run("write", "direct", 16, 1000)),
                                  to_json(closed_run("write", "cairn-http", 16, 8000)),
                                  to_json(closed_run("write", "direct", 16, 2000)),
                                  to_json(closed_run("write", "cairn-http", 16, 4500)),
                                  to_json(closed_run("write", "direct", 16, 1500))});
    EXPECT_NE(t.find("| write | 16 | 4500 ops/s (cairn-http) | 1500 ops/s | **3.00** (2.00–4.00, 3 rounds) |"),
              std::string::npos)
        << t;
    EXPECT_EQ(t.find("8000 ops/s"), std::string::npos) << t;  // one line per target, not one per round
}

TEST(bench_report, an_open_loop_line_at_one_rate_compares_the_tails) {
    // cairn and direct at the same offered load: the throughputs are equal by construction, so the
    // line's ratio is the p99's, cairn's over direct's.
    auto open_run = [](std::string target, std::uint64_t p99_ns) {
        run_report r = closed_run("write", std::move(target), 64, 2400);
        r.mode = "open";
        r.rate_target = 2400;
        r.latency_ns = {};
        for (int i = 0; i < 99; ++i) r.latency_ns.record(500'000);
        r.latency_ns.record(p99_ns);
        r.latency_ns.record(p99_ns);
        return r;
    };
    const auto t = summary_table({to_json(open_run("cairn-http", 3'000'000)), to_json(open_run("direct", 12'000'000))});
    EXPECT_NE(t.find("| write | 64 @ 2400/s | 2400 ops/s (cairn-http) | 2400 ops/s | **0.25** (p99 cairn / direct) |"),
              std::string::npos)
        << t;
}

TEST(bench_report, rounds_of_the_hoard_line_give_the_round_of_median_p99_ratio) {
    // The hoard line is its own baseline: each round's ratio is in extra. Ratios 3.0, 1.2, 1.5 (the
    // fastest round first) -> the 1.5 round stands for the line (not the round of median throughput),
    // spread 1.20–3.00.
    auto hoard_run = [](double tput, double alone_us, double with_us) {
        run_report r = closed_run("hoard", "cairn-http", 4, tput);
        r.extra["hoarders"] = 10000;
        r.extra["baseline_p99_us"] = alone_us;
        r.extra["hoarded_p99_us"] = with_us;
        r.extra["p99_ratio"] = with_us / alone_us;
        r.extra["evicted_during_run"] = 27000;
        return r;
    };
    const auto t = summary_table({to_json(hoard_run(9000, 500, 1500)), to_json(hoard_run(7000, 1000, 1200)),
                                  to_json(hoard_run(5000, 800, 1200))});
    EXPECT_NE(t.find("| hoard | 4 | p99 1.20 ms beside 10000 hoarders vs 0.80 ms alone (27000 evicted during the run) | — | "
                     "**1.50** (1.20–3.00, 3 rounds; p99 with / alone) |"),
              std::string::npos)
        << t;
    EXPECT_EQ(t.find("**3.00**"), std::string::npos) << t;  // one line, not one per round
}

}  // namespace
}  // namespace cairn::bench
