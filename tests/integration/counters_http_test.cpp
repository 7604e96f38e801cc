// Counters end to end (issue 6) through the real cairnd and real shards, with the metric of
// docs/examples/counters.toml: increments at both sides of a UTC midnight land in the right
// hour and day; totals, series and the top-N breakdown with a week-over-week change; increments
// retried with the same Idempotency-Key count once; bad input is a 4xx and journals nothing.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace cairn::test {
namespace {

using json = nlohmann::json;
constexpr std::int64_t midnight = 20780LL * 86'400'000;  // 2026-11-23T00:00:00Z
const std::string day0 = "2026-11-22T00:00:00Z";

class counters_http : public cairnd_test {
protected:
    void start(const std::string& db) {
        cairnd_options o;
        o.extra_toml = counter_example_toml();
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
    void post(const std::string& body, const std::string& query = "?wait=applied") {
        auto w = http_post(port(), "/v1/counters/plays" + query, body);
        ASSERT_TRUE(w);
        ASSERT_EQ(w->status, 202) << w->body;
    }
};

std::string play(int owner, int track, const std::string& country, const std::string& time, int delta = 1) {
    return fmt::format(R"({{"dimensions": {{"owner_id": {}, "track_id": "{}", "country": "{}", "app": "web"}}, "time": "{}", "delta": {}}})",
                       owner, track, country, time, delta);
}

TEST_F(counters_http, increments_land_in_utc_buckets_and_read_as_totals_series_and_top) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_counters");
    // The last millisecond of 2026-11-22 and the first of 2026-11-23, and a play a week earlier.
    post(fmt::format(R"({{"increments": [{}, {}, {}, {}, {}, {}]}})", play(9, 5, "DE", "2026-11-22T23:59:59.999Z", 3),
                     play(9, 5, "DE", "2026-11-23T00:00:00Z", 2), play(9, 5, "FR", "2026-11-23T00:30:00Z"),
                     play(9, 6, "DE", "2026-11-23T01:00:00Z", 7), play(9, 5, "US", "2026-11-16T12:00:00Z", 4),
                     play(9, 5, "DE", std::to_string(midnight - 7 * 86'400'000 + 1), 1)));

    // Days: the 22nd holds 3, the 23rd 3 (track 5).
    auto t = get("/v1/counters/plays/total?track_id=5&from=2026-11-22&to=2026-11-23");
    EXPECT_EQ(t["total"], 3);
    EXPECT_EQ(t["granularity"], "day");
    t = get("/v1/counters/plays/total?track_id=5&from=2026-11-23&to=2026-11-24");
    EXPECT_EQ(t["total"], 3);
    // Hours: 23:00 of the 22nd holds 3, 00:00 of the 23rd 3, 01:00 nothing for track 5.
    auto s = get("/v1/counters/plays/series?track_id=5&granularity=hour&from=2026-11-22T23:00:00Z&to=2026-11-23T02:00:00Z");
    ASSERT_EQ(s["points"].size(), 3u) << s.dump();
    EXPECT_EQ(s["points"][0]["time"], "2026-11-22T23:00:00Z");
    EXPECT_EQ(s["points"][0]["count"], 3);
    EXPECT_EQ(s["points"][1]["count"], 3);
    EXPECT_EQ(s["points"][2]["count"], 0);
    EXPECT_EQ(s["table"], "plays_by_track_hour");
    // By owner and track (the owner table), hourly.
    s = get("/v1/counters/plays/series?owner_id=9&track_id=6&from=2026-11-23T00:00:00Z&to=2026-11-23T02:00:00Z&granularity=hour");
    EXPECT_EQ(s["table"], "plays_by_owner_hour");
    EXPECT_EQ(s["total"], 7);

    // Plays of track 5 by country this week against last week.
    auto top = get("/v1/counters/plays/top?track_id=5&by=country&from=2026-11-22&to=2026-11-24&compare_from=2026-11-15&"
                   "compare_to=2026-11-17&n=5");
    ASSERT_EQ(top["rows"].size(), 2u) << top.dump();
    EXPECT_EQ(top["rows"][0]["value"], "DE");
    EXPECT_EQ(top["rows"][0]["count"], 5);
    EXPECT_EQ(top["rows"][0]["previous_count"], 1);
    EXPECT_DOUBLE_EQ(top["rows"][0]["change_percent"].get<double>(), 400.0);
    EXPECT_EQ(top["rows"][1]["value"], "FR");
    EXPECT_TRUE(top["rows"][1]["change_percent"].is_null());
    EXPECT_EQ(top["total"], 6);

    // A query no table answers with one range read is refused, naming the tables.
    auto none = get("/v1/counters/plays/total?owner_id=9&from=2026-11-22&to=2026-11-24&granularity=hour", 422);
    EXPECT_NE(none["detail"].get<std::string>().find("plays_by_owner_hour"), std::string::npos) << none.dump();
}

TEST_F(counters_http, a_retried_request_with_its_idempotency_key_counts_once_and_reads_wait_for_it) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_counters_retry");
    const auto body = play(1, 77, "DE", "2026-11-23T10:00:00Z", 5);
    const std::map<std::string, std::string> key{{"Idempotency-Key", "play-77-once"}};
    std::uint64_t seq = 0;
    for (int i = 0; i < 3; ++i) {
        auto w = http_post(port(), "/v1/counters/plays", body, key);
        ASSERT_TRUE(w);
        ASSERT_EQ(w->status, 202) << w->body;
        seq = json::parse(w->body)["seq"].get<std::uint64_t>();
    }
    // Read-your-writes: after=seq waits until the track's shard applied it.
    auto t = get(fmt::format("/v1/counters/plays/total?track_id=77&from=2026-11-23&to=2026-11-24&after={}", seq));
    EXPECT_EQ(t["total"], 5);
}

