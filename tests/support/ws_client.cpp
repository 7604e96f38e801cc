#include "tests/support/ws_client.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/field.hpp>

#include <optional>

namespace cairn::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

ws_client::ws_client(std::uint16_t port, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout), ws_(ioc_) {}

template <class Start>
core::result<void> ws_client::run(Start start) {
    std::optional<boost::system::error_code> done;
    start([&](boost::system::error_code ec, auto&&...) { done = ec; });
    ioc_.restart();
    ioc_.run_for(timeout_);
    if (!done) {
        // Deadline: abandon the operation by closing the socket, then let its handler run.
        boost::system::error_code ignored;
        beast::get_lowest_layer(ws_).socket().close(ignored);
        ioc_.restart();
        ioc_.run();
        return core::errc::timeout;
    }
    if (*done) return *done;
    return core::success();
}

core::result<void> ws_client::connect(const std::string& token) {
    const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
    if (auto r = run([&](auto h) { beast::get_lowest_layer(ws_).async_connect(ep, h); }); !r) return r;
    if (!token.empty()) {
        ws_.set_option(websocket::stream_base::decorator(
            [token](websocket::request_type& req) { req.set(beast::http::field::authorization, "Bearer " + token); }));
    }
    websocket::response_type res;
    auto r = run([&](auto h) { ws_.async_handshake(res, "127.0.0.1", "/v1/ws", h); });
    handshake_status_ = res.result_int();
    return r;
}

core::result<void> ws_client::send_text(std::string_view text) {
    ws_.text(true);
    return run([&](auto h) { ws_.async_write(asio::buffer(text.data(), text.size()), h); });
}

core::result<void> ws_client::send_binary(std::string_view bytes) {
    ws_.binary(true);
    return run([&](auto h) { ws_.async_write(asio::buffer(bytes.data(), bytes.size()), h); });
}

core::result<void> ws_client::send_ping(std::string_view payload) {
    ping_payload_ = std::string(payload);
    pongs_ = 0;
    ws_.control_callback([this](websocket::frame_type kind, beast::string_view p) {
        if (kind == websocket::frame_type::pong && std::string_view(p.data(), p.size()) == ping_payload_) ++pongs_;
    });
    return run([&](auto h) { ws_.async_ping(websocket::ping_data(payload.data(), payload.size()), h); });
}

core::result<ws_frame> ws_client::read() {
    buffer_.clear();
    if (auto r = run([&](auto h) { ws_.async_read(buffer_, h); }); !r) return r.error();
    ws_frame f;
    f.binary = ws_.got_binary();
    f.data = beast::buffers_to_string(buffer_.data());
    return f;
}

std::uint16_t ws_client::close_code() const { return static_cast<std::uint16_t>(ws_.reason().code); }

void ws_client::close() {
    if (!ws_.is_open()) return;
    (void)run([&](auto h) { ws_.async_close(websocket::close_code::normal, h); });
}

}  // namespace cairn::test
