// The journal's own record encodings (error tasks, dead letters, idempotency entries, edits) and key
// layouts: round trips, bounds, and garbage that must decode to errc::journal_corrupt.
#include "journal/detail/record_codec.hpp"

#include "journal/detail/record_format.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace cairn::journal::detail {
namespace {

rc::Gen<error_task> gen_task() {
    return rc::gen::build<error_task>(
        rc::gen::set(&error_task::shard), rc::gen::set(&error_task::seq), rc::gen::set(&error_task::due_ms),
        rc::gen::set(&error_task::attempts),
        rc::gen::set(&error_task::errors,
                     rc::gen::container<std::vector<std::string>>(
                         rc::gen::resize(16, rc::gen::container<std::string>(rc::gen::arbitrary<char>())))),
        rc::gen::set(&error_task::op_bytes, rc::gen::container<std::string>(rc::gen::arbitrary<char>())),
        rc::gen::set(&error_task::first_failed_ms));
}

RC_GTEST_PROP(record_codec, task_round_trips, ()) {
    auto t = *gen_task();
    bound_history(t);
    RC_ASSERT(decode_task(encode_task(t)).value() == t);
}

RC_GTEST_PROP(record_codec, dead_letter_round_trips, (std::uint64_t died)) {
    auto t = *gen_task();
    bound_history(t);
    const dead_letter d{t, died};
    RC_ASSERT(decode_dead(encode_dead(d)).value() == d);
    // A dead letter is not a task and the other way round.
    RC_ASSERT(!decode_task(encode_dead(d)));
    RC_ASSERT(!decode_dead(encode_task(t)));
}

RC_GTEST_PROP(record_codec, idem_entry_round_trips, (std::uint64_t first, std::uint64_t wall)) {
    const auto n = *rc::gen::inRange<std::size_t>(1, 50);
    appended a;
    a.first_seq = first % (std::uint64_t{1} << 53);
    a.last_seq = a.first_seq + n - 1;
    a.ts = *rc::gen::container<std::vector<std::uint64_t>>(n, rc::gen::arbitrary<std::uint64_t>());
    a.op_ids = *rc::gen::container<std::vector<std::uint64_t>>(n, rc::gen::arbitrary<std::uint64_t>());
    auto e = decode_idem(encode_idem(a, wall));
    RC_ASSERT(static_cast<bool>(e));
    RC_ASSERT(e.value().result == a);
    RC_ASSERT(e.value().wall_ms == wall);
}

RC_GTEST_PROP(record_codec, edit_round_trips, (std::uint32_t shard, std::uint64_t seq, std::uint64_t edited, std::uint64_t moved)) {
    const op_edit e{shard, seq, edited, moved, *rc::gen::container<std::string>(rc::gen::arbitrary<char>())};
    RC_ASSERT(decode_edit(encode_edit(e)).value() == e);
    RC_ASSERT(!decode_dead(encode_edit(e)));
    RC_ASSERT(!decode_task(encode_edit(e)));
}

RC_GTEST_PROP(record_codec, late_round_trips, (std::uint32_t shard, std::uint64_t number, std::uint64_t seq, std::uint64_t at)) {
    const late_apply l{shard, number, seq, at, *rc::gen::container<std::string>(rc::gen::arbitrary<char>())};
    RC_ASSERT(decode_late(encode_late(l)).value() == l);
    RC_ASSERT(!decode_dead(encode_late(l)));
    RC_ASSERT(!decode_task(encode_late(l)));
}

// A record changed in one byte, cut, or grown decodes to journal_corrupt, or to a value that is
// stable: its encoding decodes to itself again (msgpack may spell one number in several widths,
// so the bytes themselves need not be the same; the value is what the journal trusts).
RC_GTEST_PROP(record_codec, mutated_records_fail_cleanly_or_decode_to_a_stable_value, ()) {
    auto t = *gen_task();
    bound_history(t);
    std::string bytes =
        *rc::gen::element(encode_task(t), encode_dead(dead_letter{t, 7}), encode_edit(op_edit{t.shard, t.seq, 9, 3, t.op_bytes}),
                          encode_late(late_apply{t.shard, 5, t.seq, 9, t.op_bytes}));
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    switch (*rc::gen::inRange(0, 3)) {
        case 0: bytes[at] = *rc::gen::arbitrary<char>(); break;
        case 1: bytes.resize(at); break;
        default: bytes.insert(at, 1, *rc::gen::arbitrary<char>()); break;
    }
    const std::span<const char> s(bytes.data(), bytes.size());
    if (auto task = decode_task(s)) {
        RC_ASSERT(decode_task(encode_task(task.value())).value() == task.value());
    } else {
        RC_ASSERT(task.error() == core::errc::journal_corrupt);
    }
    if (auto dead = decode_dead(s)) {
        RC_ASSERT(decode_dead(encode_dead(dead.value())).value() == dead.value());
    } else {
        RC_ASSERT(dead.error() == core::errc::journal_corrupt);
    }
    if (auto edit = decode_edit(s)) {
        RC_ASSERT(decode_edit(encode_edit(edit.value())).value() == edit.value());
    } else {
        RC_ASSERT(edit.error() == core::errc::journal_corrupt);
    }
    if (auto late = decode_late(s)) {
        RC_ASSERT(decode_late(encode_late(late.value())).value() == late.value());
    } else {
        RC_ASSERT(late.error() == core::errc::journal_corrupt);
    }
}

RC_GTEST_PROP(record_codec, garbage_never_throws, (std::string bytes)) {
    const std::span<const char> s(bytes.data(), bytes.size());
    auto error_of = [](const auto& r) { return r ? core::error_code{} : r.error(); };
    for (const auto& ec :
         {error_of(decode_task(s)), error_of(decode_dead(s)), error_of(decode_idem(s)), error_of(decode_edit(s)),
          error_of(decode_late(s))}) {
        RC_ASSERT(!ec || ec == core::errc::journal_corrupt);
    }
}

TEST(record_codec, truncated_records_are_corrupt) {
    error_task t{3, 44, 55, 2, {"first", "second"}, "op", 66};
    const std::string bytes = encode_task(t);
    ASSERT_TRUE(decode_task(bytes));
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        EXPECT_EQ(decode_task(std::span(bytes.data(), n)).error(), core::errc::journal_corrupt) << n;
    }
    EXPECT_EQ(decode_task(bytes + "x").error(), core::errc::journal_corrupt);  // trailing bytes
}

