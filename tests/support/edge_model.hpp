// The in-memory model of the edge tables: what the forward/backward rows and the counts must
// be after a set of ops. Edge ops fold onto each row's own last-writer-wins values with
// core::edge_merge, node ops onto the registers of the directions they cover with
// core::node_merge; the rows and counts the shards expose use the effective state
// (core::edge_effective_state) of a row and the two registers that face it.
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
// (graph, node_id, direction 0 forward / 1 backward): one direction's node registers
using node_key = std::tuple<std::string, std::int64_t, int>;

struct edge_model {
    std::map<edge_key, core::edge_row> own;                // each row's own values
    std::map<node_key, core::node_registers> registers;    // node ops, per direction
    std::map<edge_key, core::edge_row> rows;               // own values with the effective state
    std::map<count_key, std::int64_t> counts;              // of effective states; only non-zero

    // Folds o in and recomputes rows and counts (O(rows): for tests).
    void apply(const core::op& o);
    static edge_model of(const std::vector<core::op>& ops);
    core::node_registers registers_of(const std::string& graph, std::int64_t node, int direction) const;

private:
    void fold(const core::op& o);
    void recompute();
};

}  // namespace cairn::test
