// Entity indexes end to end (issue 5) through the real cairnd and real shards: definitions
// created at run time and kept on the shards across a restart; FriendFeed's entries by user_id;
// queries that page by cursor and re-filter the canonical entity, so that a stale index row
// (the entity moved to another user, or was deleted) never produces a wrong result; values that
// do not fit the index are refused at write time; a dropped index answers no more.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include <fmt/format.h>

#include <chrono>

namespace cairn::test {
namespace {

using json = nlohmann::json;
const std::string alice = "0000000000000000000000000000000a";
const std::string bob = "0000000000000000000000000000000b";

std::string entry_id(int i) { return fmt::format("{:032x}", 0x1000 + i); }
std::string uuid(const std::string& hex) {
    return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4), hex.substr(16, 4), hex.substr(20));
}

class entity_indexes_http : public cairnd_test {
protected:
    static cairnd_options options() {
        cairnd_options o;
        o.extra_toml = "[entities]\nkinds = [\"entry\", \"user\"]\n";
        return o;
    }
    void put_entry(int i, const std::string& user, const std::string& title) {
        const auto r = send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(i)),
                            fmt::format(R"({{"user_id": "{}", "title": "{}", "link": "http://example.com/{}"}})", user, title, i));
        ASSERT_EQ(r.status, 202) << r.body;
    }
    // Every entity id of a user's entries, walking pages of `limit`.
    std::vector<std::string> entries_of(const std::string& user, std::size_t limit, std::size_t* stale = nullptr) {
        std::vector<std::string> ids;
        std::string cursor;
        for (int pages = 0; pages < 100; ++pages) {
            const auto r = send("GET", fmt::format("/v1/entities/entry/by/entries_by_user?user_id={}&limit={}{}", user, limit,
                                                   cursor.empty() ? "" : "&cursor=" + cursor));
            EXPECT_EQ(r.status, 200) << r.body;
            if (r.status != 200) break;
            const auto j = json::parse(r.body);
            EXPECT_LE(j["entities"].size(), limit);
            for (const auto& e : j["entities"]) {
                EXPECT_EQ(e["body"]["user_id"], user) << "a query answered an entity that does not match";
                ids.push_back(e["id"]);
            }
            if (stale) *stale += j["stale_rows_skipped"].get<std::size_t>();
            if (j["next_cursor"].is_null()) break;
            cursor = j["next_cursor"];
        }
        return ids;
    }
};

TEST_F(entity_indexes_http, entries_by_user_stay_exact_through_moves_deletes_and_a_restart) {
    CAIRN_REQUIRE_SHARDS(2u);
    start_cairnd("cairn_e2e_indexes", options());
    auto created = send("POST", "/v1/indexes",
                        R"({"name": "entries_by_user", "kind": "entry", "properties": [{"name": "user_id", "type": "id"}],
                            "shard_on": "user_id"})");
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(json::parse(created.body)["shard_on"], "user_id");
    EXPECT_EQ(send("POST", "/v1/indexes", R"({"name": "entries_by_user", "kind": "entry", "properties": [{"name": "x", "type": "int"}]})").status,
              409);

    for (int i = 0; i < 7; ++i) put_entry(i, i < 5 ? alice : bob, fmt::format("post {}", i));
    std::vector<std::string> expected_alice;
    for (int i = 0; i < 5; ++i) expected_alice.push_back(uuid(entry_id(i)));
    EXPECT_EQ(entries_of(alice, 2), expected_alice);
    EXPECT_EQ(entries_of(bob, 10), (std::vector<std::string>{uuid(entry_id(5)), uuid(entry_id(6))}));

    // Entry 1 moves to bob, entry 3 is deleted: alice's index rows for them are stale now, and the
    // queries skip them after re-reading the entities.
    put_entry(1, bob, "moved");
    ASSERT_EQ(send("DELETE", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(3))).status, 202);
    std::size_t stale = 0;
    EXPECT_EQ(entries_of(alice, 2, &stale), (std::vector<std::string>{uuid(entry_id(0)), uuid(entry_id(2)), uuid(entry_id(4))}));
    EXPECT_GE(stale, 2u);  // pages may read a stale row twice (each page looks one match ahead)
    EXPECT_EQ(entries_of(bob, 10), (std::vector<std::string>{uuid(entry_id(1)), uuid(entry_id(5)), uuid(entry_id(6))}));

    // A value that does not fit the index is refused at write time, naming the property.
    auto bad = send("PUT", fmt::format("/v1/entities/entry/{}", entry_id(9)), R"({"user_id": "not-an-id"})");
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(json::parse(bad.body)["field"], "body.user_id");
    // Without the property the entity is simply not in the index.
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(8)), R"({"title": "anonymous"})").status, 202);

    // The definition is on the shards: a new gateway knows it.
    EXPECT_EQ(cairnd_->terminate(), 0);
    cairnd_options o = options();
    o.database = "cairn_e2e_indexes";
    cairnd_ = std::make_unique<cairnd_process>(o);
    ASSERT_TRUE(cairnd_->start()) << cairnd_->log_tail();
    const auto list = json::parse(send("GET", "/v1/indexes").body);
    ASSERT_EQ(list["indexes"].size(), 1u) << list.dump();
    EXPECT_EQ(list["indexes"][0]["name"], "entries_by_user");
    EXPECT_EQ(entries_of(bob, 1), (std::vector<std::string>{uuid(entry_id(1)), uuid(entry_id(5)), uuid(entry_id(6))}));

    // Dropped: no more queries, and the name is free again.
    ASSERT_EQ(send("DELETE", "/v1/indexes/entries_by_user").status, 200);
    EXPECT_EQ(send("GET", fmt::format("/v1/entities/entry/by/entries_by_user?user_id={}", alice)).status, 404);
    EXPECT_EQ(json::parse(send("GET", "/v1/indexes").body)["indexes"].size(), 0u);
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(0)), R"({"user_id": 5})").status, 202);
}

