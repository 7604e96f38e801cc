// Stored document bodies (net/detail/body_json): one definition of what a body may hold serves the
// write side and the read side, so that whatever is acknowledged reads back, and a row that is not a
// body (corrupt, or written by something else) never renders as invalid JSON (issue 13).
#include "core/document.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/json_parse.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <msgpack.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <variant>

namespace cairn::net::detail {
namespace {

std::string array_body(std::size_t n) {
    std::string a = R"({"a": [)";
    for (std::size_t i = 0; i < n; ++i) a += i ? ",0" : "0";
    return a + "]}";
}

std::string stored_of_msgpack(const std::string& packed) { return core::encode_body(packed, 1 << 20); }

TEST(body_json, the_largest_array_a_write_accepts_reads_back_and_one_more_is_refused) {
    simdjson::dom::element root;
    const std::string ok_text = array_body(stored_body_elements_max);
    ASSERT_FALSE(parse_json(ok_text, root));
    auto stored = stored_body_of(root, "body", 512);
    ASSERT_TRUE(std::holds_alternative<std::string>(stored)) << std::get<input_error>(stored).detail;
    auto back = stored_body_json(std::get<std::string>(stored));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->size(), ok_text.size() - 1);  // the same array, without the space after the colon

    const std::string big_text = array_body(stored_body_elements_max + 1);
    ASSERT_FALSE(parse_json(big_text, root));
    auto refused = stored_body_of(root, "body", 512);
    ASSERT_TRUE(std::holds_alternative<input_error>(refused));
    EXPECT_EQ(std::get<input_error>(refused).field, "body");
    EXPECT_NE(std::get<input_error>(refused).detail.find("65537 elements"), std::string::npos);
}

// A random JSON value at most `depth` levels deep: what clients send (unique keys, finite numbers,
// any UTF-8 text), as nlohmann builds it.
nlohmann::json random_json(int depth) {
    const int kind = *rc::gen::inRange(0, depth > 0 ? 8 : 6);
    switch (kind) {
        case 0: return nullptr;
        case 1: return *rc::gen::arbitrary<bool>();
        case 2: return *rc::gen::arbitrary<std::int64_t>();
        case 3: return *rc::gen::arbitrary<std::uint64_t>();
        case 4: {
            const double d = *rc::gen::arbitrary<double>();
            return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(0.5);
        }
        case 5: {
            // Text from a small alphabet with escapes and multi-byte characters.
            const auto parts = *rc::gen::container<std::vector<std::string>>(
                rc::gen::element<std::string>("a", "Z", "0", " ", "\"", "\\", "\n", "\x01", "\xc3\xa9", "\xe2\x82\xac",
                                              "\xf0\x9f\x98\x80"));
            std::string out;
            for (const auto& p : parts) out += p;
            return out;
        }
        case 6: {
            nlohmann::json a = nlohmann::json::array();
            const auto n = *rc::gen::inRange(0, 5);
            for (int i = 0; i < n; ++i) a.push_back(random_json(depth - 1));
            return a;
        }
        default: {
            nlohmann::json o = nlohmann::json::object();
            const auto n = *rc::gen::inRange(0, 5);
            for (int i = 0; i < n; ++i) o[*rc::gen::element<std::string>("a", "b", "ab", "\xc3\xa9", "", "k k")] = random_json(depth - 1);
            return o;
        }
    }
}

// The stored form is canonical: a body read back and written again is the same bytes, and reads
// back as the same JSON value (keys sorted, numbers exact).
RC_GTEST_PROP(body_json, stored_bodies_round_trip_to_the_same_bytes, ()) {
    nlohmann::json body = nlohmann::json::object();
    const auto n = *rc::gen::inRange(0, 6);
    for (int i = 0; i < n; ++i) body[*rc::gen::element<std::string>("x", "y", "name", "\xc3\xa9t\xc3\xa9")] = random_json(4);
    const std::string text = body.dump();
    simdjson::dom::element root;
    RC_ASSERT(!parse_json(text, root));
    const auto compress_min = *rc::gen::element<std::size_t>(16, 512, 1 << 20);  // compressed or not
    auto stored = stored_body_of(root, "body", compress_min);
    RC_ASSERT(std::holds_alternative<std::string>(stored));
    const auto back = stored_body_json(std::get<std::string>(stored));
    RC_ASSERT(back.has_value());
    RC_ASSERT(nlohmann::json::parse(*back) == body);
    simdjson::dom::element again;
    RC_ASSERT(!parse_json(*back, again));
    auto restored = stored_body_of(again, "body", compress_min);
    RC_ASSERT(std::holds_alternative<std::string>(restored));
    RC_ASSERT(std::get<std::string>(restored) == std::get<std::string>(stored));
}

// Any change of a stored body's bytes is refused or reads back as a JSON object (never as invalid
// JSON, never a crash).
RC_GTEST_PROP(body_json, a_changed_stored_body_is_refused_or_valid_json, ()) {
    nlohmann::json body = {{"k", random_json(3)}, {"n", *rc::gen::arbitrary<std::int64_t>()}};
    simdjson::dom::element root;
    const std::string text = body.dump();
    RC_ASSERT(!parse_json(text, root));
    auto stored = stored_body_of(root, "body", *rc::gen::element<std::size_t>(16, 1 << 20));
    RC_ASSERT(std::holds_alternative<std::string>(stored));
    std::string bytes = std::get<std::string>(stored);
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[at] = *rc::gen::arbitrary<char>();
    if (auto back = stored_body_json(bytes)) {
        const auto j = nlohmann::json::parse(*back, nullptr, false);
        RC_ASSERT(!j.is_discarded());
        RC_ASSERT(j.is_object());
    }
}

// Found by body_json_fuzz (corpus/body_json/regression-two-to-the-64): msgpack-c packs an
// integral double as an integer and converted 2^64 to uint64 (undefined behaviour, UBSan). The
// edges of the integer ranges are stored exactly and read back as the numbers they are.
TEST(body_json, doubles_at_the_edges_of_the_integer_ranges_store_exactly) {
    const std::pair<std::string, std::string> cases[] = {
        {R"({"a": 18446744073709551616e0})", R"({"a":1.8446744073709552e+19})"},  // 2^64: a float
        {R"({"a": 18446744073709551615.0})", R"({"a":1.8446744073709552e+19})"},  // rounds to 2^64
        {R"({"a": 1.8446744073709550e19})", R"({"a":18446744073709549568})"},     // below 2^64: an integer
        {R"({"a": -9223372036854775808.0})", R"({"a":-9223372036854775808})"},    // -2^63: an integer
        {R"({"a": -9223372036854777856.0})", R"({"a":-9.223372036854778e+18})"},  // below -2^63: a float
        {R"({"a": 2.5})", R"({"a":2.5})"},
    };
    for (const auto& [text, expected] : cases) {
        simdjson::dom::element root;
        ASSERT_FALSE(parse_json(text, root)) << text;
        auto stored = stored_body_of(root, "body", 1 << 20);
        ASSERT_TRUE(std::holds_alternative<std::string>(stored)) << text;
        EXPECT_EQ(stored_body_json(std::get<std::string>(stored)), expected) << text;
    }
}

// A key twice in one object (at any depth) is refused, naming it: which one a reader keeps is
// its guess, not the client's (issue 13). The same key in two objects is fine.
TEST(body_json, a_key_twice_in_one_object_is_refused) {
    simdjson::dom::element root;
    for (const std::string text : {R"({"a": 1, "a": 2})", R"({"x": {"b": [1, {"k": 1, "k": 1}]}})"}) {
        ASSERT_FALSE(parse_json(text, root));
        auto r = stored_body_of(root, "body", 512);
        ASSERT_TRUE(std::holds_alternative<input_error>(r)) << text;
        EXPECT_NE(std::get<input_error>(r).detail.find("twice"), std::string::npos) << std::get<input_error>(r).detail;
    }
    ASSERT_FALSE(parse_json(R"({"a": {"k": 1}, "b": {"k": 2}})", root));
    EXPECT_TRUE(std::holds_alternative<std::string>(stored_body_of(root, "body", 512)));
}

// Found by body_json_fuzz (tests/fuzz/corpus/body_json/regression-nan-float32): a float that is not
// finite rendered as "nan", which is not JSON.
TEST(body_json, a_row_holding_a_float_that_is_not_finite_is_not_a_body) {
    for (const double v : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()}) {
        std::stringstream packed;
        msgpack::packer<std::stringstream> pk(packed);
        pk.pack_map(1);
        pk.pack(std::string("x"));
        pk.pack(v);
        EXPECT_FALSE(stored_body_json(stored_of_msgpack(packed.str())).has_value()) << v;
    }
    std::stringstream packed;
    msgpack::packer<std::stringstream> pk(packed);
    pk.pack_map(1);
    pk.pack(std::string("x"));
    pk.pack(2.5);
    EXPECT_EQ(stored_body_json(stored_of_msgpack(packed.str())), std::optional<std::string>(R"({"x":2.5})"));
}

}  // namespace
}  // namespace cairn::net::detail
