#include "net/detail/http_session.hpp"

#include "core/log_task_end.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <vector>

namespace cairn::net::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

namespace {

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

constexpr std::size_t rejecting_max = 64;               // 503 answers in progress at once
constexpr std::chrono::milliseconds backoff_initial{5};  // after a failed accept
constexpr std::chrono::milliseconds backoff_max{1'000};
constexpr std::size_t idle_read_bytes = 8 * 1024;
constexpr std::size_t buffer_keep_bytes = 64 * 1024;  // larger read buffers are released when idle
constexpr std::size_t linger_bytes_max = 1024 * 1024;
constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";

std::chrono::milliseconds linger_time(const core::limits& lim) { return std::min(lim.timeout_read, 1'000ms); }

bool is_http_error(const error_code& ec) {
    static const auto& category = make_error_code(http::error::bad_method).category();
    return ec.category() == category;
}

// The ways a connection ends that are not errors: the peer went away or timed out, or the
// server closed it.
bool is_expected_end(const error_code& ec) {
    return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
           ec == beast::error::timeout || ec == asio::error::operation_aborted ||
           ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
           ec == asio::error::bad_descriptor || ec == asio::error::not_connected;
}

void log_end(const error_code& ec, const char* what) {
    if (is_expected_end(ec)) {
        return;
    }
    spdlog::debug("http session ended on {}: {}", what, ec.message());
}

// The problem that answers a failed read, or nullopt when the connection just ends.
std::optional<response> problem_for_read_error(const error_code& ec, const http::request_parser<http::string_body>& p) {
    const unsigned version = p.is_header_done() ? p.get().version() : 11;
    if (ec == http::error::body_limit) {
        return problem(problems::body_too_large, "the request body exceeds the server's limit", std::nullopt, version, false);
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        return problem(problems::header_too_large, "the request header exceeds the server's limit", std::nullopt,
                       version, false);
    }
    if (is_http_error(ec) && !is_expected_end(ec)) {
        return problem(problems::malformed_request, fmt::format("the request is not valid HTTP/1.1: {}", ec.message()), std::nullopt, version,
                       false);
    }
    return std::nullopt;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
               return lower(x) == lower(y);
           });
}

std::string_view trim_ows(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
}

// The framing rules Beast leaves to the server (RFC 9112): one Host on HTTP/1.1 (at most one
// on 1.0), and Transfer-Encoding only as a lone "chunked" (Beast itself refuses it beside a
// Content-Length, and two Content-Lengths). Requests that break them are how requests are
// smuggled past proxies that read them differently, so they are refused and the connection is
// closed.
std::optional<response> framing_problem(const http::request_parser<http::string_body>& p) {
    const auto& h = p.get();
    const std::size_t hosts = h.count(http::field::host);
    if (hosts > 1 || (hosts == 0 && h.version() >= 11)) {
        return problem(problems::malformed_request, hosts > 1 ? "the request has more than one Host header"
                                 : "an HTTP/1.1 request must have a Host header",
                       "Host", h.version(), false);
    }
    const std::size_t encodings = h.count(http::field::transfer_encoding);
    if (encodings > 0) {
        const bool lone_chunked =
            encodings == 1 && iequals(trim_ows(to_string_view(h[http::field::transfer_encoding])), "chunked");
        if (!lone_chunked) {
            return problem(problems::malformed_request, "Transfer-Encoding must be the single value \"chunked\" (no other codings)",
                           "Transfer-Encoding", h.version(), false);
        }
    }
    return std::nullopt;
}

bool expects_continue(const request& req) {
    const auto it = req.find(http::field::expect);
    if (it == req.end()) return false;
    return iequals(to_string_view(it->value()), "100-continue");
}

}  // namespace

// server_state ----------------------------------------------------------------------------

server_state::server_state(asio::io_context& io, server_options o, const router& r, const auth& a,
                           core::registry& reg)
    : ioc(io),
      opts(std::move(o)),
      routes(r),
      authn(a),
      metrics(reg, r),
      acceptor_strand(asio::make_strand(io)),
      acceptor(acceptor_strand),
      backoff_timer(acceptor_strand),
      stop_timer(acceptor_strand) {}

asio::awaitable<void> server_state::async_accept_loop(std::shared_ptr<server_state> self) {
    auto backoff = backoff_initial;
    bool failing = false;
    for (;;) {
        error_code ec;
        tcp::socket socket = co_await self->acceptor.async_accept(asio::make_strand(self->ioc), use_ec(ec));
        if (self->stopping.load(std::memory_order_acquire)) co_return;
        if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) co_return;
        if (ec) {
            // EMFILE, ENFILE, ENOBUFS, ...: the pending connection stays in the backlog, so an
            // immediate retry would fail again at once. Back off (exponentially, up to a second).
            self->metrics.count_accept_error();
            if (!failing) spdlog::warn("accept failed: {}; backing off", ec.message());
            failing = true;
            self->backoff_timer.expires_after(backoff);
            error_code wait_ec;
            co_await self->backoff_timer.async_wait(use_ec(wait_ec));
            backoff = std::min(backoff * 2, backoff_max);
            continue;
        }
        if (failing) spdlog::info("accepting connections again");
        failing = false;
        backoff = backoff_initial;

        error_code opt_ec;
        socket.set_option(tcp::no_delay(true), opt_ec);  // Responses are written whole; don't delay them.
        // Setting a session up allocates (and, over TLS, asks OpenSSL for an SSL object): if that
        // fails, this one connection is dropped (its socket closes as the exception unwinds) and
        // the loop goes on accepting; an exception must never end the listener.
        try {
            auto session = std::make_shared<http_session>(self, std::move(socket));
            switch (self->admit(session)) {
                case admission::admitted: {
                    auto ex = session->get_executor();
                    asio::co_spawn(ex, http_session::async_run(std::move(session)), core::log_task_end("http_session"));
                    break;
                }
                case admission::full: {
                    // Over TLS a plain-text 503 would be noise to the client, and a handshake is work
                    // an overloaded server should not do: the connection is just closed.
                    if (self->opts.tls) break;
                    tcp::socket s = session->lowest().release_socket();
                    auto ex = s.get_executor();
                    asio::co_spawn(ex, async_reject(self, std::move(s)), core::log_task_end("http_reject"));
                    break;
                }
                case admission::stopping:
                    break;  // The session's socket closes with it.
            }
        } catch (const std::exception& e) {
            self->metrics.count_accept_error();
            spdlog::warn("could not set up a connection: {}; closed it", e.what());
        }
    }
}

