// The journal's normal paths: append and ack order, group commit, reopen, idempotency keys,
// cursors and outcomes, the error queue and dead letters.
#include "journal/journal.hpp"

#include "journal/detail/lmdb.hpp"
#include "journal_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

namespace cairn::journal {
namespace {

using test::append_sync;
using test::commit_sync;
using test::make_ops;

TEST(journal, opens_lmdb_with_safe_flags_only) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = journal::open(test::test_options(dir.path(), wall), clock);
    ASSERT_TRUE(j) << j.error().message();
    const unsigned flags = j.value()->env_flags_for_test();
    EXPECT_EQ(flags & detail::env_flags_forbidden, 0u);
    EXPECT_EQ(flags & (MDB_NOSYNC | MDB_WRITEMAP | MDB_MAPASYNC | MDB_NOSUBDIR), 0u);
    EXPECT_NE(flags & MDB_NOTLS, 0u);
    // Meta pages are not flushed by their own commit: the writer acknowledges a commit only once a
    // later flush made it durable (journal.a_commit_is_acknowledged_only_once_flushed).
    EXPECT_NE(flags & MDB_NOMETASYNC, 0u);
    EXPECT_TRUE(std::filesystem::is_directory(dir.path()));
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/data.mdb"));
}

TEST(journal, creates_a_missing_directory_and_rejects_bad_options) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.sub("a/b/c"), wall);
    {
        auto j = journal::open(o, clock);
        ASSERT_TRUE(j) << j.error().message();
    }
    auto bad = o;
    bad.size_bytes_max = 0;
    EXPECT_EQ(journal::open(bad, clock).error(), core::errc::bad_request);
    bad = o;
    bad.node_id = core::hlc_node_max + 1;
    EXPECT_EQ(journal::open(bad, clock).error(), core::errc::bad_request);
    bad = o;
    bad.shard_count = 0;
    EXPECT_EQ(journal::open(bad, clock).error(), core::errc::bad_request);
}

TEST(journal, acks_in_order_with_contiguous_increasing_seqs) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());

    test::collector<appended> acks;
    std::vector<std::vector<core::op>> sent;
    constexpr std::size_t requests = 60;
    for (std::size_t i = 0; i < requests; ++i) {
        auto ops = make_ops(i % 3 + 1, clock, static_cast<std::int64_t>(i) * 10);
        if (i % 5 == 0) ops.front().op_id = core::make_op_id(3, 999'000 + i);
        sent.push_back(ops);
        j->append(std::move(ops), {}, acks.callback(i));
    }
    const auto calls = acks.wait(requests);
    std::uint64_t expect_first = 1;
    for (std::size_t i = 0; i < requests; ++i) {
        const auto& [index, r] = calls[i];
        EXPECT_EQ(index, i) << "acks come in submission order";
        ASSERT_TRUE(r);
        const appended& a = r.value();
        const auto& ops = sent[i];
        EXPECT_EQ(a.first_seq, expect_first);
        EXPECT_EQ(a.last_seq, expect_first + ops.size() - 1);
        EXPECT_FALSE(a.deduplicated);
        ASSERT_EQ(a.ts.size(), ops.size());
        ASSERT_EQ(a.op_ids.size(), ops.size());
        for (std::size_t k = 0; k < ops.size(); ++k) {
            const std::uint64_t seq = a.first_seq + k;
            EXPECT_EQ(a.ts[k], ops[k].ts);
            const std::uint64_t want_id = ops[k].op_id != 0 ? ops[k].op_id : core::make_op_id(7, seq);
            EXPECT_EQ(a.op_ids[k], want_id);
            auto bytes = j->read_op_bytes(seq);
            ASSERT_TRUE(bytes);
            EXPECT_EQ(bytes.value(), test::expected_bytes(ops[k], 7, seq));
        }
        expect_first = a.last_seq + 1;
    }
    EXPECT_EQ(j->last_seq(), expect_first - 1);
    EXPECT_EQ(j->ops_appended().value(), expect_first - 1);

    // read_ops pages in ascending seq order.
    std::vector<std::uint64_t> seen;
    std::uint64_t after = 0;
    for (;;) {
        auto page = j->read_ops(after, 7);
        ASSERT_TRUE(page);
        if (page.value().empty()) break;
        for (const auto& [seq, o] : page.value()) {
            seen.push_back(seq);
            EXPECT_EQ(core::encode_op(o), j->read_op_bytes(seq).value());
        }
        after = page.value().back().first;
    }
    std::vector<std::uint64_t> want(expect_first - 1);
    std::iota(want.begin(), want.end(), 1);
    EXPECT_EQ(seen, want);
    EXPECT_EQ(j->read_op_bytes(expect_first).error(), core::errc::not_found);

    // A bytes cap ends a batch at the op whose record reaches it (one op at least).
    const std::size_t first_bytes = j->read_op_bytes(1).value().size();
    EXPECT_EQ(j->read_ops(0, 100, 1).value().size(), 1U);
    EXPECT_EQ(j->read_ops(0, 100, first_bytes + 8 + 1).value().size(), 2U);  // +8: the record's append time
    EXPECT_EQ(j->read_ops(0, 100).value().size(), std::min<std::size_t>(100, expect_first - 1));
    EXPECT_EQ(j->get_stats().ops_count, expect_first - 1);
}

