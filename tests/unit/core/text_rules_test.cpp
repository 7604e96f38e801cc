#include "core/text_rules.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <string>

namespace cairn::core {
namespace {

RC_GTEST_PROP(text_rules, every_int64_round_trips_through_its_canonical_spelling, (std::int64_t v)) {
    RC_ASSERT(parse_decimal_int64(std::to_string(v)) == std::optional<std::int64_t>(v));
}

RC_GTEST_PROP(text_rules, every_uint64_round_trips_through_its_canonical_spelling, (std::uint64_t v)) {
    RC_ASSERT(parse_decimal_uint64(std::to_string(v)) == std::optional<std::uint64_t>(v));
}

// Any text that parses is the canonical spelling of what it parses to: one number, one spelling.
RC_GTEST_PROP(text_rules, what_parses_is_canonical, (std::string text)) {
    if (auto v = parse_decimal_int64(text)) RC_ASSERT(std::to_string(*v) == text);
    if (auto v = parse_decimal_uint64(text)) RC_ASSERT(std::to_string(*v) == text);
}

TEST(text_rules, aliases_and_out_of_range_numbers_are_refused) {
    for (std::string_view t : {"", "-", "+5", "05", "00", "-0", "-05", " 5", "5 ", "5x", "0x10", "1e3", "--1",
                               "9223372036854775808", "-9223372036854775809"}) {
        EXPECT_FALSE(parse_decimal_int64(t)) << t;
    }
    for (std::string_view t : {"", "-1", "-0", "+1", "01", "18446744073709551616"}) {
        EXPECT_FALSE(parse_decimal_uint64(t)) << t;
    }
    EXPECT_EQ(parse_decimal_int64("0"), 0);
    EXPECT_EQ(parse_decimal_int64("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(parse_decimal_uint64("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
}

TEST(text_rules, control_characters_are_found_wherever_they_are) {
    EXPECT_FALSE(has_control_chars("plain key-1 with spaces ~"));
    EXPECT_FALSE(has_control_chars("caf\xc3\xa9"));  // UTF-8 is not control
    for (char c : {'\0', '\x01', '\t', '\n', '\r', '\x1f', '\x7f'}) {
        std::string s = "ab";
        s.insert(s.begin() + 1, c);
        EXPECT_TRUE(has_control_chars(s)) << static_cast<int>(c);
    }
}

}  // namespace
}  // namespace cairn::core