asio::awaitable<void> server_state::async_reject(std::shared_ptr<server_state> self, tcp::socket socket) {
    struct reject_slot {
        server_state& state;
        ~reject_slot() {
            std::lock_guard lock(state.mu);
            --state.rejecting;
        }
    } slot{*self};

    beast::tcp_stream stream(std::move(socket));
    response res = problem(problems::too_many_connections, "the server has too many open connections; retry shortly", std::nullopt, 11, false);
    res.set(http::field::retry_after, "1");
    res.set(http::field::server, "cairn");
    const auto linger = linger_time(self->opts.lim);
    stream.expires_after(linger);
    error_code ec;
    self->metrics.count_request(router::npos, res.result_int());
    co_await http::async_write(stream, res, use_ec(ec));
    if (ec) co_return;
    co_await async_lingering_close(stream, linger, linger_bytes_max);
}

server_state::admission server_state::admit(const std::shared_ptr<http_session>& s) {
    std::shared_ptr<http_session> victim;
    {
        std::lock_guard lock(mu);
        if (stopping.load(std::memory_order_relaxed)) return admission::stopping;
        if (session_count >= opts.lim.connections_max) {
            // Entries that no longer lock belong to sessions being destroyed; their destructors
            // take them off the list.
            for (const auto& w : waiting) {
                if ((victim = w.lock())) break;
            }
            if (victim) {
                unlink_locked(*victim);  // its slot is the new one's from now on
            } else {
                if (rejecting >= rejecting_max) return admission::stopping;  // Too many 503s in flight: just close.
                ++rejecting;
                return admission::full;
            }
        }
        s->self_it_ = sessions.insert(sessions.end(), s);
        s->registered_ = true;
        ++session_count;
        metrics.set_connections(session_count);
    }
    if (victim) {
        metrics.count_eviction();
        auto ex = victim->get_executor();
        asio::post(ex, [v = std::move(victim)] { v->evict(); });
    }
    return admission::admitted;
}

