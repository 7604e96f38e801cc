#include "apps/bench/ws_conn.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace cairn::bench {
namespace {

TEST(ws_answer_head, reads_id_and_status_of_cairns_answers) {
    auto h = parse_ws_answer_head(R"({"id":42,"status":202,"body":{"seq":7}})");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->id, 42u);
    EXPECT_EQ(h->status, 202u);
    h = parse_ws_answer_head(R"({"id":18446744073709551615,"status":429,"body":null,"retry_after":"1"})");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->id, 18446744073709551615u);
    EXPECT_EQ(h->status, 429u);
}

TEST(ws_answer_head, refuses_what_is_not_an_answer) {
    EXPECT_FALSE(parse_ws_answer_head(""));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":"text","status":200})"));  // the bench sends numeric ids only
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":1})"));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":1,"status":1000})"));
    EXPECT_FALSE(parse_ws_answer_head(R"({"id":null,"status":400})"));
}

// The frames the bench writes beneath Beast, read by Beast's own server side (which refuses an
// unmasked client frame and checks every length form): payloads at each edge of the 7-bit, 16-bit
// and 64-bit lengths, all in one write, arrive as the same messages in order.
TEST(ws_client_frames, beasts_server_reads_every_length_form_written_in_one_write) {
    namespace asio = boost::asio;
    namespace websocket = boost::beast::websocket;
    using asio::ip::tcp;
    std::vector<std::string> payloads;
    for (std::size_t n : {0, 1, 125, 126, 127, 65535, 65536, 70001}) {
        std::string p(n, '\0');
        for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>('a' + (i * 7 + n) % 26);
        payloads.push_back(std::move(p));
    }
    asio::io_context server_ioc;
    tcp::acceptor acceptor(server_ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = acceptor.local_endpoint().port();
    std::vector<std::string> received;
    std::string server_error;
    // A jthread: if the client throws, its socket closes first and the server's read ends, then this joins.
    std::jthread server([&] {
        try {
            websocket::stream<tcp::socket> ws(acceptor.accept());
            ws.read_message_max(1 << 20);
            ws.accept();
            for (std::size_t i = 0; i < payloads.size(); ++i) {
                boost::beast::flat_buffer b;
                ws.read(b);
                EXPECT_TRUE(ws.got_text());
                received.emplace_back(static_cast<const char*>(b.cdata().data()), b.cdata().size());
            }
        } catch (const std::exception& e) {
            server_error = e.what();
        }
    });
    asio::io_context client_ioc;
    websocket::stream<tcp::socket> client(client_ioc);
    client.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    client.handshake("127.0.0.1", "/v1/ws");
    std::string batch;
    std::uint64_t rng = 12345;
    std::vector<std::string> keys;
    for (const auto& p : payloads) {
        const std::size_t at = batch.size();
        append_client_text_frame(batch, p, rng);
        const std::size_t len_bytes = p.size() < 126 ? 0 : p.size() <= 0xFFFF ? 2 : 8;
        keys.push_back(batch.substr(at + 2 + len_bytes, 4));
    }
    asio::write(client.next_layer(), asio::buffer(batch));
    client.next_layer().shutdown(tcp::socket::shutdown_send);  // a frame read wrong ends in an error, not a wait
    server.join();
    ASSERT_EQ(server_error, "");
    ASSERT_EQ(received.size(), payloads.size());
    for (std::size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(received[i], payloads[i]) << "payload " << i;
    // Each frame has a masking key of its own.
    for (std::size_t i = 1; i < keys.size(); ++i) EXPECT_NE(keys[i], keys[i - 1]);
}

}  // namespace
}  // namespace cairn::bench
