// Fuzz target: a journal export file, as `cairn journal import` reads it (journal/export_file.hpp).
// Whatever the bytes, the reader reports corrupt or ends cleanly; it never trusts a length, a count
// or a compressed size it has not checked. The bytes go through a file because the reader reads one.
#include "journal/export_file.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir ? dir : "/tmp") + "/cairn-export-fuzz-" + std::to_string(::getpid());
    }();
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        if (size > 0) std::fwrite(data, 1, size, f);
        std::fclose(f);
    } else {
        std::abort();  // the harness itself is broken
    }
    auto reader = cairn::journal::export_reader::open(path);
    if (!reader) return 0;
    std::vector<cairn::journal::export_record> block;
    for (int blocks = 0; blocks < 1000; ++blocks) {
        auto more = reader.value()->next(block);
        if (!more || !more.value()) break;
        if (block.empty()) std::abort();  // next() promises a non-empty block when it returns true
    }
    return 0;
}
