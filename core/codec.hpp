// Encoding of ops as msgpack journal records (format in docs/journal-format.md). msgpack-c's
// exceptions stop here: decode returns errc::journal_corrupt for any bad input. Thread-safe.
#pragma once

#include "core/op.hpp"
#include "core/result.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace cairn::core {

inline constexpr std::uint8_t op_format_version = 1;
inline constexpr std::size_t op_record_bytes_max = 64 * 1024;

// Appends the record for o to out. Asserts that o is valid (validated at the gateway).
void encode_op(const op& o, std::string& out);
std::string encode_op(const op& o);

// Decodes one record; errc::journal_corrupt if it is not a valid record of a known version.
[[nodiscard]] result<op> decode_op(std::span<const char> bytes);

// True if graph is a valid graph name: [A-Za-z0-9_]{1,32}.
bool valid_graph_name(std::string_view graph) noexcept;

}  // namespace cairn::core
