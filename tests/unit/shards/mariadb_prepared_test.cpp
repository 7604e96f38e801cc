// mariadb_conn's prepared statements against a live MariaDB (CAIRN_TEST_SHARDS): the same rows
// as the text protocol for every kind of value, one prepare per statement text per connection,
// the cache bound, and every failure (bad placeholder count, bad SQL, a server error on
// execute, a killed connection) leaves the connection and the cache in a usable state.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "tests/unit/shards/shard_test_env.hpp"
#include "shards/mariadb_conn.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

// The server's count of prepares on this session (Com_stmt_prepare).
asio::awaitable<std::int64_t> async_prepares(mariadb_conn& c) {
    auto r = co_await c.async_query("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'");
    if (!r || r.value().size() != 1) co_return -1;
    co_return r.value().int64_at(0, 1);
}

TEST(mariadb_prepared, rows_equal_the_text_protocol_and_prepare_once) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params p) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mariadb_conn c(ex, p);
        CO_REQUIRE(co_await c.async_connect());
        CO_REQUIRE(co_await c.async_execute(
            "CREATE TEMPORARY TABLE pt (id BIGINT PRIMARY KEY, u BIGINT UNSIGNED, b VARBINARY(300) NULL, s VARCHAR(20))"));
        const std::string big(300, 'z');
        CO_REQUIRE(co_await c.async_execute(fmt::format(
            "INSERT INTO pt VALUES (-9223372036854775808, 18446744073709551615, X'00FF0061', 'h\xc3\xa9llo'), "
            "(2, 0, NULL, ''), (3, 7, '{}', 'x')",
            big)));
        const std::string sql = "SELECT id, u, b, s FROM pt WHERE id >= ? AND u <= ? AND s <> ? ORDER BY id";
        const std::array<sql_param, 3> params{std::int64_t{std::numeric_limits<std::int64_t>::min()},
                                              std::uint64_t{std::numeric_limits<std::uint64_t>::max()},
                                              std::string_view("nothing")};
        auto text = co_await c.async_query(
            "SELECT id, u, b, s FROM pt WHERE id >= -9223372036854775808 AND u <= 18446744073709551615 AND "
            "s <> 'nothing' ORDER BY id");
        CO_REQUIRE(text);
        const auto before = co_await async_prepares(c);
        for (int round = 0; round < 3; ++round) {
            auto r = co_await c.async_query_prepared(sql, params);
            CO_REQUIRE(r);
            CO_REQUIRE(r.value().size() == 3);
            CO_REQUIRE(r.value().columns() == 4);
            EXPECT_EQ(c.affected_rows(), 3u);
            for (std::size_t row = 0; row < 3; ++row) {
                for (std::size_t col = 0; col < 4; ++col) {
                    EXPECT_EQ(r.value().at(row, col), text.value().at(row, col)) << row << "," << col;
                }
            }
        }
        const auto after = co_await async_prepares(c);
        EXPECT_EQ(after - before, 1) << "one prepare for three executions";
        EXPECT_EQ(c.prepared_count(), 1u);

        // Integer columns of every width come in binary: the same text, and the same integers.
        CO_REQUIRE(co_await c.async_execute(
            "CREATE TEMPORARY TABLE pi (t TINYINT, tu TINYINT UNSIGNED, s SMALLINT, m MEDIUMINT UNSIGNED, i INT, "
            "iu INT UNSIGNED NULL, d DECIMAL(20,0), y YEAR)"));
        CO_REQUIRE(co_await c.async_execute(
            "INSERT INTO pi VALUES (-128, 255, -32768, 16777215, -2147483648, 4294967295, 12345678901234567890, 2026),"
            " (0, 0, 7, 0, 2147483647, NULL, -1, 1999)"));
        const std::string pi_sql = "SELECT t, tu, s, m, i, iu, d, y FROM pi WHERE t <= ? ORDER BY t";
        const std::array<sql_param, 1> pi_params{std::int64_t{0}};
        auto pi_text = co_await c.async_query("SELECT t, tu, s, m, i, iu, d, y FROM pi WHERE t <= 0 ORDER BY t");
        CO_REQUIRE(pi_text);
        auto pi = co_await c.async_query_prepared(pi_sql, pi_params);
        CO_REQUIRE(pi);
        CO_REQUIRE(pi.value().size() == 2);
        for (std::size_t row = 0; row < 2; ++row) {
            for (std::size_t col = 0; col < 8; ++col) {
                EXPECT_EQ(pi.value().at(row, col), pi_text.value().at(row, col)) << row << "," << col;
            }
        }
        EXPECT_EQ(pi.value().int64_at(0, 0), -128);
        EXPECT_EQ(pi.value().uint64_at(0, 1), 255u);
        EXPECT_EQ(pi.value().int64_at(0, 2), -32768);
        EXPECT_EQ(pi.value().uint64_at(0, 3), 16777215u);
        EXPECT_EQ(pi.value().int64_at(0, 4), -2147483648LL);
        EXPECT_EQ(pi.value().uint64_at(0, 5), 4294967295u);
        EXPECT_EQ(pi.value().uint64_at(0, 6), 12345678901234567890u);  // DECIMAL: text, parsed
        EXPECT_EQ(pi.value().int64_at(1, 4), 2147483647);
        EXPECT_EQ(pi.value().at(1, 5), std::nullopt);
        EXPECT_EQ(pi.value().int64_at(1, 6), -1);

        // DML through a prepared statement, and a statement without a result set.
        const std::array<sql_param, 2> upd{std::string_view("new"), std::int64_t{2}};
        auto u = co_await c.async_query_prepared("UPDATE pt SET s = ? WHERE id = ?", upd);
        CO_REQUIRE(u);
        EXPECT_EQ(u.value().columns(), 0u);
        EXPECT_EQ(c.affected_rows(), 1u);
        auto check = co_await c.async_query("SELECT s FROM pt WHERE id = 2");
        CO_REQUIRE(check);
        EXPECT_EQ(check.value().at(0, 0), std::optional<std::string_view>("new"));
    }(shard));
}

