// A blocking WebSocket client for tests (Beast): connects to cairnd's /v1/ws, sends text or
// binary frames and reads answers, each operation within a deadline. One thread; not
// thread-safe. Errors are values (timeouts are core::errc::timeout).
#pragma once

#include "core/result.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::test {

struct ws_frame {
    std::string data;
    bool binary = false;
};

class ws_client {
public:
    explicit ws_client(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(10));

    // TCP connect and the upgrade of /v1/ws, with "Authorization: Bearer <token>" when token is
    // not empty. On a refused upgrade the error is the handshake's and handshake_status() is
    // the HTTP status the server answered (e.g. 401).
    [[nodiscard]] core::result<void> connect(const std::string& token = {});
    unsigned handshake_status() const noexcept { return handshake_status_; }

    [[nodiscard]] core::result<void> send_text(std::string_view text);
    [[nodiscard]] core::result<void> send_binary(std::string_view bytes);
    // Sends a ping; the server's pong is seen by a later read(): pongs() counts the pongs of the
    // last ping sent (from 0 at each send_ping).
    [[nodiscard]] core::result<void> send_ping(std::string_view payload);
    int pongs() const noexcept { return pongs_; }
    // The next message. When the server closed the connection, the error is
    // websocket::error::closed and close_code() says why (e.g. 1009: message too big).
    [[nodiscard]] core::result<ws_frame> read();
    std::uint16_t close_code() const;
    void close();
    void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }

private:
    template <class Start>
    core::result<void> run(Start start);

    std::uint16_t port_;
    std::chrono::milliseconds timeout_;
    boost::asio::io_context ioc_;
    boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
    boost::beast::flat_buffer buffer_;
    unsigned handshake_status_ = 0;
    std::string ping_payload_;
    int pongs_ = 0;
};

}  // namespace cairn::test
