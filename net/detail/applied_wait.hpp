// Shared parts of the edge read routes and of POST ...?wait=applied: strict query-parameter
// parsing, waiting (bounded) until the shards a request needs have applied a journal seq, and
// the problems these answer with. Runs on the session's strand; no state of its own.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/limits.hpp"
#include "core/shard_map.hpp"
#include "net/edge_json.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

namespace cairn::net {
struct gateway;
}

namespace cairn::net::detail {

// A 400 invalid-field problem naming field.
response bad_field(const request& req, std::string_view field, std::string_view detail);
// A 503 shard-unavailable problem with Retry-After, for a read whose shard failed.
response shard_problem(const request& req, const core::error_code& ec);

// The first query parameter whose name is not in known, as an input_error naming it.
// (A span, not an initializer_list: GCC 12 rejects braced lists of literals inside coroutines.)
std::optional<input_error> unknown_query_param(std::string_view query, std::span<const std::string_view> known);

// A decimal integer in [min, max]: no sign, no spaces, no leading '+'.
std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max) noexcept;

// ?ids=number (the default) or ?ids=string: how the answer renders 64-bit ids and positions.
std::variant<id_format, input_error> parse_id_format(const route_context& ctx);

// ?after=<seq> (0 to the journal's last seq), ?after=<node>:<seq> (a write acknowledged by the
// gateway with that node id, this one or another: a write's ack gives it as "after") and
// ?timeout_ms= (0 to lim.applied_wait_max, default the smaller of 5000 and that maximum).
struct wait_params {
    std::optional<std::uint64_t> after;
    std::optional<std::uint64_t> after_node;  // set: another gateway's seq (never this gateway's node id)
    std::chrono::milliseconds timeout{5000};
};
std::variant<wait_params, input_error> parse_wait_params(const route_context& ctx, const core::limits& lim,
                                                         std::uint64_t last_seq, std::uint64_t node_id);
// The same for a read on gw (its limits, journal and node id).
std::variant<wait_params, input_error> parse_wait_params(const route_context& ctx, const gateway& gw);

// The wait of a read with ?after=: until every shard in shards has applied wait.after, all within
// wait.timeout (another gateway's seq: until the shards' applied marks of its node id reach it,
// polled with a growing pause up to 100 ms; a shard that does not answer is a 503). The 504 not-applied-yet problem (naming the shards still behind) if some had not;
// nullopt when all had, or when the request gave no after=. Runs on the session's strand.
boost::asio::awaitable<std::optional<response>> async_wait_after(gateway& gw, const request& req, const wait_params& wait,
                                                                 std::vector<core::shard_index> shards);

// The deadline of a read of several shards at once (shard_set::async_read_each): the pool's wait, a
// connect and one query are each bounded by the limits, so a task that ended without counting
// itself done cannot hold the request longer than this.
inline std::chrono::milliseconds fan_out_deadline(const core::limits& lim) {
    return lim.query_timeout + lim.connect_timeout + std::chrono::seconds(10);
}

// 504 not-applied-yet, with the members "seq" and "shards" (those still behind); what is
// appended to the detail.
response not_applied_problem(const request& req, std::uint64_t seq, const std::vector<core::shard_index>& behind,
                             std::chrono::milliseconds timeout, std::string_view what);

}  // namespace cairn::net::detail
