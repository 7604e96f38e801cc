// The environment that loads the disk layer (powercut.cpp) into a cairnd started by a fault test.
// CAIRN_POWERCUT_PATH is the built layer (tests/CMakeLists.txt defines it for fault_tests).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace cairn::test {

// LD_PRELOAD of the layer watching journal_dir's data file with its undo log at undo_path, plus
// extra "NAME=value" entries (the control's or the disk errors' settings).
inline std::vector<std::string> disk_layer_env(const std::string& journal_dir, const std::string& undo_path,
                                               std::vector<std::string> extra = {}) {
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::vector<std::string> env{
        std::string("LD_PRELOAD=") + CAIRN_POWERCUT_PATH, "CAIRN_POWERCUT_FILE=" + journal_dir + "/data.mdb",
        "CAIRN_POWERCUT_UNDO=" + undo_path,
        // The layer comes before the sanitizer runtime in the library list.
        std::string("ASAN_OPTIONS=") + (asan != nullptr && *asan ? std::string(asan) + ":" : "") +
            "verify_asan_link_order=0"};
    for (auto& e : extra) env.push_back(std::move(e));
    return env;
}

}  // namespace cairn::test
