// Cell indexes end to end (issue 6) through the real cairnd and real shards, with the tables of
// docs/examples/cells.toml and the indexes of docs/cells.md: users by company and by email,
// companies by domain, schools by name, each on the BASE column. Users written before their index
// exists are found once its back-fill is done; a query answers the latest version of the column
// only (a new ref_key moves a user to another company; an older ref_key written late does not);
// other columns are not indexed; values that do not fit are refused at write time, journaling
// nothing; the cleaner tombstones exactly the stale rows; definitions survive a restart.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/repo_file.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <thread>

namespace cairn::test {
namespace {

using json = nlohmann::json;
const std::string acme = "00000000-0000-0000-0000-000000000a11";
const std::string globex = "00000000-0000-0000-0000-000000000a22";
const std::string mit = "00000000-0000-0000-0000-000000000b22";

std::string user(int i) { return fmt::format("6f1c2a4e-0b3d-4c5e-8f70-{:012x}", 0x91a2b3c4d500 + i); }

std::string example_toml() { return repo_file("docs/examples/cells.toml"); }

class cell_indexes_http : public cairnd_test {
protected:
    cairnd_options options(const std::string& db) {
        cairnd_options o;
        o.database = db;
        o.extra_toml = example_toml();
        EXPECT_FALSE(o.extra_toml.empty()) << "docs/examples/cells.toml not found (CAIRN_REPO)";
        return o;
    }
    void put_user(int i, int ref_key, const std::string& company, const std::string& column = "BASE") {
        const auto r = send("POST", "/v1/cells/users?wait=applied",
                            fmt::format(R"({{"row_key": "{}", "column": "{}", "ref_key": {}, "body": {{"username": "user{}",
                                            "email": "user{}@example.com", "company_id": "{}"}}}})",
                                        user(i), column, ref_key, i, i, company));
        ASSERT_EQ(r.status, 202) << r.body;
    }
    // The row keys of a query's answer, every page of `limit` walked; each answered cell must be
    // the latest BASE of its row and hold the queried value.
    std::vector<std::string> users_of(const std::string& company, std::size_t limit, std::size_t* stale = nullptr) {
        std::vector<std::string> rows;
        std::string cursor;
        for (int pages = 0; pages < 100; ++pages) {
            const auto r = send("GET", fmt::format("/v1/cells/users/by/users_by_company?company_id={}&limit={}{}", company, limit,
                                                   cursor.empty() ? "" : "&cursor=" + cursor));
            EXPECT_EQ(r.status, 200) << r.body;
            if (r.status != 200) break;
            const auto j = json::parse(r.body);
            EXPECT_EQ(j["table"], "users");
            EXPECT_EQ(j["column"], "BASE");
            EXPECT_LE(j["cells"].size(), limit);
            for (const auto& c : j["cells"]) {
                EXPECT_EQ(c["body"]["company_id"], company) << "a query answered a cell that does not match";
                EXPECT_EQ(c["column"], "BASE");
                const auto latest = json::parse(send("GET", fmt::format("/v1/cells/users/{}/BASE", c["row_key"].get<std::string>())).body);
                EXPECT_EQ(c["ref_key"], latest["ref_key"]) << "a query answered a version that is not the latest";
                rows.push_back(c["row_key"]);
            }
            if (stale) *stale += j["stale_rows_skipped"].get<std::size_t>();
            if (j["next_cursor"].is_null()) break;
            cursor = j["next_cursor"];
        }
        std::sort(rows.begin(), rows.end());
        return rows;
    }
    json cleaner_run(const std::string& index, bool start) {
        if (start) {
            const auto r = send("POST", fmt::format("/v1/indexes/{}/clean", index));
            EXPECT_EQ(r.status, 202) << r.body;
        }
        json p;
        wait_until(
            [&] {
                p = json::parse(send("GET", fmt::format("/v1/indexes/{}/clean", index)).body, nullptr, false);
                return p.is_object() && p.value("state", "") != "running";
            },
            std::chrono::seconds(30));
        EXPECT_EQ(p.value("state", ""), "done") << p.dump();
        return p;
    }
};

