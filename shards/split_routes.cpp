#include "shards/split_routes.hpp"

#include <algorithm>

namespace cairn::shards {

namespace {

bool is_active(split_state s) noexcept { return s >= split_state::adopting && s <= split_state::done; }
bool is_in_force(split_state s) noexcept { return s == split_state::cleaning || s == split_state::retired; }

}  // namespace

const stored_map* active_split(const std::vector<stored_map>& maps) noexcept {
    const stored_map* found = nullptr;
    for (const auto& m : maps) {
        if (is_active(m.state)) found = &m;
    }
    return found;
}

core::shard_map map_in_force(const std::vector<stored_map>& maps, std::uint32_t base_count, std::uint32_t* version) {
    core::shard_map map = core::shard_map::equal_ranges(base_count);
    std::uint32_t v = 1;
    for (const auto& m : maps) {
        if (is_in_force(m.state)) {
            map = m.map;
            v = m.version;
        }
    }
    if (version != nullptr) *version = v;
    return map;
}

core::result<core::route_table> route_table_for(const std::vector<stored_map>& maps, std::uint32_t base_count,
                                                std::optional<std::uint64_t> adoption_seq,
                                                std::optional<std::uint64_t> cut_over_seq) {
    std::uint32_t version = 1;
    auto map = map_in_force(maps, base_count, &version);
    const stored_map* active = active_split(maps);
    if (active == nullptr) return core::route_table(version, std::move(map), base_count);
    // The split must be of the map in force: its version newer, its new shard the next index, and its
    // stored map that map split once.
    auto next = map.split(active->split_shard);
    if (active->version <= version || active->new_shard != map.size() || !next || !(next.value() == active->map)) {
        return core::errc::shard_rejected;
    }
    if (!adoption_seq || *adoption_seq == 0) return core::errc::conflict;
    core::split_route sp;
    sp.from = active->split_shard;
    sp.adoption_seq = *adoption_seq;
    sp.new_shard_held = active->state < split_state::catching_up;
    sp.reads_moved = active->state >= split_state::switched;
    if (active->state == split_state::done) {
        if (!cut_over_seq) return core::errc::conflict;
        sp.cut_over_seq = std::max(*cut_over_seq, *adoption_seq);
    }
    return core::route_table::splitting(active->version, std::move(map), sp, base_count);
}

core::result<core::route_table> pending_adoption_table(const std::vector<stored_map>& maps, std::uint32_t base_count,
                                                       std::uint64_t adoption_seq) {
    // A late adoption may find the split done already: the cut-over comes in a later round, once the
    // adoption is durable (route_table_for wants one in done; none is taken here).
    auto t = route_table_for(maps, base_count, adoption_seq, adoption_seq);
    if (!t) return t.error();
    if (!t.value().split()) return core::errc::shard_rejected;
    core::split_route sp = *t.value().split();
    sp.adoption_pending = true;
    sp.new_shard_held = true;
    sp.reads_moved = false;
    sp.cut_over_seq = 0;
    return core::route_table::splitting(t.value().version(), t.value().map(), sp, base_count);
}

}  // namespace cairn::shards
