// Parsing and rendering of the cell API's JSON (issue 6), independent of HTTP so that the
// WebSocket path and the tests share it. Bodies are JSON objects stored as canonical msgpack
// (object keys sorted), so that the same object always gives the same bytes. No exception
// leaves this file. Thread-safe.
#pragma once

#include "core/cells.hpp"
#include "core/hlc.hpp"
#include "core/op.hpp"
#include "net/edge_json.hpp"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::net {

// Parses the body of POST /v1/cells/{table}: one cell, or {"cells": [...]} with 1 to
// batch_ops_max. A cell: {"row_key": 32 hex digits or UUID text, "column": 1..64 of
// [A-Za-z0-9_.-], "ref_key": int64 (number or decimal string), "body": a JSON object}. The
// stored body (net/detail/body_json.hpp) must fit core::stored_body_bytes_max.
// indexes: the table's cell indexes; a cell carries the entries of those on its column (a value
// that does not fit its index's type is an input_error "<cell>.body.<property>").
// Each op is stamped with clock.now().
std::variant<std::vector<core::op>, input_error> parse_cell_writes(const core::cell_config& cfg, std::string_view table,
                                                                   std::string_view body, core::hlc& clock,
                                                                   std::size_t batch_ops_max,
                                                                   const std::vector<core::index_def>& indexes);

// {"table","row_key" (UUID text),"column","ref_key","body":{..},"ts":"..","ts_ms":..,"added_id":..}
std::string render_cell(std::string_view table, std::string_view row_key, std::string_view column, std::int64_t ref_key,
                        std::string_view stored_body, std::uint64_t ts, std::uint64_t added_id);
// The same with the body already decoded to JSON text.
std::string render_cell_json(std::string_view table, std::string_view row_key, std::string_view column, std::int64_t ref_key,
                             std::string_view body_json, std::uint64_t ts, std::uint64_t added_id);

}  // namespace cairn::net
