#include "core/route_table.hpp"

#include "core/assert.hpp"
#include "core/text_rules.hpp"

#include <limits>

namespace cairn::core {

route_table::route_table(std::uint32_t version, shard_map map, std::uint32_t base_count)
    : version_(version), map_(std::move(map)), base_(shard_map::equal_ranges(base_count == 0 ? map_.size() : base_count)) {
    CAIRN_ASSERT(version >= 1);
    CAIRN_ASSERT(base_count <= map_.size());
}

route_table::route_table(std::uint32_t version, shard_map map, shard_map next, split_route split, std::uint32_t base_count)
    : version_(version),
      map_(std::move(map)),
      base_(shard_map::equal_ranges(base_count == 0 ? map_.size() : base_count)),
      next_(std::move(next)),
      split_(split) {}

result<route_table> route_table::splitting(std::uint32_t version, shard_map map, split_route split, std::uint32_t base_count) {
    if (version < 1 || split.adoption_seq == 0 || base_count > map.size()) return errc::bad_request;
    if (split.cut_over_seq != 0 && (split.cut_over_seq < split.adoption_seq || !split.reads_moved)) return errc::bad_request;
    if (split.reads_moved && split.new_shard_held) return errc::bad_request;
    if (split.adoption_pending && (!split.new_shard_held || split.cut_over_seq != 0)) return errc::bad_request;
    auto next = map.split(split.from);
    if (!next) return next.error();
    return route_table(version, std::move(map), std::move(next).value(), split, base_count);
}

const shard_map& route_table::next_map() const {
    CAIRN_ASSERT(next_.has_value());
    return *next_;
}

std::uint32_t route_table::shards() const noexcept { return next_ ? next_->size() : map_.size(); }

const shard_map& route_table::read_map() const noexcept { return split_ && split_->reads_moved ? *next_ : map_; }

const shard_map& route_table::apply_map(shard_index s, std::uint64_t seq) const noexcept {
    if (!split_ || seq < split_->adoption_seq) return map_;
    if (split_->cut_over_seq != 0 && seq >= split_->cut_over_seq) return *next_;
    // Between the adoption and the cut-over every shard but `from` has the same rows in both maps;
    // `from` keeps R's rows (the old map) so that its reads stay whole until they move, and `to`
    // takes them (the next map).
    if (s != split_->from) return *next_;
    return map_;
}

std::uint64_t route_table::route_seq(shard_index s, std::uint64_t seq) const noexcept {
    if (split_ && s + 1 == next_->size() && seq < split_->adoption_seq) return split_->adoption_seq;
    return seq;
}

std::uint64_t route_table::segment_last(std::uint64_t seq) const noexcept {
    constexpr auto none = std::numeric_limits<std::uint64_t>::max();
    if (!split_) return none;
    if (seq < split_->adoption_seq) return split_->adoption_seq - 1;
    if (split_->cut_over_seq != 0 && seq < split_->cut_over_seq) return split_->cut_over_seq - 1;
    return none;
}

bool route_table::may_apply(shard_index s, std::uint64_t seq) const noexcept {
    if (!split_ || seq < split_->adoption_seq) return true;
    if (split_->adoption_pending) return false;
    return !(split_->new_shard_held && s == next_->size() - 1);
}

std::string route_table::to_text() const {
    std::string out = "v" + std::to_string(version_) + " b" + std::to_string(base_.size()) + " " + map_.to_text();
    if (split_) {
        const auto flag = [](bool b) { return b ? " 1" : " 0"; };
        out += " | " + std::to_string(split_->from) + " " + std::to_string(split_->adoption_seq) + " " +
               std::to_string(split_->cut_over_seq) + flag(split_->new_shard_held) + flag(split_->reads_moved) +
               flag(split_->adoption_pending);
    }
    return out;
}

result<route_table> route_table::parse(std::string_view text, std::uint32_t base_count) {
    // Each number in the one spelling parse_decimal_uint64 accepts; fields apart by one space.
    const auto next_field = [&text](bool last) -> std::optional<std::uint64_t> {
        const auto space = text.find(' ');
        if (last != (space == std::string_view::npos)) return std::nullopt;
        const auto v = parse_decimal_uint64(text.substr(0, space));
        text.remove_prefix(last ? text.size() : space + 1);
        return v;
    };
    if (text.empty() || text.front() != 'v') return errc::bad_request;
    text.remove_prefix(1);
    const auto version = next_field(false);
    if (!version || *version == 0 || *version > std::numeric_limits<std::uint32_t>::max()) return errc::bad_request;
    // The base count (written since 2026-11-28; a record without it takes the caller's).
    if (!text.empty() && text.front() == 'b') {
        text.remove_prefix(1);
        const auto base = next_field(false);
        if (!base || *base == 0 || *base > shard_map::shards_max) return errc::bad_request;
        base_count = static_cast<std::uint32_t>(*base);
    }
    const auto bar = text.find(" | ");
    auto map = shard_map::parse(text.substr(0, bar));
    if (!map) return map.error();
    const auto v32 = static_cast<std::uint32_t>(*version);
    if (base_count > map.value().size()) return errc::bad_request;
    if (bar == std::string_view::npos) return route_table(v32, std::move(map).value(), base_count);
    text.remove_prefix(bar + 3);
    std::optional<std::uint64_t> f[6];
    for (int i = 0; i < 6; ++i) f[i] = next_field(i == 5);
    for (const auto& x : f) {
        if (!x) return errc::bad_request;
    }
    if (*f[0] >= shard_map::shards_max || *f[3] > 1 || *f[4] > 1 || *f[5] > 1) return errc::bad_request;
    split_route sp;
    sp.from = static_cast<shard_index>(*f[0]);
    sp.adoption_seq = *f[1];
    sp.cut_over_seq = *f[2];
    sp.new_shard_held = *f[3] == 1;
    sp.reads_moved = *f[4] == 1;
    sp.adoption_pending = *f[5] == 1;
    return splitting(v32, std::move(map).value(), sp, base_count);
}

}  // namespace cairn::core
