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
