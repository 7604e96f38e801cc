// Point reads combined into shared queries (shards/point_batcher): against a real shard,
// hundreds of concurrent reads from several strands, of two graphs, present and missing edges,
// each get exactly its own row; with one runner they share statements; concurrent counts, many of
// one hot key, each get their own count and equal keys are read once per statement; a shard that
// does not answer fails every read instead of hanging it; on an I/O loop, reads ready in one turn
// share a query once reads have met.
#include <utility>

#include "core/log_task_end.hpp"
#include "core/metrics.hpp"
#include "shards/cell_store.hpp"
#include "shards/counter_store.hpp"
#include "shards/edge_store.hpp"
#include "shards/entity_store.hpp"
#include "shards/point_batcher.hpp"
#include "shards/pool.hpp"
#include "net/io_loop.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/test_shards.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace cairn::test {
namespace {

namespace asio = boost::asio;

constexpr const char* point_batcher_db = "cairn_get_batcher";

struct outcome {
    std::atomic<int> right{0};
    std::atomic<int> wrong{0};
    std::atomic<int> failed{0};
};

// Reads (graph g1|g2, s, s + 1000) for s in [0, n): edges exist for even s in g1 and for s % 3 == 0
// in g2, with position = s * 10 + graph number.
void read_all(shards::edge_get_batcher& b, asio::io_context& ioc, int n, outcome& out) {
    for (int strand_no = 0; strand_no < 4; ++strand_no) {
        auto strand = asio::make_strand(ioc);
        for (int s = strand_no; s < n; s += 4) {
            for (int g = 1; g <= 2; ++g) {
                asio::co_spawn(
                    strand,
                    [&b, &out, s, g]() -> asio::awaitable<void> {
                        auto r = co_await b.async_get(fmt::format("g{}", g), std::pair<std::int64_t, std::int64_t>(s, s + 1000));
                        if (!r) {
                            ++out.failed;
                            co_return;
                        }
                        const bool exists = g == 1 ? s % 2 == 0 : s % 3 == 0;
                        const bool ok = exists ? r.value() && r.value()->position == s * 10 + g : !r.value();
                        ++(ok ? out.right : out.wrong);
                    },
                    core::log_task_end{"test read"});
            }
        }
    }
}

TEST(point_batcher, concurrent_reads_each_get_their_own_row_and_share_queries) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_edge_database(point_batcher_db);
    const auto shard = test_shards().at(0);
    constexpr int n = 300;
    std::string insert =
        "INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) VALUES ";
    bool first = true;
    for (int s = 0; s < n; ++s) {
        for (int g = 1; g <= 2; ++g) {
            if (g == 1 ? s % 2 != 0 : s % 3 != 0) continue;
            insert += fmt::format("{}('g{}',{},0,{},0,0,{},1,1,1)", first ? "" : ",", g, s, s + 1000, s * 10 + g);
            first = false;
        }
    }
    ASSERT_TRUE(exec_sql(shard, {insert}, point_batcher_db));

    asio::io_context ioc(2);
    shards::pool pool(ioc.get_executor(), params_for(shard, point_batcher_db), 4);
    core::registry metrics;
    auto& keys = metrics.add_histogram("test_batch_keys", "keys per query", core::histogram::size_bounds(), {});
    // One runner: while its query is in flight every other read queues and joins the next one.
    shards::edge_get_batcher batcher(ioc.get_executor(), pool, &shards::async_multi_get, 1, 64, &keys);
    outcome out;
    read_all(batcher, ioc, n, out);
    std::thread t([&] { ioc.run(); });
    ioc.run();
    t.join();
    EXPECT_EQ(out.right.load(), 2 * n);
    EXPECT_EQ(out.wrong.load(), 0);
    EXPECT_EQ(out.failed.load(), 0);
    // 600 reads in far fewer statements, none over the limit.
    EXPECT_EQ(keys.sum(), 2.0 * n);
    EXPECT_LT(keys.count(), static_cast<std::uint64_t>(n)) << "reads were not combined";
    EXPECT_LE(keys.sum() / static_cast<double>(keys.count()), 64.0);
}

