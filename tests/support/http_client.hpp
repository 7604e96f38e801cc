// The tests' HTTP/1.1 client: cairn's one client (client/http_connection.hpp), blocking, on one
// keep-alive connection to 127.0.0.1:<port>, with every operation bounded by its timeout so that a
// test never hangs. It never closes the connection on its own, so that a test can watch how the
// server closes it (wait_closed). Also writes raw bytes and reads raw replies, for malformed,
// pipelined and slow requests. One thread at a time.
#pragma once

#include "client/http_connection.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace cairn::test {

namespace http = boost::beast::http;

using client::header_list;
using client::http_reply;

class http_client : public client::blocking_http_connection {
public:
    explicit http_client(std::uint16_t port, std::string host = "127.0.0.1",
                         std::chrono::milliseconds timeout = std::chrono::seconds(5))
        : blocking_http_connection(options(port, std::move(host), timeout)) {}

private:
    static client::connection_options options(std::uint16_t port, std::string host, std::chrono::milliseconds timeout) {
        client::connection_options o;
        o.host = std::move(host);
        o.port = port;
        o.timeout = timeout;
        o.user_agent = "cairn-test";
        return o;
    }
};

}  // namespace cairn::test
