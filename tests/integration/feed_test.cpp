// The change feed (issue 16): GET /v1/feed on a real cairnd. A consumer that disconnects and
// resumes many times (sometimes from an older seq, as one that lost its progress) while writes run
// receives every acknowledged op, in seq order, exactly once after deduplicating by op id; filters;
// the long poll; a range retention retired is 410 with the oldest seq; bad parameters are 400; the
// same request works as a /v1/ws message.
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

cairnd_options feed_options(const std::string& db, const std::string& journal_toml = "") {
    fresh_database(db);
    cairnd_options o;
    o.database = db;
    o.journal_toml = journal_toml;
    return o;
}

json get_json(std::uint16_t port, const std::string& target, int want_status = 200) {
    auto r = http_get(port, target);
    EXPECT_TRUE(r) << target << ": no answer";
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << target << ": " << r->body;
    return json::parse(r->body, nullptr, false);
}

TEST(feed, a_consumer_that_resumes_many_times_gets_every_op_once_in_seq_order_while_writes_run) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(feed_options("cairn_feed_resume"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();

    // The writer: 60 requests of 1 to 10 edges each, acknowledged op ids collected.
    std::mutex mu;
    std::set<std::string> acked;
    std::atomic<bool> writing{true};
    std::string writer_error;
    std::thread writer([&] {
        http_connection conn(gw.port());
        std::mt19937 rng(7);
        for (int i = 0; i < 60; ++i) {
            const int n = 1 + static_cast<int>(rng() % 10);
            json edges = json::array();
            for (int k = 0; k < n; ++k) edges.push_back({{"source_id", i * 100 + k}, {"destination_id", k + 1}});
            auto r = conn.post("/v1/graphs/f/edges", json{{"edges", edges}}.dump());
            if (!r || r->status != 202) {
                writer_error = r ? r->body : "no answer";
                break;
            }
            const json ack = json::parse(r->body);
            const std::uint64_t last = ack["seq"];
            const std::uint64_t first = ack.value("first_seq", last);
            std::lock_guard lock(mu);
            // Op ids of this gateway's writes are node_id << 54 | seq (docs/journal-format.md).
            for (std::uint64_t s = first; s <= last; ++s) acked.insert(std::to_string((std::uint64_t{1} << 54) | s));
        }
        writing = false;
    });

    // The consumer: a new connection per poll, a random page size, and now and then a "crash" that
    // resumes from a seq it had already passed (so it sees ops again, as at-least-once allows).
    std::mt19937 rng(11);
    std::uint64_t from = 0;
    std::uint64_t last_seen = 0;
    std::set<std::string> delivered;
    std::size_t polls = 0, duplicates = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
        {
            std::lock_guard lock(mu);
            if (!writing && delivered.size() == acked.size()) break;
        }
        const json page = get_json(gw.port(), "/v1/feed?from=" + std::to_string(from) + "&limit=" +
                                                  std::to_string(1 + rng() % 12) + "&wait_ms=300");
        ASSERT_TRUE(page.is_object());
        ++polls;
        std::uint64_t prev = from;
        for (const auto& e : page["ops"]) {
            const std::uint64_t seq = e["seq"];
            ASSERT_GT(seq, prev) << "ops out of seq order: " << page.dump();
            prev = seq;
            ASSERT_LE(seq, page["applied_through"].get<std::uint64_t>()) << "an op no shard had applied yet";
            if (!delivered.insert(e["op_id"].get<std::string>()).second) {
                ++duplicates;
                ASSERT_LE(seq, last_seen) << "a seq seen before must be one the consumer went back over";
            } else {
                ASSERT_GT(seq, last_seen) << "a new op must come after every op seen before (seq order)";
                last_seen = seq;
            }
            EXPECT_EQ(e["op"]["model"], "edge");
        }
        from = page["next_from"];
        if (rng() % 8 == 0 && from > 5) from -= 1 + rng() % 5;  // lost progress: go back a little
    }
    writer.join();
    ASSERT_TRUE(writer_error.empty()) << writer_error;
    EXPECT_EQ(delivered, acked) << "polls " << polls;
    EXPECT_GT(duplicates, 0u) << "the consumer never went back: the test did not exercise redelivery";
    EXPECT_GT(polls, 20u);
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(feed, filters_long_poll_bad_parameters_and_websocket) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(feed_options("cairn_feed_filters"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    for (const auto& [graph, src] : std::vector<std::pair<std::string, int>>{{"a", 12}, {"b", 12}, {"a", 345}, {"a", 127}}) {
        auto r = http_post(gw.port(), "/v1/graphs/" + graph + "/edges", json{{"source_id", src}, {"destination_id", 1}}.dump());
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 202) << r->body;
    }
    auto n = http_post(gw.port(), "/v1/graphs/a/nodes/12/archive", "");
    ASSERT_TRUE(n);
    ASSERT_EQ(n->status, 202) << n->body;
    ASSERT_TRUE(wait_applied(gw.port(), 20s));

    const auto seqs = [&](const std::string& query) {
        std::vector<std::uint64_t> out;
        const json page = get_json(gw.port(), "/v1/feed?" + query);
        for (const auto& e : page["ops"]) out.push_back(e["seq"]);
        return out;
    };
    EXPECT_EQ(seqs("from=0"), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(seqs("from=2"), (std::vector<std::uint64_t>{3, 4, 5}));
    EXPECT_EQ(seqs("from=0&name=a"), (std::vector<std::uint64_t>{1, 3, 4, 5}));
    EXPECT_EQ(seqs("from=0&model=edge&name=a"), (std::vector<std::uint64_t>{1, 3, 4}));
    EXPECT_EQ(seqs("from=0&model=node"), (std::vector<std::uint64_t>{5}));
    EXPECT_EQ(seqs("from=0&key_prefix=12"), (std::vector<std::uint64_t>{1, 2, 4, 5}));
    EXPECT_EQ(seqs("from=0&limit=2"), (std::vector<std::uint64_t>{1, 2}));
    const json page = get_json(gw.port(), "/v1/feed?from=0&limit=2");
    EXPECT_EQ(page["next_from"], 2);
    EXPECT_EQ(page["applied_through"], 5);
    EXPECT_EQ(page["ops"][0]["op"]["graph"], "a");
    EXPECT_EQ(page["ops"][0]["op"]["source_id"], 12);

    // Long poll: a read waiting at the end returns with the write that arrives meanwhile.
    std::optional<simple_reply> waited;
    const auto started = std::chrono::steady_clock::now();
    std::thread poller([&] { waited = http_get(gw.port(), "/v1/feed?from=5&wait_ms=20000"); });
    auto w = http_post(gw.port(), "/v1/graphs/c/edges", R"({"source_id": 9, "destination_id": 9})");
    ASSERT_TRUE(w);
    poller.join();
    ASSERT_TRUE(waited);
    ASSERT_EQ(waited->status, 200) << waited->body;
    EXPECT_EQ(json::parse(waited->body)["ops"][0]["seq"], 6) << waited->body;
    EXPECT_LT(std::chrono::steady_clock::now() - started, 15s);
    // Nothing new: an empty page after the wait, next_from unchanged.
    const json empty = get_json(gw.port(), "/v1/feed?from=6&wait_ms=100");
    EXPECT_TRUE(empty["ops"].empty());
    EXPECT_EQ(empty["next_from"], 6);

    for (const char* bad : {"from=-1", "from=99", "limit=0", "limit=1001", "wait_ms=999999", "model=edges", "name=",
                            "key_prefix=", "cursor=3"}) {
        get_json(gw.port(), std::string("/v1/feed?") + bad, 400);
    }

    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    ASSERT_TRUE(ws.send_text(R"({"id": 1, "path": "/v1/feed?from=4&limit=5"})"));
    auto f = ws.read();
    ASSERT_TRUE(f);
    const json a = json::parse(f.value().data);
    EXPECT_EQ(a["status"], 200) << a.dump();
    EXPECT_EQ(a["body"]["ops"].size(), 2u) << a.dump();
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(feed, a_range_retention_retired_is_gone_with_the_oldest_seq) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(feed_options("cairn_feed_gone", "retention_seconds = 0"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    // Retention runs on the journal's writer as writes come: keep writing until the first ops are retired.
    std::optional<simple_reply> w;
    std::optional<simple_reply> r;
    wait_until(
        [&] {
            w = http_post(gw.port(), "/v1/graphs/g/edges?wait=applied", R"({"source_id": 1, "destination_id": 2})");
            if (!w || w->status != 202) return true;  // a failed write ends the wait: asserted below
            r = http_get(gw.port(), "/v1/feed?from=0");
            return !r || r->status == 410;
        },
        30s, 100ms);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 410) << r->body;
    const json p = json::parse(r->body);
    EXPECT_EQ(p["type"], "https://cairn.dev/problems/feed-range-gone");
    EXPECT_EQ(p["field"], "from");
    const std::uint64_t oldest = p["oldest_seq"];
    EXPECT_GT(oldest, 1u);
    // Resuming just before the oldest held op works.
    const json page = get_json(gw.port(), "/v1/feed?from=" + std::to_string(oldest - 1));
    ASSERT_FALSE(page["ops"].empty()) << page.dump();
    EXPECT_EQ(page["ops"][0]["seq"], oldest);
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

}  // namespace
}  // namespace cairn::test