TEST(point_batcher, reads_ready_in_one_turn_share_one_query_once_reads_have_met) {
    // On a thread that runs net::run_io_loop: the first read of a wave finds the batcher idle and,
    // while reads have not met yet, goes alone at once; once they have, it waits for the end of the
    // turn, and the reads that became ready with it share its query. After 8 lone reads in a row
    // a read goes at once again.
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_edge_database(point_batcher_db);
    const auto shard = test_shards().at(0);
    asio::io_context ioc;
    shards::pool pool(ioc.get_executor(), params_for(shard, point_batcher_db), 2);
    core::registry metrics;
    auto& keys = metrics.add_histogram("test_batch_keys", "keys per query", core::histogram::size_bounds(), {});
    shards::edge_get_batcher batcher(ioc.get_executor(), pool, &shards::async_multi_get, 1, 64, &keys);
    net::io_loop_shared loop;
    std::atomic<int> answered{0};
    // `n` reads whose coroutines start in one turn of the loop; runs the loop until they are done.
    auto wave = [&](std::int64_t first, int n) {
        asio::post(ioc, [&, first, n] {
            for (int i = 0; i < n; ++i) {
                asio::co_spawn(
                    ioc,
                    [&batcher, &answered, id = first + i]() -> asio::awaitable<void> {
                        auto r = co_await batcher.async_get("g1", std::pair<std::int64_t, std::int64_t>(id, 1));
                        if (r && !r.value()) ++answered;  // nothing stored: no row
                    },
                    core::log_task_end{"test read"});
            }
        });
        ioc.restart();
        net::run_io_loop(ioc, std::chrono::microseconds(0), loop);  // returns once out of work
    };
    wave(0, 20);
    EXPECT_EQ(answered.load(), 20);
    EXPECT_EQ(keys.count(), 2U) << "the first read alone, the 19 queued behind it together";
    EXPECT_EQ(loop.stats.idle_task_runs.load(), 0U);

    wave(100, 20);
    EXPECT_EQ(answered.load(), 40);
    EXPECT_EQ(keys.count(), 3U) << "the second wave did not share one query";
    EXPECT_EQ(keys.sum(), 40.0);
    EXPECT_EQ(loop.stats.idle_task_runs.load(), 1U);

    for (int i = 0; i < 10; ++i) wave(1000 + i, 1);
    EXPECT_EQ(answered.load(), 50);
    EXPECT_EQ(keys.count(), 13U);
    // The first 8 lone reads still waited for the end of their turn; the last two went at once.
    EXPECT_EQ(loop.stats.idle_task_runs.load(), 9U);
}

TEST(point_batcher, a_shard_whose_tables_do_not_exist_yet_reads_as_empty_for_every_model) {
    // A fresh database before the apply worker created its tables: reads answer what a shard with
    // nothing applied holds (no rows, counts 0), not an error; other errors still fail.
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_database(point_batcher_db);
    const auto shard = test_shards().at(0);
    asio::io_context ioc;
    shards::mariadb_conn conn(ioc.get_executor(), params_for(shard, point_batcher_db));
    ASSERT_TRUE(run_on(ioc, conn.async_connect()));
    const std::vector<shards::node_count_key> counts{{1, shards::edge_direction::forward, core::edge_state::normal}};
    auto c = run_on(ioc, shards::async_count_many(conn, "g", counts));
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(c.value(), std::vector<std::int64_t>{0});
    const std::vector<std::pair<std::int64_t, std::int64_t>> keys{{1, 2}, {3, 4}};
    auto g = run_on(ioc, shards::async_multi_get(conn, "g", keys));
    ASSERT_TRUE(g) << g.error().message();
    EXPECT_EQ(g.value().size(), 2u);
    EXPECT_FALSE(g.value()[0].has_value());
    shards::edge_page_request req;
    req.graph = "g";
    req.node_id = 1;
    auto p = run_on(ioc, shards::async_page_edges(conn, req));
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_TRUE(p.value().edges.empty());
    EXPECT_FALSE(p.value().next.has_value());
    // The other models alike: no cells, no entities, no counts.
    const std::vector<shards::cell_key> cells{{"row", "col", 1}};
    auto cell = run_on(ioc, shards::async_get_cells(conn, "users", cells));
    ASSERT_TRUE(cell) << cell.error().message();
    ASSERT_EQ(cell.value().size(), 1u);
    EXPECT_FALSE(cell.value()[0].has_value());
    const std::vector<std::string> ids{"a", "b"};
    auto e = run_on(ioc, shards::async_get_entities(conn, "user", ids));
    ASSERT_TRUE(e) << e.error().message();
    ASSERT_EQ(e.value().size(), 2u);
    EXPECT_FALSE(e.value()[1].has_value());
    const auto catalog = counter_example_catalog();
    ASSERT_FALSE(catalog.metrics.empty());
    shards::counter_read q;
    q.metric = &catalog.metrics.front();
    q.table = &q.metric->tables.front();
    q.from_ms = 0;
    q.to_ms = 86'400'000;
    auto n = run_on(ioc, shards::async_read_counters(conn, q, 100));
    ASSERT_TRUE(n) << n.error().message();
    EXPECT_TRUE(n.value().empty());
    // Any other refusal is still an error.
    auto bad = run_on(ioc, conn.async_execute("SELECT no_such_column FROM DUAL"));
    EXPECT_FALSE(bad);
}

