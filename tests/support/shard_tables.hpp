// Waiting for a table that cairnd creates (tests/support/test_shards.cpp). cairnd creates a model's
// tables when a shard's apply worker first connects, which may come after /readyz and even after the
// first applied mark; a test that puts a trigger on such a table waits for it first.
#pragma once

#include "tests/support/test_shards.hpp"

#include <chrono>
#include <string>

namespace cairn::test {

// True once table `table` exists in database `db` on shard s; false after `timeout` (polled every
// 20 ms).
bool wait_for_table(const shard_endpoint& s, const std::string& db, const std::string& table,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace cairn::test
