// The HTTP/1.1 front door: accepts connections, reads requests under the limits of
// core::limits, authenticates, routes and writes responses. Each connection is a coroutine on
// its own strand, so the io_context may run on any number of threads. The server owns its
// listening socket and connections; the router, auth and registry must outlive every
// connection (until the io_context has stopped running its handlers).
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/result.hpp"
#include "net/problem.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace boost::asio::ssl {
class context;
}
namespace boost::beast {
template <class NextLayer>
class ssl_stream;
}

namespace cairn::net {

class router;
class auth;
class tls_transport;  // net/tls_transport.hpp

namespace detail {
struct server_state;
}

struct server_options {
    std::string address = "127.0.0.1";
    std::uint16_t port = 0;  // 0 picks a free port; see http_server::port()
    core::limits lim;
    // How long stop() lets in-flight requests (and upgraded connections) finish before it
    // closes their connections.
    std::chrono::milliseconds stop_timeout{5'000};
    // Set: every connection is TLS (net/tls.hpp); the handshake must end within lim.timeout_read.
    std::shared_ptr<boost::asio::ssl::context> tls;
};

// Tells an upgraded connection's handler that the server is stopping, so that it can end its
// protocol politely (a WebSocket close) before stop() closes the connection after stop_timeout.
// Touched only on the connection's strand.
class stop_notice {
public:
    // f runs once, on the connection's strand, when the server stops; at once if it already has.
    void on_stop(std::function<void()> f) {
        if (stopped_) {
            f();
            return;
        }
        f_ = std::move(f);
    }
    // Forgets the hook (its owner is going away).
    void clear() { f_ = nullptr; }
    // The server's side: runs the hook set, or the one set later.
    void notify() {
        if (stopped_) return;
        stopped_ = true;
        if (auto f = std::move(f_)) f();
    }

private:
    std::function<void()> f_;
    bool stopped_ = false;
};

// Takes over a connection whose request asks for a WebSocket upgrade of the path /v1/ws
// (after authentication). The session keeps owning stream and stop, which stay valid until the
// returned awaitable completes; the connection still counts against connections_max until then,
// and stop() notifies `stop`, then closes the connection after stop_timeout. Runs on the
// connection's strand.
// The upgraded connection: plain, or TLS over it (server_options::tls).
using tls_stream = boost::beast::ssl_stream<tls_transport>;
using upgrade_stream = std::variant<boost::beast::tcp_stream*, tls_stream*>;
using upgrade_handler = std::function<boost::asio::awaitable<void>(upgrade_stream stream, request req,
                                                                   core::role caller_role, stop_notice& stop)>;

class http_server {
public:
    // The path whose upgrade requests go to the upgrade handler.
    static constexpr std::string_view upgrade_path = "/v1/ws";

    // Registers the server's metrics in metrics: cairn_http_requests_total{route,code} (counted once
    // the response is ready, before it is written),
    // cairn_http_request_duration_seconds, cairn_http_connections, cairn_http_accept_errors_total.
    // Add every route to r before this (later ones still work, through a slower metrics path).
    http_server(boost::asio::io_context& ioc, server_options opts, const router& r, const auth& a,
                core::registry& metrics);
    // Calls stop().
    ~http_server();
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;

    // Opens, binds and listens. Errors: Asio's (address_in_use, invalid address, ...).
    [[nodiscard]] core::result<void> listen();
    // The bound port (the chosen one when options asked for 0); 0 before listen().
    std::uint16_t port() const;

    // Until it is set, upgrade requests on /v1/ws get a 404 problem. Call before start().
    void set_upgrade_handler(upgrade_handler h);

    // Co_spawns the accept loop. Call once, after a successful listen().
    void start();

    // Stops accepting, closes idle connections at once, answers in-flight requests with
    // Connection: close, notifies upgraded connections (stop_notice), and closes whatever is
    // still open after stop_timeout. Returns at
    // once; the io_context runs out of work when the last connection has ended. Any thread;
    // calling it again does nothing.
    void stop();

    // Open connections now (rejected ones not included). Any thread.
    std::size_t connections() const;

private:
    std::shared_ptr<detail::server_state> state_;
};

}  // namespace cairn::net