// An entity write journaled before an index was created, but waiting in the error queue when the
// index's cleaner starts, carries no row for the index. The cleaner's walk waits for it (the
// progress shows it), so that once it applies, the entity is found by its new value.
TEST_F(entity_indexes_http, a_write_waiting_in_the_error_queue_when_an_index_is_created_is_indexed) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_e2e_index_late";
    auto o = options();
    o.retry_attempts_max = 1000;
    start_cairnd(db, o);
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(1)),
                   fmt::format(R"({{"user_id": "{}"}})", alice)).status, 202);
    for (const auto& sh : test_shards()) {
        ASSERT_TRUE(exec_sql(sh, {"CREATE TRIGGER poison BEFORE INSERT ON entities FOR EACH ROW "
                                  "IF LOCATE('held', NEW.body) > 0 THEN "
                                  "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'held back'; END IF"}, db));
    }
    // The entity moves to bob; the shard refuses it (retried, not dead) until the trigger goes.
    const auto moved = send("PUT", fmt::format("/v1/entities/entry/{}", entry_id(1)),
                            fmt::format(R"({{"user_id": "{}", "note": "held"}})", bob));
    ASSERT_EQ(moved.status, 202) << moved.body;
    const auto seq = json::parse(moved.body)["seq"].get<std::uint64_t>();
    auto created = send("POST", "/v1/indexes",
                        R"({"name": "entries_by_user", "kind": "entry", "properties": [{"name": "user_id", "type": "id"}]})");
    ASSERT_EQ(created.status, 201) << created.body;

    // The cleaner waits in catch-up while the write is queued.
    json progress;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < until) {
        progress = json::parse(send("GET", "/v1/indexes/entries_by_user/clean").body);
        if (progress.value("late_ops_queued", 0) == 1) break;
    }
    ASSERT_EQ(progress["late_ops_queued"], 1) << progress.dump();
    EXPECT_EQ(progress["phase"], "catch-up") << progress.dump();
    EXPECT_EQ(progress["state"], "running") << progress.dump();

    for (const auto& sh : test_shards()) ASSERT_TRUE(exec_sql(sh, {"DROP TRIGGER poison"}, db));
    while (std::chrono::steady_clock::now() < until) {
        progress = json::parse(send("GET", "/v1/indexes/entries_by_user/clean").body);
        if (progress["state"] != "running") break;
    }
    ASSERT_EQ(progress["state"], "done") << progress.dump();
    EXPECT_EQ(progress["late_ops_queued"], 0) << progress.dump();
    const auto found = send("GET", fmt::format("/v1/entities/entry/by/entries_by_user?user_id={}&after={}", bob, seq));
    ASSERT_EQ(found.status, 200) << found.body;
    const auto entities = json::parse(found.body)["entities"];
    ASSERT_EQ(entities.size(), 1u) << found.body;
    EXPECT_EQ(entities[0]["body"]["user_id"], bob);
    const auto old = json::parse(send("GET", fmt::format("/v1/entities/entry/by/entries_by_user?user_id={}", alice)).body);
    EXPECT_EQ(old["entities"].size(), 0u) << old.dump();
}

