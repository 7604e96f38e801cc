#include "net/router.hpp"

#include "tests/unit/net/net_test_util.hpp"

#include <boost/beast/http/field.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

namespace cairn::net {
namespace {

using test::run_sync;
namespace asio = boost::asio;

// A handler that answers with the pattern's name and its captures, as JSON.
handler echo(std::string name) {
    return [name](route_context& ctx) -> asio::awaitable<response> {
        nlohmann::json j;
        j["route"] = name;
        for (const char* key : {"graph", "id", "a", "b"}) {
            if (auto v = ctx.params.get(key)) j[key] = std::string(*v);
        }
        j["query"] = std::string(ctx.query);
        co_return json_response(http::status::ok, j.dump(), ctx.req);
    };
}

struct routed {
    response res;
    std::size_t index = router::npos;
    nlohmann::json body() const { return nlohmann::json::parse(res.body()); }
};

routed route(const router& r, http::verb method, std::string target, core::role role = core::role::admin) {
    request req{method, target, 11};
    routed out;
    out.res = run_sync(r.async_route(req, role, out.index));
    return out;
}

TEST(router, matches_literals_and_captures) {
    router r;
    r.add(http::verb::get, "/v1/graphs/{graph}/edges/{id}", core::role::read, echo("edge"));
    r.add(http::verb::get, "/healthz", core::role::read, echo("health"));

    const auto e = route(r, http::verb::get, "/v1/graphs/follows/edges/42");
    ASSERT_EQ(e.res.result(), http::status::ok);
    EXPECT_EQ(e.body().at("route"), "edge");
    EXPECT_EQ(e.body().at("graph"), "follows");
    EXPECT_EQ(e.body().at("id"), "42");
    EXPECT_EQ(r.pattern(e.index), "/v1/graphs/{graph}/edges/{id}");

    const auto h = route(r, http::verb::get, "/healthz?verbose=1");
    ASSERT_EQ(h.res.result(), http::status::ok);
    EXPECT_EQ(h.body().at("query"), "verbose=1");
    EXPECT_EQ(r.pattern(h.index), "/healthz");
}

TEST(router, matches_whole_paths_only) {
    router r;
    r.add(http::verb::get, "/v1/graphs/{graph}", core::role::read, echo("graph"));
    for (const char* target : {"/v1/graphs", "/v1/graphs/", "/v1/graphs/x/y", "/v1/graphs/x/", "/v1/graphsx/a",
                               "/v1//x", "v1/graphs/x", "*", "/"}) {
        const auto res = route(r, http::verb::get, target);
        EXPECT_EQ(res.res.result(), http::status::not_found) << target;
        EXPECT_EQ(res.index, router::npos) << target;
    }
    EXPECT_EQ(route(r, http::verb::get, "/v1/graphs/x").res.result(), http::status::ok);
}

TEST(router, literal_segments_win_over_captures_whatever_the_order_of_addition) {
    router r;
    r.add(http::verb::get, "/v1/graphs/{graph}", core::role::read, echo("capture"));
    r.add(http::verb::get, "/v1/graphs/stats", core::role::read, echo("literal"));
    EXPECT_EQ(route(r, http::verb::get, "/v1/graphs/stats").body().at("route"), "literal");
    EXPECT_EQ(route(r, http::verb::get, "/v1/graphs/other").body().at("route"), "capture");
}

TEST(router, root_pattern) {
    router r;
    r.add(http::verb::get, "/", core::role::read, echo("root"));
    EXPECT_EQ(route(r, http::verb::get, "/").res.result(), http::status::ok);
    EXPECT_EQ(route(r, http::verb::get, "/x").res.result(), http::status::not_found);
}

TEST(router, unknown_path_is_a_404_problem) {
    router r;
    r.add(http::verb::get, "/a", core::role::read, echo("a"));
    const auto res = route(r, http::verb::get, "/b");
    EXPECT_EQ(res.res.result(), http::status::not_found);
    EXPECT_EQ(res.res[http::field::content_type], "application/problem+json");
    EXPECT_EQ(res.body().at("type"), "https://cairn.dev/problems/not-found");
}

TEST(router, wrong_method_is_a_405_with_allow) {
    router r;
    r.add(http::verb::get, "/v1/things/{id}", core::role::read, echo("get"));
    r.add(http::verb::put, "/v1/things/{id}", core::role::write, echo("put"));
    r.add(http::verb::post, "/v1/things/special", core::role::write, echo("special"));
    const auto res = route(r, http::verb::delete_, "/v1/things/7");
    EXPECT_EQ(res.res.result(), http::status::method_not_allowed);
    EXPECT_EQ(res.res[http::field::allow], "GET, PUT");
    EXPECT_EQ(r.pattern(res.index), "/v1/things/{id}");

    // Both patterns match "special": Allow lists the methods of both, and GET reaches the capture.
    const auto special = route(r, http::verb::delete_, "/v1/things/special");
    EXPECT_EQ(special.res.result(), http::status::method_not_allowed);
    EXPECT_EQ(special.res[http::field::allow], "POST, GET, PUT");
    EXPECT_EQ(route(r, http::verb::get, "/v1/things/special").body().at("route"), "get");
    EXPECT_EQ(route(r, http::verb::post, "/v1/things/special").body().at("route"), "special");
}

TEST(router, role_below_the_routes_is_403) {
    router r;
    r.add(http::verb::post, "/w", core::role::write, echo("w"));
    EXPECT_EQ(route(r, http::verb::post, "/w", core::role::read).res.result(), http::status::forbidden);
    EXPECT_EQ(route(r, http::verb::post, "/w", core::role::write).res.result(), http::status::ok);
    EXPECT_EQ(route(r, http::verb::post, "/w", core::role::admin).res.result(), http::status::ok);
}

TEST(router, handler_exceptions_become_500_problems) {
    router r;
    r.add(http::verb::get, "/throws", core::role::read,
          [](route_context&) -> asio::awaitable<response> { throw std::runtime_error("boom"); co_return response{}; });
    r.add(http::verb::get, "/throws-int", core::role::read,
          [](route_context&) -> asio::awaitable<response> { throw 42; co_return response{}; });
    r.add(http::verb::get, "/throws-before-coroutine", core::role::read,
          [](route_context&) -> asio::awaitable<response> { throw std::logic_error("not a coroutine"); });
    for (const char* target : {"/throws", "/throws-int", "/throws-before-coroutine"}) {
        const auto res = route(r, http::verb::get, target);
        EXPECT_EQ(res.res.result(), http::status::internal_server_error) << target;
        EXPECT_EQ(res.body().at("status"), 500) << target;
    }
}

TEST(router, query_params_are_decoded) {
    router r;
    request req{http::verb::get, "/", 11};
    path_params params;
    route_context ctx{req, params, "a=1&b=x%20y+z&empty=&flag&enc%6Fded=yes&a=2&bad=%zz%4", core::role::read};
    EXPECT_EQ(ctx.query_param("a"), "1");
    EXPECT_EQ(ctx.query_param("b"), "x y z");
    EXPECT_EQ(ctx.query_param("empty"), "");
    EXPECT_EQ(ctx.query_param("flag"), "");
    EXPECT_EQ(ctx.query_param("encoded"), "yes");
    EXPECT_EQ(ctx.query_param("bad"), "%zz%4");
    EXPECT_EQ(ctx.query_param("missing"), std::nullopt);
}

TEST(router, split_target) {
    EXPECT_EQ(router::split_target("/a/b?x=1").first, "/a/b");
    EXPECT_EQ(router::split_target("/a/b?x=1").second, "x=1");
    EXPECT_EQ(router::split_target("/a").second, "");
    EXPECT_EQ(router::split_target("/a?").second, "");
}

TEST(router, async_route_without_index) {
    router r;
    r.add(http::verb::get, "/a", core::role::read, echo("a"));
    request req{http::verb::get, "/a", 11};
    EXPECT_EQ(run_sync(r.async_route(req, core::role::read)).result(), http::status::ok);
}

}  // namespace
}  // namespace cairn::net
