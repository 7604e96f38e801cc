#include "core/hlc.hpp"

#include "core/assert.hpp"

#include <algorithm>

namespace cairn::core {

std::uint64_t system_wall_clock_ms() {
    using namespace std::chrono;
    return static_cast<std::uint64_t>(
        duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

hlc::hlc(std::uint64_t node_id, wall_clock_ms clock) : node_(node_id), clock_(std::move(clock)) {
    CAIRN_ASSERT(node_id <= hlc_node_max);
}

std::uint64_t hlc::now() {
    const std::uint64_t wall = std::min(clock_(), hlc_ms_max);
    const std::uint64_t wall_value = hlc_make(wall, 0, 0);
    std::uint64_t prev = last_.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
        // The logical counter occupies the bits just above the node bits, so adding one
        // logical step carries into the milliseconds on overflow.
        next = std::max(wall_value, prev + (std::uint64_t{1} << hlc_node_bits));
    } while (!last_.compare_exchange_weak(prev, next, std::memory_order_relaxed));
    return next | node_;
}

void hlc::observe(std::uint64_t ts) {
    const std::uint64_t value = ts & ~hlc_node_max;
    std::uint64_t prev = last_.load(std::memory_order_relaxed);
    while (prev < value && !last_.compare_exchange_weak(prev, value, std::memory_order_relaxed)) {
    }
}

}  // namespace cairn::core
