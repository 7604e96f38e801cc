#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/ws_api.hpp"

#include "core/log_task_end.hpp"
#include "net/auth.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/write_coalescer.hpp"
#include "net/detail/ws_message.hpp"
#include "net/router.hpp"
#include "net/tls_transport.hpp"

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
#include <charconv>
#include <deque>
#include <map>
#include <memory>
#include <vector>

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
// Bytes of queued answers gathered into one write of the socket at most (a larger answer goes in
// a write of its own).
constexpr std::size_t coalesce_bytes_max = 64 * 1024;

// Change feed subscriptions (SUBSCRIBE /v1/feed?...) one connection may hold at once; each also
// counts as a request in flight (limits.ws_in_flight_max).
constexpr std::size_t subscriptions_max = 16;
// A subscription long-polls the feed route for at most this long per round (or
// limits.applied_wait_max if shorter), so that an UNSUBSCRIBE, a closed connection or a stop ends
// it within about this time.
constexpr std::chrono::milliseconds subscription_poll_max{1000};

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// The subscription's query as the client gave it, without `from` (the subscription keeps its own
// position) and with its value of `from` apart; nullopt when the client set wait_ms, which the
// subscription chooses itself.
struct feed_query_parts {
    std::string rest;  // "&name=value..." (may be empty)
    std::string from;  // the client's from, "0" if none
};
std::optional<feed_query_parts> split_feed_query(std::string_view path) {
    feed_query_parts out;
    out.from = "0";
    const auto q = path.find('?');
    std::string_view query = q == std::string_view::npos ? std::string_view{} : path.substr(q + 1);
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view item = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (item.empty()) continue;
        const std::string_view name = item.substr(0, item.find('='));
        if (name == "wait_ms") return std::nullopt;
        if (name == "from") {
            out.from = std::string(item.substr(std::min(item.size(), name.size() + 1)));
            continue;
        }
        out.rest += '&';
        out.rest += item;
    }
    return out;
}

struct ws_metrics {
    core::counter& messages;
    core::counter& rejected;
    core::gauge& connections;
    core::gauge& subscriptions;
};

bool is_json(const response& res) {
    auto it = res.find(http::field::content_type);
    if (it == res.end()) return false;
    const auto type = to_string_view(it->value());
    return type.starts_with("application/json") || type.starts_with("application/problem+json");
}

