#include "apps/bench/ws_conn.hpp"

#include "core/log_task_end.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <fmt/format.h>

#include <charconv>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cairn::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using error_code = boost::system::error_code;

namespace {

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

std::optional<std::uint64_t> number_after(std::string_view frame, std::string_view key) noexcept {
    const auto at = frame.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    const char* first = frame.data() + at + key.size();
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(first, frame.data() + frame.size(), v);
    if (ec != std::errc() || ptr == first) return std::nullopt;
    return v;
}

}  // namespace

void append_client_text_frame(std::string& out, std::string_view payload, std::uint64_t& rng) {
    out += static_cast<char>(0x81);  // FIN, text
    const std::size_t n = payload.size();
    if (n < 126) {
        out += static_cast<char>(0x80 | n);
    } else if (n <= 0xFFFF) {
        out += static_cast<char>(0x80 | 126);
        out += static_cast<char>(n >> 8);
        out += static_cast<char>(n & 0xFF);
    } else {
        out += static_cast<char>(0x80 | 127);
        for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((static_cast<std::uint64_t>(n) >> shift) & 0xFF);
    }
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    unsigned char key[4];
    for (int i = 0; i < 4; ++i) key[i] = static_cast<unsigned char>(rng >> (8 * i));
    out.append(reinterpret_cast<const char*>(key), 4);
    const std::size_t at = out.size();
    out.append(payload);
    for (std::size_t i = 0; i < n; ++i) out[at + i] = static_cast<char>(static_cast<unsigned char>(out[at + i]) ^ key[i & 3]);
}

std::optional<ws_answer_head> parse_ws_answer_head(std::string_view frame) noexcept {
    auto id = number_after(frame, R"({"id":)");
    auto status = number_after(frame, R"(,"status":)");
    if (!id || !status || *status > 999) return std::nullopt;
    return ws_answer_head{*id, static_cast<unsigned>(*status)};
}

std::optional<feed_page_head> scan_feed_page(std::string_view page) noexcept {
    auto next = number_after(page, R"("next_from":)");
    if (!next) return std::nullopt;
    feed_page_head h;
    h.next_from = *next;
    for (auto at = page.find(R"("op_id":)"); at != std::string_view::npos; at = page.find(R"("op_id":)", at + 8)) ++h.ops;
    return h;
}

asio::awaitable<core::result<std::uint64_t>> async_read_feed_subscription(std::string host, std::uint16_t port, std::string query,
                                                                          std::uint64_t until, std::chrono::milliseconds timeout) {
    auto ex = co_await asio::this_coro::executor;
    websocket::stream<beast::tcp_stream> ws(ex);
    error_code ec;
    asio::ip::tcp::resolver resolver(ex);
    auto eps = co_await resolver.async_resolve(host, std::to_string(port), use_ec(ec));
    if (ec) co_return ec;
    beast::get_lowest_layer(ws).expires_after(timeout);
    co_await beast::get_lowest_layer(ws).async_connect(eps, use_ec(ec));
    if (ec) co_return ec;
    beast::get_lowest_layer(ws).expires_never();
    websocket::stream_base::timeout t{};
    t.handshake_timeout = timeout;
    t.idle_timeout = timeout;  // no frame for this long ends the read with a timeout
    t.keep_alive_pings = false;
    ws.set_option(t);
    ws.read_message_max(64 * 1024 * 1024);
    co_await ws.async_handshake(host, "/v1/ws", use_ec(ec));
    if (ec) co_return ec;
    const std::string subscribe = fmt::format(R"({{"id":1,"method":"SUBSCRIBE","path":"/v1/feed?{}"}})", query);
    co_await ws.async_write(asio::buffer(subscribe), use_ec(ec));
    if (ec) co_return ec;
    std::uint64_t ops = 0;
    beast::flat_buffer buffer;
    for (;;) {
        buffer.clear();
        co_await ws.async_read(buffer, use_ec(ec));
        if (ec == beast::error::timeout) co_return core::errc::timeout;
        if (ec) co_return ec;
        const std::string_view frame(static_cast<const char*>(buffer.cdata().data()), buffer.cdata().size());
        const auto head = parse_ws_answer_head(frame);
        if (!head || head->status != 200 || frame.find(R"("event":"feed")") == std::string_view::npos) {
            co_return core::errc::shard_rejected;  // refused, or ended: the bench's run is broken
        }
        const auto page = scan_feed_page(frame);
        if (!page) co_return core::errc::shard_rejected;
        ops += page->ops;
        if (page->next_from >= until) break;
    }
    ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    co_await ws.async_close(websocket::close_code::normal, use_ec(ec));
    co_return ops;
}

struct ws_conn::waiter {
    std::shared_ptr<asio::steady_timer> timer;  // on the caller's executor
    std::optional<core::result<unsigned>> result;
    bool keep_frame = false;
    std::string frame;  // the answer, when keep_frame
};

