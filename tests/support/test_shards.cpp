#include "tests/support/test_shards.hpp"
#include "tests/support/shard_tables.hpp"
#include "tests/support/wait.hpp"

#include "shards/edge_store.hpp"

#include <boost/algorithm/string.hpp>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

namespace cairn::test {

namespace asio = boost::asio;

std::vector<shard_endpoint> test_shards() {
    std::vector<shard_endpoint> out;
    const char* env = std::getenv("CAIRN_TEST_SHARDS");
    if (!env || !*env) return out;
    std::vector<std::string> parts;
    boost::split(parts, std::string(env), boost::is_any_of(","));
    for (const auto& p : parts) {
        const auto colon = p.rfind(':');
        if (colon == std::string::npos) continue;
        out.push_back({p.substr(0, colon), static_cast<std::uint16_t>(std::stoi(p.substr(colon + 1)))});
    }
    return out;
}

bool running_in_ci() {
    const char* ci = std::getenv("CI");
    return ci && std::string_view(ci) == "true";
}

shards::conn_params params_for(const shard_endpoint& s, const std::string& database) {
    shards::conn_params p;
    p.host = s.host;
    p.port = s.port;
    p.user = "cairn";
    p.password = "cairn";
    p.database = database;
    p.connect_timeout = std::chrono::milliseconds(5000);
    p.query_timeout = std::chrono::milliseconds(60000);
    return p;
}

core::result<void> exec_sql(const shard_endpoint& s, const std::vector<std::string>& statements,
                            const std::string& db) {
    return run_sync<core::result<void>>([&](asio::io_context& ioc) -> asio::awaitable<core::result<void>> {
        shards::mariadb_conn conn(ioc.get_executor(), params_for(s, db));
        if (auto r = co_await conn.async_connect(); !r) co_return r;
        for (const auto& sql : statements) {
            if (auto r = co_await conn.async_execute(sql); !r) co_return r;
        }
        co_return core::success();
    });
}

core::result<std::vector<std::string>> query_sql(const shard_endpoint& s, const std::string& sql,
                                                 const std::string& db) {
    using out_t = core::result<std::vector<std::string>>;
    return run_sync<out_t>([&](asio::io_context& ioc) -> asio::awaitable<out_t> {
        shards::mariadb_conn conn(ioc.get_executor(), params_for(s, db));
        if (auto r = co_await conn.async_connect(); !r) co_return r.error();
        auto rows = co_await conn.async_query(sql);
        if (!rows) co_return rows.error();
        std::vector<std::string> out;
        for (std::size_t i = 0; i < rows.value().size(); ++i) {
            std::string line;
            for (std::size_t c = 0; c < rows.value().columns(); ++c) {
                if (c) line += '\t';
                auto v = rows.value().at(i, c);
                line += v ? std::string(*v) : std::string("NULL");
            }
            out.push_back(std::move(line));
        }
        co_return out;
    });
}

void lock_database(const std::string& db) {
    static std::mutex mu;
    static std::set<std::string> held;  // their descriptors stay open until the process exits
    std::lock_guard lock(mu);
    if (held.count(db)) return;
    const auto shards = test_shards();
    const char* tmp = std::getenv("TMPDIR");
    const std::string path = fmt::format("{}/cairn-test-db-{}-{}.lock", tmp && *tmp ? tmp : "/tmp",
                                         shards.empty() ? 0 : shards.front().port, db);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) throw std::runtime_error("cannot open the database lock " + path + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        std::cerr << "test: waiting for database " << db << ": another test process holds " << path << std::endl;
        int r = 0;
        while ((r = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
        }
        if (r != 0) throw std::runtime_error("cannot lock " + path + ": " + std::strerror(errno));
    }
    held.insert(db);
}

bool wait_for_value(const shard_endpoint& s, const std::string& db, const std::string& sql, const std::string& expected,
                    std::chrono::milliseconds timeout) {
    return wait_until(
        [&] {
            auto r = db.empty() ? query_sql(s, sql) : query_sql(s, sql, db);
            return r && r.value().size() == 1 && r.value().front() == expected;
        },
        timeout, std::chrono::milliseconds(20));
}

bool wait_for_table(const shard_endpoint& s, const std::string& db, const std::string& table, std::chrono::milliseconds timeout) {
    return wait_for_value(s, {},
                          fmt::format("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{}' AND "
                                      "TABLE_NAME = '{}'",
                                      db, table),
                          "1", timeout);
}

void fresh_database(const std::string& db) {
    lock_database(db);
    for (const auto& s : test_shards()) {
        auto r = exec_sql(s, {"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db});
        if (!r) throw std::runtime_error("cannot create database " + db + ": " + r.error().message());
    }
}

void fresh_edge_database(const std::string& db) {
    fresh_database(db);
    for (const auto& s : test_shards()) {
        boost::asio::io_context ioc;
        shards::mariadb_conn conn(ioc.get_executor(), params_for(s, db));
        auto r = run_on(ioc, conn.async_connect());
        if (r) r = run_on(ioc, shards::async_create_edge_schema(conn));
        if (!r) throw std::runtime_error("cannot create the edge tables in " + db + ": " + r.error().message());
    }
}

std::variant<edge_model, std::string> read_edge_model(boost::asio::io_context& ioc,
                                                      const std::vector<std::unique_ptr<shards::mariadb_conn>>& conns,
                                                      const core::shard_map& map) {
    edge_model actual;
    for (std::uint32_t s = 0; s < conns.size(); ++s) {
        auto rows = run_on(ioc, shards::async_dump_edges(*conns[s]));
        if (!rows) return fmt::format("reading the edges of shard {} failed: {}", s, rows.error().message());
        for (const auto& e : rows.value()) {
            if (map.shard_of_id(e.key.node_id) != s) return fmt::format("shard {} holds a row of node {}, not its own", s, e.key.node_id);
            actual.rows[{e.key.graph, e.key.node_id, static_cast<int>(e.key.direction), e.key.other_id}] = e.row;
        }
        auto counts = run_on(ioc, shards::async_dump_edge_counts(*conns[s]));
        if (!counts) return fmt::format("reading the counts of shard {} failed: {}", s, counts.error().message());
        for (const auto& [k, n] : counts.value()) {
            if (map.shard_of_id(k.node_id) != s) return fmt::format("shard {} holds a count of node {}, not its own", s, k.node_id);
            actual.counts[{k.graph, k.node_id, static_cast<int>(k.direction), static_cast<int>(k.state)}] = n;
        }
    }
    return actual;
}

}  // namespace cairn::test
