// Stored document bodies (net/detail/body_json): one definition of what a body may hold serves the
// write side and the read side, so that whatever is acknowledged reads back, and a row that is not a
// body (corrupt, or written by something else) never renders as invalid JSON (issue 13).
#include "core/document.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/json_parse.hpp"

#include <gtest/gtest.h>

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
