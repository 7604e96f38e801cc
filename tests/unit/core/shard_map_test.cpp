#include "core/shard_map.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

TEST(shard_map, hash_is_stable) {
    // Routing must never change between releases: these values (computed independently with
    // a Python fmix64) are part of the data layout.
    EXPECT_EQ(hash_id(0), 0u);
    EXPECT_EQ(hash_id(1), 0xb456bcfc34c2cb2cULL);
    EXPECT_EQ(hash_id(12345), 0x17d2abfbf90baef9ULL);
}

TEST(shard_map, equal_ranges_cover_the_hash_space) {
    auto m = shard_map::equal_ranges(4);
    EXPECT_EQ(m.shard_of_hash(0), 0u);
    EXPECT_EQ(m.shard_of_hash(UINT64_MAX), 3u);
    EXPECT_EQ(m.shard_of_hash(UINT64_MAX / 4), 0u);
    EXPECT_EQ(m.shard_of_hash(UINT64_MAX / 4 + 1), 1u);
}

TEST(shard_map, explicit_ranges_are_validated) {
    EXPECT_FALSE(shard_map::from_range_starts({}).has_value());
    EXPECT_FALSE(shard_map::from_range_starts({5}).has_value());
    EXPECT_FALSE(shard_map::from_range_starts({0, 10, 10}).has_value());
    auto m = shard_map::from_range_starts({0, 100});
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m.value().shard_of_hash(99), 0u);
    EXPECT_EQ(m.value().shard_of_hash(100), 1u);
}

RC_GTEST_PROP(shard_map, every_id_lands_on_a_shard_and_spreads, (std::uint8_t n_raw)) {
    const std::uint32_t n = n_raw % 16 + 1;
    auto m = shard_map::equal_ranges(n);
    std::vector<int> hits(n);
    for (std::int64_t id = 0; id < 4000; ++id) {
        const auto s = m.shard_of_id(id);
        RC_ASSERT(s < n);
        ++hits[s];
    }
    for (int h : hits) RC_ASSERT(h > 4000 / static_cast<int>(n) / 2);  // no shard starves
}


TEST(shard_map, a_split_gives_the_upper_half_to_a_new_shard) {
    const auto m = shard_map::equal_ranges(2);
    const auto r0 = m.range_of(0);
    EXPECT_EQ(r0.first, 0u);
    EXPECT_EQ(r0.last, UINT64_MAX / 2);
    auto s = m.split(0);
    ASSERT_TRUE(s.has_value());
    const auto& m3 = s.value();
    EXPECT_EQ(m3.size(), 3u);
    const std::uint64_t upper = UINT64_MAX / 4 + 1;  // first + (last - first) / 2 + 1
    EXPECT_EQ(m3.range_of(0), (hash_range{0, upper - 1}));
    EXPECT_EQ(m3.range_of(2), (hash_range{upper, UINT64_MAX / 2}));
    EXPECT_EQ(m3.range_of(1), m.range_of(1));
    EXPECT_EQ(m3.shard_of_hash(upper - 1), 0u);
    EXPECT_EQ(m3.shard_of_hash(upper), 2u);
    EXPECT_EQ(m3.shard_of_hash(UINT64_MAX / 2), 2u);
    EXPECT_EQ(m3.shard_of_hash(UINT64_MAX / 2 + 1), 1u);
    EXPECT_EQ(m3.to_text(), "0:0 " + std::to_string(upper) + ":2 " + std::to_string(UINT64_MAX / 2 + 1) + ":1");
}

TEST(shard_map, a_split_is_refused_when_it_cannot_be_made) {
    const auto m = shard_map::equal_ranges(2);
    EXPECT_FALSE(m.split(2).has_value());  // no such shard
    auto tiny = shard_map::from_range_starts({0, 5, 6});
    ASSERT_TRUE(tiny.has_value());
    EXPECT_FALSE(tiny.value().split(1).has_value());  // one hash: 5
    EXPECT_TRUE(tiny.value().split(0).has_value());   // 0..4
    EXPECT_FALSE(shard_map::equal_ranges(shard_map::shards_max).split(0).has_value());
}

