// Set arithmetic through the real cairnd and shards: intersection, union and difference of
// single-node queries, paged with cursors, against a model of the same random graphs.
#include "net/edge_json.hpp"
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/ws_client.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string_view>

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

// One page of a set request: its ids and cursors (JSON text, "null" when absent).
struct set_page_answer {
    std::vector<std::int64_t> ids;
    std::string next = "null";
    std::string prev = "null";
};

std::variant<set_page_answer, int> set_page(std::uint16_t port, const std::string& graph, const std::string& expr_fields,
                                            std::string_view order, std::size_t limit, const std::string& cursor) {
    auto r = http_post(port, "/v1/graphs/" + graph + "/sets",
                       fmt::format(R"({{{},"order":"{}","limit":{},"cursor":{}}})", expr_fields, order, limit, cursor));
    if (!r) return -1;
    if (r->status != 200) return r->status;
    auto j = nlohmann::json::parse(r->body);
    return set_page_answer{j["ids"].get<std::vector<std::int64_t>>(), j["next_cursor"].dump(), j["prev_cursor"].dump()};
}

// A random set expression over the random graph below: its request fields, and the ids it denotes.
struct model_expr {
    std::string json;  // "op":..,"queries":[..] (the fields of an object, without braces)
    std::set<std::int64_t> want;
    std::size_t leaves = 0;  // single-node queries at every depth
};

