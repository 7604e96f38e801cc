#include "shards/mariadb_conn.hpp"

#include "core/assert.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <type_traits>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>
#include <variant>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

// The coroutine stack libmariadb runs each nonblocking call on. The default (about 60 KiB) is
// too small once sanitizers pad every frame.
constexpr std::size_t nonblock_stack_bytes = 256 * 1024;

// libmariadb's own timeouts are a second safety net behind cairn's Asio deadlines, so they are
// set a little longer: cairn's deadline fires first and reports shard_timeout.
unsigned safety_net_seconds(std::chrono::milliseconds deadline) {
    const auto s = std::chrono::ceil<std::chrono::seconds>(deadline).count() + 2;
    return static_cast<unsigned>(s);
}

void library_init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        // mysql_library_init is itself guarded by pthread_once in Connector/C 3.x; calling it
        // before any mysql_init keeps that true for every libmariadb build.
        const int rc = mysql_library_init(0, nullptr, nullptr);
        CAIRN_ASSERT(rc == 0);
    });
}

// Errors after which libmariadb's connection is gone even though the statement itself was at
// fault: the server drops a connection that sent a packet over max_allowed_packet.
bool error_kills_connection(unsigned err) {
    return err == ER_NET_PACKET_TOO_LARGE || err == CR_NET_PACKET_TOO_LARGE;
}

std::int64_t parse_int64(std::string_view s) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    CAIRN_ASSERT(ec == std::errc{});
    CAIRN_ASSERT(end == s.data() + s.size());
    return v;
}

std::uint64_t parse_uint64(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    CAIRN_ASSERT(ec == std::errc{});
    CAIRN_ASSERT(end == s.data() + s.size());
    return v;
}

// Copies a stored result set out of libmariadb. mysql_fetch_row on a stored result only walks
// memory, so this never blocks.
rows copy_rows(MYSQL_RES* res) {
    rows out;
    const unsigned n = mysql_num_fields(res);
    out.start(n);
    if (n > 0) out.reserve(static_cast<std::size_t>(mysql_num_rows(res)), 0);
    while (MYSQL_ROW row = mysql_fetch_row(res)) {
        const unsigned long* lengths = mysql_fetch_lengths(res);
        CAIRN_ASSERT(lengths != nullptr);
        for (unsigned i = 0; i < n; ++i) {
            if (row[i] == nullptr) {
                out.push(std::nullopt);
            } else {
                out.push(std::string_view(row[i], lengths[i]));
            }
        }
    }
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------- rows

std::optional<std::string_view> rows::at(std::size_t row, std::size_t col) const {
    CAIRN_ASSERT(row < rows_);
    CAIRN_ASSERT(col < columns_);
    cell& c = cells_[row * columns_ + col];
    switch (c.k) {
        case kind::null: return std::nullopt;
        case kind::text: return std::string_view(data_).substr(c.offset, c.bytes);
        case kind::int64:
        case kind::uint64: break;
    }
    if (c.offset == no_text) {
        auto& buf = int_texts_.emplace_back();
        const auto [end, ec] = c.k == kind::int64 ? std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<std::int64_t>(c.bits))
                                                  : std::to_chars(buf.data(), buf.data() + buf.size(), c.bits);
        CAIRN_ASSERT(ec == std::errc{});
        c.offset = int_texts_.size() - 1;
        c.bytes = static_cast<std::size_t>(end - buf.data());
    }
    return std::string_view(int_texts_[c.offset].data(), c.bytes);
}