struct ws_conn::state : std::enable_shared_from_this<ws_conn::state> {

    state(asio::any_io_executor ex, std::string h, std::uint16_t p, std::chrono::milliseconds t)
        : strand(asio::make_strand(ex)), ws(strand), host(std::move(h)), port(p), timeout(t) {}

    asio::strand<asio::any_io_executor> strand;
    websocket::stream<beast::tcp_stream> ws;
    std::string host;
    std::uint16_t port;
    std::chrono::milliseconds timeout;
    std::optional<core::result<void>> connected;
    bool connecting = false;
    std::vector<asio::steady_timer*> connect_waiters;  // callers waiting for the first connect
    std::uint64_t next_id = 1;
    std::unordered_map<std::uint64_t, std::shared_ptr<waiter>> waiting;
    std::deque<std::string> outbox;
    bool writing = false;
    bool reading = false;
    std::optional<error_code> failed;
    std::uint64_t mask_rng = 0x9E3779B97F4A7C15ull;

    asio::awaitable<core::result<void>> async_connect_step() {
        if (connected) co_return *connected;
        if (connecting) {
            // Another caller is connecting this connection: wait until it is done.
            asio::steady_timer t(strand, std::chrono::steady_clock::time_point::max());
            connect_waiters.push_back(&t);
            error_code wait_ec;
            co_await t.async_wait(use_ec(wait_ec));
            co_return *connected;
        }
        connecting = true;
        auto r = co_await async_connect_once();
        connected = r;
        for (auto* t : connect_waiters) t->cancel();
        connect_waiters.clear();
        co_return r;
    }

    asio::awaitable<core::result<void>> async_connect_once() {
        error_code ec;
        asio::ip::tcp::resolver resolver(strand);
        auto eps = co_await resolver.async_resolve(host, std::to_string(port), use_ec(ec));
        if (!ec) {
            beast::get_lowest_layer(ws).expires_after(timeout);
            co_await beast::get_lowest_layer(ws).async_connect(eps, use_ec(ec));
        }
        if (!ec) {
            beast::get_lowest_layer(ws).expires_never();
            // Each write is a batch of whole requests: send it now, as cairnd does its answers. With
            // Nagle's algorithm a write waited for the ACK of the one before, which came with cairnd's
            // next answer: writes and counts at 16 in flight read 17-26% slower.
            error_code opt_ec;
            beast::get_lowest_layer(ws).socket().set_option(asio::ip::tcp::no_delay(true), opt_ec);
            websocket::stream_base::timeout t{};
            t.handshake_timeout = timeout;
            // No idle timeout: Beast's idle timer would keep the load's io_context busy for that long
            // after the last answer. A call that waits longer than timeout closes the connection
            // instead (async_call_with), which ends the pending read.
            t.idle_timeout = websocket::stream_base::none();
            t.keep_alive_pings = false;
            ws.set_option(t);
            co_await ws.async_handshake(host, "/v1/ws", use_ec(ec));
        }
        if (ec) co_return ec;
        co_return core::success();
    }

    void fail_all(error_code ec) {
        if (!failed) failed = ec;
        for (auto& [id, w] : waiting) {
            w->result = core::result<unsigned>(ec);
            asio::post(w->timer->get_executor(), [t = w->timer] { t->cancel(); });
        }
        waiting.clear();
        outbox.clear();
    }

    // Reads while calls wait for answers, so that an idle connection leaves no operation pending
    // (the load's io_context then runs out of work when the load ends).
    static asio::awaitable<void> read_loop(std::shared_ptr<state> self) {
        beast::flat_buffer buffer;
        while (!self->waiting.empty()) {
            buffer.clear();
            error_code ec;
            co_await self->ws.async_read(buffer, use_ec(ec));
            if (ec) {
                self->fail_all(ec);
                self->reading = false;
                co_return;
            }
            const auto data = buffer.cdata();
            const auto head = parse_ws_answer_head(std::string_view(static_cast<const char*>(data.data()), data.size()));
            if (!head) continue;
            auto it = self->waiting.find(head->id);
            if (it == self->waiting.end()) continue;  // its caller timed out
            it->second->result = head->status;
            if (it->second->keep_frame) {
                it->second->frame.assign(static_cast<const char*>(data.data()), data.size());
            }
            asio::post(it->second->timer->get_executor(), [t = it->second->timer] { t->cancel(); });
            self->waiting.erase(it);
        }
        self->reading = false;
    }

