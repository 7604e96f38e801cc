#include "core/route_table.hpp"

#include "core/assert.hpp"

#include <charconv>
#include <limits>

namespace cairn::core {

route_table::route_table(std::uint32_t version, shard_map map) : version_(version), map_(std::move(map)) {
    CAIRN_ASSERT(version >= 1);
}

route_table::route_table(std::uint32_t version, shard_map map, shard_map next, split_route split)
    : version_(version), map_(std::move(map)), next_(std::move(next)), split_(split) {}

result<route_table> route_table::splitting(std::uint32_t version, shard_map map, split_route split) {
    if (version < 1 || split.adoption_seq == 0) return errc::bad_request;
    if (split.cut_over_seq != 0 && (split.cut_over_seq < split.adoption_seq || !split.reads_moved)) return errc::bad_request;
    if (split.reads_moved && split.new_shard_held) return errc::bad_request;
    if (split.adoption_pending && (!split.new_shard_held || split.cut_over_seq != 0)) return errc::bad_request;
    auto next = map.split(split.from);
    if (!next) return next.error();
    return route_table(version, std::move(map), std::move(next).value(), split);
}

const shard_map& route_table::next_map() const {
    CAIRN_ASSERT(next_.has_value());
    return *next_;
}

std::uint32_t route_table::shards() const noexcept { return next_ ? next_->size() : map_.size(); }

const shard_map& route_table::read_map() const noexcept { return split_ && split_->reads_moved ? *next_ : map_; }

const shard_map& route_table::apply_map(shard_index s, std::uint64_t seq, bool counter) const noexcept {
    if (!split_ || seq < split_->adoption_seq) return map_;
    if (split_->cut_over_seq != 0 && seq >= split_->cut_over_seq) return *next_;
    // Between the adoption and the cut-over every shard but `from` has the same rows in both maps;
    // `from` keeps R's rows (the old map) so that its reads stay whole until they move, and `to`
    // takes them (the next map). A counter op goes to one owner only: the next map's.
    if (counter || s != split_->from) return *next_;
    return map_;
}

const shard_map& route_table::wait_map(std::uint64_t seq, bool counter) const noexcept {
    if (split_ && counter && seq >= split_->adoption_seq) return *next_;
    return read_map();
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
    std::string out = "v" + std::to_string(version_) + " " + map_.to_text();
    if (split_) {
        const auto flag = [](bool b) { return b ? " 1" : " 0"; };
        out += " | " + std::to_string(split_->from) + " " + std::to_string(split_->adoption_seq) + " " +
               std::to_string(split_->cut_over_seq) + flag(split_->new_shard_held) + flag(split_->reads_moved) +
               flag(split_->adoption_pending);
    }
    return out;
}

result<route_table> route_table::parse(std::string_view text) {
    // One decimal: digits only, no leading zero unless it is "0", in range of T; then `sep` or the end.
    const auto number = [](std::string_view& in, auto& out, bool last) {
        const char* first = in.data();
        const char* end = in.data() + in.size();
        if (first == end || *first < '0' || *first > '9') return false;
        const auto [ptr, ec] = std::from_chars(first, end, out);
        if (ec != std::errc{} || (*first == '0' && ptr - first > 1)) return false;
        in.remove_prefix(static_cast<std::size_t>(ptr - first));
        if (last) return in.empty();
        if (in.empty() || in.front() != ' ') return false;
        in.remove_prefix(1);
        return true;
    };
    if (text.empty() || text.front() != 'v') return errc::bad_request;
    text.remove_prefix(1);
    std::uint32_t version = 0;
    if (!number(text, version, false) || version == 0) return errc::bad_request;
    const auto bar = text.find(" | ");
    auto map = shard_map::parse(text.substr(0, bar));
    if (!map) return map.error();
    if (bar == std::string_view::npos) return route_table(version, std::move(map).value());
    text.remove_prefix(bar + 3);
    split_route sp;
    std::uint32_t held = 0, moved = 0, pending = 0;
    if (!number(text, sp.from, false) || !number(text, sp.adoption_seq, false) || !number(text, sp.cut_over_seq, false) ||
        !number(text, held, false) || !number(text, moved, false) || !number(text, pending, true) || held > 1 ||
        moved > 1 || pending > 1) {
        return errc::bad_request;
    }
    sp.new_shard_held = held == 1;
    sp.reads_moved = moved == 1;
    sp.adoption_pending = pending == 1;
    return splitting(version, std::move(map).value(), sp);
}

}  // namespace cairn::core
