#include "apps/bench/http_conn.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace cairn::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

http_conn::http_conn(asio::any_io_executor ex, std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout), stream_(std::move(ex)) {
    req_.version(11);
    req_.set(http::field::host, host_);
    req_.set(http::field::user_agent, "cairn-bench");
}

void http_conn::close() noexcept {
    beast::error_code ignored;
    stream_.socket().close(ignored);
    buffer_.clear();
    open_ = false;
}

asio::awaitable<core::result<void>> http_conn::async_connect() {
    if (open_) close();
    core::error_code ec;
    const auto address = asio::ip::make_address(host_, ec);
    if (ec) co_return ec;
    stream_.expires_after(timeout_);
    co_await stream_.async_connect(tcp::endpoint(address, port_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        close();
        co_return ec;
    }
    stream_.socket().set_option(tcp::no_delay(true), ec);
    open_ = true;
    co_return core::success();
}

asio::awaitable<core::result<http_result>> http_conn::async_request(http::verb method, std::string_view target,
                                                                    std::string_view body) {
    if (!open_) {
        auto c = co_await async_connect();
        if (!c) co_return c.error();
    }
    req_.method(method);
    req_.target(beast::string_view(target.data(), target.size()));
    req_.body().assign(body.data(), body.size());
    if (method == http::verb::get) {
        req_.erase(http::field::content_length);
        req_.erase(http::field::content_type);
    } else {
        req_.set(http::field::content_type, "application/json");
        req_.prepare_payload();
    }
    req_.keep_alive(true);
    core::error_code ec;
    stream_.expires_after(timeout_);
    co_await http::async_write(stream_, req_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        close();
        co_return ec;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    co_await http::async_read(stream_, buffer_, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        close();
        co_return ec;
    }
    auto res = parser.release();
    http_result out;
    out.status = res.result_int();
    out.body = std::move(res.body());
    if (!res.keep_alive()) close();
    co_return out;
}

}  // namespace cairn::bench
