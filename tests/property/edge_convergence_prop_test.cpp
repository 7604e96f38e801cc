// Convergence against real MariaDB: random edge ops, applied through the shard apply function
// in random order, with duplicates and random batch splits, must leave exactly the forward
// rows, backward rows and counts of applying them once in order (the in-memory model).
#include <utility>

#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

namespace cairn {
namespace {

namespace asio = boost::asio;
const std::string edge_convergence_db = "cairn_prop_edges";

struct shard_state {
    std::map<test::edge_key, core::edge_row> rows;
    std::map<test::count_key, std::int64_t> counts;
};

TEST(edge_convergence, real_shards_end_in_the_model_rows_and_counts) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(edge_convergence_db);
    const auto endpoints = test::test_shards();
    const auto map = core::shard_map::equal_ranges(2);
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], edge_convergence_db)));
        auto& c = *conns.back();
        ASSERT_TRUE(test::run_on(ioc, c.async_connect()));
        ASSERT_TRUE(test::run_on(ioc, shards::async_create_edge_schema(c)));
    }

    const bool ok = rc::check("shuffled, duplicated, batch-split edge ops converge on two shards", [&] {
        const auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_edge_op(6, 8));
        const auto applied = *test::gen_shuffled_with_duplicates(ops);
        for (auto& c : conns) {
            RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM edges")).has_value());
            RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM edge_counts")).has_value());
        }
        // Random batch boundaries: the same op set reaches each shard in different groupings.
        std::size_t at = 0;
        while (at < applied.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 8);
            std::vector<const core::op*> batch;
            for (std::size_t i = at; i < std::min(applied.size(), at + n); ++i) batch.push_back(&applied[i]);
            at += n;
            for (std::uint32_t s = 0; s < 2; ++s) {
                auto r = test::run_on(ioc, shards::async_apply_edges(*conns[s], map, s, batch));
                if (!r) RC_FAIL("applying a batch failed: " + r.error().message() + ": " + conns[s]->last_error());
            }
        }
        const auto model = test::edge_model::of(ops);
        // Each row must live on the shard of its node (read_edge_model checks it).
        auto read = test::read_edge_model(ioc, conns, map);
        if (auto* e = std::get_if<std::string>(&read)) RC_FAIL(*e);
        const auto& actual = std::get<test::edge_model>(read);
        RC_ASSERT(actual.rows == model.rows);
        RC_ASSERT(actual.counts == model.counts);
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn
