// Journal export files (issue 7, `cairn journal export`): a journal's ops round-trip through
// export_journal and export_reader exactly, seq and time ranges filter, and a file that was cut,
// had a byte flipped or had its frames moved is refused with journal_corrupt, never read as
// complete.
#include "journal/export_file.hpp"

#include "core/assert.hpp"
#include "core/document.hpp"
#include "journal_test_util.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace cairn::journal::test {
namespace {

// A cell or entity body: a msgpack str of n bytes, stored uncompressed.
std::string body_of(std::size_t n, char fill) {
    CAIRN_ASSERT(n < 256);
    std::string msgpack =
        n < 32 ? std::string(1, static_cast<char>(0xa0 | n)) : std::string{'\xd9', static_cast<char>(n)};
    msgpack.append(n, fill);
    return core::encode_body(msgpack, 1 << 20);
}

std::string id16(std::int64_t i) {
    std::string id(8, 'k');
    id.resize(16);
    for (int b = 0; b < 8; ++b) id[static_cast<std::size_t>(8 + b)] = static_cast<char>((i >> (8 * (7 - b))) & 0xff);
    return id;
}

// Ops of five models, of different sizes, chosen by i.
core::op make_mixed_op(std::int64_t i, std::uint64_t ts) {
    switch (i % 5) {
        case 0: return make_op(i, ts);
        case 1: return core::op{0, ts, core::node_op{"follows", i, core::node_action::archive}};
        case 2: {
            core::counter_op c{"clicks", {"page", std::to_string(i % 7)}, 1'700'000'000'000 + i, i, 42};
            return core::op{0, ts, std::move(c)};
        }
        case 3: {
            core::cell_op c{"docs", id16(i), "title", i, body_of(static_cast<std::size_t>(i % 200), 'c'), {}};
            return core::op{0, ts, std::move(c)};
        }
        default: {
            core::entity_op e{"user", id16(i), false, body_of(static_cast<std::size_t>(i % 150) + 1, 'e'), {}};
            return core::op{0, ts, std::move(e)};
        }
    }
}

// A journal in a temporary directory with batches of mixed ops, the wall clock moving
// batch_gap_ms between batches (batch b's ops are appended at start_ms + b * batch_gap_ms).
struct exported_journal {
    static constexpr std::uint64_t batch_gap_ms = 1000;
    temp_dir dir{temp_dir::memory_base()};
    manual_wall wall;
    core::hlc clock{7, wall.fn()};
    std::uint64_t start_ms = wall.now();
    std::unique_ptr<journal> j;

    explicit exported_journal(std::size_t batches, std::size_t batch_ops) {
        auto opened = journal::open(test_options(dir.sub("journal"), wall), clock);
        EXPECT_TRUE(opened) << opened.error().message();
        j = std::move(opened.value());
        for (std::size_t b = 0; b < batches; ++b) {
            if (b > 0) wall.advance(batch_gap_ms);
            std::vector<core::op> ops;
            for (std::size_t i = 0; i < batch_ops; ++i) {
                ops.push_back(make_mixed_op(static_cast<std::int64_t>(b * batch_ops + i), clock.now()));
            }
            EXPECT_TRUE(append_sync(*j, std::move(ops)));
        }
    }

    std::string journal_dir() const { return dir.sub("journal"); }
    std::string out() const { return dir.sub("ops.cairnjx"); }