// A two-property index sharded on its second property: a query on the first alone (a prefix) reads
// every shard and merges their sorted pages; ranges apply to the property after the prefix.
TEST_F(entity_indexes_http, prefix_and_range_queries_merge_every_shard_in_key_order) {
    CAIRN_REQUIRE_SHARDS(2u);
    start_cairnd("cairn_e2e_index_ranges", options());
    auto created = send("POST", "/v1/indexes",
                        R"({"name": "entries_by_feed_rank", "kind": "entry", "shard_on": "rank",
                            "properties": [{"name": "feed_id", "type": "id"}, {"name": "rank", "type": "int"}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const std::string feed = "000000000000000000000000000000f1";
    const std::string other_feed = "000000000000000000000000000000f2";
    for (int i = 0; i < 10; ++i) {
        const auto r = send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(i)),
                            fmt::format(R"({{"feed_id": "{}", "rank": {}}})", i < 8 ? feed : other_feed, i));
        ASSERT_EQ(r.status, 202) << r.body;
    }
    // The rank of entry 2 moves to 20: its old row is stale, and it is answered once, at 20.
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry_id(2)),
                   fmt::format(R"({{"feed_id": "{}", "rank": 20}})", feed)).status, 202);
    auto walk = [&](const std::string& query) {
        std::vector<std::int64_t> ranks;
        std::string cursor;
        for (int pages = 0; pages < 50; ++pages) {
            const auto r = send("GET", fmt::format("/v1/entities/entry/by/entries_by_feed_rank?{}&limit=2{}", query,
                                                   cursor.empty() ? "" : "&cursor=" + cursor));
            EXPECT_EQ(r.status, 200) << query << " -> " << r.body;
            if (r.status != 200) break;
            const auto j = json::parse(r.body);
            for (const auto& e : j["entities"]) ranks.push_back(e["body"]["rank"].get<std::int64_t>());
            if (j["next_cursor"].is_null()) break;
            cursor = j["next_cursor"];
        }
        return ranks;
    };
    EXPECT_EQ(walk("feed_id=" + feed), (std::vector<std::int64_t>{0, 1, 3, 4, 5, 6, 7, 20}));
    EXPECT_EQ(walk(fmt::format("feed_id={}&rank.gte=3&rank.lt=7", feed)), (std::vector<std::int64_t>{3, 4, 5, 6}));
    EXPECT_EQ(walk(fmt::format("feed_id={}&rank.gt=6", feed)), (std::vector<std::int64_t>{7, 20}));
    EXPECT_EQ(walk(fmt::format("feed_id={}&rank=4", feed)), (std::vector<std::int64_t>{4}));
    EXPECT_EQ(walk("feed_id=" + other_feed), (std::vector<std::int64_t>{8, 9}));
    // A cursor continues only its own query: other conditions, or a changed cursor, are a 400.
    const auto first = json::parse(
        send("GET", fmt::format("/v1/entities/entry/by/entries_by_feed_rank?feed_id={}&limit=2", feed)).body);
    ASSERT_TRUE(first["next_cursor"].is_string()) << first.dump();
    const std::string cursor = first["next_cursor"];
    EXPECT_EQ(send("GET", fmt::format("/v1/entities/entry/by/entries_by_feed_rank?feed_id={}&limit=2&cursor={}", feed, cursor)).status,
              200);
    std::string changed = cursor;
    changed[changed.size() / 2] = changed[changed.size() / 2] == '0' ? '1' : '0';
    for (const auto& query : {fmt::format("feed_id={}&cursor={}", other_feed, cursor),
                              fmt::format("feed_id={}&rank.gte=0&cursor={}", feed, cursor),
                              fmt::format("feed_id={}&cursor={}", feed, changed)}) {
        const auto r = send("GET", "/v1/entities/entry/by/entries_by_feed_rank?" + query);
        EXPECT_EQ(r.status, 400) << query << " -> " << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("field", std::string()), "cursor") << query;
    }
    // Each shard gets a copy of the other's index rows, as a split's old owner holds the moved half's rows
    // from the switch until cleaning: a shard answers only for the rows it owns, so nothing is answered twice.
    const auto servers = test_shards();
    std::vector<std::vector<std::string>> rows_of(2);
    for (std::size_t s = 0; s < 2; ++s) {
        auto rows = query_sql(servers[s], "SELECT HEX(p0), p1, HEX(entity_id), ts, deleted FROM index_entries_by_feed_rank",
                              "cairn_e2e_index_ranges");
        ASSERT_TRUE(rows.has_value());
        rows_of[s] = rows.value();
    }
    ASSERT_FALSE(rows_of[0].empty());
    ASSERT_FALSE(rows_of[1].empty());
    for (std::size_t s = 0; s < 2; ++s) {
        std::vector<std::string> inserts;
        for (const auto& line : rows_of[1 - s]) {
            std::vector<std::string> f;
            std::istringstream in(line);
            for (std::string v; std::getline(in, v, '\t');) f.push_back(v);
            ASSERT_EQ(f.size(), 5u) << line;
            inserts.push_back(fmt::format("INSERT IGNORE INTO index_entries_by_feed_rank VALUES (UNHEX('{}'), {}, UNHEX('{}'), {}, {})",
                                          f[0], f[1], f[2], f[3], f[4]));
        }
        ASSERT_TRUE(exec_sql(servers[s], inserts, "cairn_e2e_index_ranges"));
    }
    EXPECT_EQ(walk("feed_id=" + feed), (std::vector<std::int64_t>{0, 1, 3, 4, 5, 6, 7, 20}));
    EXPECT_EQ(walk(fmt::format("feed_id={}&rank.gte=3&rank.lt=7", feed)), (std::vector<std::int64_t>{3, 4, 5, 6}));
    EXPECT_EQ(walk("feed_id=" + other_feed), (std::vector<std::int64_t>{8, 9}));

    const auto one_shard = json::parse(send("GET", fmt::format("/v1/entities/entry/by/entries_by_feed_rank?feed_id={}&rank=4", feed)).body);
    EXPECT_EQ(one_shard["shards_read"], 1);
    const auto all_shards = json::parse(send("GET", "/v1/entities/entry/by/entries_by_feed_rank?feed_id=" + feed).body);
    EXPECT_EQ(all_shards["shards_read"], 2);
    for (const auto& [query, field] : std::vector<std::pair<std::string, std::string>>{
             {"rank=4", "rank"},                                 // equality must be a prefix
             {"feed_id.gte=" + feed + "&rank=1", "rank"},        // nothing after a range
             {"feed_id=" + feed + "&rank.gte=1&rank.gt=2", "rank.gt"},
             {"feed_id=" + feed + "&rank.lt=x", "rank.lt"},
             {"feed_id=" + feed + "&rank=04", "rank"},      // one number, one spelling
             {"feed_id=" + feed + "&cursor=zz", "cursor"},
             {"", "feed_id"}}) {
        const auto r = send("GET", "/v1/entities/entry/by/entries_by_feed_rank?" + query);
        EXPECT_EQ(r.status, 400) << query << " -> " << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("field", std::string()), field) << query << " -> " << r.body;
    }
}

