// Disk errors under the journal (issue 14), injected by the disk layer (tests/fault/powercut/) into
// the real cairnd's writes and syncs of its data file. A full disk (ENOSPC on write) refuses writes
// with 503 disk-full and recovers by itself once there is room; a failed sync (EIO) is sticky:
// 503 journal-failed, cairnd exits with code 2, and a restart on the healthy disk recovers. In both,
// no write is acknowledged that was not committed, and every acknowledged one is in the journal.
#include "tests/fault/powercut/layer_env.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using edge_key = std::pair<std::int64_t, std::int64_t>;

struct disk {
    std::string dir = make_temp_dir("disk-error");
    std::string journal = dir + "/journal";
    std::string trigger = dir + "/fail";
    void fail() { std::ofstream(trigger).put('1'); }
    void heal() { std::filesystem::remove(trigger); }
    // cairnd options with the layer failing `on` ("write" or "sync") with error_number while failing.
    cairnd_options options(const std::string& on, int error_number) const {
        cairnd_options o;
        o.journal_dir = journal;
        o.env = disk_layer_env(journal, dir + "/undo",
                               {"CAIRN_POWERCUT_FAIL_WHEN=" + trigger, "CAIRN_POWERCUT_FAIL_ON=" + on,
                                "CAIRN_POWERCUT_FAIL_ERRNO=" + std::to_string(error_number)});
        return o;
    }
    ~disk() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

// Posts edges source..source+n-1 -> 1, one connection; the statuses and the problem types seen.
struct write_results {
    std::set<edge_key> acked;
    std::set<edge_key> refused;
    std::map<int, int> statuses;  // status -> count (0: no answer)
    std::set<std::string> problem_types;
};

write_results write_edges(std::uint16_t port, std::int64_t source, int n) {
    write_results out;
    for (int i = 0; i < n; ++i) {
        const edge_key e{source + i, 1};
        auto r = http_post(port, "/v1/graphs/follows/edges",
                           fmt::format(R"({{"source_id": {}, "destination_id": {}}})", e.first, e.second));
        ++out.statuses[r ? r->status : 0];
        if (r && r->status == 202) {
            out.acked.insert(e);
        } else {
            out.refused.insert(e);
            if (r) {
                auto j = nlohmann::json::parse(r->body, nullptr, false);
                if (j.is_object() && j.contains("type")) out.problem_types.insert(j["type"].get<std::string>());
            }
        }
    }
    return out;
}

void expect_journaled(const std::set<edge_key>& journaled, const std::set<edge_key>& acked) {
    for (const auto& e : acked) EXPECT_TRUE(journaled.contains(e)) << "acknowledged edge " << e.first << " lost";
}

TEST(disk_errors, a_full_disk_refuses_writes_with_503_and_recovers_by_itself_when_there_is_room) {
    CAIRN_REQUIRE_SHARDS(1u);
    disk d;
    // A full disk fails the writes that need new blocks (past the file's end); LMDB's meta pages, the
    // pages it reuses from its free list and the zeros the journal grew the file by ahead
    // (journal.grow_bytes, small here so that a few hundred writes use them up) are overwritten in
    // place, as on a real full disk.
    auto o = d.options("grow", ENOSPC);
    o.journal_toml = "grow_bytes = 32768\n";
    cairnd_process cairnd(o);
    ASSERT_TRUE(cairnd.start()) << cairnd.log_tail();
    const auto before = write_edges(cairnd.port(), 1'000, 20);
    ASSERT_EQ(before.acked.size(), 20u);

    d.fail();
    // Each write is either committed (into the zeros ahead or pages reused from the free list:
    // acknowledged) or refused with 503 disk-full; never journal-failed, and the journal stays
    // writable. Written in rounds until the disk refuses one, at most 4,000 writes.
    write_results full;
    int sent = 0;
    while (full.refused.empty() && sent < 4'000) {
        auto round = write_edges(cairnd.port(), 100'000 + sent, 100);
        sent += 100;
        full.acked.merge(round.acked);
        full.refused.merge(round.refused);
        for (const auto& [status, n] : round.statuses) full.statuses[status] += n;
        full.problem_types.merge(round.problem_types);
    }
    EXPECT_GE(full.refused.size(), 1u) << "the full disk refused nothing in " << sent << " writes";
    EXPECT_GE(full.acked.size(), 1u) << "the zeros grown ahead took no write";
    EXPECT_EQ(full.acked.size() + static_cast<std::size_t>(full.statuses.count(503) ? full.statuses.at(503) : 0),
              static_cast<std::size_t>(sent))
        << cairnd.log_tail();
    EXPECT_EQ(full.problem_types, std::set<std::string>{"https://cairn.dev/problems/disk-full"}) << cairnd.log_tail();

    d.heal();  // room again: no restart needed
    const auto after = write_edges(cairnd.port(), 3'000, 20);
    EXPECT_EQ(after.acked.size(), 20u) << cairnd.log_tail();
    EXPECT_EQ(cairnd.terminate(), 0) << cairnd.log_tail();

    const auto journaled = journaled_edges(d.journal, test_shards().size());
    expect_journaled(journaled, before.acked);
    expect_journaled(journaled, full.acked);
    expect_journaled(journaled, after.acked);
    for (const auto& e : full.refused) EXPECT_FALSE(journaled.contains(e)) << "refused edge " << e.first << " was journaled";
    EXPECT_NE(cairnd.log_tail(std::size_t{1} << 20).find("could not grow data.mdb"), std::string::npos)
        << "the failed extension is not logged:\n" << cairnd.log_tail();
}

TEST(disk_errors, a_failed_sync_is_sticky_cairnd_exits_and_a_restart_recovers_every_acknowledged_write) {
    CAIRN_REQUIRE_SHARDS(1u);
    disk d;
    cairnd_process cairnd(d.options("sync", EIO));
    ASSERT_TRUE(cairnd.start()) << cairnd.log_tail();
    const auto before = write_edges(cairnd.port(), 1'000, 20);
    ASSERT_EQ(before.acked.size(), 20u);

    d.fail();
    // The first write after the failed sync gets 503 journal-failed; cairnd then exits by itself
    // (its health check sees the sticky failure), so later ones may get no answer at all.
    const auto failed = write_edges(cairnd.port(), 2'000, 5);
    EXPECT_TRUE(failed.acked.empty()) << "a write was acknowledged although its sync failed";
    EXPECT_GE(failed.statuses.count(503), 1u);
    EXPECT_TRUE(failed.problem_types.contains("https://cairn.dev/problems/journal-failed")) << cairnd.log_tail();
    EXPECT_EQ(cairnd.wait_exit(10s), 2) << "cairnd should exit with code 2 after a sticky journal failure\n"
                                        << cairnd.log_tail();

    d.heal();
    ASSERT_TRUE(cairnd.start()) << "cairnd does not restart on the journal after the failed sync:\n" << cairnd.log_tail();
    const auto after = write_edges(cairnd.port(), 3'000, 10);
    EXPECT_EQ(after.acked.size(), 10u);
    EXPECT_EQ(cairnd.terminate(), 0) << cairnd.log_tail();
    const auto journaled = journaled_edges(d.journal, test_shards().size());
    expect_journaled(journaled, before.acked);
    expect_journaled(journaled, after.acked);
}

}  // namespace
}  // namespace cairn::test
