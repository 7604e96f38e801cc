// The HTTP routes of cairn's API (edges, health, metrics), added to a router. Handlers run
// on the session's strand; they keep the gateway by reference (it outlives the server).
#pragma once

namespace cairn::net {

class router;
struct gateway;

// Every route of cairn's API: the ones below, the admin and the replay routes (net/admin_routes.hpp,
// net/replay_routes.hpp). What cairnd serves; gw.indexes and gw.index_cleaner must be set.
void add_api_routes(router& r, gateway& gw);

// Writes and single-edge reads; also adds the read routes below.
void add_edge_routes(router& r, gateway& gw);
// Pages, counts and multi-get (net/edge_read_routes.cpp).
void add_edge_read_routes(router& r, gateway& gw);
// GET /livez, /readyz, /metrics and /v1/whoami (the caller's role).
void add_health_routes(router& r, gateway& gw);
// The embedded files (net/assets.hpp): GET /v1/openapi.json, /v1/asyncapi.json, /ui, /ui/, /ui/{file}.
void add_asset_routes(router& r);
// POST /v1/graphs/{graph}/sets: intersection, union, difference of single-node queries.
void add_set_routes(router& r, gateway& gw);
// Counters (issue 6): POST /v1/counters/{metric}, GET .../total, .../series, .../top, GET /v1/counters.
void add_counter_routes(router& r, gateway& gw);
// Cells (issue 6): POST /v1/cells/{table}; GET .../{row_key}[/{column}[/versions | /{ref_key}]].
void add_cell_routes(router& r, gateway& gw);
// Entities (issue 5): PUT, GET and DELETE /v1/entities/{kind}/{id}.
void add_entity_routes(router& r, gateway& gw);
// Entity indexes (issue 5): POST/GET /v1/indexes, DELETE /v1/indexes/{name}, and
// GET /v1/entities/{kind}/by/{index}. gw.indexes must be set.
void add_index_routes(router& r, gateway& gw);

}  // namespace cairn::net
