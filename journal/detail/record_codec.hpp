// msgpack encodings of the journal's own records: error tasks, dead letters and idempotency
// entries (layouts in docs/journal-format.md). msgpack-c's exceptions stop here: decoding returns
// errc::journal_corrupt for any bad input. Internal to journal/; thread-safe.
#pragma once

#include "journal/journal.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace cairn::journal::detail {

inline constexpr std::uint8_t task_format_version = 1;
inline constexpr std::uint8_t idem_format_version = 1;
inline constexpr std::uint32_t task_record_fields = 8;   // [version, shard, seq, due_ms, attempts, first_failed_ms, errors, op_bytes]
inline constexpr std::uint32_t dead_record_fields = 9;   // the task's fields, then died_ms
inline constexpr std::uint32_t idem_record_fields = 6;   // [version, wall_ms, first_seq, last_seq, ts[], op_ids[]]
inline constexpr std::uint8_t edit_format_version = 1;
inline constexpr std::uint32_t edit_record_fields = 6;   // [version, shard, seq, edited_ms, new_seq, op_bytes]
inline constexpr std::uint8_t late_format_version = 1;
inline constexpr std::uint32_t late_record_fields = 6;   // [version, shard, number, seq, applied_ms, op_bytes]

std::string encode_task(const error_task& t);
[[nodiscard]] core::result<error_task> decode_task(std::span<const char> bytes);

std::string encode_dead(const dead_letter& d);
[[nodiscard]] core::result<dead_letter> decode_dead(std::span<const char> bytes);

std::string encode_edit(const op_edit& e);
[[nodiscard]] core::result<op_edit> decode_edit(std::span<const char> bytes);

std::string encode_late(const late_apply& l);
[[nodiscard]] core::result<late_apply> decode_late(std::span<const char> bytes);

struct idem_entry {
    appended result;
    std::uint64_t wall_ms = 0;  // when the original append was written
};
std::string encode_idem(const appended& a, std::uint64_t wall_ms);
[[nodiscard]] core::result<idem_entry> decode_idem(std::span<const char> bytes);

// Keeps the newest task_errors_max entries of t.errors and cuts each to task_error_bytes_max
// bytes (at a UTF-8 boundary).
void bound_history(error_task& t);

}  // namespace cairn::journal::detail
