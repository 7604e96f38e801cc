// Whole-node ops end to end (issues 4, 17) through the real cairnd and real shards: a node put on
// ice (covering edges written later) and back, one direction at a time, seen by pages, counts and
// node records; bad input is a 400 and journals nothing. And the node
// reads of issue 17: one node's record, many in one request, and `contains` for one edge.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/ws_client.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

class nodes_http : public cairnd_test {
protected:
    void start(const std::string& db) { start_cairnd(db); }
    std::int64_t count(std::int64_t node, const std::string& direction, const std::string& state) {
        auto r = http_get(port(), fmt::format("/v1/graphs/follows/nodes/{}/count?direction={}&state={}", node, direction, state));
        if (!r || r->status != 200) {
            ADD_FAILURE() << (r ? r->body : "no answer");
            return -1;
        }
        return nlohmann::json::parse(r->body)["count"].get<std::int64_t>();
    }
    nlohmann::json get_json(const std::string& path) {
        auto r = http_get(port(), path);
        if (!r || r->status != 200) {
            ADD_FAILURE() << path << ": " << (r ? std::to_string(r->status) + " " + r->body : "no answer");
            return nlohmann::json();
        }
        return nlohmann::json::parse(r->body);
    }
};

TEST_F(nodes_http, a_node_put_on_ice_covers_later_edges_and_comes_back_with_exactly_what_it_hid) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_nodes");
    const std::uint64_t t0 = 1'790'000'000'000;
    std::string body = R"({"edges": [)";
    for (int i = 0; i < 20; ++i) body += fmt::format(R"({}{{"source_id": 7, "destination_id": {}, "ts": {}}})", i ? "," : "", 100 + i, t0);
    body += fmt::format(R"(, {{"source_id": 100, "destination_id": 7, "ts": {}}})", t0);
    body += fmt::format(R"(, {{"source_id": 7, "destination_id": 200, "state": "negative", "ts": {}}}]}})", t0);
    auto w = http_post(port(), "/v1/graphs/follows/edges", body);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;

    auto a = http_post(port(), "/v1/graphs/follows/nodes/7/archive?wait=applied", fmt::format(R"({{"ts": {}}})", t0 + 10));
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    EXPECT_EQ(count(7, "forward", "normal"), 0);
    EXPECT_EQ(count(7, "forward", "archived"), 21);  // the negative edge too: archived outranks negative
    EXPECT_EQ(count(7, "forward", "negative"), 0);
    EXPECT_EQ(count(7, "backward", "archived"), 1);
    EXPECT_EQ(count(100, "forward", "archived"), 1);  // the other endpoint's row too
    auto e = http_get(port(), "/v1/graphs/follows/edges/7/105");
    ASSERT_TRUE(e);
    EXPECT_EQ(nlohmann::json::parse(e->body)["state"], "archived");

    // Edges written while the node is on ice, newer than the archive, are covered by it: an
    // account put on ice gains no visible edges.
    w = http_post(port(), "/v1/graphs/follows/edges?wait=applied",
                  fmt::format(R"({{"edges": [{{"source_id": 7, "destination_id": 101, "ts": {0}}},)"
                              R"({{"source_id": 7, "destination_id": 300, "ts": {0}}}, {{"source_id": 301, "destination_id": 7, "ts": {0}}}]}})",
                              t0 + 20));
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    EXPECT_EQ(count(7, "forward", "normal"), 0);
    EXPECT_EQ(count(7, "forward", "archived"), 22);
    EXPECT_EQ(count(7, "backward", "archived"), 2);
    EXPECT_EQ(count(301, "forward", "archived"), 1);

    // Restored ("unarchive" is the same action): every edge shows its own state again.
    auto u = http_post(port(), "/v1/graphs/follows/nodes/7/restore?wait=applied", "");
    ASSERT_TRUE(u);
    ASSERT_EQ(u->status, 202) << u->body;
    EXPECT_EQ(count(7, "forward", "normal"), 21);
    EXPECT_EQ(count(7, "forward", "negative"), 1);
    EXPECT_EQ(count(7, "forward", "archived"), 0);
    EXPECT_EQ(count(7, "backward", "normal"), 2);
    EXPECT_EQ(count(100, "forward", "normal"), 1);

    auto r = http_post(port(), "/v1/graphs/follows/nodes/7/remove?wait=applied", "");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    EXPECT_EQ(count(7, "forward", "normal"), 0);
    EXPECT_EQ(count(7, "forward", "removed"), 22);
    EXPECT_EQ(count(7, "backward", "removed"), 2);
    // A remove destroys what existed: a restore brings back only the edges written after it.
    w = http_post(port(), "/v1/graphs/follows/edges",
                  R"({"source_id": 7, "destination_id": 400})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    u = http_post(port(), "/v1/graphs/follows/nodes/7/unarchive?wait=applied", "");
    ASSERT_TRUE(u);
    ASSERT_EQ(u->status, 202) << u->body;
    EXPECT_EQ(count(7, "forward", "normal"), 1);
    EXPECT_EQ(count(7, "forward", "removed"), 22);
}