// The apply workers' shared read: one decode per range, handed to every reader of that range
// (also to readers that arrive while it runs), equal to read_ops; an empty read is not kept.
TEST(journal, read_ops_shared_decodes_a_range_once_for_every_reader) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto opened = journal::open(test::test_options(dir.path(), wall), clock);
    ASSERT_TRUE(opened) << opened.error().message();
    auto& j = opened.value();

    auto empty = j->read_ops_shared(0, 50, 1 << 20);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty.value()->empty());
    ASSERT_TRUE(append_sync(*j, make_ops(120, clock, 0)));
    auto first = j->read_ops_shared(0, 50, 1 << 20);  // the empty read before was not kept
    ASSERT_TRUE(first);
    ASSERT_EQ(first.value()->size(), 50u);

    // Eight threads read the same two ranges at once: each range decodes once.
    std::vector<std::shared_ptr<const journal::op_batch>> got(8);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < got.size(); ++t) {
        threads.emplace_back([&, t] { got[t] = j->read_ops_shared(t % 2 == 0 ? 50 : 100, 50, 1 << 20).value(); });
    }
    for (auto& t : threads) t.join();
    for (std::size_t t = 2; t < got.size(); ++t) EXPECT_EQ(got[t].get(), got[t % 2].get()) << "thread " << t;
    EXPECT_NE(got[0].get(), got[1].get());
    EXPECT_EQ(j->read_ops_shared(0, 50, 1 << 20).value().get(), first.value().get());

    // The same ops as read_ops, and a different max or byte cap is a different range.
    const auto plain = j->read_ops(100, 50, 1 << 20).value();
    ASSERT_EQ(got[1]->size(), plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ((*got[1])[i].first, plain[i].first);
        EXPECT_EQ(core::encode_op((*got[1])[i].second), core::encode_op(plain[i].second));
    }
    EXPECT_EQ(j->read_ops_shared(100, 50, 1 << 20).value()->size(), 20u);
    EXPECT_EQ(j->read_ops_shared(100, 50, 1).value()->size(), 1u);

    // Once every shard's cursor has passed a range, its batch is no longer kept.
    ASSERT_TRUE(test::advance_cursor(*j, 0, 60));  // the one shard of test_options
    const auto* kept = got[1].get();
    EXPECT_EQ(j->read_ops_shared(100, 50, 1 << 20).value().get(), kept);  // after 100: still ahead of the cursors
    EXPECT_NE(j->read_ops_shared(0, 50, 1 << 20).value().get(), first.value().get());  // read afresh
}

// MDB_NOMETASYNC leaves a commit's meta page unflushed: the commit is acknowledged only once a
// flush made it durable. Alone in the queue, a commit gets a flush of its own; when that flush
// fails, nothing of it is acknowledged or published, although it was committed.
TEST(journal, a_commit_is_acknowledged_only_once_flushed) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    const auto o = test::test_options(dir.path(), wall);
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
        EXPECT_EQ(j->idle_syncs().value(), 1u) << "a lone commit is flushed on its own";
        j->fail_next_sync_for_test(EIO);
        EXPECT_EQ(append_sync(*j, make_ops(2, clock)).error(), core::errc::journal_failed);
        EXPECT_FALSE(j->healthy());
        EXPECT_EQ(j->last_seq(), 1u) << "an op that is not durable is not published";
        EXPECT_EQ(j->read_ops(0, 10, 1 << 20).value().size(), 1u) << "nor read";
        EXPECT_EQ(append_sync(*j, make_ops(1, clock)).error(), core::errc::journal_failed) << "sticky";
    }
    // The process did not crash, so the page cache kept the commit: the refused append may be found
    // after a restart (which is why journal-failed says the write may have been journaled).
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->last_seq(), 3u);
}

// Under load a commit needs no flush of its own: the next group's commit flushes the data file,
// which makes the meta page of the commit before it durable; then that one is acknowledged.
TEST(journal, under_load_each_commit_is_made_durable_by_the_next) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.group_ops_max = 10;
    auto j = std::move(journal::open(o, clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    gate.wait_entered();
    EXPECT_EQ(j->idle_syncs().value(), 1u);
    // 100 ops queue while the writer is held: ten groups of ten, committed back to back.
    test::collector<appended> results;
    for (std::size_t i = 0; i < 100; ++i) j->append(make_ops(1, clock, static_cast<std::int64_t>(i)), {}, results.callback(i));
    gate.release();
    for (std::size_t i = 0; i < 100; ++i) {
        const auto r = results.get(i);
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r.value().first_seq, i + 2);
    }
    EXPECT_EQ(j->last_seq(), 101u);
    // One flush of their own for the ten groups: the last one's, with nothing queued behind it.
    EXPECT_EQ(j->idle_syncs().value(), 2u);
    EXPECT_EQ(j->group_ops().count(), 11u);
}

