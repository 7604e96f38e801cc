// Whole-node ops (issues 4, 17) against real MariaDB: random edge ops and node ops (remove,
// archive, negate, unarchive; both directions or one), shuffled, duplicated and batch-split,
// applied to two shards, must leave exactly
// the model's rows (effective state) and counts, and every node's record (GET .../nodes/{id}:
// known, registers per direction, counts by direction and state) read from its shard must be the
// model's; and a node of 10,000 edges archived, un-archived and negated on one direction in chunks
// while edge writes race with it ends exact.
#include <utility>

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <boost/asio/co_spawn.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>

namespace cairn {
namespace {

namespace asio = boost::asio;
const std::string node_ops_db = "cairn_prop_nodes";

struct two_shards {
    asio::io_context ioc;
    core::shard_map map = core::shard_map::equal_ranges(2);
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;  // two per shard: [s] and [2 + s]

    void connect() {
        const auto endpoints = test::test_shards();
        for (std::size_t i = 0; i < 4; ++i) {
            conns.push_back(
                std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i % 2], node_ops_db)));
            ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
            ASSERT_TRUE(test::run_on(ioc, shards::async_create_edge_schema(*conns.back())));
        }
    }
    bool clear() {
        for (std::size_t s = 0; s < 2; ++s) {
            for (const char* t : {"DELETE FROM edges", "DELETE FROM edge_counts", "DELETE FROM node_registers"}) {
                if (!test::run_on(ioc, conns[s]->async_execute(t))) return false;
            }
        }
        return true;
    }
    bool apply(const std::vector<const core::op*>& batch) {
        for (std::uint32_t s = 0; s < 2; ++s) {
            if (!test::run_on(ioc, shards::async_apply_edges(*conns[s], map, s, batch))) return false;
        }
        return true;
    }
    // What the shards hold, as a model: rows (effective state) and non-zero counts.
    std::optional<test::edge_model> dump() {
        test::edge_model actual;
        for (std::uint32_t s = 0; s < 2; ++s) {
            auto rows = test::run_on(ioc, shards::async_dump_edges(*conns[s]));
            if (!rows) return std::nullopt;
            for (const auto& e : rows.value()) {
                actual.rows[{e.key.graph, e.key.node_id, static_cast<int>(e.key.direction), e.key.other_id}] = e.row;
            }
            auto counts = test::run_on(ioc, shards::async_dump_edge_counts(*conns[s]));
            if (!counts) return std::nullopt;
            for (const auto& [k, n] : counts.value()) {
                actual.counts[{k.graph, k.node_id, static_cast<int>(k.direction), static_cast<int>(k.state)}] = n;
            }
        }
        return actual;
    }
    // The records of nodes 0..ids-1 of a graph, each read from its own shard.
    std::optional<std::vector<shards::node_record>> node_records(const std::string& graph, std::int64_t ids) {
        std::vector<shards::node_record> out(static_cast<std::size_t>(ids));
        for (std::uint32_t s = 0; s < 2; ++s) {
            std::vector<std::int64_t> mine;
            for (std::int64_t n = 0; n < ids; ++n) {
                if (map.shard_of_id(n) == s) mine.push_back(n);
            }
            auto r = test::run_on(ioc, shards::async_node_records(*conns[s], graph, std::span<const std::int64_t>(mine)));
            if (!r) return std::nullopt;
            for (std::size_t i = 0; i < mine.size(); ++i) out[static_cast<std::size_t>(mine[i])] = r.value()[i];
        }
        return out;
    }
};

// What the model says GET .../nodes/{id} must show.
shards::node_record expected_record(const test::edge_model& m, const std::string& graph, std::int64_t n) {
    shards::node_record rec;
    for (int d = 0; d < 2; ++d) {
        if (m.registers.contains({graph, n, d})) {
            rec.known = true;
            rec.registers[static_cast<std::size_t>(d)] = m.registers_of(graph, n, d);
        }
    }
    for (const auto& [k, row] : m.rows) {
        if (std::get<0>(k) == graph && std::get<1>(k) == n) rec.known = true;
    }
    for (int d = 0; d < 2; ++d) {
        for (int st = 0; st < 4; ++st) {
            if (auto it = m.counts.find({graph, n, d, st}); it != m.counts.end()) rec.counts[d][st] = it->second;
        }
    }
    return rec;
}

