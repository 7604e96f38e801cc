// The journal's failure paths: sticky I/O errors, a full map (injected and real), backpressure,
// shutdown with requests in flight, a killed process and corrupt records.
#include "journal/journal.hpp"

#include "journal/detail/lmdb.hpp"
#include "journal/detail/record_format.hpp"
#include "journal_test_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <mutex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cairn::journal {
namespace {

using test::append_sync;
using test::commit_sync;
using test::make_ops;

TEST(journal_failure, injected_eio_is_sticky) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    std::string first_bytes;
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
        first_bytes = j->read_op_bytes(1).value();
        j->fail_next_commit_for_test(EIO);
        EXPECT_EQ(append_sync(*j, make_ops(2, clock)).error(), core::errc::journal_failed);
        EXPECT_FALSE(j->healthy());
        EXPECT_TRUE(j->get_stats().failed);
        EXPECT_EQ(j->last_seq(), 3u);

        // Every later write fails at once, on the caller's thread.
        bool called = false;
        j->append(make_ops(1, clock), {}, [&](core::result<appended> r) {
            called = true;
            EXPECT_EQ(r.error(), core::errc::journal_failed);
        });
        EXPECT_TRUE(called);
        EXPECT_EQ(append_sync(*j, make_ops(1, clock), "key").error(), core::errc::journal_failed);
        EXPECT_EQ(test::advance_cursor(*j, 0, 1).error(), core::errc::journal_failed);
        EXPECT_EQ(j->cursor(0), 0u);
        // What was committed before stays readable.
        EXPECT_EQ(j->read_op_bytes(1).value(), first_bytes);
        EXPECT_EQ(j->read_op_bytes(4).error(), core::errc::not_found);
    }
    // A restart clears it; nothing of the failed group was written.
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_TRUE(j->healthy());
    EXPECT_EQ(j->last_seq(), 3u);
    EXPECT_EQ(j->read_op_bytes(1).value(), first_bytes);
    auto r = append_sync(*j, make_ops(1, clock));
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value().first_seq, 4u);
}

TEST(journal_failure, eio_fails_the_whole_group_and_everything_queued_behind_it) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.group_ops_max = 2;
    auto j = std::move(journal::open(o, clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    gate.wait_entered();
    test::collector<appended> results;
    for (std::size_t i = 0; i < 4; ++i) j->append(make_ops(1, clock), {}, results.callback(i));
    test::collector<void> outcome;
    apply_outcome out;
    out.cursor = 1;
    j->commit_outcome(out, outcome.callback(0));
    j->fail_next_commit_for_test(EIO);
    gate.release();
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(results.get(i).error(), core::errc::journal_failed);
    EXPECT_EQ(outcome.get(0).error(), core::errc::journal_failed);
    EXPECT_EQ(j->last_seq(), 1u);
    EXPECT_EQ(j->cursor(0), 0u);
}

TEST(journal_failure, injected_map_full_is_not_sticky) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    j->fail_next_commit_for_test(MDB_MAP_FULL);
    EXPECT_EQ(append_sync(*j, make_ops(2, clock), "retry-me").error(), core::errc::journal_full);
    EXPECT_TRUE(j->healthy());
    EXPECT_EQ(j->last_seq(), 3u);
    EXPECT_EQ(j->read_op_bytes(4).error(), core::errc::not_found);
    // Nothing of the failed group was written: not its ops, not its idempotency key.
    auto r = append_sync(*j, make_ops(2, clock), "retry-me");
    ASSERT_TRUE(r);
    EXPECT_FALSE(r.value().deduplicated);
    EXPECT_EQ(r.value().first_seq, 4u);
}

TEST(journal_failure, a_full_disk_refuses_the_group_and_is_not_sticky) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    j->fail_next_commit_for_test(ENOSPC);
    EXPECT_EQ(append_sync(*j, make_ops(2, clock), "retry-me").error(), core::errc::disk_full);
    EXPECT_TRUE(j->healthy());
    EXPECT_EQ(j->last_seq(), 3u);
    // Once there is room the same request commits, as new: nothing of the failed group was written.
    auto r = append_sync(*j, make_ops(2, clock), "retry-me");
    ASSERT_TRUE(r);
    EXPECT_FALSE(r.value().deduplicated);
    EXPECT_EQ(r.value().first_seq, 4u);
    j->fail_next_commit_for_test(EDQUOT);
    EXPECT_EQ(append_sync(*j, make_ops(1, clock)).error(), core::errc::disk_full);
    EXPECT_TRUE(j->healthy());
}

TEST(journal_failure, map_full_still_commits_the_outcomes_of_the_group) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(2, clock)));
    gate.wait_entered();
    test::collector<appended> a;
    test::collector<void> b;
    j->append(make_ops(1, clock), {}, a.callback(0));
    apply_outcome out;
    out.cursor = 2;
    j->commit_outcome(out, b.callback(0));
    j->fail_next_commit_for_test(MDB_MAP_FULL);
    gate.release();
    EXPECT_EQ(a.get(0).error(), core::errc::journal_full);
    EXPECT_TRUE(b.get(0));
    EXPECT_EQ(j->cursor(0), 2u);
    EXPECT_EQ(j->last_seq(), 2u);
}

