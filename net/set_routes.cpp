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
// shard, through that shard's read pool (a connection is held only for one read). The merge
// works on ascending keys: the id itself, or its negation for a descending page (ids are >= 0).
id_fetch fetch_for(gateway& gw, const std::string& graph, const set_term& q, bool descending) {
    return [&gw, &graph, &q, descending](std::optional<std::int64_t> after,
                                         std::size_t n) -> asio::awaitable<core::result<std::vector<std::int64_t>>> {
        const auto direction = q.forward ? shards::edge_direction::forward : shards::edge_direction::backward;
        std::optional<std::int64_t> after_id;
        if (after) after_id = descending ? -*after : *after;
        const auto scan = [&](shards::mariadb_conn& conn) {
            return shards::async_scan_other_ids(conn, graph, q.node_id, direction, q.states, after_id, n, descending);
        };
        auto r = co_await gw.shards.at(gw.routing.load()->read_map().shard_of_id(q.node_id)).async_read(scan);
        if (r && descending) {
            for (auto& id : r.value()) id = -id;
        }
        co_return r;
    };
}

// The merge's expression for the request's terms, read in one order. The terms and the graph
// must outlive it.
set_expr expr_for(gateway& gw, const std::string& graph, const set_term& t, bool descending) {
    if (t.op.empty()) return set_expr::leaf(fetch_for(gw, graph, t, descending));
    std::vector<set_expr> operands;
    operands.reserve(t.operands.size());
    for (const auto& o : t.operands) operands.push_back(expr_for(gw, graph, o, descending));
    return set_expr::of(*set_op_from_name(t.op), std::move(operands));
}

void leaf_shards(const gateway& gw, const set_term& t, std::vector<core::shard_index>& out) {
    if (t.op.empty()) out.push_back(gw.routing.load()->read_map().shard_of_id(t.node_id));
    for (const auto& o : t.operands) leaf_shards(gw, o, out);
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
    const auto& sr = std::get<set_request>(parsed);
    const std::size_t limit = sr.limit.value_or(std::min(set_limit_default, gw.lim.page_limit_max));
    if (limit > gw.lim.page_limit_max) {
        co_return detail::bad_field(req, "limit", fmt::format("must be between 1 and {}", gw.lim.page_limit_max));
    }
    // A cursor continues only the set operation that made it: same graph, expression and order.
    const std::string scope = fmt::format("set|{}|{}|{}", graph, sr.descending ? "desc" : "asc", set_term_text(sr.expr));
    std::optional<core::page_cursor> cursor;
    if (sr.cursor) {
        cursor = core::decode_page_cursor(*sr.cursor, scope);
        if (!cursor || cursor->position != 0 || cursor->other_id < 0) {
            co_return detail::bad_field(req, "cursor",
                                        "must be a next_cursor or prev_cursor returned by this route for the same "
                                        "expression and order, unchanged");
        }
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return detail::bad_field(req, e->field, e->detail);
    const auto& wait = std::get<detail::wait_params>(w);
    if (wait.after) {
        // Read-your-writes: every operand's shard has applied the seq before the first read.
        std::vector<core::shard_index> needed;
        leaf_shards(gw, sr.expr, needed);
        std::sort(needed.begin(), needed.end());
        needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
        if (auto p = co_await detail::async_wait_after(gw, req, wait, std::move(needed))) co_return std::move(*p);
    }
    const auto too_costly = [&](std::string_view what) {
        return problem(problems::set_scan_budget, fmt::format("{} of this set operation needs more than {} rows read (limits.set_scan_rows_max); "
                                   "narrow the queries{}",
                                   what, gw.lim.set_scan_rows_max, sr.count ? "" : " or use a smaller limit"),
                       "queries", req.version(), req.keep_alive());
    };
    if (sr.count) {
        const auto expr = expr_for(gw, graph, sr.expr, false);
        auto counted = co_await async_count_set(expr, gw.lim.set_scan_rows_max);
        if (!counted && counted.error() == core::errc::too_large) co_return too_costly("the count");
        if (!counted) co_return detail::shard_problem(req, counted.error());
        co_return json_response(http::status::ok,
                                fmt::format(R"({{"graph":"{}","op":"{}","count":{},"rows_read":{}}})", graph, sr.expr.op,
                                            counted.value().count, counted.value().scanned),
                                req);
    }
    // A previous page is read in the other order from the cursor's id, then turned around.
    const bool backward = cursor && cursor->which == core::page_cursor::kind::previous;
    const bool read_descending = sr.descending != backward;
    const auto expr = expr_for(gw, graph, sr.expr, read_descending);
    std::optional<std::int64_t> after_key;
    if (cursor) after_key = read_descending ? -cursor->other_id : cursor->other_id;
    auto page = co_await async_merge_sets(expr, after_key, limit, gw.lim.set_scan_rows_max);
    if (!page && page.error() == core::errc::too_large) co_return too_costly("a page");
    if (!page) co_return detail::shard_problem(req, page.error());
    std::vector<std::int64_t> out = std::move(page.value().ids);
    if (read_descending) {
        for (auto& id : out) id = -id;
    }
    if (backward) std::reverse(out.begin(), out.end());
    // next: more after the page's last id (a page read backward ends where the cursor's id was);
    // prev: more before its first (a page read forward from a cursor started after some).
    const bool has_next = backward ? !out.empty() : page.value().more;
    const bool has_prev = backward ? page.value().more : cursor.has_value() && !out.empty();
    const auto cursor_text = [&](core::page_cursor::kind k, std::int64_t id) {
        return fmt::format("\"{}\"", core::encode_page_cursor({k, 0, id}, scope));
    };
    std::string body = fmt::format(R"({{"graph":"{}","op":"{}","order":"{}","ids":[)", graph, sr.expr.op,
                                   sr.descending ? "desc" : "asc");
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (i) body += ',';
        append_int64(body, out[i], std::get<id_format>(ids));
    }
    fmt::format_to(std::back_inserter(body), R"(],"next_cursor":{},"prev_cursor":{},"rows_read":{}}})",
                   has_next ? cursor_text(core::page_cursor::kind::next, out.back()) : "null",
                   has_prev ? cursor_text(core::page_cursor::kind::previous, out.front()) : "null", page.value().scanned);
    co_return json_response(http::status::ok, std::move(body), req);
}

}  // namespace

void add_set_routes(router& r, gateway& gw) {
    r.add(http::verb::post, "/v1/graphs/{graph}/sets", core::role::read,
          [&gw](route_context& ctx) { return async_post_set(gw, ctx); });
}

}  // namespace cairn::net
