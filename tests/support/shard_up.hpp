// Waiting for a cairnd's shard workers to be up (defined in e2e.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cairn::test {

// Waits until cairnd on port says shard `shard` is up (its worker connected and made its tables): a
// split is refused before that, and a test that writes to the shard's tables itself must wait for it
// (cairnd answers /livez before its workers have made the tables of a fresh database).
bool wait_shard_up(std::uint16_t port, std::size_t shard, std::chrono::seconds timeout = std::chrono::seconds(30));

}  // namespace cairn::test