model_expr gen_model_expr(const std::map<std::pair<int, int>, std::string>& last, int depth) {
    const auto op = *rc::gen::element<std::string>("intersect", "union", "difference");
    const auto n = *rc::gen::inRange(op == "difference" ? 2 : 1, 4);
    std::vector<std::set<std::int64_t>> sets;
    std::string queries;
    std::size_t leaves = 0;
    for (int i = 0; i < n; ++i) {
        if (i) queries += ',';
        if (depth > 1 && *rc::gen::inRange(0, 3) == 0) {
            auto sub = gen_model_expr(last, depth - 1);
            queries += "{" + sub.json + "}";
            sets.push_back(std::move(sub.want));
            leaves += sub.leaves;
            continue;
        }
        // A leaf: a node's forward or backward edges in one or two states.
        const int node = *rc::gen::inRange(0, 6);
        const bool forward = *rc::gen::inRange(0, 4) != 0;
        const auto states = *rc::gen::element<std::string>("normal", "archived", "normal,archived", "removed,normal");
        std::set<std::int64_t> ids;
        for (const auto& [k, state] : last) {
            if (states.find(state) == std::string::npos) continue;
            if (forward && k.first == node) ids.insert(k.second);
            if (!forward && k.second == node) ids.insert(k.first);
        }
        queries += fmt::format(R"({{"node_id":{},"direction":"{}","state":"{}"}})", node, forward ? "forward" : "backward", states);
        sets.push_back(std::move(ids));
        ++leaves;
    }
    std::set<std::int64_t> acc = sets[0];
    for (std::size_t i = 1; i < sets.size(); ++i) {
        std::set<std::int64_t> next;
        auto out = std::inserter(next, next.begin());
        if (op == "intersect") std::set_intersection(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        if (op == "union") std::set_union(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        if (op == "difference") std::set_difference(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        acc = std::move(next);
    }
    return {fmt::format(R"("op":"{}","queries":[{}])", op, queries), std::move(acc), leaves};
}

TEST_F(edge_sets_http, nested_expressions_walk_both_ways_in_both_orders_and_count_as_the_model) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    int round = 0;
    const bool ok = rc::check("nested set expressions over random graphs equal the model's, page by page", [&] {
        const std::string graph = fmt::format("n{}", round++);
        const auto edges = *rc::gen::container<std::vector<std::tuple<int, int, int>>>(
            rc::gen::tuple(rc::gen::inRange(0, 6), rc::gen::inRange(0, 30), rc::gen::inRange(0, 3)));
        std::map<std::pair<int, int>, std::string> last;  // (source, destination) -> state, in write order
        if (!edges.empty()) {
            std::string body = R"({"edges": [)";
            std::int64_t ts = 1'700'000'000'000;
            for (std::size_t i = 0; i < edges.size(); ++i) {
                const auto& [s, d, st] = edges[i];
                const char* state = st == 0 ? "normal" : st == 1 ? "removed" : "archived";
                body += fmt::format(R"({}{{"source_id":{},"destination_id":{},"state":"{}","ts":{}}})", i ? "," : "", s, d,
                                    state, ts++);
                last[{s, d}] = state;
            }
            body += "]}";
            auto w = http_post(port, "/v1/graphs/" + graph + "/edges", body);
            RC_ASSERT(w && w->status == 202);
            RC_ASSERT(wait_applied(port, 20s));
        }
        const auto e = gen_model_expr(last, 3);
        RC_LOG() << e.json << "\n";
        const auto limit = *rc::gen::inRange<std::size_t>(1, 8);
        if (e.leaves > net::set_queries_max) {
            // Up to 27 leaves are generated: past the limit, every form of the request is refused.
            const auto p = set_page(port, graph, e.json, "asc", limit, "null");
            RC_ASSERT(std::holds_alternative<int>(p) && std::get<int>(p) == 400);
            auto c = http_post(port, "/v1/graphs/" + graph + "/sets", fmt::format(R"({{{},"count":true}})", e.json));
            RC_ASSERT(c && c->status == 400);
            RC_ASSERT(c->body.find("single-node queries") != std::string::npos);
            return;
        }
        for (const std::string_view order : {"asc", "desc"}) {
            std::vector<std::int64_t> want(e.want.begin(), e.want.end());
            if (order == "desc") std::reverse(want.begin(), want.end());
            // Forward through next_cursor from the first page.
            std::vector<std::vector<std::int64_t>> pages;
            std::vector<std::int64_t> walked;
            std::string cursor = "null";
            std::string last_prev = "null";
            for (int n = 0; n < 200; ++n) {
                auto p = set_page(port, graph, e.json, order, limit, cursor);
                RC_ASSERT(std::holds_alternative<set_page_answer>(p));
                const auto& page = std::get<set_page_answer>(p);
                RC_ASSERT(page.ids.size() <= limit);
                if (page.next != "null") RC_ASSERT(page.ids.size() == limit);  // never silently short
                RC_ASSERT((page.prev == "null") == (n == 0 || page.ids.empty()));
                walked.insert(walked.end(), page.ids.begin(), page.ids.end());
                last_prev = page.prev;
                if (page.next == "null") break;
                cursor = page.next;
            }
            RC_ASSERT(walked == want);
            // Backward through prev_cursor from the last page: everything before it, in order.
            std::vector<std::int64_t> back;
            cursor = last_prev;
            for (int n = 0; n < 200 && cursor != "null"; ++n) {
                auto p = set_page(port, graph, e.json, order, limit, cursor);
                RC_ASSERT(std::holds_alternative<set_page_answer>(p));
                const auto& page = std::get<set_page_answer>(p);
                RC_ASSERT(!page.ids.empty() && page.ids.size() <= limit);
                RC_ASSERT(page.next != "null");
                if (page.prev != "null") RC_ASSERT(page.ids.size() == limit);
                back.insert(back.begin(), page.ids.begin(), page.ids.end());
                cursor = page.prev;
            }
            const std::size_t last_page = walked.size() % limit == 0 && !walked.empty() ? limit : walked.size() % limit;
            RC_ASSERT(back == std::vector<std::int64_t>(want.begin(), want.end() - static_cast<std::ptrdiff_t>(last_page)));
        }
        auto c = http_post(port, "/v1/graphs/" + graph + "/sets", fmt::format(R"({{{},"count":true}})", e.json));
        RC_ASSERT(c && c->status == 200);
        RC_ASSERT(nlohmann::json::parse(c->body)["count"].get<std::size_t>() == e.want.size());
    });
    EXPECT_TRUE(ok);
}

TEST_F(edge_sets_http, a_cursor_of_another_order_or_expression_is_refused) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    auto w = http_post(port, "/v1/graphs/cur/edges",
                       R"({"edges":[{"source_id":1,"destination_id":5},{"source_id":1,"destination_id":6},{"source_id":1,"destination_id":7}]})");
    ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "");
    ASSERT_TRUE(wait_applied(port, 20s));
    const std::string expr = R"("op":"union","queries":[{"node_id":1}])";
    auto p = set_page(port, "cur", expr, "asc", 1, "null");
    ASSERT_TRUE(std::holds_alternative<set_page_answer>(p));
    const auto next = std::get<set_page_answer>(p).next;
    ASSERT_NE(next, "null");
    EXPECT_TRUE(std::holds_alternative<set_page_answer>(set_page(port, "cur", expr, "asc", 1, next)));
    EXPECT_EQ(std::get<int>(set_page(port, "cur", expr, "desc", 1, next)), 400);
    EXPECT_EQ(std::get<int>(set_page(port, "cur", R"("op":"union","queries":[{"node_id":1,"state":"normal,archived"}])", "asc", 1, next)),
              400);
}