TEST(node_ops, edge_and_node_ops_converge_on_two_shards_to_the_model) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(node_ops_db);
    two_shards t;
    t.connect();
    const bool ok = rc::check("shuffled, duplicated, batch-split edge and node ops converge", [&] {
        const auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_edge_or_node_op(6, 8));
        const auto applied = *test::gen_shuffled_with_duplicates(ops);
        RC_ASSERT(t.clear());
        std::size_t at = 0;
        while (at < applied.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 8);
            std::vector<const core::op*> batch;
            for (std::size_t i = at; i < std::min(applied.size(), at + n); ++i) batch.push_back(&applied[i]);
            at += n;
            RC_ASSERT(t.apply(batch));
        }
        const auto model = test::edge_model::of(ops);
        const auto actual = t.dump();
        RC_ASSERT(actual.has_value());
        RC_ASSERT(actual->rows == model.rows);
        RC_ASSERT(actual->counts == model.counts);
        for (const std::string graph : {"follows", "blocks"}) {
            const auto records = t.node_records(graph, 6);
            RC_ASSERT(records.has_value());
            for (std::int64_t n = 0; n < 6; ++n) {
                const auto want = expected_record(model, graph, n);
                const auto& got = (*records)[static_cast<std::size_t>(n)];
                RC_ASSERT(got.known == want.known);
                RC_ASSERT(got.registers == want.registers);
                RC_ASSERT(got.counts == want.counts);
            }
        }
    });
    EXPECT_TRUE(ok);
}

core::op edge_at(std::int64_t s, std::int64_t d, core::edge_state st, std::uint64_t ms, bool sets_position = true) {
    core::op o;
    o.ts = core::hlc_make(1'700'000'000'000 + ms, 0, 1);
    o.body = core::edge_op{"follows", s, d, st, static_cast<std::int64_t>(ms), sets_position};
    return o;
}

core::op node_at(std::int64_t n, core::node_action a, std::uint64_t ms,
                 core::node_scope scope = core::node_scope::both) {
    core::op o;
    o.ts = core::hlc_make(1'700'000'000'000 + ms, 0, 2);
    o.body = core::node_op{"follows", n, a, scope};
    return o;
}

// Applies ops in batches of up to 1000 on connection set `base` (0 or 2), as a coroutine.
asio::awaitable<bool> apply_all(two_shards& t, std::size_t base, const std::vector<core::op>& ops) {
    for (std::size_t at = 0; at < ops.size(); at += 1000) {
        std::vector<const core::op*> batch;
        for (std::size_t i = at; i < std::min(ops.size(), at + 1000); ++i) batch.push_back(&ops[i]);
        for (std::uint32_t s = 0; s < 2; ++s) {
            // A deadlock between the racing transactions is a retry, as the apply worker does.
            for (int attempt = 0;; ++attempt) {
                auto r = co_await shards::async_apply_edges(*t.conns[base + s], t.map, s, batch);
                if (r) break;
                if (r.error() != core::errc::shard_retry || attempt > 20) co_return false;
            }
        }
    }
    co_return true;
}

// Runs both op lists at once, each on its own connections; true if both succeeded.
bool race(two_shards& t, const std::vector<core::op>& a, const std::vector<core::op>& b) {
    int done = 0;
    bool ok = true;
    for (const auto& [base, ops] : {std::pair<std::size_t, const std::vector<core::op>*>{0, &a}, {2, &b}}) {
        asio::co_spawn(t.ioc, apply_all(t, base, *ops), [&](std::exception_ptr e, bool r) {
            ok = ok && !e && r;
            ++done;
        });
    }
    t.ioc.restart();
    t.ioc.run();
    return ok && done == 2;
}

