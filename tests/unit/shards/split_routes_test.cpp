#include "shards/split_routes.hpp"

#include <gtest/gtest.h>

namespace cairn::shards {
namespace {

// A stored split of `shard` of `base`, as map_store writes it.
stored_map split_of(const core::shard_map& base, std::uint32_t version, std::uint32_t shard, split_state state) {
    stored_map m;
    m.version = version;
    m.map = base.split(shard).value();
    m.split_shard = shard;
    m.new_shard = base.size();
    m.new_address = "127.0.0.1:3306";
    m.state = state;
    return m;
}

TEST(split_routes, without_versions_the_config_map_is_version_1) {
    auto t = route_table_for({}, 2, std::nullopt, std::nullopt);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t.value().version(), 1u);
    EXPECT_EQ(t.value().map(), core::shard_map::equal_ranges(2));
    EXPECT_FALSE(t.value().split().has_value());
}

TEST(split_routes, planned_and_failed_splits_route_nothing) {
    const auto base = core::shard_map::equal_ranges(2);
    for (const auto s : {split_state::planned, split_state::failed}) {
        auto t = route_table_for({split_of(base, 2, 0, s)}, 2, std::nullopt, std::nullopt);
        ASSERT_TRUE(t.has_value());
        EXPECT_EQ(t.value().version(), 1u);
        EXPECT_FALSE(t.value().split().has_value());
    }
}

TEST(split_routes, each_state_of_a_running_split_gives_its_table) {
    const auto base = core::shard_map::equal_ranges(2);
    // Adopting needs this gateway's adoption first.
    EXPECT_EQ(route_table_for({split_of(base, 2, 1, split_state::adopting)}, 2, std::nullopt, std::nullopt).error(),
              core::errc::conflict);
    struct want {
        split_state state;
        bool held, moved;
    };
    for (const auto& w : {want{split_state::adopting, true, false}, want{split_state::copying, true, false},
                          want{split_state::catching_up, false, false}, want{split_state::verifying, false, false},
                          want{split_state::switched, false, true}}) {
        auto t = route_table_for({split_of(base, 2, 1, w.state)}, 2, 40, std::nullopt);
        ASSERT_TRUE(t.has_value()) << split_state_name(w.state);
        const auto& sp = t.value().split();
        ASSERT_TRUE(sp.has_value());
        EXPECT_EQ(t.value().version(), 2u);
        EXPECT_EQ(t.value().map(), base);
        EXPECT_EQ(sp->from, 1u);
        EXPECT_EQ(sp->adoption_seq, 40u);
        EXPECT_EQ(sp->new_shard_held, w.held) << split_state_name(w.state);
        EXPECT_EQ(sp->reads_moved, w.moved) << split_state_name(w.state);
        EXPECT_EQ(sp->cut_over_seq, 0u);
    }
    // Done: this gateway cuts over (never before its adoption).
    EXPECT_EQ(route_table_for({split_of(base, 2, 1, split_state::done)}, 2, 40, std::nullopt).error(), core::errc::conflict);
    auto done = route_table_for({split_of(base, 2, 1, split_state::done)}, 2, 40, 90);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done.value().split()->cut_over_seq, 90u);
    EXPECT_EQ(route_table_for({split_of(base, 2, 1, split_state::done)}, 2, 40, 7).value().split()->cut_over_seq, 40u);
}

TEST(split_routes, an_adoption_not_yet_durable_holds_every_shard_and_keeps_reads_on_the_old_owner) {
    const auto base = core::shard_map::equal_ranges(2);
    // In adopting (a gateway adopting on time) and in switched (one adopting late): the same table.
    for (const auto s : {split_state::adopting, split_state::switched, split_state::done}) {
        auto t = pending_adoption_table({split_of(base, 2, 1, s)}, 2, 17);
        ASSERT_TRUE(t.has_value()) << split_state_name(s);
        const auto& sp = t.value().split();
        ASSERT_TRUE(sp.has_value());
        EXPECT_EQ(t.value().version(), 2u);
        EXPECT_EQ(sp->adoption_seq, 17u);
        EXPECT_TRUE(sp->adoption_pending);
        EXPECT_TRUE(sp->new_shard_held);
        EXPECT_FALSE(sp->reads_moved) << split_state_name(s);
        EXPECT_EQ(sp->cut_over_seq, 0u);
        for (core::shard_index shard = 0; shard < 3; ++shard) EXPECT_FALSE(t.value().may_apply(shard, 17));
        EXPECT_TRUE(t.value().may_apply(0, 16));
    }
    // No active split: nothing to adopt.
    EXPECT_EQ(pending_adoption_table({}, 2, 17).error(), core::errc::shard_rejected);
    EXPECT_EQ(pending_adoption_table({split_of(base, 2, 1, split_state::failed)}, 2, 17).error(), core::errc::shard_rejected);
}

TEST(split_routes, a_cleaned_split_is_the_map_in_force_for_the_next) {
    const auto base = core::shard_map::equal_ranges(2);
    const auto v2 = split_of(base, 2, 0, split_state::retired);
    auto cleaning = route_table_for({split_of(base, 2, 0, split_state::cleaning)}, 2, std::nullopt, std::nullopt);
    ASSERT_TRUE(cleaning.has_value());
    EXPECT_EQ(cleaning.value().version(), 2u);
    EXPECT_EQ(cleaning.value().map(), v2.map);
    EXPECT_FALSE(cleaning.value().split().has_value());
    // A failed third version, then a fourth splitting shard 2 (the first split's new shard) of v2's map.
    const auto failed = split_of(v2.map, 3, 1, split_state::failed);
    const auto v4 = split_of(v2.map, 4, 2, split_state::copying);
    auto t = route_table_for({v2, failed, v4}, 2, 11, std::nullopt);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t.value().map(), v2.map);
    EXPECT_EQ(t.value().next_map(), v4.map);
    EXPECT_EQ(t.value().split()->from, 2u);
    std::uint32_t version = 0;
    EXPECT_EQ(map_in_force({v2, failed, v4}, 2, &version), v2.map);
    EXPECT_EQ(version, 2u);
}

TEST(split_routes, versions_that_do_not_fit_together_are_refused) {
    const auto base = core::shard_map::equal_ranges(2);
    auto wrong_new_shard = split_of(base, 2, 0, split_state::copying);
    wrong_new_shard.new_shard = 3;
    EXPECT_EQ(route_table_for({wrong_new_shard}, 2, 5, std::nullopt).error(), core::errc::shard_rejected);
    // A split stored against another map in force (the config names three shards, the split two).
    EXPECT_EQ(route_table_for({split_of(base, 2, 0, split_state::copying)}, 3, 5, std::nullopt).error(),
              core::errc::shard_rejected);
}

}  // namespace
}  // namespace cairn::shards
