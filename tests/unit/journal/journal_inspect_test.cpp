// journal::inspect (issue 7, `cairn journal stat/check`): reads a journal read-only while its
// owner holds it open and after it closed, counts and ranges are exact, and check names the seq
// of a record that does not decode.
#include "journal/inspect.hpp"
#include "journal_test_util.hpp"

#include <lmdb.h>

namespace cairn::journal::test {
namespace {

TEST(journal_inspect, reads_a_journal_that_is_open_elsewhere_and_after_it_closed) {
    temp_dir dir;
    manual_wall wall;
    core::hlc clock(7, wall.fn());
    auto opts = test_options(dir.path(), wall);
    opts.shard_count = 2;
    {
        auto j = journal::open(opts, clock);
        ASSERT_TRUE(j) << j.error().message();
        ASSERT_TRUE(append_sync(*j.value(), make_ops(3, clock)));
        wall.advance(5000);
        ASSERT_TRUE(append_sync(*j.value(), make_ops(2, clock, 10)));
        ASSERT_TRUE(advance_cursor(*j.value(), 0, 4));
        ASSERT_TRUE(advance_cursor(*j.value(), 1, 2));

        auto in = inspect(dir.path(), true);  // the owner holds the journal's flock
        ASSERT_TRUE(in) << in.error().message();
        EXPECT_EQ(in.value().node_id, 7u);
        EXPECT_EQ(in.value().ops_count, 5u);
        EXPECT_EQ(in.value().first_seq, 1u);
        EXPECT_EQ(in.value().last_seq, 5u);
        EXPECT_EQ(in.value().last_time_ms - in.value().first_time_ms, 5000u);
        EXPECT_EQ(in.value().cursors, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{0, 4}, {1, 2}}));
        EXPECT_TRUE(in.value().problems.empty()) << in.value().problems.front().what;
        EXPECT_GT(in.value().map_bytes_used, 0u);
        // The owner keeps working beside the reader.
        ASSERT_TRUE(append_sync(*j.value(), make_ops(1, clock, 20)));
    }
    auto after = inspect(dir.path(), true);
    ASSERT_TRUE(after) << after.error().message();
    EXPECT_EQ(after.value().ops_count, 6u);
    EXPECT_EQ(after.value().last_seq, 6u);
    // And the owner can open it again after a reader was there.
    auto j = journal::open(opts, clock);
    EXPECT_TRUE(j) << j.error().message();
}

TEST(journal_inspect, a_directory_without_a_journal_is_not_found) {
    temp_dir dir;
    auto in = inspect(dir.path(), false);
    ASSERT_FALSE(in);
    EXPECT_EQ(in.error(), core::errc::not_found);
}

TEST(journal_inspect, check_names_the_seq_of_an_undecodable_op) {
    temp_dir dir;
    manual_wall wall;
    core::hlc clock(7, wall.fn());
    {
        auto j = journal::open(test_options(dir.path(), wall), clock);
        ASSERT_TRUE(j);
        ASSERT_TRUE(append_sync(*j.value(), make_ops(3, clock)));
    }
    // Overwrite seq 2's record with bytes that are no op (raw LMDB; the journal is closed).
    MDB_env* env = nullptr;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 8), 0);
    ASSERT_EQ(mdb_env_open(env, dir.path().c_str(), 0, 0640), 0);
    MDB_txn* t = nullptr;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &t), 0);
    MDB_dbi ops = 0;
    ASSERT_EQ(mdb_dbi_open(t, "ops", 0, &ops), 0);
    std::string key(8, '\0');
    key[7] = 2;
    std::string value(8, '\0');
    value += "\xc1garbage";
    MDB_val k{key.size(), key.data()};
    MDB_val v{value.size(), value.data()};
    ASSERT_EQ(mdb_put(t, ops, &k, &v, 0), 0);
    ASSERT_EQ(mdb_txn_commit(t), 0);
    mdb_env_close(env);

    auto plain = inspect(dir.path(), false);
    ASSERT_TRUE(plain);
    EXPECT_TRUE(plain.value().problems.empty());  // stat does not decode
    auto in = inspect(dir.path(), true);
    ASSERT_TRUE(in);
    ASSERT_EQ(in.value().problems.size(), 1u);
    EXPECT_EQ(in.value().problems[0].where, "ops");
    EXPECT_EQ(in.value().problems[0].seq, 2u);
}

// The route record (journal::route_record) is text, not a number: a valid one checks clean, one that
// does not parse is named.
TEST(journal_inspect, check_reads_the_route_record_as_a_route_table) {
    temp_dir dir;
    manual_wall wall;
    core::hlc clock(7, wall.fn());
    for (const auto& [record, problems] : {std::pair<std::string, std::size_t>{"v2 0:0 9223372036854775808:1 | 0 5 0 1 0 0", 0},
                                           std::pair<std::string, std::size_t>{"v2 0:0 | 9 5 0 1 0 0", 1}}) {
        {
            auto j = journal::open(test_options(dir.path(), wall), clock);
            ASSERT_TRUE(j);
            apply_outcome o;
            o.put_route = record;
            ASSERT_TRUE(commit_sync(*j.value(), o));
        }
        auto in = inspect(dir.path(), true);
        ASSERT_TRUE(in);
        ASSERT_EQ(in.value().problems.size(), problems) << record;
        if (problems != 0) {
            EXPECT_EQ(in.value().problems[0].where, "meta");
        }
    }
}

}  // namespace
}  // namespace cairn::journal::test
