// The read side of the edges API: pages of a node's edges, counts, and multi-get, each with
// read-your-writes (?after=). See docs/api.md.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/codec.hpp"
#include "core/log_task_end.hpp"
#include "core/page_cursor.hpp"
#include "journal/journal.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/shard_read.hpp"
#include "net/edge_json.hpp"
#include "net/gateway.hpp"
#include "net/routes.hpp"
#include "shards/edge_store.hpp"
#include "shards/point_batcher.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <memory>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using detail::bad_field;

constexpr std::size_t page_limit_default = 100;

constexpr std::string_view page_params[] = {"direction", "state", "limit", "cursor", "after", "timeout_ms", "ids"};
constexpr std::string_view count_params[] = {"direction", "state", "after", "timeout_ms", "ids"};
constexpr std::string_view multi_get_params[] = {"after", "timeout_ms", "ids"};
constexpr std::string_view counts_params[] = {"after", "timeout_ms"};
constexpr std::string_view node_params[] = {"after", "timeout_ms", "ids"};

// What the page and count routes share: the node, its direction and state, the wait.
struct node_query {
    std::string graph;
    std::int64_t node_id = 0;
    shards::edge_direction direction = shards::edge_direction::forward;
    core::edge_state_set states = core::edge_state::normal;  // one, unless the route takes several
    detail::wait_params wait;
    id_format ids = id_format::number;
};

std::string_view direction_name(shards::edge_direction d) {
    return d == shards::edge_direction::forward ? "forward" : "backward";
}

// Parses the path and the parameters every node route has; a response is a 400 problem.
std::variant<node_query, response> parse_node_query(gateway& gw, route_context& ctx,
                                                    std::span<const std::string_view> known, bool several_states) {
    const auto& req = ctx.req;
    node_query q;
    q.graph = std::string(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(q.graph)) {
        return bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    const auto id = parse_id(ctx.params.get("id").value_or(""));
    if (!id) return bad_field(req, "id", "must be an integer between 0 and 9223372036854775807");
    q.node_id = *id;
    if (auto e = detail::unknown_query_param(ctx.query, known)) return bad_field(req, e->field, e->detail);
    if (auto d = ctx.query_param("direction")) {
        if (*d == "forward") {
            q.direction = shards::edge_direction::forward;
        } else if (*d == "backward") {
            q.direction = shards::edge_direction::backward;
        } else {
            return bad_field(req, "direction", "must be \"forward\" (edges from the node) or \"backward\" (edges to it)");
        }
    }
    if (auto s = ctx.query_param("state")) {
        auto st = core::edge_state_set_from_names(*s);
        if (!st || (!several_states && st->size() != 1)) {
            return bad_field(req, "state",
                             several_states ? "must be one or more of \"normal\", \"removed\", \"archived\", \"negative\", "
                                              "comma-separated (e.g. normal,archived)"
                                            : "must be one of \"normal\", \"removed\", \"archived\", \"negative\"");
        }
        q.states = *st;
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) return bad_field(req, e->field, e->detail);
    q.wait = std::get<detail::wait_params>(w);
    auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) return bad_field(ctx.req, e->field, e->detail);
    q.ids = std::get<id_format>(ids);
    return q;
}

// What a page's cursors are bound to: a cursor of another node, graph, direction or state is refused.
std::string page_scope(const node_query& q) {
    return fmt::format("page|{}|{}|{}|{}", q.graph, q.node_id, direction_name(q.direction), q.states.names());
}

std::string cursor_json(const std::optional<core::page_cursor>& c, std::string_view scope) {
    if (!c) return "null";
    return fmt::format("\"{}\"", core::encode_page_cursor(*c, scope));
}

