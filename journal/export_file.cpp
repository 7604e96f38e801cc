// Journal export files (export_file.hpp; layout in docs/journal-format.md, "Export files"). The
// writer reads the journal with detail::env::open_read_only, like inspect.cpp; msgpack-c's
// exceptions stop in this file.
#include "journal/export_file.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"
#include "core/hlc.hpp"
#include "journal/detail/lmdb.hpp"
#include "journal/detail/record_format.hpp"

#include <msgpack.hpp>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string_view>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace cairn::journal {
namespace {

constexpr std::string_view export_magic = "CAIRNJX1";
static_assert(export_magic.size() == 8);

// Every frame is a u32 big-endian length, then one zstd frame of exactly that many bytes.
constexpr std::size_t frame_length_bytes = 4;
constexpr std::size_t header_bytes_max = 64 * 1024;           // decompressed
constexpr std::size_t block_bytes_max = 256 * 1024 * 1024;    // decompressed; the trailer too
constexpr std::size_t frame_bytes_max = ZSTD_COMPRESSBOUND(block_bytes_max);
static_assert(frame_bytes_max <= 0xffffffffu, "a frame's length fits its u32 prefix");

// The writer ends a block once its records reach block_bytes_target, so that with one more record
// of the largest size and the framing it stays below block_bytes_max, which the reader enforces.
constexpr std::size_t block_bytes_target = 16 * 1024 * 1024;
constexpr std::size_t record_framing_bytes_max = 1 + 9 + 9 + 5;  // fixarray, two uint64, bin32 header
constexpr std::size_t block_framing_bytes_max = 5 + 1;           // array32 header, the tag
static_assert(block_bytes_target + record_framing_bytes_max + core::op_record_bytes_max + block_framing_bytes_max <=
              block_bytes_max);
// The smallest record: a fixarray, two positive fixints and a bin8 header. Bounds the array size
// a block may claim, so a corrupt size cannot make msgpack-c allocate more than the block holds.
constexpr std::size_t record_bytes_min = 4;

constexpr std::uint64_t tag_block = 1;    // [1, record...], each record [seq, append_ms, bin op]
constexpr std::uint64_t tag_trailer = 2;  // [2, records, last_seq]
constexpr std::uint32_t header_fields = 7;   // [version, node_id, created_ms, from_seq, to_seq, since_ms, until_ms]
constexpr std::uint32_t trailer_fields = 3;
constexpr std::uint32_t record_fields = 3;

constexpr int zstd_level = 3;
// Reader slots for the exporting process only (as inspect.cpp).
constexpr unsigned export_readers_max = 4;

core::error_code file_system_error(int e) { return {e, boost::system::generic_category()}; }

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};
using packer = msgpack::packer<string_writer>;

bool valid_range(const export_range& r) { return r.from_seq <= r.to_seq && r.since_ms <= r.until_ms; }

// out_path + ".part" while it is written: closed when it goes away, and removed if it was opened
// and not renamed.
class part_file {
public:
    explicit part_file(std::string final_path) : final_path_(std::move(final_path)), path_(final_path_ + ".part") {}
    ~part_file() {
        if (fd_ >= 0) ::close(fd_);
        if (opened_ && !renamed_) ::unlink(path_.c_str());
    }
    part_file(const part_file&) = delete;
    part_file& operator=(const part_file&) = delete;

    [[nodiscard]] core::result<void> open() {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
        if (fd_ < 0) return file_system_error(errno);
        opened_ = true;
        return core::success();
    }

    [[nodiscard]] core::result<void> write(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return file_system_error(errno);
            bytes.remove_prefix(static_cast<std::size_t>(n));
            bytes_ += static_cast<std::uint64_t>(n);
        }
        return core::success();
    }

    // fsyncs and closes the file, renames it to the final path and fsyncs the directory, so that
    // after a crash the final path is the complete file or absent.
    [[nodiscard]] core::result<void> commit() {
        if (::fsync(fd_) != 0) return file_system_error(errno);
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0) return file_system_error(errno);
        if (::rename(path_.c_str(), final_path_.c_str()) != 0) return file_system_error(errno);
        renamed_ = true;
        std::string dir = std::filesystem::path(final_path_).parent_path().string();
        if (dir.empty()) dir = ".";
        const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) return file_system_error(errno);
        const int rc = ::fsync(dir_fd);
        const int e = errno;
        ::close(dir_fd);
        if (rc != 0) return file_system_error(e);
        return core::success();
    }

    std::uint64_t bytes() const noexcept { return bytes_; }

