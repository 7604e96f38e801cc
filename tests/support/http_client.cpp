#include "tests/support/http_client.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <optional>

namespace cairn::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

std::string http_reply::header(http::field f) const {
    const auto it = headers.find(f);
    return it == headers.end() ? std::string{} : std::string(it->value().data(), it->value().size());
}

std::string http_reply::header(std::string_view name) const {
    const auto it = headers.find(beast::string_view(name.data(), name.size()));
    return it == headers.end() ? std::string{} : std::string(it->value().data(), it->value().size());
}

http_client::http_client(std::uint16_t port, std::string host, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout), stream_(ioc_) {}

bool http_client::is_open() const { return connected_; }

void http_client::close() {
    stream_.close();
    buffer_.clear();
    connected_ = false;
}

core::result<void> http_client::connect() {
    if (connected_) close();
    error_code ec;
    const auto address = asio::ip::make_address(host_, ec);
    if (ec) return ec;
    stream_.expires_after(timeout_);
    stream_.async_connect(tcp::endpoint(address, port_), [&](error_code e) { ec = e; });
    ioc_.restart();
    ioc_.run();
    if (ec) return ec;
    error_code ignored;
    stream_.socket().set_option(tcp::no_delay(true), ignored);
    connected_ = true;
    return core::success();
}

core::result<void> http_client::write_raw(std::string_view bytes) {
    if (!connected_) {
        if (auto r = connect(); !r) return r.error();
    }
    error_code ec;
    stream_.expires_after(timeout_);
    asio::async_write(stream_, asio::buffer(bytes.data(), bytes.size()),
                      [&](error_code e, std::size_t) { ec = e; });
    ioc_.restart();
    ioc_.run();
    if (ec) return ec;
    return core::success();
}

core::result<http_reply> http_client::read_reply() {
    if (!connected_) return make_error_code(asio::error::not_connected);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    error_code ec;
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser, [&](error_code e, std::size_t) { ec = e; });
    ioc_.restart();
    ioc_.run();
    if (ec) return ec;
    auto res = parser.release();
    http_reply reply;
    reply.status = res.result();
    reply.status_code = res.result_int();
    reply.version = res.version();
    reply.keep_alive = res.keep_alive();
    reply.body = std::move(res.body());
    reply.headers = std::move(res.base());
    return reply;
}

core::result<http_reply> http_client::send(http::verb method, std::string_view target, std::string body,
                                           const header_list& headers) {
    http::request<http::string_body> req{method, beast::string_view(target.data(), target.size()), 11};
    req.set(http::field::host, host_);
    for (const auto& [name, value] : headers) req.set(name, value);
    const bool needs_length =
        !body.empty() || method == http::verb::post || method == http::verb::put || method == http::verb::patch;
    req.body() = std::move(body);
    if (needs_length) req.prepare_payload();

    if (!connected_) {
        if (auto r = connect(); !r) return r.error();
    }
    error_code ec;
    stream_.expires_after(timeout_);
    http::async_write(stream_, req, [&](error_code e, std::size_t) { ec = e; });
    ioc_.restart();
    ioc_.run();
    if (ec) return ec;
    return read_reply();
}

core::result<std::chrono::milliseconds> http_client::wait_closed(std::chrono::milliseconds max) {
    if (!connected_) return std::chrono::milliseconds(0);
    const auto start = std::chrono::steady_clock::now();
    stream_.expires_after(max);
    error_code ec;
    for (;;) {
        std::size_t n = 0;
        stream_.async_read_some(buffer_.prepare(4096), [&](error_code e, std::size_t bytes) {
            ec = e;
            n = bytes;
        });
        ioc_.restart();
        ioc_.run();
        if (ec) break;
        buffer_.commit(n);
        buffer_.consume(buffer_.size());
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (ec == beast::error::timeout) {
        connected_ = false;  // The timeout closed the stream.
        return core::errc::timeout;
    }
    connected_ = false;
    stream_.close();
    return took;
}

}  // namespace cairn::test
