// `cairn reshard` end to end against real MariaDB (docs/operations.md, "Splitting a shard"): a
// deployment of two shards with a third listed ahead of the split. plan refuses what a split must not
// start with (a shard the map does not have, an address the config does not list) and counts the
// moved half; a throttled split shows its copy's progress in status and is cancelled mid-copy; the
// new shard, which now holds rows of the half, is refused until it is emptied; then a split runs to
// retired (followed by status --watch) while a client writes, a counter read over every shard while
// the old owner is cleaned counts each increment once, and verify finds the old owner holds none of
// the half.
#include <utility>

#include "core/shard_map.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/own_servers.hpp"
#include "tests/support/split_keys.hpp"
#include "tests/support/test_shards.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string reshard_cli_db = "cairn_reshard";
const std::string db_n = "cairn_reshard_n";

// A counter whose rows live on their item's shard, read without the item: a read over every shard.
const std::string views_toml = R"([[counters.metrics]]
name = "views"
shard_on = "item"
dimensions = [{ name = "site", type = "int" }, { name = "item", type = "int" }]
tables = [{ name = "views_by_site", granularity = "day", key = ["site", "time", "item"] }]
)";

std::size_t count_rows(const shard_endpoint& s, const std::string& database, const std::string& sql) {
    auto r = query_sql(s, sql, database);
    return r && !r.value().empty() ? std::stoull(r.value().front()) : 0;
}