private:
    std::string final_path_;
    std::string path_;
    int fd_ = -1;
    bool opened_ = false;
    bool renamed_ = false;
    std::uint64_t bytes_ = 0;
};

struct cctx_freer {
    void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
using cctx_ptr = std::unique_ptr<ZSTD_CCtx, cctx_freer>;

// Compresses content into one zstd frame with its content checksum and writes it with its length.
core::result<void> write_frame(part_file& out, ZSTD_CCtx* cctx, std::string_view content) {
    CAIRN_ASSERT(content.size() <= block_bytes_max);
    std::string frame(frame_length_bytes + ZSTD_compressBound(content.size()), '\0');
    const std::size_t n = ZSTD_compress2(cctx, frame.data() + frame_length_bytes, frame.size() - frame_length_bytes,
                                         content.data(), content.size());
    // The destination holds ZSTD_compressBound bytes, so only an allocation can fail.
    if (ZSTD_isError(n)) return file_system_error(ENOMEM);
    CAIRN_ASSERT(n <= frame_bytes_max);
    detail::put_be(frame.data(), n, static_cast<int>(frame_length_bytes));
    frame.resize(frame_length_bytes + n);
    return out.write(frame);
}

std::string encode_header(const export_header& h) {
    std::string out;
    string_writer w{out};
    packer pk(w);
    pk.pack_array(header_fields);
    pk.pack(h.format_version);
    pk.pack(h.node_id);
    pk.pack(h.created_ms);
    pk.pack(h.range.from_seq);
    pk.pack(h.range.to_seq);
    pk.pack(h.range.since_ms);
    pk.pack(h.range.until_ms);
    CAIRN_ASSERT(out.size() <= header_bytes_max);
    return out;
}

// The records of one block, packed as they are read (op bytes point into LMDB's map only until
// the read transaction ends).
struct block_builder {
    std::string records;
    std::uint32_t count = 0;
    std::uint64_t first_seq = 0;
    std::uint64_t last_seq = 0;
    std::uint64_t op_bytes = 0;

    void add(std::uint64_t seq, std::uint64_t append_ms, std::string_view op) {
        CAIRN_ASSERT(op.size() <= core::op_record_bytes_max);
        string_writer w{records};
        packer pk(w);
        pk.pack_array(record_fields);
        pk.pack(seq);
        pk.pack(append_ms);
        pk.pack_bin(static_cast<std::uint32_t>(op.size()));
        pk.pack_bin_body(op.data(), static_cast<std::uint32_t>(op.size()));
        if (count == 0) first_seq = seq;
        ++count;
        last_seq = seq;
        op_bytes += op.size();
    }

