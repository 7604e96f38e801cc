// Runs one coroutine on a single-threaded io_context until it, and everything it started, is done
// (the journal's callbacks hold work on the io_context, so run() also waits for its writer thread).
// What makes the simulation and the worker tests step by step: one await at a time, in order.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/assert.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <optional>

namespace cairn::sim {

namespace detail {
template <class T>
boost::asio::awaitable<void> async_store(boost::asio::awaitable<T> a, std::optional<T>& out) {
    out.emplace(co_await std::move(a));
}
}  // namespace detail

// Its result; rethrows what escaped the coroutine (a bug of the code under test).
template <class T>
T run_to_end(boost::asio::io_context& ioc, boost::asio::awaitable<T> a) {
    std::optional<T> out;
    std::exception_ptr failed;
    boost::asio::co_spawn(ioc, detail::async_store(std::move(a), out), [&](std::exception_ptr e) { failed = e; });
    ioc.restart();
    ioc.run();
    if (failed) std::rethrow_exception(failed);
    CAIRN_ASSERT(out.has_value());
    return std::move(*out);
}

// Runs what was posted to ioc (a worker's set_paused posts to its strand).
inline void settle(boost::asio::io_context& ioc) {
    ioc.restart();
    ioc.run();
}

}  // namespace cairn::sim
