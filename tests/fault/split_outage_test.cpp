// A split survives a shard outage during its copy (issue 16, docs/operations.md "Splitting a shard"):
// two servers of the test's own — shard 0 on the first, shard 1 and the new shard 2 on the second —
// and a throttled split of shard 0 started while a client writes edges of both halves. Mid-copy the
// second server is stopped (shard 1 and the new shard are gone: the copy fails, writes are journaled),
// then started again: the driver copies again from the start and the split reaches retired, with every
// acknowledged edge of the moved half on the new shard, the lower half on shard 0 and none of the moved
// half left there.
#include <utility>

#include "core/shard_map.hpp"
#include "shards/map_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/own_servers.hpp"
#include "tests/support/split_keys.hpp"
#include "tests/support/test_shards.hpp"

#include <boost/asio/io_context.hpp>

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

const std::string split_outage_db = "cairn_fault_split";
const std::string db_n = "cairn_fault_split_n";

std::string state_of(std::uint16_t port, std::uint64_t* rows_done = nullptr) {
    auto r = http_get(port, "/v1/admin/reshard");
    if (!r || r->status != 200) return "unanswered";
    const auto j = nlohmann::json::parse(r->body);
    if (j["split"].is_null()) return j["history"].empty() ? "none" : j["history"].back()["state"].get<std::string>();
    if (rows_done && !j["split"]["progress"].is_null()) *rows_done = j["split"]["progress"]["rows_done"].get<std::uint64_t>();
    return j["split"]["state"].get<std::string>();
}

// Fresh databases on a test's own two servers: `database` on both (shards 0 and 1), `database_n` on the
// second (the new shard). Empty, or what failed.
std::string fresh_split_databases(const own_servers& servers, const std::string& database, const std::string& database_n) {
    if (!exec_sql(servers.server(0), {"DROP DATABASE IF EXISTS " + database, "CREATE DATABASE " + database})) {
        return "creating " + database + " on the first server failed";
    }
    if (!exec_sql(servers.server(1), {"DROP DATABASE IF EXISTS " + database, "CREATE DATABASE " + database,
                                      "DROP DATABASE IF EXISTS " + database_n, "CREATE DATABASE " + database_n})) {
        return "creating " + database + " and " + database_n + " on the second server failed";
    }
    return {};
}