TEST(reshard, the_cli_plans_refuses_cancels_and_splits_a_shard_under_writes) {
    CAIRN_REQUIRE_SHARDS(2u);
    fresh_database(reshard_cli_db);
    fresh_database(db_n);
    const auto servers = test_shards();
    const auto keys = pick_split_keys(30, 40);
    const auto& three = keys.three;
    const auto& upper = keys.upper;
    const auto& lower = keys.lower;
    const auto& on_one = keys.on_one;
    std::set<std::pair<std::int64_t, std::int64_t>> acked;
    cairnd_options o;
    o.database = reshard_cli_db;
    o.shards = {servers[0], servers[1]};
    o.journal_dir = make_temp_dir("cairn-reshard");
    o.extra_toml = views_toml;
    std::int64_t views = 0;  // every view counted, of both halves
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 30; ++i) {
            for (const auto item : {upper[i], lower[i]}) {
                const auto delta = static_cast<std::int64_t>(i + 1);
                auto w = http_post(first.port(), "/v1/counters/views",
                                   fmt::format(R"({{"dimensions": {{"site": 1, "item": {}}}, "time": "2026-11-20T10:00:00Z", "delta": {}}})",
                                               item, delta));
                ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
                views += delta;
            }
        }
        for (std::size_t i = 0; i < 30; ++i) {
            ASSERT_TRUE(post_edge(first.port(), upper[i], on_one[i]));
            ASSERT_TRUE(post_edge(first.port(), lower[i], on_one[i]));
            acked.insert({upper[i], on_one[i]});
            acked.insert({lower[i], on_one[i]});
        }
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    const std::string to = fmt::format("{}:{}", servers[1].host, servers[1].port);
    o.shards.push_back(servers[1]);
    o.shard_databases = {"", "", db_n};
    // Slow enough (a few rows a second) that the copy is still running when it is cancelled.
    o.extra_toml = views_toml + "[limits]\nsplit_copy_rows_per_second_max = 5\n";
    auto gw = std::make_unique<cairnd_process>(o);
    ASSERT_TRUE(gw->start()) << gw->log_tail();
    auto url = [&] { return std::map<std::string, std::string>{{"CAIRN_URL", fmt::format("http://127.0.0.1:{}", gw->port())}}; };

    auto st = run_cairn({"reshard", "status", "--json"}, url());
    ASSERT_EQ(st.code, 0) << st.err;
    EXPECT_EQ(st.json()["map"]["shards"], 2);
    EXPECT_TRUE(st.json()["split"].is_null());
    auto text = run_cairn({"reshard", "status"}, url());
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("no split under way"), std::string::npos) << text.out;

    // What a split must not start with.
    auto bad_shard = run_cairn({"reshard", "plan", "--shard", "2", "--to", to}, url());
    EXPECT_EQ(bad_shard.code, 1);
    EXPECT_NE(bad_shard.err.find("must be a shard of the map in force (0..1)"), std::string::npos) << bad_shard.err;
    auto bad_to = run_cairn({"reshard", "plan", "--shard", "0", "--to", "10.9.9.9:3306"}, url());
    EXPECT_EQ(bad_to.code, 1);
    EXPECT_NE(bad_to.err.find(fmt::format("lists shard 2 at {}, not 10.9.9.9:3306", to)), std::string::npos) << bad_to.err;
    auto no_yes = run_cairn({"reshard", "split", "--shard", "0", "--to", to}, url());
    EXPECT_EQ(no_yes.code, 4) << "no terminal to confirm on: " << no_yes.err;

    // The plan counts the moved half: the forward edges of the 30 upper sources live on shard 0.
    ASSERT_TRUE(wait_shard_up(gw->port(), 2)) << gw->log_tail(8000);
    auto plan = run_cairn({"reshard", "plan", "--shard", "0", "--to", to, "--json"}, url());
    ASSERT_EQ(plan.code, 0) << plan.err;
    const json p = plan.json();
    EXPECT_EQ(p["new_shard"], 2);
    bool edges_counted = false;
    for (const auto& t : p["tables"]) {
        if (t["table"] == "edges") {
            EXPECT_EQ(t["rows"], 30) << p.dump();
            edges_counted = true;
        }
    }
    EXPECT_TRUE(edges_counted) << p.dump();
    EXPECT_GE(p["rows"].get<std::uint64_t>(), 30u);
    EXPECT_EQ(p["after"].size(), 3u);
    ASSERT_EQ(p["gateways"].size(), 1u);

    // A throttled split: its copy's progress shows in status; it is cancelled while copying.
    ASSERT_TRUE(wait_shard_up(gw->port(), 2)) << gw->log_tail(8000);
    auto started = run_cairn({"reshard", "split", "--shard", "0", "--to", to, "--yes", "--json"}, url());
    ASSERT_EQ(started.code, 0) << started.err;
    EXPECT_EQ(started.json()["split"]["state"], "adopting");
    auto again = run_cairn({"reshard", "split", "--shard", "1", "--to", to, "--yes"}, url());
    EXPECT_EQ(again.code, 1);
    EXPECT_NE(again.err.find("one split at a time"), std::string::npos) << again.err;
    json progress;
    const bool copying = wait_until(
        [&] {
            auto s = run_cairn({"reshard", "status", "--json"}, url());
            if (s.code != 0) return false;
            const json j = s.json();
            if (j["split"].is_null() || j["split"]["state"] != "copying" || j["split"]["progress"].is_null()) return false;
            progress = j["split"]["progress"];
            return progress["rows_done"].get<std::uint64_t>() >= 1;
        },
        60s);
    ASSERT_TRUE(copying) << progress.dump() << "\n" << gw->log_tail(8000);
    EXPECT_EQ(progress["driver"], 1);
    EXPECT_GE(progress["rows_read"].get<std::uint64_t>(), progress["rows_done"].get<std::uint64_t>());
    EXPECT_NE(progress["note"].get<std::string>().find("copying shard 0's hashes"), std::string::npos) << progress.dump();
    auto shown = run_cairn({"reshard", "status"}, url());
    ASSERT_EQ(shown.code, 0) << shown.err;
    EXPECT_NE(shown.out.find("state: copying"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("rows read of about"), std::string::npos) << shown.out;
    auto verify_early = run_cairn({"reshard", "verify"}, url());
    EXPECT_EQ(verify_early.code, 1) << "nothing to compare before the copy ran: " << verify_early.err;
    auto cancelled = run_cairn({"reshard", "cancel", "--yes"}, url());
    ASSERT_EQ(cancelled.code, 0) << cancelled.err;
    EXPECT_NE(cancelled.out.find("copying -> failed"), std::string::npos) << cancelled.out;
    auto after_cancel = run_cairn({"reshard", "status", "--json"}, url());
    ASSERT_EQ(after_cancel.code, 0);
    EXPECT_TRUE(after_cancel.json()["split"].is_null());
    EXPECT_EQ(after_cancel.json()["history"].back()["state"], "failed");
    // The driver stops the cancelled split's copy at its next progress tick, not at the copy's end.
    EXPECT_TRUE(wait_until([&] { return gw->log_tail(1 << 20).find("the copy stopped: the split left copying") != std::string::npos; },
                           15s))
        << gw->log_tail(8000);
    EXPECT_EQ(gw->log_tail(1 << 20).find("rows read) in this run"), std::string::npos) << "the cancelled copy ran to its end";

    // The new shard holds rows of the half now (the cancelled copy's): refused until it is emptied.
    ASSERT_GE(count_rows(servers[1], db_n, "SELECT COUNT(*) FROM edges"), 1u);
    auto dirty = run_cairn({"reshard", "plan", "--shard", "0", "--to", to}, url());
    EXPECT_EQ(dirty.code, 1);
    EXPECT_NE(dirty.err.find("already holds"), std::string::npos) << dirty.err;
    auto dirty_split = run_cairn({"reshard", "split", "--shard", "0", "--to", to, "--yes"}, url());
    EXPECT_EQ(dirty_split.code, 1) << "split checks the new shard too (without counting the old owner's half)";
    EXPECT_NE(dirty_split.err.find("already holds"), std::string::npos) << dirty_split.err;

    // Emptied, throttled so that cleaning takes a few seconds: the split runs to the end under writes.
    ASSERT_EQ(gw->terminate(), 0) << gw->log_tail();
    fresh_database(db_n);
    o.extra_toml = views_toml + "[limits]\nsplit_copy_rows_per_second_max = 60\n";
    gw = std::make_unique<cairnd_process>(o);
    ASSERT_TRUE(gw->start()) << gw->log_tail();
    const auto total_views = [&]() -> std::int64_t {
        auto r = http_get(gw->port(), "/v1/counters/views/total?site=1&from=2026-11-20&to=2026-11-21");
        if (!r || r->status != 200) return -1;
        return nlohmann::json::parse(r->body)["total"].get<std::int64_t>();
    };
    ASSERT_EQ(total_views(), views);
    std::atomic<bool> writing{true};
    std::mutex mu;
    std::string writer_failure;
    std::thread writer([&] {
        for (std::size_t k = 0; writing; ++k) {
            const std::int64_t s = (k % 2 == 0 ? upper : lower)[k % 30];
            const std::int64_t d = on_one[k % on_one.size()] + 1'000'000;
            if (!post_edge(gw->port(), s, d)) {
                std::lock_guard lock(mu);
                writer_failure = fmt::format("a write of {} -> {} failed", s, d);
                return;
            }
            {
                std::lock_guard lock(mu);
                acked.insert({s, d});
            }
            // A steady trickle (the load's shape, not a wait): the throttled copy and clean read
            // shard 0's tables whole, so a flood of writes would make them take minutes.
            std::this_thread::sleep_for(50ms);
        }
    });
    // A failed assertion below must not leave the writer running (its thread would end the process).
    const std::unique_ptr<void, std::function<void(void*)>> stop_writer(&writing, [&](void*) {
        writing = false;
        if (writer.joinable()) writer.join();
    });
    ASSERT_TRUE(wait_shard_up(gw->port(), 2)) << gw->log_tail(8000);
    auto split = run_cairn({"reshard", "split", "--shard", "0", "--to", to, "--yes"}, url());
    ASSERT_EQ(split.code, 0) << split.out << split.err << gw->log_tail(8000);
    EXPECT_NE(split.out.find("split started: map version 3"), std::string::npos) << split.out;
    // While shard 0 is cleaned (it still holds the moved half's edges), a counter read over every
    // shard counts each view once: shard 0's sums of the half went when every gateway read from N.
    std::string state;
    const bool cleaning = wait_until(
        [&] {
            auto r = http_get(gw->port(), "/v1/admin/reshard");
            if (!r || r->status != 200) return false;
            const auto j = nlohmann::json::parse(r->body);
            state = j["split"].is_null() ? std::string("none") : j["split"]["state"].get<std::string>();
            return state == "cleaning" || state == "none";
        },
        90s);
    ASSERT_TRUE(cleaning) << state << gw->log_tail(8000);
    EXPECT_EQ(state, "cleaning") << "the clean ended before it was seen: make it slower";
    EXPECT_EQ(total_views(), views) << "counter sums of the moved half counted on both shards";
    auto watched = run_cairn({"reshard", "status", "--watch"}, url());
    writing = false;
    if (writer.joinable()) writer.join();
    ASSERT_EQ(watched.code, 0) << watched.out << watched.err << gw->log_tail(8000);
    EXPECT_NE(watched.err.find("map version 3: retired"), std::string::npos) << watched.err;
    const auto log = gw->log_tail(200000);
    const char* states[] = {"adopting", "copying", "catching_up", "verifying", "switched", "done", "cleaning", "retired"};
    for (std::size_t i = 1; i < std::size(states); ++i) {
        const auto move = fmt::format("map version 3 (shard 0 to shard 2) {} -> {}", states[i - 1], states[i]);
        EXPECT_NE(log.find(move), std::string::npos) << move;
    }
    EXPECT_TRUE(writer_failure.empty()) << writer_failure;
    ASSERT_TRUE(wait_applied(gw->port(), 30s));
    EXPECT_EQ(total_views(), views);

    auto done = run_cairn({"reshard", "status", "--json"}, url());
    ASSERT_EQ(done.code, 0);
    EXPECT_EQ(done.json()["map"]["version"], 3);
    EXPECT_EQ(done.json()["map"]["shards"], 3);
    auto verified = run_cairn({"reshard", "verify", "--json"}, url());
    ASSERT_EQ(verified.code, 0) << verified.out << verified.err;
    EXPECT_TRUE(verified.json()["clean"].get<bool>());
    EXPECT_EQ(verified.json()["state"], "retired");
    // Every acknowledged edge of the moved half is on the new shard, none on the old owner.
    std::size_t want_upper = 0;
    for (const auto& e : acked) want_upper += three.shard_of_id(e.first) == 2 ? 1 : 0;
    EXPECT_EQ(count_rows(servers[1], db_n, "SELECT COUNT(*) FROM edges WHERE graph = 'g' AND direction = 0"), want_upper);
    EXPECT_EQ(count_rows(servers[0], reshard_cli_db, "SELECT COUNT(*) FROM edges WHERE graph = 'g' AND direction = 0"), acked.size() - want_upper);
    EXPECT_EQ(gw->terminate(), 0) << gw->log_tail();
}

