#include "apps/bench/ws_conn.hpp"

#include <gtest/gtest.h>

namespace cairn::bench {
namespace {

TEST(ws_answer_head, reads_id_and_status_of_cairns_answers) {
    auto h = parse_ws_answer_head(R"({"id":42,"status":202,"body":{"seq":7}})");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->id, 42u);
    EXPECT_EQ(h->status, 202u);
    h = parse_ws_answer_head(R"({"id":18446744073709551615,"status":429,"body":null,"retry_after":"1"})");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->id, 18446744073709551615u);
    EXPECT_EQ(h->status, 429u);
}

TEST(ws_answer_head, refuses_what_is_not_an_answer) {
    EXPECT_FALSE(parse_ws_answer_head(""));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":"text","status":200})"));  // the bench sends numeric ids only
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":1})"));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":1,"status":1000})"));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":null,"status":400})"));
}

}  // namespace
}  // namespace cairn::bench
