#include "journal/journal.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"
#include "journal/detail/lmdb.hpp"
#include "journal/detail/record_codec.hpp"
#include "journal/detail/record_format.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <variant>

namespace cairn::journal {
namespace {

using namespace std::chrono_literals;
using detail::view;

constexpr unsigned readers_max = 256;
// Retention deletes at most this many records per pass, so that one pass is a short transaction.
constexpr std::size_t retention_deletes_per_pass = 10'000;
constexpr std::uint64_t retention_interval_ms = 1'000;
// Above this share of the map, retention deletes applied ops whatever their age.
constexpr std::uint64_t pressure_percent = 80;
constexpr auto writer_idle_wait = 1s;
constexpr const char* lock_file_name = "cairn-journal.lock";

core::error_code system_error(int e) { return {e, boost::system::generic_category()}; }

bool is_full(int rc) { return rc == MDB_MAP_FULL || rc == MDB_TXN_FULL; }
// A full file system fails the transaction's page writes, which LMDB aborts: nothing of it is
// referenced, so the journal stays consistent and may commit again once there is room. (A failure
// to write the meta page makes LMDB refuse every later transaction with MDB_PANIC, which is sticky.)
bool is_disk_full(int rc) { return rc == ENOSPC || rc == EDQUOT; }

struct append_req {
    std::vector<core::op> ops;
    std::string key;
    journal::append_callback done;
    appended value;
    core::error_code error;  // set when this request alone failed inside the group
};

struct outcome_req {
    apply_outcome outcome;
    journal::done_callback done;
};

using request = std::variant<append_req, outcome_req>;

std::size_t weight(const request& r) {
    if (const auto* a = std::get_if<append_req>(&r)) return a->ops.size();
    const auto& o = std::get<outcome_req>(r).outcome;
    return 1 + o.put_errors.size() + o.remove_errors.size() + o.put_dead.size() + o.remove_dead.size() +
           o.put_edits.size() + o.put_late.size();
}

template <class F, class... Args>
void invoke_callback(F& fn, Args&&... args) noexcept {
    try {
        fn(std::forward<Args>(args)...);
    } catch (const std::exception& e) {
        spdlog::error("journal: a completion callback threw: {}", e.what());
    } catch (...) {
        spdlog::error("journal: a completion callback threw an unknown exception");
    }
}

void complete(request& r, const core::error_code& ec) {
    if (auto* a = std::get_if<append_req>(&r)) {
        invoke_callback(a->done, core::result<appended>(ec));
    } else {
        invoke_callback(std::get<outcome_req>(r).done, core::result<void>(ec));
    }
}

// Pages held by the databases (not the freelist's reusable pages), in bytes.
core::result<std::uint64_t> used_bytes(const detail::txn& t, std::span<const MDB_dbi> dbis) {
    std::uint64_t pages = 2;  // the two meta pages
    std::uint64_t psize = 0;
    auto add = [&](MDB_dbi dbi) -> int {
        MDB_stat st{};
        if (int rc = mdb_stat(t.get(), dbi, &st); rc != 0) return rc;
        psize = st.ms_psize;
        pages += st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
        return 0;
    };
    // 0 is LMDB's freelist, 1 the main database that names the others.
    for (MDB_dbi dbi : {MDB_dbi{0}, MDB_dbi{1}}) {
        if (int rc = add(dbi); rc != 0) return detail::lmdb_error(rc);
    }
    for (MDB_dbi dbi : dbis) {
        if (int rc = add(dbi); rc != 0) return detail::lmdb_error(rc);
    }
    return pages * psize;
}

}  // namespace

struct journal::impl {
    options opts;
    detail::env env;
    int lock_fd = -1;
    struct {
        MDB_dbi ops = 0, cursors = 0, errors = 0, dead = 0, idem = 0, idem_time = 0, meta = 0, edits = 0, late = 0;
    } db;

    // Shared between callers and the writer, under mu.
    std::mutex mu;
    std::condition_variable cv;
    std::deque<request> queue;
    std::size_t pending_ops = 0;       // append ops queued or being written
    std::size_t pending_outcomes = 0;  // outcomes queued or being written
    bool stopping = false;

    std::atomic<bool> failed{false};
    std::atomic<std::uint64_t> last_seq{0};
    std::atomic<std::uint64_t> min_cursor{0};
    std::unique_ptr<std::atomic<std::uint64_t>[]> cursors;  // opts.shard_count entries
    std::unique_ptr<std::atomic<std::uint64_t>[]> late_last;  // opts.shard_count entries, published when durable
    std::atomic<int> inject_commit_error{0};

    std::mutex listener_mu;
    std::function<void(std::uint64_t)> listener;

    // read_ops_shared's batches, the most recent last, under batches_mu (held only to find or
    // add an entry; the decode runs under the entry's once flag).
    struct shared_batch {
        std::uint64_t after_seq = 0;
        std::size_t max = 0;
        std::size_t bytes_max = 0;
        std::once_flag once;
        core::result<std::shared_ptr<const journal::op_batch>> batch = core::errc::journal_corrupt;
    };
    static constexpr std::size_t shared_batches_kept = 4;
    std::mutex batches_mu;
    std::deque<std::shared_ptr<shared_batch>> batches;

    core::histogram commit_latency{core::histogram::latency_bounds()};
    core::histogram group_ops{core::histogram::size_bounds()};
    core::counter ops_appended;
    core::counter ops_retired;

    std::uint64_t journal_id = 0;  // meta journal_id: set by open, read-only afterwards

    // Writer thread only: what it committed (ahead of what is published by at most one group).
    std::unique_ptr<std::uint64_t[]> late_committed;  // opts.shard_count entries
    std::uint64_t next_seq = 1;
    std::uint64_t ts_max = 0;
    std::uint64_t retention_last_ms = 0;
    bool retention_ran = false;
    bool retention_more = false;       // the last pass stopped at its budget
    bool pressure = false;             // the map was over pressure_percent at the last pass
    bool force_size_pass = false;      // MDB_MAP_FULL happened: delete applied ops now
    std::uint64_t pressure_min_cursor = 0;

    // A group committed but not yet durable, with what its acknowledgement publishes. The environment
    // runs with MDB_NOMETASYNC: a commit flushes the data file (fdatasync), then writes its meta page
    // without a flush, so the commit becomes durable with the next flush of the file — the next
    // group's commit, or an explicit mdb_env_sync when nothing else is queued (sync_unsynced). One
    // flush per group under load instead of two (docs/journal-format.md, "What is durable when").
    // Nothing of a group is acknowledged or published (last_seq, cursors, the commit listener)
    // before it is durable. At most one group waits: every commit's flush makes the one before durable.
    struct unsynced_group {
        std::vector<request> group;
        std::uint64_t last_seq = 0;
        bool appended_any = false;
        std::size_t ops_written = 0;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> cursor_updates;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> late_updates;
        std::chrono::steady_clock::time_point started;
    };
    std::optional<unsynced_group> unsynced;  // writer thread only
    std::uint64_t group_commits = 0;         // writer thread only: group transactions committed
    std::uint64_t file_bytes = 0;            // writer thread only: data.mdb's size when grow_ahead last looked
    std::uint64_t page_bytes = 0;            // LMDB's page size: set by open, read-only afterwards
    bool grow_failing = false;               // writer thread only: the last extension failed (logged once)
    std::atomic<int> inject_sync_error{0};
    core::counter idle_syncs;

    std::thread writer;

    ~impl() {
        // The environment closes before the lock is released, so no other opener sees it open.
        env = detail::env();
        if (lock_fd >= 0) ::close(lock_fd);
    }

