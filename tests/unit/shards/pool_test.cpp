// pool against a live MariaDB at CAIRN_TEST_SHARDS ("host:port,..."; user cairn, password
// cairn, database cairn), and against a private mariadbd that the restart test starts, stops
// (SIGSTOP), resumes and kills itself. Without a server a test skips, unless CI=true.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "tests/support/wait.hpp"
#include "tests/unit/shards/shard_test_env.hpp"
#include "shards/pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace cairn::shards {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;


asio::awaitable<void> async_sleep(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// A private mariadbd in a temporary directory, with --skip-grant-tables (any user gets in)
// and an empty datadir, which mariadbd initialises by itself in about a second.
class private_server {
public:
    static std::optional<std::string> find_mariadbd() {
        if (const char* env = std::getenv("CAIRN_TEST_MARIADBD")) {
            return std::string(env);
        }
        for (const char* p : {"/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd", "/usr/bin/mariadbd",
                              "/usr/local/bin/mariadbd"}) {
            if (::access(p, X_OK) == 0) {
                return std::string(p);
            }
        }
        return std::nullopt;
    }

    explicit private_server(std::string binary) : binary_(std::move(binary)) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "cairn-pool-test-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp failed";
        }
        dir_ = tmpl;
        std::filesystem::create_directory(dir_ / "data");
        port_ = pick_port();
    }

    ~private_server() {
        kill_now();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    private_server(const private_server&) = delete;
    private_server& operator=(const private_server&) = delete;

    std::uint16_t port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string log_path() const { return (dir_ / "log").string(); }

    std::string log_tail() const {
        std::ifstream in(log_path());
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
    }

    bool start() {
        const passwd* pw = ::getpwuid(::geteuid());
        const std::string user = pw != nullptr ? pw->pw_name : "root";
        std::vector<std::string> args = {
            binary_,
            "--no-defaults",
            "--user=" + user,
            "--datadir=" + (dir_ / "data").string(),
            "--port=" + std::to_string(port_),
            "--bind-address=127.0.0.1",
            "--socket=" + (dir_ / "sock").string(),
            "--pid-file=" + (dir_ / "pid").string(),
            "--skip-grant-tables",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=16M",
            "--innodb-log-file-size=8M",
            "--innodb_flush_log_at_trx_commit=1",
        };
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        const std::string log = log_path();
        posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        const int rc = ::posix_spawn(&pid_, binary_.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            pid_ = -1;
            return false;
        }
        return true;
    }

    void signal(int sig) const {
        if (pid_ > 0) {
            ::kill(pid_, sig);
        }
    }

    // kill(2) returns before a multi-threaded process has stopped: wait (bounded) until every
    // thread of the server shows state T in /proc.
    bool wait_stopped() const {
        bool unreadable = false;  // the process is gone: it will not stop
        const bool ended = test::wait_until(
            [&] {
                std::error_code ec;
                const std::filesystem::path tasks = "/proc/" + std::to_string(pid_) + "/task";
                bool all = true;
                for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
                    std::ifstream in(t.path() / "stat");
                    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                    const auto paren = stat.rfind(')');
                    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'T') {
                        all = false;
                        break;
                    }
                }
                unreadable = static_cast<bool>(ec);
                return unreadable || all;
            },
            2s, 1ms);
        return ended && !unreadable;
    }

    void kill_now() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
        }
    }

private:
    // A free port outside the ranges scripts/shards uses (33061-33070, 33161-33170).
    static std::uint16_t pick_port() {
        asio::io_context io;
        for (;;) {
            asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
            const auto port = a.local_endpoint().port();
            if ((port >= 33061 && port <= 33070) || (port >= 33161 && port <= 33170)) {
                continue;
            }
            return port;
        }
    }

    std::string binary_;
    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

// Acquires until a query succeeds or `limit` passes; returns whether it did.
asio::awaitable<bool> async_until_up(pool& p, std::chrono::milliseconds limit) {
    const auto end = clock_type::now() + limit;
    while (clock_type::now() < end) {
        auto l = co_await p.async_acquire();
        if (l) {
            auto r = co_await l.value()->async_query("SELECT 1");
            if (r) {
                co_return true;
            }
        }
        co_await async_sleep(50ms);
    }
    co_return false;
}

// ---------------------------------------------------------------------------------- tests