TEST(journal, many_threads_append_concurrently_in_few_group_commits) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    test::writer_gate gate(*j);
    constexpr int threads = 8;
    constexpr int per_thread = 100;
    constexpr int total = threads * per_thread;

    test::collector<appended> results;
    // The first append commits alone and holds the writer in the listener...
    test::collector<appended> first;
    j->append(make_ops(1, clock), {}, first.callback(0));
    gate.wait_entered();
    // ...while eight threads queue their appends without waiting for acks.
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const int id = t * per_thread + i;
                j->append(make_ops(1, clock, id), {}, results.callback(static_cast<std::size_t>(id)));
            }
        });
    }
    for (auto& t : pool) t.join();
    gate.release();
    const auto all = results.wait(total);
    ASSERT_TRUE(first.get(0));

    std::vector<int> calls(total, 0);
    std::vector<std::uint64_t> seqs;
    for (const auto& [id, r] : all) {
        ++calls[id];
        ASSERT_TRUE(r);
        seqs.push_back(r.value().first_seq);
    }
    EXPECT_TRUE(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
    EXPECT_EQ(results.count(), static_cast<std::size_t>(total));
    ASSERT_EQ(seqs.size(), static_cast<std::size_t>(total));
    std::sort(seqs.begin(), seqs.end());
    for (std::size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i + 2);  // unique and contiguous after seq 1
    EXPECT_EQ(j->last_seq(), static_cast<std::uint64_t>(total + 1));
    // One commit for the first append, one for the 800 queued behind it.
    EXPECT_EQ(j->group_ops().count(), 2u);
    EXPECT_EQ(j->group_ops().sum(), static_cast<double>(total + 1));
    EXPECT_EQ(j->commit_latency().count(), 2u);
}

TEST(journal, commit_listener_gets_the_new_last_seq) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    test::collector<std::uint64_t> heard;
    // The listener runs after the group's callbacks: wait for it rather than for the ack.
    j->set_commit_listener([cb = heard.callback(0)](std::uint64_t s) { cb(s); });
    ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
    ASSERT_TRUE(test::advance_cursor(*j, 0, 2));  // no ops appended: no call
    ASSERT_TRUE(append_sync(*j, make_ops(2, clock)));
    const auto calls = heard.wait(2);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].second.value(), 3u);
    EXPECT_EQ(calls[1].second.value(), 5u);
}

TEST(journal, reopen_recovers_everything_acknowledged) {
    test::temp_dir dir;
    test::manual_wall wall;
    std::vector<std::pair<std::uint64_t, std::string>> expected;
    std::uint64_t ts_max = 0;
    error_task task;
    dead_letter dead;
    {
        core::hlc clock(7, wall.fn());
        auto o = test::test_options(dir.path(), wall);
        o.shard_count = 3;
        auto j = std::move(journal::open(o, clock).value());
        for (int i = 0; i < 20; ++i) {
            auto ops = make_ops(5, clock, i * 5);
            auto r = append_sync(*j, ops);
            ASSERT_TRUE(r);
            for (std::size_t k = 0; k < ops.size(); ++k) {
                expected.emplace_back(r.value().first_seq + k, test::expected_bytes(ops[k], 7, r.value().first_seq + k));
                ts_max = std::max(ts_max, ops[k].ts);
            }
        }
        apply_outcome out;
        out.shard = 2;
        out.cursor = 42;
        task = error_task{2, 17, wall.now() + 500, 1, {"deadlock"}, expected[16].second, wall.now()};
        out.put_errors.push_back(task);
        dead = dead_letter{error_task{2, 18, 0, 8, {"a", "b"}, expected[17].second, 5}, wall.now()};
        out.put_dead.push_back(dead);
        ASSERT_TRUE(commit_sync(*j, out));
    }
    // A new process: its wall clock is far behind the journaled timestamps.
    test::manual_wall behind;
    behind.ms->store(1000);
    core::hlc clock(7, behind.fn());
    auto o = test::test_options(dir.path(), wall);
    o.shard_count = 3;
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->last_seq(), 100u);
    for (const auto& [seq, bytes] : expected) EXPECT_EQ(j->read_op_bytes(seq).value(), bytes) << seq;
    EXPECT_EQ(j->cursor(0), 0u);
    EXPECT_EQ(j->cursor(2), 42u);
    auto due = j->due_errors(2, UINT64_MAX, 10);
    ASSERT_TRUE(due);
    EXPECT_EQ(due.value(), std::vector<error_task>{task});
    EXPECT_EQ(j->list_dead(10).value(), std::vector<dead_letter>{dead});
    EXPECT_GT(clock.now(), ts_max) << "the clock never goes back behind the journal";
    auto r = append_sync(*j, make_ops(1, clock));
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value().first_seq, 101u);
    auto s = j->get_stats();
    EXPECT_EQ(s.ops_count, 101u);
    EXPECT_EQ(s.error_count, 1u);
    EXPECT_EQ(s.dead_count, 1u);
    EXPECT_EQ(s.cursors, (std::vector<std::uint64_t>{0, 0, 42}));
    EXPECT_FALSE(s.failed);
    EXPECT_GT(s.map_bytes_used, 0u);
    EXPECT_GE(s.map_bytes_max, 64u * 1024 * 1024);
}

