// The index query's page cursor (core/index_cursor.hpp): round trips for every property type, is
// bound to its query's scope, and any changed text is refused or decodes to a cursor that spells
// the same text (issue 13: a round trip for every codec).
#include "core/index_cursor.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

// An index of 1..4 properties of random types, and a cursor of it. Draws with operator*, so it is
// called from a property's body only.
std::pair<index_def, index_cursor> any_def_and_cursor() {
    index_def def;
    def.name = "by_test";
    def.kind = "user";
    index_cursor c;
    const auto n = *rc::gen::inRange<std::size_t>(1, index_properties_max + 1);
    for (std::size_t i = 0; i < n; ++i) {
        index_property p;
        p.name = "p" + std::to_string(i);
        p.type = *rc::gen::element(index_value_type::id, index_value_type::integer, index_value_type::string,
                                   index_value_type::boolean);
        p.length_max = 255;
        switch (p.type) {
            case index_value_type::integer: c.values.emplace_back(*rc::gen::arbitrary<std::int64_t>()); break;
            case index_value_type::boolean: c.values.emplace_back(std::int64_t{*rc::gen::arbitrary<bool>()}); break;
            case index_value_type::id:
                c.values.emplace_back(*rc::gen::container<std::string>(16, rc::gen::arbitrary<char>()));
                break;
            case index_value_type::string:
                c.values.emplace_back(*rc::gen::resize(255, rc::gen::container<std::string>(rc::gen::arbitrary<char>())));
                break;
        }
        def.properties.push_back(std::move(p));
    }
    c.object_id = *rc::gen::container<std::string>(16, rc::gen::arbitrary<char>());
    return {def, c};
}

RC_GTEST_PROP(index_cursor, round_trips_for_its_scope_only, (std::string scope, std::string other)) {
    const auto [def, c] = any_def_and_cursor();
    const auto text = encode_index_cursor(c, scope);
    RC_ASSERT(decode_index_cursor(def, text, scope) == std::optional<index_cursor>(c));
    RC_PRE(scope != other);
    RC_ASSERT(!decode_index_cursor(def, text, other));
}

RC_GTEST_PROP(index_cursor, changed_text_is_refused_or_spells_the_same_cursor, (std::string scope)) {
    const auto [def, c] = any_def_and_cursor();
    std::string text = encode_index_cursor(c, scope);
    const auto at = *rc::gen::inRange<std::size_t>(0, text.size());
    switch (*rc::gen::inRange(0, 3)) {
        case 0: text[at] = *rc::gen::element('0', '7', 'a', 'f', 'F', 'g', '"'); break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, *rc::gen::arbitrary<char>()); break;
    }
    if (auto back = decode_index_cursor(def, text, scope)) RC_ASSERT(encode_index_cursor(*back, scope) == text);
}

TEST(index_cursor, a_cursor_of_another_shape_or_spelling_is_refused) {
    index_def two;
    two.properties = {index_property{"a", index_value_type::integer, 0}, index_property{"b", index_value_type::string, 8}};
    index_def one;
    one.properties = {index_property{"a", index_value_type::integer, 0}};
    const index_cursor c{{std::int64_t{-5}, std::string("x")}, std::string(16, '\x01')};
    const auto text = encode_index_cursor(c, "q");
    ASSERT_EQ(decode_index_cursor(two, text, "q"), c);
    EXPECT_FALSE(decode_index_cursor(one, text, "q"));  // one property, two values
    std::string upper = text;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_FALSE(decode_index_cursor(two, upper, "q"));
    EXPECT_FALSE(decode_index_cursor(two, "", "q"));
    EXPECT_FALSE(decode_index_cursor(two, std::string(index_cursor_chars_max + 2, '0'), "q"));
    // A string where the definition wants an integer.
    const auto swapped = encode_index_cursor({{std::string("5"), std::string("x")}, std::string(16, '\x01')}, "q");
    EXPECT_FALSE(decode_index_cursor(two, swapped, "q"));
}

}  // namespace
}  // namespace cairn::core
