// GET /v1/feed: the change feed (issue 16), the journal read in seq order after apply. A consumer
// names the seq it has seen (`from`), optional filters, and how long to wait for something new;
// it gets the ops after it that every shard has applied, and `next_from` to resume with. Delivery
// is at least once (a consumer that resumes from an older `from` gets those ops again; op ids
// deduplicate); it is pulled, so a slow consumer only falls behind, bounded by the journal's
// retention (then 410 feed-range-gone). Over /v1/ws the same request is a message: one connection
// long-polls it again and again. Runs on the session's strand; journal reads are short read
// transactions.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/feed_routes.hpp"

#include "core/op.hpp"
#include "journal/journal.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/op_forms.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "shards/shard_set.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;

constexpr std::string_view feed_params[] = {"from", "limit", "wait_ms", "model", "name", "key_prefix"};
constexpr std::uint64_t feed_limit_max = 1000;
constexpr std::uint64_t feed_limit_default = 100;
// Ops one request reads at most, matching or not: a narrow filter over a long range answers with
// fewer ops and a `next_from` past what it skipped, rather than scanning without bound.
constexpr std::size_t feed_scan_max = 10'000;
constexpr std::size_t feed_read_chunk = 1000;
constexpr std::size_t name_bytes_max = 64;
constexpr std::size_t key_prefix_bytes_max = 256;

struct feed_query {
    std::uint64_t from = 0;
    std::uint64_t limit = feed_limit_default;
    std::chrono::milliseconds wait{0};
    std::optional<core::model> model;
    std::string name;        // graph, kind, table, metric or index name; empty: any
    std::string key_prefix;  // of the op's key (see op_key); empty: any
};

// What `name=` filters on: the op's graph, entity kind, cell table, counter metric or index name.
std::string_view op_name(const core::op& o) {
    return std::visit(
        [](const auto& b) -> std::string_view {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, core::edge_op> || std::is_same_v<T, core::node_op>) return b.graph;
            else if constexpr (std::is_same_v<T, core::entity_op>) return b.entity_kind;
            else if constexpr (std::is_same_v<T, core::cell_op>) return b.table;
            else if constexpr (std::is_same_v<T, core::counter_op>) return b.metric;
            else return b.name;
        },
        o.body);
}

