// The one HTTP/1.1 client of cairn's own programs: the `cairn` CLI, cairn-bench and the tests.
// `http_connection` is one keep-alive connection driven by coroutines on the executor it was made
// with; `blocking_http_connection` is the same connection on a private io_context, each call
// running it until the operation ends or its deadline passes (so a caller never hangs). Both also
// write raw bytes and read raw replies (malformed, pipelined and slow requests in tests). One
// request at a time per connection; not thread-safe. With connection_options::tls the connection
// is HTTPS: the server's certificate is verified against the context's CAs and the host name.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace cairn::client {

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
    // Retry-After in seconds; 0 when absent or not a number of seconds.
    unsigned retry_after_s() const;
};

struct connection_options {
    std::string host = "127.0.0.1";  // an address or a name (resolved at each connect)
    std::uint16_t port = 80;
    std::chrono::milliseconds timeout{5000};  // each of connect, write and read
    std::string user_agent = "cairn";
    // Sent with every request that has a body (a header of the request overrides it); empty: none.
    std::string content_type;
    std::size_t reply_bytes_max = 64 * 1024 * 1024;
    // Close the connection after a transport error or a reply without keep-alive, so that the next
    // request connects again (load generators and the CLI). Off, the connection stays as the
    // server left it, for tests that watch how the server closes.
    bool auto_close = false;
    // Set: TLS (make_tls_context); the certificate must be valid for `host`.
    std::shared_ptr<boost::asio::ssl::context> tls;
};

// A client TLS context: TLS 1.2+, the server's certificate verified against ca_file (empty: the
// system's CAs), and the client certificate cert_file with key_file when given. An error names the
// file and what is wrong with it.
std::variant<std::shared_ptr<boost::asio::ssl::context>, std::string> make_tls_context(const std::string& ca_file,
                                                                                      const std::string& cert_file,
                                                                                      const std::string& key_file);

class http_connection {
public:
    http_connection(boost::asio::any_io_executor ex, connection_options o);
    ~http_connection();
    // A TLS connection moved while open arrives closed (its TLS layer is bound to the old
    // object): the next request connects again.
    http_connection(http_connection&& o) noexcept;

    // Connects (again, if open). Errors: those of resolving and connecting, beast timeout.
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_connect();
    // Sends one request and reads its reply, connecting first if needed. A non-empty body, and
    // every POST, PUT and PATCH, gets Content-Length. `target`, `body` and `headers` must stay
    // valid until the awaitable completes.
    [[nodiscard]] boost::asio::awaitable<core::result<http_reply>> async_request(http::verb method, std::string_view target,
                                                                                std::string_view body = {},
                                                                                const header_list& headers = {});
    // Writes bytes as they are (connecting first if needed).
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_write_raw(std::string_view bytes);
    // Reads one reply (after write_raw, or the second of a pipeline).
    [[nodiscard]] boost::asio::awaitable<core::result<http_reply>> async_read_reply();
    // Waits until the server closes the connection, discarding what it sends; returns how long
    // that took. core::errc::timeout if it is still open after max.
    [[nodiscard]] boost::asio::awaitable<core::result<std::chrono::milliseconds>> async_wait_closed(
        std::chrono::milliseconds max);

    bool is_open() const noexcept { return open_; }
    void close() noexcept;
    // The deadline of every later operation.
    void set_timeout(std::chrono::milliseconds timeout) noexcept { o_.timeout = timeout; }

private:
    core::error_code failed(core::error_code ec) noexcept;
    // f(stream) on the TLS stream when there is one, else on the TCP stream.
    template <class F>
    auto on_stream(F&& f);

    struct tls_state;
    connection_options o_;
    boost::beast::tcp_stream stream_;
    std::unique_ptr<tls_state> tls_;  // the TLS layer of the open connection
    boost::beast::flat_buffer buffer_;
    http::request<http::string_body> req_;  // reused: its fixed fields are set once
    bool open_ = false;
};

class blocking_http_connection {
public:
    explicit blocking_http_connection(connection_options o);

    [[nodiscard]] core::result<void> connect();
    [[nodiscard]] core::result<http_reply> send(http::verb method, std::string_view target, std::string body = {},
                                                const header_list& headers = {});
    [[nodiscard]] core::result<void> write_raw(std::string_view bytes);
    [[nodiscard]] core::result<http_reply> read_reply();
    [[nodiscard]] core::result<std::chrono::milliseconds> wait_closed(std::chrono::milliseconds max);

    bool is_open() const noexcept { return conn_.is_open(); }
    void close() noexcept { conn_.close(); }
    void set_timeout(std::chrono::milliseconds timeout) noexcept { conn_.set_timeout(timeout); }

private:
    template <class T>
    core::result<T> run(boost::asio::awaitable<core::result<T>> op);

    boost::asio::io_context ioc_;
    http_connection conn_;
};

}  // namespace cairn::client
