// Retention: only ops that every shard applied and that are older than the retention window
// are deleted (a pass runs before the writer's next group once the wall clock moved a second),
// and seqs never restart after everything was deleted.
#include "journal/journal.hpp"

#include "journal_test_util.hpp"

#include <gtest/gtest.h>

namespace cairn::journal {
namespace {

using test::append_sync;
using test::make_ops;

bool present(const journal& j, std::uint64_t seq) { return static_cast<bool>(j.read_op_bytes(seq)); }

TEST(journal_retention, deletes_only_applied_and_old_ops) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.shard_count = 2;
    o.retention = std::chrono::seconds(60);
    auto j = std::move(journal::open(o, clock).value());

    ASSERT_TRUE(append_sync(*j, make_ops(10, clock)));  // seqs 1..10 at t0
    wall.advance(30'000);
    ASSERT_TRUE(append_sync(*j, make_ops(10, clock)));  // seqs 11..20 at t0+30s
    EXPECT_EQ(j->read_op_time_ms(11).value(), wall.now());
    ASSERT_TRUE(test::advance_cursor(*j, 0, 15));
    ASSERT_TRUE(test::advance_cursor(*j, 1, 5));

    // t0+61s: 1..10 are old, but shard 1 applied only 1..5.
    wall.advance(31'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));  // seq 21; the writer's pass runs first
    for (std::uint64_t s = 1; s <= 5; ++s) EXPECT_FALSE(present(*j, s)) << s;
    for (std::uint64_t s = 6; s <= 21; ++s) EXPECT_TRUE(present(*j, s)) << s;
    EXPECT_EQ(j->ops_retired().value(), 5u);
    EXPECT_EQ(j->get_stats().ops_count, 16u);

    // Shard 1 catches up to 15: 6..10 are old and go; 11..15 are applied but young.
    ASSERT_TRUE(test::advance_cursor(*j, 1, 15));
    wall.advance(1'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    for (std::uint64_t s = 1; s <= 10; ++s) EXPECT_FALSE(present(*j, s)) << s;
    for (std::uint64_t s = 11; s <= 22; ++s) EXPECT_TRUE(present(*j, s)) << s;

    // t0+91s: 11..20 are old; 11..15 are applied by both shards, 16..20 by neither.
    wall.advance(29'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    for (std::uint64_t s = 11; s <= 15; ++s) EXPECT_FALSE(present(*j, s)) << s;
    for (std::uint64_t s = 16; s <= 23; ++s) EXPECT_TRUE(present(*j, s)) << s;
    EXPECT_EQ(j->ops_retired().value(), 15u);
    auto first = j->read_ops(0, 1);
    ASSERT_TRUE(first);
    EXPECT_EQ(first.value().front().first, 16u);
}

TEST(journal_retention, runs_at_most_once_per_second) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(1);
    auto j = std::move(journal::open(o, clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    ASSERT_TRUE(test::advance_cursor(*j, 0, 3));
    // Old enough, but the last pass (before the cursor moved) was less than a second ago.
    wall.advance(999);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    EXPECT_TRUE(present(*j, 1));
    wall.advance(1);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    EXPECT_FALSE(present(*j, 1));
    EXPECT_FALSE(present(*j, 3));
    EXPECT_TRUE(present(*j, 4));
}

TEST(journal_retention, expired_idempotency_keys_are_deleted) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(10);
    auto j = std::move(journal::open(o, clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock), "a"));
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock), "b"));
    EXPECT_EQ(j->get_stats().idem_count, 2u);
    wall.advance(10'000);
    // The pass runs before this group, so "a" is gone when it is looked up: a fresh append.
    auto r = append_sync(*j, make_ops(1, clock), "a");
    ASSERT_TRUE(r);
    EXPECT_FALSE(r.value().deduplicated);
    EXPECT_EQ(r.value().first_seq, 3u);
    EXPECT_EQ(j->get_stats().idem_count, 1u);  // "b" was deleted, "a" deleted and written again
    EXPECT_TRUE(append_sync(*j, make_ops(1, clock), "a").value().deduplicated);
    EXPECT_FALSE(append_sync(*j, make_ops(1, clock), "b").value().deduplicated);
    // No cursor moved: every op is still there.
    for (std::uint64_t s = 1; s <= 4; ++s) EXPECT_TRUE(present(*j, s));
}

TEST(journal_retention, seqs_never_restart_after_everything_was_deleted) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(1);
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(7, clock)));
        ASSERT_TRUE(test::advance_cursor(*j, 0, 7));
        wall.advance(5'000);
        ASSERT_TRUE(test::advance_cursor(*j, 0, 7));  // wakes the writer: the pass deletes 1..7
        EXPECT_EQ(j->get_stats().ops_count, 0u);
        EXPECT_EQ(j->ops_retired().value(), 7u);
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->last_seq(), 7u);
    EXPECT_EQ(j->cursor(0), 7u);
    auto r = append_sync(*j, make_ops(1, clock));
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value().first_seq, 8u);
}

TEST(journal_retention, a_clock_that_goes_back_deletes_nothing_young) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(1);
    auto j = std::move(journal::open(o, clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    ASSERT_TRUE(test::advance_cursor(*j, 0, 3));
    wall.ms->store(wall.now() - 100'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    EXPECT_TRUE(present(*j, 1));
    EXPECT_EQ(j->ops_retired().value(), 0u);
}

}  // namespace
}  // namespace cairn::journal
