// Routing: a 64-bit hash of a routing key picks a shard by range. Every shard owns one contiguous
// range of the hash space; a map made from a config's [[shards]] gives shard i the i-th of n equal
// ranges, and online resharding (docs/resharding.md) splits one shard's range in two, the upper half
// going to a new shard numbered after the others — so after a split the shards' order in the hash
// space is no longer their index order. Immutable after construction; share it by const reference or
// shared_ptr across threads.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <span>
#include <string>
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

// One shard's range: the hashes first..last, both included.
struct hash_range {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    bool contains(std::uint64_t h) const noexcept { return first <= h && h <= last; }
    friend bool operator==(const hash_range&, const hash_range&) = default;
};

class shard_map {
public:
    // The most shards a map may have (a split refuses to make more).
    static constexpr std::uint32_t shards_max = 1024;

    // Splits the hash space into n equal ranges, shard i the i-th; 1 <= n <= shards_max.
    static shard_map equal_ranges(std::uint32_t n);
    // range_starts[i] is the first hash of shard i; it must start at 0 and increase strictly.
    [[nodiscard]] static result<shard_map> from_range_starts(std::vector<std::uint64_t> range_starts);
    // owners[k] owns the k-th range, which starts at starts[k]: starts begin at 0 and increase
    // strictly, and owners are 0..n-1 in any order, each once (every shard owns one range).
    [[nodiscard]] static result<shard_map> from_ranges(std::vector<std::uint64_t> starts, std::vector<shard_index> owners);
    // The form to_text() writes: "start:shard" per range, in hash order, separated by one space,
    // decimals without signs or leading zeros. Anything else is bad_request.
    [[nodiscard]] static result<shard_map> parse(std::string_view text);

    shard_index shard_of_hash(std::uint64_t h) const noexcept;
    shard_index shard_of_id(std::int64_t id) const noexcept { return shard_of_hash(hash_id(id)); }
    // How many shards (= ranges).
    std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(starts_.size()); }
    // The range shard s owns; asserts s < size().
    hash_range range_of(shard_index s) const;

    // The map after splitting shard s's range at its midpoint: s keeps the lower half, a new shard
    // numbered size() takes the upper half; every other hash keeps its shard. bad_request if s >=
    // size(), s's range holds a single hash, or the map already has shards_max shards.
    [[nodiscard]] result<shard_map> split(shard_index s) const;

    std::string to_text() const;
    friend bool operator==(const shard_map&, const shard_map&) = default;

private:
    shard_map(std::vector<std::uint64_t> starts, std::vector<shard_index> owners);
    std::vector<std::uint64_t> starts_;  // of each range, in hash order
    std::vector<shard_index> owners_;    // of each range
    std::vector<std::uint32_t> range_;   // range_[s]: the position in starts_ of shard s's range
};

}  // namespace cairn::core
