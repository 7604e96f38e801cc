// The journal's reads for the admin API (issue 7): dead letters paged by key and fetched one at
// a time, and the error queue listed whether due or not, by shard or by seq.
#include "journal/journal.hpp"

#include "journal_test_util.hpp"

#include <gtest/gtest.h>

namespace cairn::journal {
namespace {

using test::append_sync;
using test::commit_sync;
using test::make_ops;

struct admin_fixture {
    test::temp_dir dir;
    test::manual_wall wall;
    core::hlc clock{7, wall.fn()};
    std::unique_ptr<journal> j;

    admin_fixture() {
        auto o = test::test_options(dir.path(), wall);
        o.shard_count = 2;
        j = std::move(journal::open(o, clock).value());
        EXPECT_TRUE(append_sync(*j, make_ops(10, clock)));
    }
    error_task task(std::uint32_t shard, std::uint64_t seq, std::uint64_t due) const {
        return error_task{shard, seq, due, 2, {"refused seq " + std::to_string(seq)}, j->read_op_bytes(seq).value(), 5};
    }
};

TEST(journal_admin, dead_letters_page_by_key_and_are_found_one_by_one) {
    admin_fixture f;
    for (std::uint32_t shard : {0u, 1u}) {
        apply_outcome o;
        o.shard = shard;
        for (std::uint64_t seq : {2u, 5u, 9u}) o.put_dead.push_back(dead_letter{f.task(shard, seq, 0), 100 + seq});
        ASSERT_TRUE(commit_sync(*f.j, o));
    }
    auto first = f.j->list_dead_from(0, 0, 4).value();
    ASSERT_EQ(first.size(), 4u);
    EXPECT_EQ(first[0].task.seq, 2u);
    EXPECT_EQ(first[2].task.seq, 9u);
    EXPECT_EQ(first[3].task.shard, 1u);
    EXPECT_EQ(first[3].task.seq, 2u);
    // The next page starts just after the last key of the previous one.
    auto second = f.j->list_dead_from(1, 3, 10).value();
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(second[0].task.seq, 5u);
    EXPECT_EQ(second[1].task.seq, 9u);
    EXPECT_TRUE(f.j->list_dead_from(1, 10, 10).value().empty());
    EXPECT_TRUE(f.j->list_dead_from(0, 0, 0).value().empty());
    EXPECT_EQ(f.j->list_dead_from(0, 0, 100).value(), f.j->list_dead(100).value());

    auto one = f.j->get_dead(1, 5);
    ASSERT_TRUE(one);
    EXPECT_EQ(one.value(), (dead_letter{f.task(1, 5, 0), 105}));
    EXPECT_EQ(f.j->get_dead(1, 6).error(), core::errc::not_found);
    EXPECT_EQ(f.j->get_dead(2, 5).error(), core::errc::not_found);
}

TEST(journal_admin, the_error_queue_is_listed_whether_due_or_not) {
    admin_fixture f;
    apply_outcome zero;
    zero.shard = 0;
    zero.put_errors = {f.task(0, 3, 5000), f.task(0, 4, 1000), f.task(0, 7, 9000)};
    ASSERT_TRUE(commit_sync(*f.j, zero));
    apply_outcome one;
    one.shard = 1;
    one.put_errors = {f.task(1, 3, 10), f.task(1, 8, 20)};
    ASSERT_TRUE(commit_sync(*f.j, one));

    auto all = f.j->list_errors(std::nullopt, std::nullopt, 100).value();
    ASSERT_EQ(all.size(), 5u);  // (shard, due, seq) order
    EXPECT_EQ(all[0], f.task(0, 4, 1000));
    EXPECT_EQ(all[1].seq, 3u);
    EXPECT_EQ(all[2].seq, 7u);
    EXPECT_EQ(all[3], f.task(1, 3, 10));
    EXPECT_EQ(f.j->list_errors(std::nullopt, std::nullopt, 2).value().size(), 2u);

    auto shard1 = f.j->list_errors(1u, std::nullopt, 100).value();
    ASSERT_EQ(shard1.size(), 2u);
    EXPECT_EQ(shard1[1].seq, 8u);
    EXPECT_EQ(f.j->list_errors(0u, std::nullopt, 100).value().size(), 3u);

    auto of_seq3 = f.j->list_errors(std::nullopt, 3u, 100).value();
    ASSERT_EQ(of_seq3.size(), 2u);
    EXPECT_EQ(of_seq3[0].shard, 0u);
    EXPECT_EQ(of_seq3[1].shard, 1u);
    EXPECT_EQ(f.j->list_errors(1u, 3u, 100).value(), std::vector<error_task>{f.task(1, 3, 10)});
    EXPECT_TRUE(f.j->list_errors(std::nullopt, 5u, 100).value().empty());
    EXPECT_TRUE(f.j->list_errors(std::nullopt, std::nullopt, 0).value().empty());
}

}  // namespace
}  // namespace cairn::journal