    // Writes every queued request in one write of the socket, as cairnd writes the answers that are
    // ready together: Beast writes one message per call, so the frames are built here and written
    // beneath it (at 16 in flight 1.8-1.9 requests per write instead of one, a quarter less of the
    // bench's CPU per request, and writes and counts 10-40% faster than one frame per write). Beast
    // writes nothing of its own on this connection meanwhile: the bench never pings and closes by
    // closing the socket, and a pong would answer cairnd's ping, sent only after the connection
    // received nothing for half of limits.timeout_idle (150 s), while a run's calls keep it busy.
    static asio::awaitable<void> write_loop(std::shared_ptr<state> self) {
        std::string batch;
        while (!self->outbox.empty() && !self->failed) {
            batch.clear();
            while (!self->outbox.empty()) {
                append_client_text_frame(batch, self->outbox.front(), self->mask_rng);
                self->outbox.pop_front();
            }
            error_code ec;
            co_await asio::async_write(beast::get_lowest_layer(self->ws), asio::buffer(batch), use_ec(ec));
            if (ec) self->fail_all(ec);
        }
        self->writing = false;
    }

    // On the strand: queue the frame, register the waiter.
    std::optional<error_code> start_call(std::uint64_t& id, std::string frame_tail, std::shared_ptr<waiter> w) {
        if (failed) return failed;
        id = next_id++;
        outbox.push_back(fmt::format(R"({{"id":{},{})", id, frame_tail));
        waiting.emplace(id, std::move(w));
        if (!writing) {
            writing = true;
            asio::co_spawn(strand, write_loop(shared_from_this()), core::log_task_end{"bench ws writer"});
        }
        if (!reading) {
            reading = true;
            asio::co_spawn(strand, read_loop(shared_from_this()), core::log_task_end{"bench ws reader"});
        }
        return std::nullopt;
    }
};

ws_conn::ws_conn(asio::any_io_executor ex, std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : s_(std::make_shared<state>(std::move(ex), std::move(host), port, timeout)) {}

ws_conn::~ws_conn() {
    // The load destroys its workers (and so their connections) after its io_context ran out of
    // work: no operation of this connection is pending, so the socket is closed directly.
    error_code ignored;
    beast::get_lowest_layer(s_->ws).socket().close(ignored);
}

asio::awaitable<core::result<void>> ws_conn::async_connect() {
    std::optional<core::result<void>> out;
    // Parameters, not captures: a coroutine lambda's captures die with the lambda object.
    // (And co_spawn's awaitable result must be default-constructible: result<void> is not.)
    auto step = [](std::shared_ptr<state> s, std::optional<core::result<void>>* o) -> asio::awaitable<void> {
        o->emplace(co_await s->async_connect_step());
    };
    co_await asio::co_spawn(s_->strand, step(s_, &out), asio::use_awaitable);
    co_return std::move(*out);
}

asio::awaitable<core::result<unsigned>> ws_conn::async_call(std::string_view method, std::string_view path,
                                                            std::string_view body_json) {
    auto w = std::make_shared<waiter>();
    co_return co_await async_call_with(s_, std::move(w), method, path, body_json);
}

asio::awaitable<core::result<std::pair<unsigned, std::string>>> ws_conn::async_get(std::string_view path) {
    auto w = std::make_shared<waiter>();
    w->keep_frame = true;
    auto r = co_await async_call_with(s_, w, "GET", path, {});
    if (!r) co_return r.error();
    co_return std::pair<unsigned, std::string>{r.value(), std::move(w->frame)};
}

asio::awaitable<core::result<unsigned>> ws_conn::async_call_with(std::shared_ptr<state> s,
                                                                 std::shared_ptr<waiter> w,
                                                                 std::string_view method, std::string_view path,
                                                                 std::string_view body_json) {
    w->timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, s->timeout);
    std::string tail = fmt::format(R"("method":"{}","path":"{}")", method, path);
    if (!body_json.empty()) tail += fmt::format(R"(,"body":{})", body_json);
    tail += '}';
    std::uint64_t id = 0;
    auto start = [](std::shared_ptr<state> st, std::shared_ptr<waiter> wt, std::uint64_t* out_id,
                    std::string t) -> asio::awaitable<std::optional<error_code>> {
        co_return st->start_call(*out_id, std::move(t), std::move(wt));
    };
    auto refused = co_await asio::co_spawn(s->strand, start(s, w, &id, std::move(tail)), asio::use_awaitable);
    if (refused) co_return *refused;
    error_code ec;
    co_await w->timer->async_wait(use_ec(ec));
    if (w->result) co_return *w->result;
    // Timed out: forget the waiter, and close the connection: one that left a call unanswered this
    // long is not trusted again, and closing ends its pending read (failing every other call on it)
    // instead of leaving the read, and the load, waiting forever.
    auto forget = [](std::shared_ptr<state> st, std::uint64_t i) -> asio::awaitable<void> {
        st->waiting.erase(i);
        error_code ignored;
        beast::get_lowest_layer(st->ws).socket().close(ignored);
        co_return;
    };
    co_await asio::co_spawn(s->strand, forget(s, id), asio::use_awaitable);
    co_return core::errc::timeout;
}

}  // namespace cairn::bench
