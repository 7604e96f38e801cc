#include "core/hlc.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <set>

namespace cairn::core {
namespace {

TEST(hlc, layout_round_trips) {
    const auto ts = hlc_make(1'700'000'000'000, 17, 5);
    EXPECT_EQ(hlc_ms(ts), 1'700'000'000'000u);
    EXPECT_EQ(hlc_logical(ts), 17u);
    EXPECT_EQ(hlc_node(ts), 5u);
}

TEST(hlc, strictly_increasing_when_wall_clock_stands_still) {
    std::uint64_t wall = 1'000;
    hlc clock(3, [&] { return wall; });
    std::uint64_t prev = 0;
    for (int i = 0; i < 10'000; ++i) {  // more than 4096: overflows the logical counter
        const auto ts = clock.now();
        ASSERT_GT(ts, prev);
        ASSERT_EQ(hlc_node(ts), 3u);
        prev = ts;
    }
    EXPECT_GT(hlc_ms(prev), 1'000u);  // borrowed milliseconds after the overflow
}

TEST(hlc, never_goes_back_when_wall_clock_does) {
    std::uint64_t wall = 5'000;
    hlc clock(1, [&] { return wall; });
    const auto a = clock.now();
    wall = 4'000;
    EXPECT_GT(clock.now(), a);
}

TEST(hlc, observe_moves_past_a_later_timestamp) {
    std::uint64_t wall = 5'000;
    hlc clock(1, [&] { return wall; });
    const auto peer = hlc_make(9'000, 3, 2);
    clock.observe(peer);
    EXPECT_GT(clock.now(), peer);
}

RC_GTEST_PROP(hlc, two_nodes_never_share_a_timestamp, (std::uint16_t a_steps, std::uint16_t b_steps)) {
    std::uint64_t wall = 77;
    hlc a(1, [&] { return wall; });
    hlc b(2, [&] { return wall; });
    std::set<std::uint64_t> seen;
    for (int i = 0; i < a_steps % 500; ++i) RC_ASSERT(seen.insert(a.now()).second);
    for (int i = 0; i < b_steps % 500; ++i) RC_ASSERT(seen.insert(b.now()).second);
}

}  // namespace
}  // namespace cairn::core
