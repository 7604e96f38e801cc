// The op: one client write as it travels journal -> apply. Plain values, no I/O.
//
// Adding a data model (the journal and the apply workers stay as they are):
//  1. its op struct, with `static constexpr model kind = model::<name>;`, as an alternative of op_body;
//  2. its record fields in core/codec.cpp (encode and the decode switch; see core/detail/op_record.hpp);
//  3. its rows in shards/model_dispatch.cpp (which shards it touches, its schema, its apply function).
#pragma once

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/entities.hpp"
#include "core/indexes.hpp"
#include "core/node_op.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cairn::core {

// Stored in every journal record: the values never change meaning.
enum class model : std::uint8_t { edge = 1, node = 2, entity = 3, cell = 4, counter = 5, index = 6 };

std::string_view model_name(model m) noexcept;
std::optional<model> model_from_name(std::string_view name) noexcept;

// FlockDB's edge states and their stored codes.
enum class edge_state : std::uint8_t { normal = 0, removed = 1, archived = 2, negative = 3 };

inline constexpr std::size_t graph_name_bytes_max = 32;

struct edge_op {
    static constexpr model kind = model::edge;
    std::string graph;             // [A-Za-z0-9_]{1,32}
    std::int64_t source_id = 0;    // >= 0
    std::int64_t destination_id = 0;
    edge_state state = edge_state::normal;
    std::int64_t position = 0;     // sort key of the edge in its adjacency lists
    bool sets_position = true;     // false for archive/unarchive, which keep the old position

    friend bool operator==(const edge_op&, const edge_op&) = default;
};

using op_body = std::variant<edge_op, node_op, entity_op, cell_op, counter_op, index_def_op>;
static_assert(node_op::kind == model::node);
static_assert(counter_op::kind == model::counter);
static_assert(cell_op::kind == model::cell);
static_assert(entity_op::kind == model::entity);
static_assert(index_def_op::kind == model::index);

struct op {
    std::uint64_t op_id = 0;  // node id and journal seq; unique across gateways
    std::uint64_t ts = 0;     // hybrid logical clock; see hlc.hpp
    op_body body;

    model kind() const noexcept {
        return std::visit([](const auto& b) { return std::decay_t<decltype(b)>::kind; }, body);
    }
    friend bool operator==(const op&, const op&) = default;
};

inline constexpr int op_id_node_shift = 54;
constexpr std::uint64_t make_op_id(std::uint64_t node_id, std::uint64_t seq) noexcept {
    return (node_id << op_id_node_shift) | seq;
}

}  // namespace cairn::core
