// Access to the real MariaDB shards that scripts/shards starts for the tests
// (CAIRN_TEST_SHARDS="host:port,host:port", user cairn/cairn). Blocking helpers for test
// bodies: each runs its own io_context to completion. Not for production code.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"
#include "core/shard_map.hpp"
#include "tests/support/edge_model.hpp"
#include "shards/mariadb_conn.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cairn::test {

struct shard_endpoint {
    std::string host;
    std::uint16_t port = 0;
};

// The shards named by CAIRN_TEST_SHARDS (empty if unset).
std::vector<shard_endpoint> test_shards();
bool running_in_ci();

// In a test body: skips (by hand) or fails (under CI=true) unless n shards are configured.
#define CAIRN_REQUIRE_SHARDS(n)                                                                   \
    do {                                                                                          \
        if (::cairn::test::test_shards().size() < (n)) {                                          \
            if (::cairn::test::running_in_ci()) {                                                 \
                FAIL() << "CI=true but CAIRN_TEST_SHARDS names fewer than " << (n) << " shards";  \
            }                                                                                     \
            GTEST_SKIP() << "needs " << (n) << " shards in CAIRN_TEST_SHARDS (scripts/shards start)"; \
        }                                                                                         \
    } while (false)

shards::conn_params params_for(const shard_endpoint& s, const std::string& database = "cairn");

// Runs an awaitable to completion on a private io_context and returns its value; rethrows.
template <class T>
T run_sync(std::function<boost::asio::awaitable<T>(boost::asio::io_context&)> make) {
    boost::asio::io_context ioc;
    std::optional<T> out;
    std::exception_ptr error;
    boost::asio::co_spawn(
        ioc, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await make(ioc)); },
        [&](std::exception_ptr e) { error = e; });
    ioc.run();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

// Runs one awaitable to completion on an io_context the caller keeps (so that connections
// made on it can be reused across calls); rethrows.
template <class T>
T run_on(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
    std::optional<T> out;
    std::exception_ptr error;
    boost::asio::co_spawn(
        ioc, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(task)); },
        [&](std::exception_ptr e) { error = e; });
    ioc.restart();
    ioc.run();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}

// Executes each statement on a fresh connection to s (database db); stops at the first error.
core::result<void> exec_sql(const shard_endpoint& s, const std::vector<std::string>& statements,
                            const std::string& db = "cairn");
// The rows of one query, each row's columns joined by '\t' (NULL as "NULL").
core::result<std::vector<std::string>> query_sql(const shard_endpoint& s, const std::string& sql,
                                                 const std::string& db = "cairn");

// Takes an exclusive lock on database db of the test shards for the rest of this process (a file lock
// in $TMPDIR named after the first shard's port and db; taken once per process, released when it
// exits). ctest -j runs each suite's tests one at a time (tests/CMakeLists.txt); this makes two tests
// of different suites that name the same database wait for each other too. Blocks while another
// process holds it, after saying so on stderr.
void lock_database(const std::string& db);
// Creates (or empties) database db on every test shard, so that a test owns its tables (locks it
// first: lock_database).
void fresh_database(const std::string& db);
// fresh_database, then the edge tables (shards::async_create_edge_schema) on every test shard.
void fresh_edge_database(const std::string& db);

// The edge rows and counts the shards hold (conns[s] is shard s, on ioc), as the model's `rows` and
// `counts`; an error text when a read fails or a row is not on the shard of its node.
std::variant<edge_model, std::string> read_edge_model(boost::asio::io_context& ioc,
                                                      const std::vector<std::unique_ptr<shards::mariadb_conn>>& conns,
                                                      const core::shard_map& map);

}  // namespace cairn::test