TEST(record_codec, history_keeps_the_newest_sixteen_and_cuts_at_a_character) {
    error_task t;
    for (int i = 0; i < 20; ++i) t.errors.push_back(std::to_string(i));
    // 1023 ASCII bytes, then a 3-byte character straddling the 1 KiB cut.
    t.errors.back() = std::string(1023, 'a') + "\xe2\x82\xac" + "tail";
    bound_history(t);
    ASSERT_EQ(t.errors.size(), 16u);
    EXPECT_EQ(t.errors.front(), "4");
    EXPECT_EQ(t.errors.back(), std::string(1023, 'a'));
}

TEST(record_format, keys_sort_in_numeric_order) {
    EXPECT_LT(view(ops_key(255)), view(ops_key(256)));
    EXPECT_LT(view(ops_key(1)), view(ops_key(std::uint64_t{1} << 40)));
    // errors: by shard, then due time, then seq.
    EXPECT_LT(view(errors_key(0, UINT64_MAX, 9)), view(errors_key(1, 0, 0)));
    EXPECT_LT(view(errors_key(1, 5, UINT64_MAX)), view(errors_key(1, 6, 0)));
    EXPECT_LT(view(errors_key(1, 6, 255)), view(errors_key(1, 6, 256)));
    EXPECT_LT(view(dead_key(2, 1000)), view(dead_key(3, 1)));
    const auto k = errors_key(0x01020304, 0x05, 0x06);
    EXPECT_EQ(std::string(k.data(), k.size()),
              std::string("\x01\x02\x03\x04\0\0\0\0\0\0\0\x05\0\0\0\0\0\0\0\x06", 20));
    EXPECT_EQ(get_be(ops_key(0x0102030405060708).data(), 8), 0x0102030405060708u);
}

}  // namespace
}  // namespace cairn::journal::detail
