// Several gateways on the same shards (issue 16): random ops, each sent to one of two real cairnd
// (node ids 1 and 2) at random, both sending at once, must leave the shards exactly the model's
// rows: for edge and node ops the forward rows, backward rows and counts of the ops applied once in
// timestamp order; for entities the last writer of each id, for cells the first version of each
// cell, for counters every acknowledged increment counted once. Timestamps are given in the
// writes (edges, entities) from a narrow window, so that both gateways stamp ops of the same
// millisecond (their node ids break those ties).
#include <utility>

#include "core/cells.hpp"
#include "core/document.hpp"
#include "core/edge_rules.hpp"
#include "core/entities.hpp"
#include "core/hlc.hpp"
#include "core/node_op.hpp"
#include "core/shard_map.hpp"
#include "shards/cell_store.hpp"
#include "shards/counter_store.hpp"
#include "shards/edge_store.hpp"
#include "shards/entity_store.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/shard_up.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/edge_model.hpp"
#include "tests/support/test_shards.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <map>
#include <thread>

namespace cairn {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using namespace std::chrono_literals;
const std::string gateways_db = "cairn_prop_gateways";

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
    test::fresh_database(gateways_db);
    std::vector<std::unique_ptr<test::cairnd_process>> gateways;
    for (std::uint64_t node : {1, 2}) {
        test::cairnd_options o;
        o.database = gateways_db;
        o.node_id = node;
        gateways.push_back(std::make_unique<test::cairnd_process>(o));
        ASSERT_TRUE(gateways.back()->start()) << gateways.back()->log_tail();
    }
    // The fresh database's tables are made by the gateways' workers, after /livez answers: the cases
    // below empty them first (a DELETE before they exist failed CI once, on a busy machine).
    for (const auto& gw : gateways) {
        for (std::size_t shard = 0; shard < 2; ++shard) ASSERT_TRUE(test::wait_shard_up(gw->port(), shard)) << gw->log_tail();
    }
    const auto endpoints = test::test_shards();
    const auto map = core::shard_map::equal_ranges(2);
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], gateways_db)));
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


// ---- entities, cells and counters ------------------------------------------------------------

const std::string models_db = "cairn_prop_gateways_models";

// One write of the second property: a body to send, and what the model needs of it.
struct model_write {
    enum class what { entity_put, entity_delete, cell, counter } kind{};
    int key = 0;             // entity id or cell row (0..4)
    std::string column;      // cell
    std::int64_t ref_key = 0;
    std::int64_t ts_ms = 0;  // entities: the client's ts
    nlohmann::json body;     // entity or cell body; counter: the increment
    core::counter_op increment;
};

std::string id_text(int key) {
    core::id16 id{};
    id[0] = 0x5a;
    id[15] = static_cast<unsigned char>(key);
    return core::format_id16(id);
}

std::string id_bytes(int key) {
    core::id16 id{};
    id[0] = 0x5a;
    id[15] = static_cast<unsigned char>(key);
    return std::string(core::id16_bytes(id));
}

rc::Gen<model_write> gen_model_write(std::int64_t base_ms, std::int64_t now_ms) {
    return rc::gen::exec([base_ms, now_ms] {
        model_write w;
        w.kind = *rc::gen::element(model_write::what::entity_put, model_write::what::entity_put, model_write::what::entity_delete,
                                   model_write::what::cell, model_write::what::counter);
        w.key = *rc::gen::inRange(0, 5);
        // A long body now and then (stored compressed); the write's index is added when it is sent.
        const auto pad = std::string(*rc::gen::element<std::size_t>(1, 2, 700), *rc::gen::element('a', 'b'));
        w.body = {{"pad", pad}};
        switch (w.kind) {
            case model_write::what::entity_put:
            case model_write::what::entity_delete: w.ts_ms = base_ms + *rc::gen::inRange(0, 3); break;
            case model_write::what::cell:
                w.column = *rc::gen::element<std::string>("BASE", "status");
                w.ref_key = *rc::gen::inRange<std::int64_t>(1, 3);
                break;
            case model_write::what::counter: {
                auto& c = w.increment;
                c.metric = "plays";
                c.dimensions = {std::to_string(*rc::gen::inRange(1, 4)), std::to_string(*rc::gen::inRange(1, 7)),
                                *rc::gen::element<std::string>("DE", "FR", "US"), *rc::gen::element<std::string>("ios", "web")};
                c.time_ms = now_ms - *rc::gen::inRange<std::int64_t>(0, 2 * core::ms_per_hour);
                c.delta = *rc::gen::inRange<std::int64_t>(-2, 5);
                break;
            }
        }
        return w;
    });
}

