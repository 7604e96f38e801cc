// WebSocket request messages (net/detail/ws_message): what cannot be represented exactly is that
// message's 400, decided before anything large is allocated (issue 13).
#include "net/detail/ws_message.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

// Under AddressSanitizer (the ci preset), every malloc of the process reaches this hook, msgpack-c's
// zone chunks and simdjson's buffers included, which a replaced operator new would not see.
#if defined(__SANITIZE_ADDRESS__)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
#endif

namespace cairn::net::detail {
namespace {

using namespace std::string_literals;

TEST(ws_message, a_key_twice_in_one_object_or_map_is_refused) {
    EXPECT_FALSE(parse_message(R"({"id": 1, "id": 2, "path": "/livez"})", false).error.empty());
    EXPECT_FALSE(parse_message(R"({"id": 1, "path": "/x", "body": {"a": {"k": 1, "k": 2}}})", false).error.empty());
    EXPECT_TRUE(parse_message(R"({"id": 1, "path": "/x", "body": {"a": {"k": 1}, "b": {"k": 2}}})", false).error.empty());
    // msgpack {"id": 1, "id": 2, "path": "/x"}
    EXPECT_FALSE(parse_message("\x83\xa2id\x01\xa2id\x02\xa4path\xa2/x"s, true).error.empty());
    EXPECT_TRUE(parse_message("\x82\xa2id\x01\xa4path\xa2/x"s, true).error.empty());
}

// SUBSCRIBE works on the change feed with an id and a path only; UNSUBSCRIBE takes the id alone.
TEST(ws_message, subscribe_and_unsubscribe_take_only_what_they_need) {
    const auto sub = parse_message(R"({"id": "f", "method": "SUBSCRIBE", "path": "/v1/feed?from=3&model=edge"})", false);
    EXPECT_TRUE(sub.error.empty()) << sub.error;
    EXPECT_EQ(sub.kind, message_kind::subscribe);
    EXPECT_EQ(sub.path, "/v1/feed?from=3&model=edge");
    EXPECT_EQ(sub.id, "f");
    EXPECT_TRUE(parse_message(R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed"})", false).error.empty());
    const auto unsub = parse_message(R"({"id": "f", "method": "UNSUBSCRIBE"})", false);
    EXPECT_TRUE(unsub.error.empty()) << unsub.error;
    EXPECT_EQ(unsub.kind, message_kind::unsubscribe);
    EXPECT_EQ(parse_message(R"({"id": 1, "path": "/v1/feed"})", false).kind, message_kind::request);
    // msgpack {"id": 1, "method": "UNSUBSCRIBE"}
    EXPECT_EQ(parse_message("\x82\xa2id\x01\xa6method\xabUNSUBSCRIBE"s, true).kind, message_kind::unsubscribe);

    const std::vector<std::pair<std::string, std::string>> refused{
        {R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feeds"})", "path"},
        {R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/graphs/g/edges/1/2"})", "path"},
        {R"({"id": 1, "method": "SUBSCRIBE"})", "path"},
        {R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed", "body": {"a": 1}})", "body"},
        {R"({"id": 1, "method": "SUBSCRIBE", "path": "/v1/feed", "idempotency_key": "k"})", "idempotency_key"},
        {R"({"id": 1, "method": "UNSUBSCRIBE", "path": "/v1/feed"})", "path"},
        {R"({"id": 1, "method": "UNSUBSCRIBE", "body": null})", "body"},
        {R"({"id": 1, "method": "subscribe", "path": "/v1/feed"})", "method"},
        {R"({"id": 1, "method": "PATCH", "path": "/v1/feed"})", "method"},
    };
    for (const auto& [text, field] : refused) {
        const auto m = parse_message(text, false);
        EXPECT_FALSE(m.error.empty()) << text;
        EXPECT_EQ(m.error_field, field) << text << ": " << m.error;
    }
}

// Nesting: the message's object is the first of at most 32 levels, in either kind of frame.
TEST(ws_message, nesting_of_32_levels_is_read_and_33_refused) {
    const auto text = [](int levels) {  // the message and levels - 1 arrays in its body
        return R"({"id": 1, "path": "/x", "body": )" + std::string(static_cast<std::size_t>(levels - 1), '[') +
               std::string(static_cast<std::size_t>(levels - 1), ']') + "}";
    };
    EXPECT_TRUE(parse_message(text(32), false).error.empty()) << parse_message(text(32), false).error;
    EXPECT_FALSE(parse_message(text(33), false).error.empty());
    const auto binary = [](int levels) {  // msgpack {"id": 1, "path": "/x", "body": [[...[1]...]]}
        return "\x83\xa2id\x01\xa4path\xa2/x\xa4" "body"s + std::string(static_cast<std::size_t>(levels - 1), '\x91') + "\x01";
    };
    EXPECT_TRUE(parse_message(binary(32), true).error.empty()) << parse_message(binary(32), true).error;
    EXPECT_FALSE(parse_message(binary(33), true).error.empty());
}

// The body reaches the route as JSON text that means what was sent: a text frame's as it came
// (without the whitespace around it), a binary frame's written from its msgpack.
TEST(ws_message, the_body_is_handed_on_as_json_text) {
    auto m = parse_message(R"({"id": 7, "method": "POST", "path": "/v1/x", "body" :  { "a" : [1, 2.5, "\u00e9"], "b": null }  })", false);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_EQ(m.id, 7);
    EXPECT_EQ(m.method, boost::beast::http::verb::post);
    EXPECT_EQ(m.body, R"({ "a" : [1, 2.5, "\u00e9"], "b": null })");
    m = parse_message(R"({"body": [true, false], "path": "/x", "id": "s"})", false);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_EQ(m.body, "[true, false]");
    EXPECT_EQ(m.id, "s");
    m = parse_message(R"({"id": 1, "path": "/x", "body": 12 })", false);
    EXPECT_EQ(m.body, "12");
    m = parse_message(R"({"id": 1, "path": "/x", "body": null})", false);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_TRUE(m.body.empty());
    // msgpack {"id": -3, "path": "/x", "body": {"a": [1, -2, "é", nil, true]}}
    m = parse_message("\x83\xa2id\xfd\xa4path\xa2/x\xa4" "body\x81\xa1" "a\x95\x01\xfe\xa2\xc3\xa9\xc0\xc3"s, true);
    ASSERT_TRUE(m.error.empty()) << m.error;
    EXPECT_EQ(m.id, -3);
    EXPECT_EQ(m.body, R"({"a":[1,-2,"é",null,true]})");
}

// Every byte of a text frame is checked, also where nothing is taken from it: a member that is
// not used, a body, what follows the object.
TEST(ws_message, text_frames_are_checked_to_the_last_byte) {
    for (const std::string text : {
             R"({"id": 1, "path": "/x", "body": {"a": tru}})",
             R"({"id": 1, "path": "/x", "body": [1, 2,]})",
             R"({"id": 1, "path": "/x", "body": {"a": 01}})",
             R"({"id": 1, "path": "/x", "body": {"a": "\x"}})",
             R"({"id": 1, "path": "/x", "body": {"a": 1e400}})",
             R"({"id": 1, "path": "/x", "extra": [nul]})",
             R"({"id": 1, "path": "/x", "method": {"a": 1, "a": 2}})",
             R"({"id": 1, "path": "/x"} {})",
             R"({"id": 1, "path": "/x"} x)",
             R"({"id": 1, "path": "/x", "body": {"a": 1}])",
             R"({"id": 1, "path": "/x", "body": {"a": [1}]})",
             R"({"id": 1x, "path": "/x"})",
             R"({"id": 1, "path": "/x",})",
             "{\"id\": 1, \"path\": \"/x\x01\"}",
         }) {
        const auto m = parse_message(text, false);
        EXPECT_FALSE(m.error.empty()) << text;
        EXPECT_TRUE(m.id.is_null()) << text << ": a frame that is not JSON has no id to answer with";
    }
}

// Which rule answers first: a frame that is not one object within the limits is refused as a
// whole before its id is read; then the id; then the members in their order of the keys.
TEST(ws_message, the_first_rule_broken_gives_the_answer) {
    auto m = parse_message(R"({"id": 1.5, "path": "/x", "body": {"k": 1, "k": 2}})", false);
    EXPECT_TRUE(m.error_field.empty()) << m.error;
    m = parse_message(R"({"id": 1.5, "zeta": 1, "alpha": 2, "path": "/x"})", false);
    EXPECT_EQ(m.error_field, "id");
    m = parse_message(R"({"id": 1, "zeta": 1, "alpha": 2, "path": 3})", false);
    EXPECT_EQ(m.error_field, "alpha");
    EXPECT_EQ(m.id, 1);
    m = parse_message(R"({"id": 2, "method": 4, "path": 3})", false);
    EXPECT_EQ(m.error_field, "method");
    m = parse_message(R"({"id": 2, "path": "/x", "idempotency_key": 5})", false);
    EXPECT_EQ(m.error_field, "idempotency_key");
    // msgpack {"id": 1, "path": "/x", "zz": "\xff"}: a string that is not UTF-8 comes before the unknown member
    m = parse_message("\x83\xa2id\x01\xa4path\xa2/x\xa2zz\xa1\xff"s, true);
    EXPECT_FALSE(m.error.empty());
    EXPECT_TRUE(m.error_field.empty()) << m.error;
    EXPECT_EQ(m.id, 1);
}

// A binary frame's body must have a JSON form: bin, ext, NaN and infinities are refused by name.
TEST(ws_message, binary_bodies_without_a_json_form_are_refused) {
    const std::string head = "\x83\xa2id\x01\xa4path\xa2/x\xa4" "body"s;
    for (const std::string& body : {"\xc4\x02\x01\x02"s, "\xd4\x01\x02"s, "\xcb\x7f\xf8\0\0\0\0\0\0"s, "\x81\xa1k\xcb\x7f\xf0\0\0\0\0\0\0"s}) {
        const auto m = parse_message(head + body, true);
        EXPECT_EQ(m.error_field, "body") << m.error;
    }
    EXPECT_FALSE(parse_message("\x83\xa2id\x01\xa4path\xa2/x\xa4" "body\x81\x01\x02"s, true).error.empty()) << "a key that is not a string";
}

// A header that claims more elements than the frame has bytes is refused as it is read: these
// frames of 5 bytes would otherwise make msgpack-c reserve room for millions of objects.
TEST(ws_message, claimed_sizes_beyond_the_frame_are_refused) {
    for (const std::string& frame : {"\xdd\x00\x10\x00\x00"s, "\xdf\x00\x10\x00\x00"s, "\xdc\xff\xff"s,
                                     "\x81\xa2id\xdb\xff\xff\xff\xff"s, "\x81\xa2id\xc6\xff\xff\xff\xff"s}) {
        const auto m = parse_message(frame, true);
        EXPECT_FALSE(m.error.empty());
    }
}

#if defined(__SANITIZE_ADDRESS__)
// The largest single allocation of this thread while counting is on.
thread_local bool counting = false;
thread_local std::size_t largest = 0;
void on_malloc(const volatile void*, std::size_t n) {
    if (counting) largest = std::max(largest, n);
}
void on_free(const volatile void*) {}

std::size_t largest_allocation_of(const std::string& frame, bool binary) {
    static const bool installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
    EXPECT_TRUE(installed);
    largest = 0;
    counting = true;
    const auto m = parse_message(frame, binary);
    counting = false;
    EXPECT_FALSE(m.error.empty()) << "a bomb was accepted";
    return largest;
}
#endif

// Allocation bombs cost nothing: messages whose headers claim billions of elements or bytes, or
// that nest far past the limit, are refused before anything of that size is allocated. Counted
// with a malloc hook, so that an allocation made for the claim (a reserve, a zone chunk, a string)
// fails the test whatever library makes it.
TEST(ws_message, bombs_are_refused_without_allocating_what_they_claim) {
#if defined(__SANITIZE_ADDRESS__)
    constexpr std::size_t allowed = 64 * 1024;  // a few times the frame, nowhere near the claims
    const std::string id = "\x83\xa2id\x01\xa4path\xa2/x\xa4" "body"s;
    const std::string pad(4000, 'x');
    const std::vector<std::pair<std::string, std::string>> bombs{
        {"array32 claiming 4 billion elements", id + "\xdd\xff\xff\xff\xff" + pad},
        {"map32 claiming 4 billion pairs", id + "\xdf\xff\xff\xff\xff" + pad},
        {"str32 claiming 4 GB", id + "\xdb\xff\xff\xff\xff" + pad},
        {"bin32 claiming 4 GB", id + "\xc6\xff\xff\xff\xff" + pad},
        {"array16 of array16 claiming 65535 x 65535", id + "\xdc\xff\xff" + std::string(2000, '\xdc')},
        {"nested arrays 4,000 deep", id + std::string(4000, '\x91') + "\x01"},
    };
    for (const auto& [what, frame] : bombs) EXPECT_LE(largest_allocation_of(frame, true), allowed) << what;
    const std::string deep_json = R"({"id": 1, "path": "/x", "body": )" + std::string(4096, '[') + std::string(4096, ']') + "}";
    EXPECT_LE(largest_allocation_of(deep_json, false), allowed) << "JSON nested 4,096 deep";
    // The hook sees allocations: a message that is accepted allocates (so a broken hook fails here).
    largest = 0;
    counting = true;
    const auto ok = parse_message(R"({"id": 1, "path": "/x", "body": {"k": ")" + pad + R"("}})", false);
    counting = false;
    EXPECT_TRUE(ok.error.empty()) << ok.error;
    EXPECT_GE(largest, pad.size());
#else
    GTEST_SKIP() << "needs AddressSanitizer's malloc hook (the ci preset)";
#endif
}

}  // namespace
}  // namespace cairn::net::detail
