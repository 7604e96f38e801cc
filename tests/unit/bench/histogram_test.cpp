#include "apps/bench/histogram.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace cairn::bench {
namespace {

TEST(histogram, empty_reports_zero) {
    histogram h;
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.percentile(50), 0u);
    EXPECT_EQ(h.max(), 0u);
    EXPECT_EQ(h.min(), 0u);
    EXPECT_EQ(h.mean(), 0.0);
}

TEST(histogram, small_values_are_exact) {
    histogram h;
    for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.percentile(50), 50u);
    EXPECT_EQ(h.percentile(99), 99u);
    EXPECT_EQ(h.percentile(100), 100u);
    EXPECT_EQ(h.percentile(0), 1u);
    EXPECT_EQ(h.min(), 1u);
    EXPECT_EQ(h.max(), 100u);
    EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(histogram, buckets_tile_the_range) {
    for (std::size_t i = 0; i + 1 < histogram::bucket_count; ++i) {
        ASSERT_EQ(histogram::highest_of(i) + 1, histogram::lowest_of(i + 1)) << i;
        ASSERT_EQ(histogram::index_of(histogram::lowest_of(i)), i);
        ASSERT_EQ(histogram::index_of(histogram::highest_of(i)), i);
    }
    EXPECT_EQ(histogram::index_of(~std::uint64_t{0}), histogram::bucket_count - 1);
}

TEST(histogram, merge_adds_counts_and_extremes) {
    histogram a, b;
    a.record(10);
    a.record(1000);
    b.record(5);
    b.record_n(1'000'000, 3);
    a.merge(b);
    EXPECT_EQ(a.count(), 6u);
    EXPECT_EQ(a.min(), 5u);
    EXPECT_EQ(a.max(), 1'000'000u);
    EXPECT_EQ(a.percentile(100), 1'000'000u);
    EXPECT_EQ(a.percentile(10), 5u);   // rank 1 of 6
    EXPECT_EQ(a.percentile(20), 10u);  // rank 2 of 6
    EXPECT_GE(a.percentile(50), 1000u);  // the top of 1000's bucket: at most 1/128 above
    EXPECT_LE(a.percentile(50), 1000u + 1000u / 128);
}

TEST(histogram, percentile_never_exceeds_max) {
    histogram h;
    h.record(1'234'567);
    EXPECT_EQ(h.percentile(50), 1'234'567u);
    EXPECT_EQ(h.percentile(99.9), 1'234'567u);
}

RC_GTEST_PROP(histogram, percentiles_are_within_one_bucket_of_the_truth, (std::vector<std::uint32_t> raw)) {
    RC_PRE(!raw.empty());
    histogram h;
    std::vector<std::uint64_t> values;
    for (auto v : raw) {
        const std::uint64_t x = std::uint64_t{v} * 37;  // spread over several powers of two
        values.push_back(x);
        h.record(x);
    }
    std::sort(values.begin(), values.end());
    std::uint64_t last = 0;
    for (double p : {0.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
        auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
        rank = std::clamp<std::size_t>(rank, 1, values.size());
        const std::uint64_t truth = values[rank - 1];
        const std::uint64_t got = h.percentile(p);
        RC_ASSERT(got >= truth);
        RC_ASSERT(static_cast<double>(got - truth) <= static_cast<double>(truth) / 128.0 + 1.0);
        RC_ASSERT(got >= last);  // ordered
        last = got;
    }
    RC_ASSERT(h.percentile(100) == values.back());
}

}  // namespace
}  // namespace cairn::bench
