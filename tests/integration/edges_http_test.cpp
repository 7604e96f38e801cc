// End to end through the real cairnd binary and real shards: write edges over HTTP, read them
// back, idempotency keys, bad input, a poison op that becomes a dead letter.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/shard_tables.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

class edges_http : public cairnd_test {
protected:
    void start(const std::string& db, std::uint32_t attempts = 3) {
        cairnd_options o;
        o.retry_attempts_max = attempts;
        start_cairnd(db, o);
    }

};

TEST_F(edges_http, a_write_is_acknowledged_with_its_seq_then_readable) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_rw");
    auto w = http_post(port(), "/v1/graphs/follows/edges",
                       R"({"source_id": 12, "destination_id": "34", "position": 99})");
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    auto ack = nlohmann::json::parse(w->body);
    EXPECT_GE(ack["seq"].get<std::uint64_t>(), 1u);
    ASSERT_TRUE(wait_applied(port(), 20s));
    auto r = http_get(port(), "/v1/graphs/follows/edges/12/34");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    auto edge = nlohmann::json::parse(r->body);
    EXPECT_EQ(edge["state"], "normal");
    EXPECT_EQ(edge["position"], 99);
    EXPECT_EQ(edge["ts"], ack["ts"]);
    auto missing = http_get(port(), "/v1/graphs/follows/edges/34/12");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    // The backward row lives on the destination's shard: both directions are stored.
    const auto fwd = forward_edges("cairn_e2e_rw");
    EXPECT_EQ(fwd.count({"follows", 12, 34, 0}), 1u);
    int backward = 0;
    for (const auto& s : test_shards()) {
        auto rows = query_sql(s, "SELECT count(*) FROM edges WHERE direction = 1 AND node_id = 34 AND other_id = 12",
                              "cairn_e2e_rw");
        ASSERT_TRUE(rows);
        backward += std::stoi(rows.value().at(0));
    }
    EXPECT_EQ(backward, 1);
}

TEST_F(edges_http, a_batch_applies_every_edge_and_the_last_state_wins) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_batch");
    std::string body = R"({"edges": [)";
    for (int i = 0; i < 50; ++i) body += fmt::format(R"({}{{"source_id": 1, "destination_id": {}, "ts": {}}})", i ? "," : "", i + 100, 1'700'000'000'000 + i);
    body += R"(, {"source_id": 1, "destination_id": 100, "state": "removed", "ts": 1700000000999}]})";
    auto w = http_post(port(), "/v1/graphs/follows/edges", body);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    auto ack = nlohmann::json::parse(w->body);
    EXPECT_EQ(ack["count"], 51);
    EXPECT_EQ(ack["seq"].get<std::uint64_t>() - ack["first_seq"].get<std::uint64_t>(), 50u);
    ASSERT_TRUE(wait_applied(port(), 20s));
    const auto fwd = forward_edges("cairn_e2e_batch");
    EXPECT_EQ(fwd.size(), 50u);
    EXPECT_EQ(fwd.count({"follows", 1, 100, 1}), 1u);  // removed
    EXPECT_EQ(fwd.count({"follows", 1, 149, 0}), 1u);
}

TEST_F(edges_http, a_retried_request_with_the_same_idempotency_key_is_the_same_op) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_idem");
    const std::map<std::string, std::string> headers{{"Idempotency-Key", "req-7f3a"}};
    auto a = http_post(port(), "/v1/graphs/follows/edges", R"({"source_id": 5, "destination_id": 6})", headers);
    auto b = http_post(port(), "/v1/graphs/follows/edges", R"({"source_id": 5, "destination_id": 6})", headers);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->status, 202);
    ASSERT_EQ(b->status, 202);
    auto ja = nlohmann::json::parse(a->body);
    auto jb = nlohmann::json::parse(b->body);
    EXPECT_EQ(ja["seq"], jb["seq"]);
    EXPECT_EQ(ja["ts"], jb["ts"]);
    EXPECT_EQ(ja["deduplicated"], false);
    EXPECT_EQ(jb["deduplicated"], true);
    EXPECT_EQ(metric(port(), "cairn_journal_last_seq"), ja["seq"].get<double>());
}