TEST_F(counters_http, bad_input_is_a_4xx_naming_the_problem_and_journals_nothing) {
    CAIRN_REQUIRE_SHARDS(2u);
    start("cairn_e2e_counters_bad");
    const auto ok_dims = R"("owner_id": 1, "track_id": 2, "country": "DE", "app": "web")";
    const struct {
        std::string target;
        std::string body;
        int status;
        std::string field;
    } cases[] = {
        {"/v1/counters/likes", fmt::format(R"({{"dimensions": {{{}}}}})", ok_dims), 404, "metric"},
        {"/v1/counters/plays", R"({"dimensions": {"owner_id": 1, "track_id": 2, "country": "DE", "app": "web", "city": "x"}})", 400,
         "dimensions.city"},
        {"/v1/counters/plays", R"({"dimensions": {"owner_id": 1, "track_id": 2, "country": "DEU", "app": "web"}})", 400,
         "dimensions.country"},
        {"/v1/counters/plays", R"({"dimensions": {"owner_id": 1, "track_id": 2, "country": "DE"}})", 400, "dimensions.app"},
        {"/v1/counters/plays", R"({"dimensions": {"owner_id": "x1", "track_id": 2, "country": "DE", "app": "web"}})", 400,
         "dimensions.owner_id"},
        {"/v1/counters/plays", fmt::format(R"({{"dimensions": {{{}}}, "delta": 1.5}})", ok_dims), 400, "delta"},
        {"/v1/counters/plays", fmt::format(R"({{"dimensions": {{{}}}, "delta": "1"}})", ok_dims), 400, "delta"},
        {"/v1/counters/plays", fmt::format(R"({{"dimensions": {{{}}}, "time": "2099-01-01T00:00:00Z"}})", ok_dims), 400, "time"},
        {"/v1/counters/plays", fmt::format(R"({{"dimensions": {{{}}}, "time": "yesterday"}})", ok_dims), 400, "time"},
        {"/v1/counters/plays", fmt::format(R"({{"dimensions": {{{}}}, "color": 1}})", ok_dims), 400, "color"},
        {"/v1/counters/plays", R"({"increments": []})", 400, "increments"},
        {"/v1/counters/plays", R"([1])", 400, "body"},
    };
    for (const auto& c : cases) {
        auto res = http_post(port(), c.target, c.body);
        ASSERT_TRUE(res) << c.target;
        EXPECT_EQ(res->status, c.status) << c.target << " " << c.body << " -> " << res->body;
        const auto j = json::parse(res->body, nullptr, false);
        EXPECT_EQ(j.value("field", std::string()), c.field) << c.body << " -> " << res->body;
    }
    const struct {
        std::string target;
        int status;
        std::string field;
    } reads[] = {
        {"/v1/counters/plays/total?track_id=1&from=2026-11-22T00:30:00Z&to=2026-11-23&granularity=hour", 400, "from"},
        {"/v1/counters/plays/total?track_id=1&from=2026-11-23&to=2026-11-22", 400, "to"},
        {"/v1/counters/plays/total?track_id=1&to=2026-11-22", 400, "from"},
        {"/v1/counters/plays/total?track_id=1&city=x&from=2026-11-22&to=2026-11-23", 400, "city"},
        {"/v1/counters/plays/total?track_id=abc&from=2026-11-22&to=2026-11-23", 400, "track_id"},
        {"/v1/counters/plays/top?track_id=1&from=2026-11-22&to=2026-11-23", 400, "by"},
        {"/v1/counters/plays/top?track_id=1&by=city&from=2026-11-22&to=2026-11-23", 400, "by"},
        {"/v1/counters/plays/series?track_id=1&from=2020-01-01&to=2026-11-23&granularity=hour", 400, "to"},
        {"/v1/counters/nope/total?from=2026-11-22&to=2026-11-23", 404, "metric"},
    };
    for (const auto& c : reads) {
        auto res = http_get(port(), c.target);
        ASSERT_TRUE(res) << c.target;
        EXPECT_EQ(res->status, c.status) << c.target << " -> " << res->body;
        const auto j = json::parse(res->body, nullptr, false);
        EXPECT_EQ(j.value("field", std::string()), c.field) << c.target << " -> " << res->body;
    }
    auto st = http_get(port(), "/v1/admin/status");
    ASSERT_TRUE(st);
    ASSERT_EQ(st->status, 200) << st->body;
    EXPECT_EQ(json::parse(st->body)["journal"]["last_seq"], 0);
    // The declared metrics are listed for clients.
    auto cat = get("/v1/counters");
    ASSERT_EQ(cat["metrics"].size(), 1u);
    EXPECT_EQ(cat["metrics"][0]["name"], "plays");
}

}  // namespace
}  // namespace cairn::test
