// The write-ahead journal: one LMDB environment with group commit, per-shard cursors, an error
// queue, dead letters and retention (docs/journal-format.md). append/commit_outcome are thread-safe
// and never block on I/O: a private writer thread owns every write transaction and completes the
// callbacks. Reads run in short read-only transactions on the calling thread. Knows no Asio.
#pragma once

#include "core/hlc.hpp"
#include "core/metrics.hpp"
#include "core/op.hpp"
#include "core/result.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cairn::journal {

struct options {
    std::string path;                              // directory, created if missing
    std::uint64_t size_bytes_max = 0;              // LMDB map size; errc::journal_full beyond it
    std::chrono::seconds retention{86400};         // applied ops are kept this long (for replay)
    std::uint64_t node_id = 1;                     // stored on creation; reopening with another id fails
    std::uint32_t shard_count = 1;                 // cursors exist for shards 0..shard_count-1
    std::size_t queue_ops_max = 100000;            // ops waiting for the writer; beyond: errc::overloaded
    std::size_t group_ops_max = 10000;             // ops per transaction at most
    std::uint64_t unapplied_ops_max = 50'000'000;  // last_seq - min(cursor) beyond this: errc::overloaded
    // data.mdb is kept at least half of this past the pages in use, grown this much at a time with
    // written zeros (never past the map), so that a commit overwrites blocks the file already has and
    // its flush carries no file-size update; 0: LMDB grows the file itself (docs/journal-format.md).
    std::uint64_t grow_bytes = 1 << 20;
    // Wall-clock milliseconds for append times, retention and idempotency expiry; injected by tests.
    core::wall_clock_ms wall_ms = core::system_wall_clock_ms;
};

// The acknowledgement of one append: its ops got seqs first_seq..last_seq (contiguous).
struct appended {
    std::uint64_t first_seq = 0;
    std::uint64_t last_seq = 0;
    std::vector<std::uint64_t> ts;      // per op, as the caller set them
    std::vector<std::uint64_t> op_ids;  // per op, as stored (the writer fills in op_id 0)
    bool deduplicated = false;          // true: an earlier append with the same key; nothing new was written

    friend bool operator==(const appended&, const appended&) = default;
};

// One op that failed on one shard.
struct error_task {
    std::uint32_t shard = 0;
    std::uint64_t seq = 0;
    std::uint64_t due_ms = 0;
    std::uint32_t attempts = 0;
    std::vector<std::string> errors;  // history, oldest first; the writer keeps the newest 16, each cut to 1 KiB
    std::string op_bytes;             // the encoded op (core::encode_op), so retention never strands a task
    std::uint64_t first_failed_ms = 0;

    friend bool operator==(const error_task&, const error_task&) = default;
};

struct dead_letter {
    error_task task;
    std::uint64_t died_ms = 0;

    friend bool operator==(const dead_letter&, const dead_letter&) = default;
};

// An operator's edit of a dead letter's op (the admin API): kept beside the journal's own record of
// the op, so that a trace shows the op that was applied after an in-place edit, and where an edit
// that was journaled again as a new write went. Key: shard, seq (of the dead letter).
struct op_edit {
    std::uint32_t shard = 0;
    std::uint64_t seq = 0;
    std::uint64_t edited_ms = 0;
    std::uint64_t new_seq = 0;  // 0: edited in place; else the seq of the new write that replaced it
    std::string op_bytes;       // the edited op (core::encode_op)

    friend bool operator==(const op_edit&, const op_edit&) = default;
};

// An op applied on a shard after the batches had passed its seq — a retry from the error queue, a
// re-injected dead letter — so the shard's applied mark does not cover it. The journal numbers a
// shard's late applications 1, 2, ... as it commits them, and the apply worker writes the last
// number it applied on the shard (its late mark, apply_session::async_mark_late): a replica
// promoted after a failover holds exactly the late applications through its late mark, and the
// worker applies the rest again from here (the mark check). Kept for the retention, like ops.
struct late_apply {
    std::uint32_t shard = 0;
    std::uint64_t number = 0;      // set by the journal when it commits the entry
    std::uint64_t seq = 0;         // the op's seq
    std::uint64_t applied_ms = 0;  // wall time of the application (retention counts from it)
    std::string op_bytes;          // the op as applied (core::encode_op; an edited dead letter's edit)

