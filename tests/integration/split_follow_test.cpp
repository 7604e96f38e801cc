// Online resharding end to end against real MariaDB (docs/resharding.md): a deployment of two shards,
// a third added to the config (its own database on the second server), a split of shard 0 to it
// proposed and started on shard 0 (shards/map_store.hpp) while a client writes edges of both halves.
// The gateway's split follower adopts it (its seq on shard 0) and its driver moves it through copying,
// catching up, verifying, switched, done and cleaning to retired. Then the new shard holds every edge of
// the moved half, written before the split (the copy) or during it (the journal), reads of that half are
// served there with exact counts, the lower half stayed on shard 0 and the moved half is gone from it,
// and from the cut-over the old owner got no more writes of the moved half. A restart keeps the map in
// force.
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
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace cairn::test {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using shards::split_state;

const std::string split_follow_db = "cairn_split";
const std::string split_follow_db_n = "cairn_split_n";


std::string split_state_of(const shard_endpoint& s, const std::string& database = split_follow_db) {
    auto r = query_sql(s, "SELECT state FROM shard_maps WHERE version = 2", database);
    return r && !r.value().empty() ? r.value().front() : std::string();
}

TEST(split, a_shard_splits_under_writes_and_its_upper_half_moves_whole) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto servers = test_shards();

    // Sources in the upper half of shard 0's range (R, the half that moves) and in its lower half;
    // destinations on shard 1, so that the backward rows stay out of the way.
    const auto keys = pick_split_keys(8, 40);
    const auto& three = keys.three;
    const auto& upper = keys.upper;
    const auto& lower = keys.lower;
    const auto& on_one = keys.on_one;

    cairnd_options o;
    o.database = split_follow_db;
    o.shards = {servers[0], servers[1]};
    o.journal_dir = make_temp_dir("cairn-split");
    edge_set acked;  // every edge acknowledged
    // The third shard joins the config; keys still route by the two the deployment started with.
    const auto deployed = deploy_edges_then_list_a_third_shard(o, keys, 8, split_follow_db_n, &acked);
    ASSERT_TRUE(deployed.empty()) << deployed;
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();

    // A client writes edges of both halves all through the split.
    std::atomic<bool> writing{true};
    std::mutex mu;
    std::string writer_failure;
    std::thread writer([&] {
        for (std::size_t k = 8; writing; ++k) {
            const std::int64_t s = (k % 2 == 0 ? upper : lower)[k % 8];
            const std::int64_t d = on_one[k % on_one.size()];
            if (!post_edge(gw.port(), s, d)) {
                std::lock_guard lock(mu);
                writer_failure = fmt::format("a write of {} -> {} failed", s, d);
                return;
            }
            std::lock_guard lock(mu);
            acked.insert({s, d});
        }
    });

    asio::io_context ioc;
    shards::mariadb_conn admin(ioc.get_executor(), params_for(servers[0], split_follow_db));
    ASSERT_TRUE(run_on(ioc, admin.async_connect()));
    auto proposed = run_on(ioc, shards::async_propose_split(admin, 2, 0, fmt::format("{}:{}", servers[1].host, servers[1].port), 1));
    ASSERT_TRUE(proposed.has_value()) << proposed.error().message();
    ASSERT_EQ(proposed.value().map, three);
    ASSERT_TRUE(run_on(ioc, shards::async_move_split(admin, 2, split_state::planned, split_state::adopting, 1)));

    // The gateway adopts, copies, catches up, verifies, switches, cuts over, cleans.
    const bool ended = wait_until(
        [&] {
            const auto st = split_state_of(servers[0]);
            return st == "retired" || st == "failed";
        },
        90s);
    writing = false;
    writer.join();
    ASSERT_TRUE(ended) << "the split is " << split_state_of(servers[0]) << "; " << gw.log_tail(8000);
    ASSERT_EQ(split_state_of(servers[0]), "retired") << gw.log_tail(8000);
    ASSERT_TRUE(writer_failure.empty()) << writer_failure;
    auto adopted = query_sql(servers[0], "SELECT from_seq FROM shard_map_adoptions WHERE version = 2 AND node_id = 1", split_follow_db);
    ASSERT_TRUE(adopted && adopted.value().size() == 1) << "the gateway's adoption on shard 0";
    EXPECT_GT(std::stoull(adopted.value().front()), 1u);
    // After the cut-over the old owner takes no more writes of the moved half.
    const std::int64_t late_source = upper[0];
    const std::int64_t late_dst = on_one.back() + 1'000'003;  // an edge nobody wrote before
    ASSERT_TRUE(post_edge(gw.port(), late_source, late_dst));
    acked.insert({late_source, late_dst});
    ASSERT_TRUE(wait_applied(gw.port(), 30s));

    edge_set want_upper, want_lower;
    for (const auto& e : acked) (three.shard_of_id(e.first) == 2 ? want_upper : want_lower).insert(e);
    ASSERT_GT(want_upper.size(), 8u) << "writes of the moved half during the split";
    const auto on_n = forward_edges(servers[1], split_follow_db_n);
    EXPECT_EQ(on_n, want_upper) << "the new shard holds exactly the moved half, from before and during the split";
    const auto on_0 = forward_edges(servers[0], split_follow_db);
    EXPECT_EQ(on_0, want_lower) << "shard 0 keeps the lower half; cleaning deleted the moved half there";
    auto counts_0 = query_sql(servers[0], "SELECT node_id FROM edge_counts WHERE graph = 'g' AND direction = 0", split_follow_db);
    ASSERT_TRUE(counts_0.has_value());
    for (const auto& line : counts_0.value()) {
        EXPECT_NE(three.shard_of_id(std::stoll(line)), 2u) << "a count of the moved half left on shard 0: node " << line;
    }

    // Reads of the moved half are served by the new shard, counts exact.
    for (const auto s : upper) {
        std::size_t want = 0;
        for (const auto& e : want_upper) want += e.first == s ? 1 : 0;
        auto r = http_get(gw.port(), fmt::format("/v1/graphs/g/nodes/{}/count", s));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(nlohmann::json::parse(r->body).value("count", -1), static_cast<std::int64_t>(want)) << "node " << s;
    }
    auto early = http_get(gw.port(), fmt::format("/v1/graphs/g/edges/{}/{}", upper[1], on_one[1]));
    ASSERT_TRUE(early);
    EXPECT_EQ(early->status, 200) << "an edge of the moved half written before the split: " << early->body;
    const auto log = gw.log_tail(200000);
    for (const char* st : {"copying", "catching_up", "verifying", "switched", "done", "cleaning", "retired"}) {
        EXPECT_NE(log.find(fmt::format("-> {}", st)), std::string::npos) << "the driver's move to " << st << " is not in the log";
    }

    // A restart routes by the new map.
    ASSERT_EQ(gw.terminate(), 0) << gw.log_tail();
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ASSERT_TRUE(post_edge(gw.port(), lower[0], late_dst));
    ASSERT_TRUE(post_edge(gw.port(), upper[1], late_dst));
    ASSERT_TRUE(wait_applied(gw.port(), 30s));
    EXPECT_TRUE(forward_edges(servers[1], split_follow_db_n).contains({upper[1], late_dst}));
    EXPECT_FALSE(forward_edges(servers[0], split_follow_db).contains({upper[1], late_dst}));
    EXPECT_TRUE(forward_edges(servers[0], split_follow_db).contains({lower[0], late_dst}));
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

// The issue's test (issue 16): two gateways write and read through the split — each read of an edge
// the other gateway acknowledged, with its after= token, must find it — and the driving gateway is
// restarted while the copy runs (throttled so that it is still running): the other gateway takes over
// the driving, and at the end the new shard holds exactly the moved half of everything acknowledged.
TEST(split, two_gateways_split_a_shard_under_reads_and_writes_and_a_restart_during_the_copy) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db2 = "cairn_split2", db2_n = "cairn_split2_n";
    fresh_database(db2);
    fresh_database(db2_n);
    const auto servers = test_shards();
    const auto three = core::shard_map::equal_ranges(2).split(0).value();
    std::vector<std::int64_t> on_one;
    for (std::int64_t id = 1; on_one.size() < 50; ++id) {
        if (three.shard_of_id(id) == 1) on_one.push_back(id);
    }
    const auto edge_of = [&](std::uint64_t k) {  // sources anywhere, destinations on shard 1
        return std::pair<std::int64_t, std::int64_t>(static_cast<std::int64_t>(1'000 + k % 4'000), on_one[k % on_one.size()]);
    };

    cairnd_options a_opts;
    a_opts.database = db2;
    a_opts.node_id = 1;
    a_opts.shards = {servers[0], servers[1]};
    a_opts.journal_dir = make_temp_dir("cairn-split2-a");
    a_opts.extra_toml = "[entities]\nkinds = [\"user\"]\n";
    std::mutex mu;
    edge_set acked;
    constexpr int entities = 6'000;
    const auto entity_id = [](int i) { return fmt::format("00000000-0000-0000-0000-{:012x}", i + 1); };
    {
        cairnd_process first(a_opts);
        ASSERT_TRUE(first.start()) << first.log_tail();
        // Enough rows that a copy of 500 rows per second runs for a few seconds in each of its two
        // groups (edges, then entities): A restarts once the edges are copied and the copy's position
        // in the entities is marked, and the copy goes on with the entities from there
        // (docs/resharding.md: a copy resumes at the group where it was, inside it if its rows stand alone).
        for (std::uint64_t k = 0; k < 1'500; ++k) {
            const auto e = edge_of(k);
            ASSERT_TRUE(post_edge(first.port(), e.first, e.second));
            acked.insert(e);
        }
        http_connection conn(first.port());
        for (int i = 0; i < entities; ++i) {
            auto w = conn.send("PUT", "/v1/entities/user/" + entity_id(i), fmt::format(R"({{"n": {}}})", i));
            ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
        }
        ASSERT_TRUE(wait_applied(first.port(), 60s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    a_opts.shards.push_back(servers[1]);
    a_opts.shard_databases = {"", "", db2_n};
    a_opts.extra_toml += "[limits]\nsplit_copy_rows_per_second_max = 500\n";
    cairnd_options b_opts = a_opts;
    b_opts.node_id = 2;
    b_opts.journal_dir = make_temp_dir("cairn-split2-b");
    cairnd_process a(a_opts), b(b_opts);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(b.start()) << b.log_tail();

    // Writers on both gateways; a reader that reads each write through the other gateway with its token.
    std::atomic<bool> running{true};
    std::atomic<std::uint64_t> reads{0};
    std::string failure;
    const auto fail = [&](std::string what) {
        std::lock_guard lock(mu);
        if (failure.empty()) failure = std::move(what);
    };
    // A's restart: writes through A then may be journaled without an answer (not acknowledged, maybe
    // applied), and reads through A fail. restart_epoch changes when A goes down and when it is back.
    std::atomic<int> restart_epoch{0};
    edge_set maybe;  // writes whose answer the restart cut off
    const auto writer = [&](cairnd_process& own, cairnd_process& other, bool own_is_a, std::uint64_t first_k) {
        for (std::uint64_t k = first_k; running; k += 2) {
            const auto e = edge_of(k);
            const int before = restart_epoch;
            auto w = http_post(own.port(), "/v1/graphs/g/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", e.first, e.second));
            if (!w || w->status != 202) {
                if (own_is_a && (before % 2 == 1 || restart_epoch != before)) {
                    std::lock_guard lock(mu);
                    maybe.insert(e);
                    continue;
                }
                return fail(fmt::format("a write of {} -> {} through node {} failed: {}", e.first, e.second, own_is_a ? 1 : 2,
                                        w ? w->body : "no answer"));
            }
            {
                std::lock_guard lock(mu);
                acked.insert(e);
            }
            const auto token = nlohmann::json::parse(w->body).value("after", std::string());
            const int read_before = restart_epoch;
            auto r = http_get(other.port(), fmt::format("/v1/graphs/g/edges/{}/{}?after={}&timeout_ms=20000", e.first, e.second, token));
            if (!r || r->status != 200) {
                if (!own_is_a && (read_before % 2 == 1 || restart_epoch != read_before)) continue;  // A was restarting
                return fail(fmt::format("a read of {} -> {} (written through node {}, after={}) answered {}", e.first, e.second,
                                        own_is_a ? 1 : 2, token, r ? std::to_string(r->status) + " " + r->body : "nothing"));
            }
            ++reads;
        }
    };
    std::thread wa([&] { writer(a, b, true, 1'500); });
    std::thread wb([&] { writer(b, a, false, 1'501); });

    asio::io_context ioc;
    shards::mariadb_conn admin(ioc.get_executor(), params_for(servers[0], db2));
    ASSERT_TRUE(run_on(ioc, admin.async_connect()));
    ASSERT_TRUE(run_on(ioc, shards::async_propose_split(admin, 2, 0, fmt::format("{}:{}", servers[1].host, servers[1].port), 1)));
    ASSERT_TRUE(run_on(ioc, shards::async_move_split(admin, 2, split_state::planned, split_state::adopting, 1)));
    const auto state = [&] {
        auto r = query_sql(servers[0], "SELECT state FROM shard_maps WHERE version = 2", db2);
        return r && !r.value().empty() ? r.value().front() : std::string();
    };
    // The copy runs on A (node 1, the lowest live); A restarts in the middle of it, once the edges
    // group is copied (marked on shard 0) and the entities' copy has marked its position there.
    const auto entities_on_0 = [&] {
        auto r = query_sql(servers[0], "SELECT COUNT(*) FROM entities", db2);
        return r && !r.value().empty() ? std::stoull(r.value().front()) : 0;
    }();
    const auto edges_copied = [&] {
        auto r = query_sql(servers[0], "SELECT COUNT(*) FROM shard_map_steps WHERE version = 2 AND step = 'copy' AND unit = 'edges'", db2);
        return r && !r.value().empty() && r.value().front() == "1";
    };
    const auto entities_position = [&] {
        auto r = query_sql(servers[0], "SELECT rows_read FROM shard_map_resume WHERE version = 2 AND unit = 'entities'", db2);
        return r && !r.value().empty() ? std::stoull(r.value().front()) : 0;
    };
    const bool copying = wait_until([&] { return state() == "copying" && edges_copied() && entities_position() > 0; }, 60s);
    const std::string state_at_restart = state();
    if (copying) {
        ++restart_epoch;
        EXPECT_EQ(a.terminate(), 0) << a.log_tail();
        EXPECT_TRUE(a.start()) << a.log_tail();
        ++restart_epoch;
    }
    const bool ended = wait_until([&] { return state() == "retired" || state() == "failed"; }, 180s);
    running = false;
    wa.join();
    wb.join();
    ASSERT_TRUE(copying) << "the split never copied the edges; it is " << state() << "; " << a.log_tail(8000);
    ASSERT_EQ(state_at_restart, "copying") << "the copy ended before A restarted: raise the rows or lower the throttle";
    ASSERT_TRUE(ended) << "the split is " << state() << "; A: " << a.log_tail(6000) << "; B: " << b.log_tail(6000);
    ASSERT_EQ(state(), "retired") << a.log_tail(8000) << b.log_tail(8000);
    ASSERT_TRUE(failure.empty()) << failure;
    EXPECT_GT(reads.load(), 20u) << "reads through the other gateway during the split";
    ASSERT_TRUE(wait_applied(a.port(), 60s));
    ASSERT_TRUE(wait_applied(b.port(), 60s));

    // Each edge's forward row by its source: shard 0's lower half, shard 1, the moved half on shard 2.
    edge_set want[3];
    for (const auto& e : acked) want[three.shard_of_id(e.first)].insert(e);
    ASSERT_GT(want[2].size(), 100u);
    auto adoptions = query_sql(servers[0], "SELECT node_id FROM shard_map_adoptions WHERE version = 2 ORDER BY node_id", db2);
    ASSERT_TRUE(adoptions.has_value());
    EXPECT_EQ(adoptions.value(), (std::vector<std::string>{"1", "2"}));
    // Each shard holds its half of every acknowledged edge, and nothing else but writes the restart cut
    // off (journaled, unanswered).
    for (const auto& [server, database, shard] :
         {std::tuple{servers[0], db2, 0u}, std::tuple{servers[1], db2, 1u}, std::tuple{servers[1], db2_n, 2u}}) {
        const auto held = forward_edges(server, database);
        std::size_t missing = 0, extra = 0;
        for (const auto& e : want[shard]) missing += held.contains(e) ? 0 : 1;
        for (const auto& e : held) extra += three.shard_of_id(e.first) == shard && (want[shard].contains(e) || maybe.contains(e)) ? 0 : 1;
        EXPECT_EQ(missing, 0u) << "acknowledged edges missing on shard " << shard;
        EXPECT_EQ(extra, 0u) << "edges on shard " << shard << " that were not acknowledged there";
    }
    const auto log_a = a.log_tail(400000) + b.log_tail(400000);
    EXPECT_NE(log_a.find("-> retired"), std::string::npos);
    // The driver after the restart (A again, or B while A was down) went on with the entities: the
    // edges were copied once.
    EXPECT_NE(log_a.find("resuming the copy: edges done by an earlier run"), std::string::npos) << log_a.substr(0, 20000);
    std::size_t edge_copies = 0;
    for (auto at = log_a.find("copy of edges done"); at != std::string::npos; at = log_a.find("copy of edges done", at + 1)) ++edge_copies;
    EXPECT_EQ(edge_copies, 1u);
    // ... and the entities from the position the first run marked: the run that finished them read
    // fewer than shard 0 held.
    EXPECT_NE(log_a.find("resuming the copy of entities in entities after"), std::string::npos) << log_a.substr(0, 20000);
    const auto entities_done = log_a.find("copy of entities done (");
    ASSERT_NE(entities_done, std::string::npos) << log_a.substr(0, 20000);
    const auto entities_read = std::stoull(log_a.substr(entities_done + std::string_view("copy of entities done (").size()));
    EXPECT_LT(entities_read, entities_on_0) << "the entities were copied from their start again";
    EXPECT_EQ(log_a.find("copy of entities done (", entities_done + 1), std::string::npos) << "the entities were copied twice";
    // Every entity is on exactly one shard (the moved half on the new one, cleaned from the old) and reads back.
    std::int64_t held = 0;
    for (const auto& [server, database] : {std::pair{servers[0], db2}, std::pair{servers[1], db2}, std::pair{servers[1], db2_n}}) {
        auto r = query_sql(server, "SELECT COUNT(*) FROM entities", database);
        ASSERT_TRUE(r && !r.value().empty());
        if (database == db2_n) {
            EXPECT_GT(std::stoll(r.value().front()), entities / 10);
        }
        held += std::stoll(r.value().front());
    }
    EXPECT_EQ(held, entities);
    for (int i = 0; i < entities; i += 37) {
        auto r = http_get((i % 2 ? a : b).port(), "/v1/entities/user/" + entity_id(i));
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200) << entity_id(i) << ": " << r->body;
    }
    // Counts equal the rows (exact), read through either gateway.
    const auto all_edges = [&] {
        auto x = forward_edges(servers[1], db2_n);
        for (const auto& e : forward_edges(servers[0], db2)) x.insert(e);
        for (const auto& e : forward_edges(servers[1], db2)) x.insert(e);
        return x;
    }();
    for (std::int64_t s = 1'000; s < 1'040; ++s) {
        std::int64_t expected = 0;
        for (const auto& e : all_edges) expected += e.first == s ? 1 : 0;
        auto r = http_get((s % 2 ? a : b).port(), fmt::format("/v1/graphs/g/nodes/{}/count", s));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(nlohmann::json::parse(r->body).value("count", -1), expected)
            << "node " << s << " (shard " << three.shard_of_id(s) << ")";
    }
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
}

// A gateway that starts after reads moved (the split held in `hold` — switched or done — by a third
// gateway that never routes by the next state: a live lease and an adoption on shard 0 that the test
// writes), with a backlog of writes of the moved half that it journaled under the old map and never
// applied: it adopts the split late, from its journal's first seq, and the new shard applies that backlog
// (its worker goes back over the seqs it had passed under the old map). Before, the old owner alone got
// them: lost to reads, then cleaned. In done it then cuts over, and the split runs to its end.
void a_late_gateway_brings_its_backlog_to_the_new_shard(split_state hold) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db3 = "cairn_split3", db3_n = "cairn_split3_n";
    const auto servers = test_shards();
    const auto keys = pick_split_keys(40, 40);
    const auto& three = keys.three;

    cairnd_options a_opts;
    a_opts.database = db3;
    a_opts.node_id = 1;
    a_opts.shards = {servers[0], servers[1]};
    a_opts.journal_dir = make_temp_dir("cairn-split3-a");
    // The third shard joins the config. B journals writes of the moved half with shard 0 paused, so
    // that they wait for the old owner while B's worker of the new shard passes them (under the map of
    // two shards, none is its own), and stops.
    const auto deployed = deploy_edges_then_list_a_third_shard(a_opts, keys, 40, db3_n);
    ASSERT_TRUE(deployed.empty()) << deployed;
    cairnd_options b_opts = a_opts;
    b_opts.node_id = 2;
    b_opts.journal_dir = make_temp_dir("cairn-split3-b");
    edge_set backlog;
    const auto journaled = journal_a_backlog_of_the_moved_half(b_opts, keys, 40, 1, backlog);
    ASSERT_TRUE(journaled.empty()) << journaled;
    cairnd_process a(a_opts);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    asio::io_context ioc;
    shards::mariadb_conn admin(ioc.get_executor(), params_for(servers[0], db3));
    ASSERT_TRUE(run_on(ioc, admin.async_connect()));
    ASSERT_TRUE(run_on(ioc, shards::async_propose_split(admin, 2, 0, fmt::format("{}:{}", servers[1].host, servers[1].port), 1)));
    // Node 3: live and adopted, it never says it routes by the held state, so the split stays there.
    ASSERT_TRUE(exec_sql(servers[0],
                         {"INSERT INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) VALUES "
                          "(3, 3, 'test: a gateway that never follows', 0, NOW(6), NOW(6) + INTERVAL 1 HOUR, 0)",
                          "INSERT INTO shard_map_adoptions (version, node_id, from_seq, seen_state, cut_over_seq, adopted_at) VALUES "
                          + fmt::format("(2, 3, 1, {}, 0, NOW(6))", hold == split_state::done ? static_cast<int>(split_state::switched) : 0)},
                         db3));
    ASSERT_TRUE(run_on(ioc, shards::async_move_split(admin, 2, split_state::planned, split_state::adopting, 1)));
    const auto state = [&] {
        auto r = query_sql(servers[0], "SELECT state FROM shard_maps WHERE version = 2", db3);
        return r && !r.value().empty() ? r.value().front() : std::string();
    };
    const std::string held(split_state_name(hold));
    ASSERT_TRUE(wait_until([&] { return state() == held || state() == "failed"; }, 60s)) << state() << "\n" << a.log_tail(8000);
    ASSERT_EQ(state(), held) << a.log_tail(8000);
    // B starts now, its backlog unapplied: it joins after reads moved.
    cairnd_process b(b_opts);
    ASSERT_TRUE(b.start()) << b.log_tail();
    ASSERT_TRUE(wait_applied(b.port(), 60s)) << b.log_tail(8000);
    ASSERT_TRUE(wait_until([&] { return b.log_tail(1 << 20).find("routing: now map version 2") != std::string::npos; }, 30s))
        << b.log_tail(8000);
    const auto b_log = b.log_tail(1 << 20);
    EXPECT_NE(b_log.find(fmt::format("joined map version 2 after reads moved ({})", held)), std::string::npos) << b_log.substr(0, 8000);
    ASSERT_TRUE(wait_applied(b.port(), 60s)) << b.log_tail(8000);
    // Every backlog edge's forward row is on the new shard, where reads of the moved half go now.
    const auto missing_on_n = [&] {
        const auto on_n = forward_edges(servers[1], db3_n);
        std::size_t missing = 0;
        for (const auto& e : backlog) missing += on_n.contains(e) ? 0 : 1;
        return missing;
    };
    for (const auto& e : backlog) ASSERT_EQ(three.shard_of_id(e.first), 2u);
    EXPECT_TRUE(wait_until([&] { return missing_on_n() == 0; }, 30s))
        << missing_on_n() << " of " << backlog.size() << " backlog edges of the moved half missing on the new shard\n"
        << b_log.substr(0, 8000);
    const auto& e = *backlog.begin();
    auto r = http_get(a.port(), fmt::format("/v1/graphs/g/edges/{}/{}", e.first, e.second));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << "a read through the other gateway: " << r->body;
    // Node 3 goes: the split runs to its end.
    ASSERT_TRUE(exec_sql(servers[0], {"DELETE FROM gateway_leases WHERE node_id = 3"}, db3));
    ASSERT_TRUE(wait_until([&] { return state() == "retired" || state() == "failed"; }, 60s)) << state() << "\n" << a.log_tail(8000);
    EXPECT_EQ(state(), "retired") << a.log_tail(8000);
    EXPECT_EQ(missing_on_n(), 0u);
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
}

TEST(split, a_gateway_that_starts_after_reads_moved_brings_its_backlog_of_the_moved_half_to_the_new_shard) {
    a_late_gateway_brings_its_backlog_to_the_new_shard(split_state::switched);
}

TEST(split, a_gateway_that_starts_once_the_split_is_done_adopts_it_late_and_cuts_over) {
    a_late_gateway_brings_its_backlog_to_the_new_shard(split_state::done);
}

// A counter whose rows live on their item's shard (shard_on), with a breakdown by site: reads without
// the item are reads over every shard, summed. views_per_site leaves the item out: each increment
// counts there on its item's shard in the deployment's first map, whatever splits came since (a read
// by site alone, e.g. total?site=1 or series?site=2, picks that table: the shortest key that fits).
const std::string split_follow_views_toml = R"([[counters.metrics]]
name = "views"
shard_on = "item"
dimensions = [{ name = "site", type = "int" }, { name = "item", type = "int" }]
tables = [{ name = "views_by_site", granularity = "day", key = ["site", "time", "item"] },
          { name = "views_by_day", granularity = "day", key = ["time", "site", "item"] },
          { name = "views_per_site", granularity = "day", key = ["site", "time"] }]
)";

// What a views test wrote and had acknowledged: per site, per item, in all, and of the moved half
// (items whose shard in the map after the split is 2).
struct views_model {
    // wait_applied: each increment with ?wait=applied (acknowledged once applied where reads go).
    explicit views_model(const split_keys& k, bool wait = false) : keys(k), wait_applied(wait) {}
    const split_keys& keys;
    bool wait_applied = false;
    std::map<std::int64_t, std::int64_t> by_site, by_item;
    std::int64_t all = 0, upper = 0;

    // Posts an increment of (site, item) at 2026-11-20T10:00Z through cairnd on port: empty once it is
    // acknowledged (and in the model), else the answer.
    std::string post(std::uint16_t port, std::int64_t site, std::int64_t item, std::int64_t delta) {
        auto w = http_post(port, wait_applied ? "/v1/counters/views?wait=applied" : "/v1/counters/views",
                           fmt::format(R"({{"dimensions": {{"site": {}, "item": {}}}, "time": "2026-11-20T10:00:00Z", "delta": {}}})",
                                       site, item, delta));
        if (!w || w->status != 202) return w ? fmt::format("{}: {}", w->status, w->body) : std::string("no answer");
        by_site[site] += delta;
        by_item[item] += delta;
        all += delta;
        if (keys.three.shard_of_id(item) == 2) upper += delta;
        return "";
    }
};

// A views deployment's gateway: the database on both test servers, split_follow_views_toml, its own journal.
cairnd_options views_gateway(const std::vector<shard_endpoint>& servers, const std::string& database, const std::string& journal) {
    cairnd_options o;
    o.database = database;
    o.shards = {servers[0], servers[1]};
    o.journal_dir = make_temp_dir(journal);
    o.extra_toml = split_follow_views_toml;
    return o;
}

// The sum of a counter table's counts on one shard's database (-1 if the query fails).
std::int64_t counts_on(const shard_endpoint& s, const std::string& database, const std::string& table) {
    auto r = query_sql(s, "SELECT COALESCE(SUM(count), 0) FROM " + table, database);
    return r && !r.value().empty() ? std::stoll(r.value().front()) : -1;
}

// From switched until the driver deletes the old owner's counter sums of the moved half (once every
// live gateway has cut over), shard 0 still holds sums of R while shard 2 holds them whole: a read over
// every shard must take R from shard 2 alone. A third gateway that never follows holds the split in
// switched for as long as the test reads.
TEST(split, counter_reads_over_every_shard_count_the_moved_half_once_while_the_old_owner_still_holds_its_sums) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db5 = "cairn_split5", db5_n = "cairn_split5_n";
    fresh_database(db5);
    fresh_database(db5_n);
    const auto servers = test_shards();
    const auto keys = pick_split_keys(20, 1);
    views_model views(keys);  // the model: views per site, both halves
    const auto& by_site = views.by_site;
    cairnd_options o = views_gateway(servers, db5, "cairn-split5");
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 20; ++i) {
            const auto delta = static_cast<std::int64_t>(i + 1);
            ASSERT_EQ(views.post(first.port(), 1 + static_cast<std::int64_t>(i % 2), keys.upper[i], delta), "");
            ASSERT_EQ(views.post(first.port(), 1 + static_cast<std::int64_t>(i % 2), keys.lower[i], 100 * delta), "");
        }
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    o.shards.push_back(servers[1]);
    o.shard_databases = {"", "", db5_n};
    cairnd_process a(o);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    asio::io_context ioc;
    shards::mariadb_conn admin(ioc.get_executor(), params_for(servers[0], db5));
    ASSERT_TRUE(run_on(ioc, admin.async_connect()));
    ASSERT_TRUE(run_on(ioc, shards::async_propose_split(admin, 2, 0, fmt::format("{}:{}", servers[1].host, servers[1].port), 1)));
    ASSERT_TRUE(exec_sql(servers[0],
                         {"INSERT INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) VALUES "
                          "(3, 3, 'test: a gateway that never follows', 0, NOW(6), NOW(6) + INTERVAL 1 HOUR, 0)",
                          "INSERT INTO shard_map_adoptions (version, node_id, from_seq, seen_state, cut_over_seq, adopted_at) VALUES "
                          "(2, 3, 1, 0, 0, NOW(6))"},
                         db5));
    ASSERT_TRUE(run_on(ioc, shards::async_move_split(admin, 2, split_state::planned, split_state::adopting, 1)));
    const auto state = [&] {
        auto r = query_sql(servers[0], "SELECT state FROM shard_maps WHERE version = 2", db5);
        return r && !r.value().empty() ? r.value().front() : std::string();
    };
    ASSERT_TRUE(wait_until([&] { return state() == "switched" || state() == "failed"; }, 60s)) << state() << "\n" << a.log_tail(8000);
    ASSERT_EQ(state(), "switched") << a.log_tail(8000);
    ASSERT_TRUE(wait_until([&] { return a.log_tail(1 << 20).find(", reads moved") != std::string::npos; }, 30s))
        << a.log_tail(8000);

    const auto sum_on = [&](const shard_endpoint& s, const std::string& database) -> std::int64_t {
        auto r = query_sql(s, "SELECT COALESCE(SUM(count), 0) FROM counts_views_by_site", database);
        return r && !r.value().empty() ? std::stoll(r.value().front()) : -1;
    };
    const auto total = [&](const std::string& query) -> std::int64_t {
        auto r = http_get(a.port(), "/v1/counters/views/" + query);
        if (!r || r->status != 200) return -1;
        return nlohmann::json::parse(r->body)["total"].get<std::int64_t>();
    };
    const auto model_total = [&] { return views.all; };
    const auto check_reads = [&](const char* when) {
        EXPECT_EQ(total("total?from=2026-11-20&to=2026-11-21&granularity=day"), model_total()) << when;
        EXPECT_EQ(total("total?site=1&from=2026-11-20&to=2026-11-21"), by_site.at(1)) << when;
        EXPECT_EQ(total("series?site=2&from=2026-11-19&to=2026-11-22"), by_site.at(2)) << when;
        auto top = http_get(a.port(), "/v1/counters/views/top?by=site&from=2026-11-20&to=2026-11-21");
        ASSERT_TRUE(top && top->status == 200) << (top ? top->body : "no answer");
        const auto j = nlohmann::json::parse(top->body);
        std::map<std::int64_t, std::int64_t> got;
        for (const auto& row : j["rows"]) got[row["value"].get<std::int64_t>()] = row["count"].get<std::int64_t>();
        EXPECT_EQ(got, by_site) << when << ": " << top->body;
    };
    // The old owner still holds the moved half's sums as copied; the new shard holds them whole.
    EXPECT_EQ(sum_on(servers[0], db5), model_total());
    EXPECT_EQ(sum_on(servers[1], db5_n), views.upper);
    check_reads("in switched, right after the copy");
    // Increments of the moved half: the new shard counts them (the old owner too, until its cut-over).
    for (std::size_t i = 0; i < 4; ++i) ASSERT_EQ(views.post(a.port(), 2, keys.upper[i], 1000), "");
    ASSERT_TRUE(wait_applied(a.port(), 30s)) << a.log_tail(8000);
    EXPECT_EQ(sum_on(servers[1], db5_n), views.upper);
    check_reads("in switched, after increments of the moved half");

    // Node 3 goes: the driver deletes shard 0's sums of the half and the split runs to its end.
    ASSERT_TRUE(exec_sql(servers[0], {"DELETE FROM gateway_leases WHERE node_id = 3"}, db5));
    ASSERT_TRUE(wait_until([&] { return state() == "retired" || state() == "failed"; }, 60s)) << state() << "\n" << a.log_tail(8000);
    EXPECT_EQ(state(), "retired") << a.log_tail(8000);
    EXPECT_EQ(sum_on(servers[0], db5), model_total() - views.upper);
    check_reads("retired");
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

// Reads of the moved half's counters are as fresh while the split adopts and copies as before it: the
// old owner counts R's increments until its cut-over, as it applies R's rows, and the new shard counts them
// again from the adoption in the tables keyed by item, deduplicated against the op ids the copy brings.
// A third gateway's lease, never adopting, holds the split in adopting while the test reads.
TEST(split, counter_reads_of_the_moved_half_see_its_increments_while_the_split_adopts_and_copies) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db8 = "cairn_split8", db8_n = "cairn_split8_n";
    fresh_database(db8);
    fresh_database(db8_n);
    const auto servers = test_shards();
    const auto keys = pick_split_keys(10, 1);
    // Each increment waits until the shards a read of it goes to have applied it (?wait=applied).
    views_model views(keys, true);
    const auto view = [&](std::uint16_t port, std::int64_t site, std::int64_t item, std::int64_t delta) {
        return views.post(port, site, item, delta);
    };
    cairnd_options o = views_gateway(servers, db8, "cairn-split8");
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 10; ++i) {
            const auto site = 1 + static_cast<std::int64_t>(i % 2);
            ASSERT_EQ(view(first.port(), site, keys.upper[i], 1), "");
            ASSERT_EQ(view(first.port(), site, keys.lower[i], 100), "");
        }
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    o.shards.push_back(servers[1]);
    o.shard_databases = {"", "", db8_n};
    cairnd_process a(o);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    ASSERT_TRUE(exec_sql(servers[0],
                         {"INSERT INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) VALUES "
                          "(3, 3, 'test: a gateway that never adopts', 0, NOW(6), NOW(6) + INTERVAL 1 HOUR, 0)"},
                         db8));
    auto started = http_post(a.port(), "/v1/admin/reshard/split", fmt::format(R"({{"shard": 0, "to": "{}:{}"}})", servers[1].host, servers[1].port));
    ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");
    const auto adopted = [&] {
        auto r = query_sql(servers[0], "SELECT COUNT(*) FROM shard_map_adoptions WHERE version = 2 AND node_id = 1", db8);
        return r && !r.value().empty() && r.value().front() == "1";
    };
    ASSERT_TRUE(wait_until(adopted, 30s)) << a.log_tail(8000);

    const auto read = [&](const std::string& query) -> std::int64_t {
        auto r = http_get(a.port(), "/v1/counters/views/" + query);
        if (!r || r->status != 200) return -1;
        return nlohmann::json::parse(r->body)["total"].get<std::int64_t>();
    };
    const auto check_reads = [&](const char* when) {
        EXPECT_EQ(read("total?from=2026-11-20&to=2026-11-21"), views.all) << when << " (by day, over every shard)";
        EXPECT_EQ(read("total?site=1&from=2026-11-20&to=2026-11-21"), views.by_site.at(1)) << when << " (per site, over every shard)";
        EXPECT_EQ(read("series?site=2&from=2026-11-19&to=2026-11-22"), views.by_site.at(2)) << when;
        for (std::size_t i = 0; i < 3; ++i) {
            const auto item = keys.upper[i];
            EXPECT_EQ(read(fmt::format("total?item={}&from=2026-11-20&to=2026-11-21", item)), views.by_item.at(item))
                << when << " (item " << item << " of the moved half, on its shard)";
        }
    };
    // Increments of both halves after the adoption: each acknowledged as applied where reads go.
    for (std::size_t i = 0; i < 10; ++i) {
        const auto site = 1 + static_cast<std::int64_t>(i % 2);
        ASSERT_EQ(view(a.port(), site, keys.upper[i], 10), "") << a.log_tail(8000);
        ASSERT_EQ(view(a.port(), site, keys.lower[i], 1000), "") << a.log_tail(8000);
    }
    ASSERT_EQ(split_state_of(servers[0], db8), "adopting");
    check_reads("while the split adopts");

    // Node 3 goes: the split copies, moves reads and runs to its end; increments keep coming.
    ASSERT_TRUE(exec_sql(servers[0], {"DELETE FROM gateway_leases WHERE node_id = 3"}, db8));
    ASSERT_TRUE(wait_until([&] { return split_state_of(servers[0], db8) != "adopting"; }, 30s)) << a.log_tail(8000);
    for (std::size_t i = 0; i < 10; ++i) ASSERT_EQ(view(a.port(), 2, keys.upper[i], 5), "") << a.log_tail(8000);
    ASSERT_TRUE(wait_until([&] { const auto s = split_state_of(servers[0], db8); return s == "retired" || s == "failed"; }, 90s))
        << split_state_of(servers[0], db8) << "\n" << a.log_tail(8000);
    ASSERT_EQ(split_state_of(servers[0], db8), "retired") << a.log_tail(8000);
    ASSERT_TRUE(wait_applied(a.port(), 30s)) << a.log_tail(8000);
    check_reads("retired");
    // And after it: the moved half's increments count on the new shard by item, on shard 0 by site.
    for (std::size_t i = 0; i < 5; ++i) {
        ASSERT_EQ(view(a.port(), 1, keys.upper[i], 3), "") << a.log_tail(8000);
        ASSERT_EQ(view(a.port(), 1, keys.lower[i], 30), "") << a.log_tail(8000);
    }
    check_reads("after the split");
    // Where the counts are: the tables keyed by item on the item's shard, views_per_site on shard 0
    // (the first map's owner of both halves) alone.
    EXPECT_EQ(counts_on(servers[0], db8, "counts_views_by_site"), views.all - views.upper);
    EXPECT_EQ(counts_on(servers[1], db8_n, "counts_views_by_site"), views.upper);
    EXPECT_EQ(counts_on(servers[0], db8, "counts_views_per_site"), views.all);
    EXPECT_EQ(counts_on(servers[1], db8_n, "counts_views_per_site"), 0);
    // The fence: the split's two shards name map version 2 in their identity rows (a gateway routing by
    // version 1 applies nothing there); shard 1 kept its rows and its version.
    const auto map_version = [&](const shard_endpoint& s, const std::string& database) {
        auto r = query_sql(s, "SELECT map_version FROM shard_identity WHERE id = 1", database);
        return r && !r.value().empty() ? r.value().front() : std::string("?");
    };
    EXPECT_EQ(map_version(servers[0], db8), "2");
    EXPECT_EQ(map_version(servers[1], db8_n), "2");
    EXPECT_EQ(map_version(servers[1], db8), "1");
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

// A gateway down while a split ran to its end starts with a journal whose route record is the old map
// and a backlog of ops of the moved half: its workers apply nothing until its follower has read the map
// in force from shard 0, so the backlog lands on the new shard and none on the old one (cleaned).
TEST(split, a_gateway_back_after_a_split_applies_its_backlog_by_the_map_in_force) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db6 = "cairn_split6", db6_n = "cairn_split6_n";
    const auto servers = test_shards();
    const auto keys = pick_split_keys(40, 40);
    cairnd_options a_opts;
    a_opts.database = db6;
    a_opts.node_id = 1;
    a_opts.shards = {servers[0], servers[1]};
    a_opts.journal_dir = make_temp_dir("cairn-split6-a");
    const auto deployed = deploy_edges_then_list_a_third_shard(a_opts, keys, 40, db6_n);
    ASSERT_TRUE(deployed.empty()) << deployed;
    // B writes an edge of the moved half that shard 0 refuses (a trigger): it waits in B's error queue
    // there. Then B journals edges of the moved half with shard 0 paused (they stay unapplied there)
    // and stops.
    cairnd_options b_opts = a_opts;
    b_opts.node_id = 2;
    b_opts.journal_dir = make_temp_dir("cairn-split6-b");
    b_opts.retry_attempts_max = 1000;
    const std::pair<std::int64_t, std::int64_t> refused{keys.upper[39], keys.on_one[0] + 500};
    ASSERT_TRUE(exec_sql(servers[0], {fmt::format("CREATE TRIGGER poison BEFORE INSERT ON edges FOR EACH ROW "
                                                  "IF NEW.node_id = {} AND NEW.other_id = {} THEN "
                                                  "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'held back'; END IF",
                                                  refused.first, refused.second)},
                         db6));
    {
        cairnd_process b(b_opts);
        ASSERT_TRUE(b.start()) << b.log_tail();
        ASSERT_TRUE(post_edge(b.port(), refused.first, refused.second));
        ASSERT_TRUE(wait_until(
            [&] {
                auto r = http_get(b.port(), "/v1/admin/errors?shard=0");
                return r && r->status == 200 && nlohmann::json::parse(r->body)["errors"].size() == 1;
            },
            30s))
            << b.log_tail(8000);
        ASSERT_EQ(b.terminate(), 0) << b.log_tail();
    }
    edge_set backlog;
    const auto journaled = journal_a_backlog_of_the_moved_half(b_opts, keys, 39, 3, backlog);
    ASSERT_TRUE(journaled.empty()) << journaled;
    // A splits shard 0 to its end while B is down.
    {
        cairnd_process a(a_opts);
        ASSERT_TRUE(a.start()) << a.log_tail();
        ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
        auto started = http_post(a.port(), "/v1/admin/reshard/split",
                                 fmt::format(R"({{"shard": 0, "to": "{}:{}"}})", servers[1].host, servers[1].port));
        ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");
        ASSERT_TRUE(wait_until([&] { return split_state_of(servers[0], db6) == "retired"; }, 90s))
            << split_state_of(servers[0], db6) << a.log_tail(8000);
        ASSERT_EQ(a.terminate(), 0) << a.log_tail();
    }
    // B is back: its backlog goes by the map in force.
    cairnd_process b(b_opts);
    ASSERT_TRUE(b.start()) << b.log_tail();
    ASSERT_TRUE(wait_applied(b.port(), 60s)) << b.log_tail(8000);
    const auto on_n = forward_edges(servers[1], db6_n);
    const auto on_i = forward_edges(servers[0], db6);
    std::size_t missing = 0, stray = 0;
    for (const auto& e : backlog) {
        missing += on_n.contains(e) ? 0 : 1;
        stray += on_i.contains(e) ? 1 : 0;
    }
    EXPECT_EQ(missing, 0u) << "backlog edges of the moved half missing on the new shard\n" << b.log_tail(8000);
    EXPECT_EQ(stray, 0u) << "backlog edges of the moved half applied on the old shard by the old map\n" << b.log_tail(8000);
    EXPECT_NE(b.log_tail(1 << 20).find("routing: map version 2 read from shard 0; applying"), std::string::npos) << b.log_tail(8000);
    // The edge that waited in shard 0's error queue reached the new shard through its twin.
    EXPECT_TRUE(wait_until([&] { return forward_edges(servers[1], db6_n).contains(refused); }, 30s)) << b.log_tail(8000);
    EXPECT_FALSE(forward_edges(servers[0], db6).contains(refused));
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
}

// A split cancelled while it copies: the new shard, which counted the moved half's increments from the
// adoption, is abandoned; the old owner counted them too (it counts R's until its cut-over), so reads
// after the cancel count every increment once, also after a restart.
TEST(split, increments_of_the_moved_half_during_a_cancelled_split_count_on_the_old_owner) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db7 = "cairn_split7", db7_n = "cairn_split7_n";
    fresh_database(db7);
    fresh_database(db7_n);
    const auto servers = test_shards();
    const auto keys = pick_split_keys(20, 1);
    views_model written(keys);
    const auto& views = written.all;
    const auto view = [&](std::uint16_t port, std::int64_t item, std::int64_t delta) { return written.post(port, 1, item, delta).empty(); };
    cairnd_options o = views_gateway(servers, db7, "cairn-split7");
    {
        cairnd_process first(o);
        ASSERT_TRUE(first.start()) << first.log_tail();
        for (std::size_t i = 0; i < 20; ++i) {
            ASSERT_TRUE(view(first.port(), keys.upper[i], 1));
            ASSERT_TRUE(view(first.port(), keys.lower[i], 1));
        }
        ASSERT_TRUE(wait_applied(first.port(), 30s));
        ASSERT_EQ(first.terminate(), 0) << first.log_tail();
    }
    o.shards.push_back(servers[1]);
    o.shard_databases = {"", "", db7_n};
    o.extra_toml = split_follow_views_toml + "[limits]\nsplit_copy_rows_per_second_max = 2\n";  // still copying when cancelled
    cairnd_process a(o);
    ASSERT_TRUE(a.start()) << a.log_tail();
    ASSERT_TRUE(wait_shard_up(a.port(), 2)) << a.log_tail(8000);
    auto started = http_post(a.port(), "/v1/admin/reshard/split", fmt::format(R"({{"shard": 0, "to": "{}:{}"}})", servers[1].host, servers[1].port));
    ASSERT_TRUE(started && started->status == 202) << (started ? started->body : "no answer");
    ASSERT_TRUE(wait_until([&] { return split_state_of(servers[0], db7) == "copying"; }, 60s)) << a.log_tail(8000);
    // Increments of both halves while it copies: those of the moved half go to both shards.
    for (std::size_t i = 0; i < 20; ++i) {
        ASSERT_TRUE(view(a.port(), keys.upper[i], 10));
        ASSERT_TRUE(view(a.port(), keys.lower[i], 10));
    }
    auto cancelled = http_post(a.port(), "/v1/admin/reshard/cancel", "{}");
    ASSERT_TRUE(cancelled && cancelled->status == 200) << (cancelled ? cancelled->body : "no answer");
    ASSERT_TRUE(wait_until([&] { return split_state_of(servers[0], db7) == "failed"; }, 30s)) << a.log_tail(8000);
    // (The abandoned new shard's worker keeps its lag: waited on shard 0's sums, not on every shard.)
    const auto total = [&](std::uint16_t port) -> std::int64_t {
        auto r = http_get(port, "/v1/counters/views/total?site=1&from=2026-11-20&to=2026-11-21");
        if (!r || r->status != 200) return -1;
        return nlohmann::json::parse(r->body)["total"].get<std::int64_t>();
    };
    EXPECT_TRUE(wait_until([&] { return total(a.port()) == views; }, 30s))
        << total(a.port()) << " counted, " << views << " written\n" << a.log_tail(8000);
    // The same after a restart, once shard 0 has applied everything (nothing counted twice).
    ASSERT_EQ(a.terminate(), 0) << a.log_tail();
    cairnd_process again(o);
    ASSERT_TRUE(again.start()) << again.log_tail();
    ASSERT_TRUE(wait_until([&] { return metric(again.port(), "cairn_apply_applied_seq{shard=\"0\"}").value_or(0) >= 80; }, 30s))
        << again.log_tail(8000);
    EXPECT_EQ(total(again.port()), views);
    EXPECT_EQ(again.terminate(), 0) << again.log_tail();
}

}  // namespace
}  // namespace cairn::test
