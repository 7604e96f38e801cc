#include "core/shard_map.hpp"

#include "core/assert.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace cairn::core {

shard_map::shard_map(std::vector<std::uint64_t> starts, std::vector<shard_index> owners)
    : starts_(std::move(starts)), owners_(std::move(owners)), range_(owners_.size()) {
    for (std::uint32_t k = 0; k < owners_.size(); ++k) range_[owners_[k]] = k;
}

shard_map shard_map::equal_ranges(std::uint32_t n) {
    CAIRN_ASSERT(n >= 1 && n <= shards_max);
    std::vector<std::uint64_t> starts(n);
    std::vector<shard_index> owners(n);
    const std::uint64_t step = UINT64_MAX / n;
    for (std::uint32_t i = 0; i < n; ++i) {
        starts[i] = step * i + (i == 0 ? 0 : 1);
        owners[i] = i;
    }
    return shard_map(std::move(starts), std::move(owners));
}

result<shard_map> shard_map::from_range_starts(std::vector<std::uint64_t> starts) {
    std::vector<shard_index> owners(starts.size());
    for (std::uint32_t i = 0; i < owners.size(); ++i) owners[i] = i;
    return from_ranges(std::move(starts), std::move(owners));
}

result<shard_map> shard_map::from_ranges(std::vector<std::uint64_t> starts, std::vector<shard_index> owners) {
    if (starts.empty() || starts.size() > shards_max || starts.size() != owners.size() || starts.front() != 0) {
        return errc::bad_request;
    }
    for (std::size_t i = 1; i < starts.size(); ++i) {
        if (starts[i] <= starts[i - 1]) return errc::bad_request;
    }
    std::vector<bool> seen(owners.size());
    for (const auto s : owners) {
        if (s >= owners.size() || seen[s]) return errc::bad_request;
        seen[s] = true;
    }
    return shard_map(std::move(starts), std::move(owners));
}

result<shard_map> shard_map::parse(std::string_view text) {
    std::vector<std::uint64_t> starts;
    std::vector<shard_index> owners;
    // One decimal: digits only, no leading zero unless it is "0", in range of T.
    const auto number = [&text]<class T>(T& out) {
        const char* first = text.data();
        const char* end = text.data() + text.size();
        if (first == end || *first < '0' || *first > '9') return false;
        const auto [ptr, ec] = std::from_chars(first, end, out);
        if (ec != std::errc{} || (*first == '0' && ptr - first > 1)) return false;
        text.remove_prefix(static_cast<std::size_t>(ptr - first));
        return true;
    };
    while (true) {
        if (starts.size() == shards_max) return errc::bad_request;
        std::uint64_t start = 0;
        shard_index owner = 0;
        if (!number(start) || text.empty() || text.front() != ':') return errc::bad_request;
        text.remove_prefix(1);
        if (!number(owner)) return errc::bad_request;
        starts.push_back(start);
        owners.push_back(owner);
        if (text.empty()) break;
        if (text.front() != ' ') return errc::bad_request;
        text.remove_prefix(1);
    }
    return from_ranges(std::move(starts), std::move(owners));
}

shard_index shard_map::shard_of_hash(std::uint64_t h) const noexcept {
    // The last range whose start is <= h.
    auto it = std::upper_bound(starts_.begin(), starts_.end(), h);
    return owners_[static_cast<std::size_t>(std::distance(starts_.begin(), it) - 1)];
}

hash_range shard_map::range_of(shard_index s) const {
    CAIRN_ASSERT(s < size());
    const auto k = range_[s];
    return {starts_[k], k + 1 < starts_.size() ? starts_[k + 1] - 1 : std::numeric_limits<std::uint64_t>::max()};
}

result<shard_map> shard_map::split(shard_index s) const {
    if (s >= size() || size() >= shards_max) return errc::bad_request;
    const auto r = range_of(s);
    if (r.first == r.last) return errc::bad_request;
    // The upper half starts after the midpoint; (last - first) / 2 cannot overflow.
    const std::uint64_t upper = r.first + (r.last - r.first) / 2 + 1;
    auto starts = starts_;
    auto owners = owners_;
    const auto k = range_[s];
    starts.insert(starts.begin() + k + 1, upper);
    owners.insert(owners.begin() + k + 1, size());
    return shard_map(std::move(starts), std::move(owners));
}

std::string shard_map::to_text() const {
    std::string out;
    for (std::size_t k = 0; k < starts_.size(); ++k) {
        if (k > 0) out += ' ';
        out += std::to_string(starts_[k]);
        out += ':';
        out += std::to_string(owners_[k]);
    }
    return out;
}

}  // namespace cairn::core