TEST_F(nodes_http, a_node_action_may_cover_one_direction) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_node_direction");
    // 8 follows 1 and 2; 3 and 4 follow 8.
    auto w = http_post(port(), "/v1/graphs/follows/edges",
                       R"({"edges": [{"source_id": 8, "destination_id": 1}, {"source_id": 8, "destination_id": 2},)"
                       R"({"source_id": 3, "destination_id": 8}, {"source_id": 4, "destination_id": 8}]})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    // Its followers negated, its own follows untouched; then a new follower is negated too.
    auto a = http_post(port(), "/v1/graphs/follows/nodes/8/negate?direction=backward", "");
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    w = http_post(port(), "/v1/graphs/follows/edges?wait=applied", R"({"source_id": 5, "destination_id": 8})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    EXPECT_EQ(count(8, "backward", "negative"), 3);
    EXPECT_EQ(count(8, "backward", "normal"), 0);
    EXPECT_EQ(count(8, "forward", "normal"), 2);
    EXPECT_EQ(count(5, "forward", "negative"), 1);  // the follower's own row of the edge
    auto n = get_json("/v1/graphs/follows/nodes/8");
    EXPECT_EQ(n["backward"]["state"], "negative");
    EXPECT_FALSE(n["backward"]["ts"].is_null());
    EXPECT_EQ(n["forward"]["state"], "normal");
    EXPECT_TRUE(n["forward"]["ts"].is_null());

    // Its follows archived; then both directions restored at once.
    a = http_post(port(), "/v1/graphs/follows/nodes/8/archive?direction=forward&wait=applied", "");
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    EXPECT_EQ(count(8, "forward", "archived"), 2);
    EXPECT_EQ(count(8, "backward", "negative"), 3);
    a = http_post(port(), "/v1/graphs/follows/nodes/8/restore?direction=both&wait=applied", "");
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    EXPECT_EQ(count(8, "forward", "normal"), 2);
    EXPECT_EQ(count(8, "backward", "normal"), 3);
    n = get_json("/v1/graphs/follows/nodes/8");
    EXPECT_EQ(n["forward"]["state"], "normal");
    EXPECT_EQ(n["backward"]["state"], "normal");
    EXPECT_FALSE(n["forward"]["ts"].is_null());
}

TEST_F(nodes_http, bad_input_is_a_400_and_journals_nothing) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_nodes_bad");
    const auto before = readiness(port());
    ASSERT_TRUE(before);
    const struct {
        std::string target;
        std::string body;
        std::string field;
    } cases[] = {
        {"/v1/graphs/follows/nodes/7/freeze", "", "action"},
        {"/v1/graphs/follows/nodes/-1/archive", "", "node_id"},
        {"/v1/graphs/follows/nodes/abc/remove", "", "node_id"},
        {"/v1/graphs/follows/nodes/99999999999999999999/remove", "", "node_id"},
        {"/v1/graphs/bad-name/nodes/7/remove", "", "graph"},
        {"/v1/graphs/follows/nodes/7/archive", R"({"ts": "soon"})", "ts"},
        {"/v1/graphs/follows/nodes/7/archive", R"({"when": 1})", "when"},
        {"/v1/graphs/follows/nodes/7/archive", "[1]", "body"},
        {"/v1/graphs/follows/nodes/7/archive", "{", "body"},
        {"/v1/graphs/follows/nodes/7/archive?wait=maybe", "", "wait"},
        {"/v1/graphs/follows/nodes/7/archive?direction=sideways", "", "direction"},
        {"/v1/graphs/follows/nodes/7/archive?direction=", "", "direction"},
        {"/v1/graphs/follows/nodes/7/archive?colour=red", "", "colour"},
    };
    for (const auto& c : cases) {
        auto res = http_post(port(), c.target, c.body);
        ASSERT_TRUE(res) << c.target;
        EXPECT_EQ(res->status, 400) << c.target << " " << c.body << " -> " << res->body;
        const auto j = nlohmann::json::parse(res->body, nullptr, false);
        EXPECT_EQ(j.value("field", std::string()), c.field) << c.target << " " << c.body << " -> " << res->body;
    }
    const auto after = readiness(port());
    ASSERT_TRUE(after);
    EXPECT_EQ((*after)["checks"]["shards"][0]["applied_seq"], (*before)["checks"]["shards"][0]["applied_seq"]);
    auto st = http_get(port(), "/v1/admin/status");
    ASSERT_TRUE(st);
    ASSERT_EQ(st->status, 200) << st->body;
    EXPECT_EQ(nlohmann::json::parse(st->body)["journal"]["last_seq"], 0);
}

