// The `cairn` CLI end to end (issue 7): the real binary against a real cairnd and real shards.
// A poison op is dead-lettered, shown, edited, re-injected and applied; pause/resume holds and
// releases apply while writes are acknowledged; trace reports each state; --help of every
// subcommand leads with examples; --json output parses; settings come from flags, env, config.
#include "tests/integration/cli_support.hpp"
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/shard_tables.hpp"
#include "tests/support/wait.hpp"

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "journal/journal.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

class cli : public cairnd_test {
protected:
    void start(const std::string& db, const std::string& extra_toml = {}) {
        cairnd_options o;
        o.retry_attempts_max = 2;
        o.extra_toml = extra_toml;
        start_cairnd(db, o);
        url_ = fmt::format("http://127.0.0.1:{}", cairnd_->port());
    }
    // cairn with --url of this test's cairnd.
    cli_run cairn(std::vector<std::string> args) {
        args.insert(args.begin(), {"--url", url_});
        return run_cairn(args);
    }
    nlohmann::json cairn_json(std::vector<std::string> args) {
        args.push_back("--json");
        auto r = cairn(args);
        EXPECT_EQ(r.code, 0) << r.err << r.out;
        return r.code == 0 ? r.json() : nlohmann::json();
    }
    std::uint64_t write(const std::string& body) {
        auto w = http_post(cairnd_->port(), "/v1/graphs/follows/edges", body);
        EXPECT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
        return w && w->status == 202 ? nlohmann::json::parse(w->body)["seq"].get<std::uint64_t>() : 0;
    }
    // Polls `cairn trace seq --json` until its state is `state`; returns the last trace.
    nlohmann::json wait_trace(std::uint64_t seq, const std::string& state) {
        nlohmann::json t;
        (void)wait_until([&] {
            t = cairn_json({"trace", std::to_string(seq)});
            return t.value("state", "") == state;
        }, 30s);
        return t;
    }

    // cairnd with the entity kind "user", on shards that refuse any user whose body holds "poison".
    void start_users_refusing_poison(const std::string& db) {
        start(db, "[entities]\nkinds = [\"user\"]\n");
        ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
        add_entity_poison_trigger(db);
    }
    // Makes the shards refuse any entity whose body holds "poison" (once cairnd made the table).
    void add_entity_poison_trigger(const std::string& db) {
        for (const auto& s : test_shards()) {
            ASSERT_TRUE(wait_for_table(s, db, "entities")) << "no entities table on " << s.port;
            ASSERT_TRUE(exec_sql(s, {"CREATE TRIGGER poison BEFORE INSERT ON entities FOR EACH ROW "
                                     "IF LOCATE('poison', NEW.body) > 0 THEN "
                                     "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned body is refused'; END IF"},
                                 db));
        }
    }
    // Puts a user named "poison" (age 7) and waits until it is a dead letter; its seq, 0 on failure.
    std::uint64_t put_dead_entity(http_client& c, const std::string& id) {
        auto w = c.send(http::verb::put, "/v1/entities/user/" + id, R"({"name": "poison", "age": 7})");
        EXPECT_TRUE(w.has_value()) << w.error().message();
        if (!w || w.value().status != http::status::accepted) {
            ADD_FAILURE() << (w ? w.value().body : "no answer");
            return 0;
        }
        const auto seq = nlohmann::json::parse(w.value().body)["seq"].get<std::uint64_t>();
        const auto t = wait_trace(seq, "dead");
        EXPECT_EQ(t["state"], "dead") << t.dump();
        return t["state"] == "dead" ? seq : 0;
    }
    // The shard on which seq is a dead letter, as text; empty if none.
    std::string dead_shard(std::uint64_t seq) {
        const auto t = cairn_json({"trace", std::to_string(seq)});
        for (const auto& s : t["shards"]) {
            if (s["state"] == "dead") return std::to_string(s["shard"].get<int>());
        }
        ADD_FAILURE() << "seq " << seq << " is a dead letter on no shard: " << t.dump();
        return {};
    }

    std::string url_;
};

// The shard refuses the forward row of any edge at position 666; the same edge elsewhere is fine
// (once cairnd made the table).
void add_poison_trigger(const std::string& db) {
    for (const auto& s : test_shards()) {
        ASSERT_TRUE(wait_for_table(s, db, "edges")) << "no edges table on " << s.port;
        ASSERT_TRUE(exec_sql(s, {"CREATE TRIGGER poison BEFORE INSERT ON edges FOR EACH ROW "
                                 "IF NEW.position = 666 AND NEW.direction = 0 THEN "
                                 "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'position 666 is refused'; END IF"},
                             db));
    }
}

// The first id from `from` on shard `shard` of the test's two shards.
std::int64_t id_on_shard(core::shard_index shard, std::int64_t from) {
    const auto map = core::shard_map::equal_ranges(2);
    while (map.shard_of_id(from) != shard) ++from;
    return from;
}

