#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/ws_api.hpp"

#include "core/log_task_end.hpp"
#include "net/auth.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/ws_message.hpp"
#include "net/router.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <memory>

namespace cairn::net {
namespace {

using detail::message;
using detail::parse_message;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using json = nlohmann::json;
using error_code = boost::system::error_code;

// Answers waiting to be written per connection; past it the connection is closed (the client
// reads too slowly for what it sends).
constexpr std::size_t answers_queued_max = 4096;

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

struct ws_metrics {
    core::counter& messages;
    core::counter& rejected;
    core::gauge& connections;
};

bool is_json(const response& res) {
    auto it = res.find(http::field::content_type);
    if (it == res.end()) return false;
    const auto type = to_string_view(it->value());
    return type.starts_with("application/json") || type.starts_with("application/problem+json");
}

// The answer frame for a routed request: {"id", "status", "body"[, "retry_after"]}.
std::string render_answer(const json& id, const response& res, bool binary) {
    std::string retry_after;
    if (auto it = res.find(http::field::retry_after); it != res.end()) retry_after = std::string(to_string_view(it->value()));
    if (!binary) {
        std::string out = R"({"id":)";
        out += id.dump();
        out += R"(,"status":)";
        out += std::to_string(res.result_int());
        out += R"(,"body":)";
        if (res.body().empty()) {
            out += "null";
        } else if (is_json(res)) {
            out += res.body();  // cairn's own JSON: spliced, not parsed again
        } else {
            detail::append_json_string(out, res.body());  // any bytes: never throws
        }
        if (!retry_after.empty()) {
            out += R"(,"retry_after":)";
            detail::append_json_string(out, retry_after);
        }
        out += '}';
        return out;
    }
    json a{{"id", id}, {"status", res.result_int()}};
    if (res.body().empty()) {
        a["body"] = nullptr;
    } else if (is_json(res)) {
        a["body"] = json::parse(res.body(), nullptr, false);
    } else {
        a["body"] = res.body();
    }
    if (!retry_after.empty()) a["retry_after"] = retry_after;
    const auto bytes = json::to_msgpack(a);
    return std::string(bytes.begin(), bytes.end());
}

// One upgraded connection. Lives in the upgrade handler's frame; every member is touched only
// on the connection's strand (the handler's executor), where request coroutines run too.
// Stream: beast::tcp_stream or tls_stream.
template <class Stream>
class ws_session {
public:
    ws_session(Stream& stream, const router& r, const core::limits& lim, core::role role, ws_metrics& m)
        : ws_(stream), router_(r), lim_(lim), role_(role), metrics_(m) {}

