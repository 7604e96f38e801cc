// Entities against real MariaDB (issue 5): random puts and deletes of a few ids, with colliding
// client timestamps, applied in random order, duplicated and in random batches, end in exactly
// the model's rows: per id the version with the greatest (ts, tombstone, body).
#include <utility>

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "shards/entity_store.hpp"
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
const std::string entity_convergence_db = "cairn_prop_entities";


using entity_map = std::map<std::pair<std::string, std::string>, shards::stored_entity>;

entity_map entity_model_of(const std::vector<core::op>& ops) {
    entity_map out;
    for (const auto& o : ops) {
        const auto& e = std::get<core::entity_op>(o.body);
        const std::pair key{e.entity_kind, e.id};
        auto it = out.find(key);
        if (it == out.end() || core::entity_version_wins(o.ts, e.deleted, e.body, it->second.ts, it->second.deleted, it->second.body)) {
            out[key] = shards::stored_entity{e.entity_kind, e.id, o.ts, e.deleted, e.body};
        }
    }
    return out;
}

TEST(entity_convergence, puts_and_tombstones_in_any_order_end_in_the_last_writer_on_real_shards) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(entity_convergence_db);
    const auto endpoints = test::test_shards();
    const auto map = core::shard_map::equal_ranges(2);
    const core::counter_catalog counters;
    const core::cell_config cells;
    core::entity_config entities;
    entities.kinds = {"entry", "user"};
    const shards::apply_context ctx{map, counters, cells, entities, 0, nullptr};
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], entity_convergence_db)));
        ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
        ASSERT_TRUE(test::run_on(ioc, shards::async_create_schema(*conns.back(), ctx)));
    }

    const bool ok = rc::check("entity writes converge to the model on two shards", [&] {
        auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_entity_write());
        for (std::size_t i = 0; i < ops.size(); ++i) ops[i].op_id = core::make_op_id(1, i + 1);
        const auto applied = *test::gen_shuffled_with_duplicates(ops);
        for (auto& c : conns) RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM entities")).has_value());
        std::size_t at = 0;
        while (at < applied.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 8);
            for (std::uint32_t s = 0; s < 2; ++s) {
                std::vector<const core::op*> batch;
                for (std::size_t i = at; i < std::min(applied.size(), at + n); ++i) {
                    if (shards::touches_shard(applied[i], map, s)) batch.push_back(&applied[i]);
                }
                RC_ASSERT(test::run_on(ioc, shards::async_apply_ops(*conns[s], ctx, s, batch)).has_value());
            }
            at += n;
        }
        entity_map actual;
        for (std::uint32_t s = 0; s < 2; ++s) {
            auto rows = test::run_on(ioc, shards::async_dump_entities(*conns[s]));
            RC_ASSERT(rows.has_value());
            for (auto& e : rows.value()) {
                RC_ASSERT(map.shard_of_hash(core::hash_bytes(e.id)) == s);
                actual[{e.kind, e.id}] = e;
            }
        }
        RC_ASSERT(actual == entity_model_of(ops));
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn
