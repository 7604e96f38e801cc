// The shard map's versions on shard 0 (shards/map_store.hpp) against a real MariaDB: a split is
// proposed once, whoever races for it; its state moves only forward, from the state the mover read;
// a failed split frees the next proposal, which splits the map in force; a gateway's first adoption
// seq holds; an edited row is refused with its version named.
#include <utility>

#include "shards/map_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "tests/support/test_shards.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

namespace cairn::test {
namespace {

namespace asio = boost::asio;
using shards::split_state;

constexpr const char* map_store_db = "cairn_map_store";

TEST(map_store, a_split_moves_forward_or_fails_until_reads_have_moved) {
    using enum split_state;
    EXPECT_TRUE(shards::split_may_move(planned, adopting));
    EXPECT_TRUE(shards::split_may_move(verifying, switched));
    EXPECT_TRUE(shards::split_may_move(cleaning, retired));
    EXPECT_FALSE(shards::split_may_move(planned, copying));   // no skipping
    EXPECT_FALSE(shards::split_may_move(copying, adopting));  // no going back
    EXPECT_TRUE(shards::split_may_move(planned, failed));
    EXPECT_TRUE(shards::split_may_move(verifying, failed));
    EXPECT_FALSE(shards::split_may_move(switched, failed));  // reads moved: only forward
    EXPECT_FALSE(shards::split_may_move(retired, failed));
    EXPECT_FALSE(shards::split_may_move(failed, planned));
    for (int s = 0; s <= static_cast<int>(failed); ++s) {
        const auto state = static_cast<split_state>(s);
        EXPECT_EQ(shards::split_state_from_name(shards::split_state_name(state)), state);
    }
    EXPECT_FALSE(shards::split_state_from_name("Planned").has_value());
}

TEST(map_store, one_proposal_wins_and_states_move_from_what_the_mover_read) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_database(map_store_db);
    asio::io_context ioc;
    shards::mariadb_conn a(ioc.get_executor(), params_for(test_shards()[0], map_store_db));
    shards::mariadb_conn b(ioc.get_executor(), params_for(test_shards()[0], map_store_db));
    ASSERT_TRUE(run_on(ioc, a.async_connect()));
    ASSERT_TRUE(run_on(ioc, b.async_connect()));

    auto none = run_on(ioc, shards::async_read_maps(a));
    ASSERT_TRUE(none.has_value());  // no tables yet: never split
    EXPECT_TRUE(none.value().empty());
    EXPECT_EQ(run_on(ioc, shards::async_propose_split(a, 2, 2, "127.0.0.1:1", 1)).error(), core::errc::bad_request);  // no shard 2