// The answer frame for a routed request: {"id", "status", "body"[, "retry_after"]}; a subscription's
// frames add "event" ("feed" for a page, "end" for its last frame).
std::string render_answer(const json& id, const response& res, bool binary, std::string_view event = {}) {
    std::string retry_after;
    if (auto it = res.find(http::field::retry_after); it != res.end()) retry_after = std::string(to_string_view(it->value()));
    if (!binary) {
        std::string out = R"({"id":)";
        out += id.dump();
        out += R"(,"status":)";
        out += std::to_string(res.result_int());
        if (!event.empty()) {
            out += R"(,"event":)";
            detail::append_json_string(out, event);
        }
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
    if (!event.empty()) a["event"] = event;
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
                if (m.kind == detail::message_kind::unsubscribe) {
                    unsubscribe(m.id, binary);  // also while stopping, and past the in-flight limit
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
                if (m.kind == detail::message_kind::subscribe) {
                    subscribe(std::move(m), binary);
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
        for (auto& [key, sub] : subscriptions_) sub->written->cancel();  // ends their waits for a write
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

    // A change feed subscription (docs/api.md, "Subscribing to the feed"): a loop that routes
    // GET /v1/feed from its position, pushes each page that has ops as an "event":"feed" frame, and
    // reads the next page only once that frame is written. So it holds at most one page in memory,
    // and a client that reads slowly slows it down (TCP's own backpressure) instead of filling a
    // buffer; one that falls behind the journal's retention gets a last frame with 410.
    struct subscription {
        json id;
        bool binary = false;
        std::string rest;        // the client's query without from and wait_ms
        std::string from;        // the position to read after (the client's text until the first page)
        bool ended = false;      // unsubscribed: push nothing more
        bool frame_queued = false;
        std::unique_ptr<asio::steady_timer> written;  // cancelled when its frame is written (or dropped)
    };

    void subscribe(message m, bool binary) {
        const std::string key = m.id.dump();
        auto refuse = [&](const problem_type& type, std::string detail, std::string_view field = {}) {
            metrics_.rejected.inc();
            enqueue(render_answer(m.id, problem(type, detail, field.empty() ? std::nullopt : std::optional<std::string_view>(field)), binary),
                    binary);
        };
        if (subscriptions_.count(key)) {
            return refuse(problems::invalid_message, "a subscription with this id is running on this connection; UNSUBSCRIBE it first",
                          "id");
        }
        if (subscriptions_.size() >= subscriptions_max) {
            return refuse(problems::too_many_in_flight, "this connection already has " + std::to_string(subscriptions_max) +
                                                            " subscriptions; UNSUBSCRIBE one first");
        }
        auto parts = split_feed_query(m.path);
        if (!parts) return refuse(problems::invalid_message, "a subscription chooses its own wait: leave wait_ms out", "wait_ms");
        auto sub = std::make_shared<subscription>();
        sub->id = std::move(m.id);
        sub->binary = binary;
        sub->rest = std::move(parts->rest);
        sub->from = std::move(parts->from);
        sub->written = std::make_unique<asio::steady_timer>(ws_.get_executor());
        subscriptions_.emplace(key, sub);
        metrics_.subscriptions.add(1);
        ++in_flight_;
        asio::co_spawn(ws_.get_executor(), async_subscription(key, sub), core::log_task_end{"websocket subscription"});
    }

    void unsubscribe(const json& id, bool binary) {
        auto it = subscriptions_.find(id.dump());
        if (it == subscriptions_.end()) {
            metrics_.rejected.inc();
            enqueue(render_answer(id, problem(problems::not_found, "no subscription with this id runs on this connection", "id"), binary),
                    binary);
            return;
        }
        auto sub = it->second;
        end_subscription(it);
        json body{{"reason", "unsubscribed"}, {"next_from", position(*sub)}};
        enqueue(render_answer(sub->id, json_response(http::status::ok, body.dump(), request{}), sub->binary, "end"), sub->binary);
    }

    // Where a subscription stands, for its last frame: the next_from of its last page, or null
    // before its first (when from is still the client's text).
    static json position(const subscription& sub) {
        std::uint64_t v = 0;
        const auto* end = sub.from.data() + sub.from.size();
        const auto [p, ec] = std::from_chars(sub.from.data(), end, v);
        return ec == std::errc{} && p == end ? json(v) : json(nullptr);
    }

    // Adds "next_from" to a problem+json body (an object cairn rendered itself).
    static void add_next_from(response& res, const subscription& sub) {
        auto& body = res.body();
        if (body.empty() || body.back() != '}') return;
        body.pop_back();
        body += R"(,"next_from":)" + position(sub).dump() + "}";
        res.prepare_payload();
    }

    void end_subscription(typename std::map<std::string, std::shared_ptr<subscription>>::iterator it) {
        it->second->ended = true;
        it->second->written->cancel();
        subscriptions_.erase(it);
        metrics_.subscriptions.add(-1);
    }

    asio::awaitable<void> async_subscription(std::string key, std::shared_ptr<subscription> sub) {
        const auto poll = std::min(subscription_poll_max, lim_.applied_wait_max);
        bool first = true;
        error_code ec;
        try {
            while (!sub->ended && !broken_ && !stopping_) {
                // The first round answers at once: it is the SUBSCRIBE's answer, or its refusal.
                request req{http::verb::get,
                            "/v1/feed?from=" + sub->from + sub->rest + "&wait_ms=" + std::to_string(first ? 0 : poll.count()), 11};
                req.set(http::field::host, "websocket");
                const auto started = std::chrono::steady_clock::now();
                response res = co_await router_.async_route(req, role_);
                if (sub->ended || broken_) break;
                if (res.result() != http::status::ok) {
                    // A refused SUBSCRIBE is a plain answer; a running subscription ends with it
                    // (410 when it fell behind the journal's retention), and where it stood.
                    if (!first) add_next_from(res, *sub);
                    enqueue(render_answer(sub->id, res, sub->binary, first ? std::string_view{} : "end"), sub->binary);
                    break;
                }
                const auto page = json::parse(res.body(), nullptr, false);
                if (!page.is_object() || !page.contains("next_from") || !page["next_from"].is_number_unsigned()) {
                    enqueue(render_answer(sub->id, problem(problems::internal, "the feed answered a page without next_from"), sub->binary,
                                          first ? std::string_view{} : "end"),
                            sub->binary);
                    break;
                }
                const bool has_ops = page.contains("ops") && page["ops"].is_array() && !page["ops"].empty();
                const std::string next = std::to_string(page["next_from"].get<std::uint64_t>());
                const std::string previous = std::exchange(sub->from, next);
                if (first || has_ops) {
                    sub->frame_queued = true;
                    if (!enqueue(render_answer(sub->id, res, sub->binary, "feed"), sub->binary, sub)) break;
                    // Backpressure: the next page is read only once this one is on the wire.
                    while (sub->frame_queued && !sub->ended && !broken_) {
                        sub->written->expires_after(std::chrono::hours(1));
                        co_await sub->written->async_wait(use_ec(ec));
                    }
                } else if (next == previous && std::chrono::steady_clock::now() - started < poll / 2) {
                    // Nothing new and the wait ended early (the gateway stops, or a shard's worker
                    // does): pace the next round rather than spin.
                    sub->written->expires_after(std::chrono::milliseconds(50));
                    co_await sub->written->async_wait(use_ec(ec));
                }
                first = false;
            }
            if (!sub->ended && stopping_ && !broken_) {
                auto res = problem(problems::shutting_down, "cairnd is stopping; subscribe again after reconnecting, from next_from");
                res.set(http::field::retry_after, "1");
                add_next_from(res, *sub);
                enqueue(render_answer(sub->id, res, sub->binary, "end"), sub->binary);
            }
        } catch (const std::exception& e) {
            spdlog::warn("websocket subscription failed: {}", e.what());
            enqueue(render_answer(sub->id, problem(problems::internal, "the subscription failed inside cairnd; subscribe again from next_from"),
                                  sub->binary, "end"),
                    sub->binary);
        }
        if (auto it = subscriptions_.find(key); it != subscriptions_.end() && it->second == sub) end_subscription(it);
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

    // Queues a frame for the writer; false when the connection is closing or broken (the frame is
    // dropped). A subscription's frame names it, to be told when its frame is written.
    bool enqueue(std::string frame, bool binary, std::shared_ptr<subscription> sub = nullptr) {
        if (broken_ || close_sent_) return false;
        if (queue_.size() >= answers_queued_max) {
            spdlog::warn("websocket client reads too slowly ({} answers queued); closing", queue_.size());
            broken_ = true;
            beast::get_lowest_layer(ws_).cancel();
            return false;
        }
        queue_.push_back({std::move(frame), binary, std::move(sub)});
        if (!writing_) {
            writing_ = true;
            asio::co_spawn(ws_.get_executor(), async_write_all(), core::log_task_end{"websocket writer"});
        }
        return true;
    }

    static void frame_done(const std::shared_ptr<subscription>& sub) {
        if (!sub) return;
        sub->frame_queued = false;
        sub->written->cancel();
    }

    // Writes the queued frames, those queued together in one write of the socket
    // (detail::write_coalescer: up to coalesce_bytes_max at a time); a subscription hears that
    // its frame is written once the write that carried it is done.
    asio::awaitable<void> async_write_all() {
        error_code ec;
        std::vector<std::shared_ptr<subscription>> carried;
        while (!queue_.empty() && !broken_) {
            ws_.next_layer().hold();
            while (!queue_.empty() && !broken_ && ws_.next_layer().pending_bytes() < coalesce_bytes_max) {
                auto f = std::move(queue_.front());
                queue_.pop_front();
                ws_.binary(f.binary);
                co_await ws_.async_write(asio::buffer(f.data), use_ec(ec));
                if (ec) broken_ = true;
                if (f.sub) carried.push_back(std::move(f.sub));
            }
            co_await ws_.next_layer().async_flush(use_ec(ec));
            if (ec || broken_) {
                broken_ = true;
                beast::get_lowest_layer(ws_).cancel();
            }
            for (const auto& sub : carried) frame_done(sub);
            carried.clear();
        }
        for (const auto& f : queue_) frame_done(f.sub);
        queue_.clear();
        writing_ = false;
        if (broken_) idle_->cancel();
        close_when_quiet();
    }

    websocket::stream<detail::write_coalescer<Stream>> ws_;
    const router& router_;
    const core::limits& lim_;
    core::role role_;
    ws_metrics& metrics_;
    std::unique_ptr<asio::steady_timer> idle_;  // wakes the read loop's final wait
    struct queued_frame {
        std::string data;
        bool binary = false;
        std::shared_ptr<subscription> sub;  // the subscription whose page it is, if any
    };
    std::deque<queued_frame> queue_;
    std::map<std::string, std::shared_ptr<subscription>> subscriptions_;  // by the id's JSON text
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
        metrics.add_gauge("cairn_ws_connections", "Open WebSocket connections", {}),
        metrics.add_gauge("cairn_ws_subscriptions", "Change feed subscriptions running on WebSocket connections", {})});
    return [&r, lim, m](upgrade_stream stream, request req, core::role role, stop_notice& stop) -> asio::awaitable<void> {
        if (auto* tls = std::get_if<tls_stream*>(&stream)) {
            co_await async_serve_ws(**tls, std::move(req), role, stop, r, lim, *m);
        } else {
            co_await async_serve_ws(*std::get<beast::tcp_stream*>(stream), std::move(req), role, stop, r, lim, *m);
        }
    };
}

}  // namespace cairn::net
