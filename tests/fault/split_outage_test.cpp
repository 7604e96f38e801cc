// A split survives a shard outage during its copy (issue 16, docs/operations.md "Splitting a shard"):
// two servers of the test's own — shard 0 on the first, shard 1 and the new shard 2 on the second —
// and a throttled split of shard 0 started while a client writes edges of both halves. Mid-copy the
// second server is stopped (shard 1 and the new shard are gone: the copy fails, writes are journaled),
// then started again: the driver copies again from the start and the split reaches retired, with every
// acknowledged edge of the moved half on the new shard, the lower half on shard 0 and none of the moved
// half left there.
#include <utility>

#include "core/shard_map.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/own_servers.hpp"
#include "tests/support/split_keys.hpp"
#include "tests/support/test_shards.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

const std::string db = "cairn_fault_split";
const std::string db_n = "cairn_fault_split_n";

std::string state_of(std::uint16_t port, std::uint64_t* rows_done = nullptr) {
    auto r = http_get(port, "/v1/admin/reshard");
    if (!r || r->status != 200) return "unanswered";
    const auto j = nlohmann::json::parse(r->body);
    if (j["split"].is_null()) return j["history"].empty() ? "none" : j["history"].back()["state"].get<std::string>();
    if (rows_done && !j["split"]["progress"].is_null()) *rows_done = j["split"]["progress"]["rows_done"].get<std::uint64_t>();
    return j["split"]["state"].get<std::string>();
}

TEST(split_outage, a_split_whose_new_shard_stops_during_the_copy_copies_again_and_retires_with_every_write) {
    CAIRN_REQUIRE_SHARDS(2u);
    own_servers servers(2, 620);
    ASSERT_TRUE(servers.started()) << "scripts/shards start --count 2 failed";
    const auto a = servers.server(0);
    const auto b = servers.server(1);
    ASSERT_TRUE(exec_sql(a, {"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db}).has_value());
    ASSERT_TRUE(exec_sql(b, {"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db, "DROP DATABASE IF EXISTS " + db_n,
                             "CREATE DATABASE " + db_n})
                    .has_value());

    const auto keys = pick_split_keys(20, 40);
    const auto& three = keys.three;
    const auto& upper = keys.upper;
    const auto& lower = keys.lower;
    const auto& on_one = keys.on_one;
    std::mutex mu;
    edge_set acked;
    const auto post_edge = [&](std::uint16_t port, std::int64_t s, std::int64_t d) {
        auto w = http_post(port, "/v1/graphs/g/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", s, d));
        if (!w || w->status != 202) return false;
        std::lock_guard lock(mu);
        acked.insert({s, d});
        return true;
    };

    cairnd_options o;
    o.database = db;
    o.shards = {a, b};
    o.journal_dir = make_temp_dir("cairn-split-outage");
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 20; ++i) {
            for (const auto s : {upper[i], lower[i]}) {
                for (std::size_t k = 0; k < 4; ++k) ASSERT_TRUE(post_edge(first.port(), s, on_one[(i + k) % on_one.size()]));
            }
        }
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    o.shards.push_back(b);
    o.shard_databases = {"", "", db_n};
    o.extra_toml = "[limits]\nsplit_copy_rows_per_second_max = 100\n";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();

    std::atomic<bool> writing{true};
    std::atomic<int> refused{0};
    std::thread writer([&] {
        for (std::size_t k = 0; writing; ++k) {
            const std::int64_t s = (k % 2 == 0 ? upper : lower)[k % 20];
            if (!post_edge(gw.port(), s, on_one[k % on_one.size()] + 1'000'000 + static_cast<std::int64_t>(k))) ++refused;
            std::this_thread::sleep_for(50ms);  // a steady trickle: the load's shape, not a wait
        }
    });
    ASSERT_TRUE(wait_shard_up(gw.port(), 2)) << gw.log_tail(8000);
    auto started = http_post(gw.port(), "/v1/admin/reshard/split", fmt::format(R"({{"shard": 0, "to": "{}:{}"}})", b.host, b.port));
    ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");

    // Mid-copy, the server of shard 1 and the new shard goes away.
    std::uint64_t done_rows = 0;
    ASSERT_TRUE(wait_until([&] { return state_of(gw.port(), &done_rows) == "copying" && done_rows >= 1; }, 60s))
        << state_of(gw.port()) << gw.log_tail(8000);
    ASSERT_EQ(servers.stop(1), 0);
    ASSERT_TRUE(wait_until([&] { return gw.log_tail(200000).find("driving the split failed") != std::string::npos; }, 60s))
        << gw.log_tail(8000);
    EXPECT_EQ(state_of(gw.port()), "copying") << "the split waits in its state while a shard is down";
    ASSERT_EQ(servers.start(1), 0);

    const bool ended = wait_until(
        [&] {
            const auto st = state_of(gw.port());
            return st == "retired" || st == "failed";
        },
        180s);
    writing = false;
    writer.join();
    ASSERT_TRUE(ended) << state_of(gw.port()) << gw.log_tail(8000);
    ASSERT_EQ(state_of(gw.port()), "retired") << gw.log_tail(8000);
    EXPECT_EQ(refused.load(), 0) << "writes are acknowledged while a shard is down";
    ASSERT_TRUE(wait_applied(gw.port(), 60s)) << gw.log_tail(8000);
    const auto log = gw.log_tail(400000);
    EXPECT_NE(log.find("copying -> catching_up"), std::string::npos);

    edge_set want_upper, want_lower;
    {
        std::lock_guard lock(mu);
        for (const auto& e : acked) (three.shard_of_id(e.first) == 2 ? want_upper : want_lower).insert(e);
    }
    ASSERT_GT(want_upper.size(), 80u) << "writes of the moved half during the split";
    EXPECT_EQ(forward_edges(b, db_n), want_upper) << "the new shard holds exactly the moved half";
    EXPECT_EQ(forward_edges(a, db), want_lower) << "shard 0 keeps the lower half, and cleaning deleted the moved half there";
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

}  // namespace
}  // namespace cairn::test