TEST(split_outage, a_split_whose_new_shard_stops_during_the_copy_copies_again_and_retires_with_every_write) {
    CAIRN_REQUIRE_SHARDS(2u);
    own_servers servers(2, 620);
    ASSERT_TRUE(servers.started()) << "scripts/shards start --count 2 failed";
    const auto a = servers.server(0);
    const auto b = servers.server(1);
    ASSERT_EQ(fresh_split_databases(servers, split_outage_db, db_n), "");

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
    o.database = split_outage_db;
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
    // The copy reads every row of shard 0 (a few hundred here): at 40 rows/s it lasts seconds longer than a
    // server takes to stop on a loaded machine (at 100 rows/s a CI run once saw it end first).
    o.extra_toml = "[limits]\nsplit_copy_rows_per_second_max = 40\n";
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
    EXPECT_EQ(forward_edges(a, split_outage_db), want_lower) << "shard 0 keeps the lower half, and cleaning deleted the moved half there";
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

// A gateway that adopts a split late (after reads moved) sends its new-shard worker back over its
// journal, and only then records the adoption: a restart after the record follows the recorded table
// and would not send it back again. While the new shard's server is down the worker cannot go back, so
// the adoption waits unrecorded (and says so); once the server is back the backlog reaches the new shard.
TEST(split_outage, a_late_adoption_is_recorded_only_once_the_new_shards_worker_went_back) {
    CAIRN_REQUIRE_SHARDS(2u);
    own_servers servers(2, 630);
    ASSERT_TRUE(servers.started()) << "scripts/shards start --count 2 failed";
    const auto s0 = servers.server(0);
    const auto s1 = servers.server(1);
    const std::string dbl = "cairn_fault_late", dbl_n = "cairn_fault_late_n";
    ASSERT_EQ(fresh_split_databases(servers, dbl, dbl_n), "");
    const auto keys = pick_split_keys(20, 20);
    cairnd_options a_opts;
    a_opts.database = dbl;
    a_opts.node_id = 1;
    a_opts.shards = {s0, s1};
    a_opts.journal_dir = make_temp_dir("cairn-late-a");
    {
        cairnd_process first(a_opts);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 20; ++i) ASSERT_TRUE(post_edge(first.port(), keys.lower[i], keys.on_one[i]));
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    a_opts.shards.push_back(s1);
    a_opts.shard_databases = {"", "", dbl_n};
    cairnd_options b_opts = a_opts;
    b_opts.node_id = 2;
    b_opts.journal_dir = make_temp_dir("cairn-late-b");
    // B journals edges of the moved half with shard 0 paused (they wait for the old owner) while its
    // worker of the new shard passes them, and stops.
    edge_set backlog;
    const auto journaled = journal_a_backlog_of_the_moved_half(b_opts, keys, 20, 0, backlog);
    ASSERT_TRUE(journaled.empty()) << journaled;
    cairnd_process a(a_opts);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    boost::asio::io_context ioc;
    shards::mariadb_conn admin(ioc.get_executor(), params_for(s0, dbl));
    ASSERT_TRUE(run_on(ioc, admin.async_connect()));
    ASSERT_TRUE(run_on(ioc, shards::async_propose_split(admin, 2, 0, fmt::format("{}:{}", s1.host, s1.port), 1)));
    // Node 3 (live, adopted, never following) holds the split in switched.
    ASSERT_TRUE(exec_sql(s0,
                         {"INSERT INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) VALUES "
                          "(3, 3, 'test: a gateway that never follows', 0, NOW(6), NOW(6) + INTERVAL 1 HOUR, 0)",
                          "INSERT INTO shard_map_adoptions (version, node_id, from_seq, seen_state, cut_over_seq, adopted_at) VALUES "
                          "(2, 3, 1, 0, 0, NOW(6))"},
                         dbl));
    ASSERT_TRUE(run_on(ioc, shards::async_move_split(admin, 2, shards::split_state::planned, shards::split_state::adopting, 1)));
    const auto state = [&] {
        auto r = query_sql(s0, "SELECT state FROM shard_maps WHERE version = 2", dbl);
        return r && !r.value().empty() ? r.value().front() : std::string();
    };
    ASSERT_TRUE(wait_until([&] { return state() == "switched" || state() == "failed"; }, 60s)) << state() << "\n" << a.log_tail(8000);
    ASSERT_EQ(state(), "switched") << a.log_tail(8000);
    const auto b_adopted = [&] {
        auto r = query_sql(s0, "SELECT COUNT(*) FROM shard_map_adoptions WHERE version = 2 AND node_id = 2", dbl);
        return r && !r.value().empty() && r.value().front() == "1";
    };

    // The new shard's server goes; B starts late: its adoption waits for the worker to go back.
    ASSERT_EQ(servers.stop(1), 0);
    cairnd_process b(b_opts);
    ASSERT_TRUE(b.start()) << b.log_tail();
    ASSERT_TRUE(wait_until([&] { return b.log_tail(1 << 20).find("waiting for shard 2's worker to go back to seq 0") != std::string::npos; },
                           30s))
        << b.log_tail(8000);
    EXPECT_FALSE(b_adopted()) << "the late adoption was recorded before the new shard's worker went back";
    // The server is back: the worker goes back, the adoption is recorded, the backlog reaches the new shard.
    ASSERT_EQ(servers.start(1), 0);
    EXPECT_TRUE(wait_until(b_adopted, 60s)) << b.log_tail(8000);
    const auto missing_on_n = [&] {
        const auto on_n = forward_edges(s1, dbl_n);
        std::size_t missing = 0;
        for (const auto& e : backlog) missing += on_n.contains(e) ? 0 : 1;
        return missing;
    };
    EXPECT_TRUE(wait_until([&] { return missing_on_n() == 0; }, 60s)) << missing_on_n() << " of " << backlog.size() << " missing\n"
                                                                      << b.log_tail(8000);
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

// The map fence end to end: gateway B, down while a split of shard 1 ran to its end, comes back while
// shard 0 is unreachable — its follower cannot read the map in force, and after the 10 s start-up hold
// its workers apply by its journal's older map, which puts its backlog of the moved half on shard 1,
// cleaned: lost to reads. Shard 1's identity row names the split's version, so B applies nothing there
// (and says why) until shard 0 is back and it routes by the map in force: then the backlog reaches the
// new shard, and none of it the old owner.
TEST(split_outage, a_gateway_with_an_older_map_applies_nothing_on_the_shards_a_split_fenced) {
    CAIRN_REQUIRE_SHARDS(2u);
    own_servers servers(2, 640);
    ASSERT_TRUE(servers.started()) << "scripts/shards start --count 2 failed";
    const auto s0 = servers.server(0);
    const auto s1 = servers.server(1);
    const std::string dbf = "cairn_fault_fence", dbf_n = "cairn_fault_fence_n";
    ASSERT_EQ(fresh_split_databases(servers, dbf, dbf_n), "");
    // Ids of shard 1's upper half, which a split of shard 1 moves to shard 2.
    const auto after = core::shard_map::equal_ranges(2).split(1).value();
    std::vector<std::int64_t> moved;
    for (std::int64_t id = 1; moved.size() < 12; ++id) {
        if (after.shard_of_id(id) == 2) moved.push_back(id);
    }
    cairnd_options a_opts;
    a_opts.database = dbf;
    a_opts.node_id = 1;
    a_opts.shards = {s0, s1};
    a_opts.journal_dir = make_temp_dir("cairn-fence-a");
    {
        cairnd_process first(a_opts);
        ASSERT_TRUE(first.start()) << first.log_tail();
        ASSERT_TRUE(post_edge(first.port(), moved[0], moved[1]));
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    a_opts.shards.push_back(s1);
    a_opts.shard_databases = {"", "", dbf_n};
    cairnd_options b_opts = a_opts;
    b_opts.node_id = 2;
    b_opts.journal_dir = make_temp_dir("cairn-fence-b");
    // B journals a backlog of the moved half with shard 1's applying paused, and stops.
    edge_set backlog;
    {
        cairnd_process b(b_opts);
        ASSERT_TRUE(b.start()) << b.log_tail();
        auto paused = http_post(b.port(), "/v1/admin/apply/pause", R"({"shard": 1})");
        ASSERT_TRUE(paused && paused->status == 200) << (paused ? paused->body : "no answer");
        for (std::size_t i = 2; i < moved.size(); ++i) {
            ASSERT_TRUE(post_edge(b.port(), moved[i], moved[i - 1]));
            backlog.insert({moved[i], moved[i - 1]});
        }
        ASSERT_EQ(b.terminate(), 0) << b.log_tail();
    }
    // A splits shard 1 to its end while B is down.
    {
        cairnd_process a(a_opts);
        ASSERT_TRUE(a.start()) << a.log_tail();
        ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
        auto started = http_post(a.port(), "/v1/admin/reshard/split", fmt::format(R"({{"shard": 1, "to": "{}:{}"}})", s1.host, s1.port));
        ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");
        ASSERT_TRUE(wait_until([&] { return state_of(a.port()) == "retired"; }, 90s)) << state_of(a.port()) << a.log_tail(8000);
        ASSERT_EQ(a.terminate(), 0) << a.log_tail();
    }
    const auto on = [&](const std::string& database) {
        const auto rows = forward_edges(s1, database);
        std::size_t n = 0;
        for (const auto& e : backlog) n += rows.contains(e) ? 1 : 0;
        return n;
    };
    ASSERT_EQ(on(dbf), 0u);
    // Shard 0 goes; B comes back: past its start-up hold it routes by its journal's map of two shards.
    ASSERT_EQ(servers.stop(0), 0);
    cairnd_process b(b_opts);
    ASSERT_TRUE(b.start()) << b.log_tail();
    ASSERT_TRUE(wait_until([&] { return b.log_tail(1 << 20).find("shard 0 did not answer for 10 s") != std::string::npos; }, 60s))
        << b.log_tail(8000);
    const auto fenced = [&] {
        return b.log_tail(1 << 20).find("the shard is at map version 2, this gateway routes by version 1") != std::string::npos;
    };
    ASSERT_TRUE(wait_until([&] { return fenced() || on(dbf) != 0; }, 60s)) << b.log_tail(8000);
    EXPECT_EQ(on(dbf), 0u) << "the backlog of the moved half was applied on the old owner by the older map\n" << b.log_tail(8000);
    EXPECT_TRUE(fenced()) << b.log_tail(8000);
    // Shard 0 is back: B follows the map in force and its backlog reaches the new shard.
    ASSERT_EQ(servers.start(0), 0);
    EXPECT_TRUE(wait_until([&] { return on(dbf_n) == backlog.size(); }, 60s))
        << on(dbf_n) << " of " << backlog.size() << " on the new shard\n" << b.log_tail(8000);
    EXPECT_EQ(on(dbf), 0u);
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
}

}  // namespace
}  // namespace cairn::test
