// Entities (issue 5, FriendFeed's schema-less MySQL): property bags (JSON objects) by a 16-byte
// id, grouped in declared kinds, on the shard of their id. Plain values, no I/O.
//
// The rule: last writer wins by ts; a delete is a tombstone with its own ts, so a delete that
// arrives before the put it follows still wins. Equal ts (client-supplied) are broken by a
// fixed order: a tombstone over a put, then the greater stored body bytes.
#pragma once

#include "core/document.hpp"
#include "core/indexes.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

enum class model : std::uint8_t;

inline constexpr std::size_t entity_kind_bytes_max = 32;

struct entity_op {
    static constexpr model kind = static_cast<model>(3);  // model::entity
    std::string entity_kind;  // declared in [entities] kinds
    std::string id;           // 16 bytes
    bool deleted = false;     // a tombstone: body is empty
    std::string body;         // stored (core::encode_body)
    std::vector<index_entry> entries;  // the index rows of body, from the definitions at write time

    friend bool operator==(const entity_op&, const entity_op&) = default;
};

bool valid_entity_kind(std::string_view kind) noexcept;

// True if version a wins over version b (the rule above).
constexpr bool entity_version_wins(std::uint64_t ts_a, bool deleted_a, std::string_view body_a, std::uint64_t ts_b,
                                   bool deleted_b, std::string_view body_b) noexcept {
    if (ts_a != ts_b) return ts_a > ts_b;
    if (deleted_a != deleted_b) return deleted_a;
    return body_a > body_b;
}

struct entity_config {
    std::vector<std::string> kinds;  // the table on the shards is entities, kinds share it
    std::size_t compress_bytes_min = 512;
    bool declared(std::string_view kind) const noexcept;
};

}  // namespace cairn::core
