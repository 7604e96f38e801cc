// Model-checked reads against real MariaDB: random graphs are built through the shard apply
// function (as in edge_convergence_prop_test); then every page walk (forward, then backward
// from the end, with random limits), every page among random other ends, every read from an
// arbitrary cursor, every count and every
// multi-get must equal what the in-memory model says (with whole-node ops among the writes).
#include <utility>

#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>
#include <set>
#include <thread>

namespace cairn {
namespace {

namespace asio = boost::asio;
using kind = core::page_cursor::kind;
const std::string edge_reads_db = "cairn_prop_reads";
constexpr std::int64_t ids = 9;  // node ids 0..9: lists long enough for several pages

// The model's list for one (graph, node, direction) in any of the states, in page order.
std::vector<shards::stored_edge> model_list(const test::edge_model& m, const std::string& graph, std::int64_t node,
                                            shards::edge_direction dir, core::edge_state_set states) {
    std::vector<shards::stored_edge> out;
    for (const auto& [k, row] : m.rows) {
        const auto& [g, n, d, other] = k;
        if (g != graph || n != node || d != static_cast<int>(dir) || !states.contains(row.state)) continue;
        out.push_back({{g, n, dir, other}, row});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::pair{a.row.position, a.key.other_id} > std::pair{b.row.position, b.key.other_id};
    });
    return out;
}

struct reads_fixture {
    asio::io_context ioc;
    core::shard_map map = core::shard_map::equal_ranges(2);
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;

    void connect(const std::string& database) {
        const auto endpoints = test::test_shards();
        for (std::size_t i = 0; i < 2; ++i) {
            conns.push_back(
                std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], database)));
            auto& c = *conns.back();
            ASSERT_TRUE(test::run_on(ioc, c.async_connect()));
            ASSERT_TRUE(test::run_on(ioc, shards::async_create_edge_schema(c)));
        }
    }
    shards::mariadb_conn& conn_of(std::int64_t node) { return *conns.at(map.shard_of_id(node)); }

    shards::edge_page page(const shards::edge_page_request& req) {
        auto r = test::run_on(ioc, shards::async_page_edges(conn_of(req.node_id), req));
        RC_ASSERT(r.has_value());
        return std::move(r.value());
    }
};

// Walks pages forward from the newest edge to the end, then backward from the last page to the
// first, with random limits: each way must give exactly expected.
void walk_both_ways(reads_fixture& fx, shards::edge_page_request req, const std::vector<shards::stored_edge>& expected) {
    // Forward: from the newest edge to the end.
    std::vector<shards::stored_edge> walked;
    shards::edge_page page;
    for (int pages = 0;; ++pages) {
        RC_ASSERT(pages <= 100);
        req.limit = *rc::gen::inRange<std::size_t>(1, 5);
        page = fx.page(req);
        RC_ASSERT(page.edges.size() <= req.limit);
        RC_ASSERT(page.previous.has_value() == (req.cursor.has_value() && !expected.empty()));
        walked.insert(walked.end(), page.edges.begin(), page.edges.end());
        if (!page.next) break;
        RC_ASSERT(page.edges.size() == req.limit);  // only the last page may be short
        req.cursor = page.next;
    }
    RC_ASSERT(walked == expected);

    // Backward: from the last page to the first, with other limits.
    std::vector<shards::stored_edge> back = page.edges;
    auto cursor = page.previous;
    for (int pages = 0; cursor; ++pages) {
        RC_ASSERT(pages <= 100);
        req.cursor = cursor;
        req.limit = *rc::gen::inRange<std::size_t>(1, 5);
        const auto prev = fx.page(req);
        RC_ASSERT(prev.edges.size() <= req.limit);
        RC_ASSERT(prev.next.has_value());
        back.insert(back.begin(), prev.edges.begin(), prev.edges.end());
        if (prev.previous) RC_ASSERT(prev.edges.size() == req.limit);
        cursor = prev.previous;
    }
    RC_ASSERT(back == expected);
}

