// Several gateways on the same shards (issue 16): the node id lease on shard 0 (a second gateway
// with a node id another journal holds is refused; the same journal restarts; a lease taken away
// stops the gateway), read-your-writes across gateways through the shards' applied marks, and the
// unapplied window a gateway alone holds on /metrics. Real cairnd processes on the test shards.
#include "core/shard_map.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/own_servers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

namespace cairn::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

cairnd_options gateway(const std::string& db, std::uint64_t node_id, const std::string& journal_dir = "") {
    cairnd_options o;
    o.database = db;
    o.node_id = node_id;
    o.journal_dir = journal_dir;
    o.journal_toml = "node_lease_seconds = 3";
    o.keep_leases = true;  // the leases are what these tests are about
    return o;
}

// The lease rows on shard 0 as "node_id released active", one per line.
std::vector<std::string> leases(const std::string& db) {
    auto r = query_sql(test_shards()[0],
                       "SELECT node_id, released, released = 0 AND expires_at > NOW(6) FROM gateway_leases ORDER BY node_id", db);
    EXPECT_TRUE(r.has_value());
    return r ? r.value() : std::vector<std::string>{};
}

// Waits (up to timeout) until cairnd has exited; its exit code, or -1.
int exit_code_within(cairnd_process& gw, std::chrono::milliseconds timeout) {
    const int code = gw.wait_exit(timeout);
    return code >= 0 ? code : (gw.running() ? -1 : gw.exit_code());
}

TEST(gateways, a_node_id_held_by_a_running_gateway_is_refused_to_another_journal) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_gw_lease";
    fresh_database(db);
    cairnd_process a(gateway(db, 1));
    ASSERT_TRUE(a.start()) << a.log_tail();
    EXPECT_EQ(leases(db), (std::vector<std::string>{"1\t0\t1"}));
    EXPECT_EQ(metric(a.port(), "cairn_node_lease_held{node_id=\"1\"}"), 1.0);

    cairnd_process b(gateway(db, 1));  // the same node id, another journal
    EXPECT_FALSE(b.start(20s));
    EXPECT_EQ(exit_code_within(b, 5s), 3) << b.log_tail();
    EXPECT_NE(b.log_tail().find("node id 1 is held by another running gateway"), std::string::npos) << b.log_tail();

    // Another node id on the same shards is welcome.
    cairnd_process c(gateway(db, 2));
    ASSERT_TRUE(c.start()) << c.log_tail();
    EXPECT_EQ(leases(db), (std::vector<std::string>{"1\t0\t1", "2\t0\t1"}));

    // kill -9 leaves the lease unexpired: the same journal takes it back at once.
    const std::string dir = a.journal_dir();
    a.kill9();
    cairnd_process a2(gateway(db, 1, dir));
    ASSERT_TRUE(a2.start()) << a2.log_tail();
    // A clean stop releases it, but keeps it this journal's: another journal is still refused (its op
    // ids would repeat this one's) until the last renewal is older than counters keep op ids.
    EXPECT_EQ(a2.terminate(), 0) << a2.log_tail();
    EXPECT_EQ(leases(db), (std::vector<std::string>{"1\t1\t0", "2\t0\t1"}));
    cairnd_process d(gateway(db, 1));
    EXPECT_FALSE(d.start(20s));
    EXPECT_EQ(exit_code_within(d, 5s), 3) << d.log_tail();
    EXPECT_NE(d.log_tail().find("node id 1 belonged to another journal"), std::string::npos) << d.log_tail();
    ASSERT_TRUE(exec_sql(test_shards()[0], {"UPDATE gateway_leases SET renewed_at = NOW(6) - INTERVAL 169 HOUR WHERE node_id = 1"}, db));
    cairnd_process d2(gateway(db, 1));
    ASSERT_TRUE(d2.start()) << d2.log_tail();
    EXPECT_EQ(d2.terminate(), 0) << d2.log_tail();
    EXPECT_EQ(c.terminate(), 0) << c.log_tail();
}

TEST(gateways, a_gateway_whose_lease_another_journal_took_stops) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_gw_lease_lost";
    fresh_database(db);
    cairnd_process a(gateway(db, 1));
    ASSERT_TRUE(a.start()) << a.log_tail();
    // As if another gateway had claimed node id 1 (an operator deleted the row, another took it).
    ASSERT_TRUE(exec_sql(test_shards()[0],
                         {"UPDATE gateway_leases SET journal_id = 12345, holder = 'elsewhere:1 (pid 1)', "
                          "expires_at = NOW(6) + INTERVAL 1 HOUR WHERE node_id = 1"},
                         db));
    // It renews every second (a third of 3 s): it must find out and stop with the start's code.
    EXPECT_EQ(exit_code_within(a, 15s), 3) << a.log_tail();
    EXPECT_NE(a.log_tail().find("stopping: node id 1 is held by another running gateway, elsewhere:1"), std::string::npos)
        << a.log_tail();
}