TEST_F(nodes_http, a_node_record_shows_its_state_the_time_of_its_last_action_and_its_counts) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_node_reads");
    const std::uint64_t t0 = 1'790'000'000'000;
    // Node 7 follows 3 nodes (one of them negatively); node 9 follows 7.
    auto w = http_post(port(), "/v1/graphs/follows/edges?wait=applied",
                       fmt::format(R"({{"edges": [{{"source_id": 7, "destination_id": 1, "ts": {0}}},)"
                                   R"({{"source_id": 7, "destination_id": 2, "ts": {0}}},)"
                                   R"({{"source_id": 7, "destination_id": 3, "state": "negative", "ts": {0}}},)"
                                   R"({{"source_id": 9, "destination_id": 7, "ts": {0}}}]}})",
                                   t0));
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;

    auto n = get_json("/v1/graphs/follows/nodes/7");
    EXPECT_EQ(n["graph"], "follows");
    EXPECT_EQ(n["node_id"], 7);
    EXPECT_EQ(n["known"], true);
    EXPECT_EQ(n["forward"]["state"], "normal");
    EXPECT_TRUE(n["forward"]["ts"].is_null());  // no node action yet
    EXPECT_EQ(n["forward"]["counts"], nlohmann::json::parse(R"({"normal":2,"removed":0,"archived":0,"negative":1})"));
    EXPECT_EQ(n["backward"]["counts"]["normal"], 1);

    // A node never seen is not known; an id as a string comes back as one with ?ids=string.
    auto unknown = get_json("/v1/graphs/follows/nodes/424242?ids=string");
    EXPECT_EQ(unknown["node_id"], "424242");
    EXPECT_EQ(unknown["known"], false);
    EXPECT_EQ(unknown["forward"]["counts"]["normal"], 0);

    // Archived at t0+10: both directions say so, with the action's time; the counts follow.
    auto a = http_post(port(), "/v1/graphs/follows/nodes/7/archive?wait=applied", fmt::format(R"({{"ts": {}}})", t0 + 10));
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    n = get_json("/v1/graphs/follows/nodes/7");
    for (const char* d : {"forward", "backward"}) {
        EXPECT_EQ(n[d]["state"], "archived") << d;
        EXPECT_EQ(n[d]["ts_ms"], t0 + 10) << d;
    }
    EXPECT_EQ(n["forward"]["counts"]["archived"], 3);  // the negative edge too: archived outranks negative
    EXPECT_EQ(n["forward"]["counts"]["negative"], 0);
    EXPECT_EQ(n["backward"]["counts"]["archived"], 1);

    // A page over several states merges them in position order; a count takes one state.
    auto page = get_json("/v1/graphs/follows/nodes/7/edges?state=negative,archived&limit=2");
    EXPECT_EQ(page["state"], "archived,negative");
    ASSERT_EQ(page["edges"].size(), 2u);
    auto rest = get_json("/v1/graphs/follows/nodes/7/edges?state=negative,archived&limit=2&cursor=" +
                         page["next_cursor"].get<std::string>());
    ASSERT_EQ(rest["edges"].size(), 1u);
    std::set<std::int64_t> seen;
    for (const auto* p : {&page, &rest}) {
        for (const auto& e : (*p)["edges"]) seen.insert(e["destination_id"].get<std::int64_t>());
    }
    EXPECT_EQ(seen, (std::set<std::int64_t>{1, 2, 3}));
    auto bad_count = http_get(port(), "/v1/graphs/follows/nodes/7/count?state=normal,archived");
    ASSERT_TRUE(bad_count);
    EXPECT_EQ(bad_count->status, 400);

    // A node known only through a node action (no edges) is known; a remove later than the
    // unarchive makes it removed; a remove's tie with an archive is a remove.
    a = http_post(port(), "/v1/graphs/follows/nodes/55/archive?wait=applied", fmt::format(R"({{"ts": {}}})", t0 + 20));
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;
    a = http_post(port(), "/v1/graphs/follows/nodes/55/remove?wait=applied", fmt::format(R"({{"ts": {}}})", t0 + 20));
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 202) << a->body;

    // Many nodes at once, in request order, repeats included.
    auto r = http_post(port(), "/v1/graphs/follows/nodes/get", R"({"node_ids": [55, 7, 424242, "9", 7]})");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto many = nlohmann::json::parse(r->body)["nodes"];
    ASSERT_EQ(many.size(), 5u);
    EXPECT_EQ(many[0]["node_id"], 55);
    EXPECT_EQ(many[0]["known"], true);
    EXPECT_EQ(many[0]["forward"]["state"], "removed");
    EXPECT_EQ(many[0]["forward"]["ts_ms"], t0 + 20);
    auto n_alone = n;
    n_alone.erase("graph");
    EXPECT_EQ(many[1], n_alone);  // the same record as GET .../nodes/7, without the graph
    EXPECT_EQ(many[2]["known"], false);
    EXPECT_EQ(many[3]["node_id"], 9);
    EXPECT_EQ(many[3]["forward"]["counts"]["archived"], 1);  // its edge to 7 is archived with 7
    EXPECT_EQ(many[4], many[1]);

    // Over WebSocket the same routes give the same answers.
    ws_client ws(port());
    ASSERT_TRUE(ws.connect());
    ASSERT_TRUE(ws.send_text(R"({"id": "one", "method": "GET", "path": "/v1/graphs/follows/nodes/7"})"));
    ASSERT_TRUE(ws.send_text(R"({"id": "many", "method": "POST", "path": "/v1/graphs/follows/nodes/get", "body": {"node_ids": [55, 7, 424242, "9", 7]}})"));
    ASSERT_TRUE(ws.send_text(R"({"id": "has", "method": "GET", "path": "/v1/graphs/follows/edges/7/1/contains"})"));
    std::map<std::string, nlohmann::json> answers;
    for (int i = 0; i < 3; ++i) {
        auto f = ws.read();
        ASSERT_TRUE(f) << f.error().message();
        auto answer = nlohmann::json::parse(f.value().data);
        EXPECT_EQ(answer["status"], 200) << answer.dump();
        answers[answer["id"].get<std::string>()] = answer["body"];
    }
    EXPECT_EQ(answers["one"], n);
    EXPECT_EQ(answers["many"], nlohmann::json::parse(r->body));
    EXPECT_EQ(answers["has"]["contains"], false);  // 7 -> 1 is archived with 7
    EXPECT_EQ(answers["has"]["state"], "archived");
    ws.close();

    // Bad input is a 400 naming the field.
    for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
             {R"({"node_ids": []})", "node_ids"},
             {R"({"node_ids": [-1]})", "node_ids[0]"},
             {R"({"ids": [1]})", "body"},
             {R"([1, 2])", "body"},
             {"{", "body"}}) {
        auto bad = http_post(port(), "/v1/graphs/follows/nodes/get", body);
        ASSERT_TRUE(bad);
        EXPECT_EQ(bad->status, 400) << body;
        EXPECT_EQ(nlohmann::json::parse(bad->body)["field"], field) << body;
    }
    auto bad = http_get(port(), "/v1/graphs/follows/nodes/x7");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    bad = http_get(port(), "/v1/graphs/follows/nodes/7?state=normal");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_EQ(nlohmann::json::parse(bad->body)["field"], "state");
}

