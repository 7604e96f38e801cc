#include "tests/support/edge_model.hpp"

namespace cairn::test {

void edge_model::apply(const core::op& o) {
    const auto& e = std::get<core::edge_op>(o.body);
    for (const auto& key : {edge_key{e.graph, e.source_id, 0, e.destination_id},
                            edge_key{e.graph, e.destination_id, 1, e.source_id}}) {
        std::optional<core::edge_row> before;
        if (auto it = rows.find(key); it != rows.end()) before = it->second;
        const core::edge_row after = core::edge_merge(before, e, o.ts);
        rows[key] = after;
        const auto& [g, node, dir, other] = key;
        if (before && before->state != after.state) {
            if (--counts[{g, node, dir, static_cast<int>(before->state)}] == 0) {
                counts.erase({g, node, dir, static_cast<int>(before->state)});
            }
        }
        if (!before || before->state != after.state) ++counts[{g, node, dir, static_cast<int>(after.state)}];
    }
}

edge_model edge_model::of(const std::vector<core::op>& ops) {
    edge_model m;
    for (const auto& o : ops) m.apply(o);
    return m;
}

}  // namespace cairn::test