TEST(pool, many_coroutines_on_two_threads_share_four_connections) {
    CAIRN_REQUIRE_SHARD(shard);
    constexpr int tasks = 48;
    constexpr int queries = 25;
    std::atomic<int> finished{0};
    std::atomic<std::size_t> in_use_max{0};
    std::mutex ids_mutex;
    std::set<std::uint64_t> ids;
    std::set<std::thread::id> threads;
    run(
        [](conn_params params, std::atomic<int>* done, std::atomic<std::size_t>* peak, std::mutex* mu,
           std::set<std::uint64_t>* seen_ids, std::set<std::thread::id>* seen_threads) -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            auto shared = std::make_shared<pool>(ex, params, 4, 10'000ms);
            for (int t = 0; t < tasks; ++t) {
                asio::co_spawn(
                    ex,
                    [](std::shared_ptr<pool> p, int task, std::atomic<int>* d, std::atomic<std::size_t>* pk,
                       std::mutex* m, std::set<std::uint64_t>* sid,
                       std::set<std::thread::id>* sth) -> asio::awaitable<void> {
                        for (int i = 0; i < queries; ++i) {
                            auto l = co_await p->async_acquire();
                            CO_REQUIRE(l);
                            lease conn = std::move(l.value());
                            const std::size_t used = p->in_use();
                            EXPECT_LE(used, 4u);
                            EXPECT_LE(used + p->idle(), 4u);
                            std::size_t prev = pk->load();
                            while (used > prev && !pk->compare_exchange_weak(prev, used)) {
                            }
                            const std::string sql = "SELECT " + std::to_string(task) + " * 1000 + " +
                                                    std::to_string(i) + ", CONNECTION_ID()";
                            auto r = co_await conn->async_query(sql);
                            CO_REQUIRE(r);
                            EXPECT_EQ(r.value().int64_at(0, 0), task * 1000 + i);
                            {
                                std::lock_guard lock(*m);
                                sid->insert(r.value().uint64_at(0, 1));
                                sth->insert(std::this_thread::get_id());
                            }
                        }
                        ++*d;
                    }(shared, t, done, peak, mu, seen_ids, seen_threads),
                    log_end);
            }
            co_return;
        }(shard, &finished, &in_use_max, &ids_mutex, &ids, &threads),
        2);
    EXPECT_EQ(finished.load(), tasks);
    EXPECT_LE(in_use_max.load(), 4u);
    EXPECT_GE(in_use_max.load(), 2u);  // the tasks really overlapped
    EXPECT_LE(ids.size(), 4u);         // never more than four server connections, never a reconnect
    EXPECT_GE(ids.size(), 2u);
    RecordProperty("threads_seen", static_cast<int>(threads.size()));
}

TEST(pool, waiting_for_a_slot_times_out_then_gets_the_returned_connection) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params params) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        pool p(ex, params, 1, 200ms);
        auto first = co_await p.async_acquire();
        CO_REQUIRE(first);
        EXPECT_EQ(p.in_use(), 1u);
        const auto id = first.value()->connection_id();

        const auto t0 = clock_type::now();
        auto second = co_await p.async_acquire();
        const auto took = clock_type::now() - t0;
        CO_REQUIRE(!second);
        EXPECT_EQ(second.error(), core::errc::shard_timeout);
        EXPECT_GE(took, 190ms);
        EXPECT_LT(took, 1000ms);

        // A waiter gets the returned connection itself (FIFO hand-over, no reconnect).
        std::optional<std::uint64_t> waiter_id;
        asio::co_spawn(
            ex,
            [](pool* pl, std::optional<std::uint64_t>* out) -> asio::awaitable<void> {
                auto l = co_await pl->async_acquire();
                CO_REQUIRE(l);
                out->emplace(l.value()->connection_id());
            }(&p, &waiter_id),
            log_end);
        for (int i = 0; i < 1000 && p.waiting() == 0; ++i) {
            co_await async_sleep(1ms);
        }
        CO_REQUIRE(p.waiting() == 1);
        EXPECT_FALSE(waiter_id.has_value());
        first.value().reset();
        EXPECT_EQ(p.waiting(), 0u);
        EXPECT_EQ(p.in_use(), 1u);  // the slot passed straight to the waiter
        for (int i = 0; i < 1000 && !waiter_id; ++i) {
            co_await async_sleep(1ms);
        }
        CO_REQUIRE(waiter_id.has_value());
        EXPECT_EQ(*waiter_id, id);
        EXPECT_EQ(p.in_use(), 0u);
        EXPECT_EQ(p.idle(), 1u);
    }(shard));
}