// data.mdb is kept grow_bytes / 2 past LMDB's pages in use by zeros written ahead (so a commit's
// flush carries no size update), never past the map, and a grown file reopens with everything in it.
// The same appends, one group each, go to a journal that grows ahead and to one that does not, whose
// file is LMDB's own: the difference is the zeros.
TEST(journal, the_file_is_grown_ahead_in_steps_and_never_past_the_map) {
    constexpr std::uint64_t step = 128 * 1024;
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o_own = test::test_options(dir.sub("own"), wall);
    o_own.grow_bytes = 0;
    auto o_ahead = test::test_options(dir.sub("ahead"), wall);
    o_ahead.grow_bytes = step;
    auto own = std::move(journal::open(o_own, clock).value());
    auto ahead = std::move(journal::open(o_ahead, clock).value());
    const auto size = [](const std::string& d) { return std::filesystem::file_size(d + "/data.mdb"); };
    std::vector<std::pair<std::uint64_t, std::string>> expected;
    std::uint64_t grown_past_first_step = 0;
    for (int i = 0; i < 60; ++i) {
        auto ops = make_ops(100, clock, i * 100);
        auto a = append_sync(*own, ops);
        auto b = append_sync(*ahead, ops);
        ASSERT_TRUE(a && b);
        ASSERT_EQ(a.value().first_seq, b.value().first_seq);
        for (std::size_t k = 0; k < ops.size(); ++k) {
            expected.emplace_back(b.value().first_seq + k, test::expected_bytes(ops[k], 7, b.value().first_seq + k));
        }
        const std::uint64_t lmdb = size(o_own.path);
        const std::uint64_t file = size(o_ahead.path);
        // Checked before each group: at least half a step ahead then, less what one group of 100
        // small ops takes (a few pages); and a step is added only when less than half of one is left.
        EXPECT_GE(file, lmdb + step / 4) << "group " << i;
        EXPECT_LE(file, lmdb + step + step / 2) << "group " << i;
        if (file > step) ++grown_past_first_step;
    }
    EXPECT_GT(size(o_own.path), 3 * step) << "the appends outgrew several steps";
    EXPECT_GT(grown_past_first_step, 0u);

    // Never past the map: a 1 MiB map with steps of 4 MiB stops at 1 MiB.
    auto o_small = test::test_options(dir.sub("small"), wall);
    o_small.size_bytes_max = 1 << 20;
    o_small.grow_bytes = 4 << 20;
    {
        auto small = std::move(journal::open(o_small, clock).value());
        ASSERT_TRUE(append_sync(*small, make_ops(10, clock)));
        EXPECT_EQ(size(o_small.path), std::uint64_t{1} << 20);
    }

    // A grown file reopens with every op in it, and goes on growing from where it is.
    ahead.reset();
    auto again = std::move(journal::open(o_ahead, clock).value());
    EXPECT_EQ(again->last_seq(), expected.back().first);
    for (const auto& [seq, bytes] : expected) ASSERT_EQ(again->read_op_bytes(seq).value(), bytes) << seq;
    ASSERT_TRUE(append_sync(*again, make_ops(100, clock, 1'000'000)));
    EXPECT_GE(size(o_ahead.path), size(o_own.path) + step / 4);
}

TEST(journal, reopening_with_another_node_id_fails) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    { ASSERT_TRUE(journal::open(o, clock)); }
    o.node_id = 8;
    auto j = journal::open(o, clock);
    ASSERT_FALSE(j);
    EXPECT_EQ(j.error(), core::errc::conflict);
    o.node_id = 7;
    EXPECT_TRUE(journal::open(o, clock));
}

TEST(journal, opening_twice_in_one_process_fails) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    auto first = journal::open(o, clock);
    ASSERT_TRUE(first);
    auto second = journal::open(o, clock);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), core::errc::conflict);
    first.value().reset();
    EXPECT_TRUE(journal::open(o, clock));
}

TEST(journal, idempotency_key_returns_the_original_result) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    appended original;
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(2, clock)));
        auto r1 = append_sync(*j, make_ops(3, clock, 10), "req-1");
        ASSERT_TRUE(r1);
        original = r1.value();
        EXPECT_FALSE(original.deduplicated);
        auto r2 = append_sync(*j, make_ops(4, clock, 20), "req-1");  // a retry (even with other ops)
        ASSERT_TRUE(r2);
        EXPECT_TRUE(r2.value().deduplicated);
        auto want = original;
        want.deduplicated = true;
        EXPECT_EQ(r2.value(), want);
        EXPECT_EQ(j->last_seq(), 5u);
        auto r3 = append_sync(*j, make_ops(1, clock), "req-2");
        ASSERT_TRUE(r3);
        EXPECT_EQ(r3.value().first_seq, 6u);
        EXPECT_EQ(j->ops_appended().value(), 6u);
    }
    // The key is durable.
    auto j = std::move(journal::open(o, clock).value());
    auto r4 = append_sync(*j, make_ops(1, clock), "req-1");
    ASSERT_TRUE(r4);
    EXPECT_TRUE(r4.value().deduplicated);
    EXPECT_EQ(r4.value().first_seq, original.first_seq);
    EXPECT_EQ(r4.value().op_ids, original.op_ids);
    EXPECT_EQ(j->last_seq(), 6u);
}

