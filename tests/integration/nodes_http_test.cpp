// Whole-node ops end to end (issue 4) through the real cairnd and real shards: a node put on
// ice and back, seen by pages and counts; bad input is a 400 and journals nothing.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

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

};

TEST_F(nodes_http, a_node_put_on_ice_and_back_with_a_newer_edge_write_winning) {
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
    EXPECT_EQ(count(7, "forward", "archived"), 20);
    EXPECT_EQ(count(7, "forward", "negative"), 1);  // negative edges are left alone
    EXPECT_EQ(count(7, "backward", "archived"), 1);
    EXPECT_EQ(count(100, "forward", "archived"), 1);  // the other endpoint's row too
    auto e = http_get(port(), "/v1/graphs/follows/edges/7/105");
    ASSERT_TRUE(e);
    EXPECT_EQ(nlohmann::json::parse(e->body)["state"], "archived");

    // An edge write newer than the archive wins over it.
    w = http_post(port(), "/v1/graphs/follows/edges?wait=applied",
                  fmt::format(R"({{"source_id": 7, "destination_id": 101, "ts": {}}})", t0 + 20));
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    EXPECT_EQ(count(7, "forward", "normal"), 1);
    EXPECT_EQ(count(7, "forward", "archived"), 19);

    auto u = http_post(port(), "/v1/graphs/follows/nodes/7/unarchive?wait=applied", "");
    ASSERT_TRUE(u);
    ASSERT_EQ(u->status, 202) << u->body;
    EXPECT_EQ(count(7, "forward", "normal"), 20);
    EXPECT_EQ(count(7, "forward", "archived"), 0);
    EXPECT_EQ(count(100, "forward", "normal"), 1);

    auto r = http_post(port(), "/v1/graphs/follows/nodes/7/remove?wait=applied", "");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    EXPECT_EQ(count(7, "forward", "normal"), 0);
    EXPECT_EQ(count(7, "forward", "removed"), 21);
    EXPECT_EQ(count(7, "backward", "removed"), 1);
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

}  // namespace
}  // namespace cairn::test
