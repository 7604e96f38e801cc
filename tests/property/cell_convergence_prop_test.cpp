// Cells against real MariaDB (issue 6): random writes of a few cell keys with competing bodies
// and timestamps, applied in random order, duplicated and in random batches, end in exactly the
// model's cells: each key holds the body of its smallest (ts, stored body) write. The users'
// BASE writes carry rows of a cell index (users_by_company): the index table ends in exactly the
// model's rows too, each on the shard of its company, holding the greatest ref_key that wrote it.
#include <utility>

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "shards/cell_store.hpp"
#include "shards/index_store.hpp"
#include "shards/model_dispatch.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/model_gen.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>

namespace cairn {
namespace {

namespace asio = boost::asio;
const std::string cell_convergence_db = "cairn_prop_cells";



using cell_map = std::map<std::tuple<std::string, std::string, std::string, std::int64_t>, std::pair<std::uint64_t, std::string>>;

// (values, row_key) -> the greatest version among the writes that carry the row.
using index_map = std::map<std::pair<std::vector<core::index_value>, std::string>, std::uint64_t>;

index_map index_model_of(const std::vector<core::op>& ops) {
    index_map out;
    for (const auto& o : ops) {
        const auto& c = std::get<core::cell_op>(o.body);
        for (const auto& e : c.entries) {
            auto& v = out[{e.values, c.row_key}];
            v = std::max(v, core::cell_index_version(c.ref_key));
        }
    }
    return out;
}

cell_map model_of(const std::vector<core::op>& ops) {
    cell_map out;
    for (const auto& o : ops) {
        const auto& c = std::get<core::cell_op>(o.body);
        const auto key = std::tuple{c.table, c.row_key, c.column, c.ref_key};
        auto it = out.find(key);
        if (it == out.end() || core::cell_version_wins(o.ts, c.body, it->second.first, it->second.second)) {
            out[key] = {o.ts, c.body};
        }
    }
    return out;
}

TEST(cell_convergence, competing_writes_in_any_order_end_in_the_smallest_version_on_real_shards) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(cell_convergence_db);
    const auto endpoints = test::test_shards();
    const auto map = core::shard_map::equal_ranges(2);
    const core::counter_catalog counters;
    core::cell_config cells;
    cells.tables = {"users", "schools"};
    const core::entity_config entities;
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], cell_convergence_db)));
        ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
        ASSERT_TRUE(test::run_on(ioc, shards::async_create_schema(*conns.back(), {map, counters, cells, entities, 0})));
        core::op def;
        def.ts = core::hlc_make(1'795'000'000'000, 0, 1);
        def.body = core::index_def_op{"users_by_company", false, core::encode_index_def(test::users_by_company())};
        const core::op* defs[] = {&def};
        ASSERT_TRUE(test::run_on(ioc, shards::async_apply_ops(*conns.back(), {map, counters, cells, entities, 0},
                                                              static_cast<core::shard_index>(i), defs)));
    }

    const bool ok = rc::check("cell writes converge to the model on two shards", [&] {
        auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_cell_write());
        for (std::size_t i = 0; i < ops.size(); ++i) ops[i].op_id = core::make_op_id(1, i + 1);
        const auto applied = *test::gen_shuffled_with_duplicates(ops);
        for (auto& c : conns) {
            for (const auto& t : cells.tables) RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM cells_" + t)).has_value());
            RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM index_users_by_company")).has_value());
        }
        std::size_t at = 0;
        while (at < applied.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 8);
            for (std::uint32_t s = 0; s < 2; ++s) {
                std::vector<const core::op*> batch;
                for (std::size_t i = at; i < std::min(applied.size(), at + n); ++i) {
                    if (shards::touches_shard(applied[i], map, s)) batch.push_back(&applied[i]);
                }
                const shards::apply_context ctx{map, counters, cells, entities, 0, nullptr};
                RC_ASSERT(test::run_on(ioc, shards::async_apply_ops(*conns[s], ctx, s, batch)).has_value());
            }
            at += n;
        }
        cell_map actual;
        for (std::uint32_t s = 0; s < 2; ++s) {
            for (const auto& t : cells.tables) {
                auto rows = test::run_on(ioc, shards::async_dump_cells(*conns[s], t));
                RC_ASSERT(rows.has_value());
                for (const auto& c : rows.value()) {
                    RC_ASSERT(map.shard_of_hash(core::hash_bytes(c.row_key)) == s);
                    actual[{t, c.row_key, c.column, c.ref_key}] = {c.ts, c.body};
                }
            }
        }
        RC_ASSERT(actual == model_of(ops));
        index_map rows;
        for (std::uint32_t s = 0; s < 2; ++s) {
            auto r = test::run_on(ioc, shards::async_scan_index_rows(*conns[s], test::users_by_company(), std::nullopt, 100'000));
            RC_ASSERT(r.has_value());
            for (const auto& row : r.value()) {
                RC_ASSERT(!row.deleted);
                RC_ASSERT(map.shard_of_hash(core::index_value_hash(row.values[0])) == s);
                rows[{row.values, row.entity_id}] = row.ts;
            }
        }
        RC_ASSERT(rows == index_model_of(ops));
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn
