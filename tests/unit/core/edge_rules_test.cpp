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

// Whole-node ops (issue 4).
TEST(edge_rules, node_registers_are_last_writer_wins) {
    node_registers r;
    r = node_merge(r, node_action::archive, 500);
    r = node_merge(r, node_action::unarchive, 400);  // older: ignored
    EXPECT_TRUE(r.archived);
    EXPECT_EQ(r.archive_ts, 500u);
    r = node_merge(r, node_action::unarchive, 500);  // same ts: archive wins
    EXPECT_TRUE(r.archived);
    r = node_merge(r, node_action::unarchive, 600);
    EXPECT_FALSE(r.archived);
    r = node_merge(r, node_action::remove, 300);
    r = node_merge(r, node_action::remove, 200);
    EXPECT_EQ(r.removed_ts, 300u);
    EXPECT_EQ(r.archive_ts, 600u);
}

TEST(edge_rules, effective_state_of_an_edge_under_node_ops) {
    const edge_row normal{edge_state::normal, 1, 100, 100, true};
    const edge_row negative{edge_state::negative, 1, 100, 100, true};
    const edge_row archived{edge_state::archived, 1, 100, 100, true};
    const node_registers none;
    const node_registers on_ice{0, 200, true};
    const node_registers thawed{0, 200, false};
    const node_registers removed{200, 0, false};
    const node_registers old_remove{50, 0, false};
    EXPECT_EQ(edge_effective_state(normal, none, none), edge_state::normal);
    EXPECT_EQ(edge_effective_state(normal, on_ice, none), edge_state::archived);
    EXPECT_EQ(edge_effective_state(normal, none, on_ice), edge_state::archived);
    EXPECT_EQ(edge_effective_state(negative, on_ice, none), edge_state::negative);  // untouched
    EXPECT_EQ(edge_effective_state(archived, thawed, none), edge_state::normal);
    EXPECT_EQ(edge_effective_state(negative, thawed, none), edge_state::negative);
    EXPECT_EQ(edge_effective_state(archived, thawed, on_ice), edge_state::archived);  // one endpoint still on ice
    EXPECT_EQ(edge_effective_state(negative, removed, none), edge_state::removed);
    EXPECT_EQ(edge_effective_state(normal, removed, thawed), edge_state::removed);
    EXPECT_EQ(edge_effective_state(normal, old_remove, none), edge_state::normal);  // an edge write newer than the node op wins
    const edge_row newer{edge_state::normal, 1, 300, 300, true};
    EXPECT_EQ(edge_effective_state(newer, on_ice, removed), edge_state::normal);
}

// Edge ops and node ops in any order, with any repetitions, give the same rows and counts.
RC_GTEST_PROP(edge_rules, node_ops_converge_under_reordering_and_duplication, ()) {
    const auto ops = *rc::gen::container<std::vector<op>>(test::gen_edge_or_node_op());
    const auto shuffled = *test::gen_shuffled_with_duplicates(ops);
    const auto expected = test::edge_model::of(ops);
    auto stepwise = test::edge_model{};
    for (const auto& o : shuffled) stepwise.apply(o);
    RC_ASSERT(expected.rows == stepwise.rows);
    RC_ASSERT(expected.counts == stepwise.counts);
}

}  // namespace
TEST(node_status, the_latest_node_action_decides_and_a_remove_wins_a_tie) {
    EXPECT_EQ(node_status_of({}), (node_status{edge_state::normal, 0}));
    node_registers r;
    r = node_merge(r, node_action::archive, 100);
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::archived, 100}));
    r = node_merge(r, node_action::unarchive, 200);
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::normal, 200}));
    r = node_merge(r, node_action::remove, 150);  // older than the unarchive
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::normal, 200}));
    r = node_merge(r, node_action::remove, 200);  // a tie: the remove
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::removed, 200}));
    r = node_merge(r, node_action::archive, 300);
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::archived, 300}));
    // Any order of the same actions gives the same status.
    node_registers q;
    for (const auto& [a, ts] : std::vector<std::pair<node_action, std::uint64_t>>{
             {node_action::archive, 300}, {node_action::remove, 200}, {node_action::unarchive, 200},
             {node_action::remove, 150}, {node_action::archive, 100}}) {
        q = node_merge(q, a, ts);
    }
    EXPECT_EQ(node_status_of(q), node_status_of(r));
}

TEST(edge_state_set, parses_names_in_any_order_and_prints_them_in_code_order) {
    const auto s = edge_state_set_from_names("negative,archived,negative");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->names(), "archived,negative");
    EXPECT_EQ(s->size(), 2u);
    EXPECT_TRUE(s->contains(edge_state::archived));
    EXPECT_FALSE(s->contains(edge_state::normal));
    EXPECT_EQ(edge_state_set().names(), "normal");
    EXPECT_EQ(edge_state_set(edge_state::removed).names(), "removed");
    for (const char* bad : {"", ",", "normal,", "normal,,archived", "Normal", "all"}) {
        EXPECT_FALSE(edge_state_set_from_names(bad).has_value()) << bad;
    }
}

}  // namespace cairn::core
