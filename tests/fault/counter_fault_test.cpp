// Counters under kill -9 (issue 6): writers send batches of increments while the apply workers
// apply them; cairnd is killed mid-stream, restarted on the same journal, and each writer
// retries its one unanswered request with the same Idempotency-Key (as a client would). After
// the drain every table holds exactly the number of acknowledged increments: none lost, none
// counted twice (the batch being applied at the kill is applied again after the restart).
#include "tests/support/counter_example.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
constexpr int increments_per_request = 25;

std::string batch_body(int track) {
    std::string body = R"({"increments": [)";
    for (int i = 0; i < increments_per_request; ++i) {
        body += fmt::format(R"({}{{"dimensions": {{"owner_id": 1, "track_id": {}, "country": "DE", "app": "web"}}, "time": "2026-11-23T12:00:00Z"}})",
                            i ? "," : "", track);
    }
    return body + "]}";
}

// One writer per track: requests numbered by Idempotency-Key; remembers the one in flight.
struct writer {
    int track = 0;
    std::atomic<std::int64_t> acked{0};    // increments acknowledged
    std::atomic<std::int64_t> next_key{0}; // the key of the request in flight (or next)
    std::atomic<bool> in_flight{false};
};

TEST(counter_fault, kill_9_while_applying_counts_every_acknowledged_increment_exactly_once) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_fault_counters";
    fresh_database(db);
    cairnd_options o;
    o.database = db;
    o.extra_toml = counter_example_toml();
    auto first = std::make_unique<cairnd_process>(o);
    ASSERT_TRUE(first->start()) << first->log_tail();
    o.journal_dir = first->journal_dir();

    std::vector<std::unique_ptr<writer>> ws;
    for (int t = 0; t < 6; ++t) {
        ws.push_back(std::make_unique<writer>());
        ws.back()->track = 1000 + t;
    }
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (auto& w : ws) {
        threads.emplace_back([&stop, w = w.get(), port = first->port()] {
            http_connection conn(port);
            while (!stop) {
                w->in_flight = true;
                auto r = conn.post("/v1/counters/plays", batch_body(w->track),
                                   {{"Idempotency-Key", fmt::format("t{}-{}", w->track, w->next_key.load())}});
                if (!r || r->status != 202) return;  // the gateway died: this request stays in flight
                w->acked += increments_per_request;
                ++w->next_key;
                w->in_flight = false;
            }
        });
    }
    auto total_acked = [&] {
        std::int64_t n = 0;
        for (auto& w : ws) n += w->acked;
        return n;
    };
    // Past the first applied batches, so that the kill lands while apply is busy.
    ASSERT_TRUE(wait_until([&] { return total_acked() >= 20'000; }, 120s, 10ms)) << total_acked() << "\n" << first->log_tail();
    first->kill9();
    stop = true;
    for (auto& t : threads) t.join();

    cairnd_process second(o);
    ASSERT_TRUE(second.start()) << second.log_tail();
    // The client's retry of its unanswered request: the same key is the same op if it was
    // journaled before the kill, a new op if it was not; either way it is counted once.
    for (auto& w : ws) {
        if (!w->in_flight) continue;
        auto r = http_post(second.port(), "/v1/counters/plays", batch_body(w->track),
                           {{"Idempotency-Key", fmt::format("t{}-{}", w->track, w->next_key.load())}});
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 202) << r->body;
        w->acked += increments_per_request;
    }
    ASSERT_TRUE(wait_applied(second.port(), 180s)) << second.log_tail();

    std::int64_t all = 0;
    for (auto& w : ws) {
        auto r = http_get(second.port(), fmt::format("/v1/counters/plays/total?track_id={}&from=2026-11-23&to=2026-11-24", w->track));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const auto counted = nlohmann::json::parse(r->body)["total"].get<std::int64_t>();
        EXPECT_EQ(counted, w->acked.load()) << "track " << w->track;
        all += counted;
    }
    // Every table of the metric agrees (one transaction wrote them all).
    std::int64_t in_tables = 0;
    for (const auto& s : test_shards()) {
        auto rows = query_sql(s, "SELECT (SELECT COALESCE(SUM(count),0) FROM counts_plays_by_owner_hour) - "
                                 "(SELECT COALESCE(SUM(count),0) FROM counts_plays_by_track_day_app), "
                                 "(SELECT COALESCE(SUM(count),0) FROM counts_plays_by_owner_hour)", db);
        ASSERT_TRUE(rows.has_value());
        ASSERT_EQ(rows.value().size(), 1u);
        const auto tab = rows.value()[0].find('\t');
        EXPECT_EQ(rows.value()[0].substr(0, tab), "0");
        in_tables += std::stoll(rows.value()[0].substr(tab + 1));
    }
    std::cout << "acknowledged increments=" << all << " in tables=" << in_tables << "\n";
    EXPECT_EQ(in_tables, total_acked());
    EXPECT_EQ(second.terminate(), 0);
}

}  // namespace
}  // namespace cairn::test
