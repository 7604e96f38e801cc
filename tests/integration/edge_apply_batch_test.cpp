// One big apply transaction: 1,500 edges on a single shard are 3,000 rows and 1,507 count rows
// in one batch. The rows and counts must be exact, applying again must change nothing, and a
// second batch that removes half of them must move exactly those counts.
#include <utility>

#include "core/op.hpp"
#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

#include <map>

namespace cairn::test {
namespace {

constexpr const char* apply_batch_db = "cairn_apply_batch";

std::vector<core::op> edges(int n, core::edge_state state, std::uint64_t ts_base) {
    std::vector<core::op> out;
    for (int i = 0; i < n; ++i) {
        core::edge_op e;
        e.graph = "big";
        e.source_id = 1 + i % 7;  // seven sources: counts of many edges per node
        e.destination_id = 1000 + i;
        e.state = state;
        e.position = i;
        out.push_back({static_cast<std::uint64_t>(i + 1), ts_base + static_cast<std::uint64_t>(i), e});
    }
    return out;
}

std::vector<const core::op*> ptrs(const std::vector<core::op>& ops) {
    std::vector<const core::op*> out;
    for (const auto& o : ops) out.push_back(&o);
    return out;
}

// The first test shard with a fresh edge database, and one connection to it.
struct one_shard {
    shard_endpoint shard = test_shards().at(0);
    boost::asio::io_context ioc;
    shards::mariadb_conn conn{ioc.get_executor(), params_for(shard, apply_batch_db)};
    core::shard_map map = core::shard_map::equal_ranges(1);