// Races a and b on the shards, adds both to `all`, and checks that the shards hold the model of
// `all` (rows and counts); returns that model for the caller's own checks.
std::optional<test::edge_model> race_and_check(two_shards& t, std::vector<core::op>& all, const std::vector<core::op>& a,
                                               const std::vector<core::op>& b) {
    if (!race(t, a, b)) {
        ADD_FAILURE() << "applying the racing ops failed";
        return std::nullopt;
    }
    all.insert(all.end(), a.begin(), a.end());
    all.insert(all.end(), b.begin(), b.end());
    auto model = test::edge_model::of(all);
    const auto actual = t.dump();
    if (!actual) {
        ADD_FAILURE() << "reading the shards failed";
        return std::nullopt;
    }
    EXPECT_EQ(actual->counts, model.counts);
    EXPECT_TRUE(actual->rows == model.rows);
    return model;
}

TEST(node_ops, a_node_of_10000_edges_archived_and_unarchived_while_edge_writes_race) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(node_ops_db);
    two_shards t;
    t.connect();
    ASSERT_TRUE(t.clear());
    constexpr std::int64_t spammer = 0;
    constexpr std::int64_t n = 10'000;
    std::vector<core::op> all;
    std::vector<core::op> setup;
    for (std::int64_t i = 1; i <= n; ++i) setup.push_back(edge_at(spammer, i, core::edge_state::normal, 10));
    for (std::int64_t i = 1; i <= 50; ++i) setup.push_back(edge_at(i, spammer, core::edge_state::normal, 10));  // followers
    ASSERT_TRUE(race(t, setup, {}));
    all = setup;

    // Archive the node while newer edge writes (some removals, some re-adds) race with it.
    std::vector<core::op> archive{node_at(spammer, core::node_action::archive, 100)};
    std::vector<core::op> racing;
    for (std::int64_t i = 1; i <= n; i += 97) racing.push_back(edge_at(spammer, i, core::edge_state::removed, 150));
    for (std::int64_t i = 2; i <= n; i += 89) racing.push_back(edge_at(spammer, i, core::edge_state::normal, 160));
    for (std::int64_t i = 3; i <= n; i += 83) racing.push_back(edge_at(spammer, i, core::edge_state::normal, 50));  // older
    {
        const auto checked = race_and_check(t, all, archive, racing);
        ASSERT_TRUE(checked.has_value());
        const auto& model = *checked;
        const auto archived = model.counts.find({"follows", spammer, 0, static_cast<int>(core::edge_state::archived)});
        ASSERT_NE(archived, model.counts.end());
        EXPECT_GT(archived->second, 9'000);  // the node is on ice
    }

    // And the way back, again with racing writes.
    std::vector<core::op> unarchive{node_at(spammer, core::node_action::unarchive, 200)};
    std::vector<core::op> racing2;
    for (std::int64_t i = 5; i <= n; i += 71) racing2.push_back(edge_at(spammer, i, core::edge_state::archived, 250, false));
    {
        const auto checked = race_and_check(t, all, racing2, unarchive);
        ASSERT_TRUE(checked.has_value());
        const auto& model = *checked;
        const auto normal = model.counts.find({"follows", spammer, 0, static_cast<int>(core::edge_state::normal)});
        ASSERT_NE(normal, model.counts.end());
        EXPECT_GT(normal->second, 9'000);
    }

    // One direction only: the node's followers (its incoming edges) negated while new followers
    // arrive, which the node's state covers; its 10,000 outgoing edges stay as they are.
    std::vector<core::op> negate{node_at(spammer, core::node_action::negate, 300, core::node_scope::backward)};
    std::vector<core::op> racing3;
    for (std::int64_t i = 51; i <= 80; ++i) racing3.push_back(edge_at(i, spammer, core::edge_state::normal, 350));
    for (std::int64_t i = 7; i <= n; i += 61) racing3.push_back(edge_at(spammer, i, core::edge_state::normal, 350));
    {
        const auto checked = race_and_check(t, all, negate, racing3);
        ASSERT_TRUE(checked.has_value());
        const auto& model = *checked;
        EXPECT_EQ(model.counts.at({"follows", spammer, 1, static_cast<int>(core::edge_state::negative)}), 80);
        EXPECT_FALSE(model.counts.contains({"follows", spammer, 1, static_cast<int>(core::edge_state::normal)}));
        EXPECT_GT(model.counts.at({"follows", spammer, 0, static_cast<int>(core::edge_state::normal)}), 9'000);
    }
}

}  // namespace
}  // namespace cairn