// A page of a node's edges (GET .../edges), or of those among given other ends (POST
// .../edges/among, among = true: the ids come in the body and are part of the cursor's scope).
asio::awaitable<response> async_page(gateway& gw, route_context& ctx, bool among) {
    const auto& req = ctx.req;
    auto parsed = parse_node_query(gw, ctx, page_params, true);
    if (auto* res = std::get_if<response>(&parsed)) co_return std::move(*res);
    auto& q = std::get<node_query>(parsed);
    std::string scope = page_scope(q);
    shards::edge_page_request page_req;
    if (among) {
        auto ids = parse_id_list(req.body(), "other_ids", std::min(gw.lim.batch_ops_max, shards::page_other_ids_max));
        if (auto* e = std::get_if<input_error>(&ids)) co_return bad_field(req, e->field, e->detail);
        page_req.other_ids = std::move(std::get<std::vector<std::int64_t>>(ids));
        // The cursor continues this list only, in whatever order or with whatever repeats it came.
        std::vector<std::int64_t> set = page_req.other_ids;
        std::sort(set.begin(), set.end());
        set.erase(std::unique(set.begin(), set.end()), set.end());
        scope += "|among";
        for (const auto id : set) fmt::format_to(std::back_inserter(scope), "|{}", id);
    }
    page_req.graph = q.graph;
    page_req.node_id = q.node_id;
    page_req.direction = q.direction;
    page_req.states = q.states;
    page_req.limit = std::min(page_limit_default, gw.lim.page_limit_max);
    if (auto l = ctx.query_param("limit")) {
        auto v = detail::parse_uint(*l, 1, gw.lim.page_limit_max);
        if (!v) co_return bad_field(req, "limit", fmt::format("must be an integer between 1 and {}", gw.lim.page_limit_max));
        page_req.limit = static_cast<std::size_t>(*v);
    }
    if (auto c = ctx.query_param("cursor")) {
        page_req.cursor = core::decode_page_cursor(*c, scope);
        if (!page_req.cursor) {
            co_return bad_field(req, "cursor",
                                among ? "must be a next_cursor or prev_cursor returned by this route for the same node, "
                                        "direction, state and other_ids, unchanged"
                                      : "must be a next_cursor or prev_cursor returned by this route for the same node, "
                                        "direction and state, unchanged");
        }
    }
    const auto query = [&](shards::mariadb_conn& c) { return shards::async_page_edges(c, std::move(page_req)); };
    const auto render = [&](shards::edge_page page) {
        const bool forward = q.direction == shards::edge_direction::forward;
        std::string body;
        body.reserve(256 + page.edges.size() * 96);
        fmt::format_to(std::back_inserter(body), R"({{"graph":"{}","node_id":)", q.graph);
        append_int64(body, q.node_id, q.ids);
        fmt::format_to(std::back_inserter(body), R"(,"direction":"{}","state":"{}","edges":[)",
                       direction_name(q.direction), q.states.names());
        bool first = true;
        for (const auto& e : page.edges) {
            if (!first) body += ',';
            first = false;
            append_page_edge(body, forward, e.key.other_id, e.row, q.ids);
        }
        fmt::format_to(std::back_inserter(body), R"(],"next_cursor":{},"prev_cursor":{}}})",
                       cursor_json(page.next, scope), cursor_json(page.previous, scope));
        return json_response(http::status::ok, std::move(body), req);
    };
    co_return co_await detail::async_read_shard(gw, req, gw.routing.load()->read_map().shard_of_id(q.node_id), q.wait, query, render);
}