std::int64_t rows::int64_at(std::size_t row, std::size_t col) const {
    CAIRN_ASSERT(row < rows_);
    CAIRN_ASSERT(col < columns_);
    const cell& c = cells_[row * columns_ + col];
    switch (c.k) {
        case kind::int64: return static_cast<std::int64_t>(c.bits);
        case kind::uint64:
            CAIRN_ASSERT(c.bits <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
            return static_cast<std::int64_t>(c.bits);
        case kind::null: CAIRN_ASSERT(c.k != kind::null); return 0;
        case kind::text: break;
    }
    return parse_int64(std::string_view(data_).substr(c.offset, c.bytes));
}

std::uint64_t rows::uint64_at(std::size_t row, std::size_t col) const {
    CAIRN_ASSERT(row < rows_);
    CAIRN_ASSERT(col < columns_);
    const cell& c = cells_[row * columns_ + col];
    switch (c.k) {
        case kind::uint64: return c.bits;
        case kind::int64:
            CAIRN_ASSERT(static_cast<std::int64_t>(c.bits) >= 0);
            return c.bits;
        case kind::null: CAIRN_ASSERT(c.k != kind::null); return 0;
        case kind::text: break;
    }
    return parse_uint64(std::string_view(data_).substr(c.offset, c.bytes));
}

void rows::start(std::size_t columns) {
    CAIRN_ASSERT(cells_.empty());
    columns_ = columns;
    rows_ = 0;
}

void rows::reserve(std::size_t row_count, std::size_t text_bytes) {
    cells_.reserve(cells_.size() + row_count * columns_);
    data_.reserve(data_.size() + text_bytes);
}

void rows::push_cell(const cell& c) {
    CAIRN_ASSERT(columns_ > 0);
    cells_.push_back(c);
    if (cells_.size() % columns_ == 0) {
        ++rows_;
    }
}

void rows::push(std::optional<std::string_view> value) {
    cell c;
    if (value) {
        c.offset = data_.size();
        c.bytes = value->size();
        data_.append(*value);
    } else {
        c.k = kind::null;
    }
    push_cell(c);
}

void rows::push_int(std::int64_t value) {
    push_cell(cell{no_text, 0, kind::int64, static_cast<std::uint64_t>(value)});
}

void rows::push_uint(std::uint64_t value) { push_cell(cell{no_text, 0, kind::uint64, value}); }

// ------------------------------------------------------------------------- classification

core::errc classify_mysql_error(unsigned err) noexcept {
    switch (err) {
        case ER_LOCK_DEADLOCK:
        case ER_LOCK_WAIT_TIMEOUT:
        case ER_TABLE_DEF_CHANGED:  // a consistent snapshot met a table created after it began: read again
            return core::errc::shard_retry;

        case ER_STATEMENT_TIMEOUT:  // max_statement_time: the server's own deadline
            return core::errc::shard_timeout;

        case ER_NET_PACKET_TOO_LARGE:  // this statement is too big; the server drops the connection
        case CR_NET_PACKET_TOO_LARGE:
            return core::errc::shard_rejected;

        case ER_DISK_FULL:
        case ER_OUTOFMEMORY:
        case ER_OUT_OF_SORTMEMORY:
        case ER_CON_COUNT_ERROR:
        case ER_OUT_OF_RESOURCES:
        case ER_SERVER_SHUTDOWN:
        case ER_NORMAL_SHUTDOWN:
        case ER_SHUTDOWN_COMPLETE:
        case ER_HOST_IS_BLOCKED:
        case ER_CANT_CREATE_THREAD:
        case ER_ABORTING_CONNECTION:
        case ER_NET_READ_ERROR_FROM_PIPE:
        case ER_NET_FCNTL_ERROR:
        case ER_NET_PACKETS_OUT_OF_ORDER:
        case ER_NET_UNCOMPRESS_ERROR:
        case ER_NET_READ_ERROR:
        case ER_NET_READ_INTERRUPTED:
        case ER_NET_ERROR_ON_WRITE:
        case ER_NET_WRITE_INTERRUPTED:
        case ER_NEW_ABORTING_CONNECTION:
        case ER_TOO_MANY_USER_CONNECTIONS:
        case ER_LOCK_TABLE_FULL:
        case ER_USER_LIMIT_REACHED:
        case ER_OPTION_PREVENTS_STATEMENT:  // --read-only: a replica, not a writable shard
        case ER_QUERY_INTERRUPTED:          // KILL QUERY or shutdown interrupted it
        case ER_READ_ONLY_MODE:
        case ER_CONNECTION_KILLED:
            return core::errc::shard_unavailable;

        default:
            break;
    }
    if (err >= CR_MIN_ERROR && err <= CR_MAX_ERROR) {  // every client error: the connection is gone
        return core::errc::shard_unavailable;
    }
    return core::errc::shard_rejected;
}

// --------------------------------------------------------------------------- mariadb_conn

// Every libmariadb call and every socket wait runs on strand_, inside a step co_spawn'ed there
// by the public async_ functions. libmariadb 3.x keeps no thread-local state (mysql_thread_init
// is a no-op), so a _cont may run on another thread than its _start as long as the calls never
// overlap, which the strand guarantees.
class mariadb_conn::impl {
public:
    impl(asio::any_io_executor ex, conn_params p)
        : strand_(asio::make_strand(std::move(ex))),
          params_(std::move(p)),
          socket_(strand_),
          timer_(strand_),
          wait_(std::make_shared<wait_state>()) {
        library_init_once();
    }

    ~impl() { close(); }

    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    asio::strand<asio::any_io_executor> strand_;
    conn_params params_;
    MYSQL* mysql_ = nullptr;
    bool open_ = false;
    std::uint64_t affected_rows_ = 0;
    std::uint64_t connection_id_ = 0;
    unsigned last_errno_ = 0;
    std::string last_error_;

    asio::awaitable<core::result<void>> async_connect_step();
    asio::awaitable<core::result<rows>> async_statement_step(std::string_view sql, bool keep_rows);
    asio::awaitable<core::result<rows>> async_prepared_step(std::string_view sql, std::span<const sql_param> params);

    // Prepared statements of this connection, most recently used first.
    struct prepared {
        std::string sql;
        MYSQL_STMT* stmt = nullptr;
        std::uint64_t binding = 0;  // == binding_ while its parameters are bound to the arrays below (0: unbound)
    };
    std::list<prepared> prepared_;
    // The parameters of the statement being executed, as libmariadb reads them. libmariadb copies
    // the MYSQL_BIND array when a statement is bound and reads each value from its buffer when it
    // executes, so a statement executed again with parameters of the same shape (each the same
    // type, each string the same length) needs only its new values copied into place: the apply
    // path runs one statement of ten thousand parameters several times in a row, and binding them
    // afresh each time (the array filled, then copied and checked by libmariadb) was a tenth of
    // cairnd's CPU in a drain. The arrays are kept between statements, so that arrays that size are
    // not mapped, faulted in and unmapped every time.
    std::vector<MYSQL_BIND> param_binds_;
    std::vector<unsigned long> param_lengths_;
    std::vector<std::uint64_t> param_ints_;   // the integer parameters' values, by parameter
    std::string param_text_;                  // the string parameters' bytes, in parameter order
    std::vector<std::uint8_t> param_kinds_;   // each parameter's sql_param alternative
    std::uint64_t binding_ = 1;               // the current layout; a statement bound to it holds its number (never 0)
    // Puts `params` where `p`'s statement reads them, binding it first unless it is the statement
    // bound last and `params` have the shape they had then. false: libmariadb refused the binding.
    [[nodiscard]] bool bind_params(prepared& p, std::span<const sql_param> params);
    std::unordered_map<std::string_view, std::list<prepared>::iterator> prepared_by_sql_;  // keys view prepared_

    bool probe_idle() noexcept;
    void close() noexcept;
    // On strand_: ends a pending wait and refuses every later operation.
    void abort_on_strand() noexcept;
    bool aborted_ = false;

private:
    // Shared with the deadline handler, which may run after the wait it belonged to.
    struct wait_state {
        std::uint64_t generation = 0;
        bool live = false;   // a socket wait of this generation is pending
        bool fired = false;  // the timer of this generation expired
    };

    // What one wait ended with: the MYSQL_WAIT_* events to pass to _cont, or an error.
    [[nodiscard]] asio::awaitable<core::result<int>> async_wait_events(int status, clock_type::time_point deadline,
                                                                       bool rewrap);

    // Runs start(), then cont(events) after each wait until libmariadb reports done.
    // Errors: shard_timeout (the deadline expired; the connection is closed) or
    // shard_unavailable (the socket could not be waited on; the connection is closed).
    template <class Start, class Cont>
    asio::awaitable<core::result<void>> async_drive(clock_type::time_point deadline, bool connecting, Start start,
                                                    Cont cont);

    [[nodiscard]] core::result<void> wrap_socket();
    void unwrap_socket() noexcept;
    core::errc fail_from_mysql();
    core::errc fail_from_stmt(MYSQL_STMT* stmt);
    // Closes one prepared statement (COM_STMT_CLOSE, nonblocking) and forgets it.
    asio::awaitable<void> async_drop_prepared(std::list<prepared>::iterator it, clock_type::time_point deadline);
    // The statement in use (the most recently used) failed: report the failure, and close it.
    asio::awaitable<core::errc> async_stmt_failed(clock_type::time_point deadline);
    // Frees every prepared statement's memory after mysql_close (no network: the library has
    // already detached them from the connection).
    void forget_prepared() noexcept;
    core::errc fail(core::errc e, unsigned err, std::string message);

    // Waits on a dup(2) of libmariadb's socket that this object owns: the library closes its own
    // fd when a connect fails (and frees the structure mysql_get_socket would read it from), and
    // that number may belong to another connection of the process a moment later. Readiness is a
    // property of the socket, not of the number, so waiting on the dup is the same wait; and
    // epoll_ctl, shutdown(2) and close(2) here only ever touch a number this object holds.
    asio::posix::stream_descriptor socket_;
    asio::steady_timer timer_;
    std::shared_ptr<wait_state> wait_;
};

core::result<void> mariadb_conn::impl::wrap_socket() {
    unwrap_socket();
    // Only called while the library's socket is live: during a suspended connect (the library
    // has just handed back a wait on it) or on an open connection.
    const my_socket fd = mysql_get_socket(mysql_);
    if (fd == MARIADB_INVALID_SOCKET) {
        return core::errc::shard_unavailable;
    }
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        return boost::system::error_code(errno, boost::system::system_category());
    }
    boost::system::error_code ec;
    socket_.assign(own, ec);
    if (ec) {
        ::close(own);
        return ec;
    }
    return core::success();
}

