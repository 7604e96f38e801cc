// `cairn replay` and `cairn journal export / import` end to end (issue 7): the real binary against
// real cairnds and real shards. A shard that lost its rows gets them back exactly from a replay;
// replaying again changes nothing (counters are not counted twice); a dead gateway's journal,
// exported, is applied by a second, fresh gateway; a damaged export file is refused.
#include "tests/integration/cli_support.hpp"
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/e2e.hpp"

#include "core/hlc.hpp"
#include "journal/journal.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// Every row of every table of db on shard s, as sorted text lines per table; counter_ops is left
// out (its applied_ms says when, which a replay may change), the gateways' own tables too (their
// applied marks and leases say which gateway applied what, not what the data is), and so are edge_counts rows of count 0
// (a count that went up and down again reads as no row: the same count) and the edges' prev_state
// (the merging upsert's scratch: the state before the last upsert, which a replay rewrites).
std::map<std::string, std::vector<std::string>> shard_rows(const shard_endpoint& s, const std::string& db) {
    std::map<std::string, std::vector<std::string>> out;
    auto tables = query_sql(s, "SHOW TABLES", db);
    EXPECT_TRUE(tables) << (tables ? "" : tables.error().message());
    if (!tables) return out;
    for (const auto& t : tables.value()) {
        if (t == "counter_ops" || t == "applied_marks" || t == "late_marks" || t == "gateway_leases" || t == "shard_identity") continue;
        const std::string columns =
            t == "edges" ? "graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set" : "*";
        auto rows = query_sql(s, fmt::format("SELECT {} FROM `{}`", columns, t), db);
        EXPECT_TRUE(rows) << t;
        if (!rows) continue;
        auto lines = rows.value();
        if (t == "edge_counts") {
            std::erase_if(lines, [](const std::string& l) { return l.ends_with("\t0"); });
        }
        std::sort(lines.begin(), lines.end());
        out[t] = std::move(lines);
    }
    return out;
}

std::size_t row_count(const std::map<std::string, std::vector<std::string>>& rows) {
    std::size_t n = 0;
    for (const auto& [t, lines] : rows) n += lines.size();
    return n;
}

class cli_replay : public cairnd_test {
protected:
    void start(const std::string& db, const std::string& more_toml = {}) {
        cairnd_options o;
        o.extra_toml = counter_example_toml() + more_toml;
        start_cairnd(db, std::move(o));
        url_ = fmt::format("http://127.0.0.1:{}", cairnd_->port());
    }
    cli_run cairn(std::vector<std::string> args, const std::string& url = {}) {
        args.insert(args.begin(), {"--url", url.empty() ? url_ : url});
        return run_cairn(args);
    }
    json cairn_json(std::vector<std::string> args, const std::string& url = {}) {
        args.push_back("--json");
        auto r = cairn(args, url);
        EXPECT_EQ(r.code, 0) << r.err << r.out;
        return r.code == 0 ? r.json() : json();
    }
    // 120 edges among nodes 1..40 (some removed again) and 60 play increments: 180 ops.
    void write_workload(std::uint16_t to) {
        for (int i = 0; i < 120; ++i) {
            const std::string state = i % 7 == 0 ? R"(, "state": "removed")" : "";
            auto w = http_post(to, "/v1/graphs/follows/edges",
                               fmt::format(R"({{"source_id": {}, "destination_id": {}{}}})", i % 40 + 1, (i * 7) % 40 + 1, state));
            ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
        }
        std::string plays;
        for (int i = 0; i < 60; ++i) {
            plays += fmt::format(R"({}{{"dimensions": {{"owner_id": 9, "track_id": {}, "country": "{}", "app": "web"}}, "delta": {}}})",
                                 i ? "," : "", i % 6 + 1, i % 2 ? "DE" : "FR", i % 3 + 1);
        }
        auto w = http_post(to, "/v1/counters/plays", fmt::format(R"({{"increments": [{}]}})", plays));
        ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
        ASSERT_TRUE(wait_applied(to, 30s));
    }

    std::string url_;
};