struct bad_request_case {
    const char* name;
    const char* method;
    std::string target;
    std::string body;
    int status;
    const char* field;  // nullptr: no field expected
};

TEST_F(edges_http, bad_input_gets_a_problem_naming_the_field_and_nothing_is_journaled) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_bad");
    const std::vector<bad_request_case> cases = {
        {"malformed json", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1,)", 400, "body"},
        {"not an object", "POST", "/v1/graphs/follows/edges", R"([1, 2])", 400, "body"},
        {"missing destination", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1})", 400, "destination_id"},
        {"wrong type", "POST", "/v1/graphs/follows/edges", R"({"source_id": true, "destination_id": 2})", 400, "source_id"},
        {"negative id", "POST", "/v1/graphs/follows/edges", R"({"source_id": -1, "destination_id": 2})", 400, "source_id"},
        {"id too large", "POST", "/v1/graphs/follows/edges", R"({"source_id": 9223372036854775808, "destination_id": 2})", 400, "source_id"},
        {"id string not a number", "POST", "/v1/graphs/follows/edges", R"({"source_id": "12a", "destination_id": 2})", 400, "source_id"},
        {"unknown state", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2, "state": "blocked"})", 400, "state"},
        {"unknown field", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2, "colour": 1})", 400, "colour"},
        {"position not integer", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2, "position": 1.5})", 400, "position"},
        {"ts far in the future", "POST", "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2, "ts": 99999999999999})", 400, "ts"},
        {"bad field in batch", "POST", "/v1/graphs/follows/edges", R"({"edges": [{"source_id": 1, "destination_id": 2}, {"source_id": 1}]})", 400, "edges[1].destination_id"},
        {"empty batch", "POST", "/v1/graphs/follows/edges", R"({"edges": []})", 400, "edges"},
        {"too deep", "POST", "/v1/graphs/follows/edges", std::string(2000, '[') + std::string(2000, ']'), 400, "body"},
        {"bad graph name", "POST", "/v1/graphs/no%20pe/edges", R"({"source_id": 1, "destination_id": 2})", 400, "graph"},
        {"oversize body", "POST", "/v1/graphs/follows/edges", std::string(2 * 1024 * 1024, ' '), 413, nullptr},
        {"unknown route", "GET", "/v1/nothing", "", 404, nullptr},
        {"wrong method", "DELETE", "/v1/graphs/follows/edges", "", 405, nullptr},
        {"bad id in path", "GET", "/v1/graphs/follows/edges/x/2", "", 400, "source"},
    };
    const auto before = metric(port(), "cairn_journal_last_seq");
    ASSERT_TRUE(before);
    for (const auto& c : cases) {
        auto r = http_request(port(), c.method, c.target, c.body);
        ASSERT_TRUE(r) << c.name;
        EXPECT_EQ(r->status, c.status) << c.name << ": " << r->body;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << c.name << ": not JSON: " << r->body;
        EXPECT_EQ(j["status"], c.status) << c.name;
        EXPECT_TRUE(j.contains("title") && j.contains("type") && j.contains("detail")) << c.name;
        if (c.field) {
            EXPECT_EQ(j.value("field", ""), c.field) << c.name << ": " << r->body;
        }
    }
    // Still serving, and nothing was journaled.
    EXPECT_EQ(metric(port(), "cairn_journal_last_seq"), before);
    auto ok = http_post(port(), "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2})");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 202);
}

