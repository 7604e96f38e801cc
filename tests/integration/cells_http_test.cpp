// Cells end to end (issue 6) through the real cairnd and real shards, with the tables of
// docs/examples/cells.toml: users, companies and schools as Schemaless cells; immutability (the
// same body again is fine, another body is a 409); the latest version, one version, all columns
// of a row and the versions of a column paged; bad input is a 4xx and journals nothing.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/repo_file.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>


namespace cairn::test {
namespace {

using json = nlohmann::json;
const std::string alice = "6f1c2a4e-0b3d-4c5e-8f70-91a2b3c4d5e6";
const std::string cells_acme = "00000000000000000000000000000a11";

std::string cells_example_toml() { return repo_file("docs/examples/cells.toml"); }

class cells_http : public cairnd_test {
protected:
    void start(const std::string& db) {
        cairnd_options o;
        o.extra_toml = cells_example_toml();
        ASSERT_FALSE(o.extra_toml.empty()) << "docs/examples/cells.toml not found";
        start_cairnd(db, std::move(o));
    }
    json get(const std::string& target, int status = 200) {
        auto r = http_get(port(), target);
        if (!r) {
            ADD_FAILURE() << target << ": no answer";
            return {};
        }
        EXPECT_EQ(r->status, status) << target << " -> " << r->body;
        return json::parse(r->body, nullptr, false);
    }
    int post(const std::string& table, const std::string& body, std::string* answer = nullptr) {
        auto w = http_post(port(), "/v1/cells/" + table + "?wait=applied", body);
        if (!w) return 0;
        if (answer) *answer = w->body;
        return w->status;
    }
};

TEST_F(cells_http, users_companies_and_schools_as_immutable_versioned_cells) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_cells");
    std::string answer;
    // A user's BASE column in two versions, a status column, and a company.
    ASSERT_EQ(post("users", fmt::format(R"({{"cells": [
        {{"row_key": "{0}", "column": "BASE", "ref_key": 1, "body": {{"username": "alice", "email": "alice@example.com"}}}},
        {{"row_key": "{0}", "column": "BASE", "ref_key": 2, "body": {{"username": "alice", "email": "alice@cells_acme.example", "phone": "+1 555 0100"}}}},
        {{"row_key": "{0}", "column": "status", "ref_key": 1, "body": {{"active": true, "score": 4.5, "tags": ["a", null]}}}}]}})",
                                        alice), &answer), 202) << answer;
    ASSERT_EQ(post("companies", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"name": "Acme", "domain": "cells_acme.example"}}}})", cells_acme), &answer), 202) << answer;

    auto latest = get(fmt::format("/v1/cells/users/{}/BASE", alice));
    EXPECT_EQ(latest["ref_key"], 2);
    EXPECT_EQ(latest["body"]["email"], "alice@cells_acme.example");
    EXPECT_EQ(latest["row_key"], alice);
    auto first = get(fmt::format("/v1/cells/users/{}/BASE/1", alice));
    EXPECT_EQ(first["body"], json::parse(R"({"email": "alice@example.com", "username": "alice"})"));
    auto row = get(fmt::format("/v1/cells/users/{}", alice));
    ASSERT_EQ(row["columns"].size(), 2u) << row.dump();
    EXPECT_EQ(row["columns"][0]["column"], "BASE");
    EXPECT_EQ(row["columns"][0]["ref_key"], 2);
    EXPECT_EQ(row["columns"][1]["body"], json::parse(R"({"active": true, "score": 4.5, "tags": ["a", null]})"));
    auto company = get(fmt::format("/v1/cells/companies/{}/BASE", cells_acme));
    EXPECT_EQ(company["body"]["domain"], "cells_acme.example");

    // Versions, newest first, one per page.
    auto page = get(fmt::format("/v1/cells/users/{}/BASE/versions?limit=1", alice));
    ASSERT_EQ(page["versions"].size(), 1u);
    EXPECT_EQ(page["versions"][0]["ref_key"], 2);
    ASSERT_TRUE(page["next_cursor"].is_string());
    page = get(fmt::format("/v1/cells/users/{}/BASE/versions?limit=1&cursor={}", alice, page["next_cursor"].get<std::string>()));
    ASSERT_EQ(page["versions"].size(), 1u);
    EXPECT_EQ(page["versions"][0]["ref_key"], 1);
    EXPECT_TRUE(page["next_cursor"].is_null());

    // Immutable: the same body again (keys in another order) is accepted and changes nothing;
    // another body for an existing cell is refused.
    ASSERT_EQ(post("users", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"email": "alice@example.com", "username": "alice"}}}})", alice), &answer), 202) << answer;
    ASSERT_EQ(post("users", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"username": "mallory"}}}})", alice), &answer), 409) << answer;
    EXPECT_NE(answer.find("immutable"), std::string::npos) << answer;
    first = get(fmt::format("/v1/cells/users/{}/BASE/1", alice));
    EXPECT_EQ(first["body"]["username"], "alice");
    // A large body is stored compressed and reads back whole.
    const std::string bio(5000, 'z');
    ASSERT_EQ(post("schools", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"name": "MIT", "bio": "{}"}}}})", cells_acme, bio), &answer), 202) << answer;
    EXPECT_EQ(get(fmt::format("/v1/cells/schools/{}/BASE", cells_acme))["body"]["bio"], bio);
    get(fmt::format("/v1/cells/users/{}/BASE/3", alice), 404);
}

