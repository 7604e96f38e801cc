// One transaction on one connection, for the models' apply functions: BEGIN, the body's
// statements, COMMIT; ROLLBACK (best effort) on any error. Header-only: a template.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"
#include "shards/mariadb_conn.hpp"

#include <boost/asio/awaitable.hpp>

namespace cairn::shards {

// If ROLLBACK fails the connection is closed, and the server rolls the transaction back.
inline boost::asio::awaitable<void> async_rollback(mariadb_conn& conn) {
    if (!conn.is_open()) co_return;
    auto r = co_await conn.async_execute("ROLLBACK");
    if (!r) conn.close();
}

// body: a callable returning awaitable<core::result<void>>; it runs between BEGIN and COMMIT.
template <class Body>
boost::asio::awaitable<core::result<void>> async_in_transaction(mariadb_conn& conn, Body body) {
    if (auto r = co_await conn.async_execute("BEGIN"); !r) co_return r;
    auto r = co_await body();
    if (r) r = co_await conn.async_execute("COMMIT");
    if (!r) co_await async_rollback(conn);
    co_return r;
}

}  // namespace cairn::shards