TEST_F(cell_indexes_http, users_companies_and_schools_are_found_by_their_indexes) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_e2e_cell_indexes";
    start_cairnd(db, options(db));

    // Users 0..5 exist before the index: the back-fill finds them.
    for (int i = 0; i < 6; ++i) put_user(i, 1, i < 4 ? acme : globex);
    auto created = send("POST", "/v1/indexes",
                        R"({"name": "users_by_company", "table": "users", "column": "BASE",
                            "properties": [{"name": "company_id", "type": "id"}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const auto def = json::parse(created.body);
    EXPECT_EQ(def["table"], "users");
    EXPECT_EQ(def["column"], "BASE");
    EXPECT_FALSE(def.contains("kind"));
    const auto backfill = cleaner_run("users_by_company", false);
    EXPECT_EQ(backfill["rows_added"], 6) << backfill.dump();
    EXPECT_EQ(users_of(acme, 100), (std::vector<std::string>{user(0), user(1), user(2), user(3)}));
    EXPECT_EQ(users_of(globex, 1), (std::vector<std::string>{user(4), user(5)}));

    // The other indexes of the example.
    for (const char* d : {R"({"name": "users_by_email", "table": "users", "column": "BASE",
                              "properties": [{"name": "email", "type": "string", "length": 254}]})",
                          R"({"name": "companies_by_domain", "table": "companies", "column": "BASE",
                              "properties": [{"name": "domain", "type": "string", "length": 253}]})",
                          R"({"name": "schools_by_name", "table": "schools", "column": "BASE",
                              "properties": [{"name": "name", "type": "string", "length": 100}]})"}) {
        const auto r = send("POST", "/v1/indexes", d);
        ASSERT_EQ(r.status, 201) << d << " -> " << r.body;
    }
    ASSERT_EQ(send("POST", "/v1/cells/companies?wait=applied",
                   fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"name": "Acme", "domain": "acme.example"}}}})", acme))
                  .status, 202);
    ASSERT_EQ(send("POST", "/v1/cells/schools?wait=applied",
                   fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"name": "MIT", "domain": "mit.edu"}}}})", mit))
                  .status, 202);
    auto company = json::parse(send("GET", "/v1/cells/companies/by/companies_by_domain?domain=acme.example").body);
    ASSERT_EQ(company["cells"].size(), 1u) << company.dump();
    EXPECT_EQ(company["cells"][0]["row_key"], acme);
    EXPECT_EQ(company["cells"][0]["body"]["name"], "Acme");
    auto school = json::parse(send("GET", "/v1/cells/schools/by/schools_by_name?name=MIT").body);
    ASSERT_EQ(school["cells"].size(), 1u) << school.dump();
    EXPECT_EQ(school["cells"][0]["row_key"], mit);
    // An index reads one table: the users' index is not a companies' index.
    EXPECT_EQ(send("GET", "/v1/cells/companies/by/users_by_company?company_id=" + acme).status, 404);
    EXPECT_EQ(send("GET", "/v1/entities/users/by/users_by_company?company_id=" + acme).status, 404);

    // User 6 is written after the index: its own write carries its rows.
    put_user(6, 1, acme);
    auto by_email = json::parse(send("GET", "/v1/cells/users/by/users_by_email?email=user6@example.com").body);
    ASSERT_EQ(by_email["cells"].size(), 1u) << by_email.dump();
    EXPECT_EQ(by_email["cells"][0]["row_key"], user(6));

    // User 1 moves to globex in a new version; user 2 gets an OLDER version (ref_key 0) at globex,
    // written last: its latest version is still ref_key 1, at acme. A status column holding a
    // company_id is not indexed (the index reads BASE).
    put_user(1, 2, globex);
    put_user(2, 0, globex);
    put_user(3, 1, globex, "status");
    std::size_t stale = 0;
    EXPECT_EQ(users_of(acme, 2, &stale), (std::vector<std::string>{user(0), user(2), user(3), user(6)}));
    EXPECT_GE(stale, 1u);  // user 1's acme row
    stale = 0;
    EXPECT_EQ(users_of(globex, 2, &stale), (std::vector<std::string>{user(1), user(4), user(5)}));
    EXPECT_GE(stale, 1u);  // user 2's ref_key 0 row

    // A value that does not fit its index is refused at write time, naming the cell's property,
    // and nothing is journaled: the cell does not exist afterwards.
    auto bad = send("POST", "/v1/cells/users?wait=applied",
                    fmt::format(R"({{"cells": [{{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"username": "u7"}}}},
                                                 {{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"company_id": "not-an-id"}}}}]}})",
                                user(7), user(8)));
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_EQ(json::parse(bad.body)["field"], "cells[1].body.company_id");
    EXPECT_EQ(send("GET", fmt::format("/v1/cells/users/{}/BASE", user(7))).status, 404);
    // The same value in another column is not checked: that column has no index.
    EXPECT_EQ(send("POST", "/v1/cells/users?wait=applied",
                   fmt::format(R"({{"row_key": "{}", "column": "notes", "ref_key": 1, "body": {{"company_id": "not-an-id"}}}})", user(8)))
                  .status, 202);

    // The cleaner tombstones exactly the two stale rows; queries then skip none.
    const auto cleaned = cleaner_run("users_by_company", true);
    EXPECT_EQ(cleaned["rows_removed"], 2) << cleaned.dump();
    stale = 0;
    EXPECT_EQ(users_of(acme, 100, &stale), (std::vector<std::string>{user(0), user(2), user(3), user(6)}));
    EXPECT_EQ(users_of(globex, 100, &stale), (std::vector<std::string>{user(1), user(4), user(5)}));
    EXPECT_EQ(stale, 0u);
    // A second run finds nothing more to remove.
    EXPECT_EQ(cleaner_run("users_by_company", true)["rows_removed"], 0);

    // User 1 moves back to acme in a newer version: the tombstoned row comes back to life.
    put_user(1, 3, acme);
    EXPECT_EQ(users_of(acme, 100), (std::vector<std::string>{user(0), user(1), user(2), user(3), user(6)}));

    // Definitions are on the shards: a new gateway (its own journal, so its own node id) knows them,
    // and lists the cell indexes as such.
    EXPECT_EQ(cairnd_->terminate(), 0);
    auto second = options(db);
    second.node_id = 2;
    cairnd_ = std::make_unique<cairnd_process>(second);
    ASSERT_TRUE(cairnd_->start()) << cairnd_->log_tail();
    const auto list = json::parse(send("GET", "/v1/indexes").body);
    ASSERT_EQ(list["indexes"].size(), 4u) << list.dump();
    for (const auto& d : list["indexes"]) EXPECT_EQ(d["column"], "BASE") << d.dump();
    EXPECT_EQ(users_of(globex, 1), (std::vector<std::string>{user(4), user(5)}));

    // Dropped: no more queries.
    ASSERT_EQ(send("DELETE", "/v1/indexes/users_by_company").status, 200);
    EXPECT_EQ(send("GET", "/v1/cells/users/by/users_by_company?company_id=" + acme).status, 404);
    put_user(9, 1, acme);  // writes go on without the index
}

