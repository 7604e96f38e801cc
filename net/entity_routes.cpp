// Entity routes (issue 5): put (full replace), get and delete a property bag by kind and id,
// through the journal; reads from the shard of the id. See docs/api.md and docs/entities.md.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "indexing/index_registry.hpp"
#include "journal/journal.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/index_values.hpp"
#include "net/detail/journal_write.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/json_parse.hpp"
#include "net/detail/shard_read.hpp"
#include "net/entity_json.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "shards/entity_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <fmt/format.h>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using detail::bad_field;

constexpr std::string_view write_params[] = {"wait", "timeout_ms", "ts"};
constexpr std::string_view entity_read_params[] = {"after", "timeout_ms"};
constexpr std::uint64_t ts_future_ms_max = 3'600'000;

const core::entity_config& config_of(const gateway& gw) {
    static const core::entity_config none;
    return gw.entities ? *gw.entities : none;
}

struct entity_path {
    std::string kind;
    std::string id;  // 16 bytes
    core::shard_index shard = 0;
};

std::variant<entity_path, response> parse_path(const gateway& gw, const route_context& ctx) {
    const auto& req = ctx.req;
    entity_path p;
    p.kind = std::string(ctx.params.get("kind").value_or(""));
    if (!config_of(gw).declared(p.kind)) {
        std::string declared;
        for (const auto& k : config_of(gw).kinds) declared += (declared.empty() ? "" : ", ") + k;
        return problem(problems::unknown_kind, fmt::format("no entity kind '{}' is declared (declared: {})", p.kind,
                                   declared.empty() ? "none; see [entities] kinds in the config" : declared),
                       "kind", req.version(), req.keep_alive());
    }
    const auto id = core::parse_id16(ctx.params.get("id").value_or(""));
    if (!id) return bad_field(req, "id", "must be 16 bytes as 32 hex digits or UUID text");
    p.id = std::string(core::id16_bytes(*id));
    p.shard = gw.routing.load()->read_map().shard_of_hash(core::hash_bytes(p.id));
    return p;
}

// ?ts=<ms>: the client's own timestamp (a replay or retry keeps its place in the order).
std::variant<std::uint64_t, response> op_ts(gateway& gw, const route_context& ctx) {
    const auto t = ctx.query_param("ts");
    if (!t) return gw.clock.now();
    const auto now = core::system_wall_clock_ms();
    auto ms = detail::parse_uint(*t, 1, std::min<std::uint64_t>(core::hlc_ms_max, now + ts_future_ms_max));
    if (!ms) {
        return bad_field(ctx.req, "ts", fmt::format("must be positive milliseconds since the Unix epoch, at most {} ms ahead",
                                                    ts_future_ms_max));
    }
    return core::hlc_make(*ms, 0, gw.clock.node_id());
}

asio::awaitable<response> async_write(gateway& gw, route_context& ctx, bool deleted) {
    const auto& req = ctx.req;
    auto path = parse_path(gw, ctx);
    if (auto* r = std::get_if<response>(&path)) co_return std::move(*r);
    auto& p = std::get<entity_path>(path);
    if (auto e = detail::unknown_query_param(ctx.query, write_params)) co_return bad_field(req, e->field, e->detail);
    // Held until the op is journaled: a new index's back-fill waits for writes that computed
    // their entries without it (index_registry::async_write_barrier).
    indexing::index_registry::write_ticket ticket;
    if (gw.indexes) ticket = gw.indexes->enter_write();
    simdjson::dom::element root;
    if (!deleted) {
        if (auto err = detail::parse_json(req.body(), root)) co_return bad_field(req, err->field, err->detail);
    } else if (req.body().find_first_not_of(" \t\r\n") != std::string::npos) {
        co_return bad_field(req, "body", "must be empty: a delete carries no body");
    }
    const auto indexes = gw.indexes ? gw.indexes->of_kind(p.kind) : std::vector<core::index_def>{};
    auto made = entity_op_of(config_of(gw), p.kind, p.id, deleted ? nullptr : &root, indexes);
    if (auto* err = std::get_if<input_error>(&made)) co_return bad_field(req, err->field, err->detail);
    auto ts = op_ts(gw, ctx);
    if (auto* r = std::get_if<response>(&ts)) co_return std::move(*r);
    std::vector<core::op> ops(1);
    ops[0].ts = std::get<std::uint64_t>(ts);
    ops[0].body = std::get<core::entity_op>(std::move(made));
    co_return co_await detail::async_journal_write(gw, ctx, std::move(ops));
}

asio::awaitable<response> async_get(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto path = parse_path(gw, ctx);
    if (auto* r = std::get_if<response>(&path)) co_return std::move(*r);
    const auto& p = std::get<entity_path>(path);
    if (auto e = detail::unknown_query_param(ctx.query, entity_read_params)) co_return bad_field(req, e->field, e->detail);
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto query = [&](shards::mariadb_conn& c) -> asio::awaitable<core::result<std::optional<shards::stored_entity>>> {
        const std::vector<std::string> ids{p.id};
        auto r = co_await shards::async_get_entities(c, p.kind, ids);
        if (!r) co_return r.error();
        co_return std::move(r.value().front());
    };
    const auto render = [&](std::optional<shards::stored_entity> found) {
        const auto id_text = core::format_id16_bytes(p.id);
        if (!found || found->deleted) {
            return problem(problems::not_found, found ? fmt::format("entity {} of kind {} was deleted (ts {})", id_text, p.kind, found->ts)
                                 : fmt::format("no entity {} of kind {}", id_text, p.kind),
                           std::nullopt, req.version(), req.keep_alive());
        }
        auto body = detail::stored_body_json(found->body);
        if (!body) {
            return problem(problems::body_corrupt, fmt::format("the stored body of entity {} does not decode", id_text), std::nullopt,
                           req.version(), req.keep_alive());
        }
        return json_response(http::status::ok,
                             fmt::format(R"({{"kind":"{}","id":"{}","body":{},"ts":"{}","ts_ms":{}}})", p.kind, id_text,
                                         *body, found->ts, core::hlc_ms(found->ts)),
                             req);
    };
    co_return co_await detail::async_read_shard(gw, req, p.shard, std::get<detail::wait_params>(w), query, render);
}

}  // namespace

void add_entity_routes(router& r, gateway& gw) {
    r.add(http::verb::put, "/v1/entities/{kind}/{id}", core::role::write,
          [&gw](route_context& ctx) { return async_write(gw, ctx, false); });
    r.add(http::verb::delete_, "/v1/entities/{kind}/{id}", core::role::write,
          [&gw](route_context& ctx) { return async_write(gw, ctx, true); });
    r.add(http::verb::get, "/v1/entities/{kind}/{id}", core::role::read, [&gw](route_context& ctx) { return async_get(gw, ctx); });
}

}  // namespace cairn::net