void mariadb_conn::impl::unwrap_socket() noexcept {
    boost::system::error_code ignored;
    socket_.close(ignored);  // our dup only; the library's socket lives on until mysql_close
}

asio::awaitable<core::result<int>> mariadb_conn::impl::async_wait_events(int status, clock_type::time_point deadline,
                                                                         bool rewrap) {
    namespace pd = asio::posix;
    if (aborted_) {
        co_return core::errc::shutting_down;
    }
    const auto now = clock_type::now();
    if (now >= deadline) {
        co_return core::errc::shard_timeout;
    }
    // While connecting, libmariadb may close a socket and open another (one per address it
    // tries), possibly under the same number: a stale epoll registration would never fire, so
    // the fd is wrapped afresh before every wait of a connect.
    if (rewrap || !socket_.is_open()) {
        if (auto r = wrap_socket(); !r) {
            co_return r.error();
        }
    }

    auto wake_at = deadline;
    bool library_timeout = false;
    if ((status & MYSQL_WAIT_TIMEOUT) != 0) {
        const auto t = now + std::chrono::milliseconds(mysql_get_timeout_value_ms(mysql_));
        if (t < deadline) {
            wake_at = t;
            library_timeout = true;
        }
    }

    boost::system::error_code ec;
    timer_.expires_at(wake_at);
    const int io_events = status & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE | MYSQL_WAIT_EXCEPT);
    if (io_events == 0) {
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            // Only close() and abort() cancel the timer.
            co_return aborted_ ? core::error_code(core::errc::shutting_down) : core::error_code(core::errc::shard_unavailable);
        }
        if (library_timeout) {
            co_return MYSQL_WAIT_TIMEOUT;
        }
        co_return core::errc::shard_timeout;
    }

    wait_state& w = *wait_;
    const std::uint64_t generation = ++w.generation;
    w.live = true;
    w.fired = false;
    timer_.async_wait([state = wait_, generation, this](const boost::system::error_code& timer_ec) {
        // Runs on strand_. `this` is touched only while the wait it belongs to is pending,
        // which the coroutine that owns `this` is suspended in.
        if (timer_ec || state->generation != generation || !state->live) {
            return;
        }
        state->fired = true;
        boost::system::error_code ignored;
        socket_.cancel(ignored);
    });

    // libmariadb asks for one direction at a time; a write wait also wakes on errors.
    pd::descriptor_base::wait_type type = pd::descriptor_base::wait_read;
    int occurred = MYSQL_WAIT_READ;
    if ((status & MYSQL_WAIT_WRITE) != 0) {
        type = pd::descriptor_base::wait_write;
        occurred = MYSQL_WAIT_WRITE;
    } else if ((status & MYSQL_WAIT_READ) == 0) {
        type = pd::descriptor_base::wait_error;
        occurred = MYSQL_WAIT_EXCEPT;
    }
    co_await socket_.async_wait(type, asio::redirect_error(asio::use_awaitable, ec));
    w.live = false;
    const bool fired = w.fired;
    timer_.cancel();

    if (!ec) {
        co_return occurred;
    }
    if (aborted_) {
        co_return core::errc::shutting_down;
    }
    if (fired && library_timeout) {
        co_return MYSQL_WAIT_TIMEOUT;
    }
    if (fired) {
        co_return core::errc::shard_timeout;
    }
    co_return ec;
}

