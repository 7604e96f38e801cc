// The range copy's throttle and progress (shards/range_copy.hpp) against real MariaDB: 400 edges on
// the source, copied in chunks of 50 at 1,000 rows/s at most, take at least the time the throttle
// allows, report progress after every chunk, and end with the target equal to the source's half.
#include <utility>

#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "shards/entity_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/range_copy.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include <chrono>
#include <set>
#include <string>

namespace cairn::test {
namespace {

constexpr const char* source_db = "cairn_range_copy_from";
constexpr const char* target_db = "cairn_range_copy_to";

// Two fresh databases, the source on the first test shard and the target on the second, connected.
struct two_databases {
    boost::asio::io_context ioc;
    shards::mariadb_conn from{ioc.get_executor(), params_for(test_shards()[0], source_db)};
    shards::mariadb_conn to{ioc.get_executor(), params_for(test_shards()[1], target_db)};
    bool connect() {
        fresh_database(source_db);
        fresh_database(target_db);
        return run_on(ioc, from.async_connect()).has_value() && run_on(ioc, to.async_connect()).has_value();
    }
    // The edges g: n -> n + 1000 (position n) for n in 1..400 on the source.
    bool four_hundred_edges() {
        return run_on(ioc, shards::async_create_edge_schema(from)).has_value() &&
               exec_sql(test_shards()[0],
                        {"INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) "
                         "SELECT 'g', seq, 0, seq + 1000, 0, 0, seq, 1, 1, 0 FROM seq_1_to_400"},
                        source_db)
                   .has_value();
    }
};

TEST(range_copy, the_throttle_paces_the_copy_and_progress_follows_every_chunk) {
    CAIRN_REQUIRE_SHARDS(2u);
    two_databases dbs;
    ASSERT_TRUE(dbs.connect());
    ASSERT_TRUE(dbs.four_hundred_edges());
    auto& ioc = dbs.ioc;
    auto& from = dbs.from;
    auto& to = dbs.to;
    const auto half = core::shard_map::equal_ranges(1).split(0).value().range_of(1);
    auto plan = run_on(ioc, shards::async_plan_range_copy(from, {}, {}));
    ASSERT_TRUE(plan.has_value());

    std::vector<shards::range_copy_progress> seen;
    shards::range_copy_options options{50, 1000, {}, {}};
    const auto t0 = std::chrono::steady_clock::now();
    auto copied = run_on(ioc, shards::async_copy_range(from, to, plan.value(), half, options,
                                                       [&](const shards::range_copy_progress& p) { seen.push_back(p); }));
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(copied.has_value());
    EXPECT_EQ(copied.value().rows_read, 400u);
    EXPECT_GT(copied.value().rows_copied, 100u);
    EXPECT_LT(copied.value().rows_copied, 300u);
    // 400 rows at 1,000/s: the last wait ends 400 ms after the start (a lower bound only; unthrottled, the
    // copy takes about 130 ms here under ASan).
    EXPECT_GE(took, std::chrono::milliseconds(395));

    // Progress after every chunk of edges (8 full ones and the empty read that ends the scan), growing.
    std::uint64_t edges_read = 0, edges_copied = 0;
    int edge_chunks = 0;
    for (const auto& p : seen) {
        if (p.table != "edges") continue;
        EXPECT_EQ(p.group, "edges");
        EXPECT_GE(p.rows_read, edges_read);
        edges_read = p.rows_read;
        edges_copied = p.rows_copied;
        ++edge_chunks;
    }
    EXPECT_EQ(edge_chunks, 9);
    EXPECT_EQ(edges_read, 400u);
    EXPECT_EQ(edges_copied, copied.value().rows_copied);

    auto diff = run_on(ioc, shards::async_diff_range(from, to, plan.value(), half, options));
    ASSERT_TRUE(diff.has_value());
    for (const auto& d : diff.value()) EXPECT_TRUE(d.same()) << d.table;
}

// A copy resumed inside a group whose rows stand alone (entities) starts past the position's key: into
// an empty target, only the rows after it arrive, and none of an earlier table or group. A position that
// does not fit the plan (a key of another shape, a group that cannot resume) is ignored: copied whole.
TEST(range_copy, a_resumed_copy_starts_past_its_position_in_a_resumable_group) {
    CAIRN_REQUIRE_SHARDS(2u);
    fresh_database(source_db);
    boost::asio::io_context ioc;
    shards::mariadb_conn from(ioc.get_executor(), params_for(test_shards()[0], source_db));
    ASSERT_TRUE(run_on(ioc, from.async_connect()));
    ASSERT_TRUE(run_on(ioc, shards::async_create_entity_schema(from)));
    ASSERT_TRUE(exec_sql(test_shards()[0],
                         {"INSERT INTO entities (kind, id, ts, deleted, body) "
                          "SELECT 'k', UNHEX(LPAD(HEX(seq), 32, '0')), 1, 0, 'x' FROM seq_1_to_300"},
                         source_db));
    const auto all = core::shard_map::equal_ranges(1).range_of(0);
    auto plan = run_on(ioc, shards::async_plan_range_copy(from, {}, {}));
    ASSERT_TRUE(plan.has_value());
    const auto entities = std::find_if(plan.value().begin(), plan.value().end(), [](const auto& g) { return g.name == "entities"; });
    ASSERT_NE(entities, plan.value().end());
    EXPECT_TRUE(entities->resumable);
    const auto copied_ids = [&] {
        std::set<std::uint64_t> out;
        auto r = query_sql(test_shards()[1], "SELECT CONV(HEX(id), 16, 10) FROM entities", target_db);  // the ids are 1..300
        if (r) {
            for (const auto& v : r.value()) out.insert(std::stoull(v));
        }
        return out;
    };
    const auto copy = [&](std::optional<shards::copy_resume> resume) {
        fresh_database(target_db);
        shards::mariadb_conn to(ioc.get_executor(), params_for(test_shards()[1], target_db));
        if (!run_on(ioc, to.async_connect())) return false;
        shards::range_copy_options o{40, 0, {}, std::move(resume)};
        return run_on(ioc, shards::async_copy_range(from, to, {*entities}, all, o)).has_value();
    };
    // Past added_id 120: rows 121..300 only.
    ASSERT_TRUE(copy(shards::copy_resume{"entities", "entities", {"120"}}));
    auto got = copied_ids();
    EXPECT_EQ(got.size(), 180u);
    EXPECT_EQ(*got.begin(), 121u);
    EXPECT_EQ(*got.rbegin(), 300u);
    // What does not fit is copied whole.
    for (const auto& bad : {shards::copy_resume{"entities", "entities", {"120", "7"}}, shards::copy_resume{"entities", "entities", {"x"}},
                            shards::copy_resume{"entities", "no_such_table", {"120"}}, shards::copy_resume{"edges", "entities", {"120"}}}) {
        ASSERT_TRUE(copy(bad));
        EXPECT_EQ(copied_ids().size(), 300u) << bad.group << " " << bad.table;
    }
    // A group that cannot resume (edges: counts and registers must agree with the rows) ignores it too.
    auto edges = *entities;
    edges.resumable = false;
    fresh_database(target_db);
    shards::mariadb_conn to(ioc.get_executor(), params_for(test_shards()[1], target_db));
    ASSERT_TRUE(run_on(ioc, to.async_connect()));
    shards::range_copy_options o{40, 0, {}, shards::copy_resume{"entities", "entities", {"120"}}};
    ASSERT_TRUE(run_on(ioc, shards::async_copy_range(from, to, {edges}, all, o)).has_value());
    EXPECT_EQ(copied_ids().size(), 300u);
}

// The chunked diff names the chunk where the shards differ, with the key interval around the row and
// each side's tag read in the same snapshot as its rows (here the database's name).
TEST(range_copy, the_chunked_diff_names_the_chunk_that_differs_and_each_sides_tag) {
    CAIRN_REQUIRE_SHARDS(2u);
    two_databases dbs;
    ASSERT_TRUE(dbs.connect());
    ASSERT_TRUE(dbs.four_hundred_edges());
    auto& ioc = dbs.ioc;
    auto& from = dbs.from;
    auto& to = dbs.to;
    const auto all = core::shard_map::equal_ranges(1).range_of(0);
    auto plan = run_on(ioc, shards::async_plan_range_copy(from, {}, {}));
    ASSERT_TRUE(plan.has_value());
    shards::range_copy_options options{50, 0, {}, {}};
    ASSERT_TRUE(run_on(ioc, shards::async_copy_range(from, to, plan.value(), all, options)).has_value());
    constexpr std::string_view tag = "SELECT DATABASE()";
    auto clean = run_on(ioc, shards::async_diff_range_chunks(from, to, plan.value(), all, options, tag));
    ASSERT_TRUE(clean.has_value());
    EXPECT_TRUE(clean.value().empty()) << clean.value().size() << " chunks differ after the copy";

    ASSERT_TRUE(exec_sql(test_shards()[1], {"DELETE FROM edges WHERE node_id = 217"}, target_db));
    auto found = run_on(ioc, shards::async_diff_range_chunks(from, to, plan.value(), all, options, tag));
    ASSERT_TRUE(found.has_value());
    ASSERT_EQ(found.value().size(), 1u);
    const auto& c = found.value().front();
    EXPECT_EQ(c.table, "edges");
    // Chunks of 50 in (graph, node_id, direction, other_id) order: the fifth holds node 201..250.
    EXPECT_EQ(c.after, (std::vector<std::string>{"g", "200", "0", "1200"}));
    EXPECT_EQ(c.last, (std::vector<std::string>{"g", "250", "0", "1250"}));
    EXPECT_EQ(c.rows_from, 50u);
    EXPECT_EQ(c.rows_to, 49u);
    EXPECT_EQ(c.tag_from, source_db);
    EXPECT_EQ(c.tag_to, target_db);
    // The last chunk is open-ended: a row past the source's last key on the target is found there.
    ASSERT_TRUE(exec_sql(test_shards()[1],
                         {"INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) "
                          "VALUES ('g', 999, 0, 5, 0, 0, 1, 1, 1, 0)"},
                         target_db));
    auto again = run_on(ioc, shards::async_rediff_chunks(from, to, plan.value(), all, found.value(), options, tag));
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again.value().size(), 1u) << "the deleted row is still missing";
    auto both = run_on(ioc, shards::async_diff_range_chunks(from, to, plan.value(), all, options, tag));
    ASSERT_TRUE(both.has_value());
    ASSERT_EQ(both.value().size(), 2u);
    EXPECT_TRUE(both.value().back().last.empty());
    EXPECT_EQ(both.value().back().rows_to, both.value().back().rows_from + 1);
}

}  // namespace
}  // namespace cairn::test