TEST(journal_failure, real_map_full_refuses_appends_and_keeps_what_was_acknowledged) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.size_bytes_max = 1024 * 1024;
    std::map<std::uint64_t, std::string> acked;
    {
        auto j = std::move(journal::open(o, clock).value());
        bool full = false;
        for (int batch = 0; batch < 2000 && !full; ++batch) {
            auto ops = make_ops(100, clock, batch * 100);
            auto r = append_sync(*j, ops, "key-" + std::to_string(batch) + std::string(150, 'p'));
            if (!r) {
                ASSERT_EQ(r.error(), core::errc::journal_full) << r.error().message();
                full = true;
                break;
            }
            for (std::size_t k = 0; k < ops.size(); ++k) {
                acked[r.value().first_seq + k] = test::expected_bytes(ops[k], 7, r.value().first_seq + k);
            }
        }
        ASSERT_TRUE(full) << "1 MiB never filled";
        ASSERT_GT(acked.size(), 1000u);
        EXPECT_TRUE(j->healthy());
        // Not sticky: a small append may still fit, and reads work.
        EXPECT_EQ(j->read_op_bytes(acked.begin()->first).value(), acked.begin()->second);
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->last_seq(), acked.rbegin()->first);
    for (const auto& [seq, bytes] : acked) {
        auto got = j->read_op_bytes(seq);
        ASSERT_TRUE(got) << seq;
        ASSERT_EQ(got.value(), bytes) << seq;
    }
    // Once every shard has applied them, retention frees space (regardless of age under
    // pressure), and appends succeed again.
    ASSERT_TRUE(test::advance_cursor(*j, 0, j->last_seq()));
    auto r = append_sync(*j, make_ops(100, clock));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_GT(j->ops_retired().value(), 0u);
    EXPECT_TRUE(j->healthy());
    EXPECT_EQ(j->read_op_bytes(acked.begin()->first).error(), core::errc::not_found);
}