template <class Start, class Cont>
asio::awaitable<core::result<void>> mariadb_conn::impl::async_drive(clock_type::time_point deadline, bool connecting,
                                                                    Start start, Cont cont) {
    int status = start();
    while (status != 0) {
        auto events = co_await async_wait_events(status, deadline, connecting);
        if (!events) {
            if (events.error() == core::errc::shard_timeout) {
                const auto ms = connecting ? params_.connect_timeout : params_.query_timeout;
                co_return fail(core::errc::shard_timeout, 0,
                               "cairn deadline of " + std::to_string(ms.count()) + " ms expired");
            }
            if (events.error() == core::errc::shutting_down) {
                co_return fail(core::errc::shard_unavailable, 0, "abandoned: cairnd is stopping");
            }
            co_return fail(core::errc::shard_unavailable, 0, "waiting on the socket failed: " + events.error().message());
        }
        status = cont(events.value());
    }
    co_return core::success();
}

core::errc mariadb_conn::impl::fail(core::errc e, unsigned err, std::string message) {
    last_errno_ = err;
    last_error_ = std::move(message);
    if (e == core::errc::shard_unavailable || e == core::errc::shard_timeout || error_kills_connection(err)) {
        close();
    }
    return e;
}

core::errc mariadb_conn::impl::fail_from_mysql() {
    const unsigned err = mysql_errno(mysql_);
    CAIRN_ASSERT(err != 0);  // Callers only get here after libmariadb reported a failure.
    return fail(classify_mysql_error(err), err, mysql_error(mysql_));
}

asio::awaitable<core::result<void>> mariadb_conn::impl::async_connect_step() {
    close();
    if (aborted_) {
        co_return fail(core::errc::shard_unavailable, 0, "abandoned: cairnd is stopping");
    }
    const auto deadline = clock_type::now() + params_.connect_timeout;
    mysql_ = mysql_init(nullptr);
    if (mysql_ == nullptr) {
        co_return fail(core::errc::shard_unavailable, CR_OUT_OF_MEMORY, "mysql_init failed");
    }
    const std::size_t stack = nonblock_stack_bytes;
    const unsigned connect_s = safety_net_seconds(params_.connect_timeout);
    const unsigned io_s = safety_net_seconds(params_.query_timeout);
    const my_bool no_reconnect = 0;
    const unsigned int no_local_infile = 0;  // this option reads an unsigned int, not a my_bool
    const unsigned int protocol = MYSQL_PROTOCOL_TCP;
    if (mysql_options(mysql_, MYSQL_OPT_NONBLOCK, &stack) != 0 ||
        mysql_options(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s) != 0 ||
        mysql_options(mysql_, MYSQL_OPT_READ_TIMEOUT, &io_s) != 0 ||
        mysql_options(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &io_s) != 0 ||
        mysql_options(mysql_, MYSQL_SET_CHARSET_NAME, "utf8mb4") != 0 ||
        mysql_options(mysql_, MYSQL_OPT_RECONNECT, &no_reconnect) != 0 ||
        mysql_options(mysql_, MYSQL_OPT_LOCAL_INFILE, &no_local_infile) != 0 ||
        mysql_options(mysql_, MYSQL_OPT_PROTOCOL, &protocol) != 0) {
        co_return fail(core::errc::shard_unavailable, mysql_errno(mysql_), "mysql_options failed");
    }

    MYSQL* ret = nullptr;
    const char* db = params_.database.empty() ? nullptr : params_.database.c_str();
    auto r = co_await async_drive(
        deadline, true,
        [&] {
            return mysql_real_connect_start(&ret, mysql_, params_.host.c_str(), params_.user.c_str(),
                                            params_.password.c_str(), db, params_.port, nullptr, 0);
        },
        [&](int events) { return mysql_real_connect_cont(&ret, mysql_, events); });
    if (!r) {
        co_return r.error();
    }
    if (ret == nullptr) {
        const unsigned err = mysql_errno(mysql_);
        co_return fail(core::errc::shard_unavailable, err, mysql_error(mysql_));
    }
    // The connected socket is final now; wrap it once for the statements to come.
    if (auto w = wrap_socket(); !w) {
        co_return fail(core::errc::shard_unavailable, 0, "cannot wait on the socket: " + w.error().message());
    }
    open_ = true;
    connection_id_ = mysql_thread_id(mysql_);
    co_return core::success();
}

