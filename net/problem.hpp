// HTTP vocabulary of the net layer (request/response types) and the two ways a route answers:
// RFC 9457 problem details for errors and plain JSON for results. No I/O; any thread.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include <boost/beast/core/string_type.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace cairn::net {

namespace http = boost::beast::http;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

// Beast's string_view is boost::string_view in Boost 1.74 (unless BOOST_BEAST_USE_STD_STRING_VIEW),
// which does not convert to std::string_view by itself.
inline std::string_view to_string_view(boost::beast::string_view s) noexcept { return {s.data(), s.size()}; }

// A problem+json response: {"type": "https://cairn.dev/problems/<slug>", "title", "status", "detail"}
// and "field" when one field of the input is at fault. Every string is escaped (invalid UTF-8
// becomes U+FFFD), so the body is always valid JSON. Content-Length is set.
response problem(http::status status, std::string_view slug, std::string_view title, std::string_view detail,
                 std::optional<std::string_view> field = {}, unsigned version = 11, bool keep_alive = true);

// A JSON response: sets Content-Type application/json, Content-Length, and the version and
// keep-alive of req. body_json must already be JSON; it is not checked.
response json_response(http::status status, std::string body_json, const request& req);

}  // namespace cairn::net