    std::array<MDB_dbi, detail::dbs_used> all_dbis() const {
        return {db.ops, db.cursors, db.errors, db.dead, db.idem, db.idem_time, db.meta, db.edits, db.late};
    }

    void update_min_cursor() {
        std::uint64_t m = UINT64_MAX;
        for (std::uint32_t s = 0; s < opts.shard_count; ++s) m = std::min(m, cursors[s].load());
        min_cursor.store(m);
    }

    void fail_sticky(const char* what, int rc) {
        if (!failed.exchange(true)) {
            spdlog::critical("journal {}: {} failed: {} ({}); refusing writes until restart", opts.path, what,
                             mdb_strerror(rc), rc);
        }
    }

    // ---- the writer thread ----

    void run() {
        for (;;) {
            std::vector<request> group;
            {
                std::unique_lock lock(mu);
                // A commit waiting for its flush is not left waiting for traffic.
                if (!unsynced) cv.wait_for(lock, writer_idle_wait, [&] { return stopping || !queue.empty(); });
                if (stopping) break;
                std::size_t ops = 0;
                while (!queue.empty()) {
                    const std::size_t w = weight(queue.front());
                    if (!group.empty() && ops + w > opts.group_ops_max) break;
                    ops += w;
                    group.push_back(std::move(queue.front()));
                    queue.pop_front();
                }
            }
            if (group.empty() && unsynced) {
                // Nothing else to commit, whose flush would make the last commit durable: flush now.
                sync_unsynced();
                continue;
            }
            if (!failed.load()) retire();
            if (!group.empty()) {
                if (!failed.load()) grow_ahead();
                const std::uint64_t before = group_commits;
                process(group);
                // The group did not commit (refused, map full, failed): no flush came of it.
                if (group_commits == before) sync_unsynced();
            }
        }
        // Shutting down: what is committed is flushed and acknowledged; what is still queued was
        // never written.
        sync_unsynced();
        std::deque<request> rest;
        {
            std::lock_guard lock(mu);
            rest.swap(queue);
            pending_ops = 0;
            pending_outcomes = 0;
        }
        for (auto& r : rest) complete(r, core::errc::shutting_down);
    }

    void release(const std::vector<request>& group) {
        std::size_t ops = 0;
        std::size_t outcomes = 0;
        for (const auto& r : group) {
            if (const auto* a = std::get_if<append_req>(&r)) {
                ops += a->ops.size();
            } else {
                ++outcomes;
            }
        }
        std::lock_guard lock(mu);
        CAIRN_ASSERT(pending_ops >= ops);
        CAIRN_ASSERT(pending_outcomes >= outcomes);
        pending_ops -= ops;
        pending_outcomes -= outcomes;
    }

    void fail_group(std::vector<request>& group, core::errc e, bool appends, bool outcomes) {
        for (auto& r : group) {
            const bool is_append = std::holds_alternative<append_req>(r);
            if ((is_append && appends) || (!is_append && outcomes)) complete(r, e);
        }
    }

    void process(std::vector<request>& group) {
        if (failed.load()) {
            release(group);
            fail_group(group, core::errc::journal_failed, true, true);
            return;
        }
        const bool has_appends =
            std::any_of(group.begin(), group.end(), [](const request& r) { return r.index() == 0; });
        const bool has_outcomes =
            std::any_of(group.begin(), group.end(), [](const request& r) { return r.index() == 1; });
        int rc = write_group(group, true);
        if (rc == 0) return;
        if (is_full(rc)) {
            force_size_pass = true;
            spdlog::warn("journal {}: the map is full ({} bytes); refusing appends until retention frees space",
                         opts.path, opts.size_bytes_max);
            if (has_appends && has_outcomes) {
                // Outcomes advance cursors, which lets retention free space: try them alone
                // rather than let appends starve them.
                std::vector<request> appends;
                std::vector<request> outcomes;
                for (auto& r : group) (r.index() == 0 ? appends : outcomes).push_back(std::move(r));
                release(appends);
                fail_group(appends, core::errc::journal_full, true, false);
                rc = write_group(outcomes, false);
                if (rc == 0) return;
                group = std::move(outcomes);
                if (is_full(rc)) {
                    release(group);
                    fail_group(group, core::errc::journal_full, true, true);
                    return;
                }
            } else {
                release(group);
                fail_group(group, core::errc::journal_full, true, true);
                return;
            }
        }
        if (is_disk_full(rc)) {
            spdlog::warn("journal {}: the disk is full ({}); refusing writes until there is room", opts.path,
                         std::strerror(rc));
            release(group);
            fail_group(group, core::errc::disk_full, true, true);
            return;
        }
        fail_sticky("a group commit", rc);
        release(group);
        fail_group(group, core::errc::journal_failed, true, true);
    }

    // Writes and commits group in one transaction. On success completes every request and
    // returns 0; otherwise returns the LMDB error with nothing committed and nothing completed.
    int write_group(std::vector<request>& group, bool appends_allowed) {
        const auto started = std::chrono::steady_clock::now();
        detail::txn t;
        if (int rc = detail::txn::begin_write(env, t); rc != 0) return rc;
        std::uint64_t seq = next_seq;
        std::uint64_t ts_seen = ts_max;
        const std::uint64_t wall = opts.wall_ms();
        std::size_t ops_written = 0;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> cursor_updates;
        std::vector<std::pair<std::uint32_t, std::uint64_t>> late_updates;  // (shard, last number), in order
        for (auto& r : group) {
            int rc = 0;
            if (auto* a = std::get_if<append_req>(&r)) {
                CAIRN_ASSERT(appends_allowed);
                rc = write_append(t, *a, seq, ts_seen, wall, ops_written);
            } else {
                rc = write_outcome(t, std::get<outcome_req>(r).outcome, seq, cursor_updates, late_updates);
            }
            if (rc != 0) return rc;
        }
        // next_seq is written even when it did not move, so that the transaction is never empty: LMDB
        // skips the flush of a commit that wrote nothing, and the group before this one counts on
        // this commit's flush.
        if (int rc = t.put(db.meta, detail::meta_next_seq, detail::u64_be(seq)); rc != 0) return rc;
        if (seq != next_seq) {
            if (int rc = t.put(db.meta, detail::meta_ts_max, detail::u64_be(ts_seen)); rc != 0) return rc;
        }
        int rc = 0;
        if (int injected = inject_commit_error.exchange(0); injected != 0) {
            t.abort();
            rc = injected;
        } else {
            rc = t.commit();
        }
        if (rc != 0) return rc;

        // Committed, and its data flushed; its meta page is not (MDB_NOMETASYNC). The writer's own
        // view moves on at once; the group is acknowledged and published once it is durable. This
        // commit's flush made the group committed before it durable: that one is acknowledged now.
        ++group_commits;
        const bool appended_any = seq != next_seq;
        next_seq = seq;
        ts_max = ts_seen;
        for (const auto& [shard, n] : late_updates) late_committed[shard] = n;
        std::size_t weight_total = 0;
        for (const auto& r : group) weight_total += weight(r);
        group_ops.observe(static_cast<double>(weight_total));
        std::optional<unsynced_group> durable = std::exchange(
            unsynced, unsynced_group{std::move(group), seq - 1, appended_any, ops_written, std::move(cursor_updates),
                                     std::move(late_updates), started});
        if (durable) acknowledge(*durable);
        return 0;
    }