TEST_F(cli_replay, a_replay_restores_a_shard_that_lost_its_rows_exactly_and_replaying_again_changes_nothing) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_replay";
    start(db);
    write_workload(port());
    const auto shards = test_shards();
    const auto before0 = shard_rows(shards[0], db);
    const auto before1 = shard_rows(shards[1], db);
    ASSERT_GT(row_count(before1), 50u);
    ASSERT_GT(row_count(before0), 50u);

    // Shard 1 loses every row (its counter op ids too, as a restore from an empty backup would).
    std::vector<std::string> wipe;
    for (const auto& [t, lines] : before1) wipe.push_back(fmt::format("DELETE FROM `{}`", t));
    wipe.push_back("DELETE FROM counter_ops");
    ASSERT_TRUE(exec_sql(shards[1], wipe, db));
    ASSERT_EQ(row_count(shard_rows(shards[1], db)), 0u);

    // A dry run counts and changes nothing; filters narrow it.
    auto dry = cairn_json({"replay", "--dry-run"});
    EXPECT_EQ(dry["matched"], 180) << dry.dump();  // 120 edge ops, 60 increments
    EXPECT_EQ(dry["replayed"], 0);
    EXPECT_EQ(row_count(shard_rows(shards[1], db)), 0u);
    EXPECT_EQ(cairn_json({"replay", "--dry-run", "--model", "counter"})["matched"], 60);
    EXPECT_EQ(cairn_json({"replay", "--dry-run", "--model", "edge", "--name", "follows"})["matched"], 120);
    EXPECT_EQ(cairn_json({"replay", "--dry-run", "--name", "nosuchgraph"})["matched"], 0);
    // Node 1 is the source of i = 0, 40, 80 and the destination of the same (7i % 40 == 0); track 1
    // has the increments i = 0, 6, ..., 54.
    EXPECT_EQ(cairn_json({"replay", "--dry-run", "--model", "edge", "--key", "1"})["matched"], 3);
    EXPECT_EQ(cairn_json({"replay", "--dry-run", "--key", "1"})["matched"], 13);
    const auto shard1_only = cairn_json({"replay", "--dry-run", "--shard", "1"});
    EXPECT_GT(shard1_only["matched"].get<int>(), 0);
    EXPECT_LT(shard1_only["matched"].get<int>(), 180);

    // The replay of shard 1's ops, waited for, brings back exactly what was there.
    auto r = cairn_json({"replay", "--shard", "1", "--wait", "--batch", "50"});
    EXPECT_EQ(r["replayed"], shard1_only["matched"]) << r.dump();
    EXPECT_EQ(r["applied"], true);
    EXPECT_EQ(shard_rows(shards[1], db), before1);
    EXPECT_EQ(shard_rows(shards[0], db), before0);

    // Replaying everything again, twice, rate-limited: idempotent, and no increment counted twice.
    for (int round = 0; round < 2; ++round) {
        auto again = cairn_json({"replay", "--to-seq", "180", "--wait", "--rate", "2000"});
        EXPECT_EQ(again["replayed"], 180) << again.dump();
    }
    EXPECT_EQ(shard_rows(shards[0], db), before0);
    EXPECT_EQ(shard_rows(shards[1], db), before1);

    // The text form says what it did; bad arguments are usage errors.
    auto text = cairn({"replay", "--dry-run", "--model", "counter", "--to-seq", "180"});
    EXPECT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("would replay 60"), std::string::npos) << text.out;
    EXPECT_EQ(cairn({"replay", "--model", "nosuchmodel"}).code, 1);
    EXPECT_EQ(cairn({"replay", "--from-seq", "9", "--to-seq", "3"}).code, 1);
    EXPECT_EQ(cairn({"replay", "--since", "yesterday"}).code, 2);
    EXPECT_EQ(cairn({"replay", "--shard", "7"}).code, 1);
}

