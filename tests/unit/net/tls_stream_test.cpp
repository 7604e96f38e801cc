// The server's TLS stream (net::tls_stream) when one of its operations needs no I/O while another
// waits for bytes: Asio's SSL stream completes such an operation (an empty write, or a write after
// the connection's TLS state failed) with a zero-byte read of the layer below, whatever read that
// layer already has outstanding. A WebSocket connection does this: its reader waits for a frame
// while its writer writes. Beast's tcp_stream allows one read at a time: a debug build aborts,
// and a release build loses the waiting read's timeout (the zero-byte read's completion cancels
// it). These tests wait on real loopback TLS connections, bounded by deadlines.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/http_server.hpp"
#include "net/tls.hpp"
#include "net/tls_transport.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

// A TLS connection over loopback: the server's side is the stream the listener uses, the
// client's a plain Asio SSL stream that trusts anything. Both handshakes are done.
class tls_pair : public ::testing::Test {
protected:
    void SetUp() override {
        core::tls_config c;
        c.cert_file = CAIRN_SOURCE_DIR "/clients/python/tests/tls/server.pem";
        c.key_file = CAIRN_SOURCE_DIR "/clients/python/tests/tls/server.key";
        auto made = make_tls_context(c);
        ASSERT_TRUE(std::holds_alternative<std::shared_ptr<asio::ssl::context>>(made)) << std::get<std::string>(made);
        server_ctx_ = std::get<std::shared_ptr<asio::ssl::context>>(made);

        tcp::acceptor acceptor(ioc_, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        tcp::socket client_socket(ioc_);
        client_socket.connect(acceptor.local_endpoint());
        server_.emplace(acceptor.accept(), *server_ctx_);
        client_.emplace(std::move(client_socket), client_ctx_);

        std::optional<error_code> server_hs, client_hs;
        server_->async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_hs = ec; });
        client_->async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { client_hs = ec; });
        run_until([&] { return server_hs && client_hs; });
        ASSERT_TRUE(server_hs && client_hs) << "the handshakes did not end";
        ASSERT_FALSE(*server_hs) << server_hs->message();
        ASSERT_FALSE(*client_hs) << client_hs->message();
    }

    // Runs the io_context until done() or 10 s; each step handles what is ready.
    template <class Done>
    void run_until(Done done) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        ioc_.restart();
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            ioc_.run_one_for(100ms);
            if (ioc_.stopped()) ioc_.restart();
        }
    }

    asio::io_context ioc_;
    std::shared_ptr<asio::ssl::context> server_ctx_;
    asio::ssl::context client_ctx_{asio::ssl::context::tls_client};
    std::optional<tls_stream> server_;
    std::optional<asio::ssl::stream<tcp::socket>> client_;
};

TEST_F(tls_pair, an_empty_write_beside_a_waiting_read_keeps_the_reads_timeout) {
    beast::get_lowest_layer(*server_).expires_after(300ms);
    std::array<char, 64> buf{};
    std::optional<error_code> read_ec;
    server_->async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t) { read_ec = ec; });
    std::optional<error_code> write_ec;
    server_->async_write_some(asio::const_buffer(), [&](error_code ec, std::size_t n) {
        write_ec = ec;
        EXPECT_EQ(n, 0u);
    });
    run_until([&] { return write_ec.has_value(); });
    ASSERT_TRUE(write_ec) << "the empty write did not complete";
    EXPECT_FALSE(*write_ec) << write_ec->message();
    EXPECT_FALSE(read_ec) << "the read ended with the write: " << read_ec->message();

    // The client sends nothing: the read must end by its timeout, not wait forever.
    run_until([&] { return read_ec.has_value(); });
    ASSERT_TRUE(read_ec) << "the waiting read lost its timeout";
    EXPECT_EQ(*read_ec, beast::error::timeout) << read_ec->message();
}

TEST_F(tls_pair, an_empty_write_beside_a_waiting_read_leaves_the_read_its_bytes) {
    std::array<char, 64> buf{};
    std::optional<error_code> read_ec;
    std::size_t read_n = 0;
    server_->async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t n) {
        read_ec = ec;
        read_n = n;
    });
    for (int i = 0; i < 3; ++i) {
        std::optional<error_code> write_ec;
        server_->async_write_some(asio::const_buffer(), [&](error_code ec, std::size_t) { write_ec = ec; });
        run_until([&] { return write_ec.has_value(); });
        ASSERT_TRUE(write_ec) << "empty write " << i << " did not complete";
        EXPECT_FALSE(*write_ec) << write_ec->message();
    }
    ASSERT_FALSE(read_ec) << "the read ended without bytes: " << read_ec->message();

    const std::string hello = "hello";
    std::optional<error_code> sent;
    asio::async_write(*client_, asio::buffer(hello), [&](error_code ec, std::size_t) { sent = ec; });
    run_until([&] { return read_ec.has_value() && sent.has_value(); });
    ASSERT_TRUE(read_ec) << "the read never got the client's bytes";
    EXPECT_FALSE(*read_ec) << read_ec->message();
    EXPECT_EQ(std::string(buf.data(), read_n), hello);

    // And the server still writes: the client reads what it sends.
    const std::string back = "back";
    std::optional<error_code> wrote;
    asio::async_write(*server_, asio::buffer(back), [&](error_code ec, std::size_t) { wrote = ec; });
    std::array<char, 4> got{};
    std::optional<error_code> client_read;
    asio::async_read(*client_, asio::buffer(got), [&](error_code ec, std::size_t) { client_read = ec; });
    run_until([&] { return wrote.has_value() && client_read.has_value(); });
    ASSERT_TRUE(wrote && client_read);
    EXPECT_FALSE(*wrote) << wrote->message();
    EXPECT_FALSE(*client_read) << client_read->message();
    EXPECT_EQ(std::string(got.data(), got.size()), back);
}

}  // namespace
}  // namespace cairn::net