// What `key_prefix=` filters on, as the op renders it: an edge's source_id and a node's node_id in
// decimal, an entity's id and a cell's row_key as UUIDs. Counter increments and index definitions
// have no key (a key_prefix filter never matches them).
std::optional<std::string> op_key(const json& rendered) {
    for (const char* k : {"source_id", "node_id"}) {
        if (auto it = rendered.find(k); it != rendered.end() && it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
    }
    for (const char* k : {"id", "row_key"}) {
        if (auto it = rendered.find(k); it != rendered.end() && it->is_string()) return it->get<std::string>();
    }
    return std::nullopt;
}

std::variant<feed_query, input_error> parse_feed_query(const route_context& ctx, const gateway& gw) {
    feed_query q;
    if (auto v = ctx.query_param("from")) {
        auto n = detail::parse_uint(*v, 0, std::numeric_limits<std::uint64_t>::max());
        if (!n) return input_error{"from", "must be a seq (a non-negative integer): the last one this consumer has seen, or 0"};
        if (*n > gw.journal.last_seq()) {
            return input_error{"from", fmt::format("is beyond this gateway's last journaled seq {} (a feed is per gateway)",
                                                   gw.journal.last_seq())};
        }
        q.from = *n;
    }
    if (auto v = ctx.query_param("limit")) {
        auto n = detail::parse_uint(*v, 1, feed_limit_max);
        if (!n) return input_error{"limit", fmt::format("must be an integer from 1 to {}", feed_limit_max)};
        q.limit = *n;
    }
    if (auto v = ctx.query_param("wait_ms")) {
        const auto max_ms = static_cast<std::uint64_t>(gw.lim.applied_wait_max.count());
        auto n = detail::parse_uint(*v, 0, max_ms);
        if (!n) return input_error{"wait_ms", fmt::format("must be an integer from 0 to {} (limits.applied_wait_max_ms)", max_ms)};
        q.wait = std::chrono::milliseconds(*n);
    }
    if (auto v = ctx.query_param("model")) {
        q.model = core::model_from_name(*v);
        if (!q.model) return input_error{"model", "must be edge, node, entity, cell, counter or index"};
    }
    if (auto v = ctx.query_param("name")) {
        if (v->empty() || v->size() > name_bytes_max) {
            return input_error{"name", fmt::format("must be 1 to {} bytes (a graph, kind, table, metric or index name)", name_bytes_max)};
        }
        q.name = std::string(*v);
    }
    if (auto v = ctx.query_param("key_prefix")) {
        if (v->empty() || v->size() > key_prefix_bytes_max) {
            return input_error{"key_prefix", fmt::format("must be 1 to {} bytes", key_prefix_bytes_max)};
        }
        q.key_prefix = std::string(*v);
    }
    return q;
}

std::uint64_t applied_through(const gateway& gw) {
    std::uint64_t m = gw.journal.last_seq();
    for (std::size_t i = 0; i < gw.shards.size(); ++i) m = std::min(m, gw.shards.at(static_cast<core::shard_index>(i)).applied_seq());
    return m;
}

asio::awaitable<response> async_get_feed(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, feed_params)) co_return detail::bad_field(req, e->field, e->detail);
    auto parsed = parse_feed_query(ctx, gw);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return detail::bad_field(req, e->field, e->detail);
    const feed_query q = std::get<feed_query>(std::move(parsed));

    std::uint64_t to = applied_through(gw);
    if (to <= q.from && q.wait.count() > 0) {
        // Long poll: until every shard has applied the next op (or the wait ends, or cairnd stops).
        std::vector<core::shard_index> all;
        for (std::size_t i = 0; i < gw.shards.size(); ++i) all.push_back(static_cast<core::shard_index>(i));
        co_await gw.shards.async_wait_applied(q.from + 1, std::move(all), q.wait);
        to = applied_through(gw);
    }

    json ops = json::array();
    std::uint64_t next = q.from;
    std::size_t scanned = 0;
    while (next < to && ops.size() < q.limit && scanned < feed_scan_max) {
        const std::size_t want = std::min<std::size_t>({feed_read_chunk, feed_scan_max - scanned, static_cast<std::size_t>(to - next)});
        auto read = gw.journal.read_ops(next, want, std::size_t{4} << 20);
        if (!read) {
            co_return problem(problems::journal_corrupt, fmt::format("reading the journal after seq {} failed: {}", next, read.error().message()),
                              std::nullopt, req.version(), req.keep_alive());
        }
        const auto& batch = read.value();
        // Retention retires the oldest applied ops: a hole at the start of the range means they are gone.
        if (batch.empty() || batch.front().first != next + 1) {
            auto res = problem(problems::feed_range_gone,
                               fmt::format("the journal no longer holds the ops after seq {} (journal.retention_seconds); the "
                                           "oldest it holds is {}: resume from {} and rebuild what was missed from the shards",
                                           next, batch.empty() ? next + 1 : batch.front().first,
                                           batch.empty() ? next : batch.front().first - 1),
                               "from", req.version(), req.keep_alive());
            auto& body = res.body();
            body.pop_back();
            body += fmt::format(R"(,"oldest_seq":{}}})", batch.empty() ? next + 1 : batch.front().first);
            res.prepare_payload();
            co_return res;
        }
        for (const auto& [seq, o] : batch) {
            if (seq > to || ops.size() >= q.limit) break;
            ++scanned;
            next = seq;
            if (q.model && o.kind() != *q.model) continue;
            if (!q.name.empty() && op_name(o) != q.name) continue;
            json rendered = detail::op_json(gw, o);
            if (!q.key_prefix.empty()) {
                const auto key = op_key(rendered);
                if (!key || !key->starts_with(q.key_prefix)) continue;
            }
            ops.push_back(json{{"seq", seq}, {"op_id", std::to_string(o.op_id)}, {"hlc", std::to_string(o.ts)},
                               {"op", std::move(rendered)}});
        }
    }
    json out{{"ops", std::move(ops)},
             {"next_from", next},
             {"applied_through", to},
             {"last_seq", gw.journal.last_seq()},
             {"node_id", gw.journal.node_id()}};
    co_return json_response(http::status::ok, out.dump(-1, ' ', false, json::error_handler_t::replace), req);
}

}  // namespace

void add_feed_routes(router& r, gateway& gw) {
    r.add(http::verb::get, "/v1/feed", core::role::read, [&gw](route_context& ctx) { return async_get_feed(gw, ctx); });
}

}  // namespace cairn::net
