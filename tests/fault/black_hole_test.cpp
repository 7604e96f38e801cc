// issue 14: a shard that accepts TCP and never answers (a black hole), and one that answers a few
// bytes of its handshake and stops. Neither may block an I/O thread: writes are still acknowledged
// at once, reads of the healthy shard still answer, reads of the bad one fail within their
// timeouts, the shard is marked down; once it answers again everything acknowledged is applied.
// And cairnd still stops within its bound while the shard is a hole.
#include "core/shard_map.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/tcp_proxy.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>
#include <vector>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Node ids whose edges (forward rows) live on shard `shard` of two.
std::vector<std::int64_t> ids_on_shard(core::shard_index shard, std::size_t n, std::int64_t from) {
    const auto map = core::shard_map::equal_ranges(2);
    std::vector<std::int64_t> out;
    for (std::int64_t id = from; out.size() < n; ++id) {
        if (map.shard_of_id(id) == shard) out.push_back(id);
    }
    return out;
}

bool shard_up(std::uint16_t port, std::size_t shard) {
    auto r = readiness(port);
    return r && (*r)["checks"]["shards"][shard]["up"].get<bool>();
}

TEST(black_hole, a_silent_or_trickling_shard_blocks_nothing_else_and_catches_up_when_back) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_fault_hole";
    fresh_edge_database(db);
    const auto shards = test_shards();
    tcp_proxy hole(shards[1].host, shards[1].port);
    cairnd_options o;
    o.database = db;
    o.shards = {shards[0], shard_endpoint{"127.0.0.1", hole.port()}};
    o.extra_toml = "[limits]\nstop_drain_ms = 500\nstop_timeout_ms = 5000\n";
    cairnd_process cairnd(o);
    ASSERT_TRUE(cairnd.start()) << cairnd.log_tail();
    const std::uint16_t port = cairnd.port();
    const auto healthy = ids_on_shard(0, 40, 1);
    const auto bad = ids_on_shard(1, 40, 1);

    std::set<std::tuple<std::string, std::int64_t, std::int64_t, int>> acked;
    for (const bool trickle : {false, true}) {
        SCOPED_TRACE(trickle ? "a shard that answers 7 bytes and stops" : "a black hole");
        if (trickle) {
            hole.trickle(7);  // part of the server's greeting, then nothing
        } else {
            hole.freeze();
        }
        hole.drop_all();  // the pools' open connections die, as on a server that went away
        const std::int64_t base = trickle ? 1000 : 0;
        // Writes to both shards are acknowledged at once: the journal, not the shards, acks.
        std::chrono::milliseconds slowest_ack{0};
        http_connection conn(port);
        for (std::size_t i = 0; i < 20; ++i) {
            for (const auto source : {healthy[i], bad[i]}) {
                const auto t0 = clock_type::now();
                auto r = conn.post("/v1/graphs/follows/edges",
                                   fmt::format(R"({{"source_id": {}, "destination_id": {}}})", source, base + 7));
                slowest_ack = std::max(slowest_ack, std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0));
                ASSERT_TRUE(r && r->status == 202) << (r ? r->body : "no answer") << "\n" << cairnd.log_tail();
                acked.emplace("follows", source, base + 7, 0);
            }
        }
        EXPECT_LT(slowest_ack, 1000ms);
        // The shard is marked down by its timeouts (connect_timeout 1 s in the test config).
        EXPECT_TRUE(wait_until([&] { return !shard_up(port, 1); }, 30s)) << cairnd.log_tail();
        EXPECT_TRUE(shard_up(port, 0));
        // Reads of the healthy shard answer; reads of the bad one fail within their timeouts.
        for (std::size_t i = 0; i < 5; ++i) {
            const auto t0 = clock_type::now();
            auto r = http_get(port, fmt::format("/v1/graphs/follows/nodes/{}/count", healthy[20 + i]));
            const auto took = clock_type::now() - t0;
            ASSERT_TRUE(r.has_value());
            EXPECT_EQ(r->status, 200) << r->body;
            EXPECT_LT(took, 1000ms);
        }
        const auto t0 = clock_type::now();
        auto r = http_get(port, fmt::format("/v1/graphs/follows/nodes/{}/count", bad[20]));
        const auto took = clock_type::now() - t0;
        ASSERT_TRUE(r.has_value()) << "a read of the bad shard got no answer";
        EXPECT_EQ(r->status, 503) << r->body;
        // The pool's wait (5 s) bounds it, whatever the shard does.
        EXPECT_LT(took, 12s);
        // Now that a connect to it failed, reads of it at once: one tries the shard again (and waits
        // its connect_timeout, 1 s), the others answer 503 at once rather than each wait as long.
        {
            std::vector<std::thread> readers;
            std::vector<int> status(4, 0);
            std::vector<clock_type::duration> took_each(4);
            for (std::size_t i = 0; i < 4; ++i) {
                readers.emplace_back([&, i] {
                    const auto t = clock_type::now();
                    auto page = http_get(port, fmt::format("/v1/graphs/follows/nodes/{}/edges", bad[21 + i]));
                    took_each[i] = clock_type::now() - t;
                    status[i] = page ? page->status : 0;
                });
            }
            for (auto& t : readers) t.join();
            std::size_t fast = 0;
            for (std::size_t i = 0; i < 4; ++i) {
                EXPECT_EQ(status[i], 503) << "read " << i;
                if (took_each[i] < 700ms) ++fast;
            }
            EXPECT_GE(fast, 2u) << "reads of a failing shard each waited for a connect of their own";
        }
        // The shard returns: everything acknowledged is applied.
        hole.trickle(0);
        hole.thaw();
        hole.drop_all();
        ASSERT_TRUE(wait_applied(port, 120s)) << cairnd.log_tail();
        EXPECT_TRUE(shard_up(port, 1));
        // Reads of it answer again (the first connect that succeeds ends the failing state).
        auto back = http_get(port, fmt::format("/v1/graphs/follows/nodes/{}/edges", bad[0]));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(back->status, 200) << back->body;
    }
    const auto stored = forward_edges(db);
    std::size_t lost = 0;
    for (const auto& e : acked) lost += stored.count(e) ? 0 : 1;
    EXPECT_EQ(lost, 0u) << "of " << acked.size() << " acknowledged";

    // A stop while the shard is a hole again ends within the bound.
    hole.freeze();
    hole.drop_all();
    http_connection conn(port);
    ASSERT_TRUE(conn.post("/v1/graphs/follows/edges", fmt::format(R"({{"source_id": {}, "destination_id": 9}})", bad[30])));
    const auto t0 = clock_type::now();
    EXPECT_EQ(cairnd.terminate(std::chrono::seconds(15)), 0) << cairnd.log_tail();
    EXPECT_LT(clock_type::now() - t0, 3500ms);
}

}  // namespace
}  // namespace cairn::test
