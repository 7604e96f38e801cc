// Point reads of single edges on one shard, combined into shared round trips ("natural
// batching"): a read that arrives while `runners_max` queries of this batcher are in flight
// waits, and goes out with every read queued meanwhile as one multi-get statement of at most
// `batch_keys_max` keys (reads of one graph share a statement). Under light load a read is sent
// at once, alone, so combining adds no latency; under load many reads share one query, which a
// client talking to MariaDB directly cannot do. Thread-safe: any executor may call async_get;
// the result is delivered on the caller's executor, which must be a strand or a single-threaded
// io_context (an HTTP session's is). The batcher must outlive every read it was given.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/edge_rules.hpp"
#include "core/metrics.hpp"
#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cairn::shards {

class pool;

class edge_get_batcher {
public:
    edge_get_batcher(boost::asio::any_io_executor ex, pool& p, std::size_t runners_max, std::size_t batch_keys_max,
                     core::histogram* batch_keys = nullptr);
    ~edge_get_batcher();
    edge_get_batcher(const edge_get_batcher&) = delete;
    edge_get_batcher& operator=(const edge_get_batcher&) = delete;

    // The forward row of (graph, source, destination), nullopt if there is none. Errors: those
    // of pool::async_acquire and mariadb_conn::async_query. graph must be a valid graph name.
    boost::asio::awaitable<core::result<std::optional<core::edge_row>>> async_get(std::string graph,
                                                                                  std::int64_t source_id,
                                                                                  std::int64_t destination_id);

private:
    struct slot;
    // The next batch (reads of one graph, oldest first), empty if nothing is queued.
    std::vector<std::shared_ptr<slot>> take_batch();
    // Reads the batch's rows and hands each read its result; `self` (may be null) is the read
    // running this, which is not woken.
    boost::asio::awaitable<void> async_serve(std::vector<std::shared_ptr<slot>> batch, const slot* self);
    boost::asio::awaitable<void> async_run();

    boost::asio::any_io_executor ex_;
    pool& pool_;
    std::size_t runners_max_;
    std::size_t batch_keys_max_;
    core::histogram* batch_keys_;
    std::mutex mu_;
    std::deque<std::shared_ptr<slot>> queue_;  // guarded by mu_
    std::size_t runners_ = 0;                  // guarded by mu_
};

}  // namespace cairn::shards
