// Entities end to end (issue 5) through the real cairnd and real shards: FriendFeed-style
// entries put, read, replaced and deleted; a delete that arrives before the put it follows
// still wins; bad input is a 4xx and journals nothing.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace cairn::test {
namespace {

using json = nlohmann::json;
const std::string entry = "71f0c4d8-5a9b-4c3e-9d2f-0a1b2c3d4e5f";

class entities_http : public cairnd_test {
protected:
    void start(const std::string& db) {
        cairnd_options o;
        o.extra_toml = "[entities]\nkinds = [\"entry\", \"user\"]\n";
        start_cairnd(db, std::move(o));
    }
};

TEST_F(entities_http, put_get_replace_and_delete_with_last_writer_wins) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_entities");
    const auto put = send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry),
                          R"({"user_id": "0000000000000000000000000000000a", "title": "Hello", "link": "http://example.com",
                              "published": 1795392000, "tags": ["a", "b"], "ratio": 0.5})");
    ASSERT_EQ(put.status, 202) << put.body;
    auto got = send("GET", fmt::format("/v1/entities/entry/{}", entry));
    ASSERT_EQ(got.status, 200) << got.body;
    auto j = json::parse(got.body);
    EXPECT_EQ(j["id"], entry);
    EXPECT_EQ(j["body"]["title"], "Hello");
    EXPECT_EQ(j["body"]["tags"], json::parse(R"(["a","b"])"));
    EXPECT_DOUBLE_EQ(j["body"]["ratio"].get<double>(), 0.5);

    // A full replace: the old properties are gone.
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied", entry), R"({"title": "Bye"})").status, 202);
    j = json::parse(send("GET", fmt::format("/v1/entities/entry/{}", entry)).body);
    EXPECT_EQ(j["body"], json::parse(R"({"title": "Bye"})"));

    // Client timestamps: a delete at t+10 arrives first, then a put at t+5: the delete wins.
    const std::string other = "00000000000000000000000000000bbb";
    const std::uint64_t t = 1'795'392'000'000;
    auto del = send("DELETE", fmt::format("/v1/entities/entry/{}?wait=applied&ts={}", other, t + 10));
    ASSERT_EQ(del.status, 202) << del.body;
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied&ts={}", other, t + 5), R"({"title": "late"})").status, 202);
    got = send("GET", fmt::format("/v1/entities/entry/{}", other));
    EXPECT_EQ(got.status, 404) << got.body;
    EXPECT_NE(got.body.find("deleted"), std::string::npos) << got.body;
    // A newer put brings it back.
    ASSERT_EQ(send("PUT", fmt::format("/v1/entities/entry/{}?wait=applied&ts={}", other, t + 20), R"({"title": "back"})").status, 202);
    EXPECT_EQ(json::parse(send("GET", fmt::format("/v1/entities/entry/{}", other)).body)["body"]["title"], "back");
    // Kinds are separate: the same id of another kind does not exist.
    EXPECT_EQ(send("GET", fmt::format("/v1/entities/user/{}", entry)).status, 404);
}

// Text that zstd cannot shrink below 60 KiB: 64 symbols drawn by a linear congruential generator.
std::string incompressible(std::size_t n) {
    static constexpr char symbols[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::uint64_t x = 12345;
    for (std::size_t i = 0; i < n; ++i) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        out += symbols[(x >> 33) % 64];
    }
    return out;
}

TEST_F(entities_http, bad_input_is_a_4xx_naming_the_problem_and_journals_nothing) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_entities_bad");
    const struct {
        std::string method;
        std::string target;
        std::string body;
        int status;
        std::string field;
    } cases[] = {
        {"PUT", "/v1/entities/trip/" + entry, "{}", 404, "kind"},
        {"PUT", "/v1/entities/entry/abc", "{}", 400, "id"},
        {"PUT", "/v1/entities/entry/0123456789abcdef0123456789abcdef00", "{}", 400, "id"},
        {"PUT", "/v1/entities/entry/" + entry, "[1, 2]", 400, "body"},
        {"PUT", "/v1/entities/entry/" + entry, "\"text\"", 400, "body"},
        {"PUT", "/v1/entities/entry/" + entry, "{", 400, "body"},
        {"PUT", "/v1/entities/entry/" + entry, fmt::format(R"({{"big": "{}"}})", incompressible(90'000)), 400, "body"},
        {"PUT", "/v1/entities/entry/" + entry + "?ts=soon", "{}", 400, "ts"},
        {"PUT", "/v1/entities/entry/" + entry + "?color=red", "{}", 400, "color"},
        {"DELETE", "/v1/entities/entry/" + entry, "{}", 400, "body"},
        {"GET", "/v1/entities/entry/" + entry + "?after=x", "", 400, "after"},
    };
    for (const auto& c : cases) {
        const auto r = send(c.method, c.target, c.body);
        EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " -> " << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("field", std::string()), c.field) << c.target << " -> " << r.body;
    }
    auto st = http_get(port(), "/v1/admin/status");
    ASSERT_TRUE(st);
    EXPECT_EQ(json::parse(st->body)["journal"]["last_seq"], 0);
}

}  // namespace
}  // namespace cairn::test