TEST_F(cells_http, bad_input_is_a_4xx_naming_the_problem_and_journals_nothing) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_cells_bad");
    const auto ok = fmt::format(R"("row_key": "{}", "column": "BASE", "ref_key": 1)", alice);
    const struct {
        std::string table;
        std::string body;
        int status;
        std::string field;
    } cases[] = {
        {"trips", fmt::format(R"({{{}, "body": {{}}}})", ok), 404, "table"},
        {"users", R"({"row_key": "abc", "column": "BASE", "ref_key": 1, "body": {}})", 400, "row_key"},
        {"users", fmt::format(R"({{"row_key": "{}", "column": "a b", "ref_key": 1, "body": {{}}}})", alice), 400, "column"},
        {"users", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1.5, "body": {{}}}})", alice), 400, "ref_key"},
        {"users", fmt::format(R"({{{}, "body": [1]}})", ok), 400, "body"},
        {"users", fmt::format(R"({{{}}})", ok), 400, "body"},
        {"users", fmt::format(R"({{{}, "body": {{}}, "ts": 5}})", ok), 400, "ts"},
        {"users", fmt::format(R"({{"cells": [{{{0}, "body": {{"a": 1}}}}, {{{0}, "body": {{"a": 2}}}}]}})", ok), 400, "cells[1]"},
        {"users", R"({"cells": []})", 400, "cells"},
    };
    for (const auto& c : cases) {
        std::string answer;
        EXPECT_EQ(post(c.table, c.body, &answer), c.status) << c.body << " -> " << answer;
        EXPECT_EQ(json::parse(answer, nullptr, false).value("field", std::string()), c.field) << c.body << " -> " << answer;
    }
    get(fmt::format("/v1/cells/users/{}/BASE/x", alice), 400);
    get("/v1/cells/users/xyz/BASE", 400);
    get(fmt::format("/v1/cells/users/{}/BASE/versions?limit=0", alice), 400);
    get(fmt::format("/v1/cells/trips/{}", alice), 404);
    auto st = http_get(port(), "/v1/admin/status");
    ASSERT_TRUE(st);
    EXPECT_EQ(json::parse(st->body)["journal"]["last_seq"], 0);
}

// issue 13: what is acknowledged reads back. A body with an array of 65,537 elements used to be
// accepted (202) and to read back as null (the reader's limit was 65,536): the write side now refuses
// exactly what the read side cannot read, and the largest body it accepts reads back whole.
TEST_F(cells_http, issue_13_the_largest_accepted_body_reads_back_and_one_element_more_is_refused) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_cells_limits");
    auto array_of = [](std::size_t n) {
        std::string a = "[";
        for (std::size_t i = 0; i < n; ++i) a += i ? ",0" : "0";
        return a + "]";
    };
    std::string answer;
    ASSERT_EQ(post("users", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 1, "body": {{"a": {}}}}})", alice,
                                        array_of(65'537)),
                   &answer),
              400);
    EXPECT_EQ(json::parse(answer, nullptr, false).value("field", std::string()), "body") << answer;
    EXPECT_NE(answer.find("65537 elements"), std::string::npos) << answer;
    ASSERT_EQ(post("users", fmt::format(R"({{"row_key": "{}", "column": "BASE", "ref_key": 2, "body": {{"a": {}}}}})", alice,
                                        array_of(65'536)),
                   &answer),
              202)
        << answer;
    const auto c = get(fmt::format("/v1/cells/users/{}/BASE/2", alice));
    ASSERT_TRUE(c["body"].is_object()) << c.dump().substr(0, 300);
    EXPECT_EQ(c["body"]["a"].size(), 65'536u);
}

}  // namespace
}  // namespace cairn::test