    // Two proposers at once on two connections: one version between them.
    core::result<shards::stored_map> first = core::errc::timeout, second = core::errc::timeout;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { first = co_await shards::async_propose_split(a, 2, 0, "10.0.0.3:3306", 100); },
                   asio::detached);
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> { second = co_await shards::async_propose_split(b, 2, 1, "10.0.0.4:3306", 100); },
                   asio::detached);
    ioc.restart();
    ioc.run();
    ASSERT_NE(first.has_value(), second.has_value()) << "exactly one proposal wins";
    const auto& won = first ? first.value() : second.value();
    EXPECT_EQ((first ? second : first).error(), core::errc::conflict);
    EXPECT_EQ(won.version, 2u);
    EXPECT_EQ(won.new_shard, 2u);
    EXPECT_EQ(won.map, core::shard_map::equal_ranges(2).split(won.split_shard).value());

    auto maps = run_on(ioc, shards::async_read_maps(b));
    ASSERT_TRUE(maps.has_value());
    ASSERT_EQ(maps.value().size(), 1u);
    EXPECT_EQ(maps.value()[0].map, won.map);
    EXPECT_EQ(maps.value()[0].new_address, won.new_address);
    EXPECT_EQ(maps.value()[0].state, split_state::planned);
    // While it runs, no other split.
    EXPECT_EQ(run_on(ioc, shards::async_propose_split(a, 2, 1, "10.0.0.5:3306", 200)).error(), core::errc::conflict);

    // Moves: only from the state the mover read, only allowed ones.
    EXPECT_TRUE(run_on(ioc, shards::async_move_split(a, 2, split_state::planned, split_state::adopting, 300)));
    EXPECT_EQ(run_on(ioc, shards::async_move_split(b, 2, split_state::planned, split_state::adopting, 301)).error(), core::errc::conflict);
    EXPECT_EQ(run_on(ioc, shards::async_move_split(b, 2, split_state::adopting, split_state::verifying, 300)).error(),
              core::errc::bad_request);
    EXPECT_EQ(run_on(ioc, shards::async_move_split(b, 7, split_state::adopting, split_state::copying, 300)).error(), core::errc::conflict);

    // A gateway's first adoption holds.
    EXPECT_EQ(run_on(ioc, shards::async_adopt(a, 2, 1, 41)).value(), 41u);
    EXPECT_EQ(run_on(ioc, shards::async_adopt(b, 2, 1, 99)).value(), 41u);
    EXPECT_EQ(run_on(ioc, shards::async_adopt(b, 2, 2, 7)).value(), 7u);
    auto adopted = run_on(ioc, shards::async_adoptions(a, 2));
    ASSERT_TRUE(adopted.has_value());
    ASSERT_EQ(adopted.value().size(), 2u);
    EXPECT_EQ(adopted.value()[0].node_id, 1u);
    EXPECT_EQ(adopted.value()[0].from_seq, 41u);
    EXPECT_EQ(adopted.value()[1].from_seq, 7u);

    // A failed split frees the next proposal, which splits the map in force (the config's, here).
    EXPECT_TRUE(run_on(ioc, shards::async_move_split(b, 2, split_state::adopting, split_state::failed, 400)));
    auto again = run_on(ioc, shards::async_propose_split(a, 2, 1, "10.0.0.5:3306", 500));
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again.value().version, 3u);
    EXPECT_EQ(again.value().new_shard, 2u);
    EXPECT_EQ(again.value().map, core::shard_map::equal_ranges(2).split(1).value());
    // Carried to its end, the next split starts from its map.
    auto v = split_state::planned;
    while (v != split_state::retired) {
        const auto next = static_cast<split_state>(static_cast<int>(v) + 1);
        ASSERT_TRUE(run_on(ioc, shards::async_move_split(a, 3, v, next, 600)));
        v = next;
    }
    auto third = run_on(ioc, shards::async_propose_split(b, 2, 2, "10.0.0.6:3306", 700));
    ASSERT_TRUE(third.has_value());
    EXPECT_EQ(third.value().version, 4u);
    EXPECT_EQ(third.value().new_shard, 3u);
    EXPECT_EQ(third.value().map, again.value().map.split(2).value());

    // An edited row is refused, with its version named.
    ASSERT_TRUE(exec_sql(test_shards()[0], {"UPDATE shard_maps SET map = '0:0 5:2' WHERE version = 4"}, map_store_db));
    std::string why;
    EXPECT_EQ(run_on(ioc, shards::async_read_maps(a, &why)).error(), core::errc::shard_rejected);
    EXPECT_NE(why.find("version 4"), std::string::npos) << why;
    ASSERT_TRUE(exec_sql(test_shards()[0], {"UPDATE shard_maps SET map = '0:0 5:1 9:2 12:3', state = 'halfway' WHERE version = 4"}, map_store_db));
    EXPECT_EQ(run_on(ioc, shards::async_read_maps(a, &why)).error(), core::errc::shard_rejected);
    EXPECT_NE(why.find("version 4"), std::string::npos) << why;
}