TEST(point_batcher, multi_get_answers_long_lists_with_repeats_in_order) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_edge_database(point_batcher_db);
    const auto shard = test_shards().at(0);
    asio::io_context ioc;
    shards::mariadb_conn conn(ioc.get_executor(), params_for(shard, point_batcher_db));
    ASSERT_TRUE(run_on(ioc, conn.async_connect()));
    ASSERT_TRUE(exec_sql(shard, {"INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, "
                                 "pos_ts, pos_set) VALUES ('g',1,0,5,0,0,50,1,1,1),('g',2,0,6,0,0,60,1,1,1),"
                                 "('g',1,1,5,0,0,99,1,1,1),('h',1,0,5,0,0,77,1,1,1)"},
                         point_batcher_db));
    // 300 keys (three statements: 128 + 128 + 44, the last padded to 64), present ones repeated,
    // a backward row and another graph's row that must not match.
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;
    for (int i = 0; i < 300; ++i) keys.emplace_back(i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 1000 + i, i % 3 == 0 ? 5 : 6);
    auto r = run_on(ioc, shards::async_multi_get(conn, "g", keys));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r.value().size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i % 3 == 2) {
            EXPECT_FALSE(r.value()[i].has_value()) << i;
        } else {
            ASSERT_TRUE(r.value()[i].has_value()) << i;
            EXPECT_EQ(r.value()[i]->position, i % 3 == 0 ? 50 : 60) << i;
        }
    }
    EXPECT_LE(conn.prepared_count(), 3u);  // texts for 128 and 64 keys
}

TEST(point_batcher, concurrent_counts_each_get_their_own_count_and_equal_keys_are_read_once) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_edge_database(point_batcher_db);
    const auto shard = test_shards().at(0);
    // Node k of graph g has count k * 10 + direction for state normal; node 0 has no rows.
    std::string insert = "INSERT INTO edge_counts (graph, node_id, direction, state, count) VALUES ";
    for (int k = 1; k <= 20; ++k) {
        for (int d = 0; d < 2; ++d) insert += fmt::format("{}('g',{},{},0,{})", k == 1 && d == 0 ? "" : ",", k, d, k * 10 + d);
    }
    ASSERT_TRUE(exec_sql(shard, {insert}, point_batcher_db));

    asio::io_context ioc(2);
    shards::pool pool(ioc.get_executor(), params_for(shard, point_batcher_db), 4);
    core::registry metrics;
    auto& keys = metrics.add_histogram("test_count_keys", "distinct keys per query", core::histogram::size_bounds(), {});
    shards::edge_count_batcher batcher(ioc.get_executor(), pool, &shards::async_count_many, 1, 64, &keys);
    // 400 reads from 4 strands: half of them the hot node 7 forward, the rest spread over nodes
    // 0..20, both directions, states normal and removed (removed: no rows, 0).
    constexpr int n = 400;
    outcome out;
    for (int strand_no = 0; strand_no < 4; ++strand_no) {
        auto strand = asio::make_strand(ioc);
        for (int i = strand_no; i < n; i += 4) {
            const std::int64_t node = i % 2 == 0 ? 7 : (i / 2) % 21;
            const auto dir = i % 2 == 0 || (i / 2) % 3 != 0 ? shards::edge_direction::forward : shards::edge_direction::backward;
            const auto state = i % 5 == 1 ? core::edge_state::removed : core::edge_state::normal;
            asio::co_spawn(
                strand,
                [&batcher, &out, node, dir, state]() -> asio::awaitable<void> {
                    auto r = co_await batcher.async_get("g", shards::node_count_key{node, dir, state});
                    if (!r) {
                        ++out.failed;
                        co_return;
                    }
                    const std::int64_t want =
                        node == 0 || state != core::edge_state::normal ? 0 : node * 10 + static_cast<int>(dir);
                    ++(r.value() == want ? out.right : out.wrong);
                },
                core::log_task_end{"test count"});
        }
    }
    std::thread t([&] { ioc.run(); });
    ioc.run();
    t.join();
    EXPECT_EQ(out.right.load(), n);
    EXPECT_EQ(out.wrong.load(), 0);
    EXPECT_EQ(out.failed.load(), 0);
    // Reads queue while the one runner's query is out, so statements carry several reads of the
    // hot key, each statement reading it once: fewer keys read than reads made.
    EXPECT_LT(keys.sum(), static_cast<double>(n)) << "equal keys were not read once";
    EXPECT_LT(keys.count(), static_cast<std::uint64_t>(n)) << "counts were not combined";
}

TEST(point_batcher, a_shard_that_does_not_answer_fails_every_read) {
    asio::io_context ioc(2);
    shards::conn_params p;
    p.host = "127.0.0.1";
    p.port = 1;  // nothing listens
    p.user = "cairn";
    p.password = "cairn";
    p.database = point_batcher_db;
    p.connect_timeout = std::chrono::milliseconds(500);
    p.query_timeout = std::chrono::milliseconds(500);
    shards::pool pool(ioc.get_executor(), p, 2, std::chrono::milliseconds(500));
    shards::edge_get_batcher batcher(ioc.get_executor(), pool, &shards::async_multi_get, 2, 16);
    outcome out;
    read_all(batcher, ioc, 40, out);
    std::thread t([&] { ioc.run(); });
    ioc.run();
    t.join();
    EXPECT_EQ(out.failed.load(), 80);
    EXPECT_EQ(out.right.load() + out.wrong.load(), 0);
}

}  // namespace
}  // namespace cairn::test
