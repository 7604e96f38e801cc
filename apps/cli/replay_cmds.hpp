// `cairn replay`, `cairn journal export` and `cairn journal import` (issue 7; docs/cli.md):
// re-inject journaled writes through cairnd's normal apply path, from cairnd's own journal or from
// an export file, and write such files from a journal directory.
#pragma once

#include "apps/cli/common.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace cairn::cli {

// The commands' arguments; lives as long as the parse and the run.
class replay_commands {
public:
    // Adds `replay` to app and `export` / `import` to journal; a chosen command sets run, and
    // local_only for export (which reads a directory, not cairnd).
    void add(CLI::App& app, CLI::App& journal, const settings& s, std::function<int()>& run, bool& local_only);

private:
    struct range_args {
        std::optional<std::uint64_t> from_seq;
        std::optional<std::uint64_t> to_seq;
        std::string since;
        std::string until;
    };
    range_args range_;
    std::optional<unsigned> shard_;
    std::string model_;
    std::string name_;
    std::string key_;
    std::string file_;
    std::string dir_;
    std::string out_;
    bool dry_run_ = false;
    bool include_expired_ = false;
    bool wait_ = false;
    unsigned wait_timeout_s_ = 300;
    double rate_ = 0;
    unsigned batch_ = 10'000;
};

}  // namespace cairn::cli
