// Runs the real cairnd binary as a child process for end-to-end and fault tests: writes its
// config into a temporary directory, starts it, waits until it answers, and stops it politely
// or with SIGKILL. One object per child; not thread-safe.
#pragma once

#include "tests/support/test_shards.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace cairn::test {

// A TCP port on 127.0.0.1 that was free a moment ago.
std::uint16_t free_port();
// A new directory under $TMPDIR, removed by the caller (or left for inspection on failure).
std::string make_temp_dir(const std::string& prefix);

struct cairnd_options {
    std::vector<shard_endpoint> shards;  // default: test_shards()
    std::string database = "cairn";
    // The database of shard i, where set and not empty (a shard added ahead of a split on a server that
    // holds another shard's database); else `database`.
    std::vector<std::string> shard_databases;
    std::uint64_t node_id = 1;           // several gateways on one database need distinct ones
    // false: a start with a new (missing or empty) journal first deletes its node id's lease row on
    // shard 0, as if that node id had never been used there; true: tests of the lease itself.
    bool keep_leases = false;
    std::string journal_dir;             // default: a new temp dir
    std::string journal_toml;            // extra lines for the [journal] table
    std::string apply_toml;              // extra lines for the [apply] table
    std::string extra_toml;              // appended to the generated config (e.g. a [limits] table)
    std::uint32_t retry_attempts_max = 3;
    std::vector<std::string> env;        // "NAME=value" entries added to (or replacing) the test's environment
    // Ready when its log says it listens, not when GET /livez answers (for a listener that plain
    // HTTP cannot reach, e.g. TLS).
    bool ready_by_log = false;
};

class cairnd_process {
public:
    explicit cairnd_process(cairnd_options opts);
    ~cairnd_process();  // SIGKILL if still running

    // Starts cairnd and waits (up to timeout) until GET /livez answers 200 (or its log says it
    // listens, with ready_by_log); false if it died or timed out.
    // cairnd is killed when the calling thread ends (PR_SET_PDEATHSIG): call it from the test's thread.
    [[nodiscard]] bool start(std::chrono::seconds timeout = std::chrono::seconds(30));
    void kill9();
    // SIGTERM, then waits; returns the exit status (or -1 if it had to be killed).
    int terminate(std::chrono::seconds timeout = std::chrono::seconds(30));
    bool running();
    // Waits until cairnd exits on its own; its exit code (128 + signal if killed by one), or -1 if it
    // still runs after timeout (it is left running).
    int wait_exit(std::chrono::milliseconds timeout);

    // The exit code running() or a failed start() saw when it reaped cairnd (-1: not seen).
    int exit_code() const { return exit_code_; }
    std::uint16_t port() const { return port_; }
    const std::string& journal_dir() const { return opts_.journal_dir; }
    const std::string& log_path() const { return log_path_; }
    std::string log_tail(std::size_t bytes = 4000) const;

private:
    cairnd_options opts_;
    std::string dir_;
    std::string config_path_;
    std::string log_path_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
    int exit_code_ = -1;
};

}  // namespace cairn::test