TEST(journal, two_concurrent_appends_with_one_key_are_written_once) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    gate.wait_entered();
    // Both retries wait in the queue and are written by one transaction.
    test::collector<appended> c;
    j->append(make_ops(2, clock, 1), "same", c.callback(0));
    j->append(make_ops(2, clock, 5), "same", c.callback(1));
    gate.release();
    auto ra = c.get(0);
    auto rb = c.get(1);
    ASSERT_TRUE(ra);
    ASSERT_TRUE(rb);
    EXPECT_FALSE(ra.value().deduplicated);
    EXPECT_TRUE(rb.value().deduplicated);
    EXPECT_EQ(ra.value().first_seq, 2u);
    EXPECT_EQ(rb.value().first_seq, 2u);
    EXPECT_EQ(rb.value().op_ids, ra.value().op_ids);
    EXPECT_EQ(j->last_seq(), 3u);
    EXPECT_EQ(j->group_ops().count(), 2u);
}

TEST(journal, idempotency_key_expires_after_retention) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(60);
    auto j = std::move(journal::open(o, clock).value());
    auto r1 = append_sync(*j, make_ops(1, clock), "k");
    ASSERT_TRUE(r1);
    wall.advance(59'000);
    EXPECT_TRUE(append_sync(*j, make_ops(1, clock), "k").value().deduplicated);
    wall.advance(2'000);
    auto r3 = append_sync(*j, make_ops(1, clock), "k");
    ASSERT_TRUE(r3);
    EXPECT_FALSE(r3.value().deduplicated);
    EXPECT_EQ(r3.value().first_seq, 2u);
    // The new entry dedupes from now on.
    auto r4 = append_sync(*j, make_ops(1, clock), "k");
    EXPECT_TRUE(r4.value().deduplicated);
    EXPECT_EQ(r4.value().first_seq, 2u);
}

TEST(journal, an_invalid_request_fails_alone) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.group_ops_max = 50;
    auto j = std::move(journal::open(o, clock).value());
    test::writer_gate gate(*j);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    gate.wait_entered();
    test::collector<appended> results;
    auto cb = [&](std::size_t i) { return results.callback(i); };
    auto bad_graph = make_ops(1, clock);
    std::get<core::edge_op>(bad_graph[0].body).graph = "no spaces";
    auto bad_state = make_ops(1, clock);
    std::get<core::edge_op>(bad_state[0].body).state = static_cast<core::edge_state>(9);
    j->append(make_ops(2, clock), {}, cb(0));
    j->append(make_ops(1, clock), std::string(201, 'k'), cb(1));  // key too long
    j->append(bad_graph, {}, cb(2));
    j->append({}, {}, cb(3));                                      // no ops
    j->append(make_ops(51, clock), {}, cb(4));                     // more than a group
    j->append(bad_state, std::string(200, 'k'), cb(5));
    gate.release();
    auto r0 = results.get(0);
    ASSERT_TRUE(r0);
    EXPECT_EQ(r0.value().first_seq, 2u);
    EXPECT_EQ(results.get(1).error(), core::errc::bad_request);
    EXPECT_EQ(results.get(2).error(), core::errc::bad_request);
    EXPECT_EQ(results.get(3).error(), core::errc::bad_request);
    EXPECT_EQ(results.get(4).error(), core::errc::too_large);
    EXPECT_EQ(results.get(5).error(), core::errc::bad_request);
    auto next = append_sync(*j, make_ops(1, clock), std::string(200, 'k'));
    ASSERT_TRUE(next);
    EXPECT_EQ(next.value().first_seq, 4u);
    EXPECT_TRUE(j->healthy());
}

