#include "core/codec.hpp"
#include "core/config.hpp"
#include "core/counters.hpp"
#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "tests/support/counter_example.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

constexpr std::int64_t day_2026_11_23 = 20780LL * ms_per_day;  // 2026-11-23T00:00:00Z

TEST(counter_time, buckets_are_utc_and_the_last_millisecond_stays_in_its_day) {
    const auto before = *parse_utc_time("2026-11-22T23:59:59.999Z");
    const auto midnight = *parse_utc_time("2026-11-23T00:00:00Z");
    EXPECT_EQ(midnight, day_2026_11_23);
    EXPECT_EQ(before + 1, midnight);
    EXPECT_EQ(bucket_start_ms(before, counter_granularity::day), midnight - ms_per_day);
    EXPECT_EQ(bucket_start_ms(midnight, counter_granularity::day), midnight);
    EXPECT_EQ(bucket_start_ms(before, counter_granularity::hour), midnight - ms_per_hour);
    EXPECT_EQ(bucket_start_ms(midnight, counter_granularity::hour), midnight);
    EXPECT_EQ(bucket_start_ms(midnight + ms_per_hour - 1, counter_granularity::hour), midnight);
}

TEST(counter_time, parses_and_formats_rfc3339_utc_and_milliseconds) {
    EXPECT_EQ(parse_utc_time("2026-11-23"), day_2026_11_23);
    EXPECT_EQ(parse_utc_time("1795392000000"), 1795392000000);
    EXPECT_EQ(parse_utc_time("2026-11-23T01:02:03.004Z"), day_2026_11_23 + ms_per_hour + 2 * 60'000 + 3004);
    EXPECT_EQ(format_utc_time(day_2026_11_23), "2026-11-23T00:00:00Z");
    EXPECT_EQ(format_utc_time(day_2026_11_23 + 3004), "2026-11-23T00:00:03.004Z");
    for (const char* bad : {"", "2026-13-01", "2026-02-30", "2026-11-23T24:00:00Z", "2026-11-23T10:00:00",
                            "2026-11-23T10:00:00+01:00", "2026-11-23T10:00:00.5Z", "-5", "1e9", "2026-11-23 10:00:00Z",
                            "1969-12-31T23:59:59Z", "9999999999999999"}) {
        EXPECT_FALSE(parse_utc_time(bad).has_value()) << bad;
    }
}

TEST(counter_time, format_then_parse_is_the_identity) {
    EXPECT_TRUE(rc::check("format_utc_time and parse_utc_time round-trip", [] {
        const auto ms = *rc::gen::inRange<std::int64_t>(0, std::int64_t{253402300799999});  // to 9999-12-31
        RC_ASSERT(parse_utc_time(format_utc_time(ms)) == std::optional<std::int64_t>(ms));
    }));
}

TEST(counter_catalog, the_docs_example_loads_with_its_tables) {
    const auto c = test::counter_example_catalog();
    ASSERT_EQ(c.metrics.size(), 1u);
    const auto& m = c.metrics[0];
    EXPECT_EQ(m.name, "plays");
    EXPECT_EQ(m.dimensions[m.shard_on].name, "track_id");
    ASSERT_EQ(m.tables.size(), 4u);
    EXPECT_EQ(m.tables[0].sql_name(), "counts_plays_by_owner_hour");
    EXPECT_EQ(m.tables[1].time_position(), 1u);
    EXPECT_EQ(c.op_ids_keep, std::chrono::hours(168));
}

TEST(counter_catalog, a_bad_declaration_names_its_key) {
    struct bad_declaration {
        const char* text;
        const char* names;
    };
    const std::string ok_dims = R"(dimensions = [{ name = "track_id", type = "int" }, { name = "country", type = "string", length = 2 }])";
    const bad_declaration cases[] = {
        {R"(name = "Plays"
shard_on = "track_id"
DIMS
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time"] }])", "counters.metrics[0].name"},
        {R"(name = "plays"
shard_on = "nope"
DIMS
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time"] }])", "counters.metrics[0].shard_on: 'nope'"},
        {R"(name = "plays"
shard_on = "track_id"
DIMS
tables = [{ name = "t", granularity = "week", key = ["track_id", "time"] }])", "counters.metrics[0].tables[0].granularity"},
        {R"(name = "plays"
shard_on = "track_id"
DIMS
tables = [{ name = "t", granularity = "hour", key = ["track_id"] }])", "counters.metrics[0].tables[0].key: must name \"time\""},
        {R"(name = "plays"
shard_on = "track_id"
DIMS
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time", "city"] }])", "'city' is not a declared dimension"},
        {R"(name = "plays"
shard_on = "track_id"
dimensions = [{ name = "track_id", type = "int" }, { name = "country", type = "string" }]
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time"] }])", "counters.metrics[0].dimensions[1].length"},
        {R"(name = "plays"
shard_on = "track_id"
dimensions = [{ name = "track_id", type = "int" }, { name = "track_id", type = "int" }]
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time"] }])", "declared twice"},
        {R"(name = "plays"
shard_on = "track_id"
DIMS
tables = [{ name = "t", granularity = "hour", key = ["track_id", "time"] }, { name = "t", granularity = "day", key = ["time"] }])",
         "table 't' is declared twice"},
    };
    for (const auto& c : cases) {
        std::string body = c.text;
        if (auto at = body.find("DIMS"); at != std::string::npos) body.replace(at, 4, ok_dims);
        auto r = parse_config("[[counters.metrics]]\n" + body);
        ASSERT_FALSE(r.has_value()) << body;
        EXPECT_NE(r.error().find(c.names), std::string::npos) << r.error();
    }
}