    // Keeps data.mdb at least grow_bytes / 2 past the last page in use, writing grow_bytes of zeros
    // after its end at a time (up to the map size). A commit then writes into blocks the file
    // already has, and its fdatasync flushes data only: when the file grows, ext4's fdatasync must
    // also commit the new size and block allocation to its own journal, which made a commit about
    // 2.5 times as slow here (docs/journal-format.md, "Growing the file ahead"). Runs between
    // transactions on the writer thread, the only writer of the file, and writes only after the
    // file's current end, which no committed page lies beyond: LMDB's own pages are never touched.
    // The zeros become durable with the next commit's flush; a crash before that leaves a shorter
    // file or zeros past the last page, which LMDB never reads. A failed extension (a full disk) is
    // logged and changes nothing else: LMDB then grows the file itself, and reports what it hits.
    void grow_ahead() {
        if (opts.grow_bytes == 0) return;
        MDB_envinfo info{};
        if (mdb_env_info(env.get(), &info) != 0) return;
        const std::uint64_t used = (std::uint64_t{info.me_last_pgno} + 1) * page_bytes;
        const std::uint64_t map = info.me_mapsize;
        // The size last seen is a lower bound (only LMDB and this function grow the file): look at
        // the file itself only when that bound is not enough.
        const auto far_enough = [&] { return used + opts.grow_bytes / 2 <= file_bytes || file_bytes >= map; };
        if (far_enough()) return;
        int fd = -1;
        if (mdb_env_get_fd(env.get(), &fd) != 0) return;
        struct ::stat fs{};
        if (::fstat(fd, &fs) != 0) return;
        file_bytes = static_cast<std::uint64_t>(fs.st_size);
        if (far_enough()) return;
        const std::uint64_t end = std::min(map, std::max(file_bytes, used) + opts.grow_bytes);
        static const std::array<char, 64 * 1024> zeros{};
        while (file_bytes < end) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(zeros.size(), end - file_bytes));
            const ssize_t w = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(file_bytes));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                if (!grow_failing) {
                    spdlog::warn("journal {}: could not grow data.mdb past {} bytes: {}; LMDB grows it as it needs",
                                 opts.path, file_bytes, std::strerror(w < 0 ? errno : ENOSPC));
                }
                grow_failing = true;
                return;
            }
            file_bytes += static_cast<std::uint64_t>(w);
        }
        grow_failing = false;
    }

    // Flushes the data file, which makes the group committed last durable, and acknowledges it. On a
    // failed flush (or a journal failed meanwhile: after a failed fsync the kernel may have dropped
    // the dirty pages, so a later one proves nothing) the group's requests get errc::journal_failed:
    // what they wrote may or may not survive, and nothing of it was published.
    void sync_unsynced() {
        if (!unsynced) return;
        unsynced_group u = std::move(*unsynced);
        unsynced.reset();
        int rc = 0;
        if (failed.load()) {
            rc = EIO;
        } else if (int injected = inject_sync_error.exchange(0); injected != 0) {
            rc = injected;
        } else {
            rc = mdb_env_sync(env.get(), 1);
        }
        if (rc != 0) {
            fail_sticky("a flush", rc);
            release(u.group);
            fail_group(u.group, core::errc::journal_failed, true, true);
            return;
        }
        idle_syncs.inc();
        acknowledge(u);
    }

    // A durable group: publish what it committed, then complete its requests. Its ops count as
    // pending (append's bounds) until last_seq has moved past them.
    void acknowledge(unsynced_group& u) {
        last_seq.store(u.last_seq);
        for (const auto& [shard, c] : u.cursor_updates) cursors[shard].store(c);
        for (const auto& [shard, n] : u.late_updates) late_last[shard].store(n);
        if (!u.cursor_updates.empty()) update_min_cursor();
        release(u.group);
        commit_latency.observe(std::chrono::steady_clock::now() - u.started);
        ops_appended.inc(u.ops_written);
        for (auto& r : u.group) {
            if (auto* a = std::get_if<append_req>(&r)) {
                if (a->error) {
                    invoke_callback(a->done, core::result<appended>(a->error));
                } else {
                    invoke_callback(a->done, core::result<appended>(std::move(a->value)));
                }
            } else {
                invoke_callback(std::get<outcome_req>(r).done, core::result<void>(core::success()));
            }
        }
        if (u.appended_any) {
            std::function<void(std::uint64_t)> fn;
            {
                std::lock_guard lock(listener_mu);
                fn = listener;
            }
            if (fn) invoke_callback(fn, u.last_seq);
        }
    }

    int write_append(detail::txn& t, append_req& a, std::uint64_t& seq, std::uint64_t& ts_seen,
                     std::uint64_t wall, std::size_t& ops_written) {
        const std::uint64_t retention_ms = static_cast<std::uint64_t>(opts.retention.count()) * 1000;
        if (!a.key.empty()) {
            std::string_view existing;
            int rc = t.get(db.idem, a.key, existing);
            if (rc == 0) {
                auto e = detail::decode_idem(std::span(existing.data(), existing.size()));
                if (!e) {
                    spdlog::error("journal {}: the idempotency entry of a key does not decode", opts.path);
                    a.error = e.error();
                    return 0;
                }
                const bool fresh = wall < e.value().wall_ms || wall - e.value().wall_ms < retention_ms;
                if (fresh) {
                    a.value = std::move(e.value().result);
                    a.value.deduplicated = true;
                    return 0;
                }
                // Expired but not yet retired: the key starts afresh.
                rc = t.del(db.idem_time, detail::idem_time_key(e.value().wall_ms, a.key));
                if (rc != 0 && rc != MDB_NOTFOUND) return rc;
            } else if (rc != MDB_NOTFOUND) {
                return rc;
            }
        }
        a.value.first_seq = seq;
        a.value.ts.reserve(a.ops.size());
        a.value.op_ids.reserve(a.ops.size());
        std::string value;
        for (auto& o : a.ops) {
            CAIRN_ASSERT(seq <= detail::seq_max);
            if (o.op_id == 0) o.op_id = core::make_op_id(opts.node_id, seq);
            value.assign(detail::ops_value_header_bytes, '\0');
            detail::put_be(value.data(), wall, 8);
            core::encode_op(o, value);
            const auto key = detail::ops_key(seq);
            // MDB_APPEND: seqs only grow, so every put lands at the end of the tree.
            if (int rc = t.put(db.ops, view(key), value, MDB_APPEND); rc != 0) return rc;
            a.value.ts.push_back(o.ts);
            a.value.op_ids.push_back(o.op_id);
            ts_seen = std::max(ts_seen, o.ts);
            ++seq;
        }
        a.value.last_seq = seq - 1;
        ops_written += a.ops.size();
        if (!a.key.empty()) {
            if (int rc = t.put(db.idem, a.key, detail::encode_idem(a.value, wall)); rc != 0) return rc;
            if (int rc = t.put(db.idem_time, detail::idem_time_key(wall, a.key), {}); rc != 0) return rc;
        }
        return 0;
    }

    int write_outcome(detail::txn& t, const apply_outcome& o, std::uint64_t next,
                      std::vector<std::pair<std::uint32_t, std::uint64_t>>& cursor_updates,
                      std::vector<std::pair<std::uint32_t, std::uint64_t>>& late_updates) {
        for (const auto& e : o.remove_errors) {
            const int rc = t.del(db.errors, view(detail::errors_key(e.shard, e.due_ms, e.seq)));
            if (rc != 0 && rc != MDB_NOTFOUND) return rc;
        }
        for (const auto& e : o.put_errors) {
            const int rc = t.put(db.errors, view(detail::errors_key(e.shard, e.due_ms, e.seq)), detail::encode_task(e));
            if (rc != 0) return rc;
        }
        for (const auto& d : o.remove_dead) {
            const int rc = t.del(db.dead, view(detail::dead_key(d.task.shard, d.task.seq)));
            if (rc != 0 && rc != MDB_NOTFOUND) return rc;
        }
        for (const auto& d : o.put_dead) {
            const int rc = t.put(db.dead, view(detail::dead_key(d.task.shard, d.task.seq)), detail::encode_dead(d));
            if (rc != 0) return rc;
        }
        for (const auto& e : o.put_edits) {
            const int rc = t.put(db.edits, view(detail::dead_key(e.shard, e.seq)), detail::encode_edit(e));
            if (rc != 0) return rc;
        }
        if (!o.put_late.empty()) {
            // Numbered after this group's earlier outcomes of the shard, else after the last committed
            // number (not the published one, which lags while a group waits for its flush).
            std::uint64_t number = late_committed[o.shard];
            for (const auto& [shard, n] : late_updates) {
                if (shard == o.shard) number = n;
            }
            for (const auto& l : o.put_late) {
                late_apply numbered = l;
                numbered.shard = o.shard;
                numbered.number = ++number;
                const int rc = t.put(db.late, view(detail::dead_key(o.shard, number)), detail::encode_late(numbered));
                if (rc != 0) return rc;
            }
            if (int rc = t.put(db.meta, detail::meta_late_last_key(o.shard), detail::u64_be(number)); rc != 0) return rc;
            late_updates.emplace_back(o.shard, number);
        }
        if (o.put_route) {
            if (int rc = t.put(db.meta, detail::meta_route, *o.put_route); rc != 0) return rc;
        }
        if (o.cursor) {
            const auto key = detail::cursor_key(o.shard);
            std::string_view current_bytes;
            std::uint64_t current = 0;
            const int rc = t.get(db.cursors, view(key), current_bytes);
            if (rc == 0) {
                CAIRN_ASSERT(current_bytes.size() == detail::cursor_value_bytes);
                current = detail::get_be(current_bytes.data(), 8);
            } else if (rc != MDB_NOTFOUND) {
                return rc;
            }
            if (o.rewind && *o.cursor < current) {
                // Back to where the shard's data ends; never below what retention still keeps.
                std::string_view k, v;
                detail::cursor c;
                if (int orc = c.open(t, db.ops); orc != 0) return orc;
                const int frc = c.get(k, v, MDB_FIRST);
                if (frc != 0 && frc != MDB_NOTFOUND) return frc;
                const std::uint64_t first = frc == MDB_NOTFOUND ? next : detail::get_be(k.data(), 8);
                CAIRN_ASSERT(*o.cursor + 1 >= first);
            } else {
                CAIRN_ASSERT(*o.cursor >= current);  // a cursor never moves backwards, unless rewound
            }
            CAIRN_ASSERT(*o.cursor < next);  // nor past the last op (of this group, too)
            if (int prc = t.put(db.cursors, view(key), detail::u64_be(*o.cursor)); prc != 0) return prc;
            cursor_updates.emplace_back(o.shard, *o.cursor);
        }
        return 0;
    }

    // Retention: deletes applied ops older than the retention (or, under map pressure, any
    // applied op) and expired idempotency keys, in one short transaction per pass.
    void retire() {
        const std::uint64_t now = opts.wall_ms();
        const std::uint64_t min_c = min_cursor.load();
        const bool interval_passed =
            !retention_ran || now < retention_last_ms || now - retention_last_ms >= retention_interval_ms;
        const bool pressure_eased = pressure && min_c > pressure_min_cursor;
        if (!interval_passed && !retention_more && !pressure_eased && !force_size_pass) return;
        retention_ran = true;
        retention_last_ms = now;

        detail::txn t;
        if (int rc = detail::txn::begin_write(env, t); rc != 0) {
            fail_sticky("beginning a retention transaction", rc);
            return;
        }
        const auto dbis = all_dbis();
        auto used = used_bytes(t, dbis);
        if (!used) {
            fail_sticky("reading the database sizes", used.error().value());
            return;
        }
        const bool size_mode = force_size_pass || used.value() * 100 > opts.size_bytes_max * pressure_percent;
        force_size_pass = false;
        pressure = size_mode;
        pressure_min_cursor = min_c;

        const std::uint64_t retention_ms = static_cast<std::uint64_t>(opts.retention.count()) * 1000;
        const auto old = [&](std::uint64_t wall) { return now >= wall && now - wall >= retention_ms; };
        std::size_t budget = retention_deletes_per_pass;
        std::size_t ops_deleted = 0;
        std::size_t keys_deleted = 0;
        int rc = 0;
        {
            detail::cursor c;
            rc = c.open(t, db.ops);
            std::string_view k;
            std::string_view v;
            if (rc == 0) rc = c.get(k, v, MDB_FIRST);
            while (rc == 0 && budget > 0) {
                if (k.size() != detail::ops_key_bytes || v.size() < detail::ops_value_header_bytes) {
                    spdlog::error("journal {}: retention met a malformed op record; stopping", opts.path);
                    rc = MDB_NOTFOUND;
                    break;
                }
                // Never an op that some shard has not applied.
                if (detail::get_be(k.data(), 8) > min_c) break;
                if (!size_mode && !old(detail::get_be(v.data(), 8))) break;
                if (rc = c.del(); rc != 0) break;
                ++ops_deleted;
                --budget;
                // After a delete the cursor stands on the next record; MDB_NEXT returns it.
                rc = c.get(k, v, MDB_NEXT);
            }
        }
        if (rc == MDB_NOTFOUND) rc = 0;
        if (rc == 0) {
            detail::cursor c;
            rc = c.open(t, db.idem_time);
            std::string_view k;
            std::string_view v;
            if (rc == 0) rc = c.get(k, v, MDB_FIRST);
            while (rc == 0 && budget > 0) {
                if (k.size() < detail::ms_bytes) break;
                const std::uint64_t wall = detail::get_be(k.data(), 8);
                if (!old(wall)) break;
                const std::string key(k.substr(detail::ms_bytes));
                std::string_view entry;
                if (t.get(db.idem, key, entry) == 0) {
                    auto e = detail::decode_idem(std::span(entry.data(), entry.size()));
                    // A key reused after it expired has a newer entry, with its own time key.
                    if (!e || e.value().wall_ms == wall) {
                        if (rc = t.del(db.idem, key); rc != 0) break;
                    }
                }
                if (rc = c.del(); rc != 0) break;
                ++keys_deleted;
                --budget;
                // After a delete the cursor stands on the next record; MDB_NEXT returns it.
                rc = c.get(k, v, MDB_NEXT);
            }
        }
        if (rc == MDB_NOTFOUND) rc = 0;
        // Records of a small table (few: operator actions, successful retries) made longer ago than the
        // retention, walking all of it in key order: time_of(bytes) is the record's time, nullopt for a
        // record that does not decode (deleted too).
        const auto delete_old = [&](MDB_dbi dbi, auto time_of, std::size_t& deleted) {
            if (rc != 0) return;
            detail::cursor c;
            rc = c.open(t, dbi);
            std::string_view k;
            std::string_view v;
            if (rc == 0) rc = c.get(k, v, MDB_FIRST);
            while (rc == 0 && budget > 0) {
                const std::optional<std::uint64_t> at = time_of(std::span(v.data(), v.size()));
                if (!at || old(*at)) {
                    if (rc = c.del(); rc != 0) break;
                    ++deleted;
                    --budget;
                }
                // After a delete the cursor stands on the next record; MDB_NEXT returns it.
                rc = c.get(k, v, MDB_NEXT);
            }
            if (rc == MDB_NOTFOUND) rc = 0;
        };
        std::size_t edits_deleted = 0;
        delete_old(db.edits, [](std::span<const char> b) {
            auto e = detail::decode_edit(b);
            return e ? std::optional<std::uint64_t>(e.value().edited_ms) : std::nullopt;
        }, edits_deleted);
        // Late applications: the numbers keep counting in meta.
        std::size_t late_deleted = 0;
        delete_old(db.late, [](std::span<const char> b) {
            auto l = detail::decode_late(b);
            return l ? std::optional<std::uint64_t>(l.value().applied_ms) : std::nullopt;
        }, late_deleted);
        retention_more = budget == 0;
        if (rc == 0 && ops_deleted + keys_deleted + edits_deleted + late_deleted == 0) return;  // t aborts: nothing to commit
        if (rc == 0) rc = t.commit();
        if (is_full(rc)) {
            spdlog::error("journal {}: retention could not commit: the map is full", opts.path);
            return;
        }
        if (rc != 0) {
            fail_sticky("a retention commit", rc);
            return;
        }
        ops_retired.inc(ops_deleted);
        if (size_mode && ops_deleted > 0) {
            spdlog::warn("journal {}: the map is {}% full: deleted {} applied ops regardless of their age", opts.path,
                         used.value() * 100 / std::max<std::uint64_t>(opts.size_bytes_max, 1), ops_deleted);
        }
    }
};