TEST(journal, outcome_errors_and_dead_letters_round_trip) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.shard_count = 2;
    auto j = std::move(journal::open(o, clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(10, clock)));
    const std::string op3 = j->read_op_bytes(3).value();

    auto task = [&](std::uint32_t shard, std::uint64_t seq, std::uint64_t due) {
        return error_task{shard, seq, due, 1, {"constraint failed on seq " + std::to_string(seq)}, op3, 100};
    };
    apply_outcome first;
    first.shard = 0;
    first.cursor = 10;
    first.put_errors = {task(0, 3, 3000), task(0, 4, 1000), task(0, 5, 2000), task(0, 6, 2000)};
    ASSERT_TRUE(commit_sync(*j, first));
    apply_outcome other;
    other.shard = 1;
    other.put_errors = {task(1, 7, 10)};
    ASSERT_TRUE(commit_sync(*j, other));
    EXPECT_EQ(j->cursor(0), 10u);
    EXPECT_EQ(j->cursor(1), 0u);

    auto due = j->due_errors(0, 2000, 10).value();
    ASSERT_EQ(due.size(), 3u);  // earliest due first, then seq; not the one due at 3000, not shard 1's
    EXPECT_EQ(due[0].seq, 4u);
    EXPECT_EQ(due[1].seq, 5u);
    EXPECT_EQ(due[2].seq, 6u);
    EXPECT_EQ(due[0], task(0, 4, 1000));
    EXPECT_EQ(j->due_errors(0, 2000, 2).value().size(), 2u);
    EXPECT_EQ(j->due_errors(0, 999, 10).value().size(), 0u);
    EXPECT_EQ(j->due_errors(1, UINT64_MAX, 10).value(), std::vector<error_task>{task(1, 7, 10)});

    // Reschedule seq 4 (same due time, so the remove must run before the put), grow its history
    // past 16 entries with one oversized message, and retire seq 5 as a dead letter.
    apply_outcome second;
    second.shard = 0;
    error_task again = due[0];
    again.attempts = 2;
    for (int i = 0; i < 20; ++i) again.errors.push_back("error " + std::to_string(i));
    again.errors.back() = std::string(1500, 'x');
    second.remove_errors = {due[0], due[1]};
    second.put_errors = {again};
    dead_letter dl{due[1], 7777};
    dl.task.errors.push_back("gave up");
    second.put_dead = {dl};
    ASSERT_TRUE(commit_sync(*j, second));

    auto after = j->due_errors(0, 2000, 10).value();
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].seq, 4u);
    EXPECT_EQ(after[0].attempts, 2u);
    ASSERT_EQ(after[0].errors.size(), 16u);  // the newest 16 of 21
    EXPECT_EQ(after[0].errors.front(), "error 4");
    EXPECT_EQ(after[0].errors[14], "error 18");
    EXPECT_EQ(after[0].errors.back(), std::string(1024, 'x'));
    EXPECT_EQ(after[1].seq, 6u);
    auto dead = j->list_dead(10).value();
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_EQ(dead[0], dl);
    EXPECT_EQ(dead[0].task.errors, (std::vector<std::string>{"constraint failed on seq 5", "gave up"}));
    EXPECT_EQ(dead[0].task.op_bytes, op3);

    // The CLI re-injects the dead letter; removing absent entries is harmless.
    apply_outcome third;
    third.shard = 0;
    third.remove_dead = {dl};
    third.remove_errors = {task(0, 99, 1)};
    ASSERT_TRUE(commit_sync(*j, third));
    EXPECT_TRUE(j->list_dead(10).value().empty());
    EXPECT_EQ(j->get_stats().error_count, 4u);
}

// An operator's edits of dead letters' ops (the admin API) are kept per (shard, seq): the latest
// replaces an earlier one, they survive a reopen and go with the retention, like applied ops.
TEST(journal, edits_are_kept_per_shard_and_seq_survive_a_reopen_and_expire_with_the_retention) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.shard_count = 2;
    o.retention = std::chrono::seconds(60);
    {
        auto j = std::move(journal::open(o, clock).value());
        ASSERT_TRUE(append_sync(*j, make_ops(3, clock)));
        EXPECT_EQ(j->get_edit(1, 2).error(), core::errc::not_found);
        apply_outcome edit;
        edit.shard = 1;
        edit.put_edits = {op_edit{1, 2, wall.now(), 0, "in place"}, op_edit{1, 3, wall.now(), 9, "moved"}};
        ASSERT_TRUE(commit_sync(*j, edit));
        EXPECT_EQ(j->get_edit(1, 2).value(), (op_edit{1, 2, wall.now(), 0, "in place"}));
        EXPECT_EQ(j->get_edit(0, 2).error(), core::errc::not_found);  // another shard's letter of the same seq
        apply_outcome again;
        again.shard = 1;
        again.put_edits = {op_edit{1, 2, wall.now() + 5, 0, "edited twice"}};
        ASSERT_TRUE(commit_sync(*j, again));
        EXPECT_EQ(j->get_edit(1, 2).value().op_bytes, "edited twice");
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->get_edit(1, 3).value(), (op_edit{1, 3, wall.now(), 9, "moved"}));
    wall.advance(59'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));  // retention runs before each group
    EXPECT_TRUE(j->get_edit(1, 3));
    wall.advance(2'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
    EXPECT_EQ(j->get_edit(1, 3).error(), core::errc::not_found);
    EXPECT_EQ(j->get_edit(1, 2).error(), core::errc::not_found);
}

TEST(journal, the_route_record_is_replaced_whole_survives_a_reopen_and_is_bounded) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    const auto o = test::test_options(dir.path(), wall);
    {
        auto j = std::move(journal::open(o, clock).value());
        EXPECT_EQ(j->route_record().value(), "");  // never followed a split
        apply_outcome first;
        first.put_route = "v2 0:0 9223372036854775808:1 | 0 5 0 1 0 1";
        ASSERT_TRUE(commit_sync(*j, first));
        apply_outcome second;
        second.put_route = "v2 0:0 9223372036854775808:1 | 0 5 0 1 0 0";
        ASSERT_TRUE(commit_sync(*j, second));
        EXPECT_EQ(j->route_record().value(), "v2 0:0 9223372036854775808:1 | 0 5 0 1 0 0");
        apply_outcome huge;
        huge.put_route = std::string(64 * 1024 + 1, 'v');
        EXPECT_EQ(commit_sync(*j, huge).error(), core::errc::bad_request);
        apply_outcome cursor_only;
        ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));
        cursor_only.cursor = 1;
        ASSERT_TRUE(commit_sync(*j, cursor_only));  // an outcome without put_route keeps the record
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->route_record().value(), "v2 0:0 9223372036854775808:1 | 0 5 0 1 0 0");
}

