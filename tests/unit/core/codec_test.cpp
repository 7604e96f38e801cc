#include "core/codec.hpp"
#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/entities.hpp"
#include "core/indexes.hpp"
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
// Changes one byte of bytes, cuts one or inserts one, then checks the property above. Called from
// a property's body (it draws with operator*).
void mutate_and_check(std::string bytes) {
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

RC_GTEST_PROP(codec, mutated_records_fail_cleanly_or_decode_to_a_stable_op, ()) {
    op o = *test::gen_edge_or_node_op(1'000'000, 1'000'000);
    o.op_id = *rc::gen::arbitrary<std::uint64_t>();
    mutate_and_check(encode_op(o));
}

// ---- the document models and counters (issue 13: a round trip for every codec) -----------------

// These draw with operator*, so they are called from a property's body only.
std::string any_bytes(std::size_t n) { return *rc::gen::container<std::string>(n, rc::gen::arbitrary<char>()); }

std::string any_name() {
    std::string s(1, 'a');
    const int n = *rc::gen::inRange(1, 20);
    for (int i = 1; i < n; ++i) s += "abcz09_"[*rc::gen::inRange(0, 7)];
    return s;
}

std::vector<index_entry> any_entries(int min) {
    std::vector<index_entry> out;
    const int n = *rc::gen::inRange(min, 4);
    for (int i = 0; i < n; ++i) {
        index_entry e;
        e.index = any_name();
        const auto values = *rc::gen::inRange<std::size_t>(1, index_properties_max + 1);
        for (std::size_t v = 0; v < values; ++v) {
            if (*rc::gen::arbitrary<bool>()) {
                e.values.emplace_back(*rc::gen::arbitrary<std::int64_t>());
            } else {
                e.values.emplace_back(any_bytes(*rc::gen::inRange<std::size_t>(0, 40)));
            }
        }
        e.shard_hash = *rc::gen::arbitrary<std::uint64_t>();
        out.push_back(std::move(e));
    }
    return out;
}

op any_document_counter_or_index_op() {
    op o;
    o.ts = *rc::gen::arbitrary<std::uint64_t>();
    o.op_id = *rc::gen::arbitrary<std::uint64_t>();
    const int which = *rc::gen::inRange(0, 4);
    if (which == 0) {
        entity_op e;
        e.entity_kind = any_name();
        e.id = any_bytes(16);
        e.deleted = *rc::gen::arbitrary<bool>();
        if (!e.deleted) {
            e.body = any_bytes(*rc::gen::inRange<std::size_t>(1, 300));
            e.entries = any_entries(0);
        }
        o.body = std::move(e);
    } else if (which == 1) {
        cell_op c;
        c.table = any_name();
        c.row_key = any_bytes(16);
        c.column = *rc::gen::element<std::string>("col", "A.b-c_9", "x");
        c.ref_key = *rc::gen::arbitrary<std::int64_t>();
        c.body = any_bytes(*rc::gen::inRange<std::size_t>(1, 300));
        if (*rc::gen::arbitrary<bool>()) c.entries = any_entries(1);
        o.body = std::move(c);
    } else if (which == 3) {
        // An index definition (of an entity kind or a cell column), or its drop.
        index_def_op d;
        d.name = any_name();
        d.dropped = *rc::gen::arbitrary<bool>();
        if (!d.dropped) {
            index_def def;
            def.name = d.name;
            def.kind = any_name();
            if (*rc::gen::arbitrary<bool>()) def.column = "col";
            const int n = *rc::gen::inRange(1, static_cast<int>(index_properties_max) + 1);
            for (int i = 0; i < n; ++i) {
                index_property prop;
                prop.name = "p" + std::to_string(i);
                prop.type = *rc::gen::element(index_value_type::id, index_value_type::integer, index_value_type::string,
                                              index_value_type::boolean);
                if (prop.type == index_value_type::string) prop.length_max = *rc::gen::inRange<std::size_t>(1, 256);
                def.properties.push_back(std::move(prop));
            }
            def.shard_on = *rc::gen::inRange<std::size_t>(0, def.properties.size());
            d.definition = encode_index_def(def);
        }
        o.body = std::move(d);
    } else {
        counter_op c;
        c.metric = any_name();
        const int dims = *rc::gen::inRange(0, 4);
        for (int i = 0; i < dims; ++i) c.dimensions.push_back(any_bytes(*rc::gen::inRange<std::size_t>(0, 30)));
        c.time_ms = *rc::gen::inRange<std::int64_t>(0, INT64_MAX);
        c.delta = *rc::gen::arbitrary<std::int64_t>();
        c.shard_hash = *rc::gen::arbitrary<std::uint64_t>();
        o.body = std::move(c);
    }
    return o;
}

RC_GTEST_PROP(codec, entity_cell_counter_and_index_ops_round_trip, ()) {
    const op o = any_document_counter_or_index_op();
    auto back = decode_op(encode_op(o));
    RC_ASSERT(back.has_value());
    RC_ASSERT(back.value() == o);
}

RC_GTEST_PROP(codec, mutated_entity_cell_counter_and_index_records_fail_cleanly_or_decode_to_a_stable_op, ()) {
    mutate_and_check(encode_op(any_document_counter_or_index_op()));
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
    bytes.back() = 4;
    EXPECT_EQ(decode_op(bytes).error(), errc::journal_corrupt);
}

TEST(codec, a_node_op_of_one_direction_carries_its_scope_and_one_of_both_is_the_old_record) {
    op both;
    both.ts = 5;
    both.body = node_op{"follows", 7, node_action::negate};
    op forward = both;
    std::get<node_op>(forward.body).scope = node_scope::forward;
    const auto old_bytes = encode_op(both);
    const auto new_bytes = encode_op(forward);
    EXPECT_EQ(new_bytes.size(), old_bytes.size() + 1);  // one more field, only when needed
    ASSERT_TRUE(decode_op(old_bytes).has_value());
    EXPECT_EQ(decode_op(old_bytes).value(), both);
    ASSERT_TRUE(decode_op(new_bytes).has_value());
    EXPECT_EQ(decode_op(new_bytes).value(), forward);
    // A scope written as "both" in 4 fields, or an unknown scope, is not a record cairn writes.
    for (const int bad : {0, 3, 200}) {
        auto bytes = new_bytes;
        ASSERT_EQ(static_cast<unsigned char>(bytes.back()), 1);
        bytes.back() = static_cast<char>(bad);
        EXPECT_FALSE(decode_op(bytes).has_value()) << bad;
    }
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
