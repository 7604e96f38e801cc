#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/codec.hpp"
#include "core/page_cursor.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/edge_json.hpp"
#include "net/gateway.hpp"
#include "net/routes.hpp"
#include "journal/journal.hpp"
#include "net/set_merge.hpp"
#include "shards/edge_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cairn::net {
namespace {

namespace asio = boost::asio;

constexpr std::size_t set_limit_default = 100;

// The fetch function of one single-node query: a range read of the primary key on the node's
// shard, through that shard's read pool (a connection is held only for one read).
id_fetch fetch_for(gateway& gw, std::string graph, const set_query& q) {
    return [&gw, graph = std::move(graph), q](std::optional<std::int64_t> after,
                                              std::size_t n) -> asio::awaitable<core::result<std::vector<std::int64_t>>> {
        const auto direction = q.forward ? shards::edge_direction::forward : shards::edge_direction::backward;
        const auto scan = [&](shards::mariadb_conn& conn) {
            return shards::async_scan_other_ids(conn, graph, q.node_id, direction, q.state, after, n);
        };
        co_return co_await gw.shards.at(gw.map.shard_of_id(q.node_id)).async_read(scan);
    };
}

constexpr std::string_view set_query_params[] = {"ids", "after", "timeout_ms"};

asio::awaitable<response> async_post_set(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string graph(ctx.params.get("graph").value_or(""));
    if (!core::valid_graph_name(graph)) {
        co_return detail::bad_field(req, "graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _");
    }
    // The arguments are in the body; the query may only say how ids are rendered.
    if (auto e = detail::unknown_query_param(ctx.query, set_query_params)) co_return detail::bad_field(req, e->field, e->detail);
    const auto ids = detail::parse_id_format(ctx);
    if (auto* e = std::get_if<input_error>(&ids)) co_return detail::bad_field(req, e->field, e->detail);
    auto parsed = parse_set_request(req.body());
    if (auto* e = std::get_if<input_error>(&parsed)) co_return detail::bad_field(req, e->field, e->detail);
    auto& sr = std::get<set_request>(parsed);
    const auto op = set_op_from_name(sr.op);
    if (!op) co_return detail::bad_field(req, "op", "must be \"intersect\", \"union\" or \"difference\"");
    if (*op == set_op::subtract && sr.queries.size() < 2) {
        co_return detail::bad_field(req, "queries", "a difference needs at least 2 queries (the first minus the others)");
    }
    const std::size_t limit = sr.limit.value_or(std::min(set_limit_default, gw.lim.page_limit_max));
    if (limit > gw.lim.page_limit_max) {
        co_return detail::bad_field(req, "limit", fmt::format("must be between 1 and {}", gw.lim.page_limit_max));
    }
    // A cursor continues only the set operation that made it: same graph, op and queries.
    std::string scope = fmt::format("set|{}|{}|", graph, sr.op);
    for (const auto& q : sr.queries) {
        fmt::format_to(std::back_inserter(scope), "{}{}{},", q.node_id, q.forward ? 'f' : 'b', static_cast<int>(q.state));
    }
    std::optional<std::int64_t> after;
    if (sr.cursor) {
        auto c = core::decode_page_cursor(*sr.cursor, scope);
        if (!c || c->which != core::page_cursor::kind::next || c->position != 0) {
            co_return detail::bad_field(req, "cursor",
                                        "must be a next_cursor returned by this route for the same op and queries, "
                                        "unchanged");
        }
        after = c->other_id;
    }
    auto w = detail::parse_wait_params(ctx, gw.lim, gw.journal.last_seq());
    if (auto* e = std::get_if<input_error>(&w)) co_return detail::bad_field(req, e->field, e->detail);
    const auto& wait = std::get<detail::wait_params>(w);
    if (wait.after) {
        // Read-your-writes: every operand's shard has applied the seq before the first read.
        std::vector<core::shard_index> needed;
        for (const auto& q : sr.queries) needed.push_back(gw.map.shard_of_id(q.node_id));
        std::sort(needed.begin(), needed.end());
        needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
        if (auto p = co_await detail::async_wait_after(gw, req, wait, std::move(needed))) co_return std::move(*p);
    }
    std::vector<id_fetch> fetches;
    for (const auto& q : sr.queries) fetches.push_back(fetch_for(gw, graph, q));
    auto page = co_await async_merge_sets(*op, std::move(fetches), after, limit, gw.lim.set_scan_rows_max);
    if (!page && page.error() == core::errc::too_large) {
        co_return problem(http::status::unprocessable_entity, "set-scan-budget", "Set operation too expensive",
                          fmt::format("a page of this set operation needs more than {} rows read (limits."
                                      "set_scan_rows_max); narrow the queries or use a smaller limit",
                                      gw.lim.set_scan_rows_max),
                          "queries", req.version(), req.keep_alive());
    }
    if (!page) co_return detail::shard_problem(req, page.error());
    std::string body = fmt::format(R"({{"graph":"{}","op":"{}","ids":[)", graph, sr.op);
    for (std::size_t i = 0; i < page.value().ids.size(); ++i) {
        if (i) body += ',';
        append_int64(body, page.value().ids[i], std::get<id_format>(ids));
    }
    std::string next = "null";
    if (page.value().more) {
        next = fmt::format("\"{}\"", core::encode_page_cursor({core::page_cursor::kind::next, 0, page.value().ids.back()}, scope));
    }
    fmt::format_to(std::back_inserter(body), R"(],"next_cursor":{},"rows_read":{}}})", next, page.value().scanned);
    co_return json_response(http::status::ok, std::move(body), req);
}

}  // namespace

void add_set_routes(router& r, gateway& gw) {
    r.add(http::verb::post, "/v1/graphs/{graph}/sets", core::role::read,
          [&gw](route_context& ctx) { return async_post_set(gw, ctx); });
}

}  // namespace cairn::net
