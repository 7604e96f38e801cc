#include "core/codec.hpp"
#include "core/config.hpp"
#include "core/entities.hpp"
#include "core/hlc.hpp"

#include <gtest/gtest.h>

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
        o.body = entity_op{"entry", std::string(id16_bytes(id)), deleted, deleted ? std::string() : encode_body("\x80", 512)};
        auto back = decode_op(encode_op(o));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(back.value(), o);
        EXPECT_EQ(back.value().kind(), model::entity);
    }
    EXPECT_EQ(format_id16_bytes(id16_bytes(id)), "71f0c4d8-5a9b-4c3e-9d2f-0a1b2c3d4e5f");
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
