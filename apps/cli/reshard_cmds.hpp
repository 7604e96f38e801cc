// `cairn reshard plan|split|status|verify|cancel` (issue 16; docs/cli.md, docs/operations.md
// "Splitting a shard"): online resharding through cairnd's admin API (net/reshard_routes.hpp).
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
class reshard_commands {
public:
    // Adds `reshard` and its subcommands to app; a chosen command sets run.
    void add(CLI::App& app, const settings& s, std::function<int()>& run);

private:
    std::optional<unsigned> shard_;
    std::string to_;
    bool wait_ = false;
    bool watch_ = false;
    bool yes_ = false;
    unsigned wait_timeout_s_ = 0;  // 0: no limit
};

}  // namespace cairn::cli