TEST(shard_map, text_is_parsed_strictly) {
    const auto m = shard_map::equal_ranges(3).split(1).value();
    auto back = shard_map::parse(m.to_text());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), m);
    EXPECT_EQ(shard_map::parse("0:0").value(), shard_map::equal_ranges(1));
    for (const char* bad : {"", " ", "0", "0:", ":0", "0:0 ", " 0:0", "0:0  5:1", "0:1", "1:0", "0:0 5:0",
                            "0:0 5:2", "00:0", "0:00", "0:0 05:1", "-0:0", "+0:0", "0:0 5:1 3:2", "0:0,5:1",
                            "0:0 18446744073709551616:1", "0:4294967296", "0:0 5:1 5:2"}) {
        EXPECT_FALSE(shard_map::parse(bad).has_value()) << '"' << bad << '"';
    }
    EXPECT_TRUE(shard_map::parse("0:1 18446744073709551615:0").has_value());
}

TEST(shard_map, ranges_must_name_every_shard_once) {
    EXPECT_FALSE(shard_map::from_ranges({0, 10}, {0}).has_value());
    EXPECT_FALSE(shard_map::from_ranges({0, 10}, {1, 1}).has_value());
    EXPECT_FALSE(shard_map::from_ranges({0, 10}, {0, 2}).has_value());
    auto m = shard_map::from_ranges({0, 10}, {1, 0});
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m.value().shard_of_hash(9), 1u);
    EXPECT_EQ(m.value().shard_of_hash(10), 0u);
    EXPECT_EQ(m.value().range_of(0), (hash_range{10, UINT64_MAX}));
}

// Any sequence of splits: every hash keeps its shard except the upper half of the split shard's
// range, which goes to the new shard; each shard owns the one range that contains exactly the hashes
// routed to it; the text form reads back as the same map.
RC_GTEST_PROP(shard_map, splits_move_only_the_upper_half_of_one_shard, ()) {
    auto m = shard_map::equal_ranges(*rc::gen::inRange<std::uint32_t>(1, 9));
    const auto splits = *rc::gen::inRange<int>(1, 12);
    for (int n = 0; n < splits; ++n) {
        const auto s = *rc::gen::inRange<shard_index>(0, m.size());
        const auto before = m.range_of(s);
        auto next = m.split(s);
        RC_ASSERT(next.has_value());
        const auto& after = next.value();
        RC_ASSERT(after.size() == m.size() + 1);
        const auto kept = after.range_of(s);
        const auto moved = after.range_of(m.size());
        RC_ASSERT(kept.first == before.first);
        RC_ASSERT(moved.last == before.last);
        RC_ASSERT(moved.first == kept.last + 1);
        RC_ASSERT(kept.last - kept.first <= moved.last - moved.first + 1);  // halves differ by at most one hash
        for (int probe = 0; probe < 200; ++probe) {
            const std::uint64_t h = probe % 4 == 0 ? *rc::gen::inRange<std::uint64_t>(before.first, before.last)
                                                   : *rc::gen::arbitrary<std::uint64_t>();
            const auto expected = moved.contains(h) ? m.size() : m.shard_of_hash(h);
            RC_ASSERT(after.shard_of_hash(h) == expected);
            RC_ASSERT(after.range_of(after.shard_of_hash(h)).contains(h));
        }
        for (const auto edge : {kept.first, kept.last, moved.first, moved.last}) {
            RC_ASSERT(after.shard_of_hash(edge) == (moved.contains(edge) ? m.size() : s));
        }
        auto back = shard_map::parse(after.to_text());
        RC_ASSERT(back.has_value());
        RC_ASSERT(back.value() == after);
        m = after;
    }
}
}  // namespace
}  // namespace cairn::core
