// Rules for the short texts clients send beside bodies: decimal numbers in paths, query
// parameters and string ids, and keys such as idempotency keys and counter dimension values.
// One definition each, so that every route accepts the same spellings. Pure; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cairn::core {

// The canonical decimal spelling of a 64-bit integer and nothing else: an optional '-' and
// digits, no '+', no leading zeros ("0" itself excepted), no "-0", no spaces, in range. So one
// number has one spelling, and "007" or "-0" is the caller's mistake, not a silent alias.
std::optional<std::int64_t> parse_decimal_int64(std::string_view text) noexcept;
std::optional<std::uint64_t> parse_decimal_uint64(std::string_view text) noexcept;

// True when text holds a C0 control character (0x00 to 0x1F, NUL and tab included) or DEL
// (0x7F). Names, dimension values and idempotency keys must not: they end up in logs, headers
// and keys, where such bytes are invisible or cut the text.
bool has_control_chars(std::string_view text) noexcept;

}  // namespace cairn::core
