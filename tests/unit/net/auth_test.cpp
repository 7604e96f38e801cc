#include "net/auth.hpp"

#include <boost/beast/http/field.hpp>

#include <gtest/gtest.h>

namespace cairn::net {
namespace {

const std::string read_token = "read-token-0123456789";
const std::string admin_token = "admin-token-0123456789";

auth configured() {
    return auth({{read_token, core::role::read}, {admin_token, core::role::admin}});
}

request with_authorization(std::string_view value) {
    request req{http::verb::get, "/", 11};
    req.set(http::field::authorization, std::string(value));
    return req;
}

TEST(auth, without_tokens_everyone_is_admin) {
    const auth a({});
    EXPECT_FALSE(a.enabled());
    const auto r = a.authenticate(request{http::verb::get, "/", 11});
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), core::role::admin);
}

TEST(auth, known_tokens_give_their_role) {
    const auth a = configured();
    EXPECT_TRUE(a.enabled());
    const auto r = a.authenticate(with_authorization("Bearer " + read_token));
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), core::role::read);
    const auto adm = a.authenticate(with_authorization("Bearer " + admin_token));
    ASSERT_TRUE(adm);
    EXPECT_EQ(adm.value(), core::role::admin);
}

TEST(auth, scheme_is_case_insensitive) {
    const auto r = configured().authenticate(with_authorization("bEaReR " + admin_token));
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), core::role::admin);
}

TEST(auth, missing_header_is_an_anonymous_caller) {
    // Anonymous callers reach only public routes (the health probes); the router answers 401
    // for every other route.
    const auto r = configured().authenticate(request{http::verb::get, "/", 11});
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), core::role::none);
}

TEST(auth, malformed_or_unknown_tokens_are_unauthorized) {
    const auth a = configured();
    for (const std::string& value :
         {std::string("Basic dXNlcjpwYXNz"), std::string("Bearer"), std::string("Bearer "), std::string("Bearer  "),
          "Bearer" + admin_token, "Token " + admin_token, "Bearer " + admin_token + " extra",
          "Bearer " + admin_token + "x", "Bearer " + admin_token.substr(0, admin_token.size() - 1),
          std::string("Bearer admin-token-012345678\xff"), "Bearer " + read_token + read_token}) {
        const auto r = a.authenticate(with_authorization(value));
        EXPECT_FALSE(r) << value;
        if (!r) {
            EXPECT_EQ(r.error(), core::errc::unauthorized) << value;
        }
    }
}

TEST(auth, unauthorized_problem_asks_for_a_bearer_token) {
    request req{http::verb::get, "/", 11};
    const response res = auth::unauthorized(req);
    EXPECT_EQ(res.result(), http::status::unauthorized);
    EXPECT_EQ(res[http::field::www_authenticate], "Bearer");
    EXPECT_EQ(res[http::field::content_type], "application/problem+json");
}

}  // namespace
}  // namespace cairn::net
