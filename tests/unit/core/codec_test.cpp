#include "core/codec.hpp"
#include "tests/support/edge_gen.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace cairn::core {
namespace {

RC_GTEST_PROP(codec, edge_op_round_trips, ()) {
    op o = *test::gen_edge_op(1'000'000, 1'000'000);
    o.op_id = *rc::gen::arbitrary<std::uint64_t>();
    auto& e = std::get<edge_op>(o.body);
    e.source_id = *rc::gen::inRange<std::int64_t>(0, INT64_MAX);
    e.position = *rc::gen::arbitrary<std::int64_t>();
    const auto bytes = encode_op(o);
    auto back = decode_op(bytes);
    RC_ASSERT(back.has_value());
    RC_ASSERT(back.value() == o);
}

RC_GTEST_PROP(codec, truncated_or_garbled_records_are_errors_not_crashes, ()) {
    op o = *test::gen_edge_op();
    auto bytes = encode_op(o);
    const auto cut = *rc::gen::inRange<std::size_t>(0, bytes.size());
    auto r = decode_op(std::span(bytes.data(), cut));
    RC_ASSERT(!r.has_value());
    RC_ASSERT(r.error() == errc::journal_corrupt);
    const auto garbage = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
    (void)decode_op(garbage);  // must not crash or throw, whatever it returns
}

// A record changed in one byte, cut or grown decodes to journal_corrupt, or to an op whose own
// encoding decodes to the same op (msgpack may spell one number in several widths, so the bytes
// need not match; the op is what is applied).
RC_GTEST_PROP(codec, mutated_records_fail_cleanly_or_decode_to_a_stable_op, ()) {
    op o = *test::gen_edge_or_node_op(1'000'000, 1'000'000);
    o.op_id = *rc::gen::arbitrary<std::uint64_t>();
    std::string bytes = encode_op(o);
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    switch (*rc::gen::inRange(0, 3)) {
        case 0: bytes[at] = *rc::gen::arbitrary<char>(); break;
        case 1: bytes.erase(at, 1); break;
        default: bytes.insert(at, 1, *rc::gen::arbitrary<char>()); break;
    }
    auto back = decode_op(bytes);
    if (!back) {
        RC_ASSERT(back.error() == errc::journal_corrupt);
        return;
    }
    auto again = decode_op(encode_op(back.value()));
    RC_ASSERT(again.has_value());
    RC_ASSERT(again.value() == back.value());
}

RC_GTEST_PROP(codec, node_op_round_trips, ()) {
    op o = *test::gen_node_op(1'000'000, 1'000'000);
    o.op_id = *rc::gen::arbitrary<std::uint64_t>();
    const auto bytes = encode_op(o);
    auto back = decode_op(bytes);
    RC_ASSERT(back.has_value());
    RC_ASSERT(back.value() == o);
    RC_ASSERT(back.value().kind() == model::node);
}

TEST(codec, rejects_a_node_op_with_an_unknown_action) {
    op o;
    o.body = node_op{"follows", 7, node_action::unarchive};
    auto bytes = encode_op(o);
    ASSERT_EQ(static_cast<unsigned char>(bytes.back()), 2);
    bytes.back() = 3;
    EXPECT_EQ(decode_op(bytes).error(), errc::journal_corrupt);
}

TEST(codec, rejects_an_unknown_version) {
    op o;
    o.body = edge_op{"follows", 1, 2, edge_state::normal, 3, true};
    auto bytes = encode_op(o);
    ASSERT_EQ(static_cast<unsigned char>(bytes[1]), op_format_version);
    bytes[1] = 9;
    EXPECT_EQ(decode_op(bytes).error(), errc::journal_corrupt);
}

TEST(codec, graph_names) {
    EXPECT_TRUE(valid_graph_name("follows_2"));
    EXPECT_FALSE(valid_graph_name(""));
    EXPECT_FALSE(valid_graph_name("has space"));
    EXPECT_FALSE(valid_graph_name("quote'"));
    EXPECT_FALSE(valid_graph_name(std::string(33, 'a')));
    EXPECT_TRUE(valid_graph_name(std::string(32, 'a')));
}

}  // namespace
}  // namespace cairn::core
