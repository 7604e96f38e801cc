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

// True once `sql` (run in database db, or none when db is empty) answers exactly one row whose first
// column is `expected`; false after `timeout` (polled every 20 ms). For what cairnd writes on a shard
// after the event a test can see (e.g. a mark written after the journal commit that traces show).
bool wait_for_value(const shard_endpoint& s, const std::string& db, const std::string& sql, const std::string& expected,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace cairn::test
