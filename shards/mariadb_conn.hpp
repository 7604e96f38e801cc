// One nonblocking MariaDB connection: libmariadb's _start/_cont calls driven by Asio waits on
// mysql_get_socket(). Any executor; one operation at a time. The connection owns its MYSQL
// handle and socket; it runs every libmariadb call and every wait on its own strand, so the
// awaiting coroutine may resume on any thread of a multi-threaded io_context.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::shards {

struct conn_params {
    // An IP address: a host name is resolved with a blocking getaddrinfo() inside
    // mysql_real_connect_start(). Always TCP, even for "localhost".
    std::string host = "127.0.0.1";
    std::uint16_t port = 3306;
    std::string user, password, database;
    std::chrono::milliseconds connect_timeout{3000};  // the whole connect, handshake included
    std::chrono::milliseconds query_timeout{10000};   // one statement, its result set included
};

// A fully fetched result set, copied out of libmariadb: it does not refer to the connection
// and may outlive it. Values are the text protocol's bytes, binary-safe. The integer columns of a
// prepared statement's result come in binary and are kept as integers too: int64_at/uint64_at
// return them without parsing (the page and apply paths read most of their columns that way).
class rows {
public:
    rows() = default;

    std::size_t size() const noexcept { return rows_; }
    std::size_t columns() const noexcept { return columns_; }

    // The value at (row, col), or nullopt for SQL NULL. Valid as long as this object.
    // Asserts that row < size() and col < columns(). An integer cell (push_int/push_uint) has its
    // decimal text made on the first at() of it: like the building calls, not for two threads at once
    // (a result is read by the coroutine that ran its query).
    std::optional<std::string_view> at(std::size_t row, std::size_t col) const;

    // The value as an integer: the one pushed by push_int/push_uint, or the text parsed as a
    // decimal integer. Asserts that it is not NULL, in range and well-formed: use these only on
    // columns whose SQL type guarantees it.
    std::int64_t int64_at(std::size_t row, std::size_t col) const;
    std::uint64_t uint64_at(std::size_t row, std::size_t col) const;

    // Building (used by mariadb_conn; handy for fakes in tests): call start(columns) once,
    // then push columns() values per row. push_int/push_uint keep the integer (at() gives its
    // decimal text, as the text protocol would have sent it). reserve: room for row_count rows and
    // text_bytes bytes of text values, when they are known beforehand.
    void start(std::size_t columns);
    void reserve(std::size_t row_count, std::size_t text_bytes);
    void push(std::optional<std::string_view> value);
    void push_int(std::int64_t value);
    void push_uint(std::uint64_t value);

private:
    enum class kind : std::uint8_t { text, null, int64, uint64 };
    static constexpr std::size_t no_text = static_cast<std::size_t>(-1);
    struct cell {
        std::size_t offset = 0;  // text: into data_; integer: into int_texts_, or no_text until at() made it
        std::size_t bytes = 0;
        kind k = kind::text;
        std::uint64_t bits = 0;  // the integer of an int64/uint64 cell
    };
    void push_cell(const cell& c);
    std::size_t rows_ = 0;
    std::size_t columns_ = 0;
    mutable std::vector<cell> cells_;
    std::string data_;
    mutable std::deque<std::array<char, 20>> int_texts_;  // a deque: the views at() gave stay valid
};

// A parameter of a prepared statement: a signed or unsigned 64-bit integer, or bytes (sent as
// a string; the view must stay valid until the statement completes).
using sql_param = std::variant<std::int64_t, std::uint64_t, std::string_view>;

// Statements kept prepared per connection; the least recently used is closed past this.
inline constexpr std::size_t prepared_statements_max = 64;

// Maps a MariaDB error number (server ER_* or client CR_*) to cairn's error:
// shard_unavailable (client errors 2000-2999; the server is going away, out of resources,
// read-only, or killed the connection or query), shard_timeout (max_statement_time),
// shard_retry (deadlock, lock wait timeout) or shard_rejected (anything else).
core::errc classify_mysql_error(unsigned mysql_errno) noexcept;