    friend bool operator==(const late_apply&, const late_apply&) = default;
};

// What an apply worker commits, atomically in one transaction. Order inside the transaction:
// remove_errors, put_errors, remove_dead, put_dead, put_edits, put_late, cursor; so a task may be
// removed and put again under the same key in one outcome.
struct apply_outcome {
    std::uint32_t shard = 0;
    std::optional<std::uint64_t> cursor;  // new applied-through seq (never backwards, never past last_seq: asserted)
    // Lets cursor move backwards: the shard lost ops this gateway had applied there (a replica
    // promoted after a failover, a restore from a backup), so they are applied again from the
    // journal (apply_worker, "the mark check"). Never below first_seq() - 1 (asserted).
    bool rewind = false;
    std::vector<error_task> put_errors;   // new or rescheduled entries (key: shard, due_ms, seq)
    std::vector<error_task> remove_errors;  // entries to delete (matched by shard, due_ms, seq); absent ones are ignored
    std::vector<dead_letter> put_dead;      // key: shard, seq
    std::vector<dead_letter> remove_dead;   // matched by shard, seq (the CLI re-injects a dead letter); absent ones are ignored
    std::vector<op_edit> put_edits;         // key: shard, seq; replaces an earlier edit of the same key
    // Late applications on this outcome's shard, numbered late_last(shard) + 1, + 2, ... in this order
    // (their `number` is ignored).
    std::vector<late_apply> put_late;
    // Replaces the gateway's route record (route_record(); at most 64 KiB; not tied to the shard).
    std::optional<std::string> put_route;
};

// The outcome that re-injects dead letters of one shard (all of `letters` must be of `shard`): each
// goes back to the error queue due at now_ms, so the apply worker takes it on its next round
// through the one apply path, with its attempts restarted (reset_attempts) or kept. The admin API
// and the simulation both re-inject with it.
apply_outcome reinject_outcome(std::uint32_t shard, std::span<const dead_letter> letters, std::uint64_t now_ms,
                               bool reset_attempts);

// One journaled op with its seq and the wall time it was appended at.
struct timed_op {
    std::uint64_t seq = 0;
    std::uint64_t append_ms = 0;
    core::op op;
};

struct stats {
    std::uint64_t last_seq = 0;
    std::uint64_t ops_count = 0;
    std::uint64_t error_count = 0;
    std::uint64_t dead_count = 0;
    std::uint64_t idem_count = 0;      // idempotency keys kept
    std::uint64_t map_bytes_used = 0;  // pages held by the databases; freed pages are not counted
    std::uint64_t map_bytes_max = 0;
    std::vector<std::uint64_t> cursors;
    bool failed = false;
};

class journal {
public:
    using append_callback = std::function<void(core::result<appended>)>;
    using done_callback = std::function<void(core::result<void>)>;

    // Creates opts.path if missing, opens (or creates) the environment, clears stale reader
    // slots, recovers last_seq and moves clock past every journaled ts. Errors: errc::bad_request
    // (bad options), errc::conflict (another node_id is stored, or the directory is open already, in this
    // process or another), errc::journal_corrupt (unknown format version or an undecodable last record), and
    // LMDB or system errors.
    [[nodiscard]] static core::result<std::unique_ptr<journal>> open(options opts, core::hlc& clock);

    // Completes every queued request with errc::shutting_down (a group already being written
    // completes normally), then joins the writer thread. No call may run concurrently with it.
    ~journal();

    journal(const journal&) = delete;
    journal& operator=(const journal&) = delete;

