// A shard's MariaDB replicas ([[shards.replicas]]; MariaDB's own replication, set up by the
// operator) as read sources: reads that need not see a particular write (no ?after=) may be served by
// a replica whose data is at most limits.replica_staleness_max old.
//
// How old a replica's data is: a heartbeat, as pt-heartbeat measures it. Every probe interval (a
// quarter of the bound, 50 ms..1 s) this gateway writes NOW(6) into its row of the table `heartbeats`
// on the primary, then reads TIMESTAMPDIFF(NOW(6), that row's ts) on each replica: the replica holds
// everything the primary committed up to lag ago. A replica is used while lag + the time since that
// probe <= the bound (its data cannot have become older than that); a replica that cannot be reached,
// has no row yet or stopped replicating falls out within one interval of the bound, and reads go to
// the primary. The servers' clocks are compared (NOW(6) on each): keep them in sync (NTP) to well
// under the bound. Thread-safe; the owner (shard) starts the probe and stops it before the pools go.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/metrics.hpp"
#include "core/shard_map.hpp"
#include "shards/pool.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cairn::shards {

class replica_set {
public:
    // replicas: where each replica is (the shard's credentials); pool_size connections each.
    // check runs on every new connection (the shard identity check: a replica holds the primary's
    // identity row). node_id names this gateway's heartbeat row.
    replica_set(boost::asio::any_io_executor ex, core::shard_index shard, std::vector<conn_params> replicas,
                std::size_t pool_size, std::chrono::milliseconds staleness_max, std::uint64_t node_id,
                pool::connection_check check, core::registry& metrics);
    ~replica_set();
    replica_set(const replica_set&) = delete;
    replica_set& operator=(const replica_set&) = delete;

    // A connection to a replica within the bound (the first such replica, in config order), or
    // nullopt when none is (the caller reads from the primary). Counted in
    // cairn_shard_replica_reads_total when it is one.
    boost::asio::awaitable<std::optional<lease>> async_try_lease();

    // What the probe last saw of each replica, in config order (admin status).
    struct replica_status {
        std::string name;              // host:port
        std::int64_t lag_ms = -1;      // at the last probe; -1: unknown (unreachable, no heartbeat yet)
        std::int64_t probed_ms_ago = -1;  // -1: never measured
        bool serving = false;          // within the staleness bound now: reads may go there
    };
    std::vector<replica_status> status() const;
    // Reads served by a replica of this shard since start.
    std::uint64_t reads() const;

    // Starts the probe; primary is the shard's read pool (the heartbeat is written with it) and must
    // outlive stop().
    void start(pool& primary);
    // Ends the probe at its next wake-up and closes idle replica connections; abort() closes all.
    void stop();
    void abort();

    // The heartbeat statements, for the table's creation with the gateways' tables
    // (shards/gateways.cpp) and the tests.
    static constexpr std::string_view write_heartbeat_sql =
        "INSERT INTO heartbeats (node_id, ts) VALUES (?, NOW(6)) ON DUPLICATE KEY UPDATE ts = NOW(6)";
    static constexpr std::string_view read_lag_sql =
        "SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, ts, NOW(6))) FROM heartbeats WHERE node_id = ?";

private:
    struct state;
    std::shared_ptr<state> state_;
};

}  // namespace cairn::shards
