// The replay routes of the admin API (issue 7), which `cairn replay` and `cairn journal import`
// drive: re-inject journaled writes through the normal apply path. A replayed op is appended to
// this gateway's journal again with its own op id and ts, so the apply workers handle it like any
// write: last-writer-wins rows end the same, and counter increments are deduplicated by op id.
//
//   POST /v1/admin/replay           a range of this gateway's journal (by seq and append time)
//   POST /v1/admin/replay/records   records sent in the body (msgpack, from an export file)
//
// Both take the same filters as query parameters and may be a dry run. Every route needs the admin
// role. Format: docs/api.md, "Replay".
#pragma once

namespace cairn::net {

class router;
struct gateway;

void add_replay_routes(router& r, gateway& gw);

}  // namespace cairn::net
