// The sliding minute behind a shard's error rate in `cairn status`.
#include "core/minute_window.hpp"

#include <gtest/gtest.h>

namespace cairn::core {
namespace {

constexpr std::uint64_t t0 = 1'795'000'000'000;  // a bucket boundary (a multiple of 10 s)

TEST(minute_window, counts_what_happened_in_the_last_minute_and_forgets_older_buckets) {
    minute_window w;
    EXPECT_EQ(w.last_minute(t0), (minute_window::totals{0, 0}));
    w.add(t0, 90, 10);
    w.add(t0 + 9'999, 0, 5);        // the same bucket
    w.add(t0 + 25'000, 100, 0);     // a later one
    EXPECT_EQ(w.last_minute(t0 + 30'000), (minute_window::totals{190, 15}));
    EXPECT_DOUBLE_EQ(w.last_minute(t0 + 30'000).failed_fraction(), 15.0 / 205.0);
    // 60 s on, the first bucket is out of the window; the one of t0 + 25 s is still in.
    EXPECT_EQ(w.last_minute(t0 + 60'000), (minute_window::totals{100, 0}));
    EXPECT_EQ(w.last_minute(t0 + 90'000), (minute_window::totals{0, 0}));
    // A bucket reused a minute later starts from zero.
    w.add(t0 + 60'000, 1, 1);
    EXPECT_EQ(w.last_minute(t0 + 60'000), (minute_window::totals{101, 1}));
    EXPECT_DOUBLE_EQ(minute_window::totals{}.failed_fraction(), 0.0);
}

TEST(minute_window, an_event_stamped_late_lands_in_the_newest_bucket_of_its_slot) {
    minute_window w;
    w.add(t0 + 60'000, 3, 0);
    w.add(t0, 0, 7);  // the clock went back a minute: same slot, counted into the newer bucket
    EXPECT_EQ(w.last_minute(t0 + 60'000), (minute_window::totals{3, 7}));
}

}  // namespace
}  // namespace cairn::core
