// issue 16: failover to a replica. Shard 1 is a primary with a replica of its own (two MariaDB
// servers that this test starts with binary logging; MariaDB's own asynchronous replication), behind
// an address that cairnd's config names (a TCP proxy here; a virtual IP or a DNS name in production).
// Replication is stopped, writes are applied on the primary only, the primary is stopped for good,
// the replica promoted and the address moved to it while writes go on. Every acknowledged write must
// end on the promoted replica: the apply worker's mark check (shards/apply_worker.hpp) finds the
// replica's applied mark behind the journal's cursor and applies the rest again from the journal.
// Edge counts stay exact (a count is updated only with the rows it counts).
#include "tests/support/e2e.hpp"
#include "tests/support/own_servers.hpp"
#include "tests/support/tcp_proxy.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using edge_pairs = std::set<std::pair<std::int64_t, std::int64_t>>;

std::string scalar(const shard_endpoint& s, const std::string& sql, const std::string& db) {
    auto r = query_sql(s, sql, db);
    return r && r.value().size() == 1 ? r.value()[0] : "(" + (r ? std::to_string(r.value().size()) + " rows" : r.error().message()) + ")";
}

// Forward edges (source, destination) in state normal on one server.
edge_pairs forward_pairs(const shard_endpoint& s, const std::string& db) {
    edge_pairs out;
    auto rows = query_sql(s, "SELECT node_id, other_id FROM edges WHERE graph = 'follows' AND direction = 0 AND state = 0", db);
    EXPECT_TRUE(rows.has_value()) << (rows ? "" : rows.error().message());
    if (!rows) return out;
    for (const auto& line : rows.value()) {
        const auto tab = line.find('\t');
        out.emplace(std::stoll(line.substr(0, tab)), std::stoll(line.substr(tab + 1)));
    }
    return out;
}

// Per (node, direction, state): the count row against the rows it counts; empty when all agree.
std::string count_mismatches(const shard_endpoint& s, const std::string& db) {
    auto counts = query_sql(s, "SELECT node_id, direction, state, count FROM edge_counts WHERE graph = 'follows' AND count <> 0", db);
    auto actual = query_sql(s,
                            "SELECT node_id, direction, state, COUNT(*) FROM edges WHERE graph = 'follows' "
                            "GROUP BY node_id, direction, state",
                            db);
    if (!counts || !actual) return "reading the counts failed";
    const std::set<std::string> a(counts.value().begin(), counts.value().end());
    const std::set<std::string> b(actual.value().begin(), actual.value().end());
    if (a == b) return {};
    std::string out;
    for (const auto& x : a) {
        if (!b.contains(x)) out += "count row " + x + " matches no rows; ";
    }
    for (const auto& x : b) {
        if (!a.contains(x)) out += "rows " + x + " have no such count; ";
    }
    return out;
}