TEST(journal_failure, a_full_queue_is_overloaded_at_once) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.queue_ops_max = 10;
    auto j = std::move(journal::open(o, clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    gate.wait_entered();
    test::collector<appended> results;
    for (std::size_t i = 0; i < 5; ++i) j->append(make_ops(2, clock), {}, results.callback(i));
    // 10 ops wait: one more op is refused before append returns.
    bool called = false;
    j->append(make_ops(1, clock), {}, [&](core::result<appended> r) {
        called = true;
        EXPECT_EQ(r.error(), core::errc::overloaded);
    });
    EXPECT_TRUE(called);
    gate.release();
    for (std::size_t i = 0; i < 5; ++i) EXPECT_TRUE(results.get(i));
    EXPECT_EQ(j->last_seq(), 11u);
    EXPECT_TRUE(append_sync(*j, make_ops(10, clock)));  // room again
    EXPECT_EQ(append_sync(*j, make_ops(11, clock)).error(), core::errc::too_large);
}

TEST(journal_failure, too_much_unapplied_is_overloaded) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.shard_count = 2;
    o.unapplied_ops_max = 5;
    auto j = std::move(journal::open(o, clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    ASSERT_TRUE(append_sync(*j, make_ops(2, clock)));
    EXPECT_EQ(append_sync(*j, make_ops(1, clock)).error(), core::errc::overloaded);
    ASSERT_TRUE(test::advance_cursor(*j, 0, 5));
    EXPECT_EQ(append_sync(*j, make_ops(1, clock)).error(), core::errc::overloaded);  // shard 1 applied nothing
    ASSERT_TRUE(test::advance_cursor(*j, 1, 2));
    EXPECT_TRUE(append_sync(*j, make_ops(2, clock)));  // 7 - 2 = 5
    EXPECT_EQ(append_sync(*j, make_ops(1, clock)).error(), core::errc::overloaded);
    EXPECT_EQ(j->last_seq(), 7u);
}

TEST(journal_failure, destruction_completes_every_pending_callback_once) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.group_ops_max = 5;
    test::collector<appended> results;
    std::map<std::size_t, core::op> sent;
    {
        auto j = std::move(journal::open(o, clock).value());
        for (std::size_t i = 0; i < 300; ++i) {
            auto ops = make_ops(1, clock, static_cast<std::int64_t>(i));
            sent[i] = ops[0];
            j->append(std::move(ops), {}, results.callback(i));
        }
    }
    auto j = std::move(journal::open(o, clock).value());
    std::uint64_t committed = 0;
    ASSERT_EQ(results.count(), 300u) << "every callback ran before the destructor returned";
    for (std::size_t i = 0; i < 300; ++i) {
        const auto r = results.get(i);  // asserts a single call
        if (r) {
            ++committed;
            EXPECT_EQ(j->read_op_bytes(r.value().first_seq).value(), test::expected_bytes(sent[i], 7, r.value().first_seq));
        } else {
            EXPECT_EQ(r.error(), core::errc::shutting_down);
        }
    }
    EXPECT_EQ(j->last_seq(), committed) << "nothing unacknowledged was written";
}

// A child process appends until it is killed with SIGKILL in the middle of group commits;
// everything it acknowledged (reported through a pipe from the callback) must be there.
TEST(journal_failure, a_killed_process_loses_nothing_acknowledged) {
    test::temp_dir dir;
    struct ack {
        std::uint64_t first_seq, last_seq;
        std::int64_t base;
    };
    constexpr std::size_t batch = 10;
    auto ts_of = [](std::int64_t i) { return core::hlc_make(1'700'000'000'000 + static_cast<std::uint64_t>(i), 0, 7); };
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[0]);
        test::manual_wall wall;
        core::hlc clock(7, wall.fn());
        auto j = journal::open(test::test_options(dir.path(), wall), clock);
        if (!j) ::_exit(2);
        const int out = fds[1];
        for (std::int64_t base = 0; base < 10'000'000; base += static_cast<std::int64_t>(batch)) {
            std::vector<core::op> ops;
            for (std::size_t k = 0; k < batch; ++k) {
                const auto i = base + static_cast<std::int64_t>(k);
                ops.push_back(test::make_op(i, ts_of(i)));
            }
            j.value()->append(std::move(ops), {}, [out, base](core::result<appended> r) {
                if (!r) return;
                const ack a{r.value().first_seq, r.value().last_seq, base};
                if (::write(out, &a, sizeof a) != static_cast<ssize_t>(sizeof a)) ::_exit(3);
            });
        }
        ::_exit(4);  // never reached in time: the parent kills the child first
    }
    ::close(fds[1]);
    std::vector<ack> acks;
    ack a{};
    while (acks.size() < 200 && ::read(fds[0], &a, sizeof a) == static_cast<ssize_t>(sizeof a)) acks.push_back(a);
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    while (::read(fds[0], &a, sizeof a) == static_cast<ssize_t>(sizeof a)) acks.push_back(a);
    ::close(fds[0]);
    ASSERT_GE(acks.size(), 200u);

    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = journal::open(test::test_options(dir.path(), wall), clock);
    ASSERT_TRUE(j) << j.error().message();
    std::uint64_t max_acked = 0;
    for (const auto& [first, last, base] : acks) {
        ASSERT_EQ(last - first + 1, batch);
        max_acked = std::max(max_acked, last);
        for (std::uint64_t seq = first; seq <= last; ++seq) {
            const auto i = base + static_cast<std::int64_t>(seq - first);
            auto got = j.value()->read_op_bytes(seq);
            ASSERT_TRUE(got) << seq;
            ASSERT_EQ(got.value(), test::expected_bytes(test::make_op(i, ts_of(i)), 7, seq));
        }
    }
    EXPECT_GE(j.value()->last_seq(), max_acked);
    EXPECT_TRUE(append_sync(*j.value(), make_ops(1, clock)));
}

TEST(journal_failure, corrupt_records_are_reported_not_trusted) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
        apply_outcome out;
        out.put_errors.push_back(error_task{0, 1, 5, 1, {"x"}, j->read_op_bytes(1).value(), 1});
        ASSERT_TRUE(commit_sync(*j, out));
    }
    {
        // Damage seq 2 and the error task behind the journal's back.
        auto e = detail::env::open(dir.path(), o.size_bytes_max, detail::dbs_max, 16);
        ASSERT_TRUE(e);
        detail::txn t;
        ASSERT_EQ(detail::txn::begin_write(e.value(), t), 0);
        MDB_dbi ops = 0;
        MDB_dbi errors = 0;
        ASSERT_EQ(mdb_dbi_open(t.get(), detail::db_ops, 0, &ops), 0);
        ASSERT_EQ(mdb_dbi_open(t.get(), detail::db_errors, 0, &errors), 0);
        ASSERT_EQ(t.put(ops, detail::view(detail::ops_key(2)), std::string(8, '\0') + "\x93garbage"), 0);
        ASSERT_EQ(t.put(errors, detail::view(detail::errors_key(0, 5, 1)), "\xc1"), 0);
        ASSERT_EQ(t.commit(), 0);
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->read_ops(0, 10).error(), core::errc::journal_corrupt);
    auto tail = j->read_ops(2, 10);
    ASSERT_TRUE(tail);
    EXPECT_EQ(tail.value().size(), 1u);
    EXPECT_EQ(j->read_op_bytes(2).value(), "\x93garbage");
    EXPECT_EQ(j->due_errors(0, UINT64_MAX, 10).error(), core::errc::journal_corrupt);
}

}  // namespace
}  // namespace cairn::journal