TEST(gateways, a_read_on_another_gateway_waits_for_the_writers_applied_marks) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_gw_ryw";
    fresh_database(db);
    auto ao = gateway(db, 1);
    ao.apply_toml = "paused = true";  // A journals but does not apply until resumed
    cairnd_process a(ao);
    ASSERT_TRUE(a.start()) << a.log_tail();
    cairnd_process b(gateway(db, 2));
    ASSERT_TRUE(b.start()) << b.log_tail();

    auto w = http_post(a.port(), "/v1/graphs/g/edges", R"({"source_id": 7, "destination_id": 8, "position": 5})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    const json ack = json::parse(w->body);
    const std::string after = ack["after"];
    EXPECT_EQ(after, "1:" + std::to_string(ack["seq"].get<std::uint64_t>()));

    // B cannot know A's seqs: it waits on the shards' applied marks of node 1, and says so.
    auto r = http_get(b.port(), "/v1/graphs/g/edges/7/8?after=" + after + "&timeout_ms=300");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 504) << r->body;
    EXPECT_NE(r->body.find("by the gateway with node id 1"), std::string::npos) << r->body;
    // Without after= B reads what the shards hold: nothing yet.
    r = http_get(b.port(), "/v1/graphs/g/edges/7/8");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << r->body;

    // A waiting read on B ends as soon as A applies.
    std::optional<simple_reply> waited;
    std::thread reader([&] { waited = http_get(b.port(), "/v1/graphs/g/edges/7/8?after=" + after + "&timeout_ms=20000"); });
    auto resume = http_post(a.port(), "/v1/admin/apply/resume", R"({"all": true})");
    ASSERT_TRUE(resume);
    EXPECT_EQ(resume->status, 200) << resume->body;
    reader.join();
    ASSERT_TRUE(waited);
    EXPECT_EQ(waited->status, 200) << waited->body;
    EXPECT_EQ(json::parse(waited->body)["position"], 5) << waited->body;

    // The marks reach both shards (the edge has a row on each endpoint's shard, or the idle flush
    // writes the other's: waited on, the read above needed only the source's shard), and A's own seq
    // form works on A, while a bad one is refused.
    const auto mark_on = [&](const shard_endpoint& s) -> std::uint64_t {
        auto m = query_sql(s, "SELECT seq FROM applied_marks WHERE node_id = 1", db);
        return m && m.value().size() == 1 ? std::stoull(m.value()[0]) : 0;
    };
    for (const auto& s : test_shards()) {
        EXPECT_TRUE(wait_until([&] { return mark_on(s) >= ack["seq"].get<std::uint64_t>(); }, 20s))
            << "shard " << s.port << ": mark " << mark_on(s) << ", want at least " << ack["seq"].get<std::uint64_t>();
    }
    r = http_get(a.port(), "/v1/graphs/g/edges/7/8?after=" + after);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    r = http_get(b.port(), "/v1/graphs/g/edges/7/8?after=1024:5");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

TEST(gateways, metrics_show_the_window_only_this_gateway_holds) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_gw_window";
    fresh_database(db);
    auto o = gateway(db, 1);
    o.apply_toml = "paused = true";
    cairnd_process a(o);
    ASSERT_TRUE(a.start()) << a.log_tail();
    EXPECT_EQ(metric(a.port(), "cairn_apply_unapplied_ops"), 0.0);
    EXPECT_EQ(metric(a.port(), "cairn_apply_oldest_unapplied_age_seconds"), 0.0);
    for (int i = 0; i < 5; ++i) {
        auto w = http_post(a.port(), "/v1/graphs/g/edges", json{{"source_id", i}, {"destination_id", 100}}.dump());
        ASSERT_TRUE(w);
        ASSERT_EQ(w->status, 202) << w->body;
    }
    EXPECT_EQ(metric(a.port(), "cairn_apply_unapplied_ops"), 5.0);
    // The oldest op's age grows while nothing applies (waited on, not slept for).
    std::optional<double> age;
    EXPECT_TRUE(wait_until(
        [&] {
            age = metric(a.port(), "cairn_apply_oldest_unapplied_age_seconds");
            return age && *age > 0.2;
        },
        10s))
        << (age ? std::to_string(*age) : "no metric");
    auto resume = http_post(a.port(), "/v1/admin/apply/resume", R"({"all": true})");
    ASSERT_TRUE(resume);
    ASSERT_TRUE(wait_applied(a.port(), 20s));
    EXPECT_EQ(metric(a.port(), "cairn_apply_unapplied_ops"), 0.0);
    EXPECT_EQ(metric(a.port(), "cairn_apply_oldest_unapplied_age_seconds"), 0.0);
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