// The back-fill over more rows than one page of the cleaner's walk (500 per shard), rows with
// several versions of the column and other columns: each row is added once, at its latest version.
TEST_F(cell_indexes_http, a_back_fill_adds_each_row_once_at_its_latest_version) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_e2e_cell_index_backfill";
    start_cairnd(db, options(db));
    constexpr int rows = 1500;
    const std::string companies[] = {acme, globex, "00000000-0000-0000-0000-000000000a33"};
    std::map<std::string, std::size_t> expected;
    std::string batch;
    int in_batch = 0;
    auto flush = [&] {
        if (in_batch == 0) return;
        const auto r = send("POST", "/v1/cells/users?wait=applied", R"({"cells": [)" + batch + "]}");
        ASSERT_EQ(r.status, 202) << r.body;
        batch.clear();
        in_batch = 0;
    };
    auto add = [&](int i, const std::string& column, int ref_key, const std::string& company) {
        batch += fmt::format(R"({}{{"row_key": "{}", "column": "{}", "ref_key": {}, "body": {{"company_id": "{}"}}}})",
                             in_batch ? "," : "", user(i), column, ref_key, company);
        if (++in_batch == 500) flush();
    };
    for (int i = 0; i < rows; ++i) {
        add(i, "BASE", 1, companies[i % 2]);
        if (i % 3 == 0) add(i, "BASE", 2, companies[2]);    // a newer version at the third company
        if (i % 5 == 0) add(i, "status", 9, companies[1]);  // another column: not indexed
        ++expected[companies[i % 3 == 0 ? 2 : i % 2]];
    }
    flush();
    const auto created = send("POST", "/v1/indexes",
                              R"({"name": "users_by_company", "table": "users", "column": "BASE",
                                  "properties": [{"name": "company_id", "type": "id"}]})");
    ASSERT_EQ(created.status, 201) << created.body;
    const auto backfill = cleaner_run("users_by_company", false);
    EXPECT_EQ(backfill["rows_added"], rows) << backfill.dump();
    EXPECT_EQ(backfill["rows_removed"], 0) << backfill.dump();
    EXPECT_EQ(backfill["rows_scanned"], 2 * rows) << backfill.dump();  // the rows, then the index rows
    std::size_t stale = 0;
    for (const auto& c : companies) {
        std::size_t n = 0;
        std::string cursor;
        for (int pages = 0; pages < 20; ++pages) {
            const auto r = send("GET", fmt::format("/v1/cells/users/by/users_by_company?company_id={}&limit=400{}", c,
                                                   cursor.empty() ? "" : "&cursor=" + cursor));
            ASSERT_EQ(r.status, 200) << r.body;
            const auto j = json::parse(r.body);
            n += j["cells"].size();
            stale += j["stale_rows_skipped"].get<std::size_t>();
            if (j["next_cursor"].is_null()) break;
            cursor = j["next_cursor"];
        }
        EXPECT_EQ(n, expected[c]) << c;
    }
    EXPECT_EQ(stale, 0u);
}