// Runs "SELECT ?, ?, ?" and returns the three values as the server received them, as text.
asio::awaitable<std::vector<std::string>> async_echo(mariadb_conn& c, const std::vector<sql_param>& params) {
    std::vector<std::string> out;
    auto r = co_await c.async_query_prepared("SELECT ?, ?, ?", params);
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    if (!r || r.value().size() != 1) co_return out;
    for (std::size_t col = 0; col < 3; ++col) out.emplace_back(r.value().at(0, col).value_or("NULL"));
    co_return out;
}

// A statement executed again with parameters of the shape it was bound with only has its values
// copied into place (no new binding): each execution must still send exactly its own values,
// whether the shape stayed (new values), changed (a string of another length, a parameter of
// another type) or another statement was bound in between (and grew the arrays the first one's
// binding pointed into).
TEST(mariadb_prepared, a_statement_run_again_sends_its_own_values_whatever_ran_before) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params p) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mariadb_conn c(ex, p);
        CO_REQUIRE(co_await c.async_connect());
        struct echo_case {
            std::vector<sql_param> params;
            std::vector<std::string> want;
        };
        constexpr std::uint64_t u_max = std::numeric_limits<std::uint64_t>::max();
        const std::string_view ab = "ab", cd = "cd", xyz = "xyz", none, q = "q", r = "r", s = "s";
        const std::vector<echo_case> first = {
            {{std::int64_t{1}, ab, u_max}, {"1", "ab", "18446744073709551615"}},
            {{std::int64_t{-5}, cd, std::uint64_t{7}}, {"-5", "cd", "7"}},  // the same shape, new values
            {{std::int64_t{2}, xyz, std::uint64_t{8}}, {"2", "xyz", "8"}},  // a string of another length
            {{std::int64_t{3}, none, std::uint64_t{9}}, {"3", "", "9"}},
            // Other types in the same places: unsigned where signed was, and the other way round,
            // first with a string of another length, then with the same.
            {{u_max, q, std::int64_t{-9}}, {"18446744073709551615", "q", "-9"}},
            {{std::int64_t{-1}, r, std::uint64_t{u_max - 1}}, {"-1", "r", "18446744073709551614"}},
            {{std::uint64_t{10}, s, std::int64_t{-10}}, {"10", "s", "-10"}},
        };
        // After another statement was bound: in the shape the echo was bound with last.
        const std::vector<echo_case> second = {
            {{std::uint64_t{11}, r, std::int64_t{-12}}, {"11", "r", "-12"}},
            {{std::uint64_t{13}, s, std::int64_t{-14}}, {"13", "s", "-14"}},
        };
        for (const auto& e : first) EXPECT_EQ(co_await async_echo(c, e.params), e.want);
        // Another statement with far more parameters and a long string: the arrays the echo's
        // binding pointed into are grown (and moved) for it.
        std::vector<sql_param> many;
        std::string sum_sql = "SELECT LENGTH(?)";
        const std::string long_text(5000, 'L');
        many.emplace_back(std::string_view(long_text));
        for (std::int64_t i = 1; i <= 300; ++i) {
            many.emplace_back(i);
            sum_sql += " + ?";
        }
        auto sum = co_await c.async_query_prepared(sum_sql, many);
        CO_REQUIRE(sum);
        EXPECT_EQ(sum.value().int64_at(0, 0), 5000 + 300 * 301 / 2);
        // A third statement in the echo's last shape is bound to the grown arrays; the echo, bound
        // to them before they grew, must be bound again although its shape is theirs.
        auto third = co_await c.async_query_prepared("SELECT ? + 0, ?, ? + 0", second.front().params);
        CO_REQUIRE(third);
        EXPECT_EQ(third.value().at(0, 1), std::optional<std::string_view>("r"));
        for (const auto& e : second) EXPECT_EQ(co_await async_echo(c, e.params), e.want);
        // And the long statement again, with new values in its own shape.
        many[0] = std::string_view(long_text).substr(0, 4000);
        auto sum2 = co_await c.async_query_prepared(sum_sql, many);
        CO_REQUIRE(sum2);
        EXPECT_EQ(sum2.value().int64_at(0, 0), 4000 + 300 * 301 / 2);
        EXPECT_EQ(c.prepared_count(), 3u);
    }(shard));
}