asio::awaitable<response> async_get_count(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto parsed = parse_node_query(gw, ctx, count_params, false);
    if (auto* res = std::get_if<response>(&parsed)) co_return std::move(*res);
    auto& q = std::get<node_query>(parsed);
    const core::shard_index shard = gw.routing.load()->read_map().shard_of_id(q.node_id);
    if (q.wait.after) {
        std::vector<core::shard_index> needed(1, shard);  // not a braced list inside a coroutine: g++ 12
        if (auto p = co_await detail::async_wait_after(gw, req, q.wait, std::move(needed))) co_return std::move(*p);
    }
    // Concurrent counts on one shard share one query (shards/point_batcher.hpp); a hot node's
    // count, read by many clients at once, is looked up once per query.
    const core::edge_state state = q.states.list().front();
    auto r = co_await gw.shards.at(shard).edge_counts().async_get(q.graph, shards::node_count_key{q.node_id, q.direction, state});
    if (!r) co_return detail::shard_problem(req, r.error());
    std::string body = fmt::format(R"({{"graph":"{}","node_id":)", q.graph);
    append_int64(body, q.node_id, q.ids);
    fmt::format_to(std::back_inserter(body), R"(,"direction":"{}","state":"{}","count":{}}})",
                   direction_name(q.direction), core::edge_state_name(state), r.value());
    co_return json_response(http::status::ok, std::move(body), req);
}

// Reads the values of many keys of one graph, key i on shard shard_of[i]: one statement per shard
// (fetch, e.g. shards::async_multi_get), every shard at once, after the request's ?after= wait on
// those shards. Fills values (by request index); the answer is a problem, or nullopt when all read.
template <class Key, class Value>
using fetch_many_fn = asio::awaitable<core::result<std::vector<Value>>> (*)(shards::mariadb_conn&, std::string,
                                                                           std::span<const Key>);

template <class Key, class Value>
asio::awaitable<std::optional<response>> async_read_grouped(gateway& gw, const request& req,
                                                            const detail::wait_params& wait, std::string graph,
                                                            const std::vector<Key>& keys,
                                                            const std::vector<core::shard_index>& shard_of,
                                                            fetch_many_fn<Key, Value> fetch, std::vector<Value>& values) {
    // The per-shard queries share this: they run on the session's strand (fan-out), so plain
    // members need no lock.
    struct grouped_state {
        struct shard_keys {
            std::vector<std::size_t> indexes;  // into the request's keys
            std::vector<Key> keys;
        };
        std::string graph;
        fetch_many_fn<Key, Value> fetch;
        std::map<core::shard_index, shard_keys> groups;
        std::vector<Value> values;  // by request index
    };
    auto st = std::make_shared<grouped_state>();
    st->graph = std::move(graph);
    st->fetch = fetch;
    st->values.resize(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        auto& g = st->groups[shard_of[i]];
        g.indexes.push_back(i);
        g.keys.push_back(keys[i]);
    }
    std::vector<core::shard_index> needed;
    for (const auto& [s, g] : st->groups) needed.push_back(s);
    if (auto p = co_await detail::async_wait_after(gw, req, wait, needed)) co_return std::move(*p);
    auto query = [st](core::shard_index s, shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
        const auto& g = st->groups.at(s);
        auto r = co_await st->fetch(conn, st->graph, std::span<const Key>(g.keys));
        if (!r) co_return r.error();
        for (std::size_t i = 0; i < g.indexes.size(); ++i) st->values[g.indexes[i]] = std::move(r.value()[i]);
        co_return core::success();
    };
    if (auto ec = co_await gw.shards.async_read_each(needed, query, detail::fan_out_deadline(gw.lim))) {
        co_return detail::shard_problem(req, ec);
    }
    values = std::move(st->values);
    co_return std::nullopt;
}

asio::awaitable<response> async_post_multi_get(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string graph(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(graph)) {
        co_return bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    if (auto e = detail::unknown_query_param(ctx.query, multi_get_params)) {
        co_return bad_field(req, e->field, e->detail);
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto wait = std::get<detail::wait_params>(w);
    const auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) co_return bad_field(req, e->field, e->detail);
    auto parsed = parse_edge_keys(req.body(), gw.lim.batch_ops_max);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    const auto& keys = std::get<std::vector<std::pair<std::int64_t, std::int64_t>>>(parsed);

    // The forward row of an edge lives on its source's shard.
    std::vector<core::shard_index> shard_of;
    shard_of.reserve(keys.size());
    const auto routes = gw.routing.load();
    for (const auto& k : keys) shard_of.push_back(routes->read_map().shard_of_id(k.first));
    std::vector<std::optional<core::edge_row>> rows;
    const fetch_many_fn<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>> fetch = &shards::async_multi_get;
    if (auto p = co_await async_read_grouped(gw, req, wait, graph, keys, shard_of, fetch, rows)) co_return std::move(*p);

    std::string body = R"({"edges":[)";
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) body += ',';
        if (rows[i]) {
            body += render_edge(graph, keys[i].first, keys[i].second, *rows[i], std::get<id_format>(ids));
        } else {
            body += "null";
        }
    }
    body += "]}";
    co_return json_response(http::status::ok, std::move(body), req);
}

