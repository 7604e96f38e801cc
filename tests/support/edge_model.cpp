#include "tests/support/edge_model.hpp"

namespace cairn::test {

void edge_model::fold(const core::op& o) {
    if (const auto* n = std::get_if<core::node_op>(&o.body)) {
        for (int dir = 0; dir < 2; ++dir) {
            if (n->scope == core::node_scope::forward && dir != 0) continue;
            if (n->scope == core::node_scope::backward && dir != 1) continue;
            auto& r = registers[{n->graph, n->node_id, dir}];
            r = core::node_merge(r, n->action, o.ts);
        }
        return;
    }
    const auto& e = std::get<core::edge_op>(o.body);
    for (const auto& key : {edge_key{e.graph, e.source_id, 0, e.destination_id},
                            edge_key{e.graph, e.destination_id, 1, e.source_id}}) {
        std::optional<core::edge_row> before;
        if (auto it = own.find(key); it != own.end()) before = it->second;
        own[key] = core::edge_merge(before, e, o.ts);
    }
}

void edge_model::recompute() {
    rows.clear();
    counts.clear();
    for (const auto& [key, row] : own) {
        const auto& [g, node, dir, other] = key;
        core::edge_row r = row;
        // The row's own node faces it in the row's direction, the other end in the other one.
        r.state = core::edge_effective_state(row, registers_of(g, node, dir), registers_of(g, other, 1 - dir));
        rows[key] = r;
        ++counts[{g, node, dir, static_cast<int>(r.state)}];
    }
}

core::node_registers edge_model::registers_of(const std::string& graph, std::int64_t node, int direction) const {
    const auto it = registers.find({graph, node, direction});
    return it == registers.end() ? core::node_registers{} : it->second;
}

void edge_model::apply(const core::op& o) {
    fold(o);
    recompute();
}

edge_model edge_model::of(const std::vector<core::op>& ops) {
    edge_model m;
    for (const auto& o : ops) m.fold(o);
    m.recompute();
    return m;
}

}  // namespace cairn::test
