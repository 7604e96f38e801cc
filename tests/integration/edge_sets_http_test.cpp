// Set arithmetic through the real cairnd and shards: intersection, union and difference of
// single-node queries, paged with cursors, against a model of the same random graphs.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

// Walks every page of one set request; returns the ids in order (or the first error status).
std::variant<std::vector<std::int64_t>, int> walk(std::uint16_t port, const std::string& graph, const std::string& op,
                                                  const std::string& queries_json, std::size_t limit) {
    std::vector<std::int64_t> out;
    std::string cursor = "null";
    for (int pages = 0; pages < 1000; ++pages) {
        auto r = http_post(port, "/v1/graphs/" + graph + "/sets",
                           fmt::format(R"({{"op":"{}","queries":{},"limit":{},"cursor":{}}})", op, queries_json, limit, cursor));
        if (!r) return -1;
        if (r->status != 200) return r->status;
        auto j = nlohmann::json::parse(r->body);
        const auto ids = j["ids"].get<std::vector<std::int64_t>>();
        if (!j["next_cursor"].is_null() && ids.size() != limit) return -2;  // a short page that is not the last
        out.insert(out.end(), ids.begin(), ids.end());
        if (j["next_cursor"].is_null()) return out;
        cursor = j["next_cursor"].dump();
    }
    return -3;
}

class edge_sets_http : public cairnd_test {
protected:
    void SetUp() override {
        if (test_shards().size() < 2) return;
        start_cairnd("cairn_e2e_sets");
    }
};

TEST_F(edge_sets_http, flockdb_questions_have_the_right_answers) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    // 12 follows 100..119, 34 follows 110..129; 110 and 111 follow 12 back; 12 removed 100.
    std::string body = R"({"edges": [)";
    bool first = true;
    auto add = [&](int s, int d, const char* state) {
        body += fmt::format(R"({}{{"source_id":{},"destination_id":{},"state":"{}"}})", first ? "" : ",", s, d, state);
        first = false;
    };
    for (int d = 100; d < 120; ++d) add(12, d, "normal");
    for (int d = 110; d < 130; ++d) add(34, d, "normal");
    add(110, 12, "normal");
    add(111, 12, "normal");
    body += "]}";
    auto w = http_post(port, "/v1/graphs/follows/edges", body);
    ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "");
    auto removed = http_post(port, "/v1/graphs/follows/edges", R"({"source_id":12,"destination_id":100,"state":"removed"})");
    ASSERT_TRUE(removed && removed->status == 202);
    ASSERT_TRUE(wait_applied(port, 20s));

    auto both = walk(port, "follows", "intersect",
                     R"([{"node_id":12,"direction":"forward"},{"node_id":34,"direction":"forward"}])", 3);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::int64_t>>(both));
    EXPECT_EQ(std::get<0>(both), (std::vector<std::int64_t>{110, 111, 112, 113, 114, 115, 116, 117, 118, 119}));

    // "Whom does 12 follow that does not follow 12 back?"
    auto not_back = walk(port, "follows", "difference",
                         R"([{"node_id":12,"direction":"forward"},{"node_id":12,"direction":"backward"}])", 4);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::int64_t>>(not_back));
    std::vector<std::int64_t> want;
    for (int d = 101; d < 120; ++d) {
        if (d != 110 && d != 111) want.push_back(d);
    }
    EXPECT_EQ(std::get<0>(not_back), want);

    auto any = walk(port, "follows", "union",
                    R"([{"node_id":12,"direction":"forward"},{"node_id":34,"direction":"forward"}])", 7);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::int64_t>>(any));
    EXPECT_EQ(std::get<0>(any).size(), 29u);  // 101..129
    auto gone = walk(port, "follows", "union", R"([{"node_id":12,"direction":"forward","state":"removed"}])", 5);
    ASSERT_TRUE(std::holds_alternative<std::vector<std::int64_t>>(gone));
    EXPECT_EQ(std::get<0>(gone), (std::vector<std::int64_t>{100}));
}