TEST_F(cell_indexes_http, bad_cell_index_definitions_are_4xx_naming_the_field) {
    CAIRN_REQUIRE_SHARDS(2u);
    const std::string db = "cairn_e2e_cell_indexes_bad";
    start_cairnd(db, options(db));
    const struct {
        std::string body;
        std::string field;
    } defs[] = {
        {R"({"name": "x", "table": "trips", "column": "BASE", "properties": [{"name": "a", "type": "int"}]})", "table"},
        {R"({"name": "x", "table": "users", "properties": [{"name": "a", "type": "int"}]})", "column"},
        {R"({"name": "x", "column": "BASE", "properties": [{"name": "a", "type": "int"}]})", "table"},
        {R"({"name": "x", "table": "users", "column": "a b", "properties": [{"name": "a", "type": "int"}]})", "column"},
        {R"({"name": "x", "table": "users", "column": "", "properties": [{"name": "a", "type": "int"}]})", "column"},
        {R"({"name": "x", "table": "users", "column": 5, "properties": [{"name": "a", "type": "int"}]})", "column"},
        {R"({"name": "x", "kind": "users", "table": "users", "column": "BASE", "properties": [{"name": "a", "type": "int"}]})", "table"},
        {R"({"name": "x", "kind": "users", "properties": [{"name": "a", "type": "int"}]})", "kind"},  // no entity kind users
    };
    for (const auto& d : defs) {
        const auto r = send("POST", "/v1/indexes", d.body);
        EXPECT_EQ(r.status, 400) << d.body << " -> " << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("field", std::string()), d.field) << d.body << " -> " << r.body;
    }
    EXPECT_EQ(send("GET", "/v1/cells/trips/by/x?a=1").status, 404);
    EXPECT_EQ(send("GET", "/v1/cells/users/by/nope?a=1").status, 404);
    EXPECT_EQ(json::parse(send("GET", "/v1/indexes").body)["indexes"].size(), 0u);
}

}  // namespace
}  // namespace cairn::test