TEST(journal, outcomes_for_unknown_shards_or_foreign_tasks_are_refused) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    apply_outcome unknown;
    unknown.shard = 1;
    EXPECT_EQ(commit_sync(*j, unknown).error(), core::errc::bad_request);
    apply_outcome foreign;
    foreign.shard = 0;
    foreign.put_errors.push_back(error_task{1, 1, 1, 1, {}, {}, 1});
    EXPECT_EQ(commit_sync(*j, foreign).error(), core::errc::bad_request);
    EXPECT_EQ(j->get_stats().error_count, 0u);
}

TEST(journal, commit_outcome_is_atomic) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
    ASSERT_TRUE(append_sync(*j, make_ops(5, clock)));
    apply_outcome o;
    o.shard = 0;
    o.cursor = 5;
    o.put_errors.push_back(error_task{0, 2, 10, 1, {"e"}, j->read_op_bytes(2).value(), 1});
    o.put_dead.push_back(dead_letter{error_task{0, 3, 0, 3, {"e"}, j->read_op_bytes(3).value(), 1}, 2});
    j->fail_next_commit_for_test(MDB_MAP_FULL);
    EXPECT_EQ(commit_sync(*j, o).error(), core::errc::journal_full);
    EXPECT_EQ(j->cursor(0), 0u);
    EXPECT_TRUE(j->due_errors(0, UINT64_MAX, 10).value().empty());
    EXPECT_TRUE(j->list_dead(10).value().empty());
    EXPECT_TRUE(j->healthy());

    ASSERT_TRUE(commit_sync(*j, o));
    EXPECT_EQ(j->cursor(0), 5u);
    EXPECT_EQ(j->due_errors(0, UINT64_MAX, 10).value().size(), 1u);
    EXPECT_EQ(j->list_dead(10).value().size(), 1u);
}

// A failover: the shard lacks what this gateway applied there, and the apply worker rewinds the
// cursor to the shard's mark (shards/apply_worker.hpp), never below what retention still keeps.
TEST(journal, a_cursor_is_rewound_only_when_asked_and_only_to_ops_still_kept) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(60);
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->first_seq().value(), 1u);  // nothing journaled: last_seq + 1
    ASSERT_TRUE(append_sync(*j, make_ops(5, clock)));
    EXPECT_EQ(j->first_seq().value(), 1u);
    ASSERT_TRUE(test::advance_cursor(*j, 0, 5));
    apply_outcome back;
    back.shard = 0;
    back.cursor = 2;
    back.rewind = true;
    ASSERT_TRUE(commit_sync(*j, back));
    EXPECT_EQ(j->cursor(0), 2u);
    EXPECT_EQ(j->read_ops(j->cursor(0), 10).value().size(), 3u);  // seqs 3..5 are read again
    // Applied and older than the retention: deleted; the first kept op is the newest one.
    ASSERT_TRUE(test::advance_cursor(*j, 0, 5));
    wall.advance(61'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));  // retention runs before each group
    EXPECT_EQ(j->first_seq().value(), 6u);
    back.cursor = 5;
    ASSERT_TRUE(commit_sync(*j, back));  // 5 = first_seq - 1: nothing kept is skipped
    EXPECT_EQ(j->cursor(0), 5u);
}

// Late applications (retries, re-injected dead letters) are numbered per shard as they commit; the
// numbers survive a reopen and keep counting after retention deleted the entries, so a shard's late
// mark never names a number that is given again.
// Two outcomes of one shard in groups committed back to back: the second is numbered while the first
// is committed but not yet durable (so not published), and still comes after it.
TEST(journal, late_applications_of_consecutive_groups_are_numbered_after_each_other) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(60);
    o.group_ops_max = 2;  // an outcome with one late application weighs 2: one per group
    auto j = std::move(journal::open(o, clock).value());
    test::writer_gate gate(*j);
    test::collector<appended> appended_first;
    j->append(make_ops(1, clock), {}, appended_first.callback(0));
    gate.wait_entered();
    test::collector<void> c;
    for (std::uint64_t seq : {5, 6, 7}) {
        apply_outcome out;
        out.put_late.push_back({0, 999, seq, wall.now(), "op " + std::to_string(seq)});
        j->commit_outcome(std::move(out), c.callback(seq));
    }
    gate.release();
    for (std::size_t seq : {5, 6, 7}) ASSERT_TRUE(c.get(seq));
    EXPECT_EQ(j->late_last(0), 3u);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> got;  // (number, seq)
    const auto listed = j->list_late(0, 0, 10);
    ASSERT_TRUE(listed);
    for (const auto& l : listed.value()) got.emplace_back(l.number, l.seq);
    EXPECT_EQ(got, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 5}, {2, 6}, {3, 7}}));
}

