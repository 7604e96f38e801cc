// One MariaDB shard and everything cairnd runs for it: its read pool, the apply pool and the
// apply worker behind the apply face (shards/apply_target.hpp), and the batcher of point reads.
// Routes reach a shard only through this face (and shard_set): lease a read connection, wait
// until a seq is applied, up/down, applied seq, pause. Thread-safe; built and destroyed by the
// owner of the io_context (shard_set), which outlives every read and the worker.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/edge_rules.hpp"
#include "core/entities.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/minute_window.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/outage.hpp"
#include "shards/pool.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace cairn::journal {
class journal;
}

namespace cairn::shards {

class apply_target;
class apply_worker;
class replica_set;

// Where a read may be served: the primary only (what must see a write: ?after=, the cleaner, the
// lease), or a replica within the staleness bound when the shard has one.
enum class read_source { primary, any };
template <class Key, class Value>
class point_batcher;
struct node_count_key;

struct shard_options {
    core::shard_index index = 0;
    std::uint32_t config_shards = 1;  // how many [[shards]] the gateway's config lists (the identity check)
    conn_params conn;
    std::vector<conn_params> replicas;  // read sources within limits.replica_staleness_max (shards/replicas.hpp)
    core::limits lim;
    bool apply_paused = false;
    std::shared_ptr<const core::counter_catalog> counters;  // default: none declared
    std::shared_ptr<const core::cell_config> cells;         // default: none declared
    std::shared_ptr<const core::entity_config> entities;    // default: none declared
};

class shard {
public:
    // j and routing must outlive the shard. Registers the shard's metrics (labelled shard=<index>).
    shard(boost::asio::any_io_executor ex, journal::journal& j, const core::routing& routing, shard_options opts,
          core::registry& metrics);
    ~shard();
    shard(const shard&) = delete;
    shard& operator=(const shard&) = delete;

    core::shard_index index() const noexcept { return index_; }

    // A connection of the read pool (see pool::async_acquire for its errors and bounds).
    [[nodiscard]] boost::asio::awaitable<core::result<lease>> async_read_lease();
    // A connection to a replica within the staleness bound; nullopt when there is none (or the shard
    // has no replicas).
    [[nodiscard]] boost::asio::awaitable<std::optional<lease>> async_replica_lease();
    // The shard's replicas as the probe last saw them (none when it has none); any thread.
    const replica_set* replicas() const noexcept { return replicas_.get(); }
    // The one shape of a read: query(mariadb_conn&) -> awaitable<core::result<T>> run on a read
    // connection leased for it and given back when it ends; a failed lease is its error. query
    // is taken by reference (g++ 12 cannot copy a closure made inside a coroutine into another
    // coroutine's frame): it must outlive the await, as the caller's frame does. With
    // read_source::any it runs on a replica within the staleness bound when there is one, and on
    // the primary when that replica has gone away since its last probe.
    template <class Query>
    auto async_read(const Query& query, read_source from = read_source::primary)
        -> std::invoke_result_t<const Query&, mariadb_conn&> {
        if (from == read_source::any) {
            if (auto rl = co_await async_replica_lease()) {
                auto r = co_await query(**rl);
                if (r || !is_outage(r.error())) co_return r;
            }
        }
        auto l = co_await async_read_lease();
        if (!l) co_return l.error();
        co_return co_await query(*l.value());
    }
    // Point reads of single edges and counts, each kind combined under load (shards/point_batcher.hpp).
    point_batcher<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>>& edge_gets() noexcept {
        return *get_batcher_;
    }
    point_batcher<node_count_key, std::int64_t>& edge_counts() noexcept { return *count_batcher_; }

    // Read-your-writes: true once every op through seq is applied on this shard (or queued as
    // an error); false after timeout or a stop. See apply_worker::async_wait_applied.
    boost::asio::awaitable<bool> async_wait_applied(std::uint64_t seq, std::chrono::milliseconds timeout);
    std::uint64_t applied_seq() const noexcept;
    bool up() const noexcept;
    // The worker's last attempt to reach the shard failed (false before its first attempt ends).
    // Callers that skip a shard rather than wait a connect timeout ask this, not !up().
    bool known_down() const noexcept;
    bool paused() const noexcept;
    void set_paused(bool paused) noexcept;
    void hold_for_routing(bool held) noexcept;  // apply_worker::hold_for_routing
    // Applies every op from seq + 1 on again (apply_worker::rewind_to).
    std::uint64_t rewind_to(std::uint64_t seq) noexcept;  // a ticket for rewinds_done()
    std::uint64_t rewinds_done() const noexcept;
    core::minute_window::totals last_minute() const;

    // New ops were journaled (any thread).
    void notify() noexcept;
    // Starts applying.
    void start();
    // The first part of a stop: the worker ends at its next step, waiters are woken, idle
    // connections are closed (leased ones when they come back).
    void stop();
    // The last part of a stop that did not drain: aborts every statement still in flight.
    void abort();
    // Connections in use, "apply/read", for the stop's log.
    std::string busy() const;

private:
    core::shard_index index_;
    std::unique_ptr<pool> read_pool_;
    std::unique_ptr<pool> apply_pool_;
    std::unique_ptr<apply_target> target_;
    std::unique_ptr<point_batcher<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>>> get_batcher_;
    std::unique_ptr<point_batcher<node_count_key, std::int64_t>> count_batcher_;
    std::unique_ptr<apply_worker> worker_;
    std::unique_ptr<replica_set> replicas_;  // null: the shard has none
};

}  // namespace cairn::shards
