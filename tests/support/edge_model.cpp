#include "tests/support/edge_model.hpp"

namespace cairn::test {

void edge_model::fold(const core::op& o) {
    if (const auto* n = std::get_if<core::node_op>(&o.body)) {
        auto& r = registers[{n->graph, n->node_id}];
        r = core::node_merge(r, n->action, o.ts);
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
    auto regs = [&](const std::string& g, std::int64_t node) {
        const auto it = registers.find({g, node});
        return it == registers.end() ? core::node_registers{} : it->second;
    };
    for (const auto& [key, row] : own) {
        const auto& [g, node, dir, other] = key;
        core::edge_row r = row;
        r.state = core::edge_effective_state(row, regs(g, node), regs(g, other));
        rows[key] = r;
        ++counts[{g, node, dir, static_cast<int>(r.state)}];
    }
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