// The request of w (its index i marks the body, so that the model can tell writes apart): (method,
// target, body).
std::tuple<std::string, std::string, std::string> http_request_of(model_write& w, std::size_t i) {
    w.body["w"] = i;
    switch (w.kind) {
        case model_write::what::entity_put:
            return {"PUT", fmt::format("/v1/entities/user/{}?ts={}", id_text(w.key), w.ts_ms), w.body.dump()};
        case model_write::what::entity_delete:
            return {"DELETE", fmt::format("/v1/entities/user/{}?ts={}", id_text(w.key), w.ts_ms), ""};
        case model_write::what::cell:
            return {"POST", "/v1/cells/users",
                    json{{"row_key", id_text(w.key)}, {"column", w.column}, {"ref_key", w.ref_key}, {"body", w.body}}.dump()};
        case model_write::what::counter: {
            const auto& c = w.increment;
            json inc{{"dimensions", {{"owner_id", std::stoll(c.dimensions[0])}, {"track_id", std::stoll(c.dimensions[1])},
                                     {"country", c.dimensions[2]}, {"app", c.dimensions[3]}}},
                     {"time", c.time_ms},
                     {"delta", c.delta}};
            return {"POST", "/v1/counters/plays", json{{"increments", json::array({inc})}}.dump()};
        }
    }
    return {};
}

// What a body is stored as: its msgpack (nlohmann writes the smallest forms, as cairnd does, and a
// JSON object's keys in sorted order, which is the order the test writes them in), encoded.
std::string stored_body(const json& body) {
    const auto mp = json::to_msgpack(body);
    return core::encode_body(std::string(mp.begin(), mp.end()), 512);
}

