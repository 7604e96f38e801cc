// rapidcheck generators of edge ops over a small key space, so that random sequences collide
// on the same edges, with colliding timestamps (as client-supplied ts may).
#pragma once

#include "core/hlc.hpp"
#include "core/op.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <vector>

namespace cairn::test {

inline rc::Gen<core::op> gen_edge_op(std::int64_t ids = 4, std::uint64_t ms_range = 6) {
    return rc::gen::apply(
        [](std::int64_t s, std::int64_t d, int state, std::int64_t pos, bool keep, std::uint64_t ms, std::uint64_t node,
           bool second_graph) {
            core::op o;
            core::edge_op e;
            e.graph = second_graph ? "blocks" : "follows";
            e.source_id = s;
            e.destination_id = d;
            e.state = static_cast<core::edge_state>(state);
            e.position = pos;
            e.sets_position = !keep;
            o.ts = core::hlc_make(1'700'000'000'000 + ms, 0, node);
            o.body = std::move(e);
            return o;
        },
        rc::gen::inRange<std::int64_t>(0, ids), rc::gen::inRange<std::int64_t>(0, ids), rc::gen::inRange(0, 4),
        rc::gen::inRange<std::int64_t>(-3, 4), rc::gen::arbitrary<bool>(), rc::gen::inRange<std::uint64_t>(0, ms_range),
        rc::gen::inRange<std::uint64_t>(1, 3), rc::gen::weightedElement<bool>({{4, false}, {1, true}}));
}

// Whole-node ops over the same key space and clock as gen_edge_op: every action (remove,
// archive, unarchive, negate), on both directions or one.
inline rc::Gen<core::op> gen_node_op(std::int64_t ids = 4, std::uint64_t ms_range = 6) {
    return rc::gen::apply(
        [](std::int64_t n, int action, std::uint64_t ms, std::uint64_t node, bool second_graph, int scope) {
            core::op o;
            o.ts = core::hlc_make(1'700'000'000'000 + ms, 0, node);
            o.body = core::node_op{second_graph ? "blocks" : "follows", n, static_cast<core::node_action>(action),
                                   static_cast<core::node_scope>(scope)};
            return o;
        },
        rc::gen::inRange<std::int64_t>(0, ids), rc::gen::inRange(0, 4), rc::gen::inRange<std::uint64_t>(0, ms_range),
        rc::gen::inRange<std::uint64_t>(1, 3), rc::gen::weightedElement<bool>({{4, false}, {1, true}}),
        rc::gen::weightedElement<int>({{2, 0}, {1, 1}, {1, 2}}));
}

// Mostly edge ops, some node ops.
inline rc::Gen<core::op> gen_edge_or_node_op(std::int64_t ids = 4, std::uint64_t ms_range = 6) {
    return rc::gen::weightedOneOf<core::op>({{5, gen_edge_op(ids, ms_range)}, {1, gen_node_op(ids, ms_range)}});
}

// A permutation of ops with some of them repeated: what reordering, retries, the error queue
// and replays can make of one journal.
inline rc::Gen<std::vector<core::op>> gen_shuffled_with_duplicates(const std::vector<core::op>& ops) {
    return rc::gen::exec([ops]() -> std::vector<core::op> {
        std::vector<core::op> out = ops;
        const auto dups = *rc::gen::container<std::vector<std::size_t>>(
            rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(ops.size(), 1)));
        for (std::size_t i : dups) {
            if (i < ops.size()) out.push_back(ops[i]);
        }
        // A shuffle driven by rapidcheck's randomness, so a failing case shrinks and replays.
        const auto keys = *rc::gen::container<std::vector<std::uint32_t>>(out.size(), rc::gen::arbitrary<std::uint32_t>());
        std::vector<std::size_t> idx(out.size());
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
        std::vector<core::op> shuffled;
        shuffled.reserve(out.size());
        for (std::size_t i : idx) shuffled.push_back(out[i]);
        return shuffled;
    });
}

}  // namespace cairn::test
