// What the document models (cells, entities) share: 16-byte keys, and JSON-object bodies
// stored as msgpack, zstd-compressed above a threshold. Plain values, no I/O.
#pragma once

#include "core/result.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::core {

// A 16-byte key (cells' row_key, entities' id): 32 hex digits, or UUID text
// (8-4-4-4-12 hex digits); either case. Rendered as lowercase UUID text.
using id16 = std::array<unsigned char, 16>;
std::optional<id16> parse_id16(std::string_view text) noexcept;
std::string format_id16(const id16& id);
std::string format_id16_bytes(std::string_view bytes);  // 16 bytes (others: as many as there are)
std::string_view id16_bytes(const id16& id) noexcept;

// A stored body, prefix byte included: it must fit in a journal record with its key.
inline constexpr std::size_t stored_body_bytes_max = 60 * 1024;

// Stored body: one format byte, then the payload. 0: msgpack as is; 1: zstd of the msgpack.
enum class body_format : std::uint8_t { msgpack = 0, zstd_msgpack = 1 };

// msgpack bytes -> stored body: compressed (zstd level 3) when at least compress_min bytes and
// smaller compressed. Deterministic: the same msgpack gives the same stored bytes.
std::string encode_body(std::string_view msgpack, std::size_t compress_min);
// Stored body -> msgpack bytes. Errors: journal_corrupt (unknown format, bad zstd frame, or
// decompressed size over decoded_max).
result<std::string> decode_body(std::string_view stored, std::size_t decoded_max);

}  // namespace cairn::core