TEST(pool, a_timed_out_connection_is_dropped_and_replaced) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params params) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        params.query_timeout = 300ms;
        pool p(ex, params, 1, 1000ms);
        std::uint64_t old_id = 0;
        {
            auto l = co_await p.async_acquire();
            CO_REQUIRE(l);
            old_id = l.value()->connection_id();
            const auto t0 = clock_type::now();
            auto r = co_await l.value()->async_query("SELECT SLEEP(5)");
            CO_REQUIRE(!r);
            EXPECT_EQ(r.error(), core::errc::shard_timeout);
            EXPECT_LT(clock_type::now() - t0, 1000ms);
            EXPECT_FALSE(l.value()->is_open());
        }
        EXPECT_EQ(p.in_use(), 0u);
        EXPECT_EQ(p.idle(), 0u);  // dropped, not pooled
        auto l = co_await p.async_acquire();
        CO_REQUIRE(l);
        EXPECT_NE(l.value()->connection_id(), old_id);
        auto ok = co_await l.value()->async_query("SELECT 7");
        CO_REQUIRE(ok);
        EXPECT_EQ(ok.value().int64_at(0, 0), 7);
    }(shard));
}

TEST(pool, a_killed_idle_connection_is_replaced_before_use) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params params) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        pool p(ex, params, 2, 1000ms);
        std::uint64_t id = 0;
        {
            auto l = co_await p.async_acquire();
            CO_REQUIRE(l);
            id = l.value()->connection_id();
        }
        EXPECT_EQ(p.idle(), 1u);
        mariadb_conn killer(ex, params);
        CO_REQUIRE(co_await killer.async_connect());
        const std::string kill = "KILL " + std::to_string(id);
        CO_REQUIRE(co_await killer.async_execute(kill));
        // Wait until the server thread is gone, so that its socket is closed.
        const std::string gone = "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = " + std::to_string(id);
        for (int i = 0; i < 200; ++i) {
            auto r = co_await killer.async_query(gone);
            CO_REQUIRE(r);
            if (r.value().int64_at(0, 0) == 0) {
                break;
            }
            co_await async_sleep(10ms);
        }
        auto l = co_await p.async_acquire();
        CO_REQUIRE(l);
        EXPECT_NE(l.value()->connection_id(), id);
        auto ok = co_await l.value()->async_query("SELECT 1");
        EXPECT_TRUE(ok) << l.value()->last_error();
        EXPECT_EQ(p.idle(), 0u);
        EXPECT_EQ(p.in_use(), 1u);
    }(shard));
}

TEST(pool, close_all_retires_idle_and_leased_connections) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params params) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        pool p(ex, params, 2, 1000ms);
        auto a = co_await p.async_acquire();
        auto b = co_await p.async_acquire();
        CO_REQUIRE(a);
        CO_REQUIRE(b);
        const auto a_id = a.value()->connection_id();
        a.value().reset();
        EXPECT_EQ(p.idle(), 1u);
        p.close_all();
        EXPECT_EQ(p.idle(), 0u);
        b.value().reset();  // leased before close_all: closed on return
        EXPECT_EQ(p.idle(), 0u);
        EXPECT_EQ(p.in_use(), 0u);
        auto c = co_await p.async_acquire();
        CO_REQUIRE(c);
        EXPECT_NE(c.value()->connection_id(), a_id);
    }(shard));
}

// issue 19: a stop must not wait out query_timeout on a stalled shard.
TEST(pool, shutdown_aborts_a_statement_in_flight_and_refuses_later_acquires) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params params) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        params.query_timeout = 30s;
        pool p(ex, params, 2, 1000ms);
        auto l = co_await p.async_acquire();
        CO_REQUIRE(l);
        // Shut the pool down once the statement is surely on the server.
        asio::steady_timer later(ex, 200ms);
        later.async_wait([&p](const boost::system::error_code&) { p.shutdown(); });
        const auto t0 = clock_type::now();
        auto r = co_await l.value()->async_query("SELECT SLEEP(20)");
        CO_REQUIRE(!r);
        EXPECT_EQ(r.error(), core::errc::shard_unavailable);
        EXPECT_NE(l.value()->last_error().find("stopping"), std::string::npos) << l.value()->last_error();
        EXPECT_LT(clock_type::now() - t0, 5s);
        EXPECT_FALSE(l.value()->is_open());
        l.value().reset();
        EXPECT_EQ(p.in_use(), 0u);
        EXPECT_EQ(p.idle(), 0u);
        auto again = co_await p.async_acquire();
        CO_REQUIRE(!again);
        EXPECT_EQ(again.error(), core::errc::shutting_down);
    }(shard));
}