TEST_F(cli_replay, an_exported_journal_is_applied_by_a_second_fresh_gateway_once_however_often_it_is_imported) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db_a = "cairn_cli_export_a";
    const std::string db_b = "cairn_cli_export_b";
    start(db_a);
    write_workload(port());
    const auto shards = test_shards();
    const auto rows_a0 = shard_rows(shards[0], db_a);
    const auto rows_a1 = shard_rows(shards[1], db_a);
    const std::string journal_dir = cairnd_->journal_dir();
    // Gateway A dies; its journal directory is what is left.
    cairnd_->kill9();

    const std::string dir = make_temp_dir("cairn-cli-export");
    const std::string file = dir + "/a.cjx";
    auto exported = run_cairn({"journal", "export", "--dir", journal_dir, "--out", file, "--json"});
    ASSERT_EQ(exported.code, 0) << exported.err;
    EXPECT_EQ(exported.json()["records"], 180) << exported.out;
    EXPECT_EQ(exported.json()["first_seq"], 1);
    auto part = run_cairn({"journal", "export", "--dir", journal_dir, "--out", dir + "/part.cjx", "--from-seq", "101",
                           "--to-seq", "120", "--json"});
    ASSERT_EQ(part.code, 0) << part.err;
    EXPECT_EQ(part.json()["records"], 20);

    // Gateway B, on fresh databases, imports it: the same rows as A wrote.
    cairnd_.reset();
    start(db_b);
    auto dry = cairn_json({"journal", "import", file, "--dry-run"});
    EXPECT_EQ(dry["matched"], 180) << dry.dump();
    EXPECT_EQ(row_count(shard_rows(shards[0], db_b)) + row_count(shard_rows(shards[1], db_b)), 0u);
    for (int round = 0; round < 2; ++round) {
        auto imported = cairn_json({"journal", "import", file, "--wait"});
        EXPECT_EQ(imported["replayed"], 180) << imported.dump();
        EXPECT_EQ(imported["applied"], true);
        EXPECT_EQ(shard_rows(shards[0], db_b), rows_a0);
        EXPECT_EQ(shard_rows(shards[1], db_b), rows_a1);
    }
    // replay --file takes filters: seqs of the source journal, and only counters (none of them new).
    EXPECT_EQ(cairn_json({"replay", "--file", file, "--from-seq", "101", "--to-seq", "120", "--dry-run"})["matched"], 20);
    auto counters = cairn_json({"replay", "--file", file, "--model", "counter", "--wait"});
    EXPECT_EQ(counters["matched"], 60);
    EXPECT_EQ(shard_rows(shards[1], db_b), rows_a1);

    // A damaged file is refused (exit 6), a truncated one too, and a missing one is a usage error.
    std::string bytes;
    {
        std::ifstream in(file, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_GT(bytes.size(), 200u);
    std::string flipped = bytes;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
    std::ofstream(dir + "/flipped.cjx", std::ios::binary) << flipped;
    std::ofstream(dir + "/cut.cjx", std::ios::binary) << bytes.substr(0, bytes.size() - 9);
    auto bad = cairn({"journal", "import", dir + "/flipped.cjx"});
    EXPECT_EQ(bad.code, 6) << bad.err;
    auto cut = cairn({"journal", "import", dir + "/cut.cjx", "--dry-run"});
    EXPECT_EQ(cut.code, 6) << cut.err;
    EXPECT_NE(cut.err.find("damaged"), std::string::npos) << cut.err;
    EXPECT_EQ(cairn({"journal", "import", dir + "/none.cjx"}).code, 2);
    EXPECT_EQ(run_cairn({"journal", "export", "--dir", dir + "/nothing", "--out", dir + "/x.cjx"}).code, 2);
    std::filesystem::remove_all(dir);
}

// Increments older than counters.op_ids_keep_hours are skipped with a warning (their op ids may be
// gone from the shards: replaying them could count them twice), unless the operator insists.
// An entity written before an index existed, replayed after the index was created (and its
// back-fill had finished), is journaled with the index's row: the replay computes the rows of the
// indexes that exist now, so the index finds the entity the replay restored.
TEST_F(cli_replay, a_replayed_entity_carries_the_rows_of_indexes_created_since_it_was_written) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_replay_index";
    start(db, "[entities]\nkinds = [\"user\"]\n");
    const std::string id = "00000000-0000-0000-0000-0000000000a7";
    auto w = http_request(port(), "PUT", "/v1/entities/user/" + id + "?wait=applied", R"({"age": 41, "name": "ada"})");
    ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
    // The shards lose the entity (a restore from an old backup), then an index on age is created.
    // A shard whose worker has not made its tables yet (it makes them when it first connects) holds
    // no entity either: CI once met that shard, and a DELETE there fails.
    for (const auto& sh : test_shards()) {
        auto has = query_sql(sh, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'entities'", db);
        ASSERT_TRUE(has && !has.value().empty());
        if (has.value().front() != "0") {
            ASSERT_TRUE(exec_sql(sh, {"DELETE FROM entities"}, db));
        }
    }
    auto created = http_post(port(), "/v1/indexes",
                             R"({"name": "users_by_age", "kind": "user", "properties": [{"name": "age", "type": "int"}]})");
    ASSERT_TRUE(created && created->status == 201) << (created ? created->body : "no answer");
    json progress;
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
        auto p = http_get(port(), "/v1/indexes/users_by_age/clean");
        if (p && p->status == 200) progress = json::parse(p->body);
        if (progress.value("state", "") == "done") break;
    }
    ASSERT_EQ(progress.value("state", ""), "done") << progress.dump();

    auto r = cairn_json({"replay", "--model", "entity", "--wait"});
    EXPECT_EQ(r["replayed"], 1) << r.dump();
    auto found = http_get(port(), "/v1/entities/user/by/users_by_age?age=41");
    ASSERT_TRUE(found && found->status == 200) << (found ? found->body : "no answer");
    const auto entities = json::parse(found->body)["entities"];
    ASSERT_EQ(entities.size(), 1u) << found->body;
    EXPECT_EQ(entities[0]["body"]["name"], "ada");
}

