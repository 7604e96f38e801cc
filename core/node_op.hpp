// A whole-node op (issues 4, 17): remove, archive, negate or restore every edge of one node of a
// graph, its outgoing edges, its incoming ones or both, in one write ("put a spammer on ice" and
// the way back). The rules that combine it with the edge ops racing with it are in
// core/edge_rules.hpp (node_registers, edge_effective_state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::core {

enum class model : std::uint8_t;

// Stored codes: never change their meaning. unarchive is also called restore: it brings back
// what an archive or a negate hid (not what a remove destroyed).
enum class node_action : std::uint8_t { remove = 0, archive = 1, unarchive = 2, negate = 3 };

std::string_view node_action_name(node_action a) noexcept;
// "remove", "archive", "unarchive" or "restore" (the same action), "negate".
std::optional<node_action> node_action_from_name(std::string_view name) noexcept;
std::optional<node_action> node_action_from_code(std::uint64_t code) noexcept;

// Which of a node's edges an action covers: its outgoing (forward) edges, its incoming
// (backward) ones, or both. Stored codes.
enum class node_scope : std::uint8_t { both = 0, forward = 1, backward = 2 };

std::string_view node_scope_name(node_scope s) noexcept;  // "both", "forward", "backward"
std::optional<node_scope> node_scope_from_name(std::string_view name) noexcept;
std::optional<node_scope> node_scope_from_code(std::uint64_t code) noexcept;

struct node_op {
    static constexpr model kind = static_cast<model>(2);  // model::node
    std::string graph;         // [A-Za-z0-9_]{1,32}
    std::int64_t node_id = 0;  // >= 0
    node_action action = node_action::remove;
    node_scope scope = node_scope::both;

    friend bool operator==(const node_op&, const node_op&) = default;
};

}  // namespace cairn::core
