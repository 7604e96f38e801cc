// cairn-bench's HTTP connection: cairn's one client (client/http_connection.hpp) set up for load —
// one keep-alive connection on the executor it was made with, JSON bodies, closed after a
// transport error or a reply without keep-alive so that the next request connects again.
#pragma once

#include "client/http_connection.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace cairn::bench {

using http_result = client::http_reply;

class http_conn : public client::http_connection {
public:
    http_conn(boost::asio::any_io_executor ex, std::string host, std::uint16_t port,
              std::chrono::milliseconds timeout = std::chrono::seconds(10))
        : http_connection(std::move(ex), options(std::move(host), port, timeout)) {}

private:
    static client::connection_options options(std::string host, std::uint16_t port, std::chrono::milliseconds timeout) {
        client::connection_options o;
        o.host = std::move(host);
        o.port = port;
        o.timeout = timeout;
        o.user_agent = "cairn-bench";
        o.content_type = "application/json";
        o.reply_bytes_max = 16 * 1024 * 1024;
        o.auto_close = true;
        return o;
    }
};

}  // namespace cairn::bench