    std::string content() const {
        std::string out;
        string_writer w{out};
        packer pk(w);
        pk.pack_array(count + 1);
        pk.pack(tag_block);
        out += records;
        CAIRN_ASSERT(out.size() <= block_bytes_max);
        return out;
    }
};

struct source {
    detail::env env;
    MDB_dbi ops = 0;
    std::uint64_t node_id = 0;
};

// Opens the journal in dir read-only and reads its node id. The database handles are opened in
// a read transaction that commits, so that they stay valid for the environment's life.
core::result<source> open_source(const std::string& dir) {
    auto env = detail::env::open_read_only(dir, detail::dbs_max, export_readers_max);
    if (!env) return env.error();
    source s{std::move(env.value())};
    auto t = detail::txn::begin_read(s.env);
    if (!t) return t.error();
    auto ops = detail::open_existing_db(t.value(), detail::db_ops);
    if (!ops) return ops.error();
    auto meta = detail::open_existing_db(t.value(), detail::db_meta);
    if (!meta) return meta.error();
    s.ops = ops.value();
    auto meta_u64 = [&](std::string_view key) -> core::result<std::uint64_t> {
        std::string_view v;
        const int rc = t.value().get(meta.value(), key, v);
        if (rc == MDB_NOTFOUND) return core::errc::journal_corrupt;
        if (rc != 0) return detail::lmdb_error(rc);
        if (v.size() != detail::meta_value_bytes) return core::errc::journal_corrupt;
        return detail::get_be(v.data(), 8);
    };
    // The op records of another layout version would be exported as if they were this one's.
    auto version = meta_u64(detail::meta_format_version);
    if (!version) return version.error();
    if (version.value() != detail::format_version) return core::errc::journal_corrupt;
    auto node = meta_u64(detail::meta_node_id);
    if (!node) return node.error();
    s.node_id = node.value();
    if (int rc = t.value().commit(); rc != 0) return detail::lmdb_error(rc);
    return s;
}

// Reads, in one short read transaction, at most records_max ops from the first seq >= next_seq,
// keeping those in range into block. Moves next_seq past the last op read; returns false once
// nothing is left in range.
core::result<bool> read_ops_block(const source& s, const export_range& range, std::size_t records_max,
                                  std::uint64_t& next_seq, block_builder& block) {
    auto t = detail::txn::begin_read(s.env);
    if (!t) return t.error();
    detail::cursor c;  // Declared after t: it closes before the transaction ends.
    if (int rc = c.open(t.value(), s.ops); rc != 0) return detail::lmdb_error(rc);
    std::string_view k;
    std::string_view v;
    int rc = c.seek(detail::view(detail::ops_key(next_seq)), k, v);
    for (std::size_t read = 0; read < records_max && block.records.size() < block_bytes_target; ++read) {
        if (rc == MDB_NOTFOUND) return false;
        if (rc != 0) return detail::lmdb_error(rc);
        if (k.size() != detail::ops_key_bytes || v.size() < detail::ops_value_header_bytes) {
            return core::errc::journal_corrupt;
        }
        const std::uint64_t seq = detail::get_be(k.data(), 8);
        if (seq > range.to_seq) return false;
        const std::uint64_t append_ms = detail::get_be(v.data(), 8);
        const std::string_view op = v.substr(detail::ops_value_header_bytes);
        if (op.size() > core::op_record_bytes_max) return core::errc::journal_corrupt;
        if (append_ms >= range.since_ms && append_ms <= range.until_ms) block.add(seq, append_ms, op);
        if (seq == range.to_seq) return false;  // also keeps seq + 1 below from wrapping
        next_seq = seq + 1;
        rc = c.get(k, v, MDB_NEXT);
    }
    return true;
}

// Unpacks one frame's msgpack (throws msgpack-c's exceptions; callers catch them). Records are
// arrays of integers and one bin, two levels deep.
msgpack::object_handle unpack_frame(std::string_view content, std::size_t array_max) {
    const msgpack::unpack_limit limit(std::min(array_max, content.size()), 0, 0, core::op_record_bytes_max, 0, 3);
    std::size_t offset = 0;
    msgpack::object_handle oh = msgpack::unpack(content.data(), content.size(), offset, nullptr, nullptr, limit);
    if (offset != content.size()) throw msgpack::type_error();
    return oh;
}

bool get_u64(const msgpack::object& o, std::uint64_t& out) {
    if (o.type != msgpack::type::POSITIVE_INTEGER) return false;
    out = o.via.u64;
    return true;
}

}  // namespace

