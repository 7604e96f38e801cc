// What one gateway routes by at one moment (docs/resharding.md): the shard map in force, its
// version, and the split under way if there is one, with this gateway's seqs at which its ops start
// going to the new shard. Immutable: a change is a new table, installed through core::routing
// (core/routing.hpp) and shared by every thread.
#pragma once

#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::core {

// A split of shard `from` as this gateway takes part in it: `from` keeps the lower half of its
// range, a new shard `to` (the map's size) takes the upper half, R.
struct split_route {
    shard_index from = 0;
    // S_g: an op with this seq or later that touches R is applied on `to` as well as on `from`
    // (counter ops too: each shard knows the op ids it counted, and the copy brings `from`'s). At
    // least 1.
    std::uint64_t adoption_seq = 0;
    // T_g: an op with this seq or later goes by the new map alone; 0 while some gateway may still
    // read R from `from`. At least adoption_seq when set; only once reads have moved.
    std::uint64_t cut_over_seq = 0;
    // The copy of R has not been written to `to` yet: its worker applies nothing from adoption_seq.
    bool new_shard_held = true;
    // Reads of R go to `to` (the copy is written and verified); never while the new shard is held.
    bool reads_moved = false;
    // This gateway has not yet made its adoption durable (in its journal, then on shard 0): every
    // shard's worker stops at adoption_seq until it has, so that nothing is applied under a split a
    // restart could forget (shards/split_follower.hpp).
    bool adoption_pending = false;
    friend bool operator==(const split_route&, const split_route&) = default;
};

class route_table {
public:
    // The map in force at `version` (>= 1), no split under way. base_count: how many shards the
    // deployment started with (version 1 of the map: shard 0's identity count), 1..map.size(); 0
    // stands for map.size() (no split has happened).
    route_table(std::uint32_t version, shard_map map, std::uint32_t base_count = 0);
    // The map in force with a split of split.from under way. bad_request if the map cannot split
    // that shard (shard_map::split), the split's seqs and flags break the rules of split_route, or
    // base_count is more than the map's shards.
    [[nodiscard]] static result<route_table> splitting(std::uint32_t version, shard_map map, split_route split,
                                                       std::uint32_t base_count = 0);

    std::uint32_t version() const noexcept { return version_; }
    // The map in force (during a split, the map before it).
    const shard_map& map() const noexcept { return map_; }
    const std::optional<split_route>& split() const noexcept { return split_; }
    // The map after the split under way (asserts that there is one).
    const shard_map& next_map() const;
    // The most shards any op may be applied on: the next map's size during a split.
    std::uint32_t shards() const noexcept;

    // The map by which reads find a key's shard: the next map once reads of R have moved.
    const shard_map& read_map() const noexcept;
    // The map by which shard s's apply worker takes the rows of an op with this seq. Within a
    // split, `from` keeps taking R's rows until the cut-over and `to` takes them from the adoption.
    // A counter op's rows in tables whose key holds the metric's shard_on dimension go by it too.
    const shard_map& apply_map(shard_index s, std::uint64_t seq) const noexcept;
    // The deployment's first map (version 1: equal ranges of base_count shards). A counter op's rows
    // in tables whose key leaves shard_on out — summed over every shard by each read — are counted
    // by the op's owner in it, whatever splits came since: no split moves them, so each op counts
    // there once and its counts are read at once (docs/resharding.md, counters).
    const shard_map& base_map() const noexcept { return base_; }
    // The seq an op of `seq` is routed as on shard s (apply_map, may_apply): itself, except on a split's
    // new shard, where an op from before the adoption — only ever a twin of the old owner's error-queue
    // entry or dead letter (split_follower) — is taken as at the adoption seq: N takes its rows of R and
    // is held with it until the copy is written.
    std::uint64_t route_seq(shard_index s, std::uint64_t seq) const noexcept;
    // The last seq from `seq` on with the same apply_map and may_apply for every shard (the seqs
    // below the next adoption or cut-over seq), so that one batch is applied under one rule.
    std::uint64_t segment_last(std::uint64_t seq) const noexcept;
    // False for the split's new shard while it is held and seq >= the adoption seq: its worker
    // stops there and the journal keeps those ops for it. False for every shard from the adoption
    // seq while the adoption is pending.
    bool may_apply(shard_index s, std::uint64_t seq) const noexcept;

    // The table as one line of text, for the journal (shards/split_follower.hpp): "v<version>
    // b<base count> <map text>" and, during a split, " | <from> <adoption> <cut-over> <held> <moved>
    // <pending>" (the flags 0 or 1). parse() accepts exactly what to_text() writes (bad_request
    // otherwise), and a record of before the base count was written ("v<version> <map text>...")
    // with the caller's base_count.
    std::string to_text() const;
    [[nodiscard]] static result<route_table> parse(std::string_view text, std::uint32_t base_count = 0);

    friend bool operator==(const route_table&, const route_table&) = default;

private:
    route_table(std::uint32_t version, shard_map map, shard_map next, split_route split, std::uint32_t base_count);
    std::uint32_t version_ = 1;
    shard_map map_;
    shard_map base_;
    std::optional<shard_map> next_;  // set exactly when split_ is
    std::optional<split_route> split_;
};

}  // namespace cairn::core
