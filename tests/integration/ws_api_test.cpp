// The WebSocket API (/v1/ws) through the real cairnd and real shards, with cairn's own test
// client: 1,000 pipelined writes and 1,000 pipelined reads on one connection in JSON and in
// msgpack frames (every answer matched by id, equal to what HTTP answers), per-request errors,
// every WebSocket limit exceeded once (in flight, message size, idle), and auth on upgrade.
#include "tests/support/e2e.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/ws_client.hpp"

#include <boost/beast/websocket/error.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <map>
#include <set>

namespace cairn::test {
namespace {

using json = nlohmann::json;

std::string to_msgpack(const json& j) {
    const auto bytes = json::to_msgpack(j);
    return std::string(bytes.begin(), bytes.end());
}

json from_frame(const ws_frame& f) {
    if (f.binary) return json::from_msgpack(f.data);
    return json::parse(f.data);
}

cairnd_options options(const std::string& db, const std::string& extra = {}) {
    fresh_database(db);
    cairnd_options o;
    o.database = db;
    o.extra_toml = extra;
    return o;
}

TEST(ws_api, a_thousand_pipelined_writes_and_reads_in_json_and_msgpack) {
    CAIRN_REQUIRE_SHARDS(2u);
    // Room for every request in flight at once: on a slow machine a journal commit can take long
    // enough for more than the default 256 frames to arrive meanwhile (then some would get 429,
    // which limits_in_flight_message_size_and_idle covers).
    cairnd_process gw(options("cairn_e2e_ws", "[limits]\nws_in_flight_max = 1000\n"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    constexpr int n = 1000;

    // 1,000 writes sent before any answer is read: half JSON text frames, half msgpack frames.
    for (int i = 0; i < n; ++i) {
        const json msg{{"id", i},
                       {"method", "POST"},
                       {"path", "/v1/graphs/ws/edges"},
                       {"body", {{"source_id", 1 + i % 10}, {"destination_id", 1000 + i}, {"position", i}}}};
        ASSERT_TRUE(i % 2 ? ws.send_binary(to_msgpack(msg)) : ws.send_text(msg.dump())) << i;
    }
    std::set<int> answered;
    std::set<std::uint64_t> seqs;
    std::uint64_t last_seq = 0;
    for (int k = 0; k < n; ++k) {
        auto f = ws.read();
        ASSERT_TRUE(f) << f.error().message();
        const json a = from_frame(f.value());
        const int id = a["id"].get<int>();
        EXPECT_EQ(f.value().binary, id % 2 == 1) << "an answer comes in the frame type of its request";
        EXPECT_EQ(a["status"], 202) << a.dump();
        EXPECT_TRUE(answered.insert(id).second) << "answered twice: " << id;
        const std::uint64_t seq = a["body"]["seq"].get<std::uint64_t>();
        seqs.insert(seq);
        last_seq = std::max(last_seq, seq);
    }
    EXPECT_EQ(answered.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(seqs.size(), static_cast<std::size_t>(n)) << "every write has its own seq";

    // 1,000 reads, pipelined, each waiting for the last write: the same answers as HTTP.
    for (int i = 0; i < n; ++i) {
        const json msg{{"id", fmt::format("r{}", i)},
                       {"path", fmt::format("/v1/graphs/ws/edges/{}/{}?after={}", 1 + i % 10, 1000 + i, last_seq)}};
        ASSERT_TRUE(i % 2 ? ws.send_binary(to_msgpack(msg)) : ws.send_text(msg.dump()));
    }
    std::map<std::string, json> reads;
    for (int k = 0; k < n; ++k) {
        auto f = ws.read();
        ASSERT_TRUE(f) << f.error().message();
        const json a = from_frame(f.value());
        ASSERT_EQ(a["status"], 200) << a.dump();
        reads[a["id"].get<std::string>()] = a["body"];
    }
    ASSERT_EQ(reads.size(), static_cast<std::size_t>(n));
    for (int i : {0, 1, 499, 998, 999}) {
        auto h = http_get(gw.port(), fmt::format("/v1/graphs/ws/edges/{}/{}", 1 + i % 10, 1000 + i));
        ASSERT_TRUE(h);
        ASSERT_EQ(h->status, 200);
        EXPECT_EQ(reads[fmt::format("r{}", i)], json::parse(h->body)) << i;
        EXPECT_EQ(reads[fmt::format("r{}", i)]["position"], i);
    }
    ws.close();
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

// Answers that complete together leave in one write of the socket (net/detail/write_coalescer.hpp);
// Beast's own control frames go through the same layer: a ping's pong must still come, on an idle
// connection and among a burst of answers, in its place in the stream.
TEST(ws_api, pings_get_their_pong_on_an_idle_connection_and_among_a_burst_of_answers) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(options("cairn_e2e_ws_ping", "[limits]\nws_in_flight_max = 1000\n"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    auto write = [](int i) {
        return json{{"id", i},
                    {"method", "POST"},
                    {"path", "/v1/graphs/ping/edges"},
                    {"body", {{"source_id", 1 + i % 7}, {"destination_id", 100 + i}, {"position", i}}}}
            .dump();
    };

    // Idle: the pong arrives before the answer of the request sent after the ping.
    ASSERT_TRUE(ws.send_ping("idle"));
    ASSERT_TRUE(ws.send_text(write(0)));
    auto first = ws.read();
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ(from_frame(first.value())["status"], 202);
    EXPECT_EQ(ws.pongs(), 1) << "the pong of a ping on an idle connection";

    // A burst: 300 writes, a ping after the first 150; every answer and the pong come.
    constexpr int n = 300;
    for (int i = 1; i <= n; ++i) {
        ASSERT_TRUE(ws.send_text(write(i))) << i;
        if (i == n / 2) {
            ASSERT_TRUE(ws.send_ping("busy"));
        }
    }
    std::set<int> answered;
    for (int k = 0; k < n; ++k) {
        auto f = ws.read();
        ASSERT_TRUE(f) << f.error().message() << " after " << k << " answers";
        const json a = from_frame(f.value());
        EXPECT_EQ(a["status"], 202) << a.dump();
        EXPECT_TRUE(answered.insert(a["id"].get<int>()).second) << a.dump();
    }
    EXPECT_EQ(answered.size(), static_cast<std::size_t>(n));
    // The busy ping's pong: seen by one of the reads above, or by the next one at the latest.
    ASSERT_TRUE(ws.send_text(write(n + 1)));
    auto last = ws.read();
    ASSERT_TRUE(last) << last.error().message();
    EXPECT_EQ(ws.pongs(), 1) << "pongs counted are those of the last ping sent (\"busy\")";
    ws.close();
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(ws_api, bad_messages_get_an_error_each_and_the_connection_goes_on) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(options("cairn_e2e_ws_bad"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    struct bad_case {
        std::string frame;
        bool binary;
        json id;
        int status;
        std::string type_or_field;
    };
    const std::vector<bad_case> cases = {
        {"not json", false, nullptr, 400, "invalid-message"},
        {R"([1, 2])", false, nullptr, 400, "invalid-message"},
        {std::string(40, '[') + std::string(40, ']'), false, nullptr, 400, "invalid-message"},
        {R"({"path": "/livez"})", false, nullptr, 400, "id"},
        {R"({"id": 1.5, "path": "/livez"})", false, nullptr, 400, "id"},
        {R"({"id": 7, "path": "livez"})", false, 7, 400, "path"},
        {R"({"id": 8, "path": "/livez", "method": "PATCH"})", false, 8, 400, "method"},
        {R"({"id": 9, "path": "/livez", "extra": 1})", false, 9, 400, "extra"},
        {R"({"id": "s", "path": "/v1/nowhere"})", false, "s", 404, "not-found"},
        {R"({"id": 10, "method": "POST", "path": "/v1/graphs/g/edges", "body": {"source_id": -1, "destination_id": 2}})",
         false, 10, 400, "source_id"},
        {std::string("\xc1", 1), true, nullptr, 400, "invalid-message"},  // never valid msgpack
    };
    for (const auto& c : cases) {
        ASSERT_TRUE(c.binary ? ws.send_binary(c.frame) : ws.send_text(c.frame));
        auto f = ws.read();
        ASSERT_TRUE(f) << c.frame << ": " << f.error().message();
        const json a = from_frame(f.value());
        EXPECT_EQ(a["id"], c.id) << c.frame;
        EXPECT_EQ(a["status"], c.status) << c.frame << " -> " << a.dump();
        const std::string type = a["body"].value("type", "");
        const std::string field = a["body"].value("field", "");
        EXPECT_TRUE(type.ends_with(c.type_or_field) || field == c.type_or_field) << c.frame << " -> " << a.dump();
    }
    // Nothing of that was journaled, and the connection still works.
    ASSERT_TRUE(ws.send_text(R"({"id": 11, "path": "/readyz?verbose"})"));
    auto f = ws.read();
    ASSERT_TRUE(f);
    const json ready = json::parse(f.value().data);
    EXPECT_EQ(ready["status"], 200);
    for (const auto& s : ready["body"]["checks"]["shards"]) EXPECT_EQ(s["applied_seq"], 0) << ready.dump();
}

// issue 13: a msgpack frame whose body or path string is not UTF-8, sent while the same connection
// has requests in flight, used to throw out of the session while those requests still used it
// (a heap-use-after-free, and cairnd aborted). Now it is that request's 400 and nothing else.
TEST(ws_api, issue_13_a_msgpack_frame_with_invalid_utf8_is_its_own_error_while_requests_are_in_flight) {
    CAIRN_REQUIRE_SHARDS(2u);
    auto o = options("cairn_e2e_ws_utf8");
    o.apply_toml = "paused = true";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    auto w = http_post(gw.port(), "/v1/graphs/g/edges", R"({"source_id": 1, "destination_id": 2})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202);
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    // Three reads wait on the unapplied write (apply is paused): in flight while the bad frames come.
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(ws.send_text(json{{"id", i}, {"path", "/v1/graphs/g/edges/1/2?after=1&timeout_ms=500"}}.dump()));
    }
    const std::string bad = "\xff\xfe bad";
    ASSERT_TRUE(ws.send_binary(to_msgpack(json{{"id", 10}, {"method", "POST"}, {"path", "/v1/graphs/g/edges"}, {"body", bad}})));
    ASSERT_TRUE(ws.send_binary(to_msgpack(json{{"id", 11}, {"path", "/v1/graphs/g/edges/1/" + bad}})));
    ASSERT_TRUE(ws.send_binary(to_msgpack(json{{"id", 12}, {"path", "/livez"}, {"body", json{{bad, 1}}}})));
    std::map<int, int> status_of;
    for (int i = 0; i < 6; ++i) {
        auto f = ws.read();
        ASSERT_TRUE(f) << "answer " << i << ": " << f.error().message() << "\n" << gw.log_tail();
        const json a = from_frame(f.value());
        status_of[a["id"].get<int>()] = a["status"].get<int>();
        if (a["id"].get<int>() >= 10) {
            EXPECT_EQ(a["body"]["type"], "https://cairn.dev/problems/invalid-message") << a.dump();
        }
    }
    EXPECT_EQ(status_of, (std::map<int, int>{{0, 504}, {1, 504}, {2, 504}, {10, 400}, {11, 400}, {12, 400}}));
    // The connection and the server go on.
    ASSERT_TRUE(ws.send_text(R"({"id": 13, "path": "/livez"})"));
    auto f = ws.read();
    ASSERT_TRUE(f);
    EXPECT_EQ(json::parse(f.value().data)["status"], 200);
    auto live = http_get(gw.port(), "/livez");
    ASSERT_TRUE(live);
    EXPECT_EQ(live->status, 200);
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(ws_api, limits_in_flight_message_size_and_idle) {
    CAIRN_REQUIRE_SHARDS(2u);
    auto o = options("cairn_e2e_ws_limits", "[limits]\nws_in_flight_max = 4\nbody_bytes_max = 2048\ntimeout_idle_ms = 800\n");
    o.apply_toml = "paused = true";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    auto w = http_post(gw.port(), "/v1/graphs/g/edges", R"({"source_id": 1, "destination_id": 2})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202);

    // In flight: with apply paused, a read ?after= the write waits its timeout. Ten at once:
    // four run (504 after 300 ms), six are refused at once with 429.
    {
        ws_client ws(gw.port());
        ASSERT_TRUE(ws.connect());
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(ws.send_text(json{{"id", i}, {"path", "/v1/graphs/g/edges/1/2?after=1&timeout_ms=300"}}.dump()));
        }
        std::map<int, int> by_status;
        for (int i = 0; i < 10; ++i) {
            auto f = ws.read();
            ASSERT_TRUE(f);
            const json a = json::parse(f.value().data);
            ++by_status[a["status"].get<int>()];
            if (a["status"] == 429) {
                EXPECT_EQ(a["body"]["type"], "https://cairn.dev/problems/too-many-in-flight");
                EXPECT_EQ(a["retry_after"], "1");
            }
        }
        EXPECT_EQ(by_status[504], 4);
        EXPECT_EQ(by_status[429], 6);
    }
    // Message size: more than body_bytes_max + the envelope allowance closes with 1009.
    {
        ws_client ws(gw.port());
        ASSERT_TRUE(ws.connect());
        const std::string big = json{{"id", 1}, {"path", "/livez"}, {"body", std::string(8000, 'x')}}.dump();
        ASSERT_TRUE(ws.send_text(big));
        auto f = ws.read();
        ASSERT_FALSE(f);
        // The server sent a close frame with 1009 (message too big) and hung up; whether the
        // client's read reports "closed" or the failed echo of the close depends on timing.
        EXPECT_EQ(ws.close_code(), 1009) << f.error().message();
    }
    // Idle: a client that sends nothing and answers no ping is closed after timeout_idle.
    {
        ws_client ws(gw.port());
        ASSERT_TRUE(ws.connect());
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // not reading: no pong
        ws.set_timeout(std::chrono::seconds(3));
        auto f = ws.read();
        EXPECT_FALSE(f) << "still open after the idle timeout";
    }
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

TEST(ws_api, the_upgrade_needs_a_valid_token_and_each_request_its_role) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string read_token = "ws-read-token-0123456789";
    cairnd_process gw(options("cairn_e2e_ws_auth", "[[tokens]]\ntoken = \"" + read_token + "\"\nrole = \"read\"\n"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    {
        ws_client ws(gw.port());
        EXPECT_FALSE(ws.connect());
        EXPECT_EQ(ws.handshake_status(), 401u);
    }
    {
        ws_client ws(gw.port());
        EXPECT_FALSE(ws.connect(read_token + "x"));
        EXPECT_EQ(ws.handshake_status(), 401u);
    }
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect(read_token));
    ASSERT_TRUE(ws.send_text(R"({"id": 1, "method": "POST", "path": "/v1/graphs/g/edges", "body": {"source_id": 1, "destination_id": 2}})"));
    ASSERT_TRUE(ws.send_text(R"({"id": 2, "path": "/v1/graphs/g/nodes/1/count"})"));
    std::map<int, int> status;
    for (int i = 0; i < 2; ++i) {
        auto f = ws.read();
        ASSERT_TRUE(f);
        const json a = json::parse(f.value().data);
        status[a["id"].get<int>()] = a["status"].get<int>();
    }
    EXPECT_EQ(status[1], 403);
    EXPECT_EQ(status[2], 200);
    // The token never reaches the log.
    EXPECT_EQ(gw.log_tail(1 << 20).find(read_token), std::string::npos);
}

// A handshake cairn cannot accept is refused as problem+json like every other refusal (issue 13),
// not with Beast's plain text, and the gateway goes on serving.
TEST(ws_api, handshake_refusals_are_problem_json) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_process gw(options("cairn_e2e_ws_handshake"));
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    const std::string head = "GET /v1/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n";
    const std::string key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    const struct {
        std::string raw;
        unsigned status;
        std::string field;
    } cases[] = {
        {head + key + "Sec-WebSocket-Version: 8\r\n\r\n", 426, "Sec-WebSocket-Version"},
        {head + key + "\r\n", 426, "Sec-WebSocket-Version"},
        {head + "Sec-WebSocket-Version: 13\r\n\r\n", 400, "Sec-WebSocket-Key"},
        {head + "Sec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n", 400, "Sec-WebSocket-Key"},
        {head + key + key + "Sec-WebSocket-Version: 13\r\n\r\n", 400, "Sec-WebSocket-Key"},
    };
    for (const auto& c : cases) {
        http_client client(gw.port());
        ASSERT_TRUE(client.write_raw(c.raw));
        auto r = client.read_reply();
        ASSERT_TRUE(r) << r.error().message() << " for " << c.raw;
        EXPECT_EQ(r.value().code(), c.status) << c.raw;
        EXPECT_EQ(r.value().header(boost::beast::http::field::content_type), "application/problem+json") << c.raw;
        const auto j = json::parse(r.value().body, nullptr, false);
        EXPECT_EQ(j.value("field", ""), c.field) << r.value().body;
        if (c.status == 426) {
            EXPECT_EQ(r.value().header(boost::beast::http::field::sec_websocket_version), "13");
        }
    }
    ws_client ws(gw.port());
    ASSERT_TRUE(ws.connect());
    ASSERT_TRUE(ws.send_text(R"({"id": 1, "path": "/v1/graphs/g/nodes/1/count"})"));
    auto f = ws.read();
    ASSERT_TRUE(f);
    EXPECT_EQ(json::parse(f.value().data)["status"], 200);
}

}  // namespace
}  // namespace cairn::test
