// The admin HTTP API under /v1/admin (issue 7), which the `cairn` CLI drives: status, dead letters
// (list, show, edit, re-inject, drop), the error queue (list, retry now), apply pause/resume and
// the trace of one write. Every route needs the admin role. Handlers run on the session's strand
// and keep the gateway by reference (it outlives the server). Format: docs/api.md, "Admin".
#pragma once

namespace cairn::net {

class router;
struct gateway;

void add_admin_routes(router& r, gateway& gw);

}  // namespace cairn::net
