// Record fields of a whole-node op: graph (str), node_id (int), action (uint: 0 remove,
// 1 archive, 2 unarchive). See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/codec.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core {

std::string_view node_action_name(node_action a) noexcept {
    switch (a) {
        case node_action::remove: return "remove";
        case node_action::archive: return "archive";
        case node_action::unarchive: return "unarchive";
    }
    return "remove";
}

std::optional<node_action> node_action_from_name(std::string_view name) noexcept {
    if (name == "remove") return node_action::remove;
    if (name == "archive") return node_action::archive;
    if (name == "unarchive") return node_action::unarchive;
    return std::nullopt;
}

std::optional<node_action> node_action_from_code(std::uint64_t code) noexcept {
    if (code > 2) return std::nullopt;
    return static_cast<node_action>(code);
}

}  // namespace cairn::core

namespace cairn::core::detail {

std::uint32_t field_count(const node_op&) noexcept { return 3; }

void pack_fields(record_packer& pk, const node_op& n) {
    CAIRN_ASSERT(valid_graph_name(n.graph));
    pk.pack(n.graph);
    pk.pack(n.node_id);
    pk.pack(static_cast<std::uint8_t>(n.action));
}

result<node_op> unpack_node(record_fields f) {
    if (f.size() != 3) return errc::journal_corrupt;
    node_op n;
    n.graph = f[0].as<std::string>();
    n.node_id = f[1].as<std::int64_t>();
    auto action = node_action_from_code(f[2].as<std::uint8_t>());
    if (!action) return errc::journal_corrupt;
    n.action = *action;
    if (!valid_graph_name(n.graph) || n.node_id < 0) return errc::journal_corrupt;
    return n;
}

}  // namespace cairn::core::detail