TEST(gateways_convergence, entities_cells_and_counters_written_through_two_gateways_end_in_the_model) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(models_db);
    const auto catalog = test::counter_example_catalog();
    ASSERT_EQ(catalog.metrics.size(), 1u);
    const auto& metric = catalog.metrics[0];
    std::vector<std::unique_ptr<test::cairnd_process>> gateways;
    for (std::uint64_t node : {1, 2}) {
        test::cairnd_options o;
        o.database = models_db;
        o.node_id = node;
        o.extra_toml = "[entities]\nkinds = [\"user\"]\n[cells]\ntables = [\"users\"]\n" + test::counter_example_toml();
        gateways.push_back(std::make_unique<test::cairnd_process>(o));
        ASSERT_TRUE(gateways.back()->start()) << gateways.back()->log_tail();
    }
    // The fresh database's tables are made by the gateways' workers, after /livez answers: the cases
    // below empty them first (a DELETE before they exist failed CI once, on a busy machine).
    for (const auto& gw : gateways) {
        for (std::size_t shard = 0; shard < 2; ++shard) ASSERT_TRUE(test::wait_shard_up(gw->port(), shard)) << gw->log_tail();
    }
    const auto endpoints = test::test_shards();
    asio::io_context ioc;
    std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
    for (std::size_t i = 0; i < 2; ++i) {
        conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[i], models_db)));
        ASSERT_TRUE(test::run_on(ioc, conns.back()->async_connect()));
    }
    const auto now_ms = static_cast<std::int64_t>(core::system_wall_clock_ms());
    const std::int64_t base_ms = now_ms - 60'000;
    std::vector<std::string> tables{"entities", "cells_users", "counter_ops"};
    for (const auto& t : metric.tables) tables.push_back(t.sql_name());

    const bool ok = rc::check("entity, cell and counter writes split across two gateways converge", [&] {
        auto writes = *rc::gen::container<std::vector<model_write>>(gen_model_write(base_ms, now_ms));
        const auto via = *rc::gen::container<std::vector<bool>>(writes.size(), rc::gen::arbitrary<bool>());
        for (auto& c : conns) {
            for (const auto& t : tables) {
                // A table a gateway has not created yet (nothing of its model applied so far) is empty.
                auto r = test::run_on(ioc, c->async_execute("DELETE FROM " + t));
                RC_ASSERT(r.has_value() || shards::tables_missing(*c));
            }
        }
        std::vector<int> status(writes.size(), 0);
        std::vector<std::uint64_t> acked_ts(writes.size(), 0);
        std::array<std::string, 2> failures;
        std::array<std::thread, 2> senders;
        for (std::size_t g = 0; g < 2; ++g) {
            senders[g] = std::thread([&, g] {
                test::http_connection conn(gateways[g]->port());
                for (std::size_t i = 0; i < writes.size(); ++i) {
                    if (via[i] != (g == 1)) continue;
                    const auto [method, target, body] = http_request_of(writes[i], i);
                    auto r = conn.send(method, target, body);
                    const bool cell_taken = r && r->status == 409 && writes[i].kind == model_write::what::cell;
                    if (!r || (r->status != 202 && !cell_taken)) {
                        failures[g] = method + " " + target + " " + body + ": " + (r ? std::to_string(r->status) + " " + r->body : "no answer");
                        return;
                    }
                    status[i] = r->status;
                    if (r->status == 202 && writes[i].kind != model_write::what::counter) {
                        acked_ts[i] = std::stoull(json::parse(r->body)["ts"].get<std::string>());
                    }
                }
            });
        }
        for (auto& t : senders) t.join();
        for (const auto& f : failures) {
            if (!f.empty()) RC_FAIL(f);
        }
        for (const auto& gw : gateways) RC_ASSERT(test::wait_applied(gw->port(), 60s));

        // The model: per entity id the greatest ts (a delete as a tombstone), per cell the smallest ts
        // among the accepted writes, every accepted increment once.
        std::map<std::string, std::pair<std::uint64_t, std::optional<std::string>>> entities;  // id -> (ts, body)
        std::map<std::tuple<std::string, std::string, std::int64_t>, std::pair<std::uint64_t, std::string>> cells;
        std::vector<core::op> increments;
        for (std::size_t i = 0; i < writes.size(); ++i) {
            const auto& w = writes[i];
            if (status[i] != 202) continue;
            switch (w.kind) {
                case model_write::what::entity_put:
                case model_write::what::entity_delete: {
                    // Two gateways may stamp the same ts (a client's ts, the same millisecond): then
                    // the entities' rule decides, as on the shard.
                    const bool deleted = w.kind == model_write::what::entity_delete;
                    const auto body = deleted ? std::string() : stored_body(w.body);
                    auto it = entities.find(id_bytes(w.key));
                    if (it == entities.end() ||
                        core::entity_version_wins(acked_ts[i], deleted, body, it->second.first, !it->second.second.has_value(),
                                                  it->second.second.value_or(std::string()))) {
                        entities[id_bytes(w.key)] = {acked_ts[i], deleted ? std::nullopt : std::optional(body)};
                    }
                    break;
                }
                case model_write::what::cell: {
                    const auto key = std::tuple{id_bytes(w.key), w.column, w.ref_key};
                    auto it = cells.find(key);
                    const auto body = stored_body(w.body);
                    if (it == cells.end() || core::cell_version_wins(acked_ts[i], body, it->second.first, it->second.second)) {
                        cells[key] = {acked_ts[i], body};
                    }
                    break;
                }
                case model_write::what::counter: {
                    core::op o;
                    o.body = w.increment;
                    increments.push_back(std::move(o));
                    break;
                }
            }
        }

        // What the shards hold, each row on the shard of its key.
        const auto map = core::shard_map::equal_ranges(2);
        std::map<std::string, std::pair<std::uint64_t, std::optional<std::string>>> actual_entities;
        std::map<std::tuple<std::string, std::string, std::int64_t>, std::pair<std::uint64_t, std::string>> actual_cells;
        test::counter_rows actual_counts;
        for (std::uint32_t s = 0; s < 2; ++s) {
            auto es = test::run_on(ioc, shards::async_dump_entities(*conns[s]));
            RC_ASSERT(es.has_value() || shards::tables_missing(*conns[s]));
            for (const auto& e : es ? es.value() : std::vector<shards::stored_entity>{}) {
                RC_ASSERT(map.shard_of_hash(core::hash_bytes(e.id)) == s);
                actual_entities[e.id] = {e.ts, e.deleted ? std::nullopt : std::optional(e.body)};
            }
            auto cs = test::run_on(ioc, shards::async_dump_cells(*conns[s], "users"));
            RC_ASSERT(cs.has_value() || shards::tables_missing(*conns[s]));
            for (const auto& c : cs ? cs.value() : std::vector<shards::stored_cell>{}) {
                RC_ASSERT(map.shard_of_hash(core::hash_bytes(c.row_key)) == s);
                actual_cells[{c.row_key, c.column, c.ref_key}] = {c.ts, c.body};
            }
            for (const auto& t : metric.tables) {
                auto rows = test::run_on(ioc, shards::async_dump_counter_table(*conns[s], metric, t));
                RC_ASSERT(rows.has_value() || shards::tables_missing(*conns[s]));
                if (!rows) continue;
                for (auto& [key, count] : rows.value()) {
                    if (count != 0) actual_counts[{t.name, key}] += count;
                }
            }
        }
        // How often the interesting cases come up (printed by rapidcheck).
        std::map<std::string, int> puts_per_id;
        for (std::size_t i = 0; i < writes.size(); ++i) {
            if (status[i] == 202 && writes[i].kind == model_write::what::entity_put) ++puts_per_id[id_text(writes[i].key)];
        }
        RC_CLASSIFY(std::any_of(puts_per_id.begin(), puts_per_id.end(), [](const auto& kv) { return kv.second > 1; }),
                    "an entity written twice");
        RC_CLASSIFY(std::count(status.begin(), status.end(), 409) > 0, "a cell write refused (409)");
        RC_ASSERT(actual_entities == entities);
        RC_ASSERT(actual_cells == cells);
        RC_ASSERT(actual_counts == test::counter_model_of(metric, increments));
    });
    EXPECT_TRUE(ok);
    for (auto& gw : gateways) EXPECT_EQ(gw->terminate(), 0) << gw->log_tail();
}

}  // namespace
}  // namespace cairn
