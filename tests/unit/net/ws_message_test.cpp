// WebSocket request messages (net/detail/ws_message): what cannot be represented exactly is that
// message's 400, decided before anything large is allocated (issue 13).
#include "net/detail/ws_message.hpp"

#include <gtest/gtest.h>

#include <string>

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

// A header that claims more elements than the frame has bytes is refused as it is read: these
// frames of 5 bytes would otherwise make msgpack-c reserve room for millions of objects.
TEST(ws_message, claimed_sizes_beyond_the_frame_are_refused) {
    for (const std::string& frame : {"\xdd\x00\x10\x00\x00"s, "\xdf\x00\x10\x00\x00"s, "\xdc\xff\xff"s,
                                     "\x81\xa2id\xdb\xff\xff\xff\xff"s, "\x81\xa2id\xc6\xff\xff\xff\xff"s}) {
        const auto m = parse_message(frame, true);
        EXPECT_FALSE(m.error.empty());
    }
}

}  // namespace
}  // namespace cairn::net::detail