asio::awaitable<core::result<rows>> mariadb_conn::impl::async_statement_step(std::string_view sql, bool keep_rows) {
    if (aborted_) {
        co_return fail(core::errc::shard_unavailable, 0, "abandoned: cairnd is stopping");
    }
    if (!open_) {
        co_return fail(core::errc::shard_unavailable, CR_SERVER_GONE_ERROR, "not connected");
    }
    const auto deadline = clock_type::now() + params_.query_timeout;

    int err = 0;
    auto r = co_await async_drive(
        deadline, false, [&] { return mysql_real_query_start(&err, mysql_, sql.data(), sql.size()); },
        [&](int events) { return mysql_real_query_cont(&err, mysql_, events); });
    if (!r) {
        co_return r.error();
    }
    if (err != 0) {
        co_return fail_from_mysql();
    }

    rows out;
    bool first = true;
    for (;;) {
        if (mysql_field_count(mysql_) > 0) {
            MYSQL_RES* res = nullptr;
            auto s = co_await async_drive(
                deadline, false, [&] { return mysql_store_result_start(&res, mysql_); },
                [&](int events) { return mysql_store_result_cont(&res, mysql_, events); });
            if (!s) {
                co_return s.error();
            }
            if (res == nullptr) {
                co_return fail_from_mysql();
            }
            if (first && keep_rows) {
                out = copy_rows(res);
            }
            // A stored result is freed without network I/O (only a mysql_use_result one would
            // read the rest of the rows), so the blocking call is safe here.
            mysql_free_result(res);
        }
        if (first) {
            affected_rows_ = mysql_affected_rows(mysql_);
            first = false;
        }
        // A CALL returns several results (CLIENT_MULTI_RESULTS is on by default): drain them,
        // or the next statement would fail with "commands out of sync".
        if (!mysql_more_results(mysql_)) {
            break;
        }
        int next = 0;
        auto n = co_await async_drive(
            deadline, false, [&] { return mysql_next_result_start(&next, mysql_); },
            [&](int events) { return mysql_next_result_cont(&next, mysql_, events); });
        if (!n) {
            co_return n.error();
        }
        if (next > 0) {
            co_return fail_from_mysql();
        }
        if (next < 0) {
            break;
        }
    }
    co_return out;
}

core::errc mariadb_conn::impl::fail_from_stmt(MYSQL_STMT* stmt) {
    const unsigned err = mysql_stmt_errno(stmt);
    if (err == 0) return fail(core::errc::shard_rejected, 0, "prepared statement failed without an error number");
    return fail(classify_mysql_error(err), err, mysql_stmt_error(stmt));
}

asio::awaitable<void> mariadb_conn::impl::async_drop_prepared(std::list<prepared>::iterator it,
                                                              clock_type::time_point deadline) {
    MYSQL_STMT* stmt = it->stmt;
    prepared_by_sql_.erase(it->sql);
    prepared_.erase(it);
    if (!open_) {
        mysql_stmt_close(stmt);  // detached by mysql_close: frees memory only
        co_return;
    }
    my_bool ret = 0;
    auto r = co_await async_drive(
        deadline, false, [&] { return mysql_stmt_close_start(&ret, stmt); },
        [&](int events) { return mysql_stmt_close_cont(&ret, stmt, events); });
    // A close abandoned by a failed wait (the connection is closed then, which detaches the
    // statement) never freed it: free it now, without network.
    if (!r) mysql_stmt_close(stmt);
}

asio::awaitable<core::errc> mariadb_conn::impl::async_stmt_failed(clock_type::time_point deadline) {
    const auto e = fail_from_stmt(prepared_.front().stmt);
    // A lost connection has already forgotten every statement (close() does); else only this
    // one is closed, and a later call prepares it afresh.
    if (open_) co_await async_drop_prepared(prepared_.begin(), deadline);
    co_return e;
}

