#include "net/problem.hpp"

#include "net/detail/json_escape.hpp"

#include <boost/beast/http/field.hpp>

#include <charconv>

namespace cairn::net {

namespace {
constexpr std::string_view type_prefix = "https://cairn.dev/problems/";
}

response problem(http::status status, std::string_view slug, std::string_view title, std::string_view detail,
                 std::optional<std::string_view> field, unsigned version, bool keep_alive) {
    std::string body;
    body.reserve(96 + type_prefix.size() + slug.size() + title.size() + detail.size() +
                 (field ? field->size() + 12 : 0));
    body += "{\"type\":\"";
    body += type_prefix;
    detail::append_json_chars(body, slug);
    body += '"';
    body += ",\"title\":";
    detail::append_json_string(body, title);
    body += ",\"status\":";
    char digits[8];
    const auto [end, ec] = std::to_chars(std::begin(digits), std::end(digits), static_cast<unsigned>(status));
    body.append(digits, ec == std::errc{} ? end : digits);
    body += ",\"detail\":";
    detail::append_json_string(body, detail);
    if (field) {
        body += ",\"field\":";
        detail::append_json_string(body, *field);
    }
    body += '}';

    response res{status, version};
    res.set(http::field::content_type, "application/problem+json");
    res.keep_alive(keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

response json_response(http::status status, std::string body_json, const request& req) {
    response res{status, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body_json);
    res.prepare_payload();
    return res;
}

}  // namespace cairn::net
