// Hostile input against a running cairnd (issue 13): a few hundred malformed HTTP requests (the
// shapes of request smuggling, oversized and truncated messages, bad chunking, bad UTF-8, deep
// nesting, and seeded random mutations of valid requests) and WebSocket frames (frames that break
// the protocol, and well-formed frames whose messages are bombs: claimed sizes of millions of
// elements, huge strings, invalid UTF-8, deep nesting). No answer may be a 500, the server must
// stay up, and afterwards a normal write must still be acknowledged and read back. The run is
// seeded: CAIRN_HOSTILE_SEED=<n> replays one.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/ws_client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using json = nlohmann::json;

std::uint64_t hostile_seed() {
    if (const char* s = std::getenv("CAIRN_HOSTILE_SEED")) return std::strtoull(s, nullptr, 10);
    return std::random_device{}();
}

// Valid requests that mutations start from.
std::vector<std::string> valid_requests() {
    auto post = [](const std::string& target, const std::string& body) {
        return fmt::format("POST {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                           target, body.size(), body);
    };
    return {
        "GET /v1/graphs/follows/nodes/7/edges?limit=5 HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/graphs/follows/edges/7/8 HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /readyz?verbose HTTP/1.1\r\nHost: x\r\n\r\n",
        post("/v1/graphs/follows/edges", R"({"source_id": 7, "destination_id": 8, "position": 3})"),
        post("/v1/graphs/follows/edges", R"({"edges": [{"source_id": 1, "destination_id": 2}, {"source_id": 2, "destination_id": 1}]})"),
        post("/v1/graphs/follows/sets", R"({"op": "intersect", "queries": [{"node_id": 7}, {"node_id": 8}]})"),
        post("/v1/graphs/follows/edges/get", R"({"edges": [{"source_id": 7, "destination_id": 8}]})"),
        post("/v1/cells/notes", R"({"row_key": "r1", "column": "BASE", "ref_key": 1, "body": {"text": "hi", "n": [1, 2.5, null, true]}})"),
        "PUT /v1/entities/user/000000000000000000000000000000a1 HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n{\"name\": \"ann\"}",
        "GET /v1/cells/notes/r1/BASE HTTP/1.1\r\nHost: x\r\n\r\n",
    };
}

// Hand-made malformed requests: each a shape that has broken HTTP servers.
std::vector<std::string> malformed_requests() {
    const std::string deep(100'000, '[');
    std::vector<std::string> out = {
        // smuggling shapes
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /livez HTTP/1.1\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\tchunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc",
        "GET /livez HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET /livez HTTP/1.1\r\n\r\n",
        "GET /livez HTTP/1.1\nHost: x\n\n",
        "GET /livez HTTP/1.1\r\nHost: x\r\n folded: header\r\n\r\n",
        "GET /livez HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n",
        "GET /livez HTTP/1.1\r\nHo\0st: x\r\n\r\n"s,
        // chunking
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=\"unterminated\r\nabc\r\n0\r\n\r\n",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nz\r\nabc\r\n0\r\n\r\n",
        // request lines
        "GET /v1/graphs/follows/nodes/%ff%fe/edges HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/graphs/follows/nodes/7/edges?cursor=%00%00 HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /v1/graphs/follows/nodes/7/edges?limit=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET " + std::string(20'000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20'000, 'b') + "\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s,  // a TLS ClientHello on the plain port
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        std::string(64, '\0'),
        // bodies
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(deep.size()) + "\r\n\r\n" + deep,
        "POST /v1/cells/notes HTTP/1.1\r\nHost: x\r\nContent-Length: 24\r\n\r\n{\"body\": {\"a\": \"\xff\xfe\"}}",
        "POST /v1/cells/notes HTTP/1.1\r\nHost: x\r\nContent-Length: 29\r\n\r\n{\"body\": {\"a\": \"\\ud800 \"}}  ",
        "POST /v1/cells/notes HTTP/1.1\r\nHost: x\r\nContent-Length: 22\r\n\r\n{\"body\": {\"a\": 1e999}}",
        "POST /v1/cells/notes HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\n{\"body\": {\"a\": 1, \"a\": 2}}    ",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n{\"source_id\": 99999999999999999999999, \"destination_id\": 1}",
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n{",
        // truncated: the server must give up after timeout_read
        "POST /v1/graphs/follows/edges HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"source_id\"",
        "GET /livez HTTP/1.1\r\nHost: x\r\n",
        "GET /liv",
    };
    return out;
}

// A seeded mutation of a valid request: flipped, inserted, deleted or duplicated bytes.
std::string mutate(std::string s, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
        const std::size_t at = rng() % s.size();
        switch (rng() % 5) {
            case 0: s[at] = static_cast<char>(rng()); break;
            case 1: s.insert(at, 1, static_cast<char>(rng())); break;
            case 2: s.erase(at, 1 + rng() % 8); break;
            case 3: s.insert(at, s.substr(at, 1 + rng() % 16)); break;
            default: s[at] = "\r\n:; \"{}[]\\0"[rng() % 12]; break;
        }
    }
    return s;
}

// Sends raw on a fresh connection and reads what comes back; returns the status, 0 when the
// server just closed the connection (or gave no answer before `deadline`).
unsigned exchange(std::uint16_t port, const std::string& raw) {
    http_client c(port, "127.0.0.1", 4s);
    if (!c.write_raw(raw)) return 0;
    auto r = c.read_reply();
    return r ? r.value().code() : 0;
}

// The masked client frame of RFC 6455 (the mask is zero, so the payload stays readable).
std::string ws_frame(std::uint8_t first_byte, std::string_view payload, std::optional<std::uint64_t> claimed = {}) {
    std::string f(1, static_cast<char>(first_byte));
    const std::uint64_t n = claimed.value_or(payload.size());
    if (n < 126) {
        f += static_cast<char>(0x80 | n);
    } else if (n <= 0xffff) {
        f += static_cast<char>(0x80 | 126);
        f += static_cast<char>(n >> 8);
        f += static_cast<char>(n);
    } else {
        f += static_cast<char>(0x80 | 127);
        for (int i = 7; i >= 0; --i) f += static_cast<char>(n >> (8 * i));
    }
    f += std::string(4, '\0');
    f += payload;
    return f;
}

class hostile_input : public cairnd_test {};

TEST_F(hostile_input, malformed_requests_and_frames_leave_the_server_serving) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::uint64_t seed = hostile_seed();
    SCOPED_TRACE(fmt::format("CAIRN_HOSTILE_SEED={}", seed));
    std::cerr << "hostile input: CAIRN_HOSTILE_SEED=" << seed << "\n";
    cairnd_options o;
    o.extra_toml =
        "[cells]\ntables = [\"notes\"]\n[entities]\nkinds = [\"user\"]\n"
        "[limits]\ntimeout_read_ms = 1000\ntimeout_idle_ms = 3000\nconnections_max = 64\n";
    start_cairnd("cairn_e2e_hostile", o);

    // HTTP: the hand-made shapes, then seeded mutations of valid requests, from 8 threads.
    std::vector<std::string> requests = malformed_requests();
    std::mt19937_64 rng(seed);
    const auto valid = valid_requests();
    for (int i = 0; i < 300; ++i) requests.push_back(mutate(valid[rng() % valid.size()], rng));
    std::atomic<std::size_t> next{0};
    std::mutex mu;
    std::vector<std::string> server_errors;
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&] {
            for (std::size_t i; (i = next.fetch_add(1)) < requests.size();) {
                const unsigned status = exchange(port(), requests[i]);
                if (status == 500) {
                    std::lock_guard lock(mu);
                    server_errors.push_back(json(requests[i]).dump(-1, ' ', false, json::error_handler_t::replace));
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_TRUE(server_errors.empty()) << server_errors.size() << " requests got a 500, e.g. " << server_errors.front();
    ASSERT_TRUE(cairnd_->running()) << cairnd_->log_tail();

    // WebSocket frames that break the protocol: each ends its connection, nothing more.
    const std::string upgrade =
        "GET /v1/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    const std::vector<std::string> broken_frames = {
        std::string("\x81\x05hello", 7),                       // unmasked client frame
        ws_frame(0x83, "x"),                                    // reserved opcode
        ws_frame(0x09, std::string(200, 'p')),                  // fragmented, oversized ping
        ws_frame(0x81, "", std::uint64_t{1} << 62),             // claims 4 EiB
        ws_frame(0x81, "{\"id\": 1", 5'000'000),                // claims more than read_message_max
        ws_frame(0x81, "{\"id\": 1, \"path\": \"\xff\"}"),      // text that is not UTF-8
        ws_frame(0xc1, "{}"),                                   // RSV1 without an extension
        ws_frame(0x81, "{\"id\": 1, \"pa", 100),                // then silence: a truncated frame
        ws_frame(0x88, std::string("\x03\xe8") + "\xff\xfe"),   // close with a reason that is not UTF-8
        ws_frame(0x00, "continuation without a start"),
    };
    for (const auto& frame : broken_frames) {
        http_client c(port(), "127.0.0.1", 4s);
        ASSERT_TRUE(c.write_raw(upgrade));
        auto r = c.read_reply();
        ASSERT_TRUE(r) << r.error().message();
        ASSERT_EQ(r.value().code(), 101u);
        ASSERT_TRUE(c.write_raw(frame));
        EXPECT_TRUE(c.wait_closed(std::chrono::seconds(10))) << "a broken frame did not end its connection: "
                                                             << json(frame).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    ASSERT_TRUE(cairnd_->running()) << cairnd_->log_tail();

    // Well-formed frames whose messages are bad: each is its own 400, and the connection goes on.
    const std::vector<std::pair<bool, std::string>> bad_messages = {
        {true, "\xdd\xff\xff\xff\xff"s},                         // array32 claiming 4 billion
        {true, "\xdf\xff\xff\xff\xff"s},                         // map32 claiming 4 billion
        {true, "\x81\xa2id\xdb\xff\xff\xff\xff"s},               // str32 claiming 4 GB
        {true, "\x81\xa2id\xc6\xff\xff\xff\xff"s},               // bin32 claiming 4 GB
        {true, "\x82\xa2id\x01\xa4path\xa2\xff\xfe"s},          // path not UTF-8
        {true, "\x82\xa2id\x01\xa4path\xd4\x01\x02"s},          // ext type
        {true, "\x82\xa2id\x01\xa4" "body\xcb\x7f\xf8\0\0\0\0\0\0"s},  // NaN
        {true, std::string(100'000, '\x91')},                                   // arrays 100,000 deep
        {false, std::string(100'000, '[')},
        {false, R"({"id": 1, "id": 2, "path": "/livez"})"},
        {false, R"({"id": 1, "path": "/v1/graphs/follows/edges", "method": "POST", "body": {"source_id": 1e400}})"},
        {false, R"({"id": 1, "path": "/v1/graphs/follows/nodes/007/edges"})"},
        {false, R"([1, 2, 3])"},
    };
    ws_client ws(port());
    ASSERT_TRUE(ws.connect());
    for (const auto& [binary, data] : bad_messages) {
        ASSERT_TRUE(binary ? ws.send_binary(data) : ws.send_text(data));
        auto f = ws.read();
        ASSERT_TRUE(f) << "no answer to a bad message: " << f.error().message();
        const json a = f.value().binary ? json::from_msgpack(f.value().data, true, false) : json::parse(f.value().data, nullptr, false);
        ASSERT_FALSE(a.is_discarded());
        EXPECT_GE(a.value("status", 0), 400) << a.dump();
        EXPECT_LT(a.value("status", 0), 500) << a.dump();
    }
    ASSERT_TRUE(ws.send_text(R"({"id": "after", "path": "/v1/graphs/follows/nodes/1/count"})"));
    auto still = ws.read();
    ASSERT_TRUE(still);
    EXPECT_EQ(json::parse(still.value().data)["status"], 200);

    // And the server still does its job: a write is acknowledged and reads back.
    ASSERT_TRUE(cairnd_->running()) << cairnd_->log_tail();
    auto w = http_post(port(), "/v1/graphs/follows/edges?wait=applied", R"({"source_id": 4242, "destination_id": 4343})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    auto back = http_get(port(), "/v1/graphs/follows/edges/4242/4343");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->status, 200) << back->body;
    EXPECT_EQ(json::parse(back->body)["state"], "normal");
}

}  // namespace
}  // namespace cairn::test
