// Each model's op as an operator reads and edits it (the admin API's dead letters, error queue and
// trace): one description per model — its name, how its op renders to JSON, and how an edited
// JSON op becomes an op again through the same parser as that model's client write — so that
// rendering and editing cannot drift apart model by model, and a new model is one row of the
// table in op_forms.cpp. No exception leaves this file. Included by the admin routes only (it
// pulls in nlohmann/json and simdjson).
#pragma once

#include "core/op.hpp"
#include "net/edge_json.hpp"

#include <nlohmann/json.hpp>

#include <string_view>
#include <variant>

namespace cairn::net {
struct gateway;
}

namespace cairn::net::detail {

// The op as the JSON an operator reads and edits: "model", the fields of the model's client
// write, and "ts" in Unix milliseconds. A PUT .../dead/{shard}/{seq}/op body takes exactly this
// shape back.
nlohmann::json op_json(const gateway& gw, const core::op& o);

// An edited op, validated exactly like a client write of its model ("model" names it; without
// it, an edge). Edges, nodes and entities keep the edit's "ts" (their rows are last-writer-wins,
// so the edit keeps its place in the order); counters and cells are stamped now (their "ts"
// orders nothing: an increment counts once by op id, a cell is versioned by its ref_key).
// Index definitions cannot be edited. The entity's kind indexes come from gw.indexes now.
std::variant<core::op, input_error> parse_edited_op(gateway& gw, std::string_view body);

}  // namespace cairn::net::detail