TEST_F(edges_http, a_poison_op_is_retried_then_dead_lettered_while_the_ops_behind_it_apply) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_e2e_poison";
    start(db, 3);
    ASSERT_TRUE(wait_applied(port(), 20s));
    // The shard itself refuses any forward row of node 666: a constraint the gateway cannot see.
    for (const auto& s : test_shards()) {
        ASSERT_TRUE(wait_for_table(s, db, "edges")) << "no edges table on " << s.port;
        ASSERT_TRUE(exec_sql(s, {"CREATE TRIGGER poison BEFORE INSERT ON edges FOR EACH ROW "
                                 "IF NEW.node_id = 666 AND NEW.direction = 0 THEN "
                                 "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'node 666 is refused'; END IF"},
                             db));
    }
    std::string body = R"({"edges": [{"source_id": 1, "destination_id": 2}, {"source_id": 666, "destination_id": 3})";
    for (int i = 0; i < 20; ++i) body += fmt::format(R"(, {{"source_id": 7, "destination_id": {}}})", 1000 + i);
    body += "]}";
    auto w = http_post(port(), "/v1/graphs/follows/edges", body);
    ASSERT_TRUE(w);
    ASSERT_EQ(w->status, 202) << w->body;
    // The ops behind the poison op are applied while it waits in the error queue.
    ASSERT_TRUE(wait_applied(port(), 20s));
    auto fwd = forward_edges(db);
    EXPECT_EQ(fwd.count({"follows", 1, 2, 0}), 1u);
    EXPECT_EQ(fwd.count({"follows", 7, 1019, 0}), 1u);
    EXPECT_EQ(fwd.count({"follows", 666, 3, 0}), 0u);
    // Retried with backoff, then dead after 3 attempts.
    std::optional<double> dead;
    (void)wait_until([&] {
        dead = metric(port(), "cairn_dead_letters");
        return dead && *dead >= 1;
    }, 30s);
    ASSERT_TRUE(dead);
    EXPECT_EQ(*dead, 1.0);
    EXPECT_EQ(metric(port(), "cairn_error_queue_depth"), 0.0);
    // Three attempts: the first failure and the second were queued, the third made it dead.
    const auto queued0 = metric(port(), "cairn_apply_error_queued_total{shard=\"0\"}");
    const auto queued1 = metric(port(), "cairn_apply_error_queued_total{shard=\"1\"}");
    ASSERT_TRUE(queued0 && queued1);
    EXPECT_EQ(*queued0 + *queued1, 2.0);
    // The backward row of the poison op (on node 3's shard) was never refused.
    int backward = 0;
    for (const auto& s : test_shards()) {
        auto rows = query_sql(s, "SELECT count(*) FROM edges WHERE direction = 1 AND node_id = 3", db);
        ASSERT_TRUE(rows);
        backward += std::stoi(rows.value().at(0));
    }
    EXPECT_EQ(backward, 1);
}

TEST_F(edges_http, metrics_expose_the_write_path) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_metrics");
    auto w = http_post(port(), "/v1/graphs/follows/edges", R"({"source_id": 1, "destination_id": 2})");
    ASSERT_TRUE(w && w->status == 202);
    ASSERT_TRUE(wait_applied(port(), 20s));
    auto m = http_get(port(), "/metrics");
    ASSERT_TRUE(m);
    for (const char* name : {"cairn_writes_accepted_total 1", "cairn_journal_commit_seconds_bucket",
                             "cairn_journal_group_ops_count", "cairn_apply_applied_seq{shard=\"0\"}",
                             "cairn_apply_lag_ops{shard=\"1\"} 0", "cairn_apply_batch_seconds_bucket",
                             "cairn_error_queue_depth 0", "cairn_dead_letters 0", "cairn_shard_up{shard=\"0\"} 1",
                             "cairn_shard_up{shard=\"1\"} 1"}) {
        EXPECT_NE(m->body.find(name), std::string::npos) << name;
    }
    auto ready = http_get(port(), "/readyz");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
}

}  // namespace
}  // namespace cairn::test