TEST(counter_catalog, dimension_values_are_checked_by_type_and_length) {
    const counter_dimension id{"track_id", dimension_type::integer, 0};
    const counter_dimension country{"country", dimension_type::string, 2};
    EXPECT_FALSE(check_dimension_value(id, "42"));
    EXPECT_FALSE(check_dimension_value(id, "-7"));
    for (const char* bad : {"", "+5", "05", "-0", "4.2", "x", "99999999999999999999"}) {
        EXPECT_TRUE(check_dimension_value(id, bad)) << bad;
    }
    EXPECT_FALSE(check_dimension_value(country, "DE"));
    EXPECT_FALSE(check_dimension_value(country, ""));
    EXPECT_NE(check_dimension_value(country, "DEU").value_or("").find("at most 2"), std::string::npos);
    // Integers route as edge node ids do; equal strings route alike.
    EXPECT_EQ(counter_value_hash(id, "42"), hash_id(42));
    EXPECT_EQ(counter_value_hash(country, "DE"), counter_value_hash(country, "DE"));
    EXPECT_NE(counter_value_hash(country, "DE"), counter_value_hash(country, "FR"));
}

TEST(counter_catalog, the_table_chosen_has_every_prefix_column_filtered) {
    const auto c = test::counter_example_catalog();
    ASSERT_EQ(c.metrics.size(), 1u);
    const auto& m = c.metrics[0];
    const std::size_t owner = *m.dimension_index("owner_id");
    const std::size_t track = *m.dimension_index("track_id");
    const std::size_t country = *m.dimension_index("country");
    const std::size_t app = *m.dimension_index("app");
    auto chosen = [&](counter_query q) {
        const auto* t = choose_counter_table(m, q);
        return t ? t->name : std::string("none");
    };
    // Track alone, hourly: the narrowest table wins over (owner_id, track_id, time).
    EXPECT_EQ(chosen({{{track, "1"}}, std::nullopt, counter_granularity::hour}), "plays_by_track_hour");
    EXPECT_EQ(chosen({{{owner, "9"}, {track, "1"}}, std::nullopt, counter_granularity::hour}), "plays_by_owner_hour");
    // Owner alone: no table has owner_id first without track_id: none.
    EXPECT_EQ(chosen({{{owner, "9"}}, std::nullopt, counter_granularity::hour}), "none");
    EXPECT_EQ(chosen({{{track, "1"}}, country, counter_granularity::day}), "plays_by_track_day_country");
    EXPECT_EQ(chosen({{{track, "1"}}, app, counter_granularity::day}), "plays_by_track_day_app");
    EXPECT_EQ(chosen({{{track, "1"}, {country, "DE"}}, std::nullopt, counter_granularity::day}), "plays_by_track_day_country");
    EXPECT_EQ(chosen({{{track, "1"}}, country, counter_granularity::hour}), "none");
    EXPECT_EQ(chosen({{}, std::nullopt, counter_granularity::day}), "none");
}

TEST(counter_codec, an_increment_round_trips_through_a_journal_record) {
    op o;
    o.op_id = make_op_id(3, 77);
    o.ts = hlc_make(1'795'392'000'000, 2, 3);
    o.body = counter_op{"plays", {"9", "1", "DE", "ios"}, 1'763'856'000'123, -4, hash_id(1)};
    const auto bytes = encode_op(o);
    auto back = decode_op(bytes);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), o);
    EXPECT_EQ(back.value().kind(), model::counter);
    // A truncated record is corrupt, never a different op.
    auto cut = decode_op(std::span(bytes.data(), bytes.size() - 1));
    EXPECT_FALSE(cut.has_value());
}

}  // namespace
}  // namespace cairn::core
