// Portable journal export files, for `cairn journal export` and `cairn replay --file` /
// `cairn journal import` (issue 7): a range of a journal's ops, written from a journal directory
// read-only (cairnd running or dead, as inspect.hpp), to be applied by another gateway.
// Layout (docs/journal-format.md, "Export files"): 8 magic bytes, then zstd frames each with its
// content checksum — a header, blocks of records, a trailer that counts them — so a torn or
// corrupted file is refused, never half-read silently. Knows no Asio.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

struct ZSTD_DCtx_s;  // zstd.h's ZSTD_DCtx

namespace cairn::journal {

inline constexpr std::uint64_t export_format_version = 1;

// One journaled op as exported: its seq and append wall time in the source journal, and the op
// record (core::encode_op bytes) unchanged.
struct export_record {
    std::uint64_t seq = 0;
    std::uint64_t append_ms = 0;
    std::string op_bytes;

    friend bool operator==(const export_record&, const export_record&) = default;
};

// Which ops to export: seq in [from_seq, to_seq] and append time in [since_ms, until_ms].
struct export_range {
    std::uint64_t from_seq = 0;
    std::uint64_t to_seq = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t since_ms = 0;
    std::uint64_t until_ms = std::numeric_limits<std::uint64_t>::max();

    friend bool operator==(const export_range&, const export_range&) = default;
};

struct export_header {
    std::uint64_t format_version = export_format_version;
    std::uint64_t node_id = 0;     // the source journal's node id
    std::uint64_t created_ms = 0;  // when the export was written
    export_range range;            // as asked

    friend bool operator==(const export_header&, const export_header&) = default;
};

struct export_summary {
    std::uint64_t records = 0;
    std::uint64_t first_seq = 0;  // 0 when no op matched
    std::uint64_t last_seq = 0;
    std::uint64_t op_bytes = 0;   // sum of the op records' sizes
    std::uint64_t file_bytes = 0;
};

// Called after each block is written: records so far and the last seq written.
using export_progress = std::function<void(std::uint64_t records, std::uint64_t last_seq)>;

// Writes the ops of the journal in directory dir that fall in range to out_path (written to
// out_path + ".part", fsynced and renamed, so out_path is complete or absent). Reads in short
// read-only transactions of at most block_records ops each. Errors: errc::not_found (no journal
// in dir), errc::journal_corrupt (LMDB refuses it), errc::bad_request (from_seq > to_seq or
// since_ms > until_ms), system errors writing out_path.
[[nodiscard]] core::result<export_summary> export_journal(const std::string& dir, const export_range& range,
                                                          const std::string& out_path,
                                                          const export_progress& progress = {},
                                                          std::size_t block_records = 4096);

// Reads an export file block by block, verifying every checksum and the trailer's counts.
class export_reader {
public:
    // Reads the magic and the header. Errors: errc::not_found (no such file), errc::journal_corrupt
    // (not an export file, a checksum mismatch, a format version other than export_format_version).
    [[nodiscard]] static core::result<std::unique_ptr<export_reader>> open(const std::string& path);

    const export_header& header() const noexcept { return header_; }
    std::uint64_t file_bytes() const noexcept { return file_bytes_; }
    std::uint64_t bytes_read() const noexcept { return bytes_read_; }

    // The next block of records into out (cleared first). Returns true with a non-empty block,
    // false at the end (after the trailer was verified: its record count and last seq equal what
    // was read). errc::journal_corrupt for a bad frame, a checksum mismatch, a missing trailer (a
    // truncated file) or a trailer that disagrees.
    [[nodiscard]] core::result<bool> next(std::vector<export_record>& out);

private:
    export_reader() = default;
    // Reads the next length-prefixed frame and returns its content, verified by its checksum and
    // at most content_bytes_max bytes. errc::journal_corrupt otherwise (a truncated file too).
    [[nodiscard]] core::result<std::string> read_frame(std::size_t content_bytes_max);
    [[nodiscard]] core::result<bool> read_block(std::vector<export_record>& out);

    struct dctx_freer {
        void operator()(ZSTD_DCtx_s* d) const noexcept;
    };

    std::ifstream in_;
    std::unique_ptr<ZSTD_DCtx_s, dctx_freer> dctx_;  // reused for every frame
    export_header header_;
    std::uint64_t file_bytes_ = 0;
    std::uint64_t bytes_read_ = 0;
    std::uint64_t records_read_ = 0;
    std::uint64_t last_seq_read_ = 0;
    bool done_ = false;
    bool failed_ = false;  // a bad frame was met: every later next() fails as well
};

}  // namespace cairn::journal
