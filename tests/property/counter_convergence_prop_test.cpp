// Counters against real MariaDB (issue 6): random increments, applied through the one apply
// function in random order, duplicated, split into random batches mixed with edge ops, then
// replayed whole, must leave exactly the model's sums in every declared table: each op counted
// once. Also: an op older than the op-id keep window is refused unless it was applied before.
#include <utility>

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "shards/counter_store.hpp"
#include "shards/model_dispatch.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>

namespace cairn {
namespace {

namespace asio = boost::asio;
const std::string counter_convergence_db = "cairn_prop_counters";
constexpr std::int64_t midnight = 20780LL * core::ms_per_day;  // 2026-11-23T00:00:00Z

// Times around one UTC midnight, with the boundary's two sides always possible.
rc::Gen<std::int64_t> gen_time() {
    return rc::gen::oneOf(rc::gen::element(midnight - 1, midnight, midnight + core::ms_per_hour - 1),
                          rc::gen::inRange(midnight - 2 * core::ms_per_day, midnight + 2 * core::ms_per_day));
}

rc::Gen<core::op> gen_increment(const core::counter_metric& m, std::uint64_t now_ms) {
    return rc::gen::exec([&m, now_ms] {
        core::counter_op c;
        c.metric = m.name;
        c.dimensions = {std::to_string(*rc::gen::inRange(1, 4)), std::to_string(*rc::gen::inRange(1, 6)),
                        *rc::gen::element<std::string>("DE", "FR", "", "U\xc3"), *rc::gen::element<std::string>("ios", "web")};
        c.time_ms = *gen_time();
        c.delta = *rc::gen::inRange<std::int64_t>(-3, 6);
        c.shard_hash = core::counter_value_hash(m.dimensions[m.shard_on], c.dimensions[m.shard_on]);
        core::op o;
        o.ts = core::hlc_make(now_ms - *rc::gen::inRange<std::uint64_t>(0, 3'600'000), 0, 1);
        o.body = std::move(c);
        return o;
    });
}

using table_rows = test::counter_rows;

struct fixture {
    asio::io_context ioc;
    core::shard_map map = core::shard_map::equal_ranges(2);
    core::counter_catalog catalog = test::counter_example_catalog();
    core::cell_config cells;
    core::entity_config entities;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;

    void connect() {
        const auto endpoints = test::test_shards();
        for (std::size_t i = 0; i < 2; ++i) {
            conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], counter_convergence_db)));
            ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
            ASSERT_TRUE(test::run_on(ioc, shards::async_create_schema(*conns.back(), {map, catalog, cells, entities, 0})));
        }
    }
    core::result<void> apply(core::shard_index s, std::span<const core::op* const> batch, std::uint64_t now_ms) {
        const shards::apply_context ctx{map, catalog, cells, entities, now_ms, nullptr};
        return test::run_on(ioc, shards::async_apply_ops(*conns[s], ctx, s, batch));
    }
    table_rows dump() {
        table_rows out;
        const auto& m = catalog.metrics[0];
        for (std::size_t s = 0; s < 2; ++s) {
            for (const auto& t : m.tables) {
                auto rows = test::run_on(ioc, shards::async_dump_counter_table(*conns[s], m, t));
                EXPECT_TRUE(rows.has_value());
                if (!rows) continue;
                for (auto& [key, count] : rows.value()) {
                    if (count != 0) out[{t.name, key}] += count;
                }
            }
        }
        return out;
    }
    void clear() {
        for (auto& c : conns) {
            for (const auto& t : catalog.metrics[0].tables) {
                RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM " + t.sql_name())).has_value());
            }
            RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM counter_ops")).has_value());
        }
    }
};