journal::journal(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

journal::~journal() {
    {
        std::lock_guard lock(impl_->mu);
        impl_->stopping = true;
    }
    impl_->cv.notify_all();
    if (impl_->writer.joinable()) impl_->writer.join();
}

core::result<std::unique_ptr<journal>> journal::open(options opts, core::hlc& clock) {
    if (opts.path.empty() || opts.size_bytes_max == 0 || opts.shard_count == 0 || opts.node_id > core::hlc_node_max ||
        opts.queue_ops_max == 0 || opts.group_ops_max == 0 || !opts.wall_ms) {
        return core::errc::bad_request;
    }
    std::error_code fs_ec;
    std::filesystem::create_directories(opts.path, fs_ec);
    if (fs_ec) return system_error(fs_ec.value());

    auto p = std::make_unique<impl>();
    // LMDB must not be opened twice in one process, and two gateways must not share a journal:
    // an flock on a file of our own refuses both (flock conflicts between open file descriptions,
    // also within one process).
    const std::string lock_path = (std::filesystem::path(opts.path) / lock_file_name).string();
    p->lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (p->lock_fd < 0) return system_error(errno);
    if (::flock(p->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        if (e == EWOULDBLOCK) {
            spdlog::error("journal {}: already open (in this process or another)", opts.path);
            return core::errc::conflict;
        }
        return system_error(e);
    }

    // LMDB wants the map size in whole OS pages.
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t map_bytes = (opts.size_bytes_max + page - 1) / page * page;
    auto e = detail::env::open(opts.path, map_bytes, detail::dbs_max, readers_max);
    if (!e) return e.error();
    p->env = std::move(e.value());
    {
        MDB_stat st{};
        if (int rc = mdb_env_stat(p->env.get(), &st); rc != 0) return detail::lmdb_error(rc);
        p->page_bytes = st.ms_psize;
    }
    {
        int dead = 0;
        if (int rc = mdb_reader_check(p->env.get(), &dead); rc != 0) return detail::lmdb_error(rc);
        if (dead > 0) spdlog::warn("journal {}: cleared {} stale reader slots", opts.path, dead);
    }

    detail::txn t;
    if (int rc = detail::txn::begin_write(p->env, t); rc != 0) return detail::lmdb_error(rc);
    auto open_db = [&](const char* name, MDB_dbi& out) { return mdb_dbi_open(t.get(), name, MDB_CREATE, &out); };
    for (auto [name, out] : {std::pair{detail::db_ops, &p->db.ops}, std::pair{detail::db_cursors, &p->db.cursors},
                             std::pair{detail::db_errors, &p->db.errors}, std::pair{detail::db_dead, &p->db.dead},
                             std::pair{detail::db_idem, &p->db.idem}, std::pair{detail::db_idem_time, &p->db.idem_time},
                             std::pair{detail::db_meta, &p->db.meta}, std::pair{detail::db_edits, &p->db.edits},
                             std::pair{detail::db_late, &p->db.late}}) {
        if (int rc = open_db(name, *out); rc != 0) return detail::lmdb_error(rc);
    }
    // meta: a fresh journal stores its node id and format; an existing one must match them.
    auto meta_u64 = [&](std::string_view key) -> core::result<std::optional<std::uint64_t>> {
        std::string_view v;
        const int rc = t.get(p->db.meta, key, v);
        if (rc == MDB_NOTFOUND) return std::optional<std::uint64_t>{};
        if (rc != 0) return detail::lmdb_error(rc);
        if (v.size() != detail::meta_value_bytes) return core::errc::journal_corrupt;
        return std::optional<std::uint64_t>{detail::get_be(v.data(), 8)};
    };
    auto stored_node = meta_u64(detail::meta_node_id);
    if (!stored_node) return stored_node.error();
    if (!stored_node.value()) {
        if (int rc = t.put(p->db.meta, detail::meta_node_id, detail::u64_be(opts.node_id)); rc != 0) {
            return detail::lmdb_error(rc);
        }
        if (int rc = t.put(p->db.meta, detail::meta_format_version, detail::u64_be(detail::format_version)); rc != 0) {
            return detail::lmdb_error(rc);
        }
    } else if (*stored_node.value() != opts.node_id) {
        spdlog::error("journal {}: it belongs to node id {}, not {}; refusing to open it", opts.path,
                      *stored_node.value(), opts.node_id);
        return core::errc::conflict;
    }
    auto stored_id = meta_u64(detail::meta_journal_id);
    if (!stored_id) return stored_id.error();
    std::uint64_t journal_id = stored_id.value().value_or(0);
    if (journal_id == 0) {
        // Journals older than the id get one now: it only has to differ from every other journal's.
        std::random_device rd;
        while (journal_id == 0) journal_id = (std::uint64_t{rd()} << 32) ^ rd();
        if (int rc = t.put(p->db.meta, detail::meta_journal_id, detail::u64_be(journal_id)); rc != 0) {
            return detail::lmdb_error(rc);
        }
    }
    p->journal_id = journal_id;
    auto version = meta_u64(detail::meta_format_version);
    if (!version) return version.error();
    if (version.value().value_or(0) != detail::format_version) {
        spdlog::error("journal {}: format version {} is not the supported {}", opts.path,
                      version.value().value_or(0), detail::format_version);
        return core::errc::journal_corrupt;
    }

    // The next seq: past the last op, the stored next_seq (ops may all be retired) and every cursor.
    auto stored_next = meta_u64(detail::meta_next_seq);
    if (!stored_next) return stored_next.error();
    std::uint64_t next = std::max<std::uint64_t>(1, stored_next.value().value_or(1));
    auto stored_ts = meta_u64(detail::meta_ts_max);
    if (!stored_ts) return stored_ts.error();
    std::uint64_t ts_max = stored_ts.value().value_or(0);
    {
        detail::cursor c;
        if (int rc = c.open(t, p->db.ops); rc != 0) return detail::lmdb_error(rc);
        std::string_view k;
        std::string_view v;
        const int rc = c.get(k, v, MDB_LAST);
        if (rc == 0) {
            if (k.size() != detail::ops_key_bytes || v.size() < detail::ops_value_header_bytes) {
                return core::errc::journal_corrupt;
            }
            auto last = core::decode_op(std::span(v.data() + 8, v.size() - 8));
            if (!last) {
                spdlog::error("journal {}: the last op record does not decode", opts.path);
                return last.error();
            }
            next = std::max(next, detail::get_be(k.data(), 8) + 1);
            ts_max = std::max(ts_max, last.value().ts);
        } else if (rc != MDB_NOTFOUND) {
            return detail::lmdb_error(rc);
        }
    }
    p->cursors = std::make_unique<std::atomic<std::uint64_t>[]>(opts.shard_count);
    {
        detail::cursor c;
        if (int rc = c.open(t, p->db.cursors); rc != 0) return detail::lmdb_error(rc);
        std::string_view k;
        std::string_view v;
        for (int rc = c.get(k, v, MDB_FIRST); rc != MDB_NOTFOUND; rc = c.get(k, v, MDB_NEXT)) {
            if (rc != 0) return detail::lmdb_error(rc);
            if (k.size() != detail::cursor_key_bytes || v.size() != detail::cursor_value_bytes) {
                return core::errc::journal_corrupt;
            }
            const auto shard = static_cast<std::uint32_t>(detail::get_be(k.data(), 4));
            const std::uint64_t seq = detail::get_be(v.data(), 8);
            next = std::max(next, seq + 1);
            if (shard < opts.shard_count) {
                p->cursors[shard].store(seq);
            } else {
                spdlog::warn("journal {}: ignoring the cursor of shard {} (shard_count is {})", opts.path, shard,
                             opts.shard_count);
            }
        }
    }
    p->late_last = std::make_unique<std::atomic<std::uint64_t>[]>(opts.shard_count);
    p->late_committed = std::make_unique<std::uint64_t[]>(opts.shard_count);
    for (std::uint32_t shard = 0; shard < opts.shard_count; ++shard) {
        auto n = meta_u64(detail::meta_late_last_key(shard));
        if (!n) return n.error();
        p->late_last[shard].store(n.value().value_or(0));
        p->late_committed[shard] = n.value().value_or(0);
    }
    if (int rc = t.commit(); rc != 0) return detail::lmdb_error(rc);
    // What open wrote (a new journal's id, the node id) is durable before anything is built on it
    // (MDB_NOMETASYNC left the commit's meta page unflushed).
    if (int rc = mdb_env_sync(p->env.get(), 1); rc != 0) return detail::lmdb_error(rc);

    clock.observe(ts_max);
    p->next_seq = next;
    p->ts_max = ts_max;
    p->last_seq.store(next - 1);
    p->opts = std::move(opts);
    p->update_min_cursor();
    impl* raw = p.get();
    std::unique_ptr<journal> j(new journal(std::move(p)));
    raw->writer = std::thread([raw] { raw->run(); });
    return j;
}

void journal::append(std::vector<core::op> ops, std::string idempotency_key, append_callback done) {
    CAIRN_ASSERT(static_cast<bool>(done));
    impl& p = *impl_;
    auto refuse = [&](core::errc e) { invoke_callback(done, core::result<appended>(e)); };
    if (ops.empty() || idempotency_key.size() > detail::idem_key_bytes_max) return refuse(core::errc::bad_request);
    if (ops.size() > p.opts.group_ops_max || ops.size() > p.opts.queue_ops_max) return refuse(core::errc::too_large);
    // Checked here, on the caller's thread, so that one bad op fails only its own request.
    for (const auto& o : ops) {
        const auto* e = std::get_if<core::edge_op>(&o.body);
        if (e != nullptr && !core::valid_graph_name(e->graph)) return refuse(core::errc::bad_request);
        const auto* n = std::get_if<core::node_op>(&o.body);
        if (n != nullptr && (!core::valid_graph_name(n->graph) || n->node_id < 0)) return refuse(core::errc::bad_request);
        const std::string bytes = core::encode_op(o);
        auto back = core::decode_op(bytes);
        if (!back || !(back.value() == o)) return refuse(core::errc::bad_request);
    }
    const std::size_t n = ops.size();
    core::errc refused = core::errc::ok;
    {
        std::lock_guard lock(p.mu);
        const std::uint64_t last = p.last_seq.load();
        const std::uint64_t unapplied = last + p.pending_ops + n - std::min(p.min_cursor.load(), last);
        if (p.stopping) {
            refused = core::errc::shutting_down;
        } else if (p.failed.load()) {
            refused = core::errc::journal_failed;
        } else if (p.pending_ops + n > p.opts.queue_ops_max || unapplied > p.opts.unapplied_ops_max) {
            refused = core::errc::overloaded;
        } else {
            p.pending_ops += n;
            p.queue.emplace_back(append_req{std::move(ops), std::move(idempotency_key), std::move(done), {}, {}});
        }
    }
    // The callback runs without the lock held, so it may call into the journal again.
    if (refused != core::errc::ok) return refuse(refused);
    p.cv.notify_one();
}

void journal::commit_outcome(apply_outcome outcome, done_callback done) {
    CAIRN_ASSERT(static_cast<bool>(done));
    impl& p = *impl_;
    auto refuse = [&](core::errc e) { invoke_callback(done, core::result<void>(e)); };
    if (outcome.shard >= p.opts.shard_count) return refuse(core::errc::bad_request);
    auto check = [&](error_task& t) {
        detail::bound_history(t);
        return t.shard == outcome.shard && t.op_bytes.size() <= core::op_record_bytes_max;
    };
    for (auto* list : {&outcome.put_errors, &outcome.remove_errors}) {
        for (auto& t : *list) {
            if (!check(t)) return refuse(core::errc::bad_request);
        }
    }
    for (auto* list : {&outcome.put_dead, &outcome.remove_dead}) {
        for (auto& d : *list) {
            if (!check(d.task)) return refuse(core::errc::bad_request);
        }
    }
    for (const auto& l : outcome.put_late) {
        if (l.shard != outcome.shard || l.op_bytes.size() > core::op_record_bytes_max) {
            return refuse(core::errc::bad_request);
        }
    }
    if (outcome.put_route && outcome.put_route->size() > detail::route_bytes_max) return refuse(core::errc::bad_request);
    core::errc refused = core::errc::ok;
    {
        std::lock_guard lock(p.mu);
        if (p.stopping) {
            refused = core::errc::shutting_down;
        } else if (p.failed.load()) {
            refused = core::errc::journal_failed;
        } else if (p.pending_outcomes + 1 > p.opts.queue_ops_max) {
            refused = core::errc::overloaded;
        } else {
            ++p.pending_outcomes;
            p.queue.emplace_back(outcome_req{std::move(outcome), std::move(done)});
        }
    }
    if (refused != core::errc::ok) return refuse(refused);
    p.cv.notify_one();
}

void journal::set_commit_listener(std::function<void(std::uint64_t)> fn) {
    std::lock_guard lock(impl_->listener_mu);
    impl_->listener = std::move(fn);
}

namespace {

// Calls fn(seq, append_ms, op) for the ops with seq > after_seq, ascending, at most max (and
// no more once their records reach bytes_max: the op that reaches it is the last), in one
// short read transaction: the one walk behind read_ops (the apply workers' hot path) and
// read_timed_ops. It stops after last_seq: an op past it is committed but not yet durable (nor
// acknowledged), and a crash may still undo it and give its seq to another op.
template <typename Fn>
core::result<void> walk_ops(const detail::env& env, MDB_dbi ops, const std::string& path, std::uint64_t after_seq,
                            std::uint64_t last_seq, std::size_t max, std::size_t bytes_max, Fn&& fn) {
    if (max == 0 || after_seq >= detail::seq_max) return core::success();
    auto t = detail::txn::begin_read(env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), ops); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    const auto start = detail::ops_key(after_seq + 1);
    std::size_t n = 0;
    std::size_t bytes = 0;
    for (int rc = c.seek(view(start), k, v); n < max && bytes < bytes_max; rc = c.get(k, v, MDB_NEXT), ++n) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::ops_key_bytes || v.size() < detail::ops_value_header_bytes) {
            return core::errc::journal_corrupt;
        }
        const std::uint64_t seq = detail::get_be(k.data(), 8);
        CAIRN_ASSERT(seq > after_seq);
        if (seq > last_seq) break;
        auto o = core::decode_op(std::span(v.data() + 8, v.size() - 8));
        if (!o) {
            spdlog::error("journal {}: op {} does not decode", path, seq);
            return o.error();
        }
        bytes += v.size();
        fn(seq, detail::get_be(v.data(), 8), std::move(o.value()));
    }
    return core::success();
}

}  // namespace

