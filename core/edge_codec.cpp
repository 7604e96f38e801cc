// Record fields of an edge op: graph (str), source_id (int), destination_id (int), state (uint),
// position (int), sets_position (bool). See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/codec.hpp"
#include "core/detail/op_record.hpp"
#include "core/edge_rules.hpp"

namespace cairn::core::detail {

std::uint32_t field_count(const edge_op&) noexcept { return 6; }

void pack_fields(record_packer& pk, const edge_op& e) {
    CAIRN_ASSERT(valid_graph_name(e.graph));
    pk.pack(e.graph);
    pk.pack(e.source_id);
    pk.pack(e.destination_id);
    pk.pack(static_cast<std::uint8_t>(e.state));
    pk.pack(e.position);
    pk.pack(e.sets_position);
}

result<edge_op> unpack_edge(record_fields f) {
    if (f.size() != 6) return errc::journal_corrupt;
    edge_op e;
    e.graph = f[0].as<std::string>();
    e.source_id = f[1].as<std::int64_t>();
    e.destination_id = f[2].as<std::int64_t>();
    auto state = edge_state_from_code(f[3].as<std::uint8_t>());
    if (!state) return errc::journal_corrupt;
    e.state = *state;
    e.position = f[4].as<std::int64_t>();
    e.sets_position = f[5].as<bool>();
    if (!valid_graph_name(e.graph)) return errc::journal_corrupt;
    return e;
}

}  // namespace cairn::core::detail