// The shard map (docs/operations.md, "The shard map"): each shard's database keeps its place, and a
// gateway whose [[shards]] list it elsewhere applies nothing to it and reads nothing from it; its
// writes wait in its journal.
TEST(gateways, a_gateway_that_lists_the_shards_in_another_order_touches_neither) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_gw_map";
    fresh_database(db);
    const auto shards = test_shards();
    cairnd_process a(gateway(db, 1));
    ASSERT_TRUE(a.start()) << a.log_tail();
    auto w = http_post(a.port(), "/v1/graphs/g/edges?wait=applied", R"({"source_id": 1, "destination_id": 2})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    for (std::size_t i = 0; i < 2; ++i) {
        auto id = query_sql(shards[i], "SELECT shard_index, shard_count, map_version FROM shard_identity", db);
        ASSERT_TRUE(id) << id.error().message();
        EXPECT_EQ(id.value(), (std::vector<std::string>{fmt::format("{}\t2\t1", i)})) << "shard " << i;
    }

    const auto refused_within = [](cairnd_process& gw, const std::string& text) {
        return wait_until([&] { return gw.log_tail(20000).find(text) != std::string::npos; }, 20s);
    };
    auto swapped = gateway(db, 2);
    swapped.shards = {shards[1], shards[0]};
    cairnd_process b(swapped);
    ASSERT_TRUE(b.start()) << b.log_tail();
    // An edge whose two rows live on the two shards, so that both of B's apply workers must connect.
    const auto map = core::shard_map::equal_ranges(2);
    std::int64_t far = 6;
    while (map.shard_of_id(far) == map.shard_of_id(5)) far = far * 2 + 1;
    auto wb = http_post(b.port(), "/v1/graphs/g/edges", fmt::format(R"({{"source_id": 5, "destination_id": {}}})", far));
    ASSERT_TRUE(wb);
    ASSERT_EQ(wb->status, 202) << wb->body;  // journaled: it waits there
    EXPECT_TRUE(refused_within(b, "this database is shard 1 of 2 (shard map version 1), but this gateway's config lists it as shard 0 of 2"))
        << b.log_tail();
    EXPECT_TRUE(refused_within(b, "this database is shard 0 of 2 (shard map version 1), but this gateway's config lists it as shard 1 of 2"))
        << b.log_tail();
    // Nor does its node id's lease land in the database it took for shard 0: the claim at its start
    // checks the identity as the pools do (it once wrote node 2's lease row on shard 1).
    EXPECT_NE(b.log_tail(20000).find("did not answer the lease claim: this database is shard 1 of 2"), std::string::npos)
        << b.log_tail();
    if (auto lease_rows = query_sql(shards[1], "SELECT node_id FROM gateway_leases", db); lease_rows) {
        EXPECT_TRUE(lease_rows.value().empty()) << "lease rows on shard 1: " << lease_rows.value().size();
    }
    auto rb = http_get(b.port(), "/v1/graphs/g/edges/1/2");
    ASSERT_TRUE(rb);
    EXPECT_EQ(rb->status, 503) << "a read through the misplaced shard: " << rb->body;
    EXPECT_EQ(metric(b.port(), "cairn_apply_applied_seq{shard=\"0\"}"), 0.0);
    EXPECT_EQ(metric(b.port(), "cairn_apply_applied_seq{shard=\"1\"}"), 0.0);
    const auto stored = forward_edges(db);
    EXPECT_EQ(stored.count({"g", 5, far, 0}), 0u) << "the swapped gateway applied its write";
    EXPECT_EQ(stored.count({"g", 1, 2, 0}), 1u);
    EXPECT_EQ(b.terminate(), 0) << b.log_tail();

    // A third shard listed after the two (as ahead of a split, docs/resharding.md) changes no key's
    // shard: keys route by the two the deployment started with (shard 0's identity); the third, which
    // is shard 0's database again, is refused.
    auto three = gateway(db, 3);
    three.shards = {shards[0], shards[1], shards[0]};
    cairnd_process c(three);
    ASSERT_TRUE(c.start()) << c.log_tail();
    EXPECT_TRUE(refused_within(c, "but this gateway's config lists it as shard 2 of 3")) << c.log_tail();
    auto wc = http_post(c.port(), "/v1/graphs/g/edges?wait=applied", fmt::format(R"({{"source_id": 7, "destination_id": {}}})", far));
    ASSERT_TRUE(wc);
    EXPECT_EQ(wc->status, 202) << wc->body;
    for (std::size_t i = 0; i < 2; ++i) {
        auto rows = query_sql(shards[i], fmt::format("SELECT node_id FROM edges WHERE direction = 0 AND node_id = 7"), db);
        ASSERT_TRUE(rows) << rows.error().message();
        EXPECT_EQ(rows.value().size(), map.shard_of_id(7) == i ? 1u : 0u) << "shard " << i;
    }
    EXPECT_EQ(c.terminate(), 0) << c.log_tail();

    // The first gateway goes on as before.
    auto ra = http_get(a.port(), "/v1/graphs/g/edges/1/2");
    ASSERT_TRUE(ra);
    EXPECT_EQ(ra->status, 200) << ra->body;
    EXPECT_EQ(a.terminate(), 0) << a.log_tail();
}

}  // namespace
}  // namespace cairn::test