core::result<std::vector<std::pair<std::uint64_t, core::op>>> journal::read_ops(std::uint64_t after_seq,
                                                                               std::size_t max,
                                                                               std::size_t bytes_max) const {
    std::vector<std::pair<std::uint64_t, core::op>> out;
    // Ops are large (a variant of every model's op): growing the vector would move each batch
    // of thousands several times.
    const std::uint64_t last = last_seq();
    out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(max, last > after_seq ? last - after_seq : 0)));
    auto r = walk_ops(impl_->env, impl_->db.ops, impl_->opts.path, after_seq, last, max, bytes_max,
                      [&out](std::uint64_t seq, std::uint64_t, core::op&& o) { out.emplace_back(seq, std::move(o)); });
    if (!r) return r.error();
    return out;
}

core::result<std::shared_ptr<const journal::op_batch>> journal::read_ops_shared(std::uint64_t after_seq, std::size_t max,
                                                                              std::size_t bytes_max) const {
    std::shared_ptr<impl::shared_batch> entry;
    {
        std::lock_guard lock(impl_->batches_mu);
        for (const auto& b : impl_->batches) {
            if (b->after_seq == after_seq && b->max == max && b->bytes_max == bytes_max) entry = b;
        }
        // A batch that every shard's cursor has passed is read by no one any more.
        const std::uint64_t passed = impl_->min_cursor.load();
        std::erase_if(impl_->batches, [&](const auto& b) { return b->after_seq < passed && b != entry; });
        if (!entry) {
            entry = std::make_shared<impl::shared_batch>();
            entry->after_seq = after_seq;
            entry->max = max;
            entry->bytes_max = bytes_max;
            impl_->batches.push_back(entry);
            if (impl_->batches.size() > impl::shared_batches_kept) impl_->batches.pop_front();
        }
    }
    std::call_once(entry->once, [&] {
        auto r = read_ops(after_seq, max, bytes_max);
        if (r) {
            entry->batch = std::shared_ptr<const op_batch>(std::make_shared<op_batch>(std::move(r.value())));
        } else {
            entry->batch = r.error();
        }
    });
    if (!entry->batch || entry->batch.value()->empty()) {
        // A failed or empty read is not kept: the next call reads again.
        std::lock_guard lock(impl_->batches_mu);
        std::erase(impl_->batches, entry);
    }
    return entry->batch;
}