// Among random other ends (repeats and ids without an edge included), walked with random limits:
// the expected rows whose other end is listed, in the same order, page by page.
void check_among(reads_fixture& fx, shards::edge_page_request among, const std::vector<shards::stored_edge>& expected) {
    among.cursor.reset();
    among.other_ids = *rc::gen::nonEmpty(rc::gen::container<std::vector<std::int64_t>>(rc::gen::inRange<std::int64_t>(0, ids + 2)));
    std::vector<shards::stored_edge> want;
    for (const auto& e : expected) {
        if (std::find(among.other_ids.begin(), among.other_ids.end(), e.key.other_id) != among.other_ids.end()) want.push_back(e);
    }
    std::vector<shards::stored_edge> got;
    for (int pages = 0;; ++pages) {
        RC_ASSERT(pages <= 100);
        among.limit = *rc::gen::inRange<std::size_t>(1, 5);
        const auto p = fx.page(among);
        got.insert(got.end(), p.edges.begin(), p.edges.end());
        if (!p.next) break;
        among.cursor = p.next;
    }
    RC_ASSERT(got == want);
}

TEST(edge_reads, pages_counts_and_multi_get_equal_the_model) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(edge_reads_db);
    reads_fixture fx;
    fx.connect(edge_reads_db);
    ASSERT_FALSE(HasFailure());

    const bool ok = rc::check("pages, cursors, counts and multi-get on random graphs equal the model", [&] {
        // Edge ops and whole-node ops (remove, archive, negate, unarchive; one direction or both):
        // reads show effective states.
        const auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_edge_or_node_op(ids, 12));
        for (auto& c : fx.conns) {
            RC_ASSERT(test::run_on(fx.ioc, c->async_execute("DELETE FROM edges")).has_value());
            RC_ASSERT(test::run_on(fx.ioc, c->async_execute("DELETE FROM edge_counts")).has_value());
            RC_ASSERT(test::run_on(fx.ioc, c->async_execute("DELETE FROM node_registers")).has_value());
        }
        // Built through the real apply function, in random batches.
        std::size_t at = 0;
        while (at < ops.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 10);
            std::vector<const core::op*> batch;
            for (std::size_t i = at; i < std::min(ops.size(), at + n); ++i) batch.push_back(&ops[i]);
            at += n;
            for (std::uint32_t s = 0; s < 2; ++s) {
                RC_ASSERT(test::run_on(fx.ioc, shards::async_apply_edges(*fx.conns[s], fx.map, s, batch)).has_value());
            }
        }
        const auto model = test::edge_model::of(ops);

        for (const std::string graph : {"follows", "blocks"}) {
            for (std::int64_t node = 0; node <= ids; ++node) {
                for (auto dir : {shards::edge_direction::forward, shards::edge_direction::backward}) {
                    // Normal and one other state per list keep each case quick; over many
                    // cases every state is walked.
                    for (int st : {0, *rc::gen::inRange(1, 4)}) {
                        const auto state = static_cast<core::edge_state>(st);
                        const auto expected = model_list(model, graph, node, dir, state);
                        shards::edge_page_request req{graph, node, dir, state, 1, std::nullopt, {}};

                        walk_both_ways(fx, req, expected);

                        // Among given other ends (repeats and ids without an edge included): the
                        // model's rows whose other end is listed, in the same order, page by page.
                        check_among(fx, req, expected);

                        // Any cursor, even one no page made: exactly the model's rows beyond it.
                        const core::page_cursor c{*rc::gen::element(kind::next, kind::previous),
                                                  *rc::gen::inRange<std::int64_t>(-4, 6),
                                                  *rc::gen::inRange<std::int64_t>(-1, ids + 2)};
                        req.cursor = c;
                        req.limit = *rc::gen::inRange<std::size_t>(1, 5);
                        const auto got = fx.page(req);
                        std::vector<shards::stored_edge> beyond;
                        for (const auto& e : expected) {
                            const std::pair key{e.row.position, e.key.other_id};
                            const std::pair at_cursor{c.position, c.other_id};
                            if (c.which == kind::next ? key < at_cursor : key > at_cursor) beyond.push_back(e);
                        }
                        const std::size_t n = std::min(beyond.size(), req.limit);
                        std::vector<shards::stored_edge> want;
                        if (c.which == kind::next) {
                            want.assign(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(n));
                        } else {
                            want.assign(beyond.end() - static_cast<std::ptrdiff_t>(n), beyond.end());
                        }
                        RC_ASSERT(got.edges == want);
                        RC_ASSERT((c.which == kind::next ? got.next : got.previous).has_value() == (beyond.size() > n));
                        // The way back from any page (even an empty one) leads to the rows before it.
                        const auto way_back = c.which == kind::next ? got.previous : got.next;
                        RC_ASSERT(way_back.has_value());

                        // Count: one row of edge_counts, equal to the model's (asked twice in one
                        // statement, as the count batcher may: both get it).
                        const std::vector<shards::node_count_key> twice(2, shards::node_count_key{node, dir, state});
                        auto counts = test::run_on(fx.ioc, shards::async_count_many(fx.conn_of(node), graph, twice));
                        RC_ASSERT(counts.has_value());
                        RC_ASSERT(counts.value().size() == 2u);
                        RC_ASSERT(counts.value()[0] == counts.value()[1]);
                        const auto it = model.counts.find({graph, node, static_cast<int>(dir), st});
                        RC_ASSERT(counts.value()[0] == (it == model.counts.end() ? 0 : it->second));
                        RC_ASSERT(counts.value()[0] == static_cast<std::int64_t>(expected.size()));
                    }

                    // Several states at once (issue 17): a random set of two to four states,
                    // walked forward and back with random limits, is the model's rows in any of
                    // them, merged in page order; among given other ends too.
                    {
                        // Two distinct states (rapidcheck's small first sizes give equal draws),
                        // then each other one or not.
                        const int first = *rc::gen::inRange(0, 4);
                        core::edge_state_set states = static_cast<core::edge_state>(first);
                        states.add(static_cast<core::edge_state>((first + *rc::gen::inRange(1, 4)) % 4));
                        for (int st = 0; st < 4; ++st) {
                            if (*rc::gen::arbitrary<bool>()) states.add(static_cast<core::edge_state>(st));
                        }
                        RC_ASSERT(states.size() >= 2u);
                        const auto expected = model_list(model, graph, node, dir, states);
                        shards::edge_page_request req{graph, node, dir, states, 1, std::nullopt, {}};
                        walk_both_ways(fx, req, expected);
                        check_among(fx, req, expected);
                    }
                }
            }
            // Multi-get: random keys (repeats included), each asked of its source's shard.
            const auto keys = *rc::gen::container<std::vector<std::pair<std::int64_t, std::int64_t>>>(
                rc::gen::pair(rc::gen::inRange<std::int64_t>(0, ids + 1), rc::gen::inRange<std::int64_t>(0, ids + 1)));
            for (std::uint32_t s = 0; s < 2; ++s) {
                std::vector<std::pair<std::int64_t, std::int64_t>> mine;
                for (const auto& k : keys) {
                    if (fx.map.shard_of_id(k.first) == s) mine.push_back(k);
                }
                auto got = test::run_on(fx.ioc, shards::async_multi_get(*fx.conns[s], graph, mine));
                RC_ASSERT(got.has_value());
                RC_ASSERT(got.value().size() == mine.size());
                for (std::size_t i = 0; i < mine.size(); ++i) {
                    const auto it = model.rows.find({graph, mine[i].first, 0, mine[i].second});
                    const std::optional<core::edge_row> want =
                        it == model.rows.end() ? std::nullopt : std::optional<core::edge_row>(it->second);
                    RC_ASSERT(got.value()[i] == want);
                }
            }
        }
    });
    EXPECT_TRUE(ok);
}

