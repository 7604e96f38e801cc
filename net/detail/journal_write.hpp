// The one way a write route journals ops and answers: Idempotency-Key, backpressure (waits up
// to journal.wait_max_ms while the journal's queue is full, then 503 with Retry-After), the
// journal's errors as problems, ?wait=applied&timeout_ms=, and the 202 answer with seq, ts and
// op_id. Every model's write route parses and validates its body, checks its query parameters
// (write_query_params are the ones handled here), and ends with async_journal_write.
// Runs on the session's strand.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/op.hpp"
#include "net/router.hpp"

#include <boost/asio/awaitable.hpp>

#include <string_view>
#include <vector>

namespace cairn::net {
struct gateway;
}

namespace cairn::net::detail {

inline constexpr std::string_view write_query_params[] = {"wait", "timeout_ms"};

// The 503 problem (with Retry-After) for a failed append: journal full, overloaded, shutting
// down or failed.
response journal_error(const request& req, const core::error_code& ec);

// ops: validated, stamped (op_id is set by the journal). At least one.
boost::asio::awaitable<response> async_journal_write(gateway& gw, route_context& ctx, std::vector<core::op> ops);

}  // namespace cairn::net::detail