TEST_F(cli, a_dead_letter_is_shown_edited_reinjected_and_applied) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_dead";
    start(db);
    ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
    add_poison_trigger(db);
    // A self-loop: both of its rows live on one shard, so its dead letter is edited in place.
    const std::int64_t c = id_on_shard(1, 5);
    const std::uint64_t seq = write(fmt::format(R"({{"source_id": {0}, "destination_id": {0}, "position": 666}})", c));
    ASSERT_GT(seq, 0u);

    // Refused twice (retry_attempts_max = 2), then dead; trace says so with the shard's error.
    auto dead_trace = wait_trace(seq, "dead");
    ASSERT_EQ(dead_trace["state"], "dead") << dead_trace.dump();
    std::uint32_t shard = 0;
    for (const auto& s : dead_trace["shards"]) {
        if (s["state"] == "dead") {
            shard = s["shard"].get<std::uint32_t>();
            EXPECT_NE(s["last_error"].get<std::string>().find("position 666 is refused"), std::string::npos) << s.dump();
        }
    }
    EXPECT_EQ(shard, 1u);
    const std::string shard_s = std::to_string(shard);
    const std::string seq_s = std::to_string(seq);

    auto ls = cairn_json({"dead", "ls"});
    ASSERT_EQ(ls["dead"].size(), 1u) << ls.dump();
    EXPECT_EQ(ls["dead"][0]["seq"], seq);
    EXPECT_EQ(ls["dead"][0]["op"]["position"], 666);
    EXPECT_EQ(cairn_json({"dead", "ls", "--error", "no such text"})["dead"].size(), 0u);
    EXPECT_EQ(cairn_json({"dead", "ls", "--error", "666 is refused", "--shard", shard_s})["dead"].size(), 1u);
    auto table = cairn({"dead", "ls"});
    EXPECT_EQ(table.code, 0);
    EXPECT_NE(table.out.find("LAST ERROR"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("position 666 is refused"), std::string::npos) << table.out;

    auto shown = cairn_json({"dead", "show", shard_s, seq_s});
    EXPECT_EQ(shown["attempts"], 2);
    ASSERT_EQ(shown["errors"].size(), 2u) << shown.dump();
    EXPECT_EQ(shown["op"]["graph"], "follows");
    EXPECT_EQ(shown["op"]["source_id"], c);

    // An edit is validated like a client write: a misspelt field is refused (exit 1), and nothing changes.
    nlohmann::json bad = shown["op"];
    bad["positon"] = 667;
    auto refused = cairn({"dead", "edit", shard_s, seq_s, "--op", bad.dump()});
    EXPECT_EQ(refused.code, 1) << refused.err;
    EXPECT_NE(refused.err.find("positon"), std::string::npos) << refused.err;
    EXPECT_EQ(cairn_json({"dead", "show", shard_s, seq_s})["op"]["position"], 666);

    nlohmann::json fixed = shown["op"];
    fixed["position"] = 667;
    auto edited = cairn_json({"dead", "edit", shard_s, seq_s, "--op", fixed.dump()});
    EXPECT_EQ(edited["routed"], "in_place") << edited.dump();
    EXPECT_EQ(edited["op"]["position"], 667);
    EXPECT_EQ(edited["op"]["ts"], shown["op"]["ts"]);
    // trace shows the op a retry will apply, and the journaled one it replaced.
    auto traced = cairn_json({"trace", seq_s});
    EXPECT_EQ(traced["op"]["position"], 667) << traced.dump();
    EXPECT_EQ(traced["journaled_op"]["position"], 666) << traced.dump();

    // Re-inject while this shard is paused: the task waits in the error queue with its last error.
    auto paused = cairn_json({"apply", "pause", "--shard", shard_s});
    EXPECT_EQ(paused["shards"][shard]["paused"], true);
    auto reinjected = cairn_json({"dead", "reinject", shard_s, seq_s});
    EXPECT_EQ(reinjected["reinjected"], 1);
    EXPECT_EQ(reinjected["attempts_reset"], true);
    auto queued = cairn_json({"trace", seq_s});
    EXPECT_EQ(queued["state"], "error_queue") << queued.dump();
    EXPECT_EQ(queued["shards"][shard]["attempts"], 0);
    auto errors = cairn_json({"errors", "ls"});
    ASSERT_EQ(errors["errors"].size(), 1u) << errors.dump();
    EXPECT_EQ(errors["errors"][0]["op"]["position"], 667);
    EXPECT_EQ(cairn_json({"dead", "ls"})["dead"].size(), 0u);

    // Resumed, the edited op goes through the normal apply path and lands on the shard.
    cairn_json({"apply", "resume", "--shard", shard_s});
    auto applied = wait_trace(seq, "applied");
    EXPECT_EQ(applied["state"], "applied") << applied.dump();
    // Applied, trace still shows the op the shard applied (the edit), beside the journaled one.
    EXPECT_EQ(applied["op"]["position"], 667) << applied.dump();
    EXPECT_EQ(applied["journaled_op"]["position"], 666) << applied.dump();
    EXPECT_TRUE(applied["shards"][shard].contains("edited_ms")) << applied.dump();
    // Applied late (after the mark passed its seq): the journal numbered it, and the shard's late mark
    // covers it, so a replica promoted later knows whether it holds it (docs/operations.md).
    // The mark is written after the journal commit that the trace shows, so it is waited for.
    EXPECT_TRUE(wait_for_value(test_shards()[shard], db, "SELECT late FROM late_marks WHERE node_id = 1", "1"));
    EXPECT_TRUE(query_sql(test_shards()[1 - shard], "SELECT late FROM late_marks", db).value().empty());
    auto applied_table = cairn({"trace", seq_s});
    EXPECT_NE(applied_table.out.find("pos 667"), std::string::npos) << applied_table.out;
    EXPECT_NE(applied_table.out.find("journaled as follows"), std::string::npos) << applied_table.out;
    auto edge = http_get(cairnd_->port(), fmt::format("/v1/graphs/follows/edges/{0}/{0}", c));
    ASSERT_TRUE(edge);
    ASSERT_EQ(edge->status, 200) << edge->body;
    EXPECT_EQ(nlohmann::json::parse(edge->body)["position"], 667);
    auto status = cairn_json({"status"});
    EXPECT_EQ(status["journal"]["dead_letters"], 0);
    EXPECT_EQ(status["journal"]["error_queue"], 0);
    // The error rate of the last minute: the poison op failed twice on its shard, then applied.
    EXPECT_EQ(status["shards"][shard]["failed_last_minute"], 2) << status.dump();
    EXPECT_GE(status["shards"][shard]["applied_last_minute"].get<int>(), 1);
    EXPECT_GT(status["shards"][shard]["error_rate"].get<double>(), 0.0);
    EXPECT_EQ(status["shards"][1 - shard]["failed_last_minute"], 0);
    EXPECT_EQ(status["shards"][1 - shard]["error_rate"], 0.0);
    auto status_table = cairn({"status"});
    EXPECT_NE(status_table.out.find("FAILED/MIN"), std::string::npos) << status_table.out;
    EXPECT_EQ(cairn_json({"errors", "ls"})["errors"].size(), 0u);

    // Two more poison ops: a page of one names the next page's command, with the filters (one quoted
    // for the shell), and that command works as printed.
    std::vector<std::uint64_t> more;
    for (std::int64_t n = c; more.size() < 2;) {
        n = id_on_shard(1, n + 1);
        more.push_back(write(fmt::format(R"({{"source_id": {0}, "destination_id": {0}, "position": 666}})", n)));
    }
    for (const auto m : more) ASSERT_EQ(wait_trace(m, "dead")["state"], "dead");
    const auto first_page = cairn({"dead", "ls", "--shard", shard_s, "--error", "666 is refused", "--limit", "1"});
    ASSERT_EQ(first_page.code, 0) << first_page.err;
    const auto more_at = first_page.out.find("more: ");
    ASSERT_NE(more_at, std::string::npos) << first_page.out;
    const std::string next = first_page.out.substr(more_at + 6, first_page.out.find('\n', more_at) - more_at - 6);
    EXPECT_EQ(next.rfind("cairn dead ls --shard " + shard_s + " --error '666 is refused' --limit 1 --cursor ", 0), 0u) << next;
    const auto second_page = run_program("/bin/sh", {"-c", shell_quote(CAIRN_CAIRN_PATH) + next.substr(5) + " --json"},
                                         {{"CAIRN_URL", url_}});
    ASSERT_EQ(second_page.code, 0) << next << ": " << second_page.err;
    const auto page = second_page.json();
    ASSERT_EQ(page["dead"].size(), 1u) << page.dump();
    EXPECT_EQ(page["dead"][0]["seq"], more[1]) << page.dump();
}

