// Set arithmetic over sorted id streams: nested intersections, unions and differences of
// single-node queries, merged a chunk at a time (never whole lists in memory) and paged by key.
// The merge knows nothing of shards or of order: each leaf is a fetch function over ascending
// keys (the route maps ids to keys, so a descending page is an ascending merge of negated ids).
// Runs on the caller's executor; the fetch functions must stay valid until the awaitable completes.
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
std::string_view set_op_name(set_op op) noexcept;

// Up to n keys greater than `after` (nullopt: from the first), ascending. Fewer than n means
// the stream has no more.
using id_fetch = std::function<boost::asio::awaitable<core::result<std::vector<std::int64_t>>>(
    std::optional<std::int64_t> after, std::size_t n)>;

// A set expression: a leaf reads one stream; an operation combines its operands (subtract: the
// first minus all the others). Operations nest, e.g. (A ∩ B) − C.
struct set_expr {
    set_op op = set_op::unite;
    std::vector<set_expr> operands;  // empty: a leaf
    id_fetch fetch;                  // leaves only

    static set_expr leaf(id_fetch f) { return set_expr{set_op::unite, {}, std::move(f)}; }
    static set_expr of(set_op op, std::vector<set_expr> operands) { return set_expr{op, std::move(operands), {}}; }
};

struct set_page {
    std::vector<std::int64_t> ids;  // keys, ascending, all greater than the request's `after`
    bool more = false;              // another page exists
    std::uint64_t scanned = 0;      // keys fetched from all leaves
};

// One page of the expression, keys greater than `after`, at most `limit` of them. A page is never
// silently short: it is full, or the last. Errors: those of the fetch functions, or
// errc::too_large when more than `scan_budget` keys would have to be read for this page (the
// caller reports it; the client narrows the query).
boost::asio::awaitable<core::result<set_page>> async_merge_sets(const set_expr& expr, std::optional<std::int64_t> after,
                                                                std::size_t limit, std::uint64_t scan_budget);

struct set_count {
    std::uint64_t count = 0;    // keys in the whole expression
    std::uint64_t scanned = 0;  // keys fetched from all leaves
};

// The number of keys in the whole expression, without paging; errc::too_large past `scan_budget`.
boost::asio::awaitable<core::result<set_count>> async_count_set(const set_expr& expr, std::uint64_t scan_budget);

}  // namespace cairn::net
