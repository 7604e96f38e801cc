// The last-writer-wins rules of one stored edge row, as pure functions: the apply workers fold
// ops onto locked rows with them, and the property tests use them as the model. No I/O.
//
// State: the op with the greatest (ts, rank(state)) wins, rank normal < negative < archived <
// removed (FlockDB's tie rule). Position: the op with the greatest (sets_position, ts, position)
// sets it, so adds (which set a position) move the edge and archive/unarchive keep it.
// Both rules depend only on the set of ops applied, never on their order or repetition.
#pragma once

#include "core/op.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace cairn::core {

struct edge_row {
    edge_state state = edge_state::normal;
    std::int64_t position = 0;
    std::uint64_t ts = 0;      // ts of the op that set state
    std::uint64_t pos_ts = 0;  // ts of the op that set position
    bool pos_set = false;      // whether that op was a positioning op

    friend bool operator==(const edge_row&, const edge_row&) = default;
};

int edge_state_rank(edge_state s) noexcept;
std::string_view edge_state_name(edge_state s) noexcept;
std::optional<edge_state> edge_state_from_name(std::string_view name) noexcept;
std::optional<edge_state> edge_state_from_code(std::uint64_t code) noexcept;

// The row after applying o (stamped ts) to current (nullopt: no row yet).
edge_row edge_merge(const std::optional<edge_row>& current, const edge_op& o, std::uint64_t ts) noexcept;

}  // namespace cairn::core
