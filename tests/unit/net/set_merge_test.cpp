#include <utility>

#include "net/set_merge.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

namespace cairn::net {
namespace {

namespace asio = boost::asio;

// A stream over an in-memory sorted set, counting how many ids it hands out.
id_fetch fetch_from(const std::set<std::int64_t>& ids) {
    return [&ids](std::optional<std::int64_t> after, std::size_t n) -> asio::awaitable<core::result<std::vector<std::int64_t>>> {
        std::vector<std::int64_t> out;
        auto it = after ? ids.upper_bound(*after) : ids.begin();
        for (; it != ids.end() && out.size() < n; ++it) out.push_back(*it);
        co_return out;
    };
}

template <class T>
T run(asio::awaitable<T> a) {
    asio::io_context io;
    std::optional<T> out;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { out.emplace(co_await std::move(a)); },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run();
    return std::move(*out);
}

// The leaves read `sets` by reference: they must outlive the expression.
set_expr flat(set_op op, const std::vector<std::set<std::int64_t>>& sets) {
    std::vector<set_expr> leaves;
    for (const auto& s : sets) leaves.push_back(set_expr::leaf(fetch_from(s)));
    return set_expr::of(op, std::move(leaves));
}

core::result<set_page> merge_once(set_op op, const std::vector<std::set<std::int64_t>>& sets,
                                  std::optional<std::int64_t> after, std::size_t limit, std::uint64_t budget) {
    const auto e = flat(op, sets);
    return run(async_merge_sets(e, after, limit, budget));
}

std::set<std::int64_t> expected(set_op op, const std::vector<std::set<std::int64_t>>& sets) {
    std::set<std::int64_t> acc = sets[0];
    for (std::size_t i = 1; i < sets.size(); ++i) {
        std::set<std::int64_t> next;
        auto out = std::inserter(next, next.begin());
        if (op == set_op::intersect) std::set_intersection(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        if (op == set_op::unite) std::set_union(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        if (op == set_op::subtract) std::set_difference(acc.begin(), acc.end(), sets[i].begin(), sets[i].end(), out);
        acc = std::move(next);
    }
    return acc;
}

RC_GTEST_PROP(set_merge, walking_every_page_equals_the_set_operation, ()) {
    const auto op = *rc::gen::element(set_op::intersect, set_op::unite, set_op::subtract);
    const auto n = *rc::gen::inRange<std::size_t>(1, 5);
    // Ids from a small range so that the sets overlap; sizes around a chunk (64) and beyond.
    std::vector<std::set<std::int64_t>> sets;
    for (std::size_t i = 0; i < n; ++i) {
        const auto size = *rc::gen::inRange<std::size_t>(0, 300);
        sets.push_back(*rc::gen::container<std::set<std::int64_t>>(size, rc::gen::inRange<std::int64_t>(0, 400)));
    }
    const auto limit = *rc::gen::inRange<std::size_t>(1, 120);
    std::vector<std::int64_t> walked;
    std::optional<std::int64_t> after;
    for (int pages = 0; pages < 2000; ++pages) {
        auto page = merge_once(op, sets, after, limit, 1'000'000);
        RC_ASSERT(page.has_value());
        RC_ASSERT(page.value().ids.size() <= limit);
        // Never silently short: a page that is not the last is full.
        if (page.value().more) RC_ASSERT(page.value().ids.size() == limit);
        walked.insert(walked.end(), page.value().ids.begin(), page.value().ids.end());
        if (!page.value().more) break;
        after = page.value().ids.back();
    }
    const auto want = expected(op, sets);
    RC_ASSERT(walked == std::vector<std::int64_t>(want.begin(), want.end()));
}

// A random expression over the sets, depth at most `depth`, and the set it denotes.
struct random_expr {
    set_expr expr;
    std::set<std::int64_t> want;
    std::string text;  // for the counterexample
};

random_expr gen_expr(const std::vector<std::set<std::int64_t>>& sets, int depth) {
    const bool leaf = depth == 0 || *rc::gen::inRange(0, 3) == 0;
    if (leaf) {
        const auto i = *rc::gen::inRange<std::size_t>(0, sets.size());
        return {set_expr::leaf(fetch_from(sets[i])), sets[i], std::to_string(i)};
    }
    const auto op = *rc::gen::element(set_op::intersect, set_op::unite, set_op::subtract);
    const auto n = *rc::gen::inRange<std::size_t>(op == set_op::subtract ? 2 : 1, 4);
    std::vector<set_expr> operands;
    std::vector<std::set<std::int64_t>> wants;
    std::string text = std::string(set_op_name(op)) + "(";
    for (std::size_t i = 0; i < n; ++i) {
        auto sub = gen_expr(sets, depth - 1);
        operands.push_back(std::move(sub.expr));
        wants.push_back(std::move(sub.want));
        text += (i ? "," : "") + sub.text;
    }
    return {set_expr::of(op, std::move(operands)), expected(op, wants), text + ")"};
}

RC_GTEST_PROP(set_merge, nested_expressions_page_and_count_as_the_sets_they_denote, ()) {
    std::vector<std::set<std::int64_t>> sets;
    for (int i = 0; i < 4; ++i) {
        const auto size = *rc::gen::inRange<std::size_t>(0, 200);
        sets.push_back(*rc::gen::container<std::set<std::int64_t>>(size, rc::gen::inRange<std::int64_t>(0, 300)));
    }
    const auto r = gen_expr(sets, 3);
    RC_LOG() << r.text << "\n";
    for (const auto& set : sets) {
        for (auto id : set) RC_LOG() << id << " ";
        RC_LOG() << "|\n";
    }
    const auto limit = *rc::gen::inRange<std::size_t>(1, 90);
    std::vector<std::int64_t> walked;
    std::optional<std::int64_t> after;
    for (int pages = 0; pages < 2000; ++pages) {
        auto page = run(async_merge_sets(r.expr, after, limit, 10'000'000));
        RC_ASSERT(page.has_value());
        if (page.value().more) RC_ASSERT(page.value().ids.size() == limit);
        walked.insert(walked.end(), page.value().ids.begin(), page.value().ids.end());
        if (!page.value().more) break;
        after = page.value().ids.back();
    }
    RC_ASSERT(walked == std::vector<std::int64_t>(r.want.begin(), r.want.end()));
    const auto counted = run(async_count_set(r.expr, 10'000'000));
    RC_ASSERT(counted.has_value());
    RC_ASSERT(counted.value().count == r.want.size());
}

TEST(set_merge, a_count_past_the_budget_is_an_error) {
    std::set<std::int64_t> many;
    for (std::int64_t i = 0; i < 5'000; ++i) many.insert(i);
    const std::vector<std::set<std::int64_t>> sets{many};  // the leaves read these: they outlive the merge
    const auto e = flat(set_op::unite, sets);
    auto r = run(async_count_set(e, 4'000));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), core::errc::too_large);
    auto ok = run(async_count_set(e, 6'000));
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok.value().count, 5'000u);
}

TEST(set_merge, a_scan_past_the_budget_is_an_error_not_a_short_page) {
    std::set<std::int64_t> evens;
    std::set<std::int64_t> odds;
    for (std::int64_t i = 0; i < 10'000; ++i) (i % 2 ? odds : evens).insert(i);
    auto r = merge_once(set_op::intersect, {evens, odds}, std::nullopt, 10, 500);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), core::errc::too_large);
}

TEST(set_merge, an_intersection_with_a_small_list_skips_ahead_instead_of_scanning) {
    std::set<std::int64_t> big;
    for (std::int64_t i = 0; i < 100'000; ++i) big.insert(i);
    std::set<std::int64_t> small{5, 50'000, 99'999};
    auto r = merge_once(set_op::intersect, {big, small}, std::nullopt, 10, 2'000);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r.value().ids, (std::vector<std::int64_t>{5, 50'000, 99'999}));
    EXPECT_LT(r.value().scanned, 1'000u);
}

}  // namespace
}  // namespace cairn::net
