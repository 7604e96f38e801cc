// The chart data of scripts/bench: cairn over HTTP, over WebSocket and direct each keep their own
// column, so that a chart shows all three side by side.
#include "apps/bench/summary.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cairn::bench {
namespace {

namespace fs = std::filesystem;

std::string report(const std::string& target, int concurrency, double throughput, double p99_us) {
    nlohmann::json j{{"scenario", "get"},     {"mode", "closed"},         {"target", target},
                     {"status", "ok"},        {"concurrency", concurrency}, {"throughput", throughput},
                     {"latency", {{"count", 100}, {"p50_us", 100.0}, {"p99_us", p99_us}, {"p999_us", p99_us}, {"max_us", p99_us}}}};
    return j.dump();
}

TEST(bench_summary, chart_data_keeps_http_websocket_and_direct_apart) {
    char tmpl[] = "/tmp/cairn-summary-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    fs::create_directories(dir + "/raw");
    auto put = [&](const std::string& name, const std::string& text) { std::ofstream(dir + "/raw/" + name) << text; };
    put("1.json", report("cairn-http", 16, 1000, 2000));
    put("2.json", report("cairn-ws", 16, 1500, 3000));
    put("3.json", report("direct", 16, 800, 4000));
    put("4.json", report("cairn-http", 64, 2000, 5000));

    const auto out = write_summary(dir + "/raw", dir + "/out", "day");
    ASSERT_TRUE(out.error.empty()) << out.error;
    std::ifstream in(dir + "/out/day-get.dat");
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(),
              "# concurrency http_throughput ws_throughput direct_throughput http_p99_ms ws_p99_ms direct_p99_ms\n"
              "16 1000.0 1500.0 800.0 2.000 3.000 4.000\n"
              "64 2000.0 0.0 0.0 5.000 0.000 0.000\n");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace cairn::bench
