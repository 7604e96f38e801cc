// A hybrid logical clock: 64-bit timestamps that are unique per op across gateways and
// ordered by wall time. Layout (high to low): 42 bits of milliseconds since the Unix epoch,
// 12 bits of logical counter, 10 bits of node id. Thread-safe (one atomic word).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace cairn::core {

inline constexpr int hlc_node_bits = 10;
inline constexpr int hlc_logical_bits = 12;
inline constexpr std::uint64_t hlc_node_max = (1u << hlc_node_bits) - 1;
inline constexpr std::uint64_t hlc_logical_max = (1u << hlc_logical_bits) - 1;
inline constexpr std::uint64_t hlc_ms_max = (std::uint64_t{1} << (64 - hlc_node_bits - hlc_logical_bits)) - 1;

constexpr std::uint64_t hlc_make(std::uint64_t ms, std::uint64_t logical, std::uint64_t node) noexcept {
    return (ms << (hlc_logical_bits + hlc_node_bits)) | (logical << hlc_node_bits) | node;
}
constexpr std::uint64_t hlc_ms(std::uint64_t ts) noexcept { return ts >> (hlc_logical_bits + hlc_node_bits); }
constexpr std::uint64_t hlc_logical(std::uint64_t ts) noexcept { return (ts >> hlc_node_bits) & hlc_logical_max; }
constexpr std::uint64_t hlc_node(std::uint64_t ts) noexcept { return ts & hlc_node_max; }

// Milliseconds since the Unix epoch; injected so that tests control time.
using wall_clock_ms = std::function<std::uint64_t()>;
std::uint64_t system_wall_clock_ms();

class hlc {
public:
    // node_id must be <= hlc_node_max.
    explicit hlc(std::uint64_t node_id, wall_clock_ms clock = system_wall_clock_ms);

    // A new timestamp, strictly greater than every one this clock returned or observed.
    // If the logical counter overflows within one millisecond, the clock borrows the next
    // millisecond (it runs slightly ahead of wall time rather than repeat a value).
    std::uint64_t now();

    // Moves the clock past ts (from the journal at start-up, or from a peer).
    void observe(std::uint64_t ts);

    std::uint64_t node_id() const noexcept { return node_; }

private:
    std::uint64_t node_;
    wall_clock_ms clock_;
    std::atomic<std::uint64_t> last_{0};  // last value without node bits
};

}  // namespace cairn::core
