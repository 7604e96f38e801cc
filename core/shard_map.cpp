#include "core/shard_map.hpp"

#include "core/assert.hpp"

#include <algorithm>

namespace cairn::core {

shard_map shard_map::equal_ranges(std::uint32_t n) {
    CAIRN_ASSERT(n >= 1);
    std::vector<std::uint64_t> starts(n);
    const std::uint64_t step = UINT64_MAX / n;
    for (std::uint32_t i = 0; i < n; ++i) starts[i] = step * i + (i == 0 ? 0 : 1);
    return shard_map(std::move(starts));
}

result<shard_map> shard_map::from_range_starts(std::vector<std::uint64_t> starts) {
    if (starts.empty() || starts.front() != 0) return errc::bad_request;
    for (std::size_t i = 1; i < starts.size(); ++i) {
        if (starts[i] <= starts[i - 1]) return errc::bad_request;
    }
    return shard_map(std::move(starts));
}

shard_index shard_map::shard_of_hash(std::uint64_t h) const noexcept {
    // The last range whose start is <= h.
    auto it = std::upper_bound(starts_.begin(), starts_.end(), h);
    return static_cast<shard_index>(std::distance(starts_.begin(), it) - 1);
}

}  // namespace cairn::core
