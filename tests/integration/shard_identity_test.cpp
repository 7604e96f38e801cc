// A shard's identity row (shards/shard_identity.hpp) against a real MariaDB: the primary's check
// writes it on a database that has none; a replica's check only reads, so a replica that
// replication has not yet brought the primary's row does not match, and nothing is written there
// (a row written on a replica stops its replication at the primary's own insert of it: found by
// replica_reads, whose replica's SQL thread stopped on a duplicate key in shard_identity).
#include <utility>

#include "shards/mariadb_conn.hpp"
#include "shards/shard_identity.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

namespace cairn::test {
namespace {

constexpr const char* identity_db = "cairn_shard_identity";

// How many tables named shard_identity the database has (-1: the query failed).
int identity_tables(shards::mariadb_conn& c, boost::asio::io_context& ioc) {
    auto r = run_on(ioc, c.async_query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() "
                                       "AND table_name = 'shard_identity'"));
    return r ? static_cast<int>(r.value().uint64_at(0, 0)) : -1;
}

TEST(shard_identity, a_replica_check_reads_only_and_a_primary_check_writes_the_first_identity) {
    CAIRN_REQUIRE_SHARDS(1u);
    fresh_database(identity_db);
    boost::asio::io_context ioc;
    shards::mariadb_conn c(ioc.get_executor(), params_for(test_shards()[0], identity_db));
    ASSERT_TRUE(run_on(ioc, c.async_connect()));

    // No table yet: the replica's check refuses, and creates nothing.
    const std::string none = run_on(ioc, shards::async_check_replica_identity(c, 1, 2));
    EXPECT_NE(none.find("the replica holds no shard identity yet (shard 1 of 2)"), std::string::npos) << none;
    EXPECT_EQ(identity_tables(c, ioc), 0);

    // A table without its row (the primary's CREATE replicated, its INSERT not yet): refused, no row written.
    ASSERT_TRUE(run_on(ioc, c.async_execute("CREATE TABLE shard_identity (id TINYINT UNSIGNED NOT NULL PRIMARY KEY, "
                                            "shard_index INT UNSIGNED NOT NULL, shard_count INT UNSIGNED NOT NULL, "
                                            "map_version INT UNSIGNED NOT NULL, created_at DATETIME(6) NOT NULL)")));
    EXPECT_NE(run_on(ioc, shards::async_check_replica_identity(c, 1, 2)).find("holds no shard identity yet"), std::string::npos);
    auto held = run_on(ioc, shards::async_read_shard_identity(c));
    ASSERT_TRUE(held.has_value());
    EXPECT_FALSE(held.value().has_value());

    // The primary's check writes the row; then a replica holding it matches, and a wrong place does not.
    EXPECT_EQ(run_on(ioc, shards::async_check_shard_identity(c, 1, 2)), "");
    held = run_on(ioc, shards::async_read_shard_identity(c));
    ASSERT_TRUE(held.has_value() && held.value().has_value());
    EXPECT_EQ(held.value()->index, 1u);
    EXPECT_EQ(held.value()->count, 2u);
    EXPECT_EQ(run_on(ioc, shards::async_check_replica_identity(c, 1, 2)), "");
    EXPECT_EQ(run_on(ioc, shards::async_check_replica_identity(c, 1, 3)), "");  // a shard listed ahead of a split
    const std::string wrong = run_on(ioc, shards::async_check_replica_identity(c, 0, 2));
    EXPECT_NE(wrong.find("this database is shard 1 of 2 (shard map version 1), but this gateway's config lists it as shard 0 of 2"),
              std::string::npos)
        << wrong;
}

}  // namespace
}  // namespace cairn::test