TEST(journal, late_applications_are_numbered_per_shard_and_the_numbers_never_repeat) {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto o = test::test_options(dir.path(), wall);
    o.retention = std::chrono::seconds(60);
    o.shard_count = 2;
    auto late = [&](std::uint32_t shard, std::vector<std::uint64_t> seqs) {
        apply_outcome out;
        out.shard = shard;
        for (auto seq : seqs) out.put_late.push_back({shard, 999, seq, wall.now(), "op " + std::to_string(seq)});
        return out;
    };
    auto numbers = [](const std::vector<late_apply>& v) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> out;  // (number, seq)
        for (const auto& l : v) out.emplace_back(l.number, l.seq);
        return out;
    };
    using pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
    {
        auto j = std::move(journal::open(o, clock).value());
        EXPECT_EQ(j->late_last(0), 0u);
        EXPECT_TRUE(j->list_late(0, 0, 10).value().empty());
        ASSERT_TRUE(commit_sync(*j, late(0, {4, 2})));
        ASSERT_TRUE(commit_sync(*j, late(1, {3})));
        // Two outcomes of one shard in one group: numbered in queue order, after each other.
        test::writer_gate gate(*j);
        test::collector<appended> appended_first;
        j->append(make_ops(1, clock), {}, appended_first.callback(0));
        gate.wait_entered();
        test::collector<void> c;
        j->commit_outcome(late(0, {7}), c.callback(0));
        j->commit_outcome(late(0, {9, 8}), c.callback(1));
        gate.release();
        ASSERT_TRUE(c.get(0));
        ASSERT_TRUE(c.get(1));
        EXPECT_EQ(j->late_last(0), 5u);
        EXPECT_EQ(j->late_last(1), 1u);
        EXPECT_EQ(numbers(j->list_late(0, 0, 10).value()), (pairs{{1, 4}, {2, 2}, {3, 7}, {4, 9}, {5, 8}}));
        EXPECT_EQ(numbers(j->list_late(0, 3, 10).value()), (pairs{{4, 9}, {5, 8}}));
        EXPECT_EQ(numbers(j->list_late(0, 0, 2).value()), (pairs{{1, 4}, {2, 2}}));
        EXPECT_TRUE(j->list_late(0, 5, 10).value().empty());
        EXPECT_EQ(numbers(j->list_late(1, 0, 10).value()), (pairs{{1, 3}}));
        EXPECT_EQ(j->list_late(0, 0, 1).value().front().op_bytes, "op 4");
        // Another shard's entry in an outcome is refused, and nothing of it is written.
        auto wrong = late(0, {11});
        wrong.put_late.front().shard = 1;
        EXPECT_EQ(commit_sync(*j, wrong).error(), core::errc::bad_request);
        EXPECT_EQ(j->late_last(0), 5u);
    }
    auto j = std::move(journal::open(o, clock).value());
    EXPECT_EQ(j->late_last(0), 5u);  // kept across a reopen
    EXPECT_EQ(j->list_late(0, 0, 10).value().size(), 5u);
    // Older than the retention: deleted; the next number still follows the last one given.
    wall.advance(61'000);
    ASSERT_TRUE(append_sync(*j, make_ops(1, clock)));  // retention runs before each group
    EXPECT_TRUE(j->list_late(0, 0, 10).value().empty());
    EXPECT_TRUE(j->list_late(1, 0, 10).value().empty());
    ASSERT_TRUE(commit_sync(*j, late(0, {12})));
    EXPECT_EQ(numbers(j->list_late(0, 0, 10).value()), (pairs{{6, 12}}));
    EXPECT_EQ(j->late_last(0), 6u);
}

TEST(journal_death, a_cursor_is_never_rewound_past_what_retention_deleted) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::temp_dir dir;
    EXPECT_DEATH(
        {
            test::manual_wall wall;
            core::hlc clock(7, wall.fn());
            auto o = test::test_options(dir.path(), wall);
            o.retention = std::chrono::seconds(60);
            auto j = std::move(journal::open(o, clock).value());
            if (!append_sync(*j, make_ops(5, clock))) std::abort();
            if (!test::advance_cursor(*j, 0, 5)) std::abort();
            wall.advance(61'000);
            if (!append_sync(*j, make_ops(1, clock))) std::abort();
            apply_outcome back;
            back.shard = 0;
            back.cursor = 2;
            back.rewind = true;
            (void)commit_sync(*j, back);
        },
        "o.cursor \\+ 1 >= first");
}

TEST(journal_death, a_cursor_never_moves_backwards) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::temp_dir dir;
    EXPECT_DEATH(
        {
            test::manual_wall wall;
            core::hlc clock(7, wall.fn());
            auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
            if (!append_sync(*j, make_ops(5, clock))) std::abort();
            if (!test::advance_cursor(*j, 0, 4)) std::abort();
            (void)test::advance_cursor(*j, 0, 3);
        },
        "o.cursor >= current");
}

TEST(journal_death, a_cursor_never_passes_the_last_op) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::temp_dir dir;
    EXPECT_DEATH(
        {
            test::manual_wall wall;
            core::hlc clock(7, wall.fn());
            auto j = std::move(journal::open(test::test_options(dir.path(), wall), clock).value());
            if (!append_sync(*j, make_ops(5, clock))) std::abort();
            (void)test::advance_cursor(*j, 0, 6);
        },
        "o.cursor < next");
}

}  // namespace
}  // namespace cairn::journal