    asio::awaitable<void> async_run(request upgrade, stop_notice& stop) {
        auto ex = co_await asio::this_coro::executor;
        idle_ = std::make_unique<asio::steady_timer>(ex);
        websocket::stream_base::timeout t{};
        t.handshake_timeout = std::chrono::seconds(10);
        t.idle_timeout = lim_.timeout_idle;
        t.keep_alive_pings = true;
        ws_.set_option(t);
        ws_.set_option(websocket::stream_base::decorator(
            [](websocket::response_type& res) { res.set(http::field::server, "cairn"); }));
        ws_.read_message_max(lim_.body_bytes_max + ws_envelope_bytes);
        error_code ec;
        co_await ws_.async_accept(upgrade, use_ec(ec));
        if (ec) co_return;
        metrics_.connections.add(1);
        // The server stops: answer what is in flight, then close with 1001 (going away); the
        // client's close reply ends the read loop. The server closes the socket after its
        // stop_timeout whatever the client does.
        stop.on_stop([this] {
            stopping_ = true;
            close_when_quiet();
        });
        struct forget_hook {
            stop_notice& n;
            ~forget_hook() { n.clear(); }
        } forget{stop};
        // No exception may unwind this frame while requests still use it: one that escapes the loop
        // ends the connection, after the wait for those requests below (issue 13).
        try {
            beast::flat_buffer buffer;
            while (!broken_) {
                buffer.clear();
                co_await ws_.async_read(buffer, use_ec(ec));
                if (ec) {
                    // Closed by the client, idle timeout, a too-big message (Beast closes with
                    // 1009), or the server stopping: all end the connection quietly.
                    if (ec != websocket::error::closed && ec != asio::error::operation_aborted && ec != beast::error::timeout) {
                        spdlog::debug("websocket read ended: {}", ec.message());
                    }
                    break;
                }
                metrics_.messages.inc();
                const bool binary = ws_.got_binary();
                const auto data = buffer.cdata();
                message m;
                try {
                    m = parse_message(std::string_view(static_cast<const char*>(data.data()), data.size()), binary);
                } catch (const std::exception& e) {
                    // Whatever a frame holds, its failure is its own answer (issue 13), never the session's end.
                    spdlog::debug("websocket message refused: {}", e.what());
                    m = message{};
                    m.error = "the message cannot be read";
                }
                if (!m.error.empty()) {
                    metrics_.rejected.inc();
                    enqueue(render_answer(m.id, problem(problems::invalid_message, m.error, m.error_field.empty() ? std::nullopt
                                                                                       : std::optional<std::string_view>(m.error_field)),
                                          binary),
                            binary);
                    continue;
                }
                if (stopping_) {
                    metrics_.rejected.inc();
                    auto res = problem(problems::shutting_down, "cairnd is stopping; send this request again after reconnecting");
                    res.set(http::field::retry_after, "1");
                    enqueue(render_answer(m.id, res, binary), binary);
                    continue;
                }
                if (in_flight_ >= lim_.ws_in_flight_max) {
                    metrics_.rejected.inc();
                    auto res = problem(problems::too_many_in_flight, "this connection already has " + std::to_string(lim_.ws_in_flight_max) +
                                           " requests running (limits.ws_in_flight_max); wait for answers before sending more");
                    res.set(http::field::retry_after, "1");
                    enqueue(render_answer(m.id, res, binary), binary);
                    continue;
                }
                ++in_flight_;
                asio::co_spawn(ex, async_handle(std::move(m), binary), core::log_task_end{"websocket request"});
            }
        } catch (const std::exception& e) {
            spdlog::warn("websocket session ended by an error: {}", e.what());
            beast::get_lowest_layer(ws_).cancel();  // A write in progress ends soon.
        }

        broken_ = true;
        // Requests still running hold references to this session: wait for them (each ends
        // within its own deadline), and for the writer.
        while (in_flight_ > 0 || writing_) {
            idle_->expires_after(std::chrono::hours(1));
            co_await idle_->async_wait(use_ec(ec));
        }
        metrics_.connections.add(-1);
        if (ws_.is_open() && !close_sent_) {
            ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
            co_await ws_.async_close(websocket::close_code::normal, use_ec(ec));
        }
    }

private:
    asio::awaitable<void> async_handle(message m, bool binary) {
        // No exception leaves a request: it becomes this request's answer (issue 13). The session
        // waits for every request before it ends, so `this` outlives this coroutine either way.
        std::string answer;
        try {
            request req{m.method, m.path, 11};
            req.set(http::field::host, "websocket");
            if (!m.body.empty()) req.set(http::field::content_type, "application/json");
            if (!m.idempotency_key.empty()) req.set("Idempotency-Key", m.idempotency_key);
            req.body() = std::move(m.body);
            req.prepare_payload();
            response res = co_await router_.async_route(req, role_);
            answer = render_answer(m.id, res, binary);
        } catch (const std::exception& e) {
            spdlog::warn("websocket request failed: {}", e.what());
            answer = render_answer(m.id, problem(problems::internal, "the request failed inside cairnd; it was not applied unless its ack came"),
                                   binary);
        }
        enqueue(std::move(answer), binary);
        --in_flight_;
        if (broken_) idle_->cancel();
        close_when_quiet();
    }

    // While stopping: once no request runs and nothing is being written, sends the close frame
    // (once). The close is a write, so it waits for the writer.
    void close_when_quiet() {
        if (!stopping_ || close_sent_ || broken_ || in_flight_ > 0 || writing_) return;
        close_sent_ = true;
        writing_ = true;
        asio::co_spawn(ws_.get_executor(), async_close_going_away(), core::log_task_end{"websocket close"});
    }

    asio::awaitable<void> async_close_going_away() {
        error_code ec;
        co_await ws_.async_close(websocket::close_code::going_away, use_ec(ec));
        if (ec) {
            broken_ = true;
            beast::get_lowest_layer(ws_).cancel();
        }
        writing_ = false;
        if (broken_) idle_->cancel();
    }

    void enqueue(std::string frame, bool binary) {
        if (broken_ || close_sent_) return;
        if (queue_.size() >= answers_queued_max) {
            spdlog::warn("websocket client reads too slowly ({} answers queued); closing", queue_.size());
            broken_ = true;
            beast::get_lowest_layer(ws_).cancel();
            return;
        }
        queue_.push_back({std::move(frame), binary});
        if (!writing_) {
            writing_ = true;
            asio::co_spawn(ws_.get_executor(), async_write_all(), core::log_task_end{"websocket writer"});
        }
    }

