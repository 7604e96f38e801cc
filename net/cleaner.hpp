// The cleaner (issue 5, FriendFeed's): makes an index's rows match its objects while writes
// continue. Phase "backfill" walks the objects on every shard — the kind's entities, most
// recently updated first; for a cell index the latest cell of its column of each row, by
// row_key — and writes the index row of each (a new index is filled this way); phase "stale"
// walks the index rows and tombstones those whose object has moved to other values or was
// deleted since. Repairs carry the object's version (entity ts, cell ref_key), so they commute
// with live writes (the newer version wins either way). A throttle (rows per second) keeps live traffic's latency; progress (rows
// scanned of the total, rate, time left) is kept per index for the API and /metrics.
// One run per index at a time on this gateway. Thread-safe.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"
#include "core/metrics.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace cairn::net {

struct gateway;

struct cleaner_progress {
    std::string index;
    std::string state = "running";  // running, done, failed, stopped
    std::string phase = "backfill";  // backfill, stale
    std::uint64_t scanned = 0;       // objects (backfill) plus index rows (stale) read so far
    std::uint64_t total = 0;         // the same, counted when each phase started
    std::uint64_t rows_added = 0;    // index rows written by the backfill
    std::uint64_t rows_removed = 0;  // stale rows tombstoned
    std::uint64_t started_ms = 0;
    std::uint64_t finished_ms = 0;
    std::size_t rows_per_s = 0;
    std::string error;
};

class cleaner {
public:
    cleaner(boost::asio::any_io_executor ex, gateway& gw, core::registry& metrics);
    ~cleaner();

    // Starts a run of def's cleaner at most rows_per_s (>= 1); false if one is running.
    bool start(const core::index_def& def, std::size_t rows_per_s);
    // The latest run's progress (running or ended), nullopt if none ran on this gateway.
    std::optional<cleaner_progress> progress(const std::string& index) const;
    // Ends every run at its next page.
    void stop();

private:
    struct job;
    boost::asio::awaitable<void> async_run(std::shared_ptr<job> j);

    boost::asio::any_io_executor ex_;
    gateway& gw_;
    core::registry& metrics_;
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<job>> jobs_;  // guarded by mu_
    std::atomic<bool> stopping_{false};
};

}  // namespace cairn::net