void server_state::set_waiting(http_session& s, bool now_waiting) {
    std::lock_guard lock(mu);
    if (!s.registered_ || s.in_waiting_ == now_waiting) return;
    if (now_waiting) {
        s.waiting_it_ = waiting.insert(waiting.end(), s.weak_from_this());
    } else {
        waiting.erase(s.waiting_it_);
    }
    s.in_waiting_ = now_waiting;
}

void server_state::unlink_locked(http_session& s) {
    if (s.in_waiting_) {
        waiting.erase(s.waiting_it_);
        s.in_waiting_ = false;
    }
    if (!s.registered_) return;
    sessions.erase(s.self_it_);
    s.registered_ = false;
    --session_count;
    metrics.set_connections(session_count);
}

void server_state::release(http_session& s, bool post_cancel) {
    bool last = false;
    {
        std::lock_guard lock(mu);
        if (!s.registered_ && !s.in_waiting_) return;
        unlink_locked(s);
        last = session_count == 0 && stopping.load(std::memory_order_relaxed);
    }
    if (last && post_cancel) {
        asio::post(acceptor_strand, [self = shared_from_this()] { self->stop_timer.cancel(); });
    }
}

void server_state::stop() {
    std::vector<std::shared_ptr<http_session>> live;
    {
        std::lock_guard lock(mu);
        if (stopping.exchange(true, std::memory_order_acq_rel)) return;
        live.reserve(session_count);
        for (const auto& w : sessions) {
            if (auto s = w.lock()) live.push_back(std::move(s));
        }
    }
    asio::post(acceptor_strand, [self = shared_from_this()] {
        error_code ec;
        self->acceptor.close(ec);
        self->backoff_timer.cancel();
        self->arm_stop_timer();
    });
    for (auto& s : live) {
        auto ex = s->get_executor();
        asio::post(ex, [s = std::move(s)] { s->close_if_idle(); });
    }
}

void server_state::arm_stop_timer() {
    {
        std::lock_guard lock(mu);
        if (session_count == 0) return;
    }
    stop_timer.expires_after(opts.stop_timeout);
    stop_timer.async_wait([self = shared_from_this()](const error_code& ec) {
        if (ec) return;  // Cancelled: the last connection ended in time.
        self->close_all_sessions();
    });
}

void server_state::close_all_sessions() {
    std::vector<std::shared_ptr<http_session>> live;
    {
        std::lock_guard lock(mu);
        for (const auto& w : sessions) {
            if (auto s = w.lock()) live.push_back(std::move(s));
        }
    }
    if (!live.empty()) spdlog::info("closing {} connections still open after the stop timeout", live.size());
    for (auto& s : live) {
        auto ex = s->get_executor();
        asio::post(ex, [s = std::move(s)] { s->close(); });
    }
}

// http_session ----------------------------------------------------------------------------

namespace {
std::variant<beast::tcp_stream, tls_stream> make_stream(tcp::socket socket, const server_options& opts) {
    if (opts.tls) return std::variant<beast::tcp_stream, tls_stream>(std::in_place_type<tls_stream>, std::move(socket), *opts.tls);
    return std::variant<beast::tcp_stream, tls_stream>(std::in_place_type<beast::tcp_stream>, std::move(socket));
}
}  // namespace

