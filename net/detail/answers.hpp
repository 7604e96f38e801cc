// The admin routes' two answers: a JSON value as the result, and a problem that keeps the request's
// HTTP version and keep-alive.
#pragma once

#include "net/problem.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string_view>

namespace cairn::net::detail {

// j as the body (invalid UTF-8 in its strings replaced by U+FFFD).
response answer(const request& req, const nlohmann::json& j, http::status status = http::status::ok);

response refuse(const request& req, const problem_type& type, std::string_view detail,
                std::optional<std::string_view> field = std::nullopt);

}  // namespace cairn::net::detail