// The parts of a copy and clean that are done (a restarted driver skips them): none before the
// table exists, each kept per version and step, a part marked again overwritten, not doubled.
TEST(map_store, the_parts_of_a_split_that_are_done_are_kept_per_version_and_step) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_database(map_store_db);
    asio::io_context ioc;
    shards::mariadb_conn c(ioc.get_executor(), params_for(test_shards()[0], map_store_db));
    ASSERT_TRUE(run_on(ioc, c.async_connect()));
    using shards::split_step;
    auto none = run_on(ioc, shards::async_steps_done(c, 2, split_step::copy));
    ASSERT_TRUE(none.has_value()) << "no table yet: nothing done";
    EXPECT_TRUE(none.value().empty());
    ASSERT_TRUE(run_on(ioc, shards::async_mark_step_done(c, {2, split_step::copy, "edges", 10, 4, 1, 1000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_step_done(c, {2, split_step::copy, "entities", 7, 3, 1, 2000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_step_done(c, {2, split_step::clean, "edges", 10, 4, 1, 3000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_step_done(c, {3, split_step::copy, "counters", 1, 1, 2, 4000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_step_done(c, {2, split_step::copy, "edges", 12, 5, 2, 5000})));  // again
    auto copy = run_on(ioc, shards::async_steps_done(c, 2, split_step::copy));
    ASSERT_TRUE(copy.has_value());
    ASSERT_EQ(copy.value().size(), 2u);
    EXPECT_EQ(copy.value()[0].unit, "entities");
    EXPECT_EQ(copy.value()[1].unit, "edges");
    EXPECT_EQ(copy.value()[1].rows_read, 12u);
    EXPECT_EQ(copy.value()[1].rows_done, 5u);
    EXPECT_EQ(copy.value()[1].driver, 2u);
    auto clean = run_on(ioc, shards::async_steps_done(c, 2, split_step::clean));
    ASSERT_TRUE(clean.has_value());
    ASSERT_EQ(clean.value().size(), 1u);
    EXPECT_EQ(clean.value()[0].step, split_step::clean);
    auto other = run_on(ioc, shards::async_steps_done(c, 3, split_step::copy));
    ASSERT_TRUE(other.has_value());
    ASSERT_EQ(other.value().size(), 1u);
    EXPECT_EQ(other.value()[0].unit, "counters");
}

TEST(map_store, a_copys_position_in_a_group_is_kept_per_version_and_group_with_any_key_bytes) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_database(map_store_db);
    asio::io_context ioc;
    shards::mariadb_conn c(ioc.get_executor(), params_for(test_shards()[0], map_store_db));
    ASSERT_TRUE(run_on(ioc, c.async_connect()));
    auto none = run_on(ioc, shards::async_copy_positions(c, 2));
    ASSERT_TRUE(none.has_value()) << "no table yet: no position";
    EXPECT_TRUE(none.value().empty());
    // Key bytes that look like the encoding itself (digits, colons), a NUL, an empty column.
    const std::vector<std::string> odd{"12:ab", std::string("\0:3", 3), "", "7"};
    const shards::copy_position first{2, "index by_email", "idx_by_email", odd, 40, 1, 1000};
    ASSERT_TRUE(run_on(ioc, shards::async_mark_copy_position(c, first)));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_copy_position(c, {2, "entities", "entities", {"100"}, 100, 1, 2000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_copy_position(c, {3, "entities", "entities", {"5"}, 5, 2, 3000})));
    ASSERT_TRUE(run_on(ioc, shards::async_mark_copy_position(c, {2, "entities", "entities", {"250"}, 250, 2, 4000})));  // further
    auto got = run_on(ioc, shards::async_copy_positions(c, 2));
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got.value().size(), 2u);
    EXPECT_EQ(got.value()[0], (shards::copy_position{2, "entities", "entities", {"250"}, 250, 2, 4000}));
    EXPECT_EQ(got.value()[1], first);
    // A row whose key does not decode is left out: its group is copied whole.
    ASSERT_TRUE(exec_sql(test_shards()[0], {"UPDATE shard_map_resume SET after_key = '9:short' WHERE version = 3"}, map_store_db));
    auto bad = run_on(ioc, shards::async_copy_positions(c, 3));
    ASSERT_TRUE(bad.has_value());
    EXPECT_TRUE(bad.value().empty());
}

}  // namespace
}  // namespace cairn::test
