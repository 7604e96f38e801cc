// Several gateways on the same shards (issue 16): random edge and node ops, each sent to one of
// two real cairnd (node ids 1 and 2) at random, both sending at once, must leave the shards
// exactly the forward rows, backward rows and counts of the model: the ops applied once, in
// timestamp order. Timestamps are given in the writes from a narrow window, so that both
// gateways stamp ops of the same millisecond (their node ids break those ties).
#include <utility>

#include "core/edge_rules.hpp"
#include "core/hlc.hpp"
#include "core/node_op.hpp"
#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include <thread>

namespace cairn {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;
const std::string db = "cairn_prop_gateways";

// The write of o as HTTP: (target, body), with the op's own millisecond as its ts.
std::pair<std::string, std::string> http_write_of(const core::op& o) {
    const auto ms = core::hlc_ms(o.ts);
    if (const auto* e = std::get_if<core::edge_op>(&o.body)) {
        json b{{"source_id", e->source_id},
               {"destination_id", e->destination_id},
               {"state", std::string(core::edge_state_name(e->state))},
               {"position", e->position},
               {"keep_position", !e->sets_position},
               {"ts", ms}};
        return {"/v1/graphs/" + e->graph + "/edges", b.dump()};
    }
    const auto& n = std::get<core::node_op>(o.body);
    return {fmt::format("/v1/graphs/{}/nodes/{}/{}?direction={}", n.graph, n.node_id, core::node_action_name(n.action),
                        core::node_scope_name(n.scope)),
            json{{"ts", ms}}.dump()};
}

TEST(gateways_convergence, ops_split_across_two_gateways_end_in_the_model_rows_and_counts) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(db);
    std::vector<std::unique_ptr<test::cairnd_process>> gateways;
    for (std::uint64_t node : {1, 2}) {
        test::cairnd_options o;
        o.database = db;
        o.node_id = node;
        gateways.push_back(std::make_unique<test::cairnd_process>(o));
        ASSERT_TRUE(gateways.back()->start()) << gateways.back()->log_tail();
    }
    const auto endpoints = test::test_shards();
    const auto map = core::shard_map::equal_ranges(2);
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], db)));
        ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
    }
    const std::uint64_t base_ms = core::system_wall_clock_ms() - 60'000;

    const bool ok = rc::check("edge and node ops split across two gateways converge", [&] {
        auto ops = *rc::gen::container<std::vector<core::op>>(test::gen_edge_or_node_op(6, 8));
        const auto via = *rc::gen::container<std::vector<bool>>(ops.size(), rc::gen::arbitrary<bool>());
        for (auto& o : ops) o.ts = core::hlc_make(base_ms + core::hlc_ms(o.ts) - 1'700'000'000'000, 0, 0);
        for (auto& c : conns) {
            for (const char* t : {"edges", "edge_counts", "node_registers"}) {
                RC_ASSERT(test::run_on(ioc, c->async_execute(std::string("DELETE FROM ") + t)).has_value());
            }
        }
        // Each gateway's share, sent in order by its own thread while the other sends too; each
        // op takes the ts its gateway stamped (the ack's).
        std::array<std::string, 2> failures;
        std::array<std::thread, 2> senders;
        for (std::size_t g = 0; g < 2; ++g) {
            senders[g] = std::thread([&, g] {
                test::http_connection conn(gateways[g]->port());
                for (std::size_t i = 0; i < ops.size(); ++i) {
                    if (via[i] != (g == 1)) continue;
                    const auto [target, body] = http_write_of(ops[i]);
                    auto r = conn.post(target, body);
                    if (!r || r->status != 202) {
                        failures[g] = target + " " + body + ": " + (r ? r->body : "no answer");
                        return;
                    }
                    ops[i].ts = std::stoull(json::parse(r->body)["ts"].get<std::string>());
                }
            });
        }
        for (auto& t : senders) t.join();
        for (const auto& f : failures) {
            if (!f.empty()) RC_FAIL(f);
        }
        for (const auto& gw : gateways) RC_ASSERT(test::wait_applied(gw->port(), 60s));

        const auto model = test::edge_model::of(ops);
        auto read = test::read_edge_model(ioc, conns, map);
        if (auto* e = std::get_if<std::string>(&read)) RC_FAIL(*e);
        const auto& actual = std::get<test::edge_model>(read);
        RC_ASSERT(actual.rows == model.rows);
        RC_ASSERT(actual.counts == model.counts);
    });
    EXPECT_TRUE(ok);
    for (auto& gw : gateways) EXPECT_EQ(gw->terminate(), 0) << gw->log_tail();
}

}  // namespace
}  // namespace cairn
