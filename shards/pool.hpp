// A bounded pool of mariadb_conn for one shard. Thread-safe: any thread may acquire, return
// (by dropping a lease) or inspect it. Connections are made lazily, on the pool's executor, and
// a connection that was closed (failed, timed out) is dropped on return, never reused.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"
#include "shards/mariadb_conn.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace cairn::shards {

namespace detail {
struct pool_state;
}

// The right to use one connection of a pool, exclusively. Movable; on destruction (or
// reset()) the connection goes back to the pool if it is still open, else it is dropped and
// its slot freed. A lease may outlive its pool: the connection is then closed on return.
class lease {
public:
    lease() noexcept;
    lease(lease&& other) noexcept;
    lease& operator=(lease&& other) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease();

    // Assert that the lease holds a connection.
    mariadb_conn& operator*() const noexcept;
    mariadb_conn* operator->() const noexcept;
    explicit operator bool() const noexcept { return conn_ != nullptr; }

    // Returns the connection now.
    void reset() noexcept;

private:
    friend struct detail::pool_state;
    friend class pool;
    lease(std::shared_ptr<detail::pool_state> state, std::unique_ptr<mariadb_conn> conn,
          std::uint64_t generation) noexcept;

    std::shared_ptr<detail::pool_state> state_;  // null: an empty lease holding no slot
    std::unique_ptr<mariadb_conn> conn_;         // null while the slot's connection is being made
    std::uint64_t generation_ = 0;               // close_all() retires older generations
};

class pool {
public:
    // At most size_max connections, idle and leased together. An acquire waits at most
    // wait_timeout for a free slot, then connects within params.connect_timeout.
    pool(boost::asio::any_io_executor ex, conn_params params, std::size_t size_max,
         std::chrono::milliseconds wait_timeout = std::chrono::milliseconds{5000});
    ~pool();  // Closes idle connections; waiting acquires fail with shutting_down.
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;

    // An open connection: an idle one that still looks alive (see mariadb_conn::probe_idle),
    // else a new one if there is room, else the next one returned, FIFO among waiters.
    // Errors: shard_timeout (no slot within wait_timeout, or connecting timed out),
    // shard_unavailable (connecting failed), shutting_down (the pool was destroyed).
    // Cancellation: none; the wait ends within wait_timeout + params.connect_timeout.
    [[nodiscard]] boost::asio::awaitable<core::result<lease>> async_acquire();

    std::size_t idle() const;
    std::size_t in_use() const;   // leased slots, including those still connecting
    std::size_t waiting() const;  // acquires waiting for a slot
    std::size_t size_max() const noexcept;

    // "host:port" of the shard, for logs.
    std::string endpoint() const;
    // Why the last connect failed, as MariaDB said it ("MariaDB error 1045: Access denied for user
    // ..."; a refused port, an unknown database and a wrong password read differently), or empty
    // if the last connect succeeded or none was tried. Any thread.
    std::string last_connect_failure() const;
    // Connections made (and that passed the connection check) since the pool was created. Any thread.
    std::uint64_t connections_made() const noexcept;

    // Run on every new connection before an acquire hands it out (cairnd's shards: the shard
    // identity check, shards/shard_identity.hpp). A non-empty text refuses the connection: it is
    // closed, the acquire fails with shard_unavailable (so that writes wait in the journal, as for
    // an unreachable shard) and the text becomes last_connect_failure(). Set it before the first
    // acquire.
    using connection_check = std::function<boost::asio::awaitable<std::string>(mariadb_conn&)>;
    void set_connection_check(connection_check check);

    // After a failed connect, while one acquire is connecting again, another acquire that would
    // have to connect fails at once with shard_unavailable (last_connect_failure() says why) instead
    // of also waiting up to connect_timeout: at most one connect at a time goes to a shard that is
    // failing, and the rest of the callers learn it at once. Idle connections are still handed out;
    // the first connect that succeeds ends it. Off by default; cairnd's read pools set it, so that a
    // read of a shard that is down (or a black hole) answers 503 at once. Set it before the first acquire.
    void set_fail_fast(bool on);

    // Closes every idle connection now, and every leased one when it is returned (e.g. after
    // a failover). The pool stays usable: later acquires connect afresh.
    void close_all();

    // For a stop: closes the pool for good (as its destructor does: idle connections closed,
    // waiting and later acquires fail with shutting_down) and aborts every leased connection's
    // operation in flight, connects included (mariadb_conn::abort), so that no caller waits out
    // query_timeout on a stalled shard. Any thread; calling it again does nothing more.
    void shutdown();

private:
    std::shared_ptr<detail::pool_state> state_;
};

}  // namespace cairn::shards
