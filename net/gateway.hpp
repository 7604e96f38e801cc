// The running parts that routes use: journal, clock, routing and the shards (shards/shard_set.hpp:
// read connections, applied seqs, point-read batchers). Owned by cairnd's main (apps/cairnd.cpp),
// which outlives every session; routes keep a reference. Thread-safe parts only.
#pragma once

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/entities.hpp"
#include "core/hlc.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/routing.hpp"


namespace cairn::core {
struct config;
}
namespace cairn::journal {
class journal;
}
namespace cairn::shards {
class shard_set;
}

namespace cairn::indexing {
class index_registry;
class cleaner;
}

namespace cairn::net {

struct gateway {
    journal::journal& journal;
    core::hlc& clock;
    const core::routing& routing;  // which shard holds a key now: load() once per request (core/routing.hpp)
    shards::shard_set& shards;
    core::limits lim;
    core::registry& metrics;
    const core::counter_catalog* counters = nullptr;             // the declared counter metrics (none: nullptr)
    const core::cell_config* cells = nullptr;                    // the declared cell tables (none: nullptr)
    const core::entity_config* entities = nullptr;               // the declared entity kinds (none: nullptr)
    indexing::index_registry* indexes = nullptr;                 // index definitions (indexing/index_registry.hpp)
    indexing::cleaner* index_cleaner = nullptr;                  // index back-fill and repair (indexing/cleaner.hpp)
    bool tokens_required = false;                                // [[tokens]] are configured (GET /v1/whoami says so)
    const core::config* cfg = nullptr;                           // the whole config (the reshard routes: shard addresses)
};

}  // namespace cairn::net
