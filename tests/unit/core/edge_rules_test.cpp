#include "core/edge_rules.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

edge_op edge(edge_state s, std::int64_t pos, bool sets_position = true) {
    return edge_op{"follows", 1, 2, s, pos, sets_position};
}

TEST(edge_rules, later_ts_wins) {
    auto row = edge_merge(std::nullopt, edge(edge_state::normal, 10), 100);
    row = edge_merge(row, edge(edge_state::removed, 11), 200);
    EXPECT_EQ(row.state, edge_state::removed);
    row = edge_merge(row, edge(edge_state::normal, 12), 150);  // older: loses
    EXPECT_EQ(row.state, edge_state::removed);
    EXPECT_EQ(row.ts, 200u);
}

TEST(edge_rules, equal_ts_breaks_ties_by_flockdb_rank) {
    // normal < negative < archived < removed
    const std::array order{edge_state::normal, edge_state::negative, edge_state::archived, edge_state::removed};
    for (std::size_t a = 0; a < order.size(); ++a) {
        for (std::size_t b = 0; b < order.size(); ++b) {
            auto ab = edge_merge(edge_merge(std::nullopt, edge(order[a], 1), 7), edge(order[b], 1), 7);
            auto ba = edge_merge(edge_merge(std::nullopt, edge(order[b], 1), 7), edge(order[a], 1), 7);
            EXPECT_EQ(ab.state, order[std::max(a, b)]);
            EXPECT_EQ(ab, ba);
        }
    }
}

TEST(edge_rules, re_adding_a_removed_edge_gives_it_the_new_position) {
    auto row = edge_merge(std::nullopt, edge(edge_state::normal, 10), 100);
    row = edge_merge(row, edge(edge_state::removed, 20), 200);
    row = edge_merge(row, edge(edge_state::normal, 30), 300);
    EXPECT_EQ(row.state, edge_state::normal);
    EXPECT_EQ(row.position, 30);
}

TEST(edge_rules, archive_and_unarchive_keep_the_position) {
    auto row = edge_merge(std::nullopt, edge(edge_state::normal, 10), 100);
    row = edge_merge(row, edge(edge_state::archived, 20, false), 200);
    EXPECT_EQ(row.state, edge_state::archived);
    EXPECT_EQ(row.position, 10);
    row = edge_merge(row, edge(edge_state::normal, 30, false), 300);
    EXPECT_EQ(row.state, edge_state::normal);
    EXPECT_EQ(row.position, 10);
}

TEST(edge_rules, a_positioning_op_beats_any_non_positioning_one_whatever_the_order) {
    auto a = edge_merge(edge_merge(std::nullopt, edge(edge_state::archived, 5, false), 900), edge(edge_state::normal, 6), 100);
    auto b = edge_merge(edge_merge(std::nullopt, edge(edge_state::normal, 6), 100), edge(edge_state::archived, 5, false), 900);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.position, 6);
    EXPECT_EQ(a.state, edge_state::archived);
}

// The heart of the write path: applying a journal's ops in any order, with any repetitions,
// gives the rows and counts of applying them once in order.
RC_GTEST_PROP(edge_rules, fold_converges_under_reordering_and_duplication, ()) {
    const auto ops = *rc::gen::container<std::vector<op>>(test::gen_edge_op());
    const auto shuffled = *test::gen_shuffled_with_duplicates(ops);
    const auto expected = test::edge_model::of(ops);
    const auto actual = test::edge_model::of(shuffled);
    RC_ASSERT(expected.rows == actual.rows);
    RC_ASSERT(expected.counts == actual.counts);
}

RC_GTEST_PROP(edge_rules, counts_equal_rows_by_state, ()) {
    const auto ops = *rc::gen::container<std::vector<op>>(test::gen_edge_op());
    const auto m = test::edge_model::of(ops);
    std::map<test::count_key, std::int64_t> recount;
    for (const auto& [k, row] : m.rows) {
        const auto& [g, node, dir, other] = k;
        ++recount[{g, node, dir, static_cast<int>(row.state)}];
    }
    RC_ASSERT(recount == m.counts);
}

}  // namespace
}  // namespace cairn::core
