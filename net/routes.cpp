#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/routes.hpp"

#include "core/codec.hpp"
#include "journal/journal.hpp"
#include "net/admin_routes.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/journal_write.hpp"
#include "net/edge_json.hpp"
#include "net/feed_routes.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/replay_routes.hpp"
#include "net/reshard_routes.hpp"
#include "net/router.hpp"
#include "shards/edge_store.hpp"
#include "shards/journal_await.hpp"
#include "shards/point_batcher.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr std::string_view get_edge_params[] = {"after", "timeout_ms", "ids"};

asio::awaitable<response> async_post_edges(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const auto graph = ctx.params.get("graph").value_or("");
    edge_write_options opts;
    opts.batch_ops_max = gw.lim.batch_ops_max;
    auto parsed = parse_edge_writes(graph, req.body(), gw.clock, core::system_wall_clock_ms(), opts);
    if (auto* err = std::get_if<input_error>(&parsed)) {
        co_return problem(problems::invalid_field, fmt::format("{} {}", err->field, err->detail), err->field, req.version(), req.keep_alive());
    }
    auto& ops = std::get<std::vector<core::op>>(parsed);
    if (auto e = detail::unknown_query_param(ctx.query, detail::write_query_params)) {
        co_return detail::bad_field(req, e->field, e->detail);
    }
    co_return co_await detail::async_journal_write(gw, ctx, std::move(ops));
}

constexpr std::string_view node_write_query_params[] = {"wait", "timeout_ms", "direction"};

// A whole-node op (issues 4, 17): the node's edges, outgoing, incoming or both, removed,
// archived, negated or restored.
asio::awaitable<response> async_post_node(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const auto direction = ctx.query_param("direction");
    if (direction && direction->empty()) co_return detail::bad_field(req, "direction", "must be \"forward\", \"backward\" or \"both\"");
    auto parsed = parse_node_write(ctx.params.get("graph").value_or(""), ctx.params.get("node").value_or(""),
                                   ctx.params.get("action").value_or(""), direction.value_or(""), req.body(), gw.clock,
                                   core::system_wall_clock_ms(), edge_write_options{});
    if (auto* err = std::get_if<input_error>(&parsed)) co_return detail::bad_field(req, err->field, err->detail);
    if (auto e = detail::unknown_query_param(ctx.query, node_write_query_params)) {
        co_return detail::bad_field(req, e->field, e->detail);
    }
    std::vector<core::op> ops;
    ops.push_back(std::move(std::get<core::op>(parsed)));
    co_return co_await detail::async_journal_write(gw, ctx, std::move(ops));
}

// GET .../edges/{source}/{destination}: the edge, or 404. With contains (GET .../contains):
// always 200, {"contains": bool, "state": ..}; contains is FlockDB's: the edge exists in state
// normal or negative (both are "present" flavours; removed and archived are not).
asio::awaitable<response> async_get_edge(gateway& gw, route_context& ctx, bool contains) {
    const auto& req = ctx.req;
    const auto graph = ctx.params.get("graph").value_or("");
    if (!core::valid_graph_name(graph)) {
        co_return problem(problems::invalid_field, "graph must be 1 to 32 characters of A-Z, a-z, 0-9 and _", "graph", req.version(),
                          req.keep_alive());
    }
    const auto source = parse_id(ctx.params.get("source").value_or(""));
    const auto destination = parse_id(ctx.params.get("destination").value_or(""));
    if (!source || !destination) {
        const char* field = source ? "destination" : "source";
        co_return problem(problems::invalid_field, fmt::format("{} must be an integer between 0 and 9223372036854775807", field), field,
                          req.version(), req.keep_alive());
    }
    if (auto e = detail::unknown_query_param(ctx.query, get_edge_params)) {
        co_return detail::bad_field(req, e->field, e->detail);
    }
    auto wait = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&wait)) co_return detail::bad_field(req, e->field, e->detail);
    const auto& wp = std::get<detail::wait_params>(wait);
    const auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) co_return detail::bad_field(req, e->field, e->detail);
    const core::shard_index shard = gw.routing.load()->read_map().shard_of_id(*source);
    if (wp.after) {
        std::vector<core::shard_index> needed(1, shard);  // not a braced list inside a coroutine: g++ 12
        if (auto p = co_await detail::async_wait_after(gw, req, wp, std::move(needed))) co_return std::move(*p);
    }
    // Concurrent reads of single edges on one shard share one query (shards/point_batcher.hpp).
    auto r = co_await gw.shards.at(shard).edge_gets().async_get(std::string(graph), std::pair<std::int64_t, std::int64_t>(*source, *destination));
    if (!r) {
        auto res = problem(problems::shard_unavailable, fmt::format("the shard holding this edge did not answer: {}", r.error().message()),
                           std::nullopt, req.version(), req.keep_alive());
        res.set(http::field::retry_after, "1");
        co_return res;
    }
    if (contains) {
        const auto& row = r.value();
        const bool present = row && (row->state == core::edge_state::normal || row->state == core::edge_state::negative);
        std::string body = fmt::format(R"({{"graph":"{}","source_id":)", graph);
        append_int64(body, *source, std::get<id_format>(ids));
        body += R"(,"destination_id":)";
        append_int64(body, *destination, std::get<id_format>(ids));
        fmt::format_to(std::back_inserter(body), R"(,"contains":{},"state":{}}})", present,
                       row ? fmt::format("\"{}\"", core::edge_state_name(row->state)) : std::string("null"));
        co_return json_response(http::status::ok, std::move(body), req);
    }
    if (!r.value()) {
        co_return problem(problems::not_found, fmt::format("no edge {} -> {} in graph {}", *source, *destination, graph), std::nullopt,
                          req.version(), req.keep_alive());
    }
    co_return json_response(http::status::ok, render_edge(graph, *source, *destination, *r.value(), std::get<id_format>(ids)), req);
}

