// The in-memory model of the edge tables: what the forward/backward rows and the counts must
// be after a set of ops, computed by folding them in journal order with core::edge_merge.
#pragma once

#include "core/edge_rules.hpp"
#include "core/op.hpp"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace cairn::test {

// (graph, node_id, direction 0 forward / 1 backward, other_id)
using edge_key = std::tuple<std::string, std::int64_t, int, std::int64_t>;
// (graph, node_id, direction, state)
using count_key = std::tuple<std::string, std::int64_t, int, int>;

struct edge_model {
    std::map<edge_key, core::edge_row> rows;
    std::map<count_key, std::int64_t> counts;  // only non-zero counts

    void apply(const core::op& o);
    static edge_model of(const std::vector<core::op>& ops);
};

}  // namespace cairn::test
