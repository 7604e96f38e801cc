// One pipelined WebSocket connection to cairnd's /v1/ws for cairn-bench: many callers (the
// load's workers) each send a request and await their own answer, matched by id, while the
// connection keeps up to as many requests in flight as there are callers. Everything runs on
// the connection's strand; callers may be on any executor. Owns its socket.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cairn::bench {

class ws_conn {
public:
    ws_conn(boost::asio::any_io_executor ex, std::string host, std::uint16_t port,
            std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // Must run while the executor's io_context still exists and no operation is pending.
    ~ws_conn();

    // Connects and upgrades (once; later calls return the first outcome).
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_connect();

    // Sends {"id": <assigned>, "method", "path", "body"} as a text frame and waits (up to the
    // timeout) for its answer; returns the answer's status. Errors: the connection's failure
    // (then every waiting call fails), or core::errc::timeout.
    [[nodiscard]] boost::asio::awaitable<core::result<unsigned>> async_call(std::string_view method,
                                                                            std::string_view path,
                                                                            std::string_view body_json = {});

    // The same for a GET of path, also returning the whole answer frame (for bodies the bench
    // needs, such as a page's next_cursor).
    [[nodiscard]] boost::asio::awaitable<core::result<std::pair<unsigned, std::string>>> async_get(std::string_view path);

private:
    struct state;
    struct waiter;
    static boost::asio::awaitable<core::result<unsigned>> async_call_with(std::shared_ptr<state> s,
                                                                          std::shared_ptr<waiter> w,
                                                                          std::string_view method,
                                                                          std::string_view path,
                                                                          std::string_view body_json);
    std::shared_ptr<state> s_;
};

// Appends payload to out as one masked client text frame (RFC 6455, 5.2), its masking key drawn
// from rng (xorshift64), so that a connection can write every queued request in one write.
void append_client_text_frame(std::string& out, std::string_view payload, std::uint64_t& rng);

// The id and status of an answer frame {"id":N,"status":S,...} as cairn writes it (no general
// JSON parsing: the bench must not cost the client more than the server). nullopt if absent.
struct ws_answer_head {
    std::uint64_t id = 0;
    unsigned status = 0;
};
std::optional<ws_answer_head> parse_ws_answer_head(std::string_view frame) noexcept;

// What the feed scenario needs of a change feed page (GET /v1/feed's body, or a subscription's
// frame around it): how many ops it holds and its next_from, found without a JSON parse (counting
// "op_id" members: the bench's edges carry no such text in their fields). nullopt without next_from.
struct feed_page_head {
    std::uint64_t ops = 0;
    std::uint64_t next_from = 0;
};
std::optional<feed_page_head> scan_feed_page(std::string_view page) noexcept;

// Subscribes to the change feed on a new connection (SUBSCRIBE /v1/feed?<query>, which must hold
// from= and may hold limit= and filters) and reads the pushed pages until one's next_from reaches
// `until`; returns the ops the pages held. Errors: a refused subscription or an end frame
// (core::errc::shard_rejected), the connection's failure, or core::errc::timeout when no frame
// came for `timeout`.
[[nodiscard]] boost::asio::awaitable<core::result<std::uint64_t>> async_read_feed_subscription(
    std::string host, std::uint16_t port, std::string query, std::uint64_t until,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace cairn::bench
