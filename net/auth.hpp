// Bearer-token authentication against the tokens of the configuration. Tokens are compared in
// constant time and never logged. Immutable after construction: any thread may use it.
#pragma once

#include "core/config.hpp"
#include "core/result.hpp"
#include "net/problem.hpp"

#include <string_view>
#include <vector>

namespace cairn::net {

class auth {
public:
    // No tokens: authentication is off and every caller is admin (loopback development).
    // Empty token strings never match anything.
    explicit auth(std::vector<core::token_config> tokens);

    // The caller's role from "Authorization: Bearer <token>". Errors: core::errc::unauthorized
    // for a missing or malformed header or an unknown token (answer with unauthorized()).
    // Whether the role suffices for a route is the router's decision (403).
    [[nodiscard]] core::result<core::role> authenticate(const request& req) const;

    bool enabled() const noexcept { return !tokens_.empty(); }

    // The 401 problem for req, with WWW-Authenticate: Bearer.
    static response unauthorized(const request& req);

private:
    std::vector<core::token_config> tokens_;
};

}  // namespace cairn::net
