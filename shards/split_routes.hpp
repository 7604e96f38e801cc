// The route table a gateway routes by, worked out from the map's versions on shard 0
// (shards/map_store.hpp) and what this gateway itself recorded: its adoption seq of the split under
// way and the seq it cut over at (docs/resharding.md, "The phases"). Pure: no I/O; any thread.
#pragma once

#include "core/result.hpp"
#include "core/route_table.hpp"
#include "shards/map_store.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace cairn::shards {

// The newest version whose split is under way (adopting to done), or nullptr. A planned split routes
// nothing yet; a failed one never will; cleaning and retired ones are the map in force.
const stored_map* active_split(const std::vector<stored_map>& maps) noexcept;

// The map in force beneath the active split (or with none): the newest split in cleaning or retired,
// else the config's equal ranges of base_count shards (version 1). Its version in *version.
core::shard_map map_in_force(const std::vector<stored_map>& maps, std::uint32_t base_count, std::uint32_t* version);

// What this gateway routes by. adoption_seq: its adoption of the active split, if it recorded one;
// cut_over_seq: the seq it cut over at once the split was done, if it did. Refused (conflict) when
// the active split needs one of them and it is missing — the caller records it first — and
// (shard_rejected) when the stored versions do not fit together (a split of a shard the map in force
// does not have, a new shard that is not the next index).
core::result<core::route_table> route_table_for(const std::vector<stored_map>& maps, std::uint32_t base_count,
                                                std::optional<std::uint64_t> adoption_seq,
                                                std::optional<std::uint64_t> cut_over_seq);

// The table of an adoption from adoption_seq that this gateway has not made durable yet: every
// shard's worker stops at that seq (adoption_pending), the new shard is held and reads of the moved
// half stay on the old owner (a pending table must hold the new shard; the table of the next round
// moves them if the split has). shard_rejected when the maps hold no active split (or, as
// route_table_for, when they do not fit together).
core::result<core::route_table> pending_adoption_table(const std::vector<stored_map>& maps, std::uint32_t base_count,
                                                       std::uint64_t adoption_seq);

}  // namespace cairn::shards
