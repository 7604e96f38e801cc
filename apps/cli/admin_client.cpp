#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "apps/cli/admin_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <charconv>
#include <exception>

namespace cairn::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t reply_bytes_max = 64 * 1024 * 1024;

asio::awaitable<core::result<reply>> async_call(endpoint to, http::request<http::string_body> req,
                                                std::chrono::milliseconds timeout) {
    auto ex = co_await asio::this_coro::executor;
    core::error_code ec;
    tcp::resolver resolver(ex);
    auto found = co_await resolver.async_resolve(to.host, std::to_string(to.port),
                                                 asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    beast::tcp_stream stream(ex);
    stream.expires_after(timeout);
    co_await stream.async_connect(found, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(reply_bytes_max);
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    auto res = parser.release();
    reply out;
    out.status = res.result_int();
    if (auto it = res.find(http::field::retry_after); it != res.end()) {
        unsigned v = 0;
        const auto text = it->value();
        if (std::from_chars(text.data(), text.data() + text.size(), v).ec == std::errc{}) out.retry_after_s = v;
    }
    if (auto it = res.find(http::field::content_type); it != res.end()) {
        out.content_type = std::string(it->value().data(), it->value().size());
    }
    out.body = std::move(res.body());
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    co_return out;
}

}  // namespace

std::optional<endpoint> parse_url(std::string_view url) {
    constexpr std::string_view scheme = "http://";
    if (url.substr(0, scheme.size()) != scheme) return std::nullopt;
    url.remove_prefix(scheme.size());
    if (!url.empty() && url.back() == '/') url.remove_suffix(1);
    if (url.empty() || url.find('/') != std::string_view::npos) return std::nullopt;
    endpoint e;
    std::string_view host = url;
    if (url.front() == '[') {  // [v6]:port
        const auto close = url.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        host = url.substr(1, close - 1);
        url.remove_prefix(close + 1);
        if (!url.empty() && url.front() != ':') return std::nullopt;
    } else if (const auto colon = url.rfind(':'); colon != std::string_view::npos) {
        host = url.substr(0, colon);
        url.remove_prefix(colon);
    } else {
        url = {};
    }
    if (host.empty()) return std::nullopt;
    e.host = std::string(host);
    if (!url.empty()) {
        url.remove_prefix(1);  // ':'
        unsigned port = 0;
        auto [ptr, ec] = std::from_chars(url.data(), url.data() + url.size(), port);
        if (ec != std::errc() || ptr != url.data() + url.size() || port == 0 || port > 65535) return std::nullopt;
        e.port = static_cast<std::uint16_t>(port);
    } else {
        e.port = 80;
    }
    return e;
}

core::result<reply> http_call(const endpoint& to, std::string_view method, std::string_view target,
                              std::string_view body, std::string_view token, std::chrono::milliseconds timeout,
                              std::string_view content_type) {
    http::request<http::string_body> req;
    req.method(http::string_to_verb(beast::string_view(method.data(), method.size())));
    req.target(beast::string_view(target.data(), target.size()));
    req.version(11);
    req.set(http::field::host, to.host + ":" + std::to_string(to.port));
    req.set(http::field::user_agent, "cairn-cli");
    req.set(http::field::accept, "application/json");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + std::string(token));
    if (!body.empty()) {
        req.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
        req.body() = std::string(body);
    }
    req.keep_alive(false);
    req.prepare_payload();

    asio::io_context ioc;
    std::optional<core::result<reply>> out;
    std::exception_ptr error;
    // A result has no default value, which co_spawn's value handler needs: keep it in out instead.
    auto task = [&]() -> asio::awaitable<void> {
        auto r = co_await async_call(to, std::move(req), timeout);
        out.emplace(std::move(r));
    };
    asio::co_spawn(ioc, task(), [&](std::exception_ptr e) { error = e; });
    ioc.run();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

}  // namespace cairn::cli