// Every gateway must list the new shard at the address the split names: one that lists it elsewhere
// would write the moved half's rows there. It refuses to adopt, says why, and the split waits in
// adopting (status shows it live and not adopted) until it is cancelled.
TEST(reshard, a_gateway_that_lists_the_new_shard_elsewhere_does_not_adopt) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db2 = "cairn_reshard_two";
    const std::string db2_n = "cairn_reshard_two_n";
    fresh_database(db2);
    fresh_database(db2_n);
    const auto servers = test_shards();
    cairnd_options oa;
    oa.database = db2;
    oa.shards = {servers[0], servers[1]};
    oa.journal_dir = make_temp_dir("cairn-reshard-two");
    {
        cairnd_process first(oa);  // the deployment starts with two shards
        ASSERT_TRUE(first.start()) << first.log_tail();
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    oa.shards.push_back(servers[1]);
    oa.shard_databases = {"", "", db2_n};
    cairnd_process a(oa);
    ASSERT_TRUE(a.start()) << a.log_tail();
    cairnd_options ob = oa;
    ob.node_id = 2;
    ob.journal_dir.clear();
    ob.shards[2].host = "127.0.0.2";  // the same port on another address: not the server the split names
    cairnd_process b(ob);
    ASSERT_TRUE(b.start()) << b.log_tail();
    const std::string to = fmt::format("{}:{}", servers[1].host, servers[1].port);
    const std::map<std::string, std::string> env{{"CAIRN_URL", fmt::format("http://127.0.0.1:{}", a.port())}};
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    auto started = run_cairn({"reshard", "split", "--shard", "0", "--to", to, "--yes"}, env);
    ASSERT_EQ(started.code, 0) << started.err;
    ASSERT_TRUE(wait_until([&] { return b.log_tail(100000).find("lists shard 2 at 127.0.0.2") != std::string::npos; }, 30s))
        << b.log_tail(8000);
    json gateways;
    ASSERT_TRUE(wait_until(
        [&] {
            auto st = run_cairn({"reshard", "status", "--json"}, env);
            if (st.code != 0 || st.json()["split"].is_null()) return false;
            gateways = st.json()["split"]["gateways"];
            return gateways.size() == 2 && !gateways[0]["adopted_from_seq"].is_null();
        },
        30s))
        << gateways.dump();
    EXPECT_EQ(gateways[1]["node_id"], 2);
    EXPECT_TRUE(gateways[1]["live"].get<bool>());
    EXPECT_TRUE(gateways[1]["adopted_from_seq"].is_null()) << "a gateway that lists the new shard elsewhere adopted the split";
    auto st = run_cairn({"reshard", "status", "--json"}, env);
    ASSERT_EQ(st.code, 0);
    EXPECT_EQ(st.json()["split"]["state"], "adopting");
    EXPECT_NE(st.json()["split"]["progress"]["note"].get<std::string>().find("waiting for every live gateway to adopt"),
              std::string::npos)
        << st.out;
    auto cancelled = run_cairn({"reshard", "cancel", "--yes"}, env);
    EXPECT_EQ(cancelled.code, 0) << cancelled.err;
    EXPECT_NE(cancelled.out.find("adopting -> failed"), std::string::npos) << cancelled.out;
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

// The error-queue twins (docs/resharding.md): an edge of the moved half that the old owner refuses
// (a trigger) waits in its error queue from before the split. Once the copy runs it gets a twin on
// the new shard, which applies it when released; the old owner applies it when the trigger goes,
// after the copy read its rows. The split verifies, switches and retires, and the edge is read from
// the new shard. Without the twin the new shard never gets the edge: the diff stays dirty and the
// split fails.
TEST(reshard, an_edge_waiting_in_the_old_owners_error_queue_reaches_the_new_shard) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db3 = "cairn_reshard_twins";
    const std::string db3_n = "cairn_reshard_twins_n";
    fresh_database(db3);
    fresh_database(db3_n);
    const auto servers = test_shards();
    const auto keys = pick_split_keys(10, 10);
    const auto& upper = keys.upper;
    const auto& lower = keys.lower;
    const auto& on_one = keys.on_one;
    cairnd_options o;
    o.database = db3;
    o.shards = {servers[0], servers[1]};
    o.journal_dir = make_temp_dir("cairn-reshard-twins");
    o.retry_attempts_max = 1000;
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 10; ++i) {
            ASSERT_TRUE(post_edge(first.port(), upper[i], on_one[i]));
            ASSERT_TRUE(post_edge(first.port(), lower[i], on_one[i]));
        }
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    const std::int64_t held = upper[0];
    const std::int64_t held_to = on_one[9] + 500;
    ASSERT_TRUE(exec_sql(servers[0], {fmt::format("CREATE TRIGGER poison BEFORE INSERT ON edges FOR EACH ROW "
                                                  "IF NEW.node_id = {} AND NEW.other_id = {} THEN "
                                                  "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'held back'; END IF",
                                                  held, held_to)},
                         db3));
    o.shards.push_back(servers[1]);
    o.shard_databases = {"", "", db3_n};
    o.extra_toml = "[limits]\nsplit_copy_rows_per_second_max = 50\n";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ASSERT_TRUE(post_edge(gw.port(), held, held_to));
    ASSERT_TRUE(wait_until(
        [&] {
            auto r = http_get(gw.port(), "/v1/admin/errors?shard=0");
            return r && r->status == 200 && nlohmann::json::parse(r->body)["errors"].size() == 1;
        },
        30s))
        << gw.log_tail(8000);
    const std::string to = fmt::format("{}:{}", servers[1].host, servers[1].port);
    ASSERT_TRUE(wait_shard_up(gw.port(), 2)) << gw.log_tail(8000);
    auto started = http_post(gw.port(), "/v1/admin/reshard/split", fmt::format(R"({{"shard": 0, "to": "{}"}})", to));
    ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");
    // After the copy has read shard 0, the old owner may apply the edge.
    const auto state = [&] {
        auto r = http_get(gw.port(), "/v1/admin/reshard");
        if (!r || r->status != 200) return std::string("unanswered");
        const auto j = nlohmann::json::parse(r->body);
        return j["split"].is_null() ? j["history"].back()["state"].get<std::string>() : j["split"]["state"].get<std::string>();
    };
    ASSERT_TRUE(wait_until(
        [&] {
            const auto st = state();
            return st != "adopting" && st != "copying" && st != "unanswered";
        },
        60s))
        << gw.log_tail(8000);
    ASSERT_TRUE(exec_sql(servers[0], {"DROP TRIGGER poison"}, db3));
    ASSERT_TRUE(wait_until(
        [&] {
            const auto st = state();
            return st == "retired" || st == "failed";
        },
        150s))
        << state() << gw.log_tail(8000);
    ASSERT_EQ(state(), "retired") << gw.log_tail(8000);
    EXPECT_NE(gw.log_tail(400000).find("twinned to shard 2"), std::string::npos);
    auto read = http_get(gw.port(), fmt::format("/v1/graphs/g/edges/{}/{}", held, held_to));
    ASSERT_TRUE(read);
    EXPECT_EQ(read->status, 200) << "the held edge, read from the new shard: " << read->body;
    EXPECT_EQ(count_rows(servers[1], db3_n,
                         fmt::format("SELECT COUNT(*) FROM edges WHERE node_id = {} AND other_id = {} AND direction = 0", held, held_to)),
              1u);
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

