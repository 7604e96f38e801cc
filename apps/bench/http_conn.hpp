// One keep-alive HTTP/1.1 client connection for cairn-bench, driven by coroutines on the
// executor it was made with. One request at a time; owns its socket and buffers.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::bench {

struct http_result {
    unsigned status = 0;
    std::string body;
};

class http_conn {
public:
    http_conn(boost::asio::any_io_executor ex, std::string host, std::uint16_t port,
              std::chrono::milliseconds timeout = std::chrono::seconds(10));

    // Connects (again, if open). Errors: those of Asio's connect, or beast timeout.
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_connect();

    // Sends one request and reads its reply within the timeout, reconnecting first if the
    // connection is closed. `target` and `body` must stay valid until the awaitable completes.
    // On any error the connection is closed (the next call reconnects).
    [[nodiscard]] boost::asio::awaitable<core::result<http_result>> async_request(boost::beast::http::verb method,
                                                                                  std::string_view target,
                                                                                  std::string_view body = {});

    bool is_open() const noexcept { return open_; }
    void close() noexcept;

private:
    std::string host_;
    std::uint16_t port_;
    std::chrono::milliseconds timeout_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    boost::beast::http::request<boost::beast::http::string_body> req_;
    bool open_ = false;
};

}  // namespace cairn::bench
