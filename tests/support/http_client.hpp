// A small blocking HTTP/1.1 client for tests: one keep-alive connection, each call runs the
// client's own io_context until its operation finishes or times out (so a test never hangs).
// Also writes raw bytes and reads raw replies, for malformed, pipelined and slow requests.
// One thread at a time; not for production code.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::test {

namespace http = boost::beast::http;

using header_list = std::vector<std::pair<std::string, std::string>>;

struct http_reply {
    http::status status = http::status::unknown;  // unknown for codes Beast does not name
    unsigned status_code = 0;
    unsigned version = 11;
    bool keep_alive = false;
    http::fields headers;
    std::string body;

    unsigned code() const { return status_code; }
    // The value of a header, empty when absent.
    std::string header(http::field f) const;
    std::string header(std::string_view name) const;
};

class http_client {
public:
    explicit http_client(std::uint16_t port, std::string host = "127.0.0.1",
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));

    // Connects (send() connects on its own when needed).
    [[nodiscard]] core::result<void> connect();
    bool is_open() const;
    void close();
    // The deadline of every later operation.
    void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

    // Sends one request (HTTP/1.1, keep-alive unless headers say "Connection: close") and reads
    // its reply. A non-empty body gets Content-Length; so does a POST, PUT or PATCH.
    [[nodiscard]] core::result<http_reply> send(http::verb method, std::string_view target, std::string body = {},
                                                const header_list& headers = {});

    // Writes bytes as they are.
    [[nodiscard]] core::result<void> write_raw(std::string_view bytes);
    // Reads one reply (after write_raw, or a second one of a pipeline).
    [[nodiscard]] core::result<http_reply> read_reply();
    // Waits until the server closes the connection, discarding anything it sends; returns how
    // long that took. Error core::errc::timeout if it is still open after max.
    [[nodiscard]] core::result<std::chrono::milliseconds> wait_closed(std::chrono::milliseconds max);

private:
    std::string host_;
    std::uint16_t port_;
    std::chrono::milliseconds timeout_;
    boost::asio::io_context ioc_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    bool connected_ = false;
};

}  // namespace cairn::test
