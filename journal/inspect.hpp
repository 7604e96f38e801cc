// Read-only inspection of a journal directory, for `cairn journal stat` and `cairn journal check`
// (issue 7). Opens LMDB with MDB_RDONLY and takes no flock, so it works while cairnd holds the
// journal and when cairnd is dead; it never writes (a reader slot in LMDB's lock file aside).
// Knows no Asio.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cairn::journal {

// One problem found by a check; seq is 0 for problems outside the ops database.
struct inspect_problem {
    std::string where;  // "ops", "cursors", "errors", "dead" or "meta"
    std::uint64_t seq = 0;
    std::string what;
};

struct inspection {
    std::uint64_t node_id = 0;
    std::uint64_t format_version = 0;
    std::uint64_t next_seq = 0;         // meta next_seq (0: not stored yet)
    std::uint64_t ops_count = 0;
    std::uint64_t first_seq = 0;        // 0 when there are no ops
    std::uint64_t last_seq = 0;
    std::uint64_t first_time_ms = 0;    // append wall time of first_seq
    std::uint64_t last_time_ms = 0;
    std::uint64_t ops_bytes = 0;        // sum of the op records' sizes
    std::vector<std::pair<std::uint32_t, std::uint64_t>> cursors;  // shard, applied-through seq
    std::uint64_t error_count = 0;
    std::uint64_t dead_count = 0;
    std::uint64_t idem_count = 0;
    std::uint64_t map_bytes_used = 0;   // pages in use (last page number + 1, times the page size)
    std::uint64_t map_bytes_max = 0;
    std::uint64_t file_bytes = 0;       // data.mdb on disk
    bool checked = false;               // every record was decoded (inspect with check = true)
    std::vector<inspect_problem> problems;  // at most problems_max, in the order found
};

inline constexpr std::size_t inspect_problems_max = 100;

// Reads the journal in directory path. With check, decodes every op, error task and dead letter
// and verifies key sizes, seq order and that every cursor is <= the last seq; problems are
// collected (not errors). Errors: errc::not_found (no data.mdb in path), errc::journal_corrupt
// (LMDB refuses the file or a database is missing), LMDB or system errors.
[[nodiscard]] core::result<inspection> inspect(const std::string& path, bool check);

}  // namespace cairn::journal
