// Parsing and rendering of the edge API's JSON, independent of HTTP so that the WebSocket
// path and the tests share it. Untrusted input goes through simdjson (depth-limited); no
// exception leaves this file. Thread-safe (one parser per thread).
#pragma once

#include "core/edge_rules.hpp"
#include "core/hlc.hpp"
#include "core/op.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::net {

// A client error: which field is at fault (JSON-pointer-like, e.g. "edges[3].source_id") and why.
struct input_error {
    std::string field;
    std::string detail;
};

struct edge_write_options {
    std::size_t batch_ops_max = 1000;
    std::uint64_t ts_future_ms_max = 3'600'000;  // client ts at most this far ahead of now
};

// Parses the body of POST /v1/graphs/{graph}/edges: one edge object, or {"edges": [...]}.
// Each edge: source_id, destination_id (non-negative 64-bit, number or decimal string),
// state ("normal" | "removed" | "archived" | "negative", default normal), position (int64,
// default the op's wall-clock milliseconds), keep_position (bool; default true for archived,
// false otherwise), ts (client milliseconds since the Unix epoch, optional). Stamps each op
// with clock.now() unless the client gave ts. op_id is left 0 (the journal assigns it).
std::variant<std::vector<core::op>, input_error> parse_edge_writes(std::string_view graph, std::string_view body,
                                                                   core::hlc& clock, std::uint64_t now_ms,
                                                                   const edge_write_options& opts);

// Parses POST /v1/graphs/{graph}/nodes/{node_id}/{action} (issues 4, 17): action "remove",
// "archive", "negate", "restore" or "unarchive" (the same); direction "forward", "backward" or
// "both" (empty: both); the body is empty or {"ts": client milliseconds} (as for edges).
std::variant<core::op, input_error> parse_node_write(std::string_view graph, std::string_view node_id,
                                                     std::string_view action, std::string_view direction,
                                                     std::string_view body, core::hlc& clock, std::uint64_t now_ms,
                                                     const edge_write_options& opts);

// Parses the body of POST /v1/graphs/{graph}/edges/get: {"edges": [{"source_id": .., "destination_id": ..}, ...]}
// with 1 to batch_ops_max keys (ids as for writes), returned in request order.
std::variant<std::vector<std::pair<std::int64_t, std::int64_t>>, input_error> parse_edge_keys(std::string_view body,
                                                                                            std::size_t batch_ops_max);

// One single-node query: a leaf of a set operation, or one count of POST .../counts.
struct set_query {
    std::int64_t node_id = 0;
    bool forward = true;
    core::edge_state state = core::edge_state::normal;
};
// One operand of a set request: a single-node query over one or more states (a leaf), or a
// nested operation over its own operands.
struct set_term {
    std::string op;                  // empty: a leaf; else "intersect", "union" or "difference"
    std::vector<set_term> operands;  // an operation's, in request order
    std::int64_t node_id = 0;        // a leaf's
    bool forward = true;
    core::edge_state_set states = core::edge_state::normal;
};
struct set_request {
    set_term expr;     // the top-level operation
    bool descending = false;
    bool count = false;  // answer the expression's size instead of a page
    std::optional<std::size_t> limit;
    std::optional<std::string> cursor;
};
inline constexpr std::size_t set_queries_max = 16;  // leaves in one request, at every depth
inline constexpr std::size_t set_depth_max = 4;     // operations nested in one another, the top one included

// Parses the body of POST /v1/graphs/{graph}/sets:
// {"op": .., "queries": [operand, ...], "order": "asc"|"desc", "limit": .., "cursor": .., "count": bool}
// where an operand is {"node_id": .., "direction": "forward"|"backward", "state": "normal" or
// "normal,archived"} or a nested {"op": .., "queries": [...]}; every operation has 1 or more
// operands (a difference at least 2), at most set_queries_max leaves and set_depth_max levels in all.
// "count" takes neither "limit", "cursor" nor "order".
std::variant<set_request, input_error> parse_set_request(std::string_view body);

// The expression in a canonical text (cursors are scoped to it): op(leaf,...), a leaf as
// <node_id><f|b><state bits>.
std::string set_term_text(const set_term& t);

// Parses the body of POST /v1/graphs/{graph}/counts: {"queries": [{"node_id": .., "direction":
// "forward"|"backward" (default forward), "state": .. (default normal)}, ...]} with 1 to
// batch_ops_max queries, returned in request order.
std::variant<std::vector<set_query>, input_error> parse_count_queries(std::string_view body, std::size_t batch_ops_max);

// Parses a body that is one list of node ids, {"<field>": [..]}, with 1 to ids_max ids (numbers or
// decimal strings, repeats allowed), returned in request order: "other_ids" of POST
// .../nodes/{id}/edges/among, "node_ids" of POST .../nodes/get.
std::variant<std::vector<std::int64_t>, input_error> parse_id_list(std::string_view body, std::string_view field,
                                                                   std::size_t ids_max);

// Parses a non-negative 64-bit id from a path segment.
std::optional<std::int64_t> parse_id(std::string_view text) noexcept;

// How answers render 64-bit integers (ids and positions): JSON numbers (the default), or
// decimal strings for clients whose numbers are doubles (JavaScript) — ?ids=string.
enum class id_format : std::uint8_t { number, string };
void append_int64(std::string& out, std::int64_t v, id_format f);

// {"graph":..,"source_id":..,"destination_id":..,"state":..,"position":..,"ts":"..","ts_ms":..}
std::string render_edge(std::string_view graph, std::int64_t source_id, std::int64_t destination_id,
                        const core::edge_row& row, id_format ids = id_format::number);

// Appends one element of a page: {"destination_id" (forward) or "source_id" (backward):..,
// "state":..,"position":..,"ts":"..","ts_ms":..}. other_id is the node at the other end of the edge.
void append_page_edge(std::string& out, bool forward, std::int64_t other_id, const core::edge_row& row,
                      id_format ids = id_format::number);

}  // namespace cairn::net
