// The change feed (issue 16): GET /v1/feed, the ops every shard has applied, in seq order, from a
// seq the consumer names, filtered by model, name and key prefix; long-polled over HTTP or
// /v1/ws. Needs the read role. Format: docs/api.md, "Change feed"; docs/operations.md.
#pragma once

namespace cairn::net {

class router;
struct gateway;

void add_feed_routes(router& r, gateway& gw);

}  // namespace cairn::net