    asio::awaitable<void> async_write_all() {
        error_code ec;
        while (!queue_.empty() && !broken_) {
            auto [frame, binary] = std::move(queue_.front());
            queue_.pop_front();
            ws_.binary(binary);
            co_await ws_.async_write(asio::buffer(frame), use_ec(ec));
            if (ec) {
                broken_ = true;
                beast::get_lowest_layer(ws_).cancel();
            }
        }
        queue_.clear();
        writing_ = false;
        if (broken_) idle_->cancel();
        close_when_quiet();
    }

    websocket::stream<Stream&> ws_;
    const router& router_;
    const core::limits& lim_;
    core::role role_;
    ws_metrics& metrics_;
    std::unique_ptr<asio::steady_timer> idle_;  // wakes the read loop's final wait
    std::deque<std::pair<std::string, bool>> queue_;
    std::size_t in_flight_ = 0;
    bool writing_ = false;
    bool broken_ = false;
    bool stopping_ = false;    // the server stops: new requests are answered 503
    bool close_sent_ = false;  // our close frame is out (or going): nothing more is written
};

}  // namespace

// Beast's accept answers a bad handshake in plain text; cairn answers every refusal as
// problem+json, so the handshake is checked here first (RFC 6455 4.2.1).
std::optional<response> handshake_problem(const request& req) {
    const auto version = req.find(http::field::sec_websocket_version);
    if (version == req.end() || req.count(http::field::sec_websocket_version) != 1 || version->value() != "13") {
        auto res = problem(problems::unsupported_websocket_version, "Sec-WebSocket-Version must be 13", "Sec-WebSocket-Version", req.version(), false);
        res.set(http::field::sec_websocket_version, "13");
        return res;
    }
    const auto key = req.find(http::field::sec_websocket_key);
    const auto is_base64 = [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    };
    // A nonce of 16 bytes in base64: 22 characters of the alphabet and "==".
    const std::string_view k = key == req.end() ? std::string_view{} : to_string_view(key->value());
    if (req.count(http::field::sec_websocket_key) != 1 || k.size() != 24 || !k.ends_with("==") ||
        !std::all_of(k.begin(), k.end() - 2, is_base64)) {
        return problem(problems::malformed_request, "Sec-WebSocket-Key must be one base64-encoded 16-byte nonce", "Sec-WebSocket-Key",
                       req.version(), false);
    }
    return std::nullopt;
}

// Writes a refusal of the upgrade and closes the connection.
template <class Stream>
asio::awaitable<void> async_refuse(Stream& stream, response res) {
    res.keep_alive(false);
    res.set(http::field::server, "cairn");
    error_code ec;
    co_await http::async_write(stream, res, use_ec(ec));
    beast::get_lowest_layer(stream).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

template <class Stream>
asio::awaitable<void> async_serve_ws(Stream& stream, request req, core::role role, stop_notice& stop, const router& r,
                                     const core::limits& lim, ws_metrics& m) {
    if (role == core::role::none) {
        // Tokens are configured and this upgrade carries none: refuse before upgrading.
        co_await async_refuse(stream, auth::unauthorized(req));
        co_return;
    }
    if (auto res = handshake_problem(req)) {
        co_await async_refuse(stream, std::move(*res));
        co_return;
    }
    ws_session<Stream> session(stream, r, lim, role, m);
    co_await session.async_run(std::move(req), stop);
}

upgrade_handler make_ws_handler(const router& r, const core::limits& lim, core::registry& metrics) {
    auto m = std::make_shared<ws_metrics>(ws_metrics{
        metrics.add_counter("cairn_ws_messages_total", "WebSocket request messages received", {}),
        metrics.add_counter("cairn_ws_rejected_total", "WebSocket messages answered 400 or 429 without routing", {}),
        metrics.add_gauge("cairn_ws_connections", "Open WebSocket connections", {})});
    return [&r, lim, m](upgrade_stream stream, request req, core::role role, stop_notice& stop) -> asio::awaitable<void> {
        if (auto* tls = std::get_if<tls_stream*>(&stream)) {
            co_await async_serve_ws(**tls, std::move(req), role, stop, r, lim, *m);
        } else {
            co_await async_serve_ws(*std::get<beast::tcp_stream*>(stream), std::move(req), role, stop, r, lim, *m);
        }
    };
}

}  // namespace cairn::net