core::result<std::vector<timed_op>> journal::read_timed_ops(std::uint64_t after_seq, std::size_t max) const {
    std::vector<timed_op> out;
    auto r = walk_ops(impl_->env, impl_->db.ops, impl_->opts.path, after_seq, last_seq(), max,
                      std::numeric_limits<std::size_t>::max(),
                      [&out](std::uint64_t seq, std::uint64_t ms, core::op&& o) {
                          out.push_back(timed_op{seq, ms, std::move(o)});
                      });
    if (!r) return r.error();
    return out;
}

core::result<std::string> journal::read_op_bytes(std::uint64_t seq) const {
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    std::string_view v;
    const int rc = t.value().get(impl_->db.ops, view(detail::ops_key(seq)), v);
    if (rc == MDB_NOTFOUND) return core::errc::not_found;
    if (rc != 0) return detail::lmdb_error(rc);
    if (v.size() < detail::ops_value_header_bytes) return core::errc::journal_corrupt;
    return std::string(v.substr(detail::ops_value_header_bytes));
}

core::result<std::uint64_t> journal::read_op_time_ms(std::uint64_t seq) const {
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    std::string_view v;
    const int rc = t.value().get(impl_->db.ops, view(detail::ops_key(seq)), v);
    if (rc == MDB_NOTFOUND) return core::errc::not_found;
    if (rc != 0) return detail::lmdb_error(rc);
    if (v.size() < detail::ops_value_header_bytes) return core::errc::journal_corrupt;
    return detail::get_be(v.data(), 8);
}

