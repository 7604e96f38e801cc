#include "core/page_cursor.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>

namespace cairn::core {
namespace {

RC_GTEST_PROP(page_cursor, round_trips_and_has_a_fixed_length,
              (bool previous, std::int64_t position, std::int64_t other_id)) {
    const page_cursor c{previous ? page_cursor::kind::previous : page_cursor::kind::next, position, other_id};
    const auto text = encode_page_cursor(c);
    RC_ASSERT(text.size() == page_cursor_chars);
    RC_ASSERT(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
              std::string::npos);
    RC_ASSERT(decode_page_cursor(text) == std::optional<page_cursor>(c));
}

TEST(page_cursor, extremes_round_trip) {
    for (auto v : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{0},
                   std::numeric_limits<std::int64_t>::max()}) {
        const page_cursor c{page_cursor::kind::next, v, v};
        EXPECT_EQ(decode_page_cursor(encode_page_cursor(c)), c);
    }
}

TEST(page_cursor, malformed_text_is_refused) {
    const auto good = encode_page_cursor({page_cursor::kind::previous, 5, 7});
    EXPECT_EQ(good, "AQEAAAAAAAAABQAAAAAAAAAH");  // the documented layout, as Python's base64 writes it
    EXPECT_TRUE(decode_page_cursor(good));
    EXPECT_FALSE(decode_page_cursor(""));
    EXPECT_FALSE(decode_page_cursor(good.substr(1)));
    EXPECT_FALSE(decode_page_cursor(good + "A"));
    std::string bad_char = good;
    bad_char[3] = '=';
    EXPECT_FALSE(decode_page_cursor(bad_char));
    bad_char[3] = '+';
    EXPECT_FALSE(decode_page_cursor(bad_char));
    // Version byte 2 and kind byte 2 are refused.
    EXPECT_FALSE(decode_page_cursor("AgAAAAAAAAAABQAAAAAAAAAH"));
    EXPECT_FALSE(decode_page_cursor("AQIAAAAAAAAABQAAAAAAAAAH"));
    EXPECT_FALSE(decode_page_cursor("not-a-cursor-at-all-1234"));
}

}  // namespace
}  // namespace cairn::core