    bool connect() {
        fresh_edge_database(apply_batch_db);
        return static_cast<bool>(run_on(ioc, conn.async_connect()));
    }
};

TEST(edge_apply_batch, a_big_batch_applies_exactly_and_idempotently) {
    CAIRN_REQUIRE_SHARDS(1u);
    one_shard t;
    ASSERT_TRUE(t.connect());
    auto& [shard, ioc, conn, map] = t;

    const auto adds = edges(1500, core::edge_state::normal, 1'000'000);
    const auto add_ptrs = ptrs(adds);
    for (int round = 0; round < 2; ++round) {  // the second round must change nothing
        ASSERT_TRUE(run_on(ioc, shards::async_apply_edges(conn, map, 0, add_ptrs)));
        auto n = query_sql(shard, "SELECT COUNT(*), SUM(state = 0), SUM(direction) FROM edges", apply_batch_db);
        ASSERT_TRUE(n);
        EXPECT_EQ(n.value().at(0), "3000\t3000\t1500") << "round " << round;
        auto counts = query_sql(shard, "SELECT SUM(count), COUNT(*) FROM edge_counts WHERE state = 0", apply_batch_db);
        ASSERT_TRUE(counts);
        // 7 sources forward + 1500 destinations backward, 3000 edges counted once each way.
        EXPECT_EQ(counts.value().at(0), "3000\t1507") << "round " << round;
    }
    auto src1 = query_sql(shard, "SELECT count FROM edge_counts WHERE node_id = 1 AND direction = 0 AND state = 0", apply_batch_db);
    ASSERT_TRUE(src1);
    EXPECT_EQ(src1.value().at(0), "215");  // i % 7 == 0 for i < 1500

    // Remove the even-numbered half, later in time: 750 edges move from normal to removed.
    auto removes = edges(1500, core::edge_state::removed, 2'000'000);
    std::vector<core::op> half;
    for (std::size_t i = 0; i < removes.size(); i += 2) half.push_back(removes[i]);
    ASSERT_TRUE(run_on(ioc, shards::async_apply_edges(conn, map, 0, ptrs(half))));
    auto by_state = query_sql(shard, "SELECT state, SUM(count) FROM edge_counts GROUP BY state ORDER BY state", apply_batch_db);
    ASSERT_TRUE(by_state);
    ASSERT_EQ(by_state.value().size(), 2u);
    EXPECT_EQ(by_state.value().at(0), "0\t1500");
    EXPECT_EQ(by_state.value().at(1), "1\t1500");
    auto rows_by_state = query_sql(shard, "SELECT state, COUNT(*) FROM edges GROUP BY state ORDER BY state", apply_batch_db);
    ASSERT_TRUE(rows_by_state);
    EXPECT_EQ(rows_by_state.value().at(0), "0\t1500");
    EXPECT_EQ(rows_by_state.value().at(1), "1\t1500");
}

// A batch whose graphs differ in having node registers: the per-graph probe must find the
// registers of the graph with a node op applied before (its edges take the node's archived
// state) and none in the other (the same ids stay normal there).
TEST(edge_apply_batch, registers_are_looked_up_per_graph) {
    CAIRN_REQUIRE_SHARDS(1u);
    one_shard t;
    ASSERT_TRUE(t.connect());
    auto& [shard, ioc, conn, map] = t;

    std::vector<core::op> ops;
    std::uint64_t seq = 0;
    core::node_op archive;
    archive.graph = "held";
    archive.node_id = 1;
    archive.action = core::node_action::archive;
    const std::vector<core::op> first{{++seq, 5'000'000, archive}};
    ASSERT_TRUE(run_on(ioc, shards::async_apply_edges(conn, map, 0, ptrs(first))));
    for (const char* graph : {"free", "held"}) {
        for (int i = 0; i < 1100; ++i) {  // more than one statement's chunk in each graph
            core::edge_op e;
            e.graph = graph;
            e.source_id = 1 + i % 2;
            e.destination_id = 100 + i;
            e.position = i;
            ops.push_back({++seq, 1'000'000 + seq, e});
        }
    }
    ASSERT_TRUE(run_on(ioc, shards::async_apply_edges(conn, map, 0, ptrs(ops))));
    auto rows = query_sql(shard, "SELECT graph, state, COUNT(*) FROM edges GROUP BY graph, state ORDER BY graph, state", apply_batch_db);
    ASSERT_TRUE(rows);
    // held: node 1's 550 edges, both directions, archived (state 2); node 2's stay normal.
    EXPECT_EQ(rows.value(), (std::vector<std::string>{"free\t0\t2200", "held\t0\t1100", "held\t2\t1100"}));
    auto counts = query_sql(
        shard, "SELECT graph, state, SUM(count) FROM edge_counts GROUP BY graph, state ORDER BY graph, state", apply_batch_db);
    ASSERT_TRUE(counts);
    EXPECT_EQ(counts.value(), (std::vector<std::string>{"free\t0\t2200", "held\t0\t1100", "held\t2\t1100"}));
}

// A shard from before issue 17 keeps one pair of node registers per node in node_states. Schema
// creation moves them to per-direction registers and recomputes the node's rows under the
// current rule, counts exact; a second run has nothing left to do.
TEST(edge_apply_batch, old_node_registers_are_migrated_and_their_rows_recomputed) {
    CAIRN_REQUIRE_SHARDS(1u);
    one_shard t;
    ASSERT_TRUE(t.connect());
    auto& [shard, ioc, conn, map] = t;
    auto edge = [](std::int64_t s, std::int64_t d, std::uint64_t ts) {
        return core::op{0, ts, core::edge_op{"mig", s, d, core::edge_state::normal, 1, true}};
    };
    // Edges with no node op yet: the rows are plain, as an old shard would hold them after an
    // archive whose edges were written later (the old rule let them stay normal).
    const std::vector<core::op> written{edge(1, 2, 100), edge(1, 3, 300), edge(4, 1, 100), edge(5, 6, 100), edge(5, 7, 400)};
    ASSERT_TRUE(run_on(ioc, shards::async_apply_edges(conn, map, 0, ptrs(written))));
    ASSERT_TRUE(exec_sql(shard,
                         {"CREATE TABLE node_states (graph VARBINARY(32) NOT NULL, node_id BIGINT NOT NULL, removed_ts BIGINT "
                          "UNSIGNED NOT NULL, archive_ts BIGINT UNSIGNED NOT NULL, archived TINYINT UNSIGNED NOT NULL, "
                          "PRIMARY KEY (graph, node_id)) ENGINE=InnoDB",
                          // node 1 archived at 200; node 5 removed at 150, then unarchived at 250
                          "INSERT INTO node_states VALUES ('mig', 1, 0, 200, 1), ('mig', 5, 150, 250, 0)"},
                         apply_batch_db));

    ASSERT_TRUE(run_on(ioc, shards::async_create_edge_schema(conn)));
    auto ops = written;
    ops.push_back({0, 200, core::node_op{"mig", 1, core::node_action::archive}});
    ops.push_back({0, 150, core::node_op{"mig", 5, core::node_action::remove}});
    ops.push_back({0, 250, core::node_op{"mig", 5, core::node_action::unarchive}});
    const auto model = edge_model::of(ops);
    auto rows = run_on(ioc, shards::async_dump_edges(conn));
    ASSERT_TRUE(rows);
    std::map<edge_key, core::edge_row> got;
    for (const auto& e : rows.value()) got[{e.key.graph, e.key.node_id, static_cast<int>(e.key.direction), e.key.other_id}] = e.row;
    EXPECT_TRUE(got == model.rows);
    EXPECT_EQ(got.at({"mig", 1, 0, 3}).state, core::edge_state::archived);  // written after the archive: covered now
    EXPECT_EQ(got.at({"mig", 5, 0, 6}).state, core::edge_state::removed);   // older than the remove
    EXPECT_EQ(got.at({"mig", 5, 0, 7}).state, core::edge_state::normal);    // newer, and the node restored
    auto counts = run_on(ioc, shards::async_dump_edge_counts(conn));
    ASSERT_TRUE(counts);
    std::map<count_key, std::int64_t> got_counts;
    for (const auto& [k, n] : counts.value()) {
        got_counts[{k.graph, k.node_id, static_cast<int>(k.direction), static_cast<int>(k.state)}] = n;
    }
    EXPECT_EQ(got_counts, model.counts);
    auto regs = query_sql(shard, "SELECT node_id, direction, removed_ts, action_ts, action FROM node_registers ORDER BY 1, 2", apply_batch_db);
    ASSERT_TRUE(regs);
    EXPECT_EQ(regs.value(), (std::vector<std::string>{"1\t0\t0\t200\t1", "1\t1\t0\t200\t1", "5\t0\t150\t250\t2", "5\t1\t150\t250\t2"}));
    auto gone = query_sql(shard, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'node_states'", apply_batch_db);
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone.value().at(0), "0");
    ASSERT_TRUE(run_on(ioc, shards::async_create_edge_schema(conn)));  // nothing left: a no-op
}

}  // namespace
}  // namespace cairn::test
