// Starts and stops a cairnd child process for the scenarios that need a restart (drain,
// restart), and polls its HTTP health routes. Blocking; one thread at a time.
#pragma once

#include "apps/bench/http_conn.hpp"
#include "core/result.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cairn::bench {

// A blocking GET on a fresh connection (its own io_context), within timeout.
core::result<http_result> http_get_sync(const std::string& host, std::uint16_t port, const std::string& target,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(2));

// The per-shard lag_ops of GET /readyz?verbose, summed; nullopt if cairnd did not answer 200 or
// the body has no shards.
std::optional<std::uint64_t> parse_total_lag(const std::string& readyz_verbose_body);

// A TCP port on 127.0.0.1 that was free a moment ago.
std::uint16_t pick_free_port();

struct cairnd_spec {
    std::string binary;       // path to cairnd
    std::string config;       // its --config (shards, database)
    std::string journal_dir;  // --journal
    std::uint16_t port = 0;   // --port
    std::string log_path;     // stdout and stderr are appended here
};

class cairnd_child {
public:
    explicit cairnd_child(cairnd_spec spec) : spec_(std::move(spec)) {}
    ~cairnd_child();  // SIGKILL if still running
    cairnd_child(const cairnd_child&) = delete;
    cairnd_child& operator=(const cairnd_child&) = delete;

    // Spawns cairnd (with --apply-paused if paused). Error: the errno of posix_spawn.
    [[nodiscard]] core::result<void> spawn(bool paused);
    // Polls GET /readyz every poll until it answers 200; the time from spawn() to that answer.
    // Error: timeout, or shard_unavailable if the process exited.
    [[nodiscard]] core::result<std::chrono::nanoseconds> wait_ready(std::chrono::milliseconds timeout,
                                                                    std::chrono::milliseconds poll = std::chrono::milliseconds(5));
    // SIGTERM and wait (SIGKILL after timeout); the exit status, -1 if it had to be killed.
    int stop(std::chrono::seconds timeout = std::chrono::seconds(60));
    bool running();
    pid_t pid() const noexcept { return pid_; }
    const cairnd_spec& spec() const noexcept { return spec_; }

private:
    cairnd_spec spec_;
    pid_t pid_ = -1;
    std::chrono::steady_clock::time_point spawned_at_;
};

}  // namespace cairn::bench