TEST(counter_convergence, shuffled_duplicated_replayed_increments_count_once_on_real_shards) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(counter_convergence_db);
    fixture fx;
    ASSERT_EQ(fx.catalog.metrics.size(), 1u);
    fx.connect();
    ASSERT_FALSE(HasFatalFailure());
    const auto& m = fx.catalog.metrics[0];
    const std::uint64_t now_ms = core::system_wall_clock_ms();

    const bool ok = rc::check("increments converge to the model's sums, each op counted once", [&] {
        auto ops = *rc::gen::container<std::vector<core::op>>(gen_increment(m, now_ms));
        for (std::size_t i = 0; i < ops.size(); ++i) ops[i].op_id = core::make_op_id(1, i + 1);
        // Edge ops in the same batches: the apply function splits families into their own transactions.
        const auto edge_count = *rc::gen::inRange<std::size_t>(0, 4);
        auto edges = *rc::gen::container<std::vector<core::op>>(edge_count, test::gen_edge_op(4, 4));
        for (std::size_t i = 0; i < edges.size(); ++i) edges[i].op_id = core::make_op_id(2, i + 1);
        auto all = ops;
        all.insert(all.end(), edges.begin(), edges.end());
        const auto applied = *test::gen_shuffled_with_duplicates(all);
        fx.clear();
        std::size_t at = 0;
        while (at < applied.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 10);
            for (std::uint32_t s = 0; s < 2; ++s) {
                std::vector<const core::op*> batch;
                for (std::size_t i = at; i < std::min(applied.size(), at + n); ++i) {
                    if (shards::touches_shard(applied[i], fx.map, s)) batch.push_back(&applied[i]);
                }
                RC_ASSERT(fx.apply(s, batch, now_ms).has_value());
            }
            at += n;
        }
        const auto expected = test::counter_model_of(m, ops);
        RC_ASSERT(fx.dump() == expected);
        // Every row on the shard of its track.
        for (std::uint32_t s = 0; s < 2; ++s) {
            for (const auto& o : ops) {
                const auto& c = std::get<core::counter_op>(o.body);
                RC_ASSERT(shards::touches_shard(o, fx.map, s) == (fx.map.shard_of_id(std::stoll(c.dimensions[1])) == s));
            }
        }
        // A replay of everything, in one batch per shard, adds nothing.
        for (std::uint32_t s = 0; s < 2; ++s) {
            std::vector<const core::op*> batch;
            for (const auto& o : all) {
                if (shards::touches_shard(o, fx.map, s)) batch.push_back(&o);
            }
            RC_ASSERT(fx.apply(s, batch, now_ms).has_value());
        }
        RC_ASSERT(fx.dump() == expected);
    });
    EXPECT_TRUE(ok);
}

TEST(counter_convergence, an_op_older_than_the_keep_window_is_refused_unless_already_applied) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(counter_convergence_db);
    fixture fx;
    fx.connect();
    ASSERT_FALSE(HasFatalFailure());
    const std::uint64_t now_ms = core::system_wall_clock_ms();
    const std::uint64_t keep_ms = static_cast<std::uint64_t>(fx.catalog.op_ids_keep.count()) * 3'600'000;

    core::op o;
    o.op_id = core::make_op_id(1, 1);
    o.ts = core::hlc_make(now_ms, 0, 1);
    o.body = core::counter_op{"plays", {"1", "2", "DE", "ios"}, midnight, 5, core::hash_id(2)};
    const core::shard_index s = fx.map.shard_of_id(2);
    const core::op* one[] = {&o};
    ASSERT_TRUE(fx.apply(s, one, now_ms));
    // Within the window a second apply is a no-op; after it, the op id is still there (it was
    // applied at now_ms, so it is pruned only at now_ms + keep), and the op is still a no-op.
    ASSERT_TRUE(fx.apply(s, one, now_ms + 1000));
    auto rows = fx.dump();
    EXPECT_EQ((rows[{"plays_by_track_hour", {"2", std::to_string(midnight)}}]), 5);

    // A different op just as old, never applied: refused, nothing counted.
    core::op old = o;
    old.op_id = core::make_op_id(1, 2);
    const core::op* stale[] = {&old};
    auto r = fx.apply(s, stale, now_ms + keep_ms + 1000);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), core::errc::op_expired);
    EXPECT_EQ(fx.dump(), rows);

    // Past the window the first op's id is pruned by the next apply on the shard.
    core::op fresh = o;
    fresh.op_id = core::make_op_id(1, 3);
    fresh.ts = core::hlc_make(now_ms + keep_ms + 2000, 0, 1);
    const core::op* next[] = {&fresh};
    ASSERT_TRUE(fx.apply(s, next, now_ms + keep_ms + 2000));
    auto ids = test::run_on(fx.ioc, shards::async_count_counter_op_ids(*fx.conns[s]));
    ASSERT_TRUE(ids.has_value());
    EXPECT_EQ(ids.value(), 1u) << "the old op id was not pruned";
    EXPECT_EQ((fx.dump()[{"plays_by_track_hour", {"2", std::to_string(midnight)}}]), 10);
}

}  // namespace
}  // namespace cairn