// An edge whose ends live on two shards: its forward row is refused on the source's shard while the
// backward row lands on the other. Edited in place and re-applied on the source's shard alone, the
// halves would disagree; the edit journals it again as a new write, so both halves end at 667.
TEST_F(cli, an_edited_dead_edge_with_ends_on_two_shards_lands_on_both) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_dead_halves";
    start(db);
    ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
    add_poison_trigger(db);
    const std::int64_t a = id_on_shard(0, 100);
    const std::int64_t b = id_on_shard(1, 100);
    const std::uint64_t seq = write(fmt::format(R"({{"source_id": {}, "destination_id": {}, "position": 666}})", a, b));
    ASSERT_GT(seq, 0u);
    ASSERT_EQ(wait_trace(seq, "dead")["state"], "dead");
    const std::string seq_s = std::to_string(seq);
    auto shown = cairn_json({"dead", "show", "0", seq_s});
    nlohmann::json fixed = shown["op"];
    fixed["position"] = 667;
    auto edited = cairn_json({"dead", "edit", "0", seq_s, "--op", fixed.dump()});
    ASSERT_EQ(edited["routed"], "new_write") << edited.dump();
    EXPECT_EQ(edited["shards"], nlohmann::json::array({0, 1}));
    EXPECT_EQ(edited["replaced"]["seq"], seq);
    EXPECT_EQ(edited["op"]["ts"], shown["op"]["ts"]);  // kept: the edit keeps its place in ts order
    EXPECT_EQ(cairn_json({"dead", "ls"})["dead"].size(), 0u);
    const auto new_seq = edited["seq"].get<std::uint64_t>();
    EXPECT_GT(new_seq, seq);
    EXPECT_EQ(wait_trace(new_seq, "applied")["state"], "applied");
    // The old seq says where its op went: replaced on shard 0 by the new write.
    auto old_trace = cairn_json({"trace", seq_s});
    EXPECT_EQ(old_trace["state"], "replaced") << old_trace.dump();
    EXPECT_EQ(old_trace["replaced_by"], new_seq) << old_trace.dump();
    EXPECT_EQ(old_trace["shards"][0]["state"], "replaced") << old_trace.dump();
    EXPECT_EQ(old_trace["shards"][0]["replaced_by"], new_seq) << old_trace.dump();
    EXPECT_NE(cairn({"trace", seq_s}).out.find(fmt::format("cairn trace {}", new_seq)), std::string::npos);
    // Both halves: the forward row (on a's shard) and the backward row (on b's).
    auto edge = http_get(cairnd_->port(), fmt::format("/v1/graphs/follows/edges/{}/{}", a, b));
    ASSERT_TRUE(edge && edge->status == 200) << (edge ? edge->body : "no answer");
    EXPECT_EQ(nlohmann::json::parse(edge->body)["position"], 667);
    auto page = http_get(cairnd_->port(), fmt::format("/v1/graphs/follows/nodes/{}/edges?direction=backward", b));
    ASSERT_TRUE(page && page->status == 200) << (page ? page->body : "no answer");
    const auto edges = nlohmann::json::parse(page->body)["edges"];
    ASSERT_EQ(edges.size(), 1u) << page->body;
    EXPECT_EQ(edges[0]["position"], 667) << page->body;
    // The dead letter is gone: editing it again is refused (exit 1).
    auto human = cairn({"dead", "edit", "0", seq_s, "--op", fixed.dump()});
    EXPECT_EQ(human.code, 1) << human.out;
    EXPECT_EQ(cairn_json({"status"})["journal"]["dead_letters"], 0);
}

