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

}  // namespace
}  // namespace cairn::core