    // Appends ops (ts and op_id set by the caller; op_id 0 becomes make_op_id(node_id, seq)).
    // done is called exactly once, never before the commit is durable (its meta page flushed, by the
    // next group's commit or a flush of its own: docs/journal-format.md). Requests that are refused
    // up front complete on the calling thread before append returns: errc::overloaded (the queue
    // holds queue_ops_max ops, or last_seq - min(cursor) would pass unapplied_ops_max),
    // errc::bad_request (no ops, an idempotency key over 200 bytes, an op that does not encode),
    // errc::too_large (more ops than group_ops_max), errc::journal_failed (sticky), errc::shutting_down.
    // All others complete on the writer thread: success, errc::journal_full (MDB_MAP_FULL:
    // nothing of the group was committed; not sticky), errc::disk_full (ENOSPC or EDQUOT writing
    // the group: nothing committed; not sticky), errc::journal_failed (any other write or commit
    // failure, a failed sync above all: sticky, healthy() turns false and every later append fails;
    // when the flush after a commit failed, that commit may still be found after a restart),
    // errc::shutting_down (still queued when the journal was destroyed).
    // idempotency_key: if non-empty and an append with that key committed within retention,
    // done gets that append's result with deduplicated = true and nothing is appended.
    void append(std::vector<core::op> ops, std::string idempotency_key, append_callback done);

    // Commits outcome atomically, through the same queue and group commits as append. Same
    // errors as append; errc::bad_request for a shard >= shard_count or a task of another shard.
    // Outcomes have their own queue bound (queue_ops_max requests) and never count as unapplied.
    void commit_outcome(apply_outcome outcome, done_callback done);

    // Called on the writer thread after each successful commit that appended ops (after that
    // group's callbacks), with the new last_seq. Set it before traffic; it must not block for long.
    void set_commit_listener(std::function<void(std::uint64_t last_seq)> fn);

    // Reads: any thread, short read-only transactions, never wait for the writer.
    // Ops with seq > after_seq, ascending, at most max, and no more once their records reach
    // bytes_max (the op that reaches it is the last one, so one op is always read).
    // errc::journal_corrupt for a bad record.
    [[nodiscard]] core::result<std::vector<std::pair<std::uint64_t, core::op>>> read_ops(
        std::uint64_t after_seq, std::size_t max, std::size_t bytes_max = std::numeric_limits<std::size_t>::max()) const;
    // A decoded batch that several readers may hold at once.
    using op_batch = std::vector<std::pair<std::uint64_t, core::op>>;
    // As read_ops, for the apply workers: every shard's worker reads the same ranges, so the
    // last few batches read are kept (until every shard's cursor has passed them), and a worker
    // asking for a range another worker read (or is
    // reading: it then waits for that decode instead of doing it again) gets the same batch. A
    // batch read at the journal's tail may hold fewer ops than a later read of its range would;
    // its ops are the same (an op never changes once journaled).
    [[nodiscard]] core::result<std::shared_ptr<const op_batch>> read_ops_shared(std::uint64_t after_seq, std::size_t max,
                                                                               std::size_t bytes_max) const;
    // As read_ops, with each op's append wall time (for replays by time range).
    [[nodiscard]] core::result<std::vector<timed_op>> read_timed_ops(std::uint64_t after_seq, std::size_t max) const;
    // The op record (core::encode_op bytes, without the append time) of seq; errc::not_found.
    [[nodiscard]] core::result<std::string> read_op_bytes(std::uint64_t seq) const;
    // The append wall time of seq in ms; errc::not_found.
    [[nodiscard]] core::result<std::uint64_t> read_op_time_ms(std::uint64_t seq) const;

