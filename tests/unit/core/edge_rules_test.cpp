#include "core/edge_rules.hpp"
#include "core/hlc.hpp"
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

// Whole-node ops (issues 4, 17).
TEST(edge_rules, node_registers_keep_the_latest_action_by_ts_then_rank) {
    node_registers r;
    r = node_merge(r, node_action::archive, 500);
    r = node_merge(r, node_action::unarchive, 400);  // older: ignored
    EXPECT_EQ(r.action, node_action::archive);
    EXPECT_EQ(r.action_ts, 500u);
    r = node_merge(r, node_action::unarchive, 500);  // same ts: archive outranks restore
    EXPECT_EQ(r.action, node_action::archive);
    r = node_merge(r, node_action::negate, 500);  // and negate
    EXPECT_EQ(r.action, node_action::archive);
    r = node_merge(r, node_action::unarchive, 600);
    EXPECT_EQ(r.action, node_action::unarchive);
    r = node_merge(r, node_action::remove, 300);  // older than the restore: only removed_ts moves
    r = node_merge(r, node_action::remove, 200);
    EXPECT_EQ(r.removed_ts, 300u);
    EXPECT_EQ(r.action_ts, 600u);
    EXPECT_EQ(r.action, node_action::unarchive);
    r = node_merge(r, node_action::remove, 600);  // a tie: remove outranks everything
    EXPECT_EQ(r.action, node_action::remove);
    EXPECT_EQ(r.removed_ts, 600u);
}

TEST(edge_rules, effective_state_of_an_edge_under_node_ops) {
    const edge_row normal{edge_state::normal, 1, 100, 100, true};
    const edge_row negative{edge_state::negative, 1, 100, 100, true};
    const edge_row archived{edge_state::archived, 1, 100, 100, true};
    const node_registers none;
    const node_registers on_ice{0, 200, node_action::archive};
    const node_registers negated{0, 200, node_action::negate};
    const node_registers restored{0, 200, node_action::unarchive};
    const node_registers removed{200, 200, node_action::remove};
    const node_registers removed_then_restored{50, 60, node_action::unarchive};
    EXPECT_EQ(edge_effective_state(normal, none, none), edge_state::normal);
    EXPECT_EQ(edge_effective_state(normal, on_ice, none), edge_state::archived);
    EXPECT_EQ(edge_effective_state(normal, none, on_ice), edge_state::archived);
    EXPECT_EQ(edge_effective_state(normal, negated, none), edge_state::negative);
    EXPECT_EQ(edge_effective_state(archived, negated, none), edge_state::archived);  // the higher rank shows
    EXPECT_EQ(edge_effective_state(negative, on_ice, none), edge_state::archived);
    EXPECT_EQ(edge_effective_state(archived, restored, none), edge_state::archived);  // its own state: not hidden by a node
    EXPECT_EQ(edge_effective_state(negative, restored, none), edge_state::negative);
    EXPECT_EQ(edge_effective_state(normal, restored, on_ice), edge_state::archived);  // one end still on ice
    EXPECT_EQ(edge_effective_state(negative, removed, none), edge_state::removed);
    EXPECT_EQ(edge_effective_state(normal, removed, restored), edge_state::removed);
    // A remove destroys the edges older than it, whatever comes after; newer edges show again
    // once the node is restored.
    EXPECT_EQ(edge_effective_state(normal, removed_then_restored, none), edge_state::normal);
    const edge_row older{edge_state::normal, 1, 40, 40, true};
    EXPECT_EQ(edge_effective_state(older, removed_then_restored, none), edge_state::removed);
    // A node on ice covers the edges written to it later too.
    const edge_row newer{edge_state::normal, 1, 300, 300, true};
    EXPECT_EQ(edge_effective_state(newer, on_ice, none), edge_state::archived);
    EXPECT_EQ(edge_effective_state(newer, none, removed), edge_state::removed);
    EXPECT_EQ(edge_effective_state(newer, negated, none), edge_state::negative);
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
    r = node_merge(r, node_action::negate, 250);
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::negative, 250}));
    r = node_merge(r, node_action::archive, 300);
    EXPECT_EQ(node_status_of(r), (node_status{edge_state::archived, 300}));
    // Any order of the same actions gives the same status.
    node_registers q;
    for (const auto& [a, ts] : std::vector<std::pair<node_action, std::uint64_t>>{
             {node_action::archive, 300}, {node_action::negate, 250}, {node_action::remove, 200},
             {node_action::unarchive, 200}, {node_action::remove, 150}, {node_action::archive, 100}}) {
        q = node_merge(q, a, ts);
    }
    EXPECT_EQ(node_status_of(q), node_status_of(r));
    EXPECT_EQ(q, r);
}

TEST(node_scope, one_direction_covers_only_its_rows_in_the_model) {
    // 1 -> 2 and 2 -> 1; archiving 1's outgoing edges hides 1 -> 2 only (both of its rows).
    auto edge = [](std::int64_t s, std::int64_t d, std::uint64_t ms) {
        return op{0, hlc_make(1'700'000'000'000 + ms, 0, 1), edge_op{"follows", s, d, edge_state::normal, 1, true}};
    };
    auto m = test::edge_model::of({edge(1, 2, 1), edge(2, 1, 2),
                                   op{0, hlc_make(1'700'000'000'000 + 3, 0, 1),
                                      node_op{"follows", 1, node_action::archive, node_scope::forward}}});
    EXPECT_EQ((m.rows.at({"follows", 1, 0, 2}).state), edge_state::archived);
    EXPECT_EQ((m.rows.at({"follows", 2, 1, 1}).state), edge_state::archived);
    EXPECT_EQ((m.rows.at({"follows", 2, 0, 1}).state), edge_state::normal);
    EXPECT_EQ((m.rows.at({"follows", 1, 1, 2}).state), edge_state::normal);
    // An edge written to 1 after the archive, outgoing: hidden; incoming: not.
    m.apply(edge(1, 3, 4));
    m.apply(edge(3, 1, 5));
    EXPECT_EQ((m.rows.at({"follows", 1, 0, 3}).state), edge_state::archived);
    EXPECT_EQ((m.rows.at({"follows", 3, 0, 1}).state), edge_state::normal);
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
