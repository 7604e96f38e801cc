// Point reads on one shard, combined into shared round trips ("natural batching"): a read that
// arrives while `runners_max` queries of this batcher are in flight waits, and goes out with every
// read queued meanwhile as one statement of at most `batch_keys_max` distinct keys (reads of one
// graph share a statement; equal keys are read once). Under light load a read is sent at once,
// alone, so combining adds no latency; under load many reads share one query, which a client
// talking to MariaDB directly cannot do. While reads keep meeting, one that finds the batcher idle
// first lets its thread finish the turn (core/idle_tasks.hpp), so that the reads that arrived with
// it — the other frames of one WebSocket read, the other requests of one wakeup — join its query. A read is only ever answered by a query that started
// after it arrived, so a read that waited for ?after= sees what it waited for.
//
// Two kinds: GETs of single edges (edge_get_batcher: the forward row or nullopt) and counts
// (edge_count_batcher: the stored count, 0 without a row). Thread-safe: any executor may call
// async_get; the result is delivered on the caller's executor, which must be a strand or a
// single-threaded io_context (an HTTP session's is). The batcher must outlive every read it was given.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/edge_rules.hpp"
#include "core/metrics.hpp"
#include "core/result.hpp"
#include "shards/edge_store.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cairn::shards {

class pool;
class mariadb_conn;

template <class Key, class Value>
class point_batcher {
public:
    // Reads the values of keys (distinct, ascending) of one graph in one statement, in the keys'
    // order. Errors: those of mariadb_conn::async_query.
    using fetch_fn = boost::asio::awaitable<core::result<std::vector<Value>>> (*)(mariadb_conn&, std::string graph,
                                                                                std::span<const Key> keys);

    point_batcher(boost::asio::any_io_executor ex, pool& p, fetch_fn fetch, std::size_t runners_max,
                  std::size_t batch_keys_max, core::histogram* batch_keys = nullptr);
    ~point_batcher();
    point_batcher(const point_batcher&) = delete;
    point_batcher& operator=(const point_batcher&) = delete;

    // The value of key in graph. Errors: those of pool::async_acquire and of the fetch. graph
    // must be a valid graph name.
    boost::asio::awaitable<core::result<Value>> async_get(std::string graph, Key key);

private:
    struct slot;
    // The next batch (reads of one graph, oldest first), empty if nothing is queued.
    std::vector<std::shared_ptr<slot>> take_batch();
    // Reads the batch's values and hands each read its result; `self` (may be null) is the read
    // running this, which is not woken.
    boost::asio::awaitable<void> async_serve(std::vector<std::shared_ptr<slot>> batch, const slot* self);
    boost::asio::awaitable<void> async_run();

    boost::asio::any_io_executor ex_;
    pool& pool_;
    fetch_fn fetch_;
    std::size_t runners_max_;
    std::size_t batch_keys_max_;
    core::histogram* batch_keys_;
    std::mutex mu_;
    std::deque<std::shared_ptr<slot>> queue_;  // guarded by mu_
    std::size_t runners_ = 0;                  // guarded by mu_
    // Whether reads met each other lately (a batch had company, or a read queued behind a query):
    // set high when they do, down by one per batch of a lone read. While it is above zero, a read
    // that finds the batcher idle waits for the end of its thread's turn (core/idle_tasks.hpp), so
    // that the reads arriving with it share its query. Guarded by mu_.
    unsigned contention_ = 0;
};

// GETs of single edges: key (source_id, destination_id), the forward row or nullopt
// (fetch: async_multi_get).
using edge_get_batcher = point_batcher<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>>;
// Counts of a node's edges: key (node_id, direction, state), the stored count (fetch: async_count_many).
using edge_count_batcher = point_batcher<node_count_key, std::int64_t>;

extern template class point_batcher<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>>;
extern template class point_batcher<node_count_key, std::int64_t>;

}  // namespace cairn::shards
