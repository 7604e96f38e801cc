#include "net/auth.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <cstdint>

namespace cairn::net {

namespace {

bool is_token68_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
}

// The token of "Bearer <token>" (scheme case-insensitive, RFC 9110 section 11.1), or empty.
std::string_view bearer_token(std::string_view value) {
    constexpr std::string_view scheme = "bearer";
    if (value.size() <= scheme.size() + 1) return {};
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        const char c = value[i];
        const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        if (lower != scheme[i]) return {};
    }
    value.remove_prefix(scheme.size());
    if (value.front() != ' ') return {};
    const auto start = value.find_first_not_of(' ');
    if (start == std::string_view::npos) return {};
    value.remove_prefix(start);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.empty() || !std::all_of(value.begin(), value.end(), is_token68_char)) return {};
    return value;
}

// Equal in time that depends only on the length of the candidate (which the caller knows), never
// on where the first difference is or on the secret's content.
bool constant_time_equal(std::string_view candidate, std::string_view secret) {
    if (secret.empty()) return false;
    auto diff = static_cast<std::uint8_t>(candidate.size() != secret.size());
    for (std::size_t i = 0; i < candidate.size(); ++i) {
        diff |= static_cast<std::uint8_t>(static_cast<std::uint8_t>(candidate[i]) ^
                                          static_cast<std::uint8_t>(secret[i % secret.size()]));
    }
    return diff == 0;
}

}  // namespace

auth::auth(std::vector<core::token_config> tokens) : tokens_(std::move(tokens)) {}

core::result<core::role> auth::authenticate(const request& req) const {
    if (tokens_.empty()) return core::role::admin;
    const auto it = req.find(http::field::authorization);
    if (it == req.end()) return core::role::none;  // public routes only; others answer 401
    const std::string_view token = bearer_token(to_string_view(it->value()));
    if (token.empty()) return core::errc::unauthorized;

    // Compare against every token without stopping early, so timing does not tell which one
    // (or whether any) matched.
    bool matched = false;
    core::role role = core::role::read;
    for (const auto& t : tokens_) {
        const bool eq = constant_time_equal(token, t.token);
        matched |= eq;
        if (eq) role = t.token_role;
    }
    if (!matched) return core::errc::unauthorized;
    return role;
}

response auth::unauthorized(const request& req) {
    response res = problem(problems::unauthorized, "a valid bearer token is required (Authorization: Bearer <token>)", std::nullopt,
                           req.version(), req.keep_alive());
    res.set(http::field::www_authenticate, "Bearer");
    return res;
}

}  // namespace cairn::net