TEST(failover, a_replica_promoted_after_its_primary_is_lost_ends_with_every_acknowledged_write) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_fault_failover";
    fresh_database(db);
    own_servers servers(2, 600);
    ASSERT_TRUE(servers.started()) << "scripts/shards start --count 2 --log-bin failed";
    ASSERT_TRUE(servers.primary_with_replica(db));
    const shard_endpoint primary = servers.server(0);
    const shard_endpoint replica = servers.server(1);

    // cairnd's shard 1 is an address that points at the primary now and at the replica later.
    tcp_proxy address(primary.host, primary.port);
    cairnd_options o;
    o.database = db;
    o.shards = {test_shards()[0], shard_endpoint{"127.0.0.1", address.port()}};
    cairnd_process cairnd(o);
    ASSERT_TRUE(cairnd.start()) << cairnd.log_tail();

    std::mutex mu;
    edge_pairs acked;
    auto write_range = [&](std::int64_t from, std::int64_t to) {
        http_connection conn(cairnd.port());
        for (std::int64_t i = from; i < to; ++i) {
            auto r = conn.post("/v1/graphs/follows/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", i, i + 100'000));
            ASSERT_TRUE(r && r->status == 202) << (r ? r->body : "no answer");
            std::lock_guard lock(mu);
            acked.emplace(i, i + 100'000);
        }
    };

    // 1. Replicating: the replica catches up with the primary.
    write_range(1, 301);
    ASSERT_TRUE(wait_applied(cairnd.port(), 60s)) << cairnd.log_tail();
    const std::string count_sql = "SELECT COUNT(*) FROM edges";
    ASSERT_TRUE(wait_until([&] { return scalar(replica, count_sql, db) == scalar(primary, count_sql, db); }, 60s))
        << "the replica did not catch up: " << scalar(replica, "SHOW SLAVE STATUS", db);

    // 2. Replication stops; writes go on and are applied on the primary only.
    ASSERT_TRUE(exec_sql(replica, {"STOP SLAVE"}).has_value());
    write_range(301, 601);
    ASSERT_TRUE(wait_applied(cairnd.port(), 60s)) << cairnd.log_tail();
    const auto on_primary = std::stoll(scalar(primary, count_sql, db));
    const auto on_replica = std::stoll(scalar(replica, count_sql, db));
    ASSERT_LT(on_replica, on_primary) << "the replica must lack rows, or the test shows nothing";

    // 3. The primary is lost; the replica is promoted and the address moves to it, while a writer
    // keeps writing through the whole failover.
    std::atomic<bool> stop_writer{false};
    std::atomic<std::int64_t> written_during{0};
    std::thread writer([&] {
        http_connection conn(cairnd.port());
        for (std::int64_t i = 601; !stop_writer; ++i) {
            auto r = conn.post("/v1/graphs/follows/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", i, i + 100'000));
            if (!r || r->status != 202) {
                ADD_FAILURE() << "a write during the failover was refused: " << (r ? r->body : "no answer");
                return;
            }
            std::lock_guard lock(mu);
            acked.emplace(i, i + 100'000);
            ++written_during;
        }
    });
    ASSERT_TRUE(wait_until([&] { return written_during.load() >= 50; }, 30s));
    ASSERT_EQ(servers.stop(0), 0);
    ASSERT_TRUE(exec_sql(replica, {"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = 0"}).has_value());
    address.retarget(replica.port);
    address.drop_all();
    const auto at_switch = written_during.load();
    ASSERT_TRUE(wait_until([&] { return written_during.load() >= at_switch + 200; }, 60s));
    stop_writer = true;
    writer.join();

    // 4. Everything acknowledged is on shard 0 or on the promoted replica, and counts are exact.
    ASSERT_TRUE(wait_applied(cairnd.port(), 120s)) << cairnd.log_tail();
    edge_pairs stored = forward_pairs(test_shards()[0], db);
    const edge_pairs on_promoted = forward_pairs(replica, db);
    stored.insert(on_promoted.begin(), on_promoted.end());
    std::size_t lost = 0;
    std::string first_lost;
    for (const auto& e : acked) {
        if (stored.contains(e)) continue;
        if (lost++ == 0) first_lost = fmt::format("{} -> {}", e.first, e.second);
    }
    EXPECT_EQ(lost, 0u) << "of " << acked.size() << " acknowledged; the first: " << first_lost << "\n"
                        << cairnd.log_tail(6000);
    EXPECT_EQ(count_mismatches(replica, db), "");
    EXPECT_EQ(count_mismatches(test_shards()[0], db), "");
    const auto rewound = metric(cairnd.port(), "cairn_apply_rewound_seqs_total{shard=\"1\"}");
    ASSERT_TRUE(rewound.has_value());
    EXPECT_GT(*rewound, 0.0) << "the mark check never rewound shard 1";
    std::cout << fmt::format("failover: {} acknowledged ({} during the failover), the replica lacked {} of the primary's "
                             "{} rows, {} seqs applied again\n",
                             acked.size(), written_during.load(), on_primary - on_replica, on_primary, *rewound);
    EXPECT_EQ(cairnd.terminate(), 0) << cairnd.log_tail();
}

}  // namespace
}  // namespace cairn::test
