// MariaDB servers of a test's own (beside the shared test shards), for tests that stop, promote or
// replicate servers: `scripts/shards start --count N --log-bin` in a temporary folder (binary logging
// and server_id = port, so they can replicate from each other), stopped and removed at the end.
// Ports: base + 1 .. base + N, where base is the first test shard's port + offset - 1 (each test that
// uses them picks its own offset, clear of the test shards, scripts/bench's and each other's).
#pragma once

#include "tests/support/e2e.hpp"
#include "tests/support/test_shards.hpp"
#include "tests/support/wait.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace cairn::test {

class own_servers {
public:
    own_servers(int count, std::uint16_t offset)
        : base_(static_cast<std::uint16_t>(test_shards().at(0).port + offset - 1)) {
        char templ[] = "/tmp/cairn-own-servers-XXXXXX";
        if (::mkdtemp(templ) != nullptr) dir_ = templ;
        started_ = !dir_.empty() &&
                   run_script(env_prefix() + fmt::format("scripts/shards start --count {} --log-bin", count)) == 0;
    }
    ~own_servers() {
        if (!dir_.empty()) {
            (void)run_script(env_prefix() + "scripts/shards stop >/dev/null");
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
        }
    }
    own_servers(const own_servers&) = delete;
    own_servers& operator=(const own_servers&) = delete;

    bool started() const { return started_; }
    shard_endpoint server(int i) const { return {"127.0.0.1", static_cast<std::uint16_t>(base_ + 1 + i)}; }
    int stop(int i) const { return run_script(env_prefix() + fmt::format("scripts/shards stop --shard {}", i)); }
    // Starts server i again, on its data (after stop).
    int start(int i) const { return run_script(env_prefix() + fmt::format("scripts/shards start --shard {} --log-bin", i)); }

    // Makes server(replica) replicate server(primary) (MariaDB's asynchronous replication, from the
    // primary's current GTID position) and starts it. A failed connect of the replica's I/O thread is
    // retried after 1 s, not MariaDB's default 60 s (longer than any wait of a test: a first connect
    // that failed on a busy machine once left the replica "not running" for the rest of a test).
    bool replicate(int replica, int primary) const {
        return exec_sql(server(replica), {fmt::format("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, "
                                                      "MASTER_USER='cairn', MASTER_PASSWORD='cairn', MASTER_USE_GTID=slave_pos, "
                                                      "MASTER_CONNECT_RETRY=1",
                                                      server(primary).port),
                                          "START SLAVE"})
            .has_value();
    }

    // The replica tests' set-up: server 1 replicating server 0, and database db (re)created on server 0
    // (so, through replication, on server 1 too). False if a step failed.
    bool primary_with_replica(const std::string& db) const {
        return started_ && replicate(1, 0) &&
               exec_sql(server(0), {"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db}).has_value();
    }

private:
    std::string env_prefix() const { return fmt::format("CAIRN_SHARDS_DIR='{}' CAIRN_SHARD_BASE_PORT={} ", dir_, base_); }
    std::uint16_t base_ = 0;
    std::string dir_;
    bool started_ = false;
};

}  // namespace cairn::test