core::result<export_summary> export_journal(const std::string& dir, const export_range& range,
                                            const std::string& out_path, const export_progress& progress,
                                            std::size_t block_records) {
    CAIRN_ASSERT(block_records > 0);
    if (!valid_range(range)) return core::errc::bad_request;
    auto src = open_source(dir);
    if (!src) return src.error();

    cctx_ptr cctx(ZSTD_createCCtx());
    if (!cctx) return file_system_error(ENOMEM);
    const std::size_t level_rc = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, zstd_level);
    CAIRN_ASSERT(!ZSTD_isError(level_rc));
    const std::size_t checksum_rc = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
    CAIRN_ASSERT(!ZSTD_isError(checksum_rc));

    part_file out(out_path);
    if (auto r = out.open(); !r) return r.error();
    if (auto r = out.write(export_magic); !r) return r.error();
    export_header header;
    header.node_id = src.value().node_id;
    header.created_ms = core::system_wall_clock_ms();
    header.range = range;
    if (auto r = write_frame(out, cctx.get(), encode_header(header)); !r) return r.error();

    export_summary summary;
    std::uint64_t next_seq = range.from_seq;
    for (bool more = true; more;) {
        block_builder block;
        auto read = read_ops_block(src.value(), range, block_records, next_seq, block);
        if (!read) return read.error();
        more = read.value();
        if (block.count == 0) continue;  // Blocks are never empty: the time range dropped every op read.
        if (auto r = write_frame(out, cctx.get(), block.content()); !r) return r.error();
        if (summary.records == 0) summary.first_seq = block.first_seq;
        summary.records += block.count;
        summary.last_seq = block.last_seq;
        summary.op_bytes += block.op_bytes;
        if (progress) progress(summary.records, summary.last_seq);
    }

    std::string trailer;
    {
        string_writer w{trailer};
        packer pk(w);
        pk.pack_array(trailer_fields);
        pk.pack(tag_trailer);
        pk.pack(summary.records);
        pk.pack(summary.last_seq);
    }
    if (auto r = write_frame(out, cctx.get(), trailer); !r) return r.error();
    summary.file_bytes = out.bytes();
    if (auto r = out.commit(); !r) return r.error();
    return summary;
}

void export_reader::dctx_freer::operator()(ZSTD_DCtx_s* d) const noexcept { ZSTD_freeDCtx(d); }

core::result<std::unique_ptr<export_reader>> export_reader::open(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found) return core::errc::not_found;
    if (ec) return file_system_error(ec.value());
    if (!std::filesystem::is_regular_file(status)) return core::errc::journal_corrupt;

    std::unique_ptr<export_reader> r(new export_reader());
    r->dctx_.reset(ZSTD_createDCtx());
    if (!r->dctx_) return file_system_error(ENOMEM);
    r->in_.open(path, std::ios::binary);
    if (!r->in_) return file_system_error(errno != 0 ? errno : EIO);
    r->file_bytes_ = std::filesystem::file_size(path, ec);
    if (ec) return file_system_error(ec.value());

    std::string magic(export_magic.size(), '\0');
    if (r->file_bytes_ < magic.size()) return core::errc::journal_corrupt;
    if (!r->in_.read(magic.data(), static_cast<std::streamsize>(magic.size()))) return core::errc::journal_corrupt;
    if (magic != export_magic) return core::errc::journal_corrupt;
    r->bytes_read_ = magic.size();

    auto content = r->read_frame(header_bytes_max);
    if (!content) return content.error();
    try {
        auto oh = unpack_frame(content.value(), header_fields);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size != header_fields) return core::errc::journal_corrupt;
        const msgpack::object* f = obj.via.array.ptr;
        export_header& h = r->header_;
        const bool ok = get_u64(f[0], h.format_version) && get_u64(f[1], h.node_id) && get_u64(f[2], h.created_ms) &&
                        get_u64(f[3], h.range.from_seq) && get_u64(f[4], h.range.to_seq) &&
                        get_u64(f[5], h.range.since_ms) && get_u64(f[6], h.range.until_ms);
        if (!ok) return core::errc::journal_corrupt;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
    if (r->header_.format_version != export_format_version) return core::errc::journal_corrupt;
    if (!valid_range(r->header_.range)) return core::errc::journal_corrupt;
    return r;
}

