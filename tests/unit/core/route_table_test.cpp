#include "core/route_table.hpp"
#include "core/routing.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <set>

namespace cairn::core {
namespace {

constexpr auto no_end = std::numeric_limits<std::uint64_t>::max();

// The shards whose workers take a row with hash h at seq (a counter op's rows in the tables keyed by
// its shard_on value too), as route_table says.
std::set<shard_index> appliers(const route_table& t, std::uint64_t h, std::uint64_t seq) {
    std::set<shard_index> out;
    for (shard_index s = 0; s < t.shards(); ++s) {
        if (t.apply_map(s, seq).shard_of_hash(h) == s) out.insert(s);
    }
    return out;
}

// The same, as docs/resharding.md states the protocol: before the adoption seq by the old map;
// from it, R's rows on both owners; from the cut-over, by the new map alone.
std::set<shard_index> protocol(const shard_map& old_map, const shard_map& next, const split_route& sp, std::uint64_t h,
                               std::uint64_t seq) {
    if (seq < sp.adoption_seq) return {old_map.shard_of_hash(h)};
    if (sp.cut_over_seq != 0 && seq >= sp.cut_over_seq) return {next.shard_of_hash(h)};
    return {old_map.shard_of_hash(h), next.shard_of_hash(h)};
}

TEST(route_table, without_a_split_everything_goes_by_the_map) {
    const route_table t(1, shard_map::equal_ranges(2));
    EXPECT_EQ(t.shards(), 2u);
    EXPECT_FALSE(t.split().has_value());
    EXPECT_EQ(&t.read_map(), &t.map());
    EXPECT_EQ(&t.apply_map(0, 7), &t.map());
    EXPECT_EQ(t.base_map(), t.map());
    EXPECT_EQ(t.segment_last(1), no_end);
    EXPECT_TRUE(t.may_apply(1, 100));
}

TEST(route_table, a_split_routes_by_seq) {
    auto t = route_table::splitting(3, shard_map::equal_ranges(2), split_route{.from = 0, .adoption_seq = 10});
    ASSERT_TRUE(t.has_value());
    const auto& r = t.value();
    EXPECT_EQ(r.shards(), 3u);
    const std::uint64_t in_r = r.next_map().range_of(2).first;       // the upper half of shard 0
    const std::uint64_t low = r.next_map().range_of(0).last;         // the lower half, which stays
    EXPECT_EQ(appliers(r, in_r, 9), (std::set<shard_index>{0}));
    EXPECT_EQ(appliers(r, in_r, 10), (std::set<shard_index>{0, 2}));
    EXPECT_EQ(appliers(r, low, 10), (std::set<shard_index>{0}));
    // Reads stay on the old owner until they move; the counter tables without shard_on stay on the
    // first map's owner for good.
    EXPECT_EQ(r.read_map().shard_of_hash(in_r), 0u);
    EXPECT_EQ(r.base_map().shard_of_hash(in_r), 0u);
    // N is held from the adoption seq; the others apply on.
    EXPECT_TRUE(r.may_apply(2, 9));
    EXPECT_FALSE(r.may_apply(2, 10));
    EXPECT_TRUE(r.may_apply(0, 10));
    EXPECT_EQ(r.segment_last(1), 9u);
    EXPECT_EQ(r.segment_last(9), 9u);
    EXPECT_EQ(r.segment_last(10), no_end);
}

// A twin on the new shard of an op from before the adoption is routed as at the adoption: N takes its
// rows of R and holds it while the copy runs; every other shard routes by the op's own seq.
TEST(route_table, a_twin_on_the_new_shard_is_routed_as_at_the_adoption) {
    auto t = route_table::splitting(3, shard_map::equal_ranges(2), split_route{.from = 0, .adoption_seq = 10});
    ASSERT_TRUE(t.has_value());
    const auto& r = t.value();
    EXPECT_EQ(r.route_seq(2, 4), 10u);
    EXPECT_EQ(r.route_seq(2, 12), 12u);
    EXPECT_EQ(r.route_seq(0, 4), 4u);
    EXPECT_EQ(r.route_seq(1, 4), 4u);
    const std::uint64_t in_r = r.next_map().range_of(2).first;
    EXPECT_EQ(r.apply_map(2, r.route_seq(2, 4)).shard_of_hash(in_r), 2u);
    EXPECT_FALSE(r.may_apply(2, r.route_seq(2, 4))) << "held with the new shard";
    auto released = t.value().split().value();
    released.new_shard_held = false;
    auto r2 = route_table::splitting(3, shard_map::equal_ranges(2), released);
    ASSERT_TRUE(r2.has_value());
    EXPECT_TRUE(r2.value().may_apply(2, r2.value().route_seq(2, 4)));
    EXPECT_EQ(route_table(1, shard_map::equal_ranges(3)).route_seq(2, 4), 4u) << "no split: every op as itself";
}

TEST(route_table, reads_move_and_then_writes_cut_over) {
    auto moved = route_table::splitting(
        4, shard_map::equal_ranges(2),
        split_route{.from = 1, .adoption_seq = 5, .cut_over_seq = 20, .new_shard_held = false, .reads_moved = true});
    ASSERT_TRUE(moved.has_value());
    const auto& r = moved.value();
    const std::uint64_t in_r = r.next_map().range_of(2).first;
    EXPECT_EQ(r.read_map().shard_of_hash(in_r), 2u);
    EXPECT_EQ(appliers(r, in_r, 19), (std::set<shard_index>{1, 2}));
    EXPECT_EQ(appliers(r, in_r, 20), (std::set<shard_index>{2}));
    EXPECT_EQ(r.base_map().shard_of_hash(in_r), 1u) << "the counter tables without shard_on never move";
    EXPECT_EQ(r.segment_last(5), 19u);
    EXPECT_EQ(r.segment_last(20), no_end);
    EXPECT_TRUE(r.may_apply(2, 100));
}

TEST(route_table, a_split_that_breaks_the_rules_is_refused) {
    const auto m = shard_map::equal_ranges(2);
    EXPECT_FALSE(route_table::splitting(2, m, split_route{.from = 2, .adoption_seq = 1}).has_value());  // no shard 2
    EXPECT_FALSE(route_table::splitting(2, m, split_route{.from = 0, .adoption_seq = 0}).has_value());
    EXPECT_FALSE(route_table::splitting(0, m, split_route{.from = 0, .adoption_seq = 1}).has_value());
    // Reads cannot move while N is held; a cut-over needs moved reads and comes after the adoption.
    EXPECT_FALSE(route_table::splitting(2, m, split_route{.from = 0, .adoption_seq = 1, .reads_moved = true}).has_value());
    EXPECT_FALSE(route_table::splitting(2, m,
                                        split_route{.from = 0, .adoption_seq = 5, .cut_over_seq = 9, .new_shard_held = false})
                     .has_value());
    EXPECT_FALSE(route_table::splitting(2, m,
                                        split_route{.from = 0, .adoption_seq = 5, .cut_over_seq = 4, .new_shard_held = false,
                                                    .reads_moved = true})
                     .has_value());
}

TEST(route_table, text_is_parsed_strictly) {
    const route_table plain(3, shard_map::equal_ranges(2));
    EXPECT_EQ(plain.to_text(), "v3 b2 0:0 9223372036854775808:1");
    EXPECT_EQ(route_table::parse(plain.to_text()).value(), plain);
    const auto split = route_table::splitting(4, shard_map::equal_ranges(2),
                                              split_route{.from = 1, .adoption_seq = 12, .adoption_pending = true})
                           .value();
    EXPECT_EQ(split.to_text(), "v4 b2 0:0 9223372036854775808:1 | 1 12 0 1 0 1");
    EXPECT_EQ(route_table::parse(split.to_text()).value(), split);
    // The base count is the deployment's: a map split before keeps it.
    const auto twice = shard_map::equal_ranges(2).split(0).value();
    const route_table later(5, twice, 2);
    EXPECT_EQ(later.to_text(), "v5 b2 " + twice.to_text());
    EXPECT_EQ(route_table::parse(later.to_text()).value(), later);
    EXPECT_EQ(later.base_map(), shard_map::equal_ranges(2));
    // A record written before the base count was: the caller's count.
    const auto legacy = route_table::parse("v5 " + twice.to_text(), 2);
    ASSERT_TRUE(legacy.has_value());
    EXPECT_EQ(legacy.value(), later);
    for (const std::string& bad : {"v5 b3 " + twice.to_text() + " x", "v5 b4 " + twice.to_text(), "v5 b0 " + twice.to_text(),
                                  "v5 b02 " + twice.to_text(), "v5 b " + twice.to_text(), "v5 b2  " + twice.to_text()}) {
        EXPECT_FALSE(route_table::parse(bad).has_value()) << bad;
    }
    for (const char* bad : {"", "v", "v0 0:0", "3 0:0", "v3  0:0", "v3 0:0 ", "v03 0:0", "v3 0:0 |", "v3 0:0 | 1 12 0 1 0",
                            "v3 0:0 9223372036854775808:1 | 1 12 0 1 0 2", "v3 0:0 9223372036854775808:1 | 1 12 0 1 0 1 ",
                            "v3 0:0 9223372036854775808:1 | 2 12 0 1 0 0", "v3 0:0 9223372036854775808:1 | 1 0 0 1 0 0",
                            "v3 0:0 9223372036854775808:1 | 1 12 0 0 0 1", "v3 0:0 9223372036854775808:1 | 1 +12 0 1 0 0",
                            "v3 0:0 9223372036854775808:1 | 1 12 0 1 1 0"}) {
        EXPECT_FALSE(route_table::parse(bad).has_value()) << bad;
    }
}

TEST(route_table, a_pending_adoption_holds_every_shard_from_its_seq) {
    const auto t = route_table::splitting(2, shard_map::equal_ranges(2),
                                          split_route{.from = 0, .adoption_seq = 8, .adoption_pending = true})
                       .value();
    for (shard_index s = 0; s < 3; ++s) {
        EXPECT_TRUE(t.may_apply(s, 7));
        EXPECT_FALSE(t.may_apply(s, 8));
    }
}

TEST(route_table, routing_hands_out_the_table_installed_last) {
    routing rt(route_table(1, shard_map::equal_ranges(2)));
    const auto before = rt.load();
    rt.install(route_table::splitting(2, shard_map::equal_ranges(2), split_route{.from = 0, .adoption_seq = 3}).value());
    EXPECT_EQ(before->version(), 1u);  // a holder keeps the table it loaded
    EXPECT_EQ(rt.load()->version(), 2u);
    EXPECT_TRUE(rt.load()->split().has_value());
}

// Any split of any shard of a map that was split before, at any stage, routes every row and counter
// op as the protocol says, a wait always waits on a shard that applies the op, reads always go to a
// shard that holds the key's rows from the stage's start, and segment_last never spans a change. A
// counter op's tables without shard_on are counted by one shard, the same at every seq and stage.
RC_GTEST_PROP(route_table, every_row_and_counter_op_goes_where_the_protocol_says, ()) {
    const auto base_count = *rc::gen::inRange<std::uint32_t>(1, 5);
    const auto base = shard_map::equal_ranges(base_count);
    auto map = base;
    const int splits_before = *rc::gen::inRange(0, 4);
    for (int i = 0; i < splits_before; ++i) {
        map = map.split(*rc::gen::inRange<std::uint32_t>(0, map.size())).value();
    }
    split_route sp;
    sp.from = *rc::gen::inRange<std::uint32_t>(0, map.size());
    sp.adoption_seq = *rc::gen::inRange<std::uint64_t>(1, 50);
    const int stage = *rc::gen::inRange(0, 3);  // held, released, reads moved (and maybe cut over)
    sp.new_shard_held = stage == 0;
    sp.reads_moved = stage == 2;
    sp.adoption_pending = stage == 0 && *rc::gen::arbitrary<bool>();
    if (stage == 2 && *rc::gen::arbitrary<bool>()) sp.cut_over_seq = sp.adoption_seq + *rc::gen::inRange<std::uint64_t>(0, 50);
    const auto t = route_table::splitting(7, map, sp, base_count);
    RC_ASSERT(t.has_value());
    const auto& r = t.value();
    const auto next = map.split(sp.from).value();
    RC_ASSERT(r.next_map() == next);
    RC_ASSERT(r.shards() == map.size() + 1);
    const shard_index to = map.size();
    // The journal's text of the table reads back as the same table.
    const auto back = route_table::parse(r.to_text());
    RC_ASSERT(back.has_value());
    RC_ASSERT(back.value() == r);

    for (int k = 0; k < 50; ++k) {
        // Hashes near R's edges as well as anywhere.
        const auto range = next.range_of(to);
        const std::uint64_t h = *rc::gen::oneOf(rc::gen::arbitrary<std::uint64_t>(), rc::gen::element(range.first, range.last),
                                                rc::gen::element(range.first - 1, range.last == no_end ? range.last : range.last + 1));
        const std::uint64_t seq = *rc::gen::inRange<std::uint64_t>(1, 120);
        const auto got = appliers(r, h, seq);
        RC_ASSERT(got == protocol(map, next, sp, h, seq));
        // A wait (on the read map) waits on a shard that applies the op; once reads have moved, an op
        // from before the adoption is waited for on the new shard, which has it from the copy.
        if (seq >= sp.adoption_seq || !sp.reads_moved) {
            RC_ASSERT(got.contains(r.read_map().shard_of_hash(h)));
        } else {
            RC_ASSERT(r.read_map().shard_of_hash(h) == next.shard_of_hash(h));
        }
        RC_ASSERT(r.base_map() == base);
        // Reads go to a shard that applies every row of the key from the adoption on (before it,
        // the copy brings them to N).
        if (seq >= sp.adoption_seq) RC_ASSERT(appliers(r, h, seq).contains(r.read_map().shard_of_hash(h)));
        if (!sp.reads_moved) RC_ASSERT(r.read_map().shard_of_hash(h) == map.shard_of_hash(h));
        // N is held exactly from the adoption seq while the copy runs, every shard while this
        // gateway's adoption is not durable yet.
        for (shard_index s = 0; s < r.shards(); ++s) {
            RC_ASSERT(r.may_apply(s, seq) ==
                      !(seq >= sp.adoption_seq && (sp.adoption_pending || (s == to && sp.new_shard_held))));
        }
        // Within a segment nothing changes; right after it something does.
        const std::uint64_t end = r.segment_last(seq);
        RC_ASSERT(end >= seq);
        const std::uint64_t inside = *rc::gen::inRange<std::uint64_t>(seq, std::min<std::uint64_t>(end, seq + 200) + 1);
        bool changes_after = false;
        for (shard_index s = 0; s < r.shards(); ++s) {
            RC_ASSERT(&r.apply_map(s, inside) == &r.apply_map(s, seq));
            if (end != no_end && &r.apply_map(s, end + 1) != &r.apply_map(s, seq)) changes_after = true;
            RC_ASSERT(r.may_apply(s, inside) == r.may_apply(s, seq));
            if (end != no_end && r.may_apply(s, end + 1) != r.may_apply(s, seq)) changes_after = true;
        }
        if (end != no_end) RC_ASSERT(changes_after);
    }
}

}  // namespace
}  // namespace cairn::core