// POST /v1/graphs/{graph}/counts: many counts in one request, answered in request order.
asio::awaitable<response> async_post_counts(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string graph(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(graph)) {
        co_return bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    if (auto e = detail::unknown_query_param(ctx.query, counts_params)) {
        co_return bad_field(req, e->field, e->detail);
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto wait = std::get<detail::wait_params>(w);
    auto parsed = parse_count_queries(req.body(), gw.lim.batch_ops_max);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    const auto& queries = std::get<std::vector<set_query>>(parsed);

    // A node's counts live on its shard.
    std::vector<shards::node_count_key> keys;
    std::vector<core::shard_index> shard_of;
    keys.reserve(queries.size());
    shard_of.reserve(queries.size());
    for (const auto& q : queries) {
        keys.push_back({q.node_id, q.forward ? shards::edge_direction::forward : shards::edge_direction::backward, q.state});
        shard_of.push_back(gw.routing.load()->read_map().shard_of_id(q.node_id));
    }
    std::vector<std::int64_t> counts;
    const fetch_many_fn<shards::node_count_key, std::int64_t> fetch = &shards::async_count_many;
    if (auto p = co_await async_read_grouped(gw, req, wait, graph, keys, shard_of, fetch, counts)) co_return std::move(*p);

    std::string body = fmt::format(R"({{"graph":"{}","counts":[)", graph);
    for (std::size_t i = 0; i < counts.size(); ++i) {
        if (i > 0) body += ',';
        body += std::to_string(counts[i]);
    }
    body += "]}";
    co_return json_response(http::status::ok, std::move(body), req);
}

// One node's JSON (GET .../nodes/{id}, and each element of POST .../nodes/get): whether it is
// known, and per direction its state, the ts of the node action that set it (null: none yet) and
// its edge counts by state. Each direction has its own state: a node action may cover one.
// With a graph (the single-node answer) it comes first; the elements of a list leave it out.
void append_node(std::string& out, std::string_view graph, std::int64_t node_id, const shards::node_record& rec,
                 id_format ids) {
    if (!graph.empty()) fmt::format_to(std::back_inserter(out), R"({{"graph":"{}",)", graph);
    out += graph.empty() ? R"({"node_id":)" : R"("node_id":)";
    append_int64(out, node_id, ids);
    out += rec.known ? R"(,"known":true)" : R"(,"known":false)";
    for (int d = 0; d < 2; ++d) {
        const auto status = core::node_status_of(rec.registers[static_cast<std::size_t>(d)]);
        out += d == 0 ? R"(,"forward":{"state":")" : R"(,"backward":{"state":")";
        out += core::edge_state_name(status.state);
        if (status.ts == 0) {
            out += R"(","ts":null,"ts_ms":null)";
        } else {
            fmt::format_to(std::back_inserter(out), R"(","ts":"{}","ts_ms":{})", status.ts, core::hlc_ms(status.ts));
        }
        out += R"(,"counts":{)";
        for (int st = 0; st < 4; ++st) {
            fmt::format_to(std::back_inserter(out), R"({}"{}":{})", st ? "," : "",
                           core::edge_state_name(static_cast<core::edge_state>(st)), rec.counts[d][st]);
        }
        out += "}}";
    }
    out += '}';
}

// GET /v1/graphs/{graph}/nodes/{id}: one node, from its shard.
asio::awaitable<response> async_get_node(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string graph(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(graph)) {
        co_return bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    const auto id = parse_id(ctx.params.get("id").value_or(""));
    if (!id) co_return bad_field(req, "id", "must be an integer between 0 and 9223372036854775807");
    if (auto e = detail::unknown_query_param(ctx.query, node_params)) co_return bad_field(req, e->field, e->detail);
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) co_return bad_field(req, e->field, e->detail);
    const std::int64_t node_id = *id;
    const auto query = [&](shards::mariadb_conn& c) {
        return shards::async_node_records(c, graph, std::span<const std::int64_t>(&node_id, 1));
    };
    const auto render = [&](std::vector<shards::node_record> recs) {
        std::string body;
        append_node(body, graph, node_id, recs.at(0), std::get<id_format>(ids));
        return json_response(http::status::ok, std::move(body), req);
    };
    co_return co_await detail::async_read_shard(gw, req, gw.routing.load()->read_map().shard_of_id(node_id), std::get<detail::wait_params>(w), query,
                                                render);
}

// POST /v1/graphs/{graph}/nodes/get: many nodes in one request, answered in request order.
asio::awaitable<response> async_post_nodes_get(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string graph(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(graph)) {
        co_return bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    if (auto e = detail::unknown_query_param(ctx.query, node_params)) co_return bad_field(req, e->field, e->detail);
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) co_return bad_field(req, e->field, e->detail);
    auto parsed = parse_id_list(req.body(), "node_ids", gw.lim.batch_ops_max);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    const auto& node_ids = std::get<std::vector<std::int64_t>>(parsed);

    std::vector<core::shard_index> shard_of;
    shard_of.reserve(node_ids.size());
    const auto routes = gw.routing.load();
    for (const auto n : node_ids) shard_of.push_back(routes->read_map().shard_of_id(n));
    std::vector<shards::node_record> recs;
    const fetch_many_fn<std::int64_t, shards::node_record> fetch = &shards::async_node_records;
    if (auto p = co_await async_read_grouped(gw, req, std::get<detail::wait_params>(w), graph, node_ids, shard_of, fetch, recs)) {
        co_return std::move(*p);
    }
    std::string body = fmt::format(R"({{"graph":"{}","nodes":[)", graph);
    for (std::size_t i = 0; i < node_ids.size(); ++i) {
        if (i > 0) body += ',';
        append_node(body, {}, node_ids[i], recs[i], std::get<id_format>(ids));
    }
    body += "]}";
    co_return json_response(http::status::ok, std::move(body), req);
}

}  // namespace

void add_edge_read_routes(router& r, gateway& gw) {
    r.add(http::verb::get, "/v1/graphs/{graph}/nodes/{id}", core::role::read,
          [&gw](route_context& ctx) { return async_get_node(gw, ctx); });
    r.add(http::verb::post, "/v1/graphs/{graph}/nodes/get", core::role::read,
          [&gw](route_context& ctx) { return async_post_nodes_get(gw, ctx); });
    r.add(http::verb::get, "/v1/graphs/{graph}/nodes/{id}/edges", core::role::read,
          [&gw](route_context& ctx) { return async_page(gw, ctx, false); });
    r.add(http::verb::post, "/v1/graphs/{graph}/nodes/{id}/edges/among", core::role::read,
          [&gw](route_context& ctx) { return async_page(gw, ctx, true); });
    r.add(http::verb::get, "/v1/graphs/{graph}/nodes/{id}/count", core::role::read,
          [&gw](route_context& ctx) { return async_get_count(gw, ctx); });
    r.add(http::verb::post, "/v1/graphs/{graph}/edges/get", core::role::read,
          [&gw](route_context& ctx) { return async_post_multi_get(gw, ctx); });
    r.add(http::verb::post, "/v1/graphs/{graph}/counts", core::role::read,
          [&gw](route_context& ctx) { return async_post_counts(gw, ctx); });
}

}  // namespace cairn::net
