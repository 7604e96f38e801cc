// The undo log of the power-cut layer (powercut.cpp): its record format, and the roll-back that a
// test runs after kill -9 to leave a file holding exactly what fsync made durable. Header-only,
// so that the layer (built without sanitizers) and the tests share one definition.
//
// Record: magic "PCUT" (u32, little-endian like every field), offset (u64), old_len (u64),
// size_before (u64), then old_len bytes: what the write at offset was about to overwrite, and the
// file's size before it. A record cut short at the end of the log is ignored: its write had not
// started (the record is written first, in one call).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cairn::powercut {

inline constexpr std::uint32_t record_magic = 0x54554350;  // "PCUT"
inline constexpr std::size_t record_header_bytes = 4 + 8 + 8 + 8;

inline void put_header(char* out, std::uint64_t offset, std::uint64_t old_len, std::uint64_t size_before) {
    std::memcpy(out, &record_magic, 4);
    std::memcpy(out + 4, &offset, 8);
    std::memcpy(out + 12, &old_len, 8);
    std::memcpy(out + 20, &size_before, 8);
}

struct undo_record {
    std::uint64_t offset = 0;
    std::uint64_t size_before = 0;
    std::string old_bytes;
};

// The complete records of the log at path, oldest first (none if it does not exist).
inline std::vector<undo_record> read_undo_log(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<undo_record> out;
    std::size_t at = 0;
    while (data.size() - at >= record_header_bytes) {
        std::uint32_t magic = 0;
        std::uint64_t offset = 0, old_len = 0, size_before = 0;
        std::memcpy(&magic, data.data() + at, 4);
        std::memcpy(&offset, data.data() + at + 4, 8);
        std::memcpy(&old_len, data.data() + at + 12, 8);
        std::memcpy(&size_before, data.data() + at + 20, 8);
        if (magic != record_magic || data.size() - at - record_header_bytes < old_len) break;
        out.push_back({offset, size_before, data.substr(at + record_header_bytes, old_len)});
        at += record_header_bytes + old_len;
    }
    return out;
}

// Rolls file back over every record of the log, newest first, and empties the log. Returns the
// number of records rolled back, or -1 if the file could not be written.
inline long roll_back(const std::string& log_path, const std::string& file) {
    const auto records = read_undo_log(log_path);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return records.empty() ? 0 : -1;
    bool ok = true;
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
        if (!it->old_bytes.empty() &&
            ::pwrite(fd, it->old_bytes.data(), it->old_bytes.size(), static_cast<off_t>(it->offset)) !=
                static_cast<ssize_t>(it->old_bytes.size())) {
            ok = false;
        }
        if (::ftruncate(fd, static_cast<off_t>(it->size_before)) != 0) ok = false;
    }
    ::close(fd);
    std::ofstream(log_path, std::ios::trunc);
    return ok ? static_cast<long>(records.size()) : -1;
}

}  // namespace cairn::powercut