// Entity dead letters are edited like edge ones (issue 14): the op renders with its body, an edit is
// validated as PUT /v1/entities/{kind}/{id} validates a write, and keeps its ts (last writer wins);
// an entity without indexes has its rows on one shard, so it is edited in place and re-injected.
TEST_F(cli, an_entity_dead_letter_is_edited_in_place_reinjected_and_applied) {
    CAIRN_REQUIRE_SHARDS(2u);
    start_users_refusing_poison("cairn_cli_dead_entity");
    const std::string id = "00112233-4455-6677-8899-aabbccddeeff";
    http_client c(cairnd_->port());
    const auto seq = put_dead_entity(c, id);
    ASSERT_NE(seq, 0u);
    const std::string shard_s = dead_shard(seq);
    ASSERT_FALSE(shard_s.empty());
    const std::string seq_s = std::to_string(seq);

    auto shown = cairn_json({"dead", "show", shard_s, seq_s});
    ASSERT_EQ(shown["op"]["model"], "entity") << shown.dump();
    EXPECT_EQ(shown["op"]["kind"], "user");
    EXPECT_EQ(shown["op"]["id"], id);
    EXPECT_EQ(shown["op"]["body"]["name"], "poison") << shown.dump();

    // Validated like a client write: an undeclared kind, a body that is not an object, a body on a
    // delete and an unknown field are refused (exit 1), naming the field; nothing changes.
    for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
             {"kind", "nobody"}, {"body", nlohmann::json::array({1})}, {"deleted", true}, {"colour", "red"}}) {
        nlohmann::json bad = shown["op"];
        bad[field] = value;
        auto refused = cairn({"dead", "edit", shard_s, seq_s, "--op", bad.dump()});
        EXPECT_EQ(refused.code, 1) << field << ": " << refused.out << refused.err;
        EXPECT_NE((refused.out + refused.err).find(field), std::string::npos) << refused.out << refused.err;
    }
    EXPECT_EQ(cairn_json({"dead", "show", shard_s, seq_s})["op"]["body"]["name"], "poison");

    nlohmann::json fixed = shown["op"];
    fixed["body"]["name"] = "fixed";
    auto edited = cairn_json({"dead", "edit", shard_s, seq_s, "--op", fixed.dump()});
    EXPECT_EQ(edited["routed"], "in_place") << edited.dump();
    EXPECT_EQ(edited["op"]["body"]["name"], "fixed") << edited.dump();
    EXPECT_EQ(edited["op"]["ts"], shown["op"]["ts"]);
    EXPECT_EQ(cairn_json({"dead", "reinject", shard_s, seq_s})["reinjected"], 1);
    EXPECT_EQ(wait_trace(seq, "applied")["state"], "applied");
    auto got = c.send(http::verb::get, "/v1/entities/user/" + id);
    ASSERT_TRUE(got.has_value()) << got.error().message();
    ASSERT_EQ(got.value().status, http::status::ok) << got.value().body;
    const auto entity = nlohmann::json::parse(got.value().body);
    EXPECT_EQ(entity["body"]["name"], "fixed") << got.value().body;
    EXPECT_EQ(entity["body"]["age"], 7) << got.value().body;
}

// A dead entity carries no row for an index created while it was dead (the back-fill could not see
// it). Re-injected, it is journaled again with the rows of the indexes that exist now, applied on
// every shard they live on, and the index finds it; trace shows the letter replaced by the new seq.
TEST_F(cli, a_dead_entity_reinjected_after_an_index_was_created_carries_the_new_index_rows) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_dead_reindex";
    start_users_refusing_poison(db);
    http_client c(cairnd_->port());
    const std::string id = "00112233-4455-6677-8899-aabbccddeeff";
    const auto seq = put_dead_entity(c, id);
    ASSERT_NE(seq, 0u);
    const std::string shard_s = dead_shard(seq);
    ASSERT_FALSE(shard_s.empty());
    for (const auto& s : test_shards()) ASSERT_TRUE(exec_sql(s, {"DROP TRIGGER poison"}, db));

    auto added = cairn({"index", "add", "users_by_name", "--kind", "user", "--property", "name:string:32"});
    ASSERT_EQ(added.code, 0) << added.err << added.out;
    const auto query = [&] {
        auto q = c.send(http::verb::get, "/v1/entities/user/by/users_by_name?name=poison");
        EXPECT_TRUE(q.has_value() && q.value().status == http::status::ok) << (q ? q.value().body : q.error().message());
        return q && q.value().status == http::status::ok ? nlohmann::json::parse(q.value().body)["entities"].size() : 99u;
    };
    EXPECT_EQ(query(), 0u);  // dead: neither the entity nor its row is there

    // The text form names the new write.
    const auto r = cairn({"dead", "reinject", shard_s, std::to_string(seq)});
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("re-injected 1 dead letter "), std::string::npos) << r.out;
    const std::string named = fmt::format("shard {} seq {} -> seq ", shard_s, seq);
    const auto at = r.out.find(named);
    ASSERT_NE(at, std::string::npos) << r.out;
    const auto new_seq = std::stoull(r.out.substr(at + named.size()));
    EXPECT_GT(new_seq, seq);
    EXPECT_EQ(wait_trace(new_seq, "applied")["state"], "applied");
    EXPECT_EQ(query(), 1u);
    const auto old = cairn_json({"trace", std::to_string(seq)});
    EXPECT_EQ(old["state"], "replaced") << old.dump();
    EXPECT_EQ(cairn_json({"status"})["journal"]["dead_letters"], 0);
}

