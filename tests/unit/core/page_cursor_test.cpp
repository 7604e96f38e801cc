#include "core/page_cursor.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>

namespace cairn::core {
namespace {

RC_GTEST_PROP(page_cursor, round_trips_and_has_a_fixed_length,
              (bool previous, std::int64_t position, std::int64_t other_id, std::string scope)) {
    const page_cursor c{previous ? page_cursor::kind::previous : page_cursor::kind::next, position, other_id};
    const auto text = encode_page_cursor(c, scope);
    RC_ASSERT(text.size() == page_cursor_chars);
    RC_ASSERT(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
              std::string::npos);
    RC_ASSERT(decode_page_cursor(text, scope) == std::optional<page_cursor>(c));
}

// A cursor only continues the query that made it.
RC_GTEST_PROP(page_cursor, another_scope_is_refused, (std::int64_t position, std::string a, std::string b)) {
    RC_PRE(a != b);
    const auto text = encode_page_cursor({page_cursor::kind::next, position, 1}, a);
    RC_ASSERT(!decode_page_cursor(text, b));
}

// Any change of one character of a cursor is refused (the check covers every byte; a changed
// character that still decodes would need a 48-bit hash collision).
RC_GTEST_PROP(page_cursor, a_changed_character_is_refused, (std::int64_t position, std::int64_t other_id)) {
    const auto text = encode_page_cursor({page_cursor::kind::previous, position, other_id}, "scope");
    const auto at = *rc::gen::inRange<std::size_t>(0, text.size());
    const char to = *rc::gen::elementOf(std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"));
    RC_PRE(text[at] != to);
    std::string changed = text;
    changed[at] = to;
    RC_ASSERT(!decode_page_cursor(changed, "scope"));
}

TEST(page_cursor, extremes_round_trip) {
    for (auto v : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{0},
                   std::numeric_limits<std::int64_t>::max()}) {
        const page_cursor c{page_cursor::kind::next, v, v};
        EXPECT_EQ(decode_page_cursor(encode_page_cursor(c, ""), ""), c);
    }
}

TEST(page_cursor, malformed_text_is_refused) {
    const auto good = encode_page_cursor({page_cursor::kind::previous, 5, 7}, "page|g|1");
    // The documented layout and check, as Python's base64 and a few lines of FNV-1a write them.
    EXPECT_EQ(good, "AgEAAAAAAAAABQAAAAAAAAAHhRZWP-mR");
    EXPECT_TRUE(decode_page_cursor(good, "page|g|1"));
    EXPECT_FALSE(decode_page_cursor(good, "page|g|2"));
    EXPECT_FALSE(decode_page_cursor("", ""));
    EXPECT_FALSE(decode_page_cursor(good.substr(1), "page|g|1"));
    EXPECT_FALSE(decode_page_cursor(good + "A", "page|g|1"));
    std::string bad_char = good;
    bad_char[3] = '=';
    EXPECT_FALSE(decode_page_cursor(bad_char, "page|g|1"));
    bad_char[3] = '+';
    EXPECT_FALSE(decode_page_cursor(bad_char, "page|g|1"));
    // A version-1 cursor (before the check) is refused: cursors do not outlive an upgrade.
    EXPECT_FALSE(decode_page_cursor("AQEAAAAAAAAABQAAAAAAAAAH", "page|g|1"));
    EXPECT_FALSE(decode_page_cursor("not-a-cursor-at-all-1234-5678901", "page|g|1"));
}

}  // namespace
}  // namespace cairn::core
