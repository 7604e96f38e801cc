// Bearer tokens through the real cairnd: roles read < write < admin, 401 without a valid token,
// 403 below the route's role, and no token ever written to the log.
#include "tests/support/e2e.hpp"

#include <tuple>

#include <gtest/gtest.h>

namespace cairn::test {
namespace {

const std::string read_token = "read-token-0123456789";
const std::string write_token = "write-token-0123456789";
const std::string admin_token = "admin-token-0123456789";

std::optional<simple_reply> send(std::uint16_t port, http::verb method, const std::string& target,
                                 const std::string& body, const std::optional<std::string>& bearer) {
    http_client c(port);
    header_list h{{"Content-Type", "application/json"}};
    if (bearer) h.emplace_back("Authorization", "Bearer " + *bearer);
    auto r = c.send(method, target, body, h);
    if (!r) return std::nullopt;
    return simple_reply{static_cast<int>(r.value().code()), r.value().body};
}

TEST(auth_http, roles_decide_and_tokens_are_never_logged) {
    CAIRN_REQUIRE_SHARDS(2u);
    fresh_database("cairn_e2e_auth");
    cairnd_options o;
    o.database = "cairn_e2e_auth";
    o.extra_toml = "[[tokens]]\ntoken = \"" + read_token + "\"\nrole = \"read\"\n" +
                   "[[tokens]]\ntoken = \"" + write_token + "\"\nrole = \"write\"\n" +
                   "[[tokens]]\ntoken = \"" + admin_token + "\"\nrole = \"admin\"\n";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    const auto port = gw.port();
    const std::string edge = R"({"source_id": 1, "destination_id": 2})";
    const std::string post = "/v1/graphs/follows/edges";
    const std::string get = "/v1/graphs/follows/nodes/1/count";

    struct case_t {
        http::verb method;
        std::string target;
        std::optional<std::string> bearer;
        int status;
    };
    const std::vector<case_t> cases = {
        {http::verb::post, post, std::nullopt, 401},
        {http::verb::post, post, std::string("not-a-token-at-all-xx"), 401},
        {http::verb::post, post, read_token + "x", 401},
        {http::verb::post, post, read_token, 403},
        {http::verb::post, post, write_token, 202},
        {http::verb::post, post, admin_token, 202},
        {http::verb::get, get, std::nullopt, 401},
        {http::verb::get, get, read_token, 200},
        {http::verb::get, get, write_token, 200},
        // The health probes are public; metrics are not.
        {http::verb::get, "/livez", std::nullopt, 200},
        {http::verb::get, "/readyz", std::nullopt, 200},
        // ... whatever Authorization comes with them (issue 13: load balancers send stale ones).
        {http::verb::get, "/livez", read_token + "x", 200},
        {http::verb::get, "/readyz", std::string("not-a-token-at-all-xx"), 200},
        {http::verb::get, "/readyz?verbose", std::string("stale token with spaces"), 200},
        {http::verb::get, "/metrics", read_token + "x", 401},
        {http::verb::get, "/metrics", std::nullopt, 401},
        {http::verb::get, "/metrics", read_token, 200},
        // The admin routes: a reader may look (the dashboard of a read token), only admin may act.
        {http::verb::get, "/v1/admin/status", std::nullopt, 401},
        {http::verb::get, "/v1/admin/status", read_token, 200},
        {http::verb::get, "/v1/admin/dead", read_token, 200},
        {http::verb::get, "/v1/admin/errors", write_token, 200},
        {http::verb::post, "/v1/admin/errors/retry-now", read_token, 403},
        {http::verb::post, "/v1/admin/errors/retry-now", write_token, 403},
        {http::verb::post, "/v1/admin/errors/retry-now", admin_token, 200},
        // The API description and the dashboard's files are public; whoami tells anyone their role.
        {http::verb::get, "/v1/openapi.json", std::nullopt, 200},
        {http::verb::get, "/ui/", std::nullopt, 200},
        {http::verb::get, "/v1/whoami", std::nullopt, 200},
    };
    for (const auto& c : cases) {
        auto r = send(port, c.method, c.target, c.target == post ? edge : (c.method == http::verb::post ? R"({"all": true})" : ""), c.bearer);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, c.status) << c.target << " with " << c.bearer.value_or("no token") << ": " << r->body;
        if (c.status >= 400) {
            auto j = nlohmann::json::parse(r->body, nullptr, false);
            ASSERT_FALSE(j.is_discarded()) << r->body;
            EXPECT_EQ(j["status"], c.status);
            for (const auto& t : {read_token, write_token, admin_token}) {
                EXPECT_EQ(r->body.find(t), std::string::npos) << "a token was echoed in " << r->body;
            }
        }
    }
    for (const auto& [bearer, role, authenticated] : std::vector<std::tuple<std::optional<std::string>, std::string, bool>>{
             {std::nullopt, "none", false}, {read_token + "x", "none", false}, {read_token, "read", true},
             {write_token, "write", true}, {admin_token, "admin", true}}) {
        auto r = send(port, http::verb::get, "/v1/whoami", "", bearer);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const auto j = nlohmann::json::parse(r->body);
        EXPECT_EQ(j["role"], role) << bearer.value_or("no token");
        EXPECT_EQ(j["authenticated"], authenticated) << bearer.value_or("no token");
        EXPECT_EQ(j["tokens_required"], true);
    }
    EXPECT_EQ(gw.terminate(), 0);
    const auto log = gw.log_tail(1 << 20);
    for (const auto& t : {read_token, write_token, admin_token}) {
        EXPECT_EQ(log.find(t), std::string::npos) << "a token reached the log";
    }
}

}  // namespace
}  // namespace cairn::test
