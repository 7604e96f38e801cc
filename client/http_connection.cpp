#include "client/http_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <charconv>
#include <exception>
#include <filesystem>
#include <optional>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fmt/format.h>

namespace cairn::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t read_room = 64 * 1024;  // a reply's read buffer: see async_read_reply
}  // namespace

std::string http_reply::header(http::field f) const {
    const auto it = headers.find(f);
    return it == headers.end() ? std::string{} : std::string(it->value().data(), it->value().size());
}

std::string http_reply::header(std::string_view name) const {
    const auto it = headers.find(beast::string_view(name.data(), name.size()));
    return it == headers.end() ? std::string{} : std::string(it->value().data(), it->value().size());
}

unsigned http_reply::retry_after_s() const {
    const auto text = header(http::field::retry_after);
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc{} && end == text.data() + text.size() ? v : 0;
}

std::variant<std::shared_ptr<asio::ssl::context>, std::string> make_tls_context(const std::string& ca_file,
                                                                               const std::string& cert_file,
                                                                               const std::string& key_file) {
    namespace ssl = asio::ssl;
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    const auto problem = [](std::string_view what, const std::string& file, const core::error_code& ec) {
        std::error_code fs_ec;
        if (!std::filesystem::exists(file, fs_ec)) return fmt::format("{} {}: no such file", what, file);
        return fmt::format("{} {}: {}", what, file, ec.message());
    };
    core::error_code ec;
    if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
        return std::string("OpenSSL refuses TLS 1.2 as the minimum version");
    }
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (ca_file.empty()) {
        ctx->set_default_verify_paths(ec);
        if (ec) return fmt::format("the system's CA certificates: {}", ec.message());
    } else {
        ctx->load_verify_file(ca_file, ec);
        if (ec) return problem("CA file", ca_file, ec);
    }
    if (!cert_file.empty()) {
        ctx->use_certificate_chain_file(cert_file, ec);
        if (ec) return problem("certificate", cert_file, ec);
        ctx->use_private_key_file(key_file.empty() ? cert_file : key_file, ssl::context::pem, ec);
        if (ec) return problem("key", key_file.empty() ? cert_file : key_file, ec);
    }
    return ctx;
}

// ---- http_connection ----------------------------------------------------------------------------

struct http_connection::tls_state {
    asio::ssl::stream<beast::tcp_stream&> stream;
};

template <class F>
auto http_connection::on_stream(F&& f) {
    if (tls_) return f(tls_->stream);
    return f(stream_);
}

http_connection::http_connection(asio::any_io_executor ex, connection_options o)
    : o_(std::move(o)), stream_(std::move(ex)) {
    req_.version(11);
    req_.set(http::field::host, o_.host + ":" + std::to_string(o_.port));
    req_.set(http::field::user_agent, o_.user_agent);
}

http_connection::~http_connection() = default;
http_connection::http_connection(http_connection&& o) noexcept
    : o_(std::move(o.o_)),
      stream_(std::move(o.stream_)),
      buffer_(std::move(o.buffer_)),
      req_(std::move(o.req_)),
      open_(o.open_) {
    if (o.tls_) close();
    o.tls_.reset();
    o.open_ = false;
}

void http_connection::close() noexcept {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    tls_.reset();
    buffer_.clear();
    open_ = false;
}

core::error_code http_connection::failed(core::error_code ec) noexcept {
    // A Beast timeout has closed the socket already.
    if (o_.auto_close || ec == beast::error::timeout) close();
    return ec;
}

asio::awaitable<core::result<void>> http_connection::async_connect() {
    if (open_) close();
    core::error_code ec;
    stream_.expires_after(o_.timeout);
    const auto address = asio::ip::make_address(o_.host, ec);
    if (!ec) {
        co_await stream_.async_connect(tcp::endpoint(address, o_.port), asio::redirect_error(asio::use_awaitable, ec));
    } else {
        tcp::resolver resolver(stream_.get_executor());
        ec = {};
        auto found = co_await resolver.async_resolve(o_.host, std::to_string(o_.port),
                                                     asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return ec;
        co_await stream_.async_connect(found, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
        close();
        co_return ec;
    }
    stream_.socket().set_option(tcp::no_delay(true), ec);
    if (o_.tls) {
        tls_ = std::make_unique<tls_state>(tls_state{asio::ssl::stream<beast::tcp_stream&>(stream_, *o_.tls)});
        SSL* ssl = tls_->stream.native_handle();
        // The name sent (SNI) and checked: an address is matched against the certificate's IP
        // entries, a name against its DNS entries.
        core::error_code not_an_address;
        (void)asio::ip::make_address(o_.host, not_an_address);
        const bool ok = !not_an_address ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), o_.host.c_str()) == 1
                            : SSL_set_tlsext_host_name(ssl, o_.host.c_str()) == 1 && SSL_set1_host(ssl, o_.host.c_str()) == 1;
        if (!ok) {
            close();
            co_return make_error_code(asio::error::invalid_argument);
        }
        ec = {};
        co_await tls_->stream.async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            close();
            co_return ec;
        }
    }
    open_ = true;
    co_return core::success();
}

