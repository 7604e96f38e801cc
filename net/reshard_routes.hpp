// The admin HTTP API of online resharding (issue 16, docs/resharding.md), which `cairn reshard`
// drives: GET /v1/admin/reshard (the map in force, the split under way with each gateway's part in
// it and the driver's progress and ETA, the splits before), POST /v1/admin/reshard/plan (the checks a
// split must pass and what it would move, without starting it), .../split (the same checks, then the
// split is proposed and set to adopting on shard 0: every gateway's driver and follower take it from
// there), .../verify (the moved half compared on both shards now) and .../cancel (fails a split before
// reads have moved). Handlers run on the session's strand; the scans use connections of their own.
#pragma once

namespace cairn::net {

class router;
struct gateway;

void add_reshard_routes(router& r, gateway& gw);

}  // namespace cairn::net
