// The cleaner (issue 5, FriendFeed's): makes an index's rows match its objects while writes
// continue. Phase "catch-up" waits until every op journaled before the run began (hence every op
// that computed its index entries without a new index) is applied on every shard. Phase "backfill" walks the objects on every shard — the kind's entities, most
// recently updated first; for a cell index the latest cell of its column of each row, by
// row_key — and writes the index row of each (a new index is filled this way); phase "stale"
// walks the index rows and tombstones those whose object has moved to other values or was
// deleted since. Repairs carry the object's version (entity ts, cell ref_key), so they commute
// with live writes (the newer version wins either way). A throttle (rows per second) keeps live traffic's latency; progress (rows
// scanned of the total, rate, time left) is kept per index for the API and /metrics.
// Verify runs (`cairn index verify`) walk the same way but compare first: they report the rows
// missing and stale, shard by shard with examples, and with repair write exactly those.
// One run per index at a time on this gateway (one cleaning, one verify). Thread-safe.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::journal {
class journal;
}
namespace cairn::shards {
class shard_set;
}

namespace cairn::indexing {

class index_registry;

// What a run does: clean (write every object's row, tombstone stale rows), verify (compare the
// index with the objects and report), or verify and repair (write only what the comparison found).
enum class cleaner_mode { clean, verify, repair };
std::string_view cleaner_mode_name(cleaner_mode m) noexcept;

// A verify run's findings on one shard (the shard that holds, or should hold, the index rows).
struct verify_shard_report {
    std::uint64_t missing = 0;  // objects whose index row is absent (or a tombstone no newer than the object)
    std::uint64_t stale = 0;    // live rows whose object has other values, or is deleted, in a newer version
};

struct cleaner_progress {
    cleaner_mode mode = cleaner_mode::clean;
    std::string index;
    std::string state = "running";  // running, done, failed, stopped
    std::string phase = "catch-up";  // catch-up, backfill, stale
    std::uint64_t catch_up_seq = 0;  // the journal seq every shard applies before the backfill reads
    // Ops of the index's objects journaled up to catch_up_seq that were still in the error queue
    // (waited for: the walk starts when they are applied or dead) and still dead letters (not
    // waited for: re-inject them, then run a verify with repair).
    std::uint64_t late_ops_queued = 0;
    std::uint64_t late_dead_letters = 0;
    std::uint64_t scanned = 0;       // objects (backfill) plus index rows (stale) read so far
    std::uint64_t total = 0;         // the same, counted when each phase started
    std::uint64_t rows_added = 0;    // index rows written by the backfill
    std::uint64_t rows_removed = 0;  // stale rows tombstoned
    std::uint64_t started_ms = 0;
    std::uint64_t finished_ms = 0;
    std::size_t rows_per_s = 0;
    std::string error;
    // Verify runs only: totals, per shard, and a few examples of each ("<object id> on shard <i>: ...").
    std::uint64_t missing = 0;
    std::uint64_t stale = 0;
    std::vector<verify_shard_report> shards;
    std::vector<std::string> missing_examples;
    std::vector<std::string> stale_examples;
};

class cleaner {
public:
    // journal, shards, indexes and metrics must outlive the cleaner.
    cleaner(boost::asio::any_io_executor ex, journal::journal& journal, shards::shard_set& shards, index_registry& indexes,
            const core::limits& lim, core::registry& metrics);
    ~cleaner();

    // Starts a run of def's cleaner at most rows_per_s (>= 1); false if one is running. Cleaning
    // runs and verify runs (verify or repair) are tracked apart: one of each at a time per index.
    bool start(const core::index_def& def, std::size_t rows_per_s, cleaner_mode mode = cleaner_mode::clean);
    // The latest cleaning (verify: verify or repair) run's progress (running or ended), nullopt if
    // none ran on this gateway.
    std::optional<cleaner_progress> progress(const std::string& index, bool verify = false) const;
    // Ends every run at its next page.
    void stop();

private:
    struct job;
    boost::asio::awaitable<void> async_run(std::shared_ptr<job> j);
    // The ops of def's objects journaled up to a seq that a back-fill must wait for: those in the
    // error queue (shard, seq), and how many are dead letters.
    struct late_ops_state {
        std::set<std::pair<std::uint32_t, std::uint64_t>> queued;
        std::uint64_t dead = 0;
    };
    // The first look: the error queue and the dead letters, each op decoded once.
    core::result<late_ops_state> find_late_ops(const core::index_def& def, std::uint64_t up_to_seq) const;
    // Later looks: only the error queue's keys; an op that left it is applied or (a point read
    // says) dead. Ops are not decoded again.
    core::result<void> recheck_late_ops(late_ops_state& s) const;

    boost::asio::any_io_executor ex_;
    journal::journal& journal_;
    shards::shard_set& shards_;
    index_registry& indexes_;
    const core::limits lim_;
    core::registry& metrics_;
    mutable std::mutex mu_;
    std::map<std::pair<std::string, bool>, std::shared_ptr<job>> jobs_;  // (index, verify); guarded by mu_
    std::atomic<bool> stopping_{false};
};

}  // namespace cairn::indexing
