// The test environment shared by the shards layer's tests: which MariaDB to use
// (CAIRN_TEST_SHARDS), skipping or failing without one, and running a test coroutine to
// completion on a few threads. Tests only.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "shards/mariadb_conn.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cairn::shards {

// ------------------------------------------------------------------------ test environment

inline bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

inline std::vector<conn_params> test_shards() {
    std::vector<conn_params> out;
    const char* env = std::getenv("CAIRN_TEST_SHARDS");
    if (env == nullptr) {
        return out;
    }
    std::string_view rest(env);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const auto colon = item.rfind(':');
        if (item.empty() || colon == std::string_view::npos) {
            continue;
        }
        conn_params p;
        p.host = std::string(item.substr(0, colon));
        p.port = static_cast<std::uint16_t>(std::stoul(std::string(item.substr(colon + 1))));
        p.user = "cairn";
        p.password = "cairn";
        p.database = "cairn";
        out.push_back(p);
    }
    return out;
}

#define CAIRN_REQUIRE_SHARD(shard)                                                       \
    const auto shards_ = test_shards();                                                  \
    if (shards_.empty()) {                                                               \
        if (in_ci()) {                                                                   \
            FAIL() << "CAIRN_TEST_SHARDS is not set and CI=true: start scripts/shards";  \
        }                                                                                \
        GTEST_SKIP() << "CAIRN_TEST_SHARDS is not set (host:port,...): no MariaDB to test against"; \
    }                                                                                    \
    const conn_params shard = shards_.front()

#define CO_REQUIRE(cond)                                 \
    if (!(cond)) {                                       \
        ADD_FAILURE() << "requirement failed: " #cond;   \
        co_return;                                       \
    }

inline void log_end(std::exception_ptr e) {
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            ADD_FAILURE() << "a test coroutine threw: " << x.what();
        }
    }
}

inline void run(boost::asio::awaitable<void> task, int threads = 1) {
    boost::asio::io_context io;
    bool done = false;
    boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) {
        log_end(e);
        done = true;
    });
    std::vector<std::thread> extra;
    for (int i = 1; i < threads; ++i) {
        extra.emplace_back([&io] { io.run(); });
    }
    io.run();
    for (auto& t : extra) {
        t.join();
    }
    EXPECT_TRUE(done);
}

// A listener that accepts (the kernel does, from its backlog) but never sends a server's greeting:
// a connect to it hangs in the handshake, as to a stalled shard or a black hole.
class silent_server {
public:
    explicit silent_server(const boost::asio::any_io_executor& ex)
        : acceptor_(ex, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {}
    // Parameters of a connection to it, giving up after connect_timeout.
    conn_params params(std::chrono::milliseconds connect_timeout) const {
        conn_params p;
        p.port = acceptor_.local_endpoint().port();
        p.user = "cairn";
        p.connect_timeout = connect_timeout;
        return p;
    }

private:
    boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace cairn::shards
