#include "net/http_server.hpp"

#include "core/assert.hpp"
#include "core/log_task_end.hpp"
#include "net/detail/http_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>

namespace cairn::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

http_server::http_server(asio::io_context& ioc, server_options opts, const router& r, const auth& a,
                         core::registry& metrics)
    : state_(std::make_shared<detail::server_state>(ioc, std::move(opts), r, a, metrics)) {}

http_server::~http_server() { stop(); }

core::result<void> http_server::listen() {
    auto& acceptor = state_->acceptor;
    CAIRN_ASSERT(!acceptor.is_open());  // listen() is called once.
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(state_->opts.address, ec);
    if (ec) return ec;
    const tcp::endpoint endpoint(address, state_->opts.port);
    auto fail = [&](boost::system::error_code e) -> core::result<void> {
        boost::system::error_code ignored;
        acceptor.close(ignored);
        return e;
    };
    acceptor.open(endpoint.protocol(), ec);
    if (ec) return fail(ec);
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (ec) return fail(ec);
    acceptor.bind(endpoint, ec);
    if (ec) return fail(ec);
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail(ec);
    const auto local = acceptor.local_endpoint(ec);
    if (ec) return fail(ec);
    state_->bound_port.store(local.port());
    return core::success();
}

std::uint16_t http_server::port() const { return state_->bound_port.load(); }

void http_server::set_upgrade_handler(upgrade_handler h) { state_->upgrade = std::move(h); }

void http_server::start() {
    CAIRN_ASSERT(state_->acceptor.is_open());  // start() follows a successful listen().
    asio::co_spawn(state_->acceptor_strand, detail::server_state::async_accept_loop(state_),
                   core::log_task_end("http_accept"));
}

void http_server::stop() { state_->stop(); }

std::size_t http_server::connections() const {
    std::lock_guard lock(state_->mu);
    return state_->session_count;
}

}  // namespace cairn::net
