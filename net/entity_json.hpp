// Parsing of the entity API's writes (issue 5), independent of HTTP, so that the write route and
// the admin API's dead-letter edits build an entity op the same way. No exception leaves this
// file. Thread-safe. Included by the files that read JSON bodies (it pulls in simdjson).
#pragma once

#include "core/entities.hpp"
#include "core/indexes.hpp"
#include "core/op.hpp"
#include "net/edge_json.hpp"

#include <simdjson.h>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::net {

// The op body of a write of entity `id` (16 bytes) of `kind` (declared in cfg): body a JSON
// object, stored canonical (net/detail/body_json.hpp) with its entries for `indexes` (the kind's
// index definitions), or nullptr for a delete (a tombstone). Errors name "body" or
// "body.<property>".
std::variant<core::entity_op, input_error> entity_op_of(const core::entity_config& cfg, std::string_view kind,
                                                        std::string_view id, const simdjson::dom::element* body,
                                                        const std::vector<core::index_def>& indexes);

}  // namespace cairn::net