TEST_F(entity_indexes_http, bad_definitions_and_queries_are_4xx_naming_the_field) {
    CAIRN_REQUIRE_SHARDS(2u);
    start_cairnd("cairn_e2e_indexes_bad", options());
    const struct {
        std::string body;
        std::string field;
    } defs[] = {
        {R"({"name": "x", "kind": "trip", "properties": [{"name": "a", "type": "int"}]})", "kind"},
        {R"({"name": "X-Y", "kind": "user", "properties": [{"name": "a", "type": "int"}]})", "name"},
        {R"({"name": "x", "kind": "user", "properties": [{"name": "a", "type": "float"}]})", "properties[0].type"},
        {R"({"name": "x", "kind": "user", "properties": [{"name": "a", "type": "string"}]})", "properties[0].length"},
        {R"({"name": "x", "kind": "user", "properties": []})", "properties"},
        {R"({"name": "x", "kind": "user", "properties": [{"name": "a", "type": "int"}, {"name": "b", "type": "int"}]})", "shard_on"},
        {R"({"name": "x", "kind": "user", "properties": [{"name": "a", "type": "int"}], "unique": true})", "unique"},
    };
    for (const auto& d : defs) {
        const auto r = send("POST", "/v1/indexes", d.body);
        EXPECT_EQ(r.status, 400) << d.body << " -> " << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("field", std::string()), d.field) << d.body << " -> " << r.body;
    }
    // The second example's limits: username up to 20 bytes, email up to 254.
    ASSERT_EQ(send("POST", "/v1/indexes", R"({"name": "users_by_username", "kind": "user",
                                              "properties": [{"name": "username", "type": "string", "length": 20}]})").status, 201);
    auto r = send("PUT", "/v1/entities/user/" + alice, fmt::format(R"({{"username": "{}"}})", std::string(21, 'u')));
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(json::parse(r.body)["field"], "body.username");
    EXPECT_EQ(send("PUT", "/v1/entities/user/" + alice + "?wait=applied", fmt::format(R"({{"username": "{}"}})", std::string(20, 'u'))).status, 202);
    EXPECT_EQ(send("GET", "/v1/entities/user/by/users_by_username").status, 400);  // the value is required
    EXPECT_EQ(send("GET", "/v1/entities/user/by/users_by_username?username=" + std::string(21, 'u')).status, 400);
    EXPECT_EQ(send("GET", "/v1/entities/user/by/nope?username=a").status, 404);
    const auto found = json::parse(send("GET", "/v1/entities/user/by/users_by_username?username=" + std::string(20, 'u')).body);
    ASSERT_EQ(found["entities"].size(), 1u) << found.dump();
    EXPECT_EQ(send("DELETE", "/v1/indexes/nope").status, 404);
}

}  // namespace
}  // namespace cairn::test