TEST(pool, shutdown_aborts_a_connect_to_a_server_that_never_answers) {
    run([]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        silent_server silent(ex);  // the handshake hangs, as on a stalled shard
        pool p(ex, silent.params(30s), 1, 1000ms);
        asio::steady_timer later(ex, 200ms);
        later.async_wait([&p](const boost::system::error_code&) { p.shutdown(); });
        const auto t0 = clock_type::now();
        auto l = co_await p.async_acquire();
        CO_REQUIRE(!l);
        EXPECT_EQ(l.error(), core::errc::shard_unavailable);
        EXPECT_LT(clock_type::now() - t0, 5s);
        EXPECT_EQ(p.in_use(), 0u);
    }());
}

// A shard whose last connect failed is tried by one acquire at a time: while that one connects,
// the others fail at once instead of each waiting out connect_timeout (cairnd's read pools).
TEST(pool, with_fail_fast_one_acquire_retries_a_failing_shard_and_the_others_fail_at_once) {
    run([]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        silent_server silent(ex);  // every connect hangs until its timeout
        pool p(ex, silent.params(300ms), 4, 1000ms);
        p.set_fail_fast(true);
        // Nothing failed yet: two acquires connect side by side, and both time out.
        std::optional<core::result<lease>> first;
        asio::co_spawn(ex, [&]() -> asio::awaitable<void> { first.emplace(co_await p.async_acquire()); }, asio::detached);
        auto second = co_await p.async_acquire();
        CO_REQUIRE(!second);
        EXPECT_EQ(second.error(), core::errc::shard_timeout);
        asio::steady_timer t(ex);
        for (int i = 0; i < 250 && !first; ++i) {  // the first ends by its own timeout, as the second did
            t.expires_after(20ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        CO_REQUIRE(first.has_value());
        EXPECT_FALSE(*first);
        // The retry: one acquire connects; one started meanwhile fails at once, before it ends.
        std::optional<core::result<lease>> trial;
        asio::co_spawn(ex, [&]() -> asio::awaitable<void> { trial.emplace(co_await p.async_acquire()); }, asio::detached);
        co_await asio::post(ex, asio::use_awaitable);  // the trial runs up to its connect
        auto refused = co_await p.async_acquire();
        CO_REQUIRE(!refused);
        EXPECT_EQ(refused.error(), core::errc::shard_unavailable);
        EXPECT_FALSE(trial.has_value()) << "the second acquire waited for the trial's connect";
        EXPECT_EQ(p.in_use(), 1u);  // only the trial holds a slot
        // After the trial failed too, the next acquire tries again (it is not refused for good).
        for (int i = 0; i < 250 && !trial; ++i) {
            t.expires_after(20ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        CO_REQUIRE(trial.has_value());
        EXPECT_FALSE(*trial);
        const auto t0 = clock_type::now();
        auto again = co_await p.async_acquire();
        CO_REQUIRE(!again);
        EXPECT_EQ(again.error(), core::errc::shard_timeout);
        EXPECT_GE(clock_type::now() - t0, 250ms);  // it connected, and waited out the timeout
        EXPECT_EQ(p.in_use(), 0u);
    }());
}

TEST(pool, connect_failure_frees_the_slot) {
    run([]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        conn_params params;
        {
            asio::ip::tcp::acceptor a(ex, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
            params.port = a.local_endpoint().port();
        }
        params.user = "cairn";
        pool p(ex, params, 1, 100ms);
        for (int i = 0; i < 3; ++i) {
            auto l = co_await p.async_acquire();
            CO_REQUIRE(!l);
            EXPECT_EQ(l.error(), core::errc::shard_unavailable);
            EXPECT_EQ(p.in_use(), 0u);
        }
    }());
}

// Issue 18: an operator must tell a refused port, a wrong password and an unknown database apart
// from what cairnd says; the pool keeps MariaDB's own reason for its last failed connect.
TEST(pool, a_failed_connect_says_why_in_mariadbs_words) {
    CAIRN_REQUIRE_SHARD(shard);
    run([shard]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        conn_params refused = shard;
        {
            asio::ip::tcp::acceptor a(ex, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
            refused.port = a.local_endpoint().port();
        }
        conn_params wrong_password = shard;
        wrong_password.password = "not-the-password";
        conn_params no_database = shard;
        no_database.database = "cairn_no_such_database";
        std::vector<std::string> why;
        for (const conn_params& params : {refused, wrong_password, no_database}) {
            pool p(ex, params, 1, 1000ms);
            EXPECT_EQ(p.endpoint(), fmt::format("127.0.0.1:{}", params.port));
            EXPECT_EQ(p.last_connect_failure(), "");
            auto l = co_await p.async_acquire();
            CO_REQUIRE(!l);
            EXPECT_EQ(l.error(), core::errc::shard_unavailable);
            why.push_back(p.last_connect_failure());
        }
        EXPECT_NE(why[0].find("MariaDB error 2002"), std::string::npos) << why[0];
        EXPECT_NE(why[1].find("MariaDB error 1045"), std::string::npos) << why[1];
        EXPECT_NE(why[1].find("Access denied"), std::string::npos) << why[1];
        EXPECT_NE(why[2].find("MariaDB error 1049"), std::string::npos) << why[2];
        EXPECT_NE(why[2].find("cairn_no_such_database"), std::string::npos) << why[2];

        // A later good connect clears it.
        pool good(ex, shard, 1, 1000ms);
        auto l = co_await good.async_acquire();
        CO_REQUIRE(l);
        EXPECT_EQ(good.last_connect_failure(), "");
    }());
}

TEST(pool, a_stopped_then_killed_and_restarted_server_recovers) {
    const auto binary = private_server::find_mariadbd();
    if (!binary) {
        if (in_ci()) {
            FAIL() << "mariadbd not found and CI=true (set CAIRN_TEST_MARIADBD)";
        }
        GTEST_SKIP() << "mariadbd not found (set CAIRN_TEST_MARIADBD): cannot run a private server";
    }
    private_server server(*binary);
    ASSERT_TRUE(server.start());
    run(
        [](private_server* srv) -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            conn_params params;
            params.port = srv->port();
            params.user = "cairn";
            params.connect_timeout = 400ms;
            params.query_timeout = 400ms;
            pool p(ex, params, 2, 400ms);
            const bool up = co_await async_until_up(p, 30'000ms);
            CO_REQUIRE(up);

            // 1. SIGSTOP: the idle connection looks fine, but its query times out.
            srv->signal(SIGSTOP);
            CO_REQUIRE(srv->wait_stopped());
            {
                auto l = co_await p.async_acquire();
                CO_REQUIRE(l);
                const auto t0 = clock_type::now();
                auto r = co_await l.value()->async_query("SELECT 1");
                CO_REQUIRE(!r);
                EXPECT_EQ(r.error(), core::errc::shard_timeout);
                EXPECT_LT(clock_type::now() - t0, 1000ms);
            }
            EXPECT_EQ(p.idle(), 0u);
            // A new connection gets no greeting from a stopped server.
            {
                auto l = co_await p.async_acquire();
                CO_REQUIRE(!l);
                EXPECT_EQ(l.error(), core::errc::shard_timeout);
            }
            // 2. SIGCONT: the pool connects afresh.
            srv->signal(SIGCONT);
            {
                auto l = co_await p.async_acquire();
                CO_REQUIRE(l);
                auto r = co_await l.value()->async_query("SELECT 2");
                CO_REQUIRE(r);
                EXPECT_EQ(r.value().int64_at(0, 0), 2);
            }
            EXPECT_EQ(p.idle(), 1u);

            // 3. SIGKILL: the idle connection is found dead; connecting is refused at once.
            srv->kill_now();
            {
                const auto t0 = clock_type::now();
                auto l = co_await p.async_acquire();
                CO_REQUIRE(!l);
                EXPECT_EQ(l.error(), core::errc::shard_unavailable);
                EXPECT_LT(clock_type::now() - t0, 300ms);
            }
            EXPECT_EQ(p.idle(), 0u);
            EXPECT_EQ(p.in_use(), 0u);

            // 4. Restart on the same port and datadir: the pool recovers by itself.
            CO_REQUIRE(srv->start());
            const bool back = co_await async_until_up(p, 30'000ms);
            CO_REQUIRE(back);
            auto l = co_await p.async_acquire();
            CO_REQUIRE(l);
            auto r = co_await l.value()->async_query("SELECT 3");
            CO_REQUIRE(r);
            EXPECT_EQ(r.value().int64_at(0, 0), 3);
        }(&server),
        2);
    if (HasFailure()) {
        std::printf("private server log (tail):\n%s\n", server.log_tail().c_str());
    }
}

}  // namespace
}  // namespace cairn::shards
