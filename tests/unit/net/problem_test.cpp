#include "net/problem.hpp"

#include <boost/beast/http/field.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <set>
#include <string_view>

namespace cairn::net {
namespace {

nlohmann::json parse_body(const response& res) { return nlohmann::json::parse(res.body()); }

TEST(problem, has_rfc9457_members_and_content_type) {
    const response res = problem(problems::not_found, "no such route");
    EXPECT_EQ(res.result(), http::status::not_found);
    EXPECT_EQ(res[http::field::content_type], "application/problem+json");
    EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
    const auto j = parse_body(res);
    EXPECT_EQ(j.at("type"), "https://cairn.dev/problems/not-found");
    EXPECT_EQ(j.at("title"), "Not found");
    EXPECT_EQ(j.at("status"), 404);
    EXPECT_EQ(j.at("detail"), "no such route");
    EXPECT_FALSE(j.contains("field"));
    EXPECT_TRUE(res.keep_alive());
    EXPECT_EQ(res.version(), 11u);
}

TEST(problem, names_the_field_at_fault) {
    const response res =
        problem(problems::invalid_field, "not a number", "edges[3].position");
    EXPECT_EQ(parse_body(res).at("field"), "edges[3].position");
}

TEST(problem, escapes_quotes_controls_and_backslashes) {
    const std::string nasty = "a\"b\\c\nd\te\x01\x1f\x7f</script>";
    const problem_type odd{http::status::bad_request, "x", nasty, ""};
    const response res = problem(odd, nasty, nasty);
    const auto j = parse_body(res);  // Throws (fails the test) on invalid JSON.
    EXPECT_EQ(j.at("title"), nasty);
    EXPECT_EQ(j.at("detail"), nasty);
    EXPECT_EQ(j.at("field"), nasty);
}

TEST(problem, replaces_invalid_utf8_and_keeps_valid_utf8) {
    const std::string valid = "gr\xC3\xBC\xC3\x9F \xE2\x82\xAC \xF0\x9F\x98\x80";  // "grüß € 😀"
    const std::string invalid = "a\xFF" "b\xC3" "c\xE0\x80\x80" "d\xED\xA0\x80" "e\xF4\x90\x80\x80";
    const problem_type odd{http::status::bad_request, "x", valid, ""};
    const response res = problem(odd, invalid);
    const auto j = parse_body(res);  // nlohmann rejects invalid UTF-8 when parsing.
    EXPECT_EQ(j.at("title"), valid);
    std::string detail = j.at("detail");
    EXPECT_NE(detail.find("\xEF\xBF\xBD"), std::string::npos);
    for (auto at = detail.find("\xEF\xBF\xBD"); at != std::string::npos; at = detail.find("\xEF\xBF\xBD")) {
        detail.erase(at, 3);
    }
    EXPECT_EQ(detail, "abcde");  // Only the invalid bytes were replaced.
}

TEST(problem, carries_version_and_keep_alive) {
    const response res = problem(problems::body_too_large, "big", std::nullopt, 10, false);
    EXPECT_EQ(res.version(), 10u);
    EXPECT_FALSE(res.keep_alive());
    const response res11 = problem(problems::body_too_large, "z", std::nullopt, 11, false);
    EXPECT_EQ(res11[http::field::connection], "close");
}

// One title per slug, and titles that read alike: sentence case (the first letter upper case, no
// other word capitalised but a name such as WebSocket), no HTTP reason phrase in Title Case.
TEST(problem, every_slug_has_one_type_and_a_sentence_case_title) {
    std::set<std::string_view> slugs;
    for (const auto& t : problem_catalogue()) {
        EXPECT_TRUE(slugs.insert(t.slug).second) << "slug twice in the catalogue: " << t.slug;
        ASSERT_FALSE(t.title.empty()) << t.slug;
        EXPECT_TRUE(std::isupper(static_cast<unsigned char>(t.title.front()))) << t.slug << ": " << t.title;
        std::string_view rest = t.title;
        for (auto space = rest.find(' '); space != std::string_view::npos; space = rest.find(' ')) {
            rest.remove_prefix(space + 1);
            const std::string_view word = rest.substr(0, rest.find(' '));
            EXPECT_TRUE(word == "WebSocket" || !std::isupper(static_cast<unsigned char>(word.front())))
                << t.slug << ": '" << t.title << "' is not sentence case";
        }
        EXPECT_FALSE(t.when.empty()) << t.slug;
        EXPECT_EQ(t.slug.find_first_not_of("abcdefghijklmnopqrstuvwxyz-"), std::string_view::npos) << t.slug;
        const auto j = parse_body(problem(t, "d"));
        EXPECT_EQ(j.at("status"), static_cast<int>(t.status));
        EXPECT_EQ(j.at("title"), t.title);
    }
    EXPECT_GE(slugs.size(), 30u);
}

TEST(json_response, takes_version_and_keep_alive_from_the_request) {
    request req{http::verb::get, "/", 10};
    req.keep_alive(true);
    const response res = json_response(http::status::ok, R"({"a":1})", req);
    EXPECT_EQ(res.version(), 10u);
    EXPECT_TRUE(res.keep_alive());
    EXPECT_EQ(res[http::field::content_type], "application/json");
    EXPECT_EQ(res[http::field::content_length], "7");
    EXPECT_EQ(res.body(), R"({"a":1})");

    request close_req{http::verb::get, "/", 11};
    close_req.keep_alive(false);
    EXPECT_FALSE(json_response(http::status::ok, "{}", close_req).keep_alive());
}

}  // namespace
}  // namespace cairn::net