    // The records of seqs in [from, to] as the journal reads them back.
    std::vector<export_record> expected(std::uint64_t from, std::uint64_t to) const {
        std::vector<export_record> out;
        for (std::uint64_t seq = from; seq <= to; ++seq) {
            auto bytes = j->read_op_bytes(seq);
            auto ms = j->read_op_time_ms(seq);
            EXPECT_TRUE(bytes && ms) << seq;
            if (bytes && ms) out.push_back(export_record{seq, ms.value(), bytes.value()});
        }
        return out;
    }
};

// How reading a whole file ended: ok (the trailer verified) or the error, with every record
// handed out before.
struct read_outcome {
    core::error_code error;
    std::vector<export_record> records;
    export_header header;
    std::size_t blocks = 0;
};

read_outcome read_all(const std::string& path) {
    read_outcome out;
    auto r = export_reader::open(path);
    if (!r) {
        out.error = r.error();
        return out;
    }
    out.header = r.value()->header();
    std::vector<export_record> block;
    for (;;) {
        auto more = r.value()->next(block);
        if (!more) {
            out.error = more.error();
            EXPECT_TRUE(block.empty()) << "records of a bad block were handed out";
            // Corruption is sticky: no later call reads on past it.
            auto again = r.value()->next(block);
            EXPECT_FALSE(again);
            return out;
        }
        if (!more.value()) {
            EXPECT_EQ(r.value()->bytes_read(), r.value()->file_bytes());
            return out;
        }
        EXPECT_FALSE(block.empty());
        ++out.blocks;
        out.records.insert(out.records.end(), block.begin(), block.end());
    }
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool is_prefix(const std::vector<export_record>& part, const std::vector<export_record>& whole) {
    return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

// The file's frames after the 8 magic bytes, each with its 4-byte length prefix.
std::vector<std::string> frames_of(const std::string& file) {
    std::vector<std::string> out;
    std::size_t at = 8;
    while (at + 4 <= file.size()) {
        std::size_t n = 0;
        for (std::size_t i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(file[at + i]);
        out.push_back(file.substr(at, 4 + n));
        at += 4 + n;
    }
    EXPECT_EQ(at, file.size());
    return out;
}

std::string join(const std::string& magic, const std::vector<std::string>& frames) {
    std::string out = magic;
    for (const auto& f : frames) out += f;
    return out;
}

TEST(export_file, a_journal_of_several_models_round_trips_exactly) {
    exported_journal src(12, 250);  // 3,000 ops
    ASSERT_EQ(src.j->last_seq(), 3000u);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
    const std::uint64_t before_ms = core::system_wall_clock_ms();
    // The journal stays open in its owner while the export reads it.
    auto on_block = [&](std::uint64_t records, std::uint64_t last_seq) { progress.emplace_back(records, last_seq); };
    auto s = export_journal(src.journal_dir(), export_range{}, src.out(), on_block, 128);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_FALSE(std::filesystem::exists(src.out() + ".part"));

    const auto expected = src.expected(1, 3000);
    std::uint64_t op_bytes = 0;
    for (const auto& e : expected) op_bytes += e.op_bytes.size();
    EXPECT_EQ(s.value().records, 3000u);
    EXPECT_EQ(s.value().first_seq, 1u);
    EXPECT_EQ(s.value().last_seq, 3000u);
    EXPECT_EQ(s.value().op_bytes, op_bytes);
    EXPECT_EQ(s.value().file_bytes, std::filesystem::file_size(src.out()));
    // One progress call per block of at most 128 ops, the last one at the end.
    ASSERT_EQ(progress.size(), (3000u + 127) / 128);
    EXPECT_EQ(progress.front(), (std::pair<std::uint64_t, std::uint64_t>{128, 128}));
    EXPECT_EQ(progress.back(), (std::pair<std::uint64_t, std::uint64_t>{3000, 3000}));

    const auto read = read_all(src.out());
    ASSERT_FALSE(read.error) << read.error.message();
    EXPECT_EQ(read.blocks, progress.size());
    ASSERT_EQ(read.records.size(), expected.size());
    EXPECT_TRUE(read.records == expected);
    EXPECT_EQ(read.header.format_version, export_format_version);
    EXPECT_EQ(read.header.node_id, 7u);
    EXPECT_GE(read.header.created_ms, before_ms);
    EXPECT_EQ(read.header.range, export_range{});
    // Every model is in there, and each record decodes as the op it was.
    std::set<core::model> models;
    for (const auto& r : read.records) {
        auto op = core::decode_op(std::span(r.op_bytes.data(), r.op_bytes.size()));
        ASSERT_TRUE(op) << r.seq;
        models.insert(op.value().kind());
    }
    EXPECT_EQ(models.size(), 5u);
}

TEST(export_file, seq_and_time_ranges_filter_the_ops) {
    exported_journal src(10, 10);  // batch b holds seqs 10b+1..10b+10, appended at start + b s
    const auto all = src.expected(1, 100);
    auto check = [&](const export_range& range, std::uint64_t first, std::uint64_t last) {
        SCOPED_TRACE(testing::Message() << "seqs " << range.from_seq << ".." << range.to_seq << ", ms "
                                        << range.since_ms << ".." << range.until_ms);
        for (std::size_t block_records : {1u, 7u, 4096u}) {
            auto s = export_journal(src.journal_dir(), range, src.out(), {}, block_records);
            ASSERT_TRUE(s) << s.error().message();
            const auto read = read_all(src.out());
            ASSERT_FALSE(read.error) << read.error.message();
            EXPECT_EQ(read.header.range, range);
            const std::vector<export_record> want(all.begin() + static_cast<std::ptrdiff_t>(first - 1),
                                                  all.begin() + static_cast<std::ptrdiff_t>(last));
            EXPECT_TRUE(read.records == want) << read.records.size() << " records, not " << want.size();
            EXPECT_EQ(s.value().records, want.size());
            EXPECT_EQ(s.value().first_seq, first);
            EXPECT_EQ(s.value().last_seq, last);
        }
    };
    const std::uint64_t t0 = src.start_ms;
    constexpr std::uint64_t gap = exported_journal::batch_gap_ms;
    check(export_range{15, 73}, 15, 73);
    check(export_range{0, 1}, 1, 1);
    check(export_range{100, 500}, 100, 100);
    // Batches 2..5, the bounds inclusive.
    check(export_range{0, ~0ull, t0 + 2 * gap, t0 + 5 * gap}, 21, 60);
    // Batches 3..4 by time (t0 + 2.5 s .. t0 + 4.5 s), cut to seqs 35..45.
    check(export_range{35, 45, t0 + 2 * gap + gap / 2, t0 + 4 * gap + gap / 2}, 35, 45);
    check(export_range{1, 100, t0 + 9 * gap, ~0ull}, 91, 100);
}

TEST(export_file, an_empty_range_gives_a_valid_file_without_records) {
    exported_journal src(3, 10);
    const std::uint64_t t0 = src.start_ms;
    for (const export_range& range : {export_range{31, 1000}, export_range{5, 5, 0, t0 - 1},
                                      export_range{0, ~0ull, t0 + 1, t0 + 999}, export_range{~0ull, ~0ull}}) {
        std::vector<std::uint64_t> progress;
        auto s = export_journal(src.journal_dir(), range, src.out(), [&](std::uint64_t n, std::uint64_t) {
            progress.push_back(n);
        });
        ASSERT_TRUE(s) << s.error().message();
        EXPECT_EQ(s.value().records, 0u);
        EXPECT_EQ(s.value().first_seq, 0u);
        EXPECT_EQ(s.value().last_seq, 0u);
        EXPECT_TRUE(progress.empty());
        const auto read = read_all(src.out());
        EXPECT_FALSE(read.error) << read.error.message();
        EXPECT_TRUE(read.records.empty());
        EXPECT_EQ(read.header.range, range);
    }
    // A journal without ops at all.
    temp_dir dir;
    manual_wall wall;
    core::hlc clock(7, wall.fn());
    ASSERT_TRUE(journal::open(test_options(dir.sub("journal"), wall), clock));
    auto s = export_journal(dir.sub("journal"), export_range{}, dir.sub("out"));
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(s.value().records, 0u);
    const auto read = read_all(dir.sub("out"));
    EXPECT_FALSE(read.error) << read.error.message();
    EXPECT_TRUE(read.records.empty());
}

// 120 ops exported in blocks of 8: the file's bytes and how it reads, for the tests that damage it.
struct small_export {
    exported_journal src{3, 40};
    std::string file;
    read_outcome whole;

    small_export() {
        auto s = export_journal(src.journal_dir(), export_range{}, src.out(), {}, 8);
        EXPECT_TRUE(s) << s.error().message();
        file = slurp(src.out());
        whole = read_all(src.out());
        EXPECT_FALSE(whole.error) << whole.error.message();
        EXPECT_EQ(whole.records.size(), 120u);
        EXPECT_EQ(whole.blocks, 15u);
    }
};

TEST(export_file, a_file_cut_anywhere_is_refused_and_never_read_as_complete) {
    small_export x;
    const std::string& file = x.file;
    const std::string cut_path = x.src.dir.sub("cut");
    std::size_t with_records = 0;
    for (std::size_t size = 0; size < file.size(); ++size) {
        spit(cut_path, std::string_view(file).substr(0, size));
        const auto read = read_all(cut_path);
        ASSERT_EQ(read.error, core::errc::journal_corrupt) << "cut at " << size << " of " << file.size();
        // What came before the cut is what was written, and nothing more.
        ASSERT_TRUE(is_prefix(read.records, x.whole.records)) << "cut at " << size;
        if (!read.records.empty()) ++with_records;
    }
    EXPECT_GT(with_records, 0u);  // blocks before a cut are read (and then the cut is an error)
}

TEST(export_file, a_flipped_byte_is_refused) {
    small_export x;
    const std::string& file = x.file;
    const read_outcome& whole = x.whole;
    const std::string bad_path = x.src.dir.sub("flipped");

    std::string middle = file;
    middle[middle.size() / 2] = static_cast<char>(middle[middle.size() / 2] ^ 0x20);
    spit(bad_path, middle);
    EXPECT_EQ(read_all(bad_path).error, core::errc::journal_corrupt);

    // Anywhere, one bit of each byte (each bit position in turn): a flip is refused, or (in a
    // bit that zstd does not interpret, such as a frame header's unused bit) the file still reads
    // exactly as written. Never different records.
    std::size_t refused = 0;
    for (std::size_t at = 0; at < file.size(); ++at) {
        const int mask = 1 << (at % 8);
        std::string bad = file;
        bad[at] = static_cast<char>(bad[at] ^ mask);
        spit(bad_path, bad);
        const auto read = read_all(bad_path);
        if (read.error) {
            ASSERT_EQ(read.error, core::errc::journal_corrupt) << "byte " << at;
            ASSERT_TRUE(is_prefix(read.records, whole.records)) << "byte " << at;
            ++refused;
        } else {
            ASSERT_TRUE(read.records == whole.records) << "byte " << at << " mask " << mask;
            ASSERT_EQ(read.header, whole.header) << "byte " << at;
        }
    }
    EXPECT_GT(refused, file.size() * 9 / 10);
    RecordProperty("flips_read_unchanged", static_cast<int>(file.size() - refused));
}

TEST(export_file, frames_moved_dropped_or_added_are_refused) {
    small_export x;
    const std::string magic = x.file.substr(0, 8);
    const auto frames = frames_of(x.file);  // header, blocks..., trailer
    ASSERT_EQ(frames.size(), 17u);
    const std::string path = x.src.dir.sub("edited");
    auto refused = [&](const std::vector<std::string>& edited, const std::string& tail = {}) {
        spit(path, join(magic, edited) + tail);
        return read_all(path).error == core::errc::journal_corrupt;
    };
    ASSERT_FALSE(refused(frames));  // the edit itself is sound

    auto swapped = frames;
    std::swap(swapped[1], swapped[2]);
    EXPECT_TRUE(refused(swapped)) << "blocks out of order";
    auto dropped = frames;
    dropped.erase(dropped.begin() + 2);
    EXPECT_TRUE(refused(dropped)) << "a block missing: the trailer's count disagrees";
    auto repeated = frames;
    repeated.insert(repeated.begin() + 2, frames[2]);
    EXPECT_TRUE(refused(repeated)) << "a block twice";
    auto no_trailer = frames;
    no_trailer.pop_back();
    EXPECT_TRUE(refused(no_trailer)) << "no trailer";
    auto two_trailers = frames;
    two_trailers.push_back(frames.back());
    EXPECT_TRUE(refused(two_trailers)) << "a frame after the trailer";
    EXPECT_TRUE(refused(frames, "x")) << "a byte after the trailer";
    auto header_twice = frames;
    header_twice.insert(header_twice.begin() + 1, frames[0]);
    EXPECT_TRUE(refused(header_twice)) << "a header where a block belongs";
    EXPECT_TRUE(refused({frames[0], frames.back()})) << "every block missing";
}

TEST(export_file, a_missing_file_is_not_found) {
    temp_dir dir;
    auto r = export_reader::open(dir.sub("absent"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), core::errc::not_found);
    // And a directory without a journal has nothing to export.
    auto s = export_journal(dir.path(), export_range{}, dir.sub("out"));
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), core::errc::not_found);
    EXPECT_FALSE(std::filesystem::exists(dir.sub("out")));
    EXPECT_FALSE(std::filesystem::exists(dir.sub("out.part")));
}

TEST(export_file, a_file_that_is_no_export_is_corrupt) {
    exported_journal src(1, 5);
    ASSERT_TRUE(export_journal(src.journal_dir(), export_range{}, src.out()));
    const std::string path = src.dir.sub("other");
    for (const std::string& bytes : {std::string(), std::string("CAIRNJX"), std::string("not an export file at all"),
                                     std::string("CAIRNJX1"), std::string("CAIRNJX1\0\0\0\4abcd", 16),
                                     std::string("CAIRNJX2") + slurp(src.out()).substr(8)}) {
        spit(path, bytes);
        auto r = export_reader::open(path);
        ASSERT_FALSE(r) << bytes;
        EXPECT_EQ(r.error(), core::errc::journal_corrupt) << bytes;
    }
    // The journal's own data file, and a directory.
    for (const std::string& other : {src.journal_dir() + "/data.mdb", src.journal_dir()}) {
        auto r = export_reader::open(other);
        ASSERT_FALSE(r) << other;
        EXPECT_EQ(r.error(), core::errc::journal_corrupt) << other;
    }
}

TEST(export_file, a_reversed_range_is_a_bad_request) {
    exported_journal src(1, 5);
    for (const export_range& range : {export_range{10, 5}, export_range{0, ~0ull, 2000, 1000}}) {
        auto s = export_journal(src.journal_dir(), range, src.out());
        ASSERT_FALSE(s);
        EXPECT_EQ(s.error(), core::errc::bad_request);
        EXPECT_FALSE(std::filesystem::exists(src.out()));
        EXPECT_FALSE(std::filesystem::exists(src.out() + ".part"));
    }
}

}  // namespace
}  // namespace cairn::journal::test