TEST_F(cli, a_poison_op_can_be_dropped_only_with_confirmation) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_drop";
    start(db);
    ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
    add_poison_trigger(db);
    const std::uint64_t seq = write(R"({"source_id": 8, "destination_id": 9, "position": 666})");
    auto t = wait_trace(seq, "dead");
    ASSERT_EQ(t["state"], "dead") << t.dump();
    // No terminal and no --yes: refused with exit 4, nothing dropped.
    auto asked = cairn({"dead", "drop", "--all"});
    EXPECT_EQ(asked.code, 4) << asked.err;
    EXPECT_EQ(cairn_json({"dead", "ls"})["dead"].size(), 1u);
    auto none = cairn({"dead", "drop"});
    EXPECT_EQ(none.code, 2) << none.err;
    auto dropped = cairn_json({"dead", "drop", "--error", "666", "--yes"});
    EXPECT_EQ(dropped["dropped"], 1);
    EXPECT_EQ(cairn_json({"dead", "ls"})["dead"].size(), 0u);
    auto missing = cairn({"dead", "show", "0", std::to_string(seq)});
    EXPECT_EQ(missing.code, 1);
}

TEST_F(cli, pause_holds_apply_while_writes_are_acknowledged_and_resume_releases_it) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_cli_pause");
    ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
    auto paused = cairn_json({"apply", "pause", "--all"});
    ASSERT_EQ(paused["shards"].size(), 2u);
    for (const auto& s : paused["shards"]) EXPECT_EQ(s["paused"], true);
    // Pausing again as a person would (a table, not JSON) prints how to resume: a command that works
    // as printed (run below, word for word).
    const auto paused_table = cairn({"apply", "pause", "--all"});
    ASSERT_EQ(paused_table.code, 0) << paused_table.err;
    const std::string marker = "resume with: ";
    const auto hint_at = paused_table.out.find(marker);
    ASSERT_NE(hint_at, std::string::npos) << paused_table.out;
    const std::string hint =
        paused_table.out.substr(hint_at + marker.size(), paused_table.out.find('\n', hint_at) - hint_at - marker.size());
    std::vector<std::string> hint_words;
    for (std::istringstream words(hint); words;) {
        std::string w;
        if (words >> w) hint_words.push_back(w);
    }
    ASSERT_GE(hint_words.size(), 2u) << hint;
    ASSERT_EQ(hint_words.front(), "cairn") << hint;
    hint_words.erase(hint_words.begin());

    std::uint64_t last = 0;
    for (int i = 0; i < 20; ++i) last = write(fmt::format(R"({{"source_id": {}, "destination_id": {}}})", 100 + i, 200 + i));
    ASSERT_GT(last, 0u);
    auto journaled = cairn_json({"trace", std::to_string(last)});
    EXPECT_EQ(journaled["state"], "journaled") << journaled.dump();
    EXPECT_EQ(journaled["in_journal"], true);
    auto status = cairn_json({"status"});
    EXPECT_EQ(status["journal"]["last_seq"], last);
    EXPECT_FALSE(status["journal"]["oldest_unapplied"].is_null());
    std::uint64_t lag = 0;
    for (const auto& s : status["shards"]) {
        EXPECT_EQ(s["paused"], true);
        lag += s["lag_ops"].get<std::uint64_t>();
    }
    EXPECT_GT(lag, 0u);
    auto table = cairn({"status"});
    EXPECT_EQ(table.code, 0);
    EXPECT_NE(table.out.find("PAUSED"), std::string::npos) << table.out;
    // Still held: the edge is not on its shard.
    auto before = http_get(cairnd_->port(), "/v1/graphs/follows/edges/119/219");
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, 404);

    const auto resumed_by_hint = cairn(hint_words);
    ASSERT_EQ(resumed_by_hint.code, 0) << hint << ": " << resumed_by_hint.err;
    auto resumed = cairn_json({"status"});
    for (const auto& s : resumed["shards"]) EXPECT_EQ(s["paused"], false);
    ASSERT_TRUE(wait_applied(cairnd_->port(), 20s));
    auto applied = cairn_json({"trace", std::to_string(last)});
    EXPECT_EQ(applied["state"], "applied") << applied.dump();
    auto after = http_get(cairnd_->port(), "/v1/graphs/follows/edges/119/219");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200);
    EXPECT_TRUE(cairn_json({"status"})["journal"]["oldest_unapplied"].is_null());
    // A seq not written yet is a 404: exit 1.
    auto future = cairn({"trace", std::to_string(last + 1000)});
    EXPECT_EQ(future.code, 1) << future.err;
}

