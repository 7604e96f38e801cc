// The last-writer-wins rules of one stored edge row, as pure functions: the apply workers fold
// ops onto locked rows with them, and the property tests use them as the model. No I/O.
//
// State: the op with the greatest (ts, rank(state)) wins, rank normal < negative < archived <
// removed (FlockDB's tie rule). Position: the op with the greatest (sets_position, ts, position)
// sets it, so adds (which set a position) move the edge and archive/unarchive keep it.
// Both rules depend only on the set of ops applied, never on their order or repetition.
#pragma once

#include "core/op.hpp"

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>
#include <string>
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

// A set of edge states, for pages over several at once (e.g. normal and archived together).
// Converts implicitly from one state, so a single-state page is written as before.
class edge_state_set {
public:
    edge_state_set() = default;                                                      // {normal}
    edge_state_set(edge_state s) noexcept : bits_(static_cast<std::uint8_t>(1u << static_cast<unsigned>(s))) {}  // NOLINT
    bool contains(edge_state s) const noexcept { return (bits_ >> static_cast<unsigned>(s)) & 1u; }
    void add(edge_state s) noexcept { bits_ = static_cast<std::uint8_t>(bits_ | (1u << static_cast<unsigned>(s))); }
    // The states, in code order (normal, removed, archived, negative).
    std::vector<edge_state> list() const;
    std::size_t size() const noexcept { return static_cast<std::size_t>(std::popcount(bits_)); }
    // "normal" or "normal,archived": the names in code order, comma-separated.
    std::string names() const;
    friend bool operator==(const edge_state_set&, const edge_state_set&) = default;

private:
    std::uint8_t bits_ = 1;
};

// Parses "archived" or "normal,archived" (names, comma-separated, any order, repeats allowed).
std::optional<edge_state_set> edge_state_set_from_names(std::string_view names) noexcept;
std::optional<edge_state> edge_state_from_code(std::uint64_t code) noexcept;

// The row after applying o (stamped ts) to current (nullopt: no row yet).
edge_row edge_merge(const std::optional<edge_row>& current, const edge_op& o, std::uint64_t ts) noexcept;

// Whole-node ops (issues 4, 17). Each direction of a node (its outgoing edges: forward; its
// incoming ones: backward) has two registers, kept on every shard: removed_ts, the greatest ts of
// a remove, and (action_ts, action), its latest node action by (ts, rank) with unarchive
// (restore) < negate < archive < remove, so a tie goes to the higher rank and merging is a max.
// action_ts 0: never written.
struct node_registers {
    std::uint64_t removed_ts = 0;
    std::uint64_t action_ts = 0;
    node_action action = node_action::unarchive;

    friend bool operator==(const node_registers&, const node_registers&) = default;
};

int node_action_rank(node_action a) noexcept;

// The registers after applying a node op with `action` stamped ts.
node_registers node_merge(node_registers current, node_action action, std::uint64_t ts) noexcept;

// The state a node action puts the edges it covers in: removed, archived, negative, or
// normal for unarchive (restore: each edge's own state again).
edge_state node_action_state(node_action a) noexcept;

// What one direction's registers say about the node itself (GET .../nodes/{id}): the state its
// latest node action left it in and that action's ts. {normal, 0}: no node action yet.
struct node_status {
    edge_state state = edge_state::normal;
    std::uint64_t ts = 0;

    friend bool operator==(const node_status&, const node_status&) = default;
};
node_status node_status_of(const node_registers& r) noexcept;

// The effective state of an edge s→d (what pages, counts and reads use, for both of its rows),
// from its own last-writer-wins row and the two registers that face it: s's forward registers
// and d's backward ones.
//  1. removed if a remove in either is at or after the row's ts (a remove destroys what existed
//     when it came: a later restore does not bring those edges back);
//  2. else the highest rank of the row's own state and of the state of each latest action that
//     hides (remove, archive, negate), whatever the row's ts: a node on ice hides the edges
//     written to it later too;
//  3. so while the latest action is a restore (or none) the row's own state shows: exactly the
//     edges the action hid come back.
// A pure function of values that are themselves order-independent (two max-merged registers,
// one last-writer-wins row), so any order of edge ops and node ops ends in the same state.
edge_state edge_effective_state(const edge_row& own, const node_registers& source_forward,
                                const node_registers& destination_backward) noexcept;

}  // namespace cairn::core