core::result<std::string> export_reader::read_frame(std::size_t content_bytes_max) {
    // Every length is checked against what is left of the file before anything is allocated:
    // a truncated file ends in a short frame, never in a short read taken for the end.
    const std::uint64_t left = file_bytes_ - bytes_read_;
    if (left < frame_length_bytes) return core::errc::journal_corrupt;
    char prefix[frame_length_bytes];
    if (!in_.read(prefix, frame_length_bytes)) return core::errc::journal_corrupt;
    const std::uint64_t length = detail::get_be(prefix, static_cast<int>(frame_length_bytes));
    if (length == 0 || length > ZSTD_compressBound(content_bytes_max) || length > left - frame_length_bytes) {
        return core::errc::journal_corrupt;
    }
    std::string frame(static_cast<std::size_t>(length), '\0');
    if (!in_.read(frame.data(), static_cast<std::streamsize>(frame.size()))) return core::errc::journal_corrupt;
    bytes_read_ += frame_length_bytes + length;

    // Exactly one frame, with its content size declared and within the bound. Requiring the
    // frame to fill its length also refuses a frame whose checksum flag was cleared: its last
    // four bytes would be left over.
    if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size()) return core::errc::journal_corrupt;
    const unsigned long long content_bytes = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (content_bytes == ZSTD_CONTENTSIZE_UNKNOWN || content_bytes == ZSTD_CONTENTSIZE_ERROR) {
        return core::errc::journal_corrupt;
    }
    if (content_bytes > content_bytes_max) return core::errc::journal_corrupt;
    std::string content(static_cast<std::size_t>(content_bytes), '\0');
    // Decompression verifies the content checksum of a frame that has one.
    const std::size_t n = ZSTD_decompressDCtx(dctx_.get(), content.data(), content.size(), frame.data(), frame.size());
    if (ZSTD_isError(n) || n != content.size()) return core::errc::journal_corrupt;
    return content;
}

core::result<bool> export_reader::next(std::vector<export_record>& out) {
    out.clear();
    if (failed_) return core::errc::journal_corrupt;
    if (done_) return false;
    auto r = read_block(out);
    if (!r) {
        failed_ = true;
        out.clear();  // A block that does not verify is never handed out, not even in part.
    }
    return r;
}

core::result<bool> export_reader::read_block(std::vector<export_record>& out) {
    auto content = read_frame(block_bytes_max);
    if (!content) return content.error();
    try {
        // A block of n records holds at least record_bytes_min * n bytes; a trailer has 3 fields.
        const std::size_t array_max =
            std::max<std::size_t>(trailer_fields, content.value().size() / record_bytes_min + 1);
        auto oh = unpack_frame(content.value(), array_max);
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size == 0) return core::errc::journal_corrupt;
        const msgpack::object* f = obj.via.array.ptr;
        const std::uint32_t fields = obj.via.array.size;
        std::uint64_t tag = 0;
        if (!get_u64(f[0], tag)) return core::errc::journal_corrupt;
        if (tag == tag_trailer) {
            std::uint64_t records = 0;
            std::uint64_t last_seq = 0;
            if (fields != trailer_fields || !get_u64(f[1], records) || !get_u64(f[2], last_seq)) {
                return core::errc::journal_corrupt;
            }
            if (records != records_read_ || last_seq != last_seq_read_) return core::errc::journal_corrupt;
            // The trailer is the last frame: bytes after it are not part of this export.
            if (bytes_read_ != file_bytes_ || in_.peek() != std::ifstream::traits_type::eof()) {
                return core::errc::journal_corrupt;
            }
            done_ = true;
            return false;
        }
        // The writer never writes an empty block.
        if (tag != tag_block || fields < 2) return core::errc::journal_corrupt;
        const export_range& range = header_.range;
        std::uint64_t last_seq = last_seq_read_;
        out.reserve(fields - 1);
        for (std::uint32_t i = 1; i < fields; ++i) {
            const msgpack::object& rec = f[i];
            if (rec.type != msgpack::type::ARRAY || rec.via.array.size != record_fields) {
                return core::errc::journal_corrupt;
            }
            const msgpack::object* rf = rec.via.array.ptr;
            export_record e;
            if (!get_u64(rf[0], e.seq) || !get_u64(rf[1], e.append_ms)) return core::errc::journal_corrupt;
            if (rf[2].type != msgpack::type::BIN) return core::errc::journal_corrupt;
            // Seqs increase through the whole file and stay inside the range the header names.
            if (e.seq <= last_seq || e.seq < range.from_seq || e.seq > range.to_seq) return core::errc::journal_corrupt;
            if (e.append_ms < range.since_ms || e.append_ms > range.until_ms) return core::errc::journal_corrupt;
            e.op_bytes.assign(rf[2].via.bin.ptr, rf[2].via.bin.size);
            last_seq = e.seq;
            out.push_back(std::move(e));
        }
        records_read_ += out.size();
        last_seq_read_ = last_seq;
        return true;
    } catch (const std::exception&) {
        return core::errc::journal_corrupt;
    }
}

}  // namespace cairn::journal