asio::awaitable<core::result<http_reply>> http_connection::async_request(http::verb method, std::string_view target,
                                                                        std::string_view body,
                                                                        const header_list& headers) {
    if (!open_) {
        auto c = co_await async_connect();
        if (!c) co_return c.error();
    }
    // The fixed fields stay; what a previous request added goes.
    for (auto it = req_.begin(); it != req_.end();) {
        it = it->name() == http::field::host || it->name() == http::field::user_agent ? std::next(it) : req_.erase(it);
    }
    req_.method(method);
    req_.target(beast::string_view(target.data(), target.size()));
    req_.body().assign(body.data(), body.size());
    if (!body.empty() && !o_.content_type.empty()) req_.set(http::field::content_type, o_.content_type);
    for (const auto& [name, value] : headers) req_.set(name, value);
    if (!body.empty() || method == http::verb::post || method == http::verb::put || method == http::verb::patch) {
        req_.prepare_payload();
    }
    core::error_code ec;
    stream_.expires_after(o_.timeout);
    co_await on_stream([&](auto& s) { return http::async_write(s, req_, asio::redirect_error(asio::use_awaitable, ec)); });
    if (ec) co_return failed(ec);
    co_return co_await async_read_reply();
}

asio::awaitable<core::result<void>> http_connection::async_write_raw(std::string_view bytes) {
    if (!open_) {
        auto c = co_await async_connect();
        if (!c) co_return c.error();
    }
    core::error_code ec;
    stream_.expires_after(o_.timeout);
    co_await on_stream([&](auto& s) {
        return asio::async_write(s, asio::buffer(bytes.data(), bytes.size()), asio::redirect_error(asio::use_awaitable, ec));
    });
    if (ec) co_return failed(ec);
    co_return core::success();
}

asio::awaitable<core::result<http_reply>> http_connection::async_read_reply() {
    if (!open_) co_return make_error_code(asio::error::not_connected);
    http::response_parser<http::string_body> parser;
    parser.body_limit(o_.reply_bytes_max);
    // Beast reads as much as the buffer has room for (at least 512 bytes): with the room a new
    // buffer has, a page of 10 KB took 19 reads of the socket (cairn-bench's page client spent as
    // much CPU as cairnd). With 64 KB of room a reply of that size is one read.
    if (buffer_.capacity() < read_room) buffer_.reserve(read_room);
    core::error_code ec;
    stream_.expires_after(o_.timeout);
    co_await on_stream(
        [&](auto& s) { return http::async_read(s, buffer_, parser, asio::redirect_error(asio::use_awaitable, ec)); });
    if (ec) co_return failed(ec);
    auto res = parser.release();
    http_reply reply;
    reply.status = res.result();
    reply.status_code = res.result_int();
    reply.version = res.version();
    reply.keep_alive = res.keep_alive();
    reply.body = std::move(res.body());
    reply.headers = std::move(res.base());
    if (!reply.keep_alive && o_.auto_close) close();
    co_return reply;
}

asio::awaitable<core::result<std::chrono::milliseconds>> http_connection::async_wait_closed(std::chrono::milliseconds max) {
    if (!open_) co_return std::chrono::milliseconds(0);
    const auto start = std::chrono::steady_clock::now();
    stream_.expires_after(max);
    core::error_code ec;
    while (!ec) {
        const auto n = co_await on_stream(
            [&](auto& s) { return s.async_read_some(buffer_.prepare(4096), asio::redirect_error(asio::use_awaitable, ec)); });
        buffer_.commit(n);
        buffer_.consume(buffer_.size());
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    close();
    if (ec == beast::error::timeout) co_return core::errc::timeout;
    co_return took;
}

// ---- blocking_http_connection -------------------------------------------------------------------

blocking_http_connection::blocking_http_connection(connection_options o) : conn_(ioc_.get_executor(), std::move(o)) {}

template <class T>
core::result<T> blocking_http_connection::run(asio::awaitable<core::result<T>> op) {
    // A result has no default value, which co_spawn's value handler needs: it is kept here instead.
    std::optional<core::result<T>> out;
    std::exception_ptr error;
    auto task = [&out](asio::awaitable<core::result<T>> inner) -> asio::awaitable<void> { out.emplace(co_await std::move(inner)); };
    asio::co_spawn(ioc_, task(std::move(op)), [&error](std::exception_ptr e) { error = e; });
    ioc_.restart();
    ioc_.run();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

core::result<void> blocking_http_connection::connect() { return run(conn_.async_connect()); }

core::result<http_reply> blocking_http_connection::send(http::verb method, std::string_view target, std::string body,
                                                        const header_list& headers) {
    return run(conn_.async_request(method, target, body, headers));
}

core::result<void> blocking_http_connection::write_raw(std::string_view bytes) { return run(conn_.async_write_raw(bytes)); }

core::result<http_reply> blocking_http_connection::read_reply() { return run(conn_.async_read_reply()); }

core::result<std::chrono::milliseconds> blocking_http_connection::wait_closed(std::chrono::milliseconds max) {
    return run(conn_.async_wait_closed(max));
}

}  // namespace cairn::client