TEST_F(nodes_http, contains_is_true_for_normal_and_negative_edges_only) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_contains");
    auto w = http_post(port(), "/v1/graphs/follows/edges?wait=applied",
                       R"({"edges": [{"source_id": 1, "destination_id": 2}, {"source_id": 1, "destination_id": 3, "state": "negative"},)"
                       R"({"source_id": 1, "destination_id": 4, "state": "removed"}, {"source_id": 1, "destination_id": 5, "state": "archived"}]})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    const std::vector<std::tuple<int, bool, nlohmann::json>> expected{
        {2, true, "normal"}, {3, true, "negative"}, {4, false, "removed"}, {5, false, "archived"}, {6, false, nullptr}};
    for (const auto& [d, contains, state] : expected) {
        auto c = get_json(fmt::format("/v1/graphs/follows/edges/1/{}/contains", d));
        EXPECT_EQ(c["contains"], contains) << d;
        EXPECT_EQ(c["state"], state) << d;
        EXPECT_EQ(c["source_id"], 1);
        EXPECT_EQ(c["destination_id"], d);
    }
    // The reverse direction is another edge.
    EXPECT_EQ(get_json("/v1/graphs/follows/edges/2/1/contains")["contains"], false);
    auto bad = http_get(port(), "/v1/graphs/follows/edges/1/x/contains");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
}

}  // namespace
}  // namespace cairn::test