// The same expression, count and one-direction node action over WebSocket give what HTTP gives.
TEST_F(edge_sets_http, websocket_answers_set_expressions_and_one_direction_node_actions_as_http_does) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto port = cairnd_->port();
    auto w = http_post(port, "/v1/graphs/wsx/edges",
                       R"({"edges":[{"source_id":1,"destination_id":5},{"source_id":1,"destination_id":6},)"
                       R"({"source_id":2,"destination_id":6},{"source_id":7,"destination_id":1}]})");
    ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "");
    ASSERT_TRUE(wait_applied(port, 20s));
    const std::string expr =
        R"({"op":"difference","order":"desc","queries":[{"op":"union","queries":[{"node_id":1},{"node_id":2}]},{"node_id":1,"direction":"backward"}]})";
    const std::string count = R"({"op":"intersect","count":true,"queries":[{"node_id":1},{"node_id":2}]})";
    ws_client ws(port);
    ASSERT_TRUE(ws.connect());
    ASSERT_TRUE(ws.send_text(R"({"id":"page","method":"POST","path":"/v1/graphs/wsx/sets","body":)" + expr + "}"));
    ASSERT_TRUE(ws.send_text(R"({"id":"count","method":"POST","path":"/v1/graphs/wsx/sets","body":)" + count + "}"));
    ASSERT_TRUE(ws.send_text(
        R"({"id":"negate","method":"POST","path":"/v1/graphs/wsx/nodes/1/negate?direction=backward&wait=applied"})"));
    std::map<std::string, nlohmann::json> answers;
    for (int i = 0; i < 3; ++i) {
        auto f = ws.read();
        ASSERT_TRUE(f) << f.error().message();
        auto answer = nlohmann::json::parse(f.value().data);
        answers[answer["id"].get<std::string>()] = answer;
    }
    ws.close();
    auto page = http_post(port, "/v1/graphs/wsx/sets", expr);
    ASSERT_TRUE(page && page->status == 200);
    EXPECT_EQ(answers["page"]["status"], 200);
    // rows_read may differ: the negate may have run between the two reads (it hides 7 -> 1).
    auto by_http = nlohmann::json::parse(page->body);
    by_http.erase("rows_read");
    answers["page"]["body"].erase("rows_read");
    EXPECT_EQ(answers["page"]["body"], by_http);
    EXPECT_EQ(answers["page"]["body"]["ids"], nlohmann::json::parse("[6,5]"));
    auto counted = http_post(port, "/v1/graphs/wsx/sets", count);
    ASSERT_TRUE(counted && counted->status == 200);
    EXPECT_EQ(answers["count"]["body"], nlohmann::json::parse(counted->body));
    EXPECT_EQ(answers["count"]["body"]["count"], 1);
    EXPECT_EQ(answers["negate"]["status"], 202) << answers["negate"].dump();
    // Node 1's follower is negated; its own follows are not.
    auto n = http_get(port, "/v1/graphs/wsx/nodes/1");
    ASSERT_TRUE(n && n->status == 200);
    const auto rec = nlohmann::json::parse(n->body);
    EXPECT_EQ(rec["backward"]["state"], "negative");
    EXPECT_EQ(rec["backward"]["counts"]["negative"], 1);
    EXPECT_EQ(rec["forward"]["state"], "normal");
    EXPECT_EQ(rec["forward"]["counts"]["normal"], 2);
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
        {R"({"op":"union","queries":[1,2]})", "queries[0]"},
        {R"({"op":"union","queries":[{"node_id":1}],"order":"up"})", "order"},
        {R"({"op":"union","queries":[{"node_id":1}],"count":1})", "count"},
        {R"({"op":"union","queries":[{"node_id":1}],"count":true,"limit":5})", "count"},
        {R"({"op":"union","queries":[{"node_id":1,"state":"normal,gone"}]})", "queries[0].state"},
        {R"({"op":"union","queries":[{"op":"difference","queries":[{"node_id":1}]}]})", "queries[0].queries"},
        {R"({"op":"union","queries":[{"op":"union","queries":[{"node_id":1}],"limit":3}]})", "queries[0].limit"},
        {R"({"op":"union","queries":[{"op":"nand","queries":[{"node_id":1}]}]})", "queries[0].op"},
        {R"({"op":"union","queries":[{"op":"union","queries":[{"op":"union","queries":[{"op":"union","queries":[{"op":"union","queries":[{"node_id":1}]}]}]}]}]})",
         "queries[0].queries[0].queries[0].queries[0]"},
        {fmt::format(R"({{"op":"union","queries":[{}{{"node_id":1}}]}})", [] {
             std::string many;
             for (int i = 0; i < 16; ++i) many += R"({"node_id":1},)";
             return many;
         }()),
         "queries"},
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
