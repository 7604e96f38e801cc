// The layer under the server's TLS stream (tls_stream = ssl_stream<tls_transport>): the
// connection's beast::tcp_stream (its socket and timeouts), with one difference.
//
// Asio's SSL stream completes an operation that needs no I/O (an empty write; a write after the
// TLS state failed or was shut down) by starting a zero-byte read on the layer below, so that its
// handler runs as if posted (boost/asio/ssl/detail/io.hpp). It does so whatever read another of
// its operations has outstanding there: a WebSocket connection's reader waits for a frame while
// its writer writes. Beast's tcp_stream allows one read at a time (a debug build aborts on an
// assertion; the client_python_tls failure of 2026-12-05). This layer completes zero-byte reads
// itself, posted to the stream's executor, and passes every other operation to the tcp_stream.
//
// Include only where a TLS stream is built or used (it brings Beast and Asio).
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>

namespace cairn::net {

class tls_transport {
public:
    using next_layer_type = boost::beast::tcp_stream;
    using lowest_layer_type = next_layer_type::socket_type;  // what Asio's SSL stream asks for
    using executor_type = next_layer_type::executor_type;

    explicit tls_transport(boost::asio::ip::tcp::socket socket) : next_(std::move(socket)) {}

    next_layer_type& next_layer() noexcept { return next_; }
    const next_layer_type& next_layer() const noexcept { return next_; }
    lowest_layer_type& lowest_layer() noexcept { return next_.socket(); }
    const lowest_layer_type& lowest_layer() const noexcept { return next_.socket(); }
    executor_type get_executor() noexcept { return next_.get_executor(); }

    template <class MutableBufferSequence, class ReadHandler>
    auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& token) {
        return boost::asio::async_initiate<ReadHandler, void(boost::system::error_code, std::size_t)>(
            [this](auto&& h, const MutableBufferSequence& b) {
                if (boost::asio::buffer_size(b) != 0) {
                    next_.async_read_some(b, std::move(h));
                    return;
                }
                boost::asio::post(next_.get_executor(),
                                  boost::beast::bind_front_handler(std::move(h), boost::system::error_code{}, std::size_t{0}));
            },
            token, buffers);
    }

    template <class ConstBufferSequence, class WriteHandler>
    auto async_write_some(const ConstBufferSequence& buffers, WriteHandler&& token) {
        return next_.async_write_some(buffers, std::forward<WriteHandler>(token));
    }

private:
    next_layer_type next_;
};

}  // namespace cairn::net