// Cursor paging under concurrent writes: a writer adds, moves, removes and archives edges of
// the node being paged (with positions among the others'), while walks go forward and backward.
// Every walk must be strictly ordered (so no row twice), contain every edge that existed
// throughout and was never touched exactly once, and nothing that was never written.
TEST(edge_reads, paging_while_writes_run_sees_every_untouched_edge_once) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string live_db = "cairn_prop_reads_live";
    test::fresh_database(live_db);
    reads_fixture fx;
    fx.connect(live_db);
    ASSERT_FALSE(HasFailure());
    const std::string graph = "live";
    constexpr std::int64_t node = 1;
    constexpr std::int64_t stable_first = 1000;
    constexpr std::int64_t stable_n = 200;
    constexpr std::int64_t churn_first = 5000;
    constexpr std::int64_t churn_n = 100;
    const std::uint64_t base_ms = 1'700'000'000'000;

    std::vector<core::op> stable;
    for (std::int64_t i = 0; i < stable_n; ++i) {
        core::op o;
        o.ts = core::hlc_make(base_ms, static_cast<std::uint64_t>(i), 1);
        o.body = core::edge_op{graph, node, stable_first + i, core::edge_state::normal, (i / 2) * 10, true};
        stable.push_back(std::move(o));
    }
    std::vector<const core::op*> stable_ptrs;
    for (const auto& o : stable) stable_ptrs.push_back(&o);
    for (std::uint32_t s = 0; s < 2; ++s) {
        ASSERT_TRUE(test::run_on(fx.ioc, shards::async_apply_edges(*fx.conns[s], fx.map, s, stable_ptrs)));
    }

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> writes{0};
    std::string writer_error;
    std::thread writer([&] {
        reads_fixture w;
        w.connect(live_db);
        std::mt19937 rng(42);
        for (std::uint64_t n = 1; !stop.load(); ++n) {
            core::op o;
            o.ts = core::hlc_make(base_ms + 1000 + n, 0, 2);
            core::edge_op e{graph, node, churn_first + static_cast<std::int64_t>(rng() % churn_n),
                            static_cast<core::edge_state>(rng() % 3), static_cast<std::int64_t>(rng() % 1000),
                            rng() % 4 != 0};
            o.body = std::move(e);
            const core::op* one[] = {&o};
            for (std::uint32_t s = 0; s < 2; ++s) {
                auto r = test::run_on(w.ioc, shards::async_apply_edges(*w.conns[s], w.map, s, one));
                if (!r && r.error() != core::errc::shard_retry) {
                    writer_error = r.error().message();
                    return;
                }
            }
            writes.fetch_add(1);
        }
    });

    std::mt19937 rng(7);
    auto check_walk = [&](const std::vector<shards::stored_edge>& walk, const char* how) {
        std::set<std::int64_t> stable_seen;
        for (std::size_t i = 0; i < walk.size(); ++i) {
            const auto& e = walk[i];
            if (i > 0) {
                const auto& p = walk[i - 1];
                EXPECT_GT(std::pair(p.row.position, p.key.other_id), std::pair(e.row.position, e.key.other_id)) << how;
            }
            EXPECT_EQ(e.row.state, core::edge_state::normal);
            if (e.key.other_id >= stable_first && e.key.other_id < stable_first + stable_n) {
                EXPECT_TRUE(stable_seen.insert(e.key.other_id).second) << how << ": " << e.key.other_id << " twice";
            } else {
                EXPECT_TRUE(e.key.other_id >= churn_first && e.key.other_id < churn_first + churn_n) << e.key.other_id;
            }
        }
        EXPECT_EQ(stable_seen.size(), static_cast<std::size_t>(stable_n)) << how;
    };
    for (int round = 0; round < 20 && !HasFailure(); ++round) {
        shards::edge_page_request req{graph, node, shards::edge_direction::forward, core::edge_state::normal, 1,
                                      std::nullopt, {}};
        std::vector<shards::stored_edge> walk;
        for (;;) {
            req.limit = 1 + rng() % 37;
            auto page = test::run_on(fx.ioc, shards::async_page_edges(fx.conn_of(node), req));
            ASSERT_TRUE(page);
            walk.insert(walk.end(), page.value().edges.begin(), page.value().edges.end());
            if (!page.value().next) break;
            req.cursor = page.value().next;
        }
        check_walk(walk, "forward");
        // Backward from the very end: a previous-cursor below every key.
        req.cursor = core::page_cursor{kind::previous, std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::min()};
        walk.clear();
        for (;;) {
            req.limit = 1 + rng() % 37;
            auto page = test::run_on(fx.ioc, shards::async_page_edges(fx.conn_of(node), req));
            ASSERT_TRUE(page);
            walk.insert(walk.begin(), page.value().edges.begin(), page.value().edges.end());
            if (!page.value().previous) break;
            req.cursor = page.value().previous;
        }
        check_walk(walk, "backward");
    }
    stop = true;
    writer.join();
    EXPECT_EQ(writer_error, "");
    EXPECT_GT(writes.load(), 0u) << "the writer never ran alongside the reader";
}

}  // namespace
}  // namespace cairn
