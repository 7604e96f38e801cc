// Routing: a 64-bit hash of a routing key picks a shard by range. Immutable after
// construction; share it by const reference or shared_ptr across threads.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace cairn::core {

// MurmurHash3's 64-bit finalizer: stable, well mixed, and the documented hash of int64 keys.
constexpr std::uint64_t hash_id(std::int64_t id) noexcept {
    auto k = static_cast<std::uint64_t>(id);
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

// The documented hash of byte-string keys (cells' row_keys, string counter dimensions): 64-bit
// FNV-1a of the bytes, then the finalizer above.
constexpr std::uint64_t hash_bytes(std::string_view bytes) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    return hash_id(static_cast<std::int64_t>(h));
}

using shard_index = std::uint32_t;

class shard_map {
public:
    // Splits the hash space into n equal ranges; n >= 1.
    static shard_map equal_ranges(std::uint32_t n);
    // range_starts[i] is the first hash of shard i; it must start at 0 and increase strictly.
    [[nodiscard]] static result<shard_map> from_range_starts(std::vector<std::uint64_t> range_starts);

    shard_index shard_of_hash(std::uint64_t h) const noexcept;
    shard_index shard_of_id(std::int64_t id) const noexcept { return shard_of_hash(hash_id(id)); }
    std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(starts_.size()); }
    std::span<const std::uint64_t> range_starts() const noexcept { return starts_; }

private:
    explicit shard_map(std::vector<std::uint64_t> starts) : starts_(std::move(starts)) {}
    std::vector<std::uint64_t> starts_;
};

}  // namespace cairn::core
