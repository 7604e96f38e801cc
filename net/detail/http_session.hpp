// Internals of http_server: the state shared by the listener and its connections, and one
// connection (http_session). A session's members are touched only on its strand; the
// server_state's session list is guarded by its mutex. Sessions keep the state alive.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/auth.hpp"
#include "net/detail/http_metrics.hpp"
#include "net/http_server.hpp"
#include "net/router.hpp"
#include "net/tls_transport.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <variant>

namespace cairn::net::detail {

class http_session;

struct server_state : std::enable_shared_from_this<server_state> {
    server_state(boost::asio::io_context& ioc, server_options opts, const router& r, const auth& a,
                 core::registry& reg);

    using session_list = std::list<std::weak_ptr<http_session>>;
    // Sessions waiting for (the header of) their next request, oldest wait first.
    using waiting_list = std::list<std::weak_ptr<http_session>>;

    // Accepts until stop(); errors back off instead of spinning.
    static boost::asio::awaitable<void> async_accept_loop(std::shared_ptr<server_state> self);
    // Answers a connection over connections_max with 503 and closes it.
    static boost::asio::awaitable<void> async_reject(std::shared_ptr<server_state> self,
                                                     boost::asio::ip::tcp::socket socket);

    // Registers s unless the server is stopping. At connections_max, the connection that has
    // waited longest for a request is evicted to make room (so that idle keep-alive and slowloris
    // connections cannot hoard the slots); only when none waits is the server full. Called on the
    // acceptor's strand.
    enum class admission { admitted, full, stopping };
    admission admit(const std::shared_ptr<http_session>& s);
    // s begins or ends waiting for a request's header. On s's strand.
    void set_waiting(http_session& s, bool waiting);
    // Deregisters s (idempotent). When the last session of a stopping server ends, the stop
    // timer is cancelled so that the io_context can run out of work. post_cancel is false from
    // destructors, which may run while the io_context is being destroyed.
    void release(http_session& s, bool post_cancel);
    // Under mu: takes s off both lists.
    void unlink_locked(http_session& s);

    void stop();
    // On the acceptor's strand.
    void arm_stop_timer();
    void close_all_sessions();

    boost::asio::io_context& ioc;
    const server_options opts;
    const router& routes;
    const auth& authn;
    http_metrics metrics;
    upgrade_handler upgrade;

    boost::asio::strand<boost::asio::io_context::executor_type> acceptor_strand;
    boost::asio::ip::tcp::acceptor acceptor;
    boost::asio::steady_timer backoff_timer;  // on acceptor_strand
    boost::asio::steady_timer stop_timer;     // on acceptor_strand
    std::atomic<bool> stopping{false};
    std::atomic<std::uint16_t> bound_port{0};

    mutable std::mutex mu;
    session_list sessions;         // guarded by mu
    waiting_list waiting;          // guarded by mu; a subset of sessions
    std::size_t session_count = 0; // guarded by mu; sessions.size() without walking the list
    std::size_t rejecting = 0;     // guarded by mu
};

class http_session : public std::enable_shared_from_this<http_session> {
public:
    http_session(std::shared_ptr<server_state> server, boost::asio::ip::tcp::socket socket);
    ~http_session();

    static boost::asio::awaitable<void> async_run(std::shared_ptr<http_session> self);

    boost::asio::any_io_executor get_executor() { return lowest().get_executor(); }

    // On the session's strand: closes the connection if it waits for a request that has not
    // begun, or tells an upgraded connection's handler (stop() of the server); or closes it
    // unconditionally.
    void close_if_idle();
    void close();
    // On the session's strand, after the server evicted it: closes the connection if it still
    // waits for a request's header; otherwise the request being served is the last one.
    void evict();

private:
    friend struct server_state;

    // The TCP connection under the session (its timeouts, its socket).
    boost::beast::tcp_stream& lowest();
    // Stream: boost::beast::tcp_stream or tls_stream (server_options::tls).
    template <class Stream>
    boost::asio::awaitable<void> async_serve(Stream& stream);
    // Writes res (with Connection: close), then drains and closes the connection.
    template <class Stream>
    boost::asio::awaitable<void> async_fail(Stream& stream, response res);

    std::shared_ptr<server_state> server_;
    std::variant<boost::beast::tcp_stream, tls_stream> stream_;
    boost::beast::flat_buffer buffer_;
    bool idle_ = false;
    bool reading_header_ = false;  // from the wait for a request until its header is read
    bool evicted_ = false;
    bool upgraded_ = false;
    stop_notice stop_notice_;               // for the upgrade handler
    bool registered_ = false;               // guarded by server_->mu
    server_state::session_list::iterator self_it_;  // guarded by server_->mu
    bool in_waiting_ = false;               // guarded by server_->mu
    server_state::waiting_list::iterator waiting_it_;  // guarded by server_->mu
};

// After an error response: stops sending, reads and drops what the peer still sends (so that
// closing does not reset the connection before the peer has read the response), then closes.
// Bounded by linger and by bytes_max. Over TLS it sends close_notify and waits (as long) for the
// peer's instead.
boost::asio::awaitable<void> async_lingering_close(boost::beast::tcp_stream& stream, std::chrono::milliseconds linger,
                                                   std::size_t bytes_max);
boost::asio::awaitable<void> async_lingering_close(tls_stream& stream, std::chrono::milliseconds linger,
                                                   std::size_t bytes_max);

}  // namespace cairn::net::detail