    std::uint64_t cursor(std::uint32_t shard) const;  // 0 = nothing applied; shard < shard_count
    // The number of shard's last late application (0: none yet); shard < shard_count. Never goes
    // down, even when retention deletes the entries.
    std::uint64_t late_last(std::uint32_t shard) const;
    // shard's late applications numbered after after_number, ascending, at most max. Entries that
    // retention deleted are missing: the first one returned may be numbered above after_number + 1.
    // Errors: LMDB's, errc::journal_corrupt.
    [[nodiscard]] core::result<std::vector<late_apply>> list_late(std::uint32_t shard, std::uint64_t after_number,
                                                                  std::size_t max) const;
    // The oldest op still kept (retention deletes applied ops), or last_seq() + 1 when none is:
    // how far back a cursor can be rewound. Errors: LMDB's.
    [[nodiscard]] core::result<std::uint64_t> first_seq() const;
    // The route record last committed (apply_outcome::put_route), or empty when none ever was.
    [[nodiscard]] core::result<std::string> route_record() const;
    std::uint64_t last_seq() const noexcept;          // updated once each commit is durable
    std::uint64_t node_id() const noexcept;
    // Random, non-zero, fixed for the journal's life: which journal holds a node id lease.
    std::uint64_t journal_id() const noexcept;

    // Tasks of shard with due_ms <= now_ms, earliest due first, at most max.
    [[nodiscard]] core::result<std::vector<error_task>> due_errors(std::uint32_t shard, std::uint64_t now_ms,
                                                                   std::size_t max) const;
    // Dead letters in (shard, seq) order, at most max.
    [[nodiscard]] core::result<std::vector<dead_letter>> list_dead(std::size_t max) const;
    // Dead letters whose key (shard, seq) is >= (from_shard, from_seq), in key order, at most max:
    // pages through the dead letters (the next page starts after the last key returned).
    [[nodiscard]] core::result<std::vector<dead_letter>> list_dead_from(std::uint32_t from_shard,
                                                                        std::uint64_t from_seq,
                                                                        std::size_t max) const;
    // The dead letter of seq on shard; errc::not_found.
    [[nodiscard]] core::result<dead_letter> get_dead(std::uint32_t shard, std::uint64_t seq) const;
    // The latest edit of seq's op on shard; errc::not_found. Edits are kept for the retention
    // period (from when they were made), like applied ops.
    [[nodiscard]] core::result<op_edit> get_edit(std::uint32_t shard, std::uint64_t seq) const;
    // Error tasks in (shard, due_ms, seq) order, due or not, at most max; only shard's when it is
    // given, only those of seq when it is given (that filter scans the queue; it is for tracing).
    [[nodiscard]] core::result<std::vector<error_task>> list_errors(std::optional<std::uint32_t> shard,
                                                                    std::optional<std::uint64_t> seq,
                                                                    std::size_t max) const;

    stats get_stats() const;
    bool healthy() const noexcept;  // false once a sticky failure happened

    // Updated by the writer: commit latency in seconds (from the group's start until it is durable
    // and acknowledged), group size in ops (one observation per group commit), ops appended
    // (deduplicated ones not counted).
    core::histogram& commit_latency();
    core::histogram& group_ops();
    core::counter& ops_appended();
    // Ops deleted by retention.
    core::counter& ops_retired();
    // Flushes made only to make the last commit durable, because nothing else was queued whose
    // commit would have flushed it (docs/journal-format.md, "What is durable when").
    core::counter& idle_syncs();

    // Test hooks (tests/ only). The next group commit behaves as if mdb_txn_commit returned
    // mdb_error (the transaction is aborted instead): EIO makes the journal fail (sticky),
    // MDB_MAP_FULL gives errc::journal_full, ENOSPC errc::disk_full.
    void fail_next_commit_for_test(int mdb_error);
    // The next flush that only makes the last commit durable (nothing else queued) fails with error
    // (e.g. EIO): the journal fails (sticky), and that commit's requests get errc::journal_failed.
    void fail_next_sync_for_test(int error);
    // The flags the LMDB environment was opened with (mdb_env_get_flags).
    unsigned env_flags_for_test() const;

private:
    struct impl;
    explicit journal(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

}  // namespace cairn::journal