TEST_F(cli_replay, counter_increments_older_than_the_op_id_window_are_skipped_with_a_warning) {
    CAIRN_REQUIRE_SHARDS(2u);
    // A journal of another gateway (node 5): 3 plays stamped 200 h ago (the window is 168 h), 2 now.
    const std::string dir = make_temp_dir("cairn-cli-expired");
    const auto catalog = counter_example_catalog();
    const auto* plays = catalog.find("plays");
    ASSERT_NE(plays, nullptr);
    {
        core::hlc clock(5);
        journal::options o;
        o.path = dir + "/journal";
        o.size_bytes_max = 16ull << 20;
        o.node_id = 5;
        o.shard_count = 2;
        auto j = journal::journal::open(o, clock);
        ASSERT_TRUE(j) << j.error().message();
        const std::uint64_t now = core::system_wall_clock_ms();
        std::vector<core::op> ops;
        for (int i = 0; i < 5; ++i) {
            const std::uint64_t ms = i < 3 ? now - 200 * 3'600'000ull : now;
            core::counter_op c{"plays", {"9", std::to_string(i + 1), "DE", "web"}, static_cast<std::int64_t>(ms), 1, 0};
            c.shard_hash = core::counter_value_hash(plays->dimensions[1], c.dimensions[1]);
            ops.push_back(core::op{0, core::hlc_make(ms, 0, 5), std::move(c)});
        }
        std::promise<bool> done;
        j.value()->append(std::move(ops), {}, [&](core::result<journal::appended> r) { done.set_value(r.has_value()); });
        ASSERT_TRUE(done.get_future().get());
    }
    auto exported = run_cairn({"journal", "export", "--dir", dir + "/journal", "--out", dir + "/old.cjx"});
    ASSERT_EQ(exported.code, 0) << exported.err;

    start("cairn_cli_expired");
    auto r = cairn({"journal", "import", dir + "/old.cjx", "--wait", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.json()["matched"], 5) << r.out;
    EXPECT_EQ(r.json()["replayed"], 2);
    EXPECT_EQ(r.json()["expired_counters_skipped"], 3);
    EXPECT_NE(r.err.find("3 counter increments are older than counters.op_ids_keep_hours"), std::string::npos) << r.err;
    auto total = http_get(port(), "/v1/counters/plays/total?track_id=4&from=2020-01-01&to=2100-01-01");
    ASSERT_TRUE(total);
    EXPECT_EQ(nlohmann::json::parse(total->body)["total"], 1) << total->body;
    // Insisting sends them; the apply path refuses them (op_expired) rather than risk a second count.
    auto forced = cairn_json({"journal", "import", dir + "/old.cjx", "--include-expired-counters", "--dry-run"});
    EXPECT_EQ(forced["expired_counters_skipped"], 0);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cairn::test