std::uint64_t journal::cursor(std::uint32_t shard) const {
    CAIRN_ASSERT(shard < impl_->opts.shard_count);
    return impl_->cursors[shard].load();
}

std::uint64_t journal::late_last(std::uint32_t shard) const {
    CAIRN_ASSERT(shard < impl_->opts.shard_count);
    return impl_->late_last[shard].load();
}

core::result<std::vector<late_apply>> journal::list_late(std::uint32_t shard, std::uint64_t after_number,
                                                         std::size_t max) const {
    std::vector<late_apply> out;
    if (max == 0 || after_number == std::numeric_limits<std::uint64_t>::max()) return out;
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.late); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    const auto from = detail::dead_key(shard, after_number + 1);
    for (int rc = c.seek(view(from), k, v); out.size() < max; rc = c.get(k, v, MDB_NEXT)) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::late_key_bytes) return core::errc::journal_corrupt;
        if (detail::get_be(k.data(), 4) != shard) break;
        auto l = detail::decode_late(std::span(v.data(), v.size()));
        if (!l) return l.error();
        if (l.value().shard != shard || l.value().number != detail::get_be(k.data() + 4, 8)) return core::errc::journal_corrupt;
        out.push_back(std::move(l).value());
    }
    return out;
}

core::result<std::string> journal::route_record() const {
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    std::string_view v;
    const int rc = t.value().get(impl_->db.meta, detail::meta_route, v);
    if (rc == MDB_NOTFOUND) return std::string();
    if (rc != 0) return detail::lmdb_error(rc);
    if (v.size() > detail::route_bytes_max) return core::errc::journal_corrupt;
    return std::string(v);
}

core::result<std::uint64_t> journal::first_seq() const {
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.ops); rc != 0) return detail::lmdb_error(rc);
    std::string_view k, v;
    const int rc = c.get(k, v, MDB_FIRST);
    if (rc == MDB_NOTFOUND) return last_seq() + 1;
    if (rc != 0) return detail::lmdb_error(rc);
    if (k.size() != detail::ops_key_bytes) return core::errc::journal_corrupt;
    return detail::get_be(k.data(), 8);
}

std::uint64_t journal::last_seq() const noexcept { return impl_->last_seq.load(); }

std::uint64_t journal::node_id() const noexcept { return impl_->opts.node_id; }
std::uint64_t journal::journal_id() const noexcept { return impl_->journal_id; }

