#include "core/cells.hpp"
#include "core/codec.hpp"
#include "core/config.hpp"
#include "core/hlc.hpp"
#include "core/shard_map.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

TEST(cell_keys, ids_parse_as_hex_or_uuid_text_and_format_as_uuid) {
    const auto a = parse_id16("0123456789ABCDEF0123456789abcdef");
    const auto b = parse_id16("01234567-89ab-cdef-0123-456789ABCDEF");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(format_id16(*a), "01234567-89ab-cdef-0123-456789abcdef");
    for (const char* bad : {"", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdefa",
                            "0123456789abcdef0123456789abcdeg", "01234567-89ab-cdef-0123456789abcdef0",
                            "0123456789-ab-cdef-0123-456789abcdef"}) {
        EXPECT_FALSE(parse_id16(bad).has_value()) << bad;
    }
    EXPECT_TRUE(valid_cell_column("BASE"));
    EXPECT_TRUE(valid_cell_column("profile.v2-draft_1"));
    EXPECT_FALSE(valid_cell_column(""));
    EXPECT_FALSE(valid_cell_column("a b"));
    EXPECT_FALSE(valid_cell_column(std::string(65, 'c')));
}

TEST(cell_bodies, stored_bodies_round_trip_and_compress_only_when_it_pays) {
    EXPECT_TRUE(rc::check("decode(encode(b)) == b, deterministic", [] {
        const auto body = *rc::gen::container<std::string>(rc::gen::oneOf(rc::gen::just('a'), rc::gen::arbitrary<char>()));
        const auto min = *rc::gen::inRange<std::size_t>(0, 64);
        const auto stored = encode_body(body, min);
        RC_ASSERT(stored == encode_body(body, min));
        RC_ASSERT(stored.size() <= body.size() + 1);
        auto back = decode_body(stored, body.size() + 1);
        RC_ASSERT(back.has_value());
        RC_ASSERT(back.value() == body);
    }));
    const std::string repetitive(4000, 'x');
    const auto stored = encode_body(repetitive, 512);
    EXPECT_EQ(stored[0], static_cast<char>(body_format::zstd_msgpack));
    EXPECT_LT(stored.size(), 100u);
    EXPECT_EQ(encode_body(repetitive, 5000)[0], static_cast<char>(body_format::msgpack));
    // A decompression bomb is refused by its declared size; garbage is corrupt, never a crash.
    EXPECT_FALSE(decode_body(stored, 3999).has_value());
    EXPECT_FALSE(decode_body(std::string("\x01garbage", 8), 1 << 20).has_value());
    EXPECT_FALSE(decode_body(std::string("\x07", 1), 1 << 20).has_value());
}

TEST(cell_rule, the_smaller_ts_then_body_wins_so_any_order_ends_alike) {
    EXPECT_TRUE(rc::check("the winner of a set of versions does not depend on their order", [] {
        using version = std::pair<std::uint64_t, std::string>;
        const auto versions = *rc::gen::nonEmpty(rc::gen::container<std::vector<version>>(
            rc::gen::pair(rc::gen::inRange<std::uint64_t>(1, 4), rc::gen::element<std::string>("a", "b", "c"))));
        auto fold = [](const std::vector<version>& vs) {
            version cur = vs.front();
            for (const auto& v : vs) {
                if (cell_version_wins(v.first, v.second, cur.first, cur.second)) cur = v;
            }
            return cur;
        };
        auto shuffled = *rc::gen::arbitrary<int>() % 2 ? std::vector<version>(versions.rbegin(), versions.rend()) : versions;
        RC_ASSERT(fold(versions) == fold(shuffled));
        RC_ASSERT(fold(versions) == *std::min_element(versions.begin(), versions.end()));
    }));
}

TEST(cell_codec, a_cell_write_round_trips_through_a_journal_record) {
    op o;
    o.op_id = make_op_id(2, 9);
    o.ts = hlc_make(1'795'392'000'000, 1, 2);
    const auto id = *parse_id16("0123456789abcdef0123456789abcdef");
    o.body = cell_op{"users", std::string(id16_bytes(id)), "BASE", 7, encode_body(std::string("\x81\xa1k\x01", 4), 512), {}};
    const auto bytes = encode_op(o);
    auto back = decode_op(bytes);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), o);
    EXPECT_EQ(back.value().kind(), model::cell);
    // Without index entries the record is the one written before cell indexes existed: an array
    // of the 4 header fields and 5 cell fields (0x99), which decodes with no entries.
    EXPECT_EQ(static_cast<unsigned char>(bytes.at(0)), 0x99);

    // With entries: a sixth field, every value type, round trip.
    auto& c = std::get<cell_op>(o.body);
    c.entries = {{"users_by_company", {std::string(16, '\x0a'), std::int64_t{-3}}, hash_bytes(std::string(16, '\x0a'))},
                 {"users_by_email", {std::string("alice@example.com")}, hash_bytes("alice@example.com")}};
    const auto with = encode_op(o);
    EXPECT_EQ(static_cast<unsigned char>(with.at(0)), 0x9a);
    back = decode_op(with);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back.value(), o);
    // A sixth field that is not a list of entries, or an empty one (never written), is corrupt.
    for (const char sixth : {'\x90', '\xc0', '\x01'}) {
        auto broken = bytes;
        broken[0] = '\x9a';
        broken += sixth;
        EXPECT_FALSE(decode_op(broken).has_value()) << static_cast<int>(sixth);
    }
    auto fixed = bytes;  // the same bytes with a valid sixth field decode with those entries
    fixed[0] = '\x9a';
    fixed += with.substr(bytes.size());
    EXPECT_TRUE(decode_op(fixed).has_value());
    // Routing by the row key's bytes.
    EXPECT_EQ(hash_bytes(id16_bytes(id)), hash_bytes(std::string(id16_bytes(id))));
}

TEST(cell_config, tables_are_declared_in_the_config) {
    auto c = parse_config("[cells]\ntables = [\"users\", \"schools\"]\ncompress_bytes_min = 100\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_TRUE(c.value().cells.declared("users"));
    EXPECT_FALSE(c.value().cells.declared("trips"));
    EXPECT_EQ(c.value().cells.compress_bytes_min, 100u);
    for (const char* bad : {"[cells]\ntables = [\"Users\"]", "[cells]\ntables = [\"a\", \"a\"]", "[cells]\ntables = \"users\"",
                            "[cells]\ncompress = 1"}) {
        auto r = parse_config(bad);
        ASSERT_FALSE(r.has_value()) << bad;
        EXPECT_NE(r.error().find("cells."), std::string::npos) << r.error();
    }
}

}  // namespace
}  // namespace cairn::core