TEST_F(edge_sets_http, random_graphs_match_the_model) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    int round = 0;
    const bool ok = rc::check("set operations over random graphs equal the model's", [&] {
        // A fresh graph name per case, so that cases do not see each other's edges.
        const std::string graph = fmt::format("g{}", round++);
        const auto edges = *rc::gen::container<std::vector<std::tuple<int, int, bool>>>(
            rc::gen::tuple(rc::gen::inRange(0, 6), rc::gen::inRange(0, 40), rc::gen::arbitrary<bool>()));
        std::map<std::pair<int, int>, bool> last;  // (source, destination) -> normal?, in write order
        if (!edges.empty()) {
            std::string body = R"({"edges": [)";
            std::int64_t ts = 1'700'000'000'000;
            for (std::size_t i = 0; i < edges.size(); ++i) {
                const auto& [s, d, normal] = edges[i];
                body += fmt::format(R"({}{{"source_id":{},"destination_id":{},"state":"{}","ts":{}}})", i ? "," : "", s, d,
                                    normal ? "normal" : "removed", ts++);
                last[{s, d}] = normal;
            }
            body += "]}";
            auto w = http_post(port, "/v1/graphs/" + graph + "/edges", body);
            RC_ASSERT(w && w->status == 202);
            RC_ASSERT(wait_applied(port, 20s));
        }
        auto followed_by = [&](int s) {
            std::set<std::int64_t> out;
            for (const auto& [k, normal] : last) {
                if (k.first == s && normal) out.insert(k.second);
            }
            return out;
        };
        const int a = *rc::gen::inRange(0, 6);
        const int b = *rc::gen::inRange(0, 6);
        const auto op = *rc::gen::element<std::string>("intersect", "union", "difference");
        const auto limit = *rc::gen::inRange<std::size_t>(1, 12);
        const auto sa = followed_by(a);
        const auto sb = followed_by(b);
        std::vector<std::int64_t> want;
        if (op == "intersect") std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(want));
        if (op == "union") std::set_union(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(want));
        if (op == "difference") std::set_difference(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(want));
        auto got = walk(port, graph, op,
                        fmt::format(R"([{{"node_id":{},"direction":"forward"}},{{"node_id":{},"direction":"forward"}}])", a, b),
                        limit);
        RC_ASSERT(std::holds_alternative<std::vector<std::int64_t>>(got));
        RC_ASSERT(std::get<0>(got) == want);
    });
    EXPECT_TRUE(ok);
}

TEST_F(edge_sets_http, bad_set_requests_name_the_field) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"queries":[{"node_id":1}]})", "op"},
        {R"({"op":"xor","queries":[{"node_id":1}]})", "op"},
        {R"({"op":"union"})", "queries"},
        {R"({"op":"union","queries":[]})", "queries"},
        {R"({"op":"difference","queries":[{"node_id":1}]})", "queries"},
        {R"({"op":"union","queries":[{"direction":"forward"}]})", "queries[0].node_id"},
        {R"({"op":"union","queries":[{"node_id":-4}]})", "queries[0].node_id"},
        {R"({"op":"union","queries":[{"node_id":1,"direction":"up"}]})", "queries[0].direction"},
        {R"({"op":"union","queries":[{"node_id":1,"state":"gone"}]})", "queries[0].state"},
        {R"({"op":"union","queries":[{"node_id":1}],"limit":0})", "limit"},
        {R"({"op":"union","queries":[{"node_id":1}],"limit":100000})", "limit"},
        {R"({"op":"union","queries":[{"node_id":1}],"cursor":"abc"})", "cursor"},
        {R"({"op":"union","queries":[{"node_id":1}],"colour":1})", "colour"},
        {R"({"op":"union","queries":[1,2,3,4,5,6,7,8,9]})", "queries"},
    };
    for (const auto& [body, field] : cases) {
        auto r = http_post(port, "/v1/graphs/follows/sets", body);
        ASSERT_TRUE(r) << body;
        EXPECT_EQ(r->status, 400) << body << " -> " << r->body;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << r->body;
        EXPECT_EQ(j.value("field", ""), field) << body << " -> " << r->body;
    }
}

}  // namespace
}  // namespace cairn::test