http_session::http_session(std::shared_ptr<server_state> server, tcp::socket socket)
    : server_(std::move(server)), stream_(make_stream(std::move(socket), server_->opts)) {}

beast::tcp_stream& http_session::lowest() {
    return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); }, stream_);
}

http_session::~http_session() {
    server_->release(*this, false);  // Only if async_run did not end normally.
}

void http_session::close_if_idle() {
    if (upgraded_) {
        stop_notice_.notify();
    } else if (idle_) {
        close();
    }
}

void http_session::close() { lowest().close(); }

void http_session::evict() {
    evicted_ = true;
    if (reading_header_) close();
}

asio::awaitable<void> http_session::async_run(std::shared_ptr<http_session> self) {
    try {
        if (auto* tls = std::get_if<tls_stream>(&self->stream_)) {
            co_await self->async_serve(*tls);
        } else {
            co_await self->async_serve(std::get<beast::tcp_stream>(self->stream_));
        }
    } catch (...) {
        self->server_->release(*self, true);
        throw;  // log_task_end logs it.
    }
    self->server_->release(*self, true);
}

template <class Stream>
asio::awaitable<void> http_session::async_serve(Stream& stream) {
    constexpr bool tls = std::is_same_v<Stream, tls_stream>;
    const core::limits& lim = server_->opts.lim;
    beast::tcp_stream& conn = beast::get_lowest_layer(stream);
    error_code ec;
    bool first = true;
    // The first request must arrive whole within timeout_read of the accept (the TLS handshake
    // included); later ones may be preceded by up to timeout_idle of silence, and then must arrive
    // whole within timeout_read.
    conn.expires_after(lim.timeout_read);
    if constexpr (tls) {
        // Until the handshake ends the connection may be evicted like one waiting for a request,
        // so handshakes that never finish cannot hoard the slots either.
        reading_header_ = true;
        server_->set_waiting(*this, true);
        co_await stream.async_handshake(asio::ssl::stream_base::server, use_ec(ec));
        if (ec) {
            server_->metrics.count_tls_handshake_failure();
            spdlog::debug("tls handshake failed: {}", ec.message());
            co_return;
        }
    }
    for (;;) {
        if (evicted_) co_return;
        // From here until its header is read, this connection may be evicted for a new one.
        reading_header_ = true;
        server_->set_waiting(*this, true);
        if (buffer_.size() == 0) {
            if (server_->stopping.load(std::memory_order_acquire)) co_return;
            if (buffer_.capacity() > buffer_keep_bytes) buffer_.shrink_to_fit();
            if (!first) conn.expires_after(lim.timeout_idle);
            idle_ = true;
            const std::size_t n = co_await stream.async_read_some(buffer_.prepare(idle_read_bytes), use_ec(ec));
            idle_ = false;
            if (ec) {
                log_end(ec, "read");
                co_return;
            }
            buffer_.commit(n);
        }
        if (!first) conn.expires_after(lim.timeout_read);
        first = false;

        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(lim.header_bytes_max, UINT32_MAX)));
        parser.body_limit(lim.body_bytes_max);
        co_await http::async_read_header(stream, buffer_, parser, use_ec(ec));
        reading_header_ = false;
        server_->set_waiting(*this, false);
        if (!ec) {
            if (auto res = framing_problem(parser)) {
                co_await async_fail(stream, std::move(*res));
                co_return;
            }
        }
        if (!ec && !parser.is_done()) {
            if (expects_continue(parser.get())) {
                co_await asio::async_write(stream, asio::buffer(continue_100.data(), continue_100.size()),
                                           use_ec(ec));
            }
            if (!ec) co_await http::async_read(stream, buffer_, parser, use_ec(ec));
        }
        if (ec) {
            if (auto res = problem_for_read_error(ec, parser)) {
                co_await async_fail(stream, std::move(*res));
            } else {
                log_end(ec, "read");
            }
            co_return;
        }

        request req = parser.release();
        const auto started = std::chrono::steady_clock::now();
        std::size_t route_index = router::npos;
        response res;
        // A token that is not valid leaves the caller with no role: the public routes (the health
        // probes, which load balancers call with stale tokens) still answer, every other route
        // answers 401 (the router's rule for role none), and an upgrade is refused.
        auto authenticated = server_->authn.authenticate(req);
        const auto role = authenticated ? authenticated.value() : core::role::none;
        if (beast::websocket::is_upgrade(req) &&
                   router::split_target(to_string_view(req.target())).first == http_server::upgrade_path) {
            if (server_->upgrade) {
                conn.expires_never();
                upgraded_ = true;
                // A stop that came while this request was read reaches the handler at once.
                if (server_->stopping.load(std::memory_order_acquire)) stop_notice_.notify();
                co_await server_->upgrade(upgrade_stream(&stream), std::move(req), role, stop_notice_);
                co_return;
            }
            res = problem(problems::not_found, "WebSocket is not available yet",
                          std::nullopt, req.version(), req.keep_alive());
        } else {
            res = co_await server_->routes.async_route(req, role, route_index);
        }

        // A handler may ask to close (Connection: close); otherwise the request decides.
        const bool keep_alive = req.keep_alive() && res.keep_alive() && !evicted_ &&
                                !server_->stopping.load(std::memory_order_acquire);
        res.version(req.version());
        res.keep_alive(keep_alive);
        res.set(http::field::server, "cairn");
        // Counted before the write, so that a client that has its response also sees it counted.
        server_->metrics.observe_duration(std::chrono::steady_clock::now() - started);
        server_->metrics.count_request(route_index, res.result_int());
        conn.expires_after(lim.timeout_read);
        co_await http::async_write(stream, res, use_ec(ec));
        if (ec) {
            log_end(ec, "write");
            co_return;
        }
        if (!keep_alive) {
            if constexpr (tls) {
                // close_notify, then the socket closes with the session (the peer's reply is
                // not waited for: the response is complete and framed).
                conn.expires_after(linger_time(lim));
                co_await stream.async_shutdown(use_ec(ec));
            } else {
                error_code ignored;
                conn.socket().shutdown(tcp::socket::shutdown_send, ignored);
            }
            co_return;
        }
    }
}

