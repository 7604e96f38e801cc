// The WebSocket API on /v1/ws: every HTTP route over one connection, pipelined. A message names
// a request id, a method and a path (with its query) and may carry a body and an idempotency
// key; cairn routes it through the same router as HTTP, so answers and problems are identical,
// and writes back {id, status, body} as soon as each request completes (out of order). JSON
// text frames get JSON answers, msgpack binary frames msgpack answers. Runs on the upgraded
// connection's strand; the router must outlive the server. Format: docs/api.md, WebSocket.
#pragma once

#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "net/http_server.hpp"

namespace cairn::net {

class router;

// The handler to give http_server::set_upgrade_handler. Limits: a message is at most
// lim.body_bytes_max + ws_envelope_bytes (else the connection closes with 1009), at most
// lim.ws_in_flight_max requests run at once per connection (more get a 429 answer each), a
// connection without any frame for lim.timeout_idle is closed (cairn pings at half of it).
upgrade_handler make_ws_handler(const router& r, const core::limits& lim, core::registry& metrics);

inline constexpr std::size_t ws_envelope_bytes = 4096;

}  // namespace cairn::net
