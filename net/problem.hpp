// HTTP vocabulary of the net layer (request/response types) and the two ways a route answers:
// RFC 9457 problem details for errors and plain JSON for results. No I/O; any thread.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include <boost/beast/core/string_type.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cairn::net {

namespace http = boost::beast::http;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

// Beast's string_view is boost::string_view in Boost 1.74 (unless BOOST_BEAST_USE_STD_STRING_VIEW),
// which does not convert to std::string_view by itself.
inline std::string_view to_string_view(boost::beast::string_view s) noexcept { return {s.data(), s.size()}; }

// The problem types cairn answers, one per slug: its status and its title are fixed here, so that
// a slug always comes with the same title (sentence case, naming the problem, not the HTTP
// reason phrase). docs/api.md's Errors table lists each (the docs test checks it).
struct problem_type {
    http::status status;
    std::string_view slug;
    std::string_view title;
    std::string_view when;  // one line for the docs
};

namespace problems {
inline constexpr problem_type invalid_field{http::status::bad_request, "invalid-field", "Invalid request",
    "a bad parameter, path segment or body field (named in `field`)"};
inline constexpr problem_type invalid_message{http::status::bad_request, "invalid-message", "Invalid message",
    "WebSocket: the message is not one object with an `id` and a `path`"};
inline constexpr problem_type malformed_request{http::status::bad_request, "malformed-request", "Malformed request",
    "not valid HTTP/1.1, or a WebSocket handshake without a valid key"};
inline constexpr problem_type unauthorized{http::status::unauthorized, "unauthorized", "Unauthorized",
    "missing or unknown bearer token"};
inline constexpr problem_type forbidden{http::status::forbidden, "forbidden", "Forbidden",
    "the token's role is below the route's"};
inline constexpr problem_type not_found{http::status::not_found, "not-found", "Not found",
    "no such route, edge, entity, cell, dead letter or file"};
inline constexpr problem_type unknown_kind{http::status::not_found, "unknown-kind", "Unknown entity kind",
    "the entity kind is not declared in the config"};
inline constexpr problem_type unknown_cell_table{http::status::not_found, "unknown-cell-table", "Unknown cell table",
    "the cell table is not declared in the config"};
inline constexpr problem_type unknown_metric{http::status::not_found, "unknown-metric", "Unknown metric",
    "the counter metric is not declared in the config"};
inline constexpr problem_type unknown_index{http::status::not_found, "unknown-index", "Unknown index",
    "no index of that name"};
inline constexpr problem_type no_cleaner_run{http::status::not_found, "no-cleaner-run", "No cleaner run",
    "no back-fill of that index has run on this gateway"};
inline constexpr problem_type no_verify_run{http::status::not_found, "no-verify-run", "No verify run",
    "no verify run of that index has run on this gateway"};
inline constexpr problem_type method_not_allowed{http::status::method_not_allowed, "method-not-allowed", "Method not allowed",
    "known path, wrong method (`Allow` lists the right ones)"};
inline constexpr problem_type cell_exists{http::status::conflict, "cell-exists", "Cell exists",
    "a cell of that row, column and ref key exists with another body"};
inline constexpr problem_type index_exists{http::status::conflict, "index-exists", "Index exists",
    "an index of that name exists with another definition"};
inline constexpr problem_type cleaner_running{http::status::conflict, "cleaner-running", "Index job running",
    "a back-fill or verify run of that index is running"};
inline constexpr problem_type split_running{http::status::conflict, "split-running", "Split under way",
    "a split of the shard map is under way (one at a time), or is not far enough along for the request"};
inline constexpr problem_type split_not_ready{http::status::conflict, "split-not-ready", "Split not ready",
    "a split's precondition does not hold: the new shard is not listed in `[[shards]]` at that address, or holds rows"};
inline constexpr problem_type feed_range_gone{http::status::gone, "feed-range-gone", "Feed range gone",
    "`GET /v1/feed`: the journal no longer holds the ops after `from` (retention); member `oldest_seq`"};
inline constexpr problem_type body_too_large{http::status::payload_too_large, "body-too-large", "Body too large",
    "body above `limits.body_bytes_max`"};
inline constexpr problem_type no_table{http::status::unprocessable_entity, "no-table", "No table answers this query",
    "no index table covers the query's fields"};
inline constexpr problem_type index_scan_budget{http::status::unprocessable_entity, "index-scan-budget", "Index query too expensive",
    "an index query read more than `limits.set_scan_rows_max` rows without filling its page"};
inline constexpr problem_type set_scan_budget{http::status::unprocessable_entity, "set-scan-budget", "Set operation too expensive",
    "a set expression would read more than `limits.set_scan_rows_max` rows"};
inline constexpr problem_type too_many_groups{http::status::unprocessable_entity, "too-many-groups", "Too many groups",
    "a counter breakdown has more than `counters.groups_max` distinct values"};
inline constexpr problem_type unsupported_websocket_version{http::status::upgrade_required, "unsupported-websocket-version", "Unsupported WebSocket version",
    "a WebSocket handshake of another version than 13"};
inline constexpr problem_type too_many_in_flight{http::status::too_many_requests, "too-many-in-flight", "Too many requests in flight",
    "WebSocket: `limits.ws_in_flight_max` requests of the connection are running"};
inline constexpr problem_type header_too_large{http::status::request_header_fields_too_large, "header-too-large", "Header too large",
    "header above `limits.header_bytes_max`"};
inline constexpr problem_type internal{http::status::internal_server_error, "internal", "Internal error",
    "a bug: please report it with the log"};
inline constexpr problem_type body_corrupt{http::status::internal_server_error, "body-corrupt", "Stored body does not decode",
    "a stored body on a shard is damaged"};
inline constexpr problem_type journal_corrupt{http::status::internal_server_error, "journal-corrupt", "Journal record corrupt",
    "a journal record is damaged"};
inline constexpr problem_type journal_full{http::status::service_unavailable, "journal-full", "Journal full",
    "the write was not journaled; retry after `Retry-After`"};
inline constexpr problem_type disk_full{http::status::service_unavailable, "disk-full", "Disk full",
    "the write was not journaled; retry after `Retry-After`"};
inline constexpr problem_type journal_failed{http::status::service_unavailable, "journal-failed", "Journal failed",
    "the journal cannot write (a failed flush or disk): the write may have been journaled; retry it with the same idempotency key after `Retry-After`"};
inline constexpr problem_type journal_unavailable{http::status::service_unavailable, "journal-unavailable", "Journal unavailable",
    "the journal did not take an admin change (`Retry-After: 1`)"};
inline constexpr problem_type overloaded{http::status::service_unavailable, "overloaded", "Overloaded",
    "the write was not journaled; retry after `Retry-After`"};
inline constexpr problem_type shutting_down{http::status::service_unavailable, "shutting-down", "Shutting down",
    "cairnd is stopping; retry on another gateway or after `Retry-After`"};
inline constexpr problem_type shard_unavailable{http::status::service_unavailable, "shard-unavailable", "Shard unavailable",
    "a shard a read needs did not answer, or is failing while another read tries it again (`Retry-After: 1`)"};
inline constexpr problem_type too_many_connections{http::status::service_unavailable, "too-many-connections", "Too many connections",
    "at `limits.connections_max` with every connection busy with a request"};
inline constexpr problem_type not_applied_yet{http::status::gateway_timeout, "not-applied-yet", "Not applied yet",
    "`after=` or `wait=applied` timed out; members `seq` and `shards`"};
}  // namespace problems

// Every problem type above, in the order of the docs' table.
std::span<const problem_type> problem_catalogue() noexcept;

// A problem+json response: {"type": "https://cairn.dev/problems/<slug>", "title", "status", "detail"}
// and "field" when one field of the input is at fault. Every string is escaped (invalid UTF-8
// becomes U+FFFD), so the body is always valid JSON. Content-Length is set.
response problem(const problem_type& type, std::string_view detail, std::optional<std::string_view> field = {},
                 unsigned version = 11, bool keep_alive = true);

// A JSON response: sets Content-Type application/json, Content-Length, and the version and
// keep-alive of req. body_json must already be JSON; it is not checked.
response json_response(http::status status, std::string body_json, const request& req);

}  // namespace cairn::net