// A gateway that joins a split after its adoption phase (here: started while the copy runs) may have
// applied ops on the old owner under the old map after the copy read them: before reads move, it fails
// the split, which can be started again.
TEST(reshard, a_gateway_that_joins_during_the_copy_fails_the_split) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db4 = "cairn_reshard_late";
    const std::string db4_n = "cairn_reshard_late_n";
    const auto servers = test_shards();
    const auto keys = pick_split_keys(20, 20);
    cairnd_options oa;
    oa.database = db4;
    oa.shards = {servers[0], servers[1]};
    oa.journal_dir = make_temp_dir("cairn-reshard-late");
    const auto deployed = deploy_edges_then_list_a_third_shard(oa, keys, 20, db4_n);
    ASSERT_TRUE(deployed.empty()) << deployed;
    oa.extra_toml = "[limits]\nsplit_copy_rows_per_second_max = 5\n";  // the copy lasts while the second one starts
    cairnd_process a(oa);
    ASSERT_TRUE(a.start()) << a.log_tail();
    const std::string to = fmt::format("{}:{}", servers[1].host, servers[1].port);
    const std::map<std::string, std::string> env{{"CAIRN_URL", fmt::format("http://127.0.0.1:{}", a.port())}};
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    ASSERT_EQ(run_cairn({"reshard", "split", "--shard", "0", "--to", to, "--yes"}, env).code, 0);
    const auto state = [&] {
        auto st = run_cairn({"reshard", "status", "--json"}, env);
        if (st.code != 0) return std::string("unanswered");
        const auto j = st.json();
        return j["split"].is_null() ? j["history"].back()["state"].get<std::string>() : j["split"]["state"].get<std::string>();
    };
    ASSERT_TRUE(wait_until([&] { return state() == "copying"; }, 60s)) << state() << a.log_tail(8000);
    cairnd_options ob = oa;
    ob.node_id = 2;
    ob.journal_dir.clear();
    cairnd_process b(ob);
    ASSERT_TRUE(b.start()) << b.log_tail();
    ASSERT_TRUE(wait_until([&] { return state() == "failed"; }, 30s)) << state() << b.log_tail(8000);
    EXPECT_NE(b.log_tail(100000).find("joined map version 2 while it was copying"), std::string::npos) << b.log_tail(8000);
    // Both route by the map in force again: a write of the half that was to move lands on shard 0.
    ASSERT_TRUE(post_edge(b.port(), keys.upper[0], keys.on_one[0] + 777));
    ASSERT_TRUE(wait_applied(b.port(), 30s));
    EXPECT_EQ(count_rows(servers[0], db4,
                         fmt::format("SELECT COUNT(*) FROM edges WHERE node_id = {} AND other_id = {}", keys.upper[0],
                                     keys.on_one[0] + 777)),
              1u);
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

}  // namespace
}  // namespace cairn::test