TEST_F(cli, settings_come_from_flags_then_environment_then_the_config_file) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string token = "cli-test-admin-token-0123456789";
    start("cairn_cli_settings", fmt::format("[[tokens]]\ntoken = \"cli-test-reader-token-0123456\"\nrole = \"read\"\n"
                                            "[[tokens]]\ntoken = \"{}\"\nrole = \"admin\"\n", token));
    const std::string port = std::to_string(cairnd_->port());
    // No token: 401, exit 5.
    EXPECT_EQ(run_cairn({"status"}, {{"CAIRN_URL", url_}}).code, 5);
    // A reader may look (status) but not act (retry-now is admin's: 403, exit 5).
    EXPECT_EQ(run_cairn({"status"}, {{"CAIRN_URL", url_}, {"CAIRN_TOKEN", "cli-test-reader-token-0123456"}}).code, 0);
    EXPECT_EQ(run_cairn({"errors", "retry-now"}, {{"CAIRN_URL", url_}, {"CAIRN_TOKEN", "cli-test-reader-token-0123456"}}).code,
              5);
    EXPECT_EQ(run_cairn({"status", "--json"}, {{"CAIRN_URL", url_}, {"CAIRN_TOKEN", token}}).code, 0);
    // A flag beats the environment.
    auto flagged = run_cairn({"--url", url_, "--token", token, "status"},
                             {{"CAIRN_URL", "http://127.0.0.1:1"}, {"CAIRN_TOKEN", "wrong-token-wrong-token"}});
    EXPECT_EQ(flagged.code, 0) << flagged.err;
    // The config file gives the listen port and the first admin token.
    const std::string dir = make_temp_dir("cairn-cli-config");
    const std::string config = dir + "/cairnd.toml";
    std::ofstream(config) << "[listen]\naddress = \"127.0.0.1\"\nport = " << port
                          << "\n[[tokens]]\ntoken = \"cli-test-reader-token-0123456\"\nrole = \"read\"\n"
                          << "[[tokens]]\ntoken = \"" << token << "\"\nrole = \"admin\"\n";
    auto from_config = run_cairn({"--config", config, "status", "--json"});
    EXPECT_EQ(from_config.code, 0) << from_config.err;
    EXPECT_EQ(from_config.json()["ready"], true);
    // The environment beats the config file.
    EXPECT_EQ(run_cairn({"--config", config, "status"}, {{"CAIRN_URL", "http://127.0.0.1:1"}}).code, 3);
    // Not an http:// URL, or an unknown flag: usage errors.
    EXPECT_EQ(run_cairn({"--url", "ftp://x", "status"}).code, 2);
    EXPECT_EQ(run_cairn({"status", "--no-such-flag"}).code, 2);
}

// cairn journal stat/check read the directory while its owner holds it (and its flock), as beside
// a running cairnd; the --json output parses and the numbers are the journal's.
TEST(cli_journal, stat_and_check_read_a_journal_that_is_open) {
    const std::string dir = make_temp_dir("cairn-cli-journal");
    core::hlc clock(3);
    journal::options o;
    o.path = dir;
    o.size_bytes_max = 16ull << 20;
    o.node_id = 3;
    o.shard_count = 2;
    auto j = journal::journal::open(o, clock);
    ASSERT_TRUE(j) << j.error().message();
    std::vector<core::op> ops;
    for (int i = 0; i < 4; ++i) ops.push_back(core::op{0, clock.now(), core::edge_op{"follows", i, i + 1}});
    std::promise<bool> done;
    j.value()->append(std::move(ops), {}, [&](core::result<journal::appended> r) { done.set_value(r.has_value()); });
    ASSERT_TRUE(done.get_future().get());

    auto stat = run_cairn({"journal", "stat", "--dir", dir, "--json"});
    ASSERT_EQ(stat.code, 0) << stat.err;
    const auto js = stat.json();
    EXPECT_EQ(js["node_id"], 3);
    EXPECT_EQ(js["ops"], 4);
    EXPECT_EQ(js["last_seq"], 4);
    EXPECT_EQ(js["cursors"].size(), 0u);  // nothing applied yet: no cursor stored


    // They read the directory, not cairnd: settings for cairnd are not needed, nor checked.
    EXPECT_EQ(run_cairn({"journal", "stat", "--dir", dir, "--url", "ftp://not-cairnd"}).code, 0);

    auto check = run_cairn({"journal", "check", "--dir", dir});
    EXPECT_EQ(check.code, 0) << check.err;
    EXPECT_NE(check.out.find("ok (4 ops"), std::string::npos) << check.out;

    auto missing = run_cairn({"journal", "stat", "--dir", dir + "/nothing"});
    EXPECT_EQ(missing.code, 2);
    EXPECT_NE(missing.err.find("not a journal directory"), std::string::npos) << missing.err;
}