core::result<std::vector<error_task>> journal::due_errors(std::uint32_t shard, std::uint64_t now_ms,
                                                          std::size_t max) const {
    std::vector<error_task> out;
    if (max == 0) return out;
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.errors); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    const auto start = detail::errors_key(shard, 0, 0);
    for (int rc = c.seek(view(start), k, v); out.size() < max; rc = c.get(k, v, MDB_NEXT)) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::errors_key_bytes) return core::errc::journal_corrupt;
        if (detail::get_be(k.data(), 4) != shard) break;
        const std::uint64_t due = detail::get_be(k.data() + 4, 8);
        if (due > now_ms) break;
        auto task = detail::decode_task(std::span(v.data(), v.size()));
        if (!task) return task.error();
        // The key and the record say the same thing, or the record is not to be trusted.
        if (task.value().shard != shard || task.value().due_ms != due ||
            task.value().seq != detail::get_be(k.data() + 12, 8)) {
            return core::errc::journal_corrupt;
        }
        out.push_back(std::move(task.value()));
    }
    return out;
}

core::result<std::vector<dead_letter>> journal::list_dead(std::size_t max) const {
    std::vector<dead_letter> out;
    if (max == 0) return out;
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.dead); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    for (int rc = c.get(k, v, MDB_FIRST); out.size() < max; rc = c.get(k, v, MDB_NEXT)) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::dead_key_bytes) return core::errc::journal_corrupt;
        auto d = detail::decode_dead(std::span(v.data(), v.size()));
        if (!d) return d.error();
        if (d.value().task.shard != detail::get_be(k.data(), 4) || d.value().task.seq != detail::get_be(k.data() + 4, 8)) {
            return core::errc::journal_corrupt;
        }
        out.push_back(std::move(d.value()));
    }
    return out;
}

core::result<std::vector<dead_letter>> journal::list_dead_from(std::uint32_t from_shard, std::uint64_t from_seq,
                                                                std::size_t max) const {
    std::vector<dead_letter> out;
    if (max == 0) return out;
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.dead); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    const auto start = detail::dead_key(from_shard, from_seq);
    for (int rc = c.seek(view(start), k, v); out.size() < max; rc = c.get(k, v, MDB_NEXT)) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::dead_key_bytes) return core::errc::journal_corrupt;
        auto d = detail::decode_dead(std::span(v.data(), v.size()));
        if (!d) return d.error();
        if (d.value().task.shard != detail::get_be(k.data(), 4) || d.value().task.seq != detail::get_be(k.data() + 4, 8)) {
            return core::errc::journal_corrupt;
        }
        out.push_back(std::move(d.value()));
    }
    return out;
}

namespace {
// The record under (shard, seq) of a table keyed as the dead letters are (dead letters, edits):
// read in its own transaction, decoded, and checked to name that key (a record under another key
// is corruption). not_found when there is none. key_of(record) -> std::pair<shard, seq>.
template <class Decode, class KeyOf>
auto get_keyed(const auto& env, const auto& dbi, std::uint32_t shard, std::uint64_t seq, Decode decode, KeyOf key_of)
    -> decltype(decode(std::span<const char>())) {
    auto t = detail::txn::begin_read(env);
    if (!t) return t.error();
    std::string_view v;
    const int rc = t.value().get(dbi, view(detail::dead_key(shard, seq)), v);
    if (rc == MDB_NOTFOUND) return core::errc::not_found;
    if (rc != 0) return detail::lmdb_error(rc);
    auto r = decode(std::span(v.data(), v.size()));
    if (r && key_of(r.value()) != std::pair{shard, seq}) return core::errc::journal_corrupt;
    return r;
}
}  // namespace

core::result<dead_letter> journal::get_dead(std::uint32_t shard, std::uint64_t seq) const {
    return get_keyed(impl_->env, impl_->db.dead, shard, seq, detail::decode_dead,
                     [](const dead_letter& d) { return std::pair{d.task.shard, d.task.seq}; });
}

core::result<op_edit> journal::get_edit(std::uint32_t shard, std::uint64_t seq) const {
    return get_keyed(impl_->env, impl_->db.edits, shard, seq, detail::decode_edit,
                     [](const op_edit& e) { return std::pair{e.shard, e.seq}; });
}

core::result<std::vector<error_task>> journal::list_errors(std::optional<std::uint32_t> shard,
                                                           std::optional<std::uint64_t> seq, std::size_t max) const {
    std::vector<error_task> out;
    if (max == 0) return out;
    auto t = detail::txn::begin_read(impl_->env);
    if (!t) return t.error();
    detail::cursor c;
    if (int rc = c.open(t.value(), impl_->db.errors); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    const auto start = detail::errors_key(shard.value_or(0), 0, 0);
    for (int rc = c.seek(view(start), k, v); out.size() < max; rc = c.get(k, v, MDB_NEXT)) {
        if (rc == MDB_NOTFOUND) break;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::errors_key_bytes) return core::errc::journal_corrupt;
        const auto key_shard = static_cast<std::uint32_t>(detail::get_be(k.data(), 4));
        if (shard && key_shard != *shard) break;
        const std::uint64_t key_seq = detail::get_be(k.data() + 12, 8);
        if (seq && key_seq != *seq) continue;
        auto task = detail::decode_task(std::span(v.data(), v.size()));
        if (!task) return task.error();
        if (task.value().shard != key_shard || task.value().due_ms != detail::get_be(k.data() + 4, 8) ||
            task.value().seq != key_seq) {
            return core::errc::journal_corrupt;
        }
        out.push_back(std::move(task.value()));
    }
    return out;
}

stats journal::get_stats() const {
    const impl& p = *impl_;
    stats s;
    s.last_seq = p.last_seq.load();
    s.failed = p.failed.load();
    s.cursors.reserve(p.opts.shard_count);
    for (std::uint32_t i = 0; i < p.opts.shard_count; ++i) s.cursors.push_back(p.cursors[i].load());
    MDB_envinfo info{};
    if (mdb_env_info(p.env.get(), &info) == 0) s.map_bytes_max = info.me_mapsize;
    auto t = detail::txn::begin_read(p.env);
    if (!t) return s;
    auto entries = [&](MDB_dbi dbi) -> std::uint64_t {
        MDB_stat st{};
        return mdb_stat(t.value().get(), dbi, &st) == 0 ? st.ms_entries : 0;
    };
    s.ops_count = entries(p.db.ops);
    s.error_count = entries(p.db.errors);
    s.dead_count = entries(p.db.dead);
    s.idem_count = entries(p.db.idem);
    const auto dbis = p.all_dbis();
    if (auto used = used_bytes(t.value(), dbis)) s.map_bytes_used = used.value();
    return s;
}

bool journal::healthy() const noexcept { return !impl_->failed.load(); }

core::histogram& journal::commit_latency() { return impl_->commit_latency; }
core::histogram& journal::group_ops() { return impl_->group_ops; }
core::counter& journal::ops_appended() { return impl_->ops_appended; }
core::counter& journal::ops_retired() { return impl_->ops_retired; }
core::counter& journal::idle_syncs() { return impl_->idle_syncs; }

void journal::fail_next_commit_for_test(int mdb_error) { impl_->inject_commit_error.store(mdb_error); }
void journal::fail_next_sync_for_test(int error) { impl_->inject_sync_error.store(error); }

unsigned journal::env_flags_for_test() const {
    unsigned flags = 0;
    const int rc = mdb_env_get_flags(impl_->env.get(), &flags);
    CAIRN_ASSERT(rc == 0);
    return flags;
}

apply_outcome reinject_outcome(std::uint32_t shard, std::span<const dead_letter> letters, std::uint64_t now_ms,
                               bool reset_attempts) {
    apply_outcome outcome;
    outcome.shard = shard;
    for (const auto& d : letters) {
        CAIRN_ASSERT(d.task.shard == shard);
        error_task task = d.task;
        task.due_ms = now_ms;
        if (reset_attempts) task.attempts = 0;
        outcome.put_errors.push_back(std::move(task));
        outcome.remove_dead.push_back(d);
    }
    return outcome;
}

}  // namespace cairn::journal
