// Record fields of a whole-node op: graph (str), node_id (int), action (uint: 0 remove,
// 1 archive, 2 unarchive, 3 negate), then scope (uint: 1 forward, 2 backward) only when the op
// covers one direction: a record of both directions is the 3-field record of before issue 17.
// See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/codec.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core {

std::string_view node_action_name(node_action a) noexcept {
    switch (a) {
        case node_action::remove: return "remove";
        case node_action::archive: return "archive";
        case node_action::unarchive: return "unarchive";
        case node_action::negate: return "negate";
    }
    return "remove";
}

std::optional<node_action> node_action_from_name(std::string_view name) noexcept {
    if (name == "remove") return node_action::remove;
    if (name == "archive") return node_action::archive;
    if (name == "unarchive" || name == "restore") return node_action::unarchive;
    if (name == "negate") return node_action::negate;
    return std::nullopt;
}

std::optional<node_action> node_action_from_code(std::uint64_t code) noexcept {
    if (code > 3) return std::nullopt;
    return static_cast<node_action>(code);
}

std::string_view node_scope_name(node_scope s) noexcept {
    switch (s) {
        case node_scope::both: return "both";
        case node_scope::forward: return "forward";
        case node_scope::backward: return "backward";
    }
    return "both";
}

std::optional<node_scope> node_scope_from_name(std::string_view name) noexcept {
    if (name == "both") return node_scope::both;
    if (name == "forward") return node_scope::forward;
    if (name == "backward") return node_scope::backward;
    return std::nullopt;
}

std::optional<node_scope> node_scope_from_code(std::uint64_t code) noexcept {
    if (code > 2) return std::nullopt;
    return static_cast<node_scope>(code);
}

}  // namespace cairn::core

namespace cairn::core::detail {

std::uint32_t field_count(const node_op& n) noexcept { return n.scope == node_scope::both ? 3 : 4; }

void pack_fields(record_packer& pk, const node_op& n) {
    CAIRN_ASSERT(valid_graph_name(n.graph));
    pk.pack(n.graph);
    pk.pack(n.node_id);
    pk.pack(static_cast<std::uint8_t>(n.action));
    if (n.scope != node_scope::both) pk.pack(static_cast<std::uint8_t>(n.scope));
}

result<node_op> unpack_node(record_fields f) {
    if (f.size() != 3 && f.size() != 4) return errc::journal_corrupt;
    node_op n;
    n.graph = f[0].as<std::string>();
    n.node_id = f[1].as<std::int64_t>();
    auto action = node_action_from_code(f[2].as<std::uint8_t>());
    if (!action) return errc::journal_corrupt;
    n.action = *action;
    if (f.size() == 4) {
        auto scope = node_scope_from_code(f[3].as<std::uint8_t>());
        if (!scope || *scope == node_scope::both) return errc::journal_corrupt;  // both is written as 3 fields
        n.scope = *scope;
    }
    if (!valid_graph_name(n.graph) || n.node_id < 0) return errc::journal_corrupt;
    return n;
}

}  // namespace cairn::core::detail