template <class Stream>
asio::awaitable<void> http_session::async_fail(Stream& stream, response res) {
    res.keep_alive(false);
    res.set(http::field::server, "cairn");
    const auto linger = linger_time(server_->opts.lim);
    beast::get_lowest_layer(stream).expires_after(linger);
    error_code ec;
    server_->metrics.count_request(router::npos, res.result_int());
    co_await http::async_write(stream, res, use_ec(ec));
    if (ec) co_return;
    co_await async_lingering_close(stream, linger, linger_bytes_max);
}

asio::awaitable<void> async_lingering_close(beast::tcp_stream& stream, std::chrono::milliseconds linger,
                                            std::size_t bytes_max) {
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (!ec) {
        stream.expires_after(linger);
        std::array<char, 2048> sink;
        std::size_t drained = 0;
        while (drained < bytes_max) {
            const std::size_t n = co_await stream.async_read_some(asio::buffer(sink), use_ec(ec));
            if (ec) break;
            drained += n;
        }
    }
    stream.close();
}

asio::awaitable<void> async_lingering_close(tls_stream& stream, std::chrono::milliseconds linger, std::size_t) {
    auto& conn = beast::get_lowest_layer(stream);
    conn.expires_after(linger);
    error_code ec;
    co_await stream.async_shutdown(use_ec(ec));
    conn.close();
}

}  // namespace cairn::net::detail
