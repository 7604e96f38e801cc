// Set arithmetic over sorted id streams: intersection, union and difference of single-node
// queries, merged a chunk at a time (never whole lists in memory) and paged by id. The merge
// knows nothing of shards: each stream is a fetch function. Runs on the caller's executor;
// the fetch functions must stay valid until the awaitable completes.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace cairn::net {

enum class set_op { intersect, unite, subtract };

std::optional<set_op> set_op_from_name(std::string_view name) noexcept;

// Up to n ids greater than `after` (nullopt: from the first), ascending. Fewer than n means
// the stream has no more.
using id_fetch = std::function<boost::asio::awaitable<core::result<std::vector<std::int64_t>>>(
    std::optional<std::int64_t> after, std::size_t n)>;

struct set_page {
    std::vector<std::int64_t> ids;  // ascending, all greater than the request's `after`
    bool more = false;              // another page exists
    std::uint64_t scanned = 0;      // ids fetched from all streams
};

// One page of `op` over the streams (subtract: the first minus all others), ids greater than
// `after`, at most `limit` of them. A page is never silently short: it is full, or the last.
// Errors: those of the fetch functions, or errc::too_large when more than `scan_budget` ids
// would have to be read for this page (the caller reports it; the client narrows the query).
boost::asio::awaitable<core::result<set_page>> async_merge_sets(set_op op, std::vector<id_fetch> streams,
                                                                std::optional<std::int64_t> after, std::size_t limit,
                                                                std::uint64_t scan_budget);

}  // namespace cairn::net