TEST_F(cli, an_index_is_added_back_filled_listed_cleaned_and_dropped) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_cli_index", "[entities]\nkinds = [\"entry\"]\n");
    for (int i = 0; i < 50; ++i) {
        auto w = http_request(cairnd_->port(), "PUT", fmt::format("/v1/entities/entry/{:032x}?wait=applied", i + 1),
                              fmt::format(R"({{"user_id": "{:032x}"}})", i % 5 + 100));
        ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
    }
    // Entities written before the index: the back-fill adds their rows, and add waits for it.
    auto added = cairn({"index", "add", "entries_by_user", "--kind", "entry", "--property", "user_id:id"});
    ASSERT_EQ(added.code, 0) << added.err << added.out;
    EXPECT_NE(added.out.find("state: done"), std::string::npos) << added.out;
    const auto list = cairn_json({"index", "ls"});
    ASSERT_EQ(list["indexes"].size(), 1u) << list.dump();
    EXPECT_EQ(list["indexes"][0]["properties"][0]["type"], "id");
    auto q = http_get(cairnd_->port(), fmt::format("/v1/entities/entry/by/entries_by_user?user_id={:032x}", 100));
    ASSERT_TRUE(q && q->status == 200);
    EXPECT_EQ(nlohmann::json::parse(q->body)["entities"].size(), 10u) << q->body;
    const auto cleaned = cairn_json({"index", "clean", "entries_by_user", "--rate", "100000"});
    EXPECT_EQ(cleaned["state"], "done") << cleaned.dump();
    EXPECT_EQ(cleaned["rows_scanned"], 100) << cleaned.dump();  // 50 entities, then 50 index rows
    EXPECT_EQ(cairn_json({"index", "status", "entries_by_user"})["state"], "done");
    EXPECT_EQ(cairn({"index", "add", "x", "--kind", "entry", "--property", "user_id"}).code, 2);
    EXPECT_EQ(cairn({"index", "add", "entries_by_user", "--kind", "entry", "--property", "user_id:id"}).code, 1);  // exists
    EXPECT_EQ(cairn({"index", "drop", "entries_by_user"}).code, 4);  // no terminal, no --yes
    EXPECT_EQ(cairn({"index", "drop", "entries_by_user", "--yes"}).code, 0);
    EXPECT_EQ(cairn_json({"index", "ls"})["indexes"].size(), 0u);
}

// issue 20: cairn index verify finds a missing and a stale row, shard by shard, and --repair fixes them.
TEST_F(cli, index_verify_reports_missing_and_stale_rows_and_repair_fixes_them) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_cli_index_verify";
    start(db, "[entities]\nkinds = [\"entry\"]\n");
    for (int i = 0; i < 40; ++i) {
        auto w = http_request(cairnd_->port(), "PUT", fmt::format("/v1/entities/entry/{:032x}?wait=applied", i + 1),
                              fmt::format(R"({{"user_id": "{:032x}"}})", i % 4 + 100));
        ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
    }
    ASSERT_EQ(cairn({"index", "add", "entries_by_user", "--kind", "entry", "--property", "user_id:id"}).code, 0);
    auto clean = cairn_json({"index", "verify", "entries_by_user"});
    EXPECT_EQ(clean["state"], "done") << clean.dump();
    EXPECT_EQ(clean["missing"], 0) << clean.dump();
    EXPECT_EQ(clean["stale"], 0) << clean.dump();
    ASSERT_EQ(clean["shards"].size(), 2u) << clean.dump();

    // Damage the index behind cairn's back: entity 1's row goes (missing), and entity 2 gets a live
    // row for a user it never had, older than the entity (stale).
    const auto shards = test_shards();
    for (std::size_t i = 0; i < shards.size(); ++i) {
        ASSERT_TRUE(exec_sql(shards[i], {fmt::format("DELETE FROM index_entries_by_user WHERE entity_id = X'{:032x}'", 1)}, db));
    }
    ASSERT_TRUE(exec_sql(shards[0], {fmt::format("INSERT INTO index_entries_by_user (p0, entity_id, ts, deleted) VALUES "
                                                 "(X'{:032x}', X'{:032x}', 1, 0)", 999, 2)}, db));

    auto found = cairn({"index", "verify", "entries_by_user"});
    EXPECT_EQ(found.code, 7) << found.err << found.out;
    EXPECT_NE(found.out.find("missing rows: 1, stale rows: 1"), std::string::npos) << found.out;
    EXPECT_NE(found.out.find(fmt::format("entity 00000000-0000-0000-0000-{:012x}", 1)), std::string::npos) << found.out;
    auto status = cairn({"index", "status", "entries_by_user", "--verify", "--json"});
    EXPECT_EQ(status.code, 7) << status.err;  // the run it shows found differences
    const auto report = status.json();
    EXPECT_EQ(report["mode"], "verify");
    EXPECT_EQ(report["shards"][0]["stale"], 1) << report.dump();  // the bogus row is on shard 0
    EXPECT_EQ(report["shards"][0]["missing"].get<int>() + report["shards"][1]["missing"].get<int>(), 1) << report.dump();
    ASSERT_EQ(report["examples"]["stale"].size(), 1u) << report.dump();
    EXPECT_NE(report["examples"]["stale"][0].get<std::string>().find(fmt::format("{:012x}", 2)), std::string::npos);
    // Verify only reports: the query still misses entity 1.
    auto q = http_get(cairnd_->port(), fmt::format("/v1/entities/entry/by/entries_by_user?user_id={:032x}", 100));
    ASSERT_TRUE(q && q->status == 200);
    EXPECT_EQ(nlohmann::json::parse(q->body)["entities"].size(), 9u) << q->body;

    auto repaired = cairn({"index", "verify", "entries_by_user", "--repair"});
    EXPECT_EQ(repaired.code, 0) << repaired.err << repaired.out;
    EXPECT_NE(repaired.out.find("missing rows: 1 (written), stale rows: 1 (tombstoned)"), std::string::npos) << repaired.out;
    const auto after = cairn_json({"index", "verify", "entries_by_user"});
    EXPECT_EQ(after["missing"], 0) << after.dump();
    EXPECT_EQ(after["stale"], 0) << after.dump();
    q = http_get(cairnd_->port(), fmt::format("/v1/entities/entry/by/entries_by_user?user_id={:032x}", 100));
    ASSERT_TRUE(q && q->status == 200);
    EXPECT_EQ(nlohmann::json::parse(q->body)["entities"].size(), 10u) << q->body;
    // The API refuses a bad flag, and a verify of an unknown index.
    auto bad = http_post(cairnd_->port(), "/v1/indexes/entries_by_user/verify?repair=yes", "");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400) << bad->body;
    auto unknown = http_post(cairnd_->port(), "/v1/indexes/nope/verify", "");
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 404) << unknown->body;
}

