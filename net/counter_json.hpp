// Parsing of counter increments (issue 6), independent of HTTP so that the WebSocket path and
// the tests share it. Untrusted input goes through simdjson (depth-limited); no exception
// leaves this file. Thread-safe (one parser per thread).
#pragma once

#include "core/counters.hpp"
#include "core/hlc.hpp"
#include "core/op.hpp"
#include "net/edge_json.hpp"

#include <string_view>
#include <variant>
#include <vector>

namespace cairn::net {

// Parses the body of POST /v1/counters/{metric}: one increment, or {"increments": [...]} with
// 1 to batch_ops_max. An increment: {"dimensions": {name: value, ...} (every declared
// dimension; integers as numbers or decimal strings, strings as strings), "time": ms since the
// Unix epoch or RFC 3339 UTC text (default: now; at most catalog.future_ms_max ahead),
// "delta": integer (default 1, |delta| <= 2^50)}. Each op is stamped with clock.now().
std::variant<std::vector<core::op>, input_error> parse_counter_writes(const core::counter_catalog& catalog,
                                                                      const core::counter_metric& metric,
                                                                      std::string_view body, core::hlc& clock,
                                                                      std::uint64_t now_ms, std::size_t batch_ops_max);

// The fields of one increment as JSON (the admin API's view of a counter op, and its edit shape
// without "model"): {"metric", "dimensions": {..}, "time": ms, "delta"}.
std::string render_counter_op(const core::counter_catalog& catalog, const core::counter_op& c);

}  // namespace cairn::net