class mariadb_conn {
public:
    mariadb_conn(boost::asio::any_io_executor ex, conn_params p);
    ~mariadb_conn();  // Never blocks: see close().
    mariadb_conn(const mariadb_conn&) = delete;
    mariadb_conn& operator=(const mariadb_conn&) = delete;

    // Connects (closing any previous connection first) within params.connect_timeout.
    // Errors: shard_unavailable (refused, unreachable, authentication or any other failure),
    // shard_timeout (the deadline expired). On error the connection is closed.
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_connect();

    // Runs one statement within params.query_timeout. `sql` must stay valid until the
    // returned awaitable completes. async_execute discards any result set; async_query
    // returns it (no columns and no rows if the statement produced none).
    // Errors: shard_unavailable (not open, connection lost, server going away) and
    // shard_timeout (the deadline expired): the connection is then closed. shard_retry
    // (deadlock; lock wait timeout, which rolls back only the statement) and shard_rejected
    // (any other server error): the connection stays open; the caller sends ROLLBACK.
    [[nodiscard]] boost::asio::awaitable<core::result<void>> async_execute(std::string_view sql);
    [[nodiscard]] boost::asio::awaitable<core::result<rows>> async_query(std::string_view sql);

    // Runs sql (with ? placeholders, one per params entry) as a server-side prepared statement
    // in the binary protocol: prepared on this connection the first time it is seen (and kept:
    // at most prepared_statements_max, least recently used closed first), then only executed,
    // so the server parses its text once per connection. Rows as async_query (values as text).
    // Errors as async_query; a placeholder count that differs from params.size() is
    // shard_rejected. A statement that failed is closed and prepared afresh next time.
    [[nodiscard]] boost::asio::awaitable<core::result<rows>> async_query_prepared(std::string_view sql,
                                                                                 std::span<const sql_param> params);
    // Statements currently prepared on this connection (tests, metrics).
    std::size_t prepared_count() const noexcept;

    // Rows changed (or, with async_query, returned) by the last successful statement.
    std::uint64_t affected_rows() const noexcept;
    // The server's connection id (for KILL and logs), 0 when not open.
    std::uint64_t connection_id() const noexcept;

    bool is_open() const noexcept;

    // For an idle connection only: a nonblocking poll(2) of its socket. An idle MariaDB
    // connection has nothing to read, so readable or hung up means the server closed it
    // (restart, KILL, wait_timeout). Then the connection is closed and false returned.
    bool probe_idle() noexcept;

    // Closes at once: shutdown(2) on the socket, then mysql_close(), which therefore cannot
    // wait on the network. Must not be called while an operation is in flight (the
    // operations close the connection themselves on timeout and loss).
    void close() noexcept;

    // Ends the operation in flight, if any, and every later one, with shard_unavailable (last_error
    // says why): the connection is closed. For a stop that must not wait out query_timeout on a
    // stalled shard. Any thread, also while an operation is in flight; it takes effect on the
    // connection's strand, soon after. Abandoning a statement is safe for cairn: the server rolls
    // back an open transaction, and an apply that committed is applied again (idempotently).
    void abort() noexcept;

    // The error number (server ER_* or client CR_*; 0 for a cairn deadline) and message of
    // the last failure.
    unsigned last_errno() const noexcept;
    const std::string& last_error() const noexcept;

    const conn_params& params() const noexcept;

private:
    class impl;
    boost::asio::awaitable<core::result<rows>> async_run_statement(std::string_view sql, bool keep_rows);
    boost::asio::awaitable<core::result<rows>> async_run_prepared(std::string_view sql, std::span<const sql_param> params);
    std::shared_ptr<impl> impl_;  // shared only with a pending abort()
};

// Whether the connection's last statement failed because a table does not exist (ER_NO_SUCH_TABLE):
// on a fresh database, before the apply worker created a model's tables. Reads then answer what a
// shard with nothing applied holds (no rows, counts 0) rather than an error.
inline bool tables_missing(const mariadb_conn& conn) noexcept { return conn.last_errno() == 1146; }

}  // namespace cairn::shards