TEST_F(cli, a_cell_index_is_added_on_a_table_column_and_back_filled) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_cli_cell_index", "[cells]\ntables = [\"users\"]\n");
    for (int i = 0; i < 30; ++i) {
        auto w = http_post(cairnd_->port(), "/v1/cells/users?wait=applied",
                           fmt::format(R"({{"row_key": "{:032x}", "column": "BASE", "ref_key": 1, "body": {{"company_id": "{:032x}"}}}})",
                                       i + 1, i % 3 + 100));
        ASSERT_TRUE(w && w->status == 202) << (w ? w->body : "no answer");
    }
    auto added = cairn({"index", "add", "users_by_company", "--table", "users", "--column", "BASE", "--property", "company_id:id"});
    ASSERT_EQ(added.code, 0) << added.err << added.out;
    EXPECT_NE(added.out.find("+30 -0"), std::string::npos) << added.out;
    auto ls = cairn({"index", "ls"});
    EXPECT_NE(ls.out.find("users/BASE"), std::string::npos) << ls.out;
    auto q = http_get(cairnd_->port(), fmt::format("/v1/cells/users/by/users_by_company?company_id={:032x}", 101));
    ASSERT_TRUE(q && q->status == 200);
    EXPECT_EQ(nlohmann::json::parse(q->body)["cells"].size(), 10u) << q->body;
    // --kind or --table with --column, never both, never neither.
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"index", "add", "x", "--property", "a:int"},
                                                {"index", "add", "x", "--table", "users", "--property", "a:int"},
                                                {"index", "add", "x", "--kind", "k", "--table", "users", "--column", "BASE",
                                                 "--property", "a:int"}}) {
        auto r = cairn(bad);
        EXPECT_EQ(r.code, 2) << r.err;
    }
    EXPECT_EQ(cairn({"index", "add", "x", "--table", "trips", "--column", "BASE", "--property", "a:int"}).code, 1);  // 400
}

TEST(cli_help, every_subcommand_has_help_that_leads_with_examples) {
    const std::vector<std::vector<std::string>> commands = {
        {},
        {"status"},
        {"dead"},
        {"dead", "ls"},
        {"dead", "show"},
        {"dead", "edit"},
        {"dead", "reinject"},
        {"dead", "drop"},
        {"errors"},
        {"errors", "ls"},
        {"errors", "retry-now"},
        {"apply"},
        {"apply", "pause"},
        {"apply", "resume"},
        {"trace"},
        {"journal"},
        {"journal", "stat"},
        {"journal", "check"},
        {"journal", "export"},
        {"journal", "import"},
        {"replay"},
        {"index"},
        {"index", "ls"},
        {"index", "add"},
        {"index", "drop"},
        {"index", "clean"},
        {"index", "status"},
    };
    for (auto args : commands) {
        const std::string name = args.empty() ? "cairn" : fmt::format("cairn {}", fmt::join(args, " "));
        args.push_back("--help");
        auto r = run_cairn(args);
        EXPECT_EQ(r.code, 0) << name << ": " << r.err;
        // Examples come first: within the description, before the usage line and the options.
        const auto examples = r.out.find("Examples:");
        const auto usage = r.out.find("Usage:");
        ASSERT_NE(examples, std::string::npos) << name << ":\n" << r.out;
        ASSERT_NE(usage, std::string::npos) << name << ":\n" << r.out;
        EXPECT_LT(examples, usage) << name;
        EXPECT_LT(std::count(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(examples), '\n'), 5) << name;
        EXPECT_NE(r.out.find("  cairn " + (args.size() > 1 ? fmt::format("{}", fmt::join(args.begin(), args.end() - 1, " ")) : std::string())),
                  std::string::npos)
            << name << " has no example of itself:\n" << r.out;
    }
    auto top = run_cairn({"--help"});
    EXPECT_NE(top.out.find("Exit codes:"), std::string::npos) << top.out;
}

// Issue 18: cairnd's exit codes are the ones its --help lists; a missing config file or an
// unknown option is 1 (bad config or arguments), not CLI11's own numbers.
TEST(cairnd_exit, argument_and_config_errors_exit_1_as_help_says) {
    const auto help = run_program(CAIRN_CAIRND_PATH, {"--help"});
    EXPECT_EQ(help.code, 0) << help.err;
    EXPECT_NE(help.out.find("1 bad config or arguments"), std::string::npos) << help.out;
    const auto missing = run_program(CAIRN_CAIRND_PATH, {"--config", "/nonexistent/cairn.toml", "--check-config"});
    EXPECT_EQ(missing.code, 1) << missing.err;
    EXPECT_NE(missing.err.find("/nonexistent/cairn.toml"), std::string::npos) << missing.err;
    EXPECT_EQ(run_program(CAIRN_CAIRND_PATH, {"--no-such-option"}).code, 1);
    const std::string dir = make_temp_dir("cairnd-exit");
    {
        std::ofstream bad(dir + "/bad.toml");
        bad << "[journal]\nsize_bytes_max = 1\n";
    }
    const auto invalid = run_program(CAIRN_CAIRND_PATH, {"--config", dir + "/bad.toml", "--check-config"});
    EXPECT_EQ(invalid.code, 1) << invalid.err;
    EXPECT_NE(invalid.err.find("journal.size_bytes_max"), std::string::npos) << invalid.err;
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace cairn::test