void mariadb_conn::impl::forget_prepared() noexcept {
    for (auto& p : prepared_) mysql_stmt_close(p.stmt);
    prepared_by_sql_.clear();
    prepared_.clear();
}

bool mariadb_conn::impl::bind_params(prepared& p, std::span<const sql_param> params) {
    constexpr std::uint8_t text_kind = 2;
    static_assert(std::is_same_v<std::variant_alternative_t<text_kind, sql_param>, std::string_view>);
    const std::size_t n = params.size();
    // Copies parameter i's value to where the layout puts it; strings go back to back in
    // parameter order, `text` at the next one's place.
    char* text = param_text_.data();
    const auto put = [&](std::size_t i) {
        if (const auto* v = std::get_if<std::string_view>(&params[i])) {
            if (!v->empty()) std::memcpy(text, v->data(), v->size());
            text += v->size();
        } else if (const auto* u = std::get_if<std::uint64_t>(&params[i])) {
            param_ints_[i] = *u;
        } else {
            param_ints_[i] = static_cast<std::uint64_t>(std::get<std::int64_t>(params[i]));
        }
    };
    // One pass: while each parameter has the type (and a string the length) of the current layout,
    // its value goes straight into place.
    bool same = p.binding == binding_ && param_kinds_.size() == n;
    for (std::size_t i = 0; same && i < n; ++i) {
        same = params[i].index() == param_kinds_[i] &&
               (param_kinds_[i] != text_kind || std::get<text_kind>(params[i]).size() == param_lengths_[i]);
        if (same) put(i);
    }
    if (same || n == 0) {
        CAIRN_ASSERT(n == 0 || text == param_text_.data() + param_text_.size());
        return true;
    }
    // A new layout: no statement is bound to the arrays any more (binding_ moves on), and every
    // buffer pointer below is taken after the arrays reached their size. New entries of
    // param_binds_ are zeroed; every field set here is set for every parameter, so entries reused
    // from an earlier statement need no zeroing (a megabyte per statement on the apply path).
    ++binding_;
    std::size_t text_bytes = 0;
    param_kinds_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        param_kinds_[i] = static_cast<std::uint8_t>(params[i].index());
        if (param_kinds_[i] == text_kind) text_bytes += std::get<text_kind>(params[i]).size();
    }
    if (param_binds_.size() < n) {
        param_binds_.resize(n, MYSQL_BIND{});
        param_lengths_.resize(n, 0);
        param_ints_.resize(n, 0);
    }
    param_text_.resize(text_bytes);
    text = param_text_.data();
    for (std::size_t i = 0; i < n; ++i) {
        MYSQL_BIND& b = param_binds_[i];
        if (param_kinds_[i] == text_kind) {
            b.buffer_type = MYSQL_TYPE_STRING;
            b.buffer = text;
            param_lengths_[i] = static_cast<unsigned long>(std::get<text_kind>(params[i]).size());
            b.buffer_length = param_lengths_[i];
            b.length = &param_lengths_[i];
            b.is_unsigned = 0;
        } else {
            b.buffer_type = MYSQL_TYPE_LONGLONG;
            b.buffer = &param_ints_[i];
            b.buffer_length = 0;
            b.length = nullptr;
            b.is_unsigned = std::holds_alternative<std::uint64_t>(params[i]) ? 1 : 0;
        }
        put(i);
    }
    CAIRN_ASSERT(text == param_text_.data() + param_text_.size());
    if (mysql_stmt_bind_param(p.stmt, param_binds_.data()) != 0) return false;
    p.binding = binding_;
    return true;
}

