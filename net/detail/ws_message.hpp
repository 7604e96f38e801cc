// One WebSocket request message (docs/api.md, "WebSocket"): {"id", "method", "path", "body",
// "idempotency_key"} as a JSON text frame or a msgpack binary frame, parsed under limits (nesting,
// id length, UTF-8) into what the router needs, or into why it is refused. Untrusted bytes: it never
// throws for any input (tests/fuzz/ws_message_fuzz.cpp). No I/O; any thread.
#pragma once

#include <boost/beast/http/verb.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace cairn::net::detail {

// Nesting allowed in a message (its body included); deeper input is refused before it is
// turned into objects, so that no recursive walk can exhaust the stack.
inline constexpr int ws_message_depth_max = 32;
// The members a message may have; any other is refused (docs/asyncapi.json's Request lists these).
inline constexpr std::array<std::string_view, 5> ws_message_members = {"id", "method", "path", "body", "idempotency_key"};
inline constexpr std::size_t ws_id_string_bytes_max = 128;

// What a message asks: a request routed like HTTP (GET, POST, PUT, DELETE), or a subscription to
// the change feed (SUBSCRIBE, path /v1/feed?...; pages are pushed as the shards apply ops) or its end
// (UNSUBSCRIBE, with the id the SUBSCRIBE had; no path).
enum class message_kind { request, subscribe, unsubscribe };

// One parsed message, or why it is not one.
struct message {
    nlohmann::json id;                  // null until known
    message_kind kind = message_kind::request;
    boost::beast::http::verb method = boost::beast::http::verb::get;  // of a request
    std::string path;         // with its query
    std::string body;         // JSON text for the route, empty for none
    std::string idempotency_key;
    std::string error;        // non-empty: a 400 answer with this detail
    std::string error_field;
};

// The message in data (binary: msgpack, else JSON text). A message that is not one has error set
// (and error_field when one member is at fault), and id when the id itself was readable.
message parse_message(std::string_view data, bool binary);

}  // namespace cairn::net::detail
