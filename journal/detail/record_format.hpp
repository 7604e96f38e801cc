// Key and value layouts of the journal's named databases (docs/journal-format.md). Every
// integer in a key is big-endian, so LMDB's bytewise order is numeric order. Internal to journal/.
#pragma once

#include "journal/detail/lmdb.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::journal::detail {

// The version of the whole layout, stored in meta at creation; a journal with another
// version is refused at open.
inline constexpr std::uint64_t format_version = 1;

inline constexpr unsigned dbs_max = 16;
inline constexpr const char* db_ops = "ops";
inline constexpr const char* db_cursors = "cursors";
inline constexpr const char* db_errors = "errors";
inline constexpr const char* db_dead = "dead";
inline constexpr const char* db_idem = "idem";
inline constexpr const char* db_idem_time = "idem_time";
inline constexpr const char* db_meta = "meta";
inline constexpr const char* db_edits = "edits";  // added after format 1 was first released: created at open
inline constexpr const char* db_late = "late";    // as edits
inline constexpr unsigned dbs_used = 9;
static_assert(dbs_used <= dbs_max);

// meta keys; every value is a big-endian u64, but meta_route's.
inline constexpr std::string_view meta_node_id = "node_id";
inline constexpr std::string_view meta_format_version = "format_version";
inline constexpr std::string_view meta_next_seq = "next_seq";  // the seq the next op gets
inline constexpr std::string_view meta_ts_max = "ts_max";      // the greatest ts ever journaled
// A random non-zero id written when the journal is created (or first opened by a cairnd that knows it):
// the node id lease on the shards names the journal that holds it (shards/gateways.hpp).
inline constexpr std::string_view meta_journal_id = "journal_id";
// Followed by the shard (4 bytes, big-endian): the number of that shard's last late application.
inline constexpr std::string_view meta_late_last_prefix = "late_last/";
// The route table this gateway routes by (core::route_table::to_text), once it has followed a split.
inline constexpr std::string_view meta_route = "route";
inline constexpr std::size_t route_bytes_max = 64 * 1024;

inline constexpr std::size_t seq_bytes = 8;
inline constexpr std::size_t shard_bytes = 4;
inline constexpr std::size_t ms_bytes = 8;

inline constexpr std::size_t ops_key_bytes = seq_bytes;                            // seq
inline constexpr std::size_t ops_value_header_bytes = ms_bytes;                    // append wall ms, then the op record
inline constexpr std::size_t cursor_key_bytes = shard_bytes;                       // shard
inline constexpr std::size_t cursor_value_bytes = seq_bytes;                       // applied-through seq
inline constexpr std::size_t errors_key_bytes = shard_bytes + ms_bytes + seq_bytes;  // shard, due_ms, seq
inline constexpr std::size_t dead_key_bytes = shard_bytes + seq_bytes;             // shard, seq
inline constexpr std::size_t edit_key_bytes = shard_bytes + seq_bytes;             // shard, seq (as dead)
inline constexpr std::size_t late_key_bytes = shard_bytes + seq_bytes;             // shard, late number (as dead)
inline constexpr std::size_t idem_key_bytes_max = 200;
inline constexpr std::size_t idem_time_key_bytes_max = ms_bytes + idem_key_bytes_max;  // wall ms, idem key
inline constexpr std::size_t meta_value_bytes = 8;

static_assert(errors_key_bytes == 20);
static_assert(dead_key_bytes == 12);
// LMDB's default key size limit (MDB_MAXKEYSIZE) is 511 bytes.
static_assert(idem_time_key_bytes_max <= 511);

// Op ids carry the seq in their low 54 bits (core::make_op_id).
inline constexpr std::uint64_t seq_max = (std::uint64_t{1} << 54) - 1;

// Error-task history bounds (enforced when a task is written).
inline constexpr std::size_t task_errors_max = 16;
inline constexpr std::size_t task_error_bytes_max = 1024;

inline std::string u64_be(std::uint64_t v) {
    std::string s(8, '\0');
    put_be(s.data(), v, 8);
    return s;
}

inline std::array<char, ops_key_bytes> ops_key(std::uint64_t seq) noexcept {
    std::array<char, ops_key_bytes> k{};
    put_be(k.data(), seq, 8);
    return k;
}

inline std::array<char, cursor_key_bytes> cursor_key(std::uint32_t shard) noexcept {
    std::array<char, cursor_key_bytes> k{};
    put_be(k.data(), shard, 4);
    return k;
}

inline std::array<char, errors_key_bytes> errors_key(std::uint32_t shard, std::uint64_t due_ms,
                                                     std::uint64_t seq) noexcept {
    std::array<char, errors_key_bytes> k{};
    put_be(k.data(), shard, 4);
    put_be(k.data() + 4, due_ms, 8);
    put_be(k.data() + 12, seq, 8);
    return k;
}

inline std::array<char, dead_key_bytes> dead_key(std::uint32_t shard, std::uint64_t seq) noexcept {
    std::array<char, dead_key_bytes> k{};
    put_be(k.data(), shard, 4);
    put_be(k.data() + 4, seq, 8);
    return k;
}

inline std::string meta_late_last_key(std::uint32_t shard) {
    std::string k(meta_late_last_prefix);
    k.resize(k.size() + shard_bytes);
    put_be(k.data() + meta_late_last_prefix.size(), shard, 4);
    return k;
}

inline std::string idem_time_key(std::uint64_t wall_ms, std::string_view key) {
    std::string k(ms_bytes, '\0');
    put_be(k.data(), wall_ms, 8);
    k.append(key);
    return k;
}

template <std::size_t N>
std::string_view view(const std::array<char, N>& a) noexcept {
    return {a.data(), N};
}

}  // namespace cairn::journal::detail
