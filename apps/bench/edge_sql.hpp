// The SQL of cairn-bench's direct baseline: what a client without cairn sends to the shards for
// the same edges. Rows match the `edges` table of shards/edge_store.cpp; the upsert is the
// last-writer-wins shape of DESIGN.md ("The op and its timestamp"). Pure functions; any thread.
#pragma once

#include "core/shard_map.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn::bench {

// One stored edge row (state normal, positioned by the writing op).
struct direct_row {
    std::int64_t node_id = 0;
    std::uint8_t direction = 0;  // 0 forward (node is the source), 1 backward
    std::int64_t other_id = 0;
    std::int64_t position = 0;
    std::uint64_t ts = 0;
};

// The two rows of the edge source -> destination, each with its shard (forward on the source's,
// backward on the destination's), as cairn's apply workers place them.
std::vector<std::pair<core::shard_index, direct_row>> direct_rows_of(const core::shard_map& map, std::int64_t source_id,
                                                                     std::int64_t destination_id, std::int64_t position,
                                                                     std::uint64_t ts);

// A multi-row INSERT ... ON DUPLICATE KEY UPDATE with the last-writer-wins guard: a row changes
// only if the new ts is greater; ts is assigned last. `graph` must match [A-Za-z0-9_]{1,32}
// (asserted). rows must not be empty (asserted).
std::string direct_upsert_sql(std::string_view graph, const std::vector<direct_row>& rows);

// A bench timestamp shaped like cairn's hybrid clock: milliseconds << 22 | counter (10 bits of
// node id 1023 so it never equals a cairn ts), strictly increasing per caller-supplied counter.
std::uint64_t direct_ts(std::uint64_t now_ms, std::uint64_t counter) noexcept;

}  // namespace cairn::bench