asio::awaitable<core::result<rows>> mariadb_conn::impl::async_prepared_step(std::string_view sql,
                                                                            std::span<const sql_param> params) {
    if (aborted_) {
        co_return fail(core::errc::shard_unavailable, 0, "abandoned: cairnd is stopping");
    }
    if (!open_) {
        co_return fail(core::errc::shard_unavailable, CR_SERVER_GONE_ERROR, "not connected");
    }
    const auto deadline = clock_type::now() + params_.query_timeout;

    // Find or prepare.
    auto found = prepared_by_sql_.find(sql);
    if (found != prepared_by_sql_.end()) {
        prepared_.splice(prepared_.begin(), prepared_, found->second);
    } else {
        if (prepared_.size() >= prepared_statements_max) {
            co_await async_drop_prepared(std::prev(prepared_.end()), deadline);
            if (!open_) co_return core::errc::shard_unavailable;
        }
        MYSQL_STMT* stmt = mysql_stmt_init(mysql_);
        if (stmt == nullptr) co_return fail(core::errc::shard_unavailable, CR_OUT_OF_MEMORY, "mysql_stmt_init failed");
        prepared_.push_front({std::string(sql), stmt});
        prepared_by_sql_.emplace(prepared_.front().sql, prepared_.begin());
        const my_bool update_max_length = 1;
        mysql_stmt_attr_set(stmt, STMT_ATTR_UPDATE_MAX_LENGTH, &update_max_length);
        int err = 0;
        auto r = co_await async_drive(
            deadline, false, [&] { return mysql_stmt_prepare_start(&err, stmt, sql.data(), sql.size()); },
            [&](int events) { return mysql_stmt_prepare_cont(&err, stmt, events); });
        if (!r) co_return r.error();
        if (err != 0) co_return co_await async_stmt_failed(deadline);
    }
    MYSQL_STMT* stmt = prepared_.front().stmt;
    if (mysql_stmt_param_count(stmt) != params.size()) {
        co_return fail(core::errc::shard_rejected, 0,
                       "prepared statement has " + std::to_string(mysql_stmt_param_count(stmt)) +
                           " placeholders, given " + std::to_string(params.size()) + " parameters");
    }
    if (!bind_params(prepared_.front(), params)) co_return co_await async_stmt_failed(deadline);

    int err = 0;
    auto r = co_await async_drive(
        deadline, false, [&] { return mysql_stmt_execute_start(&err, stmt); },
        [&](int events) { return mysql_stmt_execute_cont(&err, stmt, events); });
    if (!r) co_return r.error();
    if (err != 0) co_return co_await async_stmt_failed(deadline);

    rows out;
    const unsigned columns = mysql_stmt_field_count(stmt);
    if (columns > 0) {
        auto s = co_await async_drive(
            deadline, false, [&] { return mysql_stmt_store_result_start(&err, stmt); },
            [&](int events) { return mysql_stmt_store_result_cont(&err, stmt, events); });
        if (!s) co_return s.error();
        if (err != 0) co_return co_await async_stmt_failed(deadline);
        MYSQL_RES* meta = mysql_stmt_result_metadata(stmt);
        if (meta == nullptr) co_return co_await async_stmt_failed(deadline);
        // Integer columns are fetched in binary, as 64-bit integers (signed or not as the column
        // is); every other column as text into a buffer as long as its longest value. The rows
        // look exactly like async_query's, and their integers need no parsing.
        enum class as : std::uint8_t { text, int64, uint64 };
        std::vector<MYSQL_BIND> result(columns);
        std::vector<std::string> buffers(columns);
        std::vector<std::uint64_t> integers(columns);
        std::vector<as> kinds(columns, as::text);
        std::vector<unsigned long> out_lengths(columns);
        std::vector<my_bool> nulls(columns);
        const MYSQL_FIELD* fields = mysql_fetch_fields(meta);
        for (unsigned c = 0; c < columns; ++c) {
            result[c].length = &out_lengths[c];
            result[c].is_null = &nulls[c];
            switch (fields[c].type) {
                case MYSQL_TYPE_TINY:
                case MYSQL_TYPE_SHORT:
                case MYSQL_TYPE_INT24:
                case MYSQL_TYPE_LONG:
                case MYSQL_TYPE_LONGLONG: {
                    const bool is_unsigned = (fields[c].flags & UNSIGNED_FLAG) != 0;
                    kinds[c] = is_unsigned ? as::uint64 : as::int64;
                    result[c].buffer_type = MYSQL_TYPE_LONGLONG;
                    result[c].is_unsigned = is_unsigned;
                    result[c].buffer = &integers[c];
                    result[c].buffer_length = sizeof integers[c];
                    break;
                }
                default:
                    buffers[c].resize(std::max<unsigned long>(fields[c].max_length, 1) + 1);
                    result[c].buffer_type = MYSQL_TYPE_STRING;
                    result[c].buffer = buffers[c].data();
                    result[c].buffer_length = static_cast<unsigned long>(buffers[c].size());
                    break;
            }
        }
        mysql_free_result(meta);  // metadata only: no network
        if (mysql_stmt_bind_result(stmt, result.data()) != 0) co_return co_await async_stmt_failed(deadline);
        out.start(columns);
        out.reserve(static_cast<std::size_t>(mysql_stmt_num_rows(stmt)), 0);
        // After mysql_stmt_store_result every row is in memory: fetching does no network I/O.
        for (;;) {
            const int f = mysql_stmt_fetch(stmt);
            if (f == MYSQL_NO_DATA) break;
            if (f == 1) co_return co_await async_stmt_failed(deadline);
            for (unsigned c = 0; c < columns; ++c) {
                if (nulls[c]) {
                    out.push(std::nullopt);
                    continue;
                }
                switch (kinds[c]) {
                    case as::int64: out.push_int(static_cast<std::int64_t>(integers[c])); break;
                    case as::uint64: out.push_uint(integers[c]); break;
                    case as::text:
                        out.push(std::string_view(buffers[c].data(), std::min<std::size_t>(out_lengths[c], buffers[c].size())));
                        break;
                }
            }
        }
        my_bool freed = 0;
        auto fr = co_await async_drive(
            deadline, false, [&] { return mysql_stmt_free_result_start(&freed, stmt); },
            [&](int events) { return mysql_stmt_free_result_cont(&freed, stmt, events); });
        if (!fr) co_return fr.error();
    }
    affected_rows_ = columns > 0 ? out.size() : mysql_stmt_affected_rows(stmt);
    co_return out;
}

bool mariadb_conn::impl::probe_idle() noexcept {
    if (!open_) {
        return false;
    }
    pollfd p{};
    p.fd = socket_.native_handle();  // the dup of the open connection's socket
    p.events = POLLIN;
    const int n = ::poll(&p, 1, 0);
    if (n == 0) {
        return true;
    }
    last_errno_ = CR_SERVER_GONE_ERROR;
    last_error_ = "the server closed the idle connection";
    close();
    return false;
}

