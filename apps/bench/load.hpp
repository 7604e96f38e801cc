// The load loop of cairn-bench: N workers (coroutines, one connection each) on a few threads,
// closed loop (each worker sends its next request when the last one returned) or open loop at
// a fixed rate (latency measured from each request's intended send time, so a stall is charged
// to every request it delayed: no coordinated omission). Blocking: run() owns its io_context.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "apps/bench/report.hpp"
#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace cairn::bench {

// One client of the load: connects in setup, then performs operations one at a time.
class worker {
public:
    virtual ~worker() = default;
    // Connects or otherwise gets ready; an error aborts the whole run.
    virtual boost::asio::awaitable<core::result<void>> async_setup() = 0;
    // One operation (request k of this worker); an error is counted and the loop goes on.
    virtual boost::asio::awaitable<core::result<void>> async_op(std::uint64_t k) = 0;
};

struct load_options {
    std::uint32_t concurrency = 16;                // workers (connections)
    double rate = 0;                               // open loop: requests/s over all workers; 0 = closed loop
    std::chrono::duration<double> warmup{1.0};     // run but do not record
    std::chrono::duration<double> duration{5.0};   // the measured window after warmup
    std::uint32_t threads = 1;                     // io_context threads
};

using worker_factory = std::function<std::unique_ptr<worker>(boost::asio::any_io_executor ex, std::uint32_t index)>;

// Runs the load on ioc (with opts.threads threads; the caller owns ioc and anything the
// workers share, such as pools made on it) and fills r's mode, concurrency, rate, warmup, duration, ops, errors,
// first_error, latency and throughput. Returns an error (and sets r.status = failed) if a
// worker's setup failed.
core::result<void> run_load(boost::asio::io_context& ioc, const load_options& opts, const worker_factory& make, run_report& r);

}  // namespace cairn::bench
