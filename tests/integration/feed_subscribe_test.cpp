// The change feed pushed over /v1/ws (issue 16): SUBSCRIBE /v1/feed?... on a real cairnd. A
// subscriber gets every acknowledged op exactly once, in seq order, while writes run, also when it
// stops reading for a while (the subscription waits for its page to be written before it reads the
// next: nothing is lost and nothing piles up); UNSUBSCRIBE ends it with a last frame and nothing
// follows; refusals (path, wait_ms, a bad from, a duplicate id, too many, an unknown id) are answers,
// not a closed connection; filters and msgpack frames; a stopping gateway ends a subscription with
// 503 and next_from before it closes the connection.
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/ws_client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

cairnd_options subscribe_options(const std::string& db) {
    fresh_database(db);
    cairnd_options o;
    o.database = db;
    return o;
}

json read_json(ws_client& ws) {
    auto f = ws.read();
    EXPECT_TRUE(f) << "no frame: " << (f ? "" : f.error().message());
    if (!f) return json();
    return f.value().binary ? json::from_msgpack(f.value().data, true, false) : json::parse(f.value().data, nullptr, false);
}

TEST(feed_subscribe, every_op_is_pushed_once_in_seq_order_also_to_a_reader_that_pauses) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(subscribe_options("cairn_feed_push"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();

    ws_client ws(gw.port(), 20s);
    ASSERT_TRUE(ws.connect());
    // Small pages, so that the writes below make many of them.
    ASSERT_TRUE(ws.send_text(R"({"id": "s1", "method": "SUBSCRIBE", "path": "/v1/feed?from=0&limit=7"})"));
    const json first = read_json(ws);
    ASSERT_EQ(first["status"], 200) << first.dump();
    ASSERT_EQ(first["event"], "feed") << first.dump();
    EXPECT_EQ(first["body"]["next_from"], 0) << first.dump();
    EXPECT_EQ(metric(gw.port(), "cairn_ws_subscriptions"), 1.0);

    // 60 write requests of 1 to 10 edges; the reader does not read at all until they are all acked.
    std::set<std::string> acked;
    {
        http_connection conn(gw.port());
        std::mt19937 rng(5);
        for (int i = 0; i < 60; ++i) {
            const int n = 1 + static_cast<int>(rng() % 10);
            json edges = json::array();
            for (int k = 0; k < n; ++k) edges.push_back({{"source_id", i * 100 + k}, {"destination_id", k + 1}});
            auto r = conn.post("/v1/graphs/f/edges", json{{"edges", edges}}.dump());
            ASSERT_TRUE(r);
            ASSERT_EQ(r->status, 202) << r->body;
            const json ack = json::parse(r->body);
            const std::uint64_t last = ack["seq"];
            const std::uint64_t first_seq = ack.value("first_seq", last);
            // Op ids of this gateway's writes are node_id << 54 | seq (docs/journal-format.md).
            for (std::uint64_t s = first_seq; s <= last; ++s) acked.insert(std::to_string((std::uint64_t{1} << 54) | s));
        }
    }

    std::set<std::string> delivered;
    std::uint64_t last_seq = 0, next_from = 0;
    std::size_t pages = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (delivered.size() < acked.size() && std::chrono::steady_clock::now() < deadline) {
        const json f = read_json(ws);
        ASSERT_EQ(f["id"], "s1") << f.dump();
        ASSERT_EQ(f["status"], 200) << f.dump();
        ASSERT_EQ(f["event"], "feed") << f.dump();
        ASSERT_FALSE(f["body"]["ops"].empty()) << "a pushed page without ops: " << f.dump();
        ASSERT_LE(f["body"]["ops"].size(), 7u) << "the subscription's limit is 7";
        ++pages;
        for (const auto& e : f["body"]["ops"]) {
            const std::uint64_t seq = e["seq"];
            ASSERT_GT(seq, last_seq) << "ops out of seq order or pushed twice: " << f.dump();
            last_seq = seq;
            ASSERT_TRUE(delivered.insert(e["op_id"].get<std::string>()).second) << "an op pushed twice: " << f.dump();
        }
        next_from = f["body"]["next_from"];
        ASSERT_EQ(next_from, last_seq) << f.dump();
    }
    EXPECT_EQ(delivered, acked);
    EXPECT_GE(pages, acked.size() / 7);

    // UNSUBSCRIBE: a last frame, then nothing more of s1 even as new ops are applied.
    ASSERT_TRUE(ws.send_text(R"({"id": "s1", "method": "UNSUBSCRIBE"})"));
    const json end = read_json(ws);
    EXPECT_EQ(end["id"], "s1") << end.dump();
    EXPECT_EQ(end["event"], "end") << end.dump();
    EXPECT_EQ(end["status"], 200) << end.dump();
    EXPECT_EQ(end["body"]["reason"], "unsubscribed") << end.dump();
    EXPECT_EQ(end["body"]["next_from"], next_from) << end.dump();
    auto w = http_post(gw.port(), "/v1/graphs/f/edges?wait=applied", R"({"source_id": 99999, "destination_id": 1})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    ASSERT_TRUE(ws.send_text(R"({"id": 2, "path": "/livez"})"));
    const json livez = read_json(ws);
    EXPECT_EQ(livez["id"], 2) << "a frame after the subscription ended: " << livez.dump();
    EXPECT_EQ(metric(gw.port(), "cairn_ws_subscriptions"), 0.0);
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(feed_subscribe, refusals_filters_msgpack_and_a_stop) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(subscribe_options("cairn_feed_push_more"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ws_client ws(gw.port(), 20s);
    ASSERT_TRUE(ws.connect());

    // Refusals are answers to their message; the connection stays.
    const auto refused = [&](const std::string& message, int status, const std::string& field) {
        SCOPED_TRACE(message);
        ASSERT_TRUE(ws.send_text(message));
        const json a = read_json(ws);
        EXPECT_EQ(a["status"], status) << a.dump();
        EXPECT_FALSE(a.contains("event")) << "a refusal is a plain answer: " << a.dump();
        if (!field.empty()) {
            EXPECT_EQ(a["body"]["field"], field) << a.dump();
        }
    };
    refused(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/graphs/g/edges/1"})", 400, "path");
    refused(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed?wait_ms=5"})", 400, "wait_ms");
    refused(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed?from=x"})", 400, "from");
    refused(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed?model=nope"})", 400, "model");
    refused(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed", "body": {}})", 400, "body");
    refused(R"({"id": 1, "method": "UNSUBSCRIBE"})", 404, "id");
    refused(R"({"id": 1, "method": "UNSUBSCRIBE", "path": "/v1/feed"})", 400, "path");
    refused(R"({"id": 1, "method": "PATCH", "path": "/v1/feed"})", 400, "method");

    // Sixteen subscriptions run at once on one connection; a seventeenth and a duplicate id are refused.
    for (int i = 0; i < 16; ++i) {
        ASSERT_TRUE(ws.send_text(json{{"id", 100 + i}, {"method", "SUBSCRIBE"}, {"path", "/v1/feed?model=node"}}.dump()));
        const json a = read_json(ws);
        ASSERT_EQ(a["id"], 100 + i) << a.dump();
        ASSERT_EQ(a["event"], "feed") << a.dump();
    }
    refused(R"({"id": 116, "method": "SUBSCRIBE", "path": "/v1/feed"})", 429, "");
    refused(R"({"id": 100, "method": "SUBSCRIBE", "path": "/v1/feed"})", 400, "id");
    EXPECT_EQ(metric(gw.port(), "cairn_ws_subscriptions"), 16.0);
    for (int i = 1; i < 16; ++i) {
        ASSERT_TRUE(ws.send_text(json{{"id", 100 + i}, {"method", "UNSUBSCRIBE"}}.dump()));
        const json a = read_json(ws);
        ASSERT_EQ(a["id"], 100 + i) << a.dump();
        ASSERT_EQ(a["event"], "end") << a.dump();
    }

    // A filter: subscription 100 (model=node) gets the node op and none of the edges around it.
    for (const char* target : {"/v1/graphs/a/edges", "/v1/graphs/a/nodes/12/archive", "/v1/graphs/a/edges"}) {
        auto r = http_post(gw.port(), target, std::string(target).ends_with("archive") ? "" : R"({"source_id": 12, "destination_id": 3})");
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 202) << r->body;
    }
    const json node_page = read_json(ws);
    ASSERT_EQ(node_page["id"], 100) << node_page.dump();
    ASSERT_EQ(node_page["body"]["ops"].size(), 1u) << node_page.dump();
    EXPECT_EQ(node_page["body"]["ops"][0]["seq"], 2) << node_page.dump();
    EXPECT_EQ(node_page["body"]["ops"][0]["op"]["model"], "node") << node_page.dump();

    // msgpack: a binary SUBSCRIBE gets binary frames.
    ASSERT_TRUE(wait_applied(gw.port(), 20s));
    const auto sub = json::to_msgpack(json{{"id", "m"}, {"method", "SUBSCRIBE"}, {"path", "/v1/feed?from=1&model=edge"}});
    ASSERT_TRUE(ws.send_binary(std::string_view(reinterpret_cast<const char*>(sub.data()), sub.size())));
    auto f = ws.read();
    ASSERT_TRUE(f);
    ASSERT_TRUE(f.value().binary);
    const json m = json::from_msgpack(f.value().data);
    EXPECT_EQ(m["id"], "m") << m.dump();
    EXPECT_EQ(m["event"], "feed") << m.dump();
    ASSERT_EQ(m["body"]["ops"].size(), 1u) << m.dump();
    EXPECT_EQ(m["body"]["ops"][0]["seq"], 3) << m.dump();

    // A stop ends both running subscriptions with 503 and their next_from, then closes with 1001.
    std::thread stopper([&] { EXPECT_EQ(gw.terminate(), 0) << gw.log_tail(); });
    std::set<std::string> ended;
    for (int i = 0; i < 2; ++i) {
        auto e = ws.read();
        ASSERT_TRUE(e) << e.error().message();
        const json j = e.value().binary ? json::from_msgpack(e.value().data) : json::parse(e.value().data);
        EXPECT_EQ(j["event"], "end") << j.dump();
        EXPECT_EQ(j["status"], 503) << j.dump();
        EXPECT_TRUE(j["body"].contains("next_from")) << j.dump();
        ended.insert(j["id"].dump());
    }
    EXPECT_EQ(ended, (std::set<std::string>{"100", "\"m\""}));
    auto closed = ws.read();
    EXPECT_FALSE(closed);
    EXPECT_EQ(ws.close_code(), 1001);
    stopper.join();
}

}  // namespace
}  // namespace cairn::test
