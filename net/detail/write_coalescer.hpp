#pragma once
// A stream layer under a WebSocket stream that gathers the frames of a burst of answers into one
// write of the socket (issue 15: "batch its answers into fewer writes"). Beast writes one message
// per async_write, each a send(2) of its own: a pipelining client then wakes up once per answer, and
// on this project's VMs a wake-up costs more than the answer. While the session's writer holds the
// layer (hold), every write below it, the answers' and any control frame Beast sends meanwhile
// (a pong, a keep-alive ping), is appended to one buffer and completes at once; async_flush then
// sends the buffer with one write (and whatever was appended while that write was out, in the
// next). Otherwise writes go straight through, so the handshake, close and TLS see the next layer
// as before. Every byte still goes through Beast, in the order Beast wrote it.
//
// Only for ws_api.cpp (it includes Asio and Beast). Use on one strand; one hold/flush at a time.
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace cairn::net::detail {

template <class Next>
class write_coalescer {
public:
    using next_layer_type = Next;
    using executor_type = typename Next::executor_type;

    explicit write_coalescer(Next& next) : next_(next) {}

    Next& next_layer() { return next_; }
    const Next& next_layer() const { return next_; }
    executor_type get_executor() { return next_.get_executor(); }

    // From now until the next flush ends, writes are gathered in the buffer.
    void hold() { held_ = true; }
    // Bytes gathered and not yet sent.
    std::size_t pending_bytes() const { return pending_.size(); }

    template <class MutableBufferSequence, class ReadHandler>
    auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
        return next_.async_read_some(buffers, std::forward<ReadHandler>(handler));
    }

    template <class ConstBufferSequence, class WriteHandler>
    auto async_write_some(const ConstBufferSequence& buffers, WriteHandler&& handler) {
        if (!held_ && !flushing_) return next_.async_write_some(buffers, std::forward<WriteHandler>(handler));
        return boost::asio::async_initiate<WriteHandler, void(boost::system::error_code, std::size_t)>(
            [this](auto&& h, const ConstBufferSequence& b) {
                const std::size_t n = boost::asio::buffer_size(b);
                const std::size_t at = pending_.size();
                pending_.resize(at + n);
                boost::asio::buffer_copy(boost::asio::buffer(pending_.data() + at, n), b);
                // Completes as an asynchronous operation must: never inside its initiation.
                boost::asio::post(next_.get_executor(),
                                  boost::beast::bind_front_handler(std::move(h), boost::system::error_code{}, n));
            },
            handler, buffers);
    }

    // Sends what was gathered (looping while writes keep arriving during the send), then lets
    // writes through again. Handler: void(error_code).
    template <class FlushHandler>
    auto async_flush(FlushHandler&& handler) {
        return boost::asio::async_initiate<FlushHandler, void(boost::system::error_code)>(
            [this](auto&& h) {
                flushing_ = true;
                held_ = false;
                flush_step(std::move(h), boost::system::error_code{});
            },
            handler);
    }

private:
    template <class Handler>
    void flush_step(Handler&& h, boost::system::error_code ec) {
        if (ec || pending_.empty()) {
            flushing_ = false;
            pending_.clear();
            boost::asio::post(next_.get_executor(), boost::beast::bind_front_handler(std::move(h), ec));
            return;
        }
        sending_.swap(pending_);
        pending_.clear();
        // Continues on the executor of the caller's handler (the session's strand), where this
        // layer's state is touched.
        const auto ex = boost::asio::get_associated_executor(h, next_.get_executor());
        boost::asio::async_write(next_, boost::asio::buffer(sending_),
                                 boost::asio::bind_executor(ex, [this, h = std::move(h)](boost::system::error_code e, std::size_t) mutable {
                                     sending_.clear();
                                     flush_step(std::move(h), e);
                                 }));
    }

    Next& next_;
    std::string pending_;  // gathered, not yet sent
    std::string sending_;  // the bytes of the write that is out
    bool held_ = false;
    bool flushing_ = false;
};

// Beast's close handshake tears down the layer below the WebSocket stream.
template <class Next>
void teardown(boost::beast::role_type role, write_coalescer<Next>& s, boost::system::error_code& ec) {
    using boost::beast::websocket::teardown;
    teardown(role, s.next_layer(), ec);
}

template <class Next, class TeardownHandler>
void async_teardown(boost::beast::role_type role, write_coalescer<Next>& s, TeardownHandler&& handler) {
    using boost::beast::websocket::async_teardown;
    async_teardown(role, s.next_layer(), std::forward<TeardownHandler>(handler));
}

}  // namespace cairn::net::detail
