// The one predicate for "the shard was not there": the apply worker keeps an op whose apply met an
// outage for the next attempt (the op is not at fault), and a read tries the primary when a replica
// met one.
#pragma once

#include "core/result.hpp"

namespace cairn::shards {

// The shard was unreachable or timed out.
inline bool is_outage(const core::error_code& ec) noexcept {
    return ec == core::errc::shard_unavailable || ec == core::errc::shard_timeout;
}

}  // namespace cairn::shards
