#include "net/problem.hpp"

#include "net/detail/json_escape.hpp"

#include <boost/beast/http/field.hpp>

#include <charconv>

namespace cairn::net {

namespace {
constexpr std::string_view type_prefix = "https://cairn.dev/problems/";
}

std::span<const problem_type> problem_catalogue() noexcept {
    static constexpr problem_type all[] = {
        problems::invalid_field,
        problems::invalid_message,
        problems::malformed_request,
        problems::unauthorized,
        problems::forbidden,
        problems::not_found,
        problems::unknown_kind,
        problems::unknown_cell_table,
        problems::unknown_metric,
        problems::unknown_index,
        problems::no_cleaner_run,
        problems::no_verify_run,
        problems::method_not_allowed,
        problems::cell_exists,
        problems::index_exists,
        problems::cleaner_running,
        problems::split_running,
        problems::split_not_ready,
        problems::feed_range_gone,
        problems::body_too_large,
        problems::no_table,
        problems::index_scan_budget,
        problems::set_scan_budget,
        problems::too_many_groups,
        problems::unsupported_websocket_version,
        problems::too_many_in_flight,
        problems::header_too_large,
        problems::internal,
        problems::body_corrupt,
        problems::journal_corrupt,
        problems::journal_full,
        problems::disk_full,
        problems::journal_failed,
        problems::journal_unavailable,
        problems::overloaded,
        problems::shutting_down,
        problems::shard_unavailable,
        problems::too_many_connections,
        problems::not_applied_yet,
    };
    return all;
}

response problem(const problem_type& type, std::string_view detail, std::optional<std::string_view> field,
                 unsigned version, bool keep_alive) {
    const http::status status = type.status;
    const std::string_view slug = type.slug;
    const std::string_view title = type.title;
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