TEST(mariadb_prepared, the_cache_is_bounded_and_keeps_answering) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params p) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mariadb_conn c(ex, p);
        CO_REQUIRE(co_await c.async_connect());
        for (std::size_t i = 0; i < prepared_statements_max + 10; ++i) {
            const std::array<sql_param, 1> one{std::int64_t{static_cast<std::int64_t>(i)}};
            auto r = co_await c.async_query_prepared(fmt::format("SELECT ? + {}", i), one);
            CO_REQUIRE(r);
            EXPECT_EQ(r.value().int64_at(0, 0), static_cast<std::int64_t>(2 * i));
        }
        EXPECT_EQ(c.prepared_count(), prepared_statements_max);
        // The evicted statements were closed on the server: this session sent a COM_STMT_CLOSE for each.
        // (Prepared_stmt_count is server-wide: other tests' gateways on the same server moved it.)
        auto closed = co_await c.async_query("SHOW SESSION STATUS LIKE 'Com_stmt_close'");
        CO_REQUIRE(closed);
        CO_REQUIRE(closed.value().size() == 1);
        EXPECT_EQ(closed.value().int64_at(0, 1), 10);  // prepared_statements_max + 10 prepared, 10 evicted
    }(shard));
}

TEST(mariadb_prepared, failures_keep_the_connection_usable) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params p) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mariadb_conn c(ex, p);
        CO_REQUIRE(co_await c.async_connect());
        // Placeholder count mismatch: rejected, nothing sent to execute.
        const std::array<sql_param, 2> two{std::int64_t{1}, std::int64_t{2}};
        auto mismatch = co_await c.async_query_prepared("SELECT ?", two);
        CO_REQUIRE(!mismatch);
        EXPECT_EQ(mismatch.error(), core::errc::shard_rejected);
        EXPECT_TRUE(c.is_open());
        // Bad SQL: rejected at prepare, not cached.
        const std::size_t cached = c.prepared_count();
        auto bad = co_await c.async_query_prepared("SELEC nonsense ?", std::span<const sql_param>(two.data(), 1));
        CO_REQUIRE(!bad);
        EXPECT_EQ(bad.error(), core::errc::shard_rejected);
        EXPECT_EQ(c.prepared_count(), cached);
        EXPECT_TRUE(c.is_open());
        // A server error on execute (duplicate key): rejected; the same statement works again.
        CO_REQUIRE(co_await c.async_execute("CREATE TEMPORARY TABLE pk (id BIGINT PRIMARY KEY)"));
        const std::string ins = "INSERT INTO pk VALUES (?)";
        const std::array<sql_param, 1> seven{std::int64_t{7}};
        CO_REQUIRE(co_await c.async_query_prepared(ins, seven));
        auto dup = co_await c.async_query_prepared(ins, seven);
        CO_REQUIRE(!dup);
        EXPECT_EQ(dup.error(), core::errc::shard_rejected);
        EXPECT_EQ(c.last_errno(), 1062u);
        const std::array<sql_param, 1> eight{std::int64_t{8}};
        CO_REQUIRE(co_await c.async_query_prepared(ins, eight));
        auto n = co_await c.async_query("SELECT COUNT(*) FROM pk");
        CO_REQUIRE(n);
        EXPECT_EQ(n.value().int64_at(0, 0), 2);
    }(shard));
}

TEST(mariadb_prepared, a_killed_connection_is_unavailable_and_prepares_afresh_after_reconnect) {
    CAIRN_REQUIRE_SHARD(shard);
    run([](conn_params p) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        mariadb_conn victim(ex, p), killer(ex, p);
        CO_REQUIRE(co_await victim.async_connect());
        CO_REQUIRE(co_await killer.async_connect());
        const std::array<sql_param, 1> one{std::int64_t{41}};
        CO_REQUIRE(co_await victim.async_query_prepared("SELECT ? + 1", one));
        CO_REQUIRE(co_await killer.async_execute("KILL " + std::to_string(victim.connection_id())));
        auto r = co_await victim.async_query_prepared("SELECT ? + 1", one);
        CO_REQUIRE(!r);
        EXPECT_EQ(r.error(), core::errc::shard_unavailable) << r.error().message();
        EXPECT_FALSE(victim.is_open());
        EXPECT_EQ(victim.prepared_count(), 0u);
        CO_REQUIRE(co_await victim.async_connect());
        auto again = co_await victim.async_query_prepared("SELECT ? + 1", one);
        CO_REQUIRE(again);
        EXPECT_EQ(again.value().int64_at(0, 0), 42);
        EXPECT_EQ(victim.prepared_count(), 1u);
    }(shard));
}

}  // namespace
}  // namespace cairn::shards
