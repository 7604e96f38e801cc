// Helpers for the net unit tests: run an awaitable to completion, and a server on loopback
// with its own io_context threads. Test-only.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/metrics.hpp"
#include "net/auth.hpp"
#include "net/http_server.hpp"
#include "net/router.hpp"
#include "tests/support/wait.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace cairn::test {

namespace asio = boost::asio;

// Runs aw on a fresh io_context until it completes; rethrows what it throws.
template <class T>
T run_sync(asio::awaitable<T> aw) {
    asio::io_context ioc;
    std::optional<T> out;
    std::exception_ptr err;
    asio::co_spawn(ioc, std::move(aw), [&](std::exception_ptr e, T v) {
        err = e;
        if (!e) out = std::move(v);
    });
    ioc.run();
    if (err) std::rethrow_exception(err);
    return std::move(*out);
}

// Waits d on the current coroutine's executor (for handlers that simulate slow work).
inline asio::awaitable<void> async_pause(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::use_awaitable);
}

// Small limits that make every bound reachable quickly.
inline core::limits small_limits() {
    core::limits lim;
    lim.body_bytes_max = 1024;
    lim.header_bytes_max = 1024;
    lim.connections_max = 8;
    lim.timeout_read = std::chrono::milliseconds(2'000);
    lim.timeout_idle = std::chrono::milliseconds(5'000);
    return lim;
}

// A server on 127.0.0.1:<free port> running on `threads` io_context threads. Add routes to
// `routes` and set options before start().
class test_server {
public:
    explicit test_server(core::limits lim = small_limits(), std::vector<core::token_config> tokens = {})
        : authn(std::move(tokens)) {
        opts.lim = lim;
        opts.stop_timeout = std::chrono::milliseconds(500);
    }
    ~test_server() {
        if (server) server->stop();
        work_.reset();
        if (!threads_.empty() && !wait_stopped(std::chrono::seconds(5))) {
            ADD_FAILURE() << "the io_context did not run out of work after stop()";
            ioc.stop();
        }
        for (auto& t : threads_) t.join();
    }

    // before_start runs after the server is built and before it starts (e.g. to set hooks).
    void start(int thread_count = 2, const std::function<void(net::http_server&)>& before_start = {}) {
        server = std::make_unique<net::http_server>(ioc, opts, routes, authn, metrics);
        if (before_start) before_start(*server);
        auto r = server->listen();
        ASSERT_TRUE(r) << r.error().message();
        ASSERT_NE(server->port(), 0);
        server->start();
        for (int i = 0; i < thread_count; ++i) threads_.emplace_back([this] { ioc.run(); });
    }

    std::uint16_t port() const { return server->port(); }

    // True once every io_context thread has returned (all work done), within max.
    bool wait_stopped(std::chrono::milliseconds max) {
        return test::wait_until([this] { return ioc.stopped(); }, max, std::chrono::milliseconds(5));
    }

    // Stops the server and reports whether the io_context ran out of work within max.
    bool stop_and_drain(std::chrono::milliseconds max) {
        server->stop();
        work_.reset();
        return wait_stopped(max);
    }

    asio::io_context ioc;
    net::server_options opts;
    net::router routes;
    net::auth authn;
    core::registry metrics;
    std::unique_ptr<net::http_server> server;

private:
    asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(ioc);
    std::vector<std::thread> threads_;
};

}  // namespace cairn::test