std::string render_ready(gateway& gw, bool verbose, bool& ready) {
    const auto st = gw.journal.get_stats();
    const bool journal_ok = gw.journal.healthy();
    const bool space_ok = st.map_bytes_max == 0 || st.map_bytes_used * 10 < st.map_bytes_max * 9;
    ready = journal_ok && space_ok;
    if (!verbose) {
        if (ready) return R"({"ready":true})";
        // Not ready: which checks fail, so that a probe's log says why without ?verbose.
        std::string out = R"({"ready":false,"failing":[)";
        if (!journal_ok) out += R"("journal_writable")";
        if (!space_ok) out += journal_ok ? R"("journal_space")" : R"(,"journal_space")";
        out += "]}";
        return out;
    }
    std::string out = fmt::format(
        R"({{"ready":{},"checks":{{"journal_writable":{},"journal_space":{{"ok":{},"used_bytes":{},"max_bytes":{}}},"shards":[)",
        ready, journal_ok, space_ok, st.map_bytes_used, st.map_bytes_max);
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        const shards::shard* w = &gw.shards.at(static_cast<core::shard_index>(i));
        fmt::format_to(std::back_inserter(out), R"({}{{"shard":{},"up":{},"applied_seq":{},"lag_ops":{},"paused":{}}})",
                       i ? "," : "", i, w->up(), w->applied_seq(),
                       st.last_seq > w->applied_seq() ? st.last_seq - w->applied_seq() : 0, w->paused());
    }
    out += "]}}";
    return out;
}

}  // namespace

void add_api_routes(router& r, gateway& gw) {
    add_edge_routes(r, gw);
    add_health_routes(r, gw);
    add_set_routes(r, gw);
    add_counter_routes(r, gw);
    add_cell_routes(r, gw);
    add_entity_routes(r, gw);
    add_index_routes(r, gw);
    add_admin_routes(r, gw);
    add_reshard_routes(r, gw);
    add_replay_routes(r, gw);
    add_feed_routes(r, gw);
    add_asset_routes(r);
}

void add_edge_routes(router& r, gateway& gw) {
    r.add(http::verb::post, "/v1/graphs/{graph}/edges", core::role::write,
          [&gw](route_context& ctx) { return async_post_edges(gw, ctx); });
    r.add(http::verb::get, "/v1/graphs/{graph}/edges/{source}/{destination}", core::role::read,
          [&gw](route_context& ctx) { return async_get_edge(gw, ctx, false); });
    r.add(http::verb::get, "/v1/graphs/{graph}/edges/{source}/{destination}/contains", core::role::read,
          [&gw](route_context& ctx) { return async_get_edge(gw, ctx, true); });
    r.add(http::verb::post, "/v1/graphs/{graph}/nodes/{node}/{action}", core::role::write,
          [&gw](route_context& ctx) { return async_post_node(gw, ctx); });
    add_edge_read_routes(r, gw);
}

void add_health_routes(router& r, gateway& gw) {
    r.add(http::verb::get, "/livez", core::role::none, [](route_context& ctx) -> asio::awaitable<response> {
        co_return json_response(http::status::ok, R"({"alive":true})", ctx.req);
    });
    r.add(http::verb::get, "/readyz", core::role::none, [&gw](route_context& ctx) -> asio::awaitable<response> {
        bool ready = false;
        auto body = render_ready(gw, ctx.query_param("verbose").has_value(), ready);
        co_return json_response(ready ? http::status::ok : http::status::service_unavailable, std::move(body), ctx.req);
    });
    // Who the caller is, for a client (the dashboard) that shows only what its token may do. Public:
    // a caller without a valid token learns only that it has none.
    r.add(http::verb::get, "/v1/whoami", core::role::none, [&gw](route_context& ctx) -> asio::awaitable<response> {
        const bool authenticated = gw.tokens_required && ctx.caller_role != core::role::none;
        co_return json_response(http::status::ok,
                                fmt::format(R"({{"role":"{}","authenticated":{},"tokens_required":{}}})",
                                            core::role_name(ctx.caller_role), authenticated, gw.tokens_required),
                                ctx.req);
    });
    r.add(http::verb::get, "/metrics", core::role::read, [&gw](route_context& ctx) -> asio::awaitable<response> {
        response res{http::status::ok, ctx.req.version()};
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        res.keep_alive(ctx.req.keep_alive());
        res.body() = gw.metrics.render();
        res.prepare_payload();
        co_return res;
    });
}

}  // namespace cairn::net
