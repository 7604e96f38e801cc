#include "core/codec.hpp"
#include "core/config.hpp"
#include "core/entities.hpp"
#include "core/hlc.hpp"
#include "core/shard_map.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace cairn::core {
namespace {

TEST(entity_rule, later_ts_wins_then_a_tombstone_then_the_greater_body) {
    EXPECT_TRUE(entity_version_wins(2, false, "a", 1, true, "z"));
    EXPECT_FALSE(entity_version_wins(1, true, "", 2, false, "a"));
    EXPECT_TRUE(entity_version_wins(5, true, "", 5, false, "zzz"));
    EXPECT_TRUE(entity_version_wins(5, false, "b", 5, false, "a"));
    EXPECT_FALSE(entity_version_wins(5, false, "a", 5, false, "a"));  // equal: nothing to change
}

TEST(entity_codec, puts_and_tombstones_round_trip_through_journal_records) {
    const auto id = *parse_id16("71f0c4d8-5a9b-4c3e-9d2f-0a1b2c3d4e5f");
    for (const bool deleted : {false, true}) {
        op o;
        o.op_id = make_op_id(1, 3);
        o.ts = hlc_make(1'795'392'000'000, 0, 1);
        std::vector<index_entry> entries;
        if (!deleted) {
            entries.push_back({"by_user", {std::string(id16_bytes(id))}, hash_bytes(id16_bytes(id))});
            entries.push_back({"by_feed_and_rank", {std::string("feed"), std::int64_t{-7}}, 42});
        }
        o.body = entity_op{"entry", std::string(id16_bytes(id)), deleted, deleted ? std::string() : encode_body("\x80", 512),
                           entries};
        auto back = decode_op(encode_op(o));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(back.value(), o);
        EXPECT_EQ(back.value().kind(), model::entity);
    }
    EXPECT_EQ(format_id16_bytes(id16_bytes(id)), "71f0c4d8-5a9b-4c3e-9d2f-0a1b2c3d4e5f");
}

TEST(index_defs, definitions_are_checked_and_round_trip) {
    index_def d{"by_user", "entry", {{"user_id", index_value_type::id, 0}, {"title", index_value_type::string, 20}}, 0, {}};
    EXPECT_FALSE(check_index_def(d));
    auto back = decode_index_def(encode_index_def(d));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), d);
    EXPECT_FALSE(back.value().on_cells());
    // An entity index is stored as before cell indexes existed (four fields, 0x94); a cell index
    // adds its column as a fifth.
    EXPECT_EQ(static_cast<unsigned char>(encode_index_def(d).at(0)), 0x94);
    auto cell = d;
    cell.kind = "users";
    cell.column = "BASE";
    EXPECT_FALSE(check_index_def(cell));
    EXPECT_EQ(static_cast<unsigned char>(encode_index_def(cell).at(0)), 0x95);
    back = decode_index_def(encode_index_def(cell));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), cell);
    EXPECT_TRUE(back.value().on_cells());
    cell.column = "a b";
    EXPECT_NE(check_index_def(cell).value_or("").find("column"), std::string::npos);
    cell.column = "BASE";
    cell.kind = "Users";
    EXPECT_NE(check_index_def(cell).value_or("").find("table"), std::string::npos);
    // A cell index's version column orders as its ref_key does.
    EXPECT_LT(cell_index_version(-5), cell_index_version(-4));
    EXPECT_LT(cell_index_version(-1), cell_index_version(0));
    EXPECT_LT(cell_index_version(0), cell_index_version(1));
    EXPECT_LT(cell_index_version(std::numeric_limits<std::int64_t>::min()), cell_index_version(std::numeric_limits<std::int64_t>::max()));
    auto bad = d;
    bad.properties[1].length_max = 0;
    EXPECT_NE(check_index_def(bad).value_or("").find("properties[1].length"), std::string::npos);
    bad = d;
    bad.name = "By-User";
    EXPECT_NE(check_index_def(bad).value_or("").find("name"), std::string::npos);
    bad = d;
    bad.shard_on = 2;
    EXPECT_NE(check_index_def(bad).value_or("").find("shard_on"), std::string::npos);
    bad = d;
    bad.properties.push_back(bad.properties[0]);
    EXPECT_NE(check_index_def(bad).value_or("").find("named twice"), std::string::npos);
    op o;
    o.op_id = make_op_id(1, 1);
    o.ts = hlc_make(1'795'392'000'000, 0, 1);
    o.body = index_def_op{"by_user", false, encode_index_def(d)};
    auto rec = decode_op(encode_op(o));
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec.value(), o);
    o.body = index_def_op{"by_user", true, {}};
    rec = decode_op(encode_op(o));
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec.value().kind(), model::index);
}

TEST(entity_config, kinds_are_declared_in_the_config) {
    auto c = parse_config("[entities]\nkinds = [\"entry\", \"user\"]\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_TRUE(c.value().entities.declared("entry"));
    EXPECT_FALSE(c.value().entities.declared("trip"));
    for (const char* bad : {"[entities]\nkinds = [\"Entry\"]", "[entities]\nkinds = [\"a\", \"a\"]", "[entities]\nkind = []"}) {
        auto r = parse_config(bad);
        ASSERT_FALSE(r.has_value()) << bad;
        EXPECT_NE(r.error().find("entities."), std::string::npos) << r.error();
    }
}

}  // namespace
}  // namespace cairn::core