void mariadb_conn::impl::abort_on_strand() noexcept {
    aborted_ = true;
    // A pending wait ends with operation_aborted, seen as shutting_down above; the operation
    // then closes the connection. Without one, the next operation is refused at its start.
    boost::system::error_code ignored;
    if (socket_.is_open()) socket_.cancel(ignored);
    timer_.cancel();
}

void mariadb_conn::impl::close() noexcept {
    // mysql_close sends COM_QUIT with a blocking write; after shutdown(2) that write fails at once
    // with EPIPE (libmariadb sends with MSG_NOSIGNAL), so the close cannot block. This is also how
    // a suspended _start/_cont sequence is abandoned: mysql_close frees its stack. The shutdown
    // goes through our dup (the same socket): after a failed connect mysql_get_socket would
    // answer a number the library has closed, which another connection may hold by now.
    if (socket_.is_open()) {
        ::shutdown(socket_.native_handle(), SHUT_RDWR);
    }
    unwrap_socket();
    if (mysql_ != nullptr) {
        mysql_close(mysql_);
        mysql_ = nullptr;
    }
    forget_prepared();
    open_ = false;
    connection_id_ = 0;
}

// ------------------------------------------------------------------------- public wrappers

mariadb_conn::mariadb_conn(asio::any_io_executor ex, conn_params p)
    : impl_(std::make_shared<impl>(std::move(ex), std::move(p))) {}

mariadb_conn::~mariadb_conn() = default;

asio::awaitable<core::result<void>> mariadb_conn::async_connect() {
    std::optional<core::result<void>> out;
    impl* i = impl_.get();
    auto step = [](impl* self, std::optional<core::result<void>>* o) -> asio::awaitable<void> {
        o->emplace(co_await self->async_connect_step());
    };
    // The step runs on the strand; this coroutine resumes on its own executor afterwards.
    co_await asio::co_spawn(i->strand_, step(i, &out), asio::use_awaitable);
    CAIRN_ASSERT(out.has_value());
    co_return std::move(*out);
}

asio::awaitable<core::result<void>> mariadb_conn::async_execute(std::string_view sql) {
    auto r = co_await async_run_statement(sql, false);
    if (!r) {
        co_return r.error();
    }
    co_return core::success();
}

asio::awaitable<core::result<rows>> mariadb_conn::async_query(std::string_view sql) {
    co_return co_await async_run_statement(sql, true);
}

asio::awaitable<core::result<rows>> mariadb_conn::async_run_statement(std::string_view sql, bool keep_rows) {
    std::optional<core::result<rows>> out;
    impl* i = impl_.get();
    auto step = [](impl* self, std::string_view s, bool keep,
                   std::optional<core::result<rows>>* o) -> asio::awaitable<void> {
        o->emplace(co_await self->async_statement_step(s, keep));
    };
    // An exception thrown by the step (only bad_alloc can be) is rethrown here.
    co_await asio::co_spawn(i->strand_, step(i, sql, keep_rows, &out), asio::use_awaitable);
    CAIRN_ASSERT(out.has_value());
    co_return std::move(*out);
}

asio::awaitable<core::result<rows>> mariadb_conn::async_query_prepared(std::string_view sql,
                                                                       std::span<const sql_param> params) {
    co_return co_await async_run_prepared(sql, params);
}

asio::awaitable<core::result<rows>> mariadb_conn::async_run_prepared(std::string_view sql,
                                                                     std::span<const sql_param> params) {
    std::optional<core::result<rows>> out;
    impl* i = impl_.get();
    auto step = [](impl* self, std::string_view s, std::span<const sql_param> p,
                   std::optional<core::result<rows>>* o) -> asio::awaitable<void> {
        o->emplace(co_await self->async_prepared_step(s, p));
    };
    co_await asio::co_spawn(i->strand_, step(i, sql, params, &out), asio::use_awaitable);
    CAIRN_ASSERT(out.has_value());
    co_return std::move(*out);
}

std::size_t mariadb_conn::prepared_count() const noexcept { return impl_->prepared_.size(); }

std::uint64_t mariadb_conn::affected_rows() const noexcept { return impl_->affected_rows_; }
std::uint64_t mariadb_conn::connection_id() const noexcept { return impl_->connection_id_; }
bool mariadb_conn::is_open() const noexcept { return impl_->open_; }
bool mariadb_conn::probe_idle() noexcept { return impl_->probe_idle(); }
void mariadb_conn::close() noexcept { impl_->close(); }
void mariadb_conn::abort() noexcept {
    asio::post(impl_->strand_, [weak = std::weak_ptr<impl>(impl_)] {
        if (auto self = weak.lock()) self->abort_on_strand();
    });
}
unsigned mariadb_conn::last_errno() const noexcept { return impl_->last_errno_; }
const std::string& mariadb_conn::last_error() const noexcept { return impl_->last_error_; }
const conn_params& mariadb_conn::params() const noexcept { return impl_->params_; }

}  // namespace cairn::shards
