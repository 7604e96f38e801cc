// Cell routes (issue 6): immutable versioned cells written through the journal, read from the
// shard of their row_key. See docs/api.md and docs/cells.md.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/text_rules.hpp"
#include "indexing/index_registry.hpp"
#include "journal/journal.hpp"
#include "net/cell_json.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/journal_write.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/shard_read.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "shards/cell_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"
#include "shards/shard_set.hpp"

#include <fmt/format.h>

#include <map>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using detail::bad_field;

constexpr std::string_view cell_read_params[] = {"after", "timeout_ms"};
constexpr std::string_view list_params[] = {"limit", "cursor", "after", "timeout_ms"};

const core::cell_config& cells_of(const gateway& gw) {
    static const core::cell_config none;
    return gw.cells ? *gw.cells : none;
}

std::optional<response> check_table(const gateway& gw, const request& req, std::string_view table) {
    if (cells_of(gw).declared(table)) return std::nullopt;
    std::string declared;
    for (const auto& t : cells_of(gw).tables) declared += (declared.empty() ? "" : ", ") + t;
    return problem(problems::unknown_cell_table, fmt::format("no cell table '{}' is declared (declared: {})", table,
                               declared.empty() ? "none; see [cells] tables in the config" : declared),
                   "table", req.version(), req.keep_alive());
}

core::shard_index shard_of_row(const gateway& gw, std::string_view row_key) {
    return gw.routing.load()->read_map().shard_of_hash(core::hash_bytes(row_key));
}

// The conflict check of a write: per shard that is up, the cells the batch writes that exist
// already. A cell that holds another body refuses the request (409); one that holds the same
// body is a no-op write. A shard that is down is not asked: the apply rule decides there.
struct existing_cells {
    std::map<shards::cell_key, std::string> bodies;  // stored body by key
};

asio::awaitable<core::error_code> async_read_existing(gateway& gw, std::string table,
                                                      std::map<core::shard_index, std::vector<shards::cell_key>> by_shard,
                                                      std::shared_ptr<existing_cells> out) {
    std::vector<core::shard_index> shards;
    for (const auto& [s, _] : by_shard) shards.push_back(s);
    auto keys = std::make_shared<std::map<core::shard_index, std::vector<shards::cell_key>>>(std::move(by_shard));
    auto query = [table, keys, out](core::shard_index s, shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
        auto found = co_await shards::async_get_cells(conn, table, keys->at(s));
        if (!found) co_return found.error();
        for (auto& c : found.value()) {
            if (c) out->bodies[{c->row_key, c->column, c->ref_key}] = std::move(c->body);
        }
        co_return core::success();
    };
    co_return co_await gw.shards.async_read_each(shards, query, detail::fan_out_deadline(gw.lim));
}

asio::awaitable<response> async_post_cells(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string table(ctx.params.get("table").value_or(""));
    if (auto p = check_table(gw, req, table)) co_return std::move(*p);
    // Held until the ops are journaled: a new index's back-fill waits for writes that computed
    // their entries without it (index_registry::async_write_barrier).
    indexing::index_registry::write_ticket ticket;
    if (gw.indexes) ticket = gw.indexes->enter_write();
    const auto indexes = gw.indexes ? gw.indexes->of_cell_table(table) : std::vector<core::index_def>{};
    auto parsed = parse_cell_writes(cells_of(gw), table, req.body(), gw.clock, gw.lim.batch_ops_max, indexes);
    if (auto* err = std::get_if<input_error>(&parsed)) co_return bad_field(req, err->field, err->detail);
    if (auto e = detail::unknown_query_param(ctx.query, detail::write_query_params)) {
        co_return bad_field(req, e->field, e->detail);
    }
    auto& ops = std::get<std::vector<core::op>>(parsed);
    // Fields name the cell as the client wrote it: cells[i] in a batch, body for one cell.
    const bool batch = req.body().find("\"cells\"") != std::string::npos;
    auto where = [&](std::size_t i) { return batch ? fmt::format("cells[{}]", i) : std::string("body"); };

    // Two cells of one request with the same key and different bodies: refused here.
    std::map<shards::cell_key, std::size_t> first_of;
    std::map<core::shard_index, std::vector<shards::cell_key>> by_shard;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& c = std::get<core::cell_op>(ops[i].body);
        shards::cell_key key{c.row_key, c.column, c.ref_key};
        auto [it, fresh] = first_of.emplace(key, i);
        if (!fresh) {
            if (std::get<core::cell_op>(ops[it->second].body).body != c.body) {
                co_return bad_field(req, where(i), fmt::format("writes the cell of {} with another body; cells are immutable",
                                                               where(it->second)));
            }
            continue;
        }
        const auto s = shard_of_row(gw, c.row_key);
        if (!gw.shards.at(s).known_down()) by_shard[s].push_back(std::move(key));
    }
    if (!by_shard.empty()) {
        auto existing = std::make_shared<existing_cells>();
        // A failed check is not a failed write: the journal takes it and the apply rule decides.
        co_await async_read_existing(gw, table, std::move(by_shard), existing);
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const auto& c = std::get<core::cell_op>(ops[i].body);
            const auto it = existing->bodies.find({c.row_key, c.column, c.ref_key});
            if (it == existing->bodies.end() || it->second == c.body) continue;
            core::id16 id{};
            std::copy_n(c.row_key.begin(), 16, id.begin());
            co_return problem(problems::cell_exists, fmt::format("cell ({}, {}, {}) of table {} exists with another body; cells are immutable: "
                                          "write a new ref_key",
                                          core::format_id16(id), c.column, c.ref_key, table),
                              where(i), req.version(), req.keep_alive());
        }
    }
    co_return co_await detail::async_journal_write(gw, ctx, std::move(ops));
}

// The path's cell coordinates, checked; an error response otherwise.
struct cell_path {
    std::string table;
    std::string row_key;
    std::string column;
    core::shard_index shard = 0;
};

std::variant<cell_path, response> parse_path(const gateway& gw, const route_context& ctx, bool with_column) {
    const auto& req = ctx.req;
    cell_path p;
    p.table = std::string(ctx.params.get("table").value_or(""));
    if (auto r = check_table(gw, req, p.table)) return std::move(*r);
    const auto id = core::parse_id16(ctx.params.get("row_key").value_or(""));
    if (!id) return bad_field(req, "row_key", "must be 16 bytes as 32 hex digits or UUID text");
    p.row_key = std::string(core::id16_bytes(*id));
    if (with_column) {
        p.column = std::string(ctx.params.get("column").value_or(""));
        if (!core::valid_cell_column(p.column)) {
            return bad_field(req, "column", "must be 1 to 64 characters of A-Z, a-z, 0-9, _, . and -");
        }
    }
    p.shard = shard_of_row(gw, p.row_key);
    return p;
}

// ?after= and ?timeout_ms=: waits for the row's shard; a response if it must answer now.
std::variant<detail::wait_params, response> parse_wait(gateway& gw, const route_context& ctx) {
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) return bad_field(ctx.req, e->field, e->detail);
    return std::get<detail::wait_params>(w);
}

std::optional<std::int64_t> parse_int64(std::string_view text) { return core::parse_decimal_int64(text); }

std::string render(const cell_path& p, const shards::stored_cell& c) {
    return render_cell(p.table, c.row_key, c.column, c.ref_key, c.body, c.ts, c.added_id);
}

response cell_not_found(const request& req, std::string_view what) {
    return problem(problems::not_found, what, std::nullopt, req.version(), req.keep_alive());
}

// GET .../{row_key}/{column}/{ref_key} (one version) and .../{row_key}/{column} (the latest).
asio::awaitable<response> async_get_cell(gateway& gw, route_context& ctx, bool latest) {
    const auto& req = ctx.req;
    auto path = parse_path(gw, ctx, true);
    if (auto* r = std::get_if<response>(&path)) co_return std::move(*r);
    const auto& p = std::get<cell_path>(path);
    std::optional<std::int64_t> ref;
    if (!latest) {
        ref = parse_int64(ctx.params.get("ref_key").value_or(""));
        if (!ref) co_return bad_field(req, "ref_key", "must be a 64-bit integer");
    }
    if (auto e = detail::unknown_query_param(ctx.query, cell_read_params)) co_return bad_field(req, e->field, e->detail);
    const auto wait = parse_wait(gw, ctx);
    if (auto* r = std::get_if<response>(&wait)) co_return std::move(*r);
    const auto query = [&](shards::mariadb_conn& c) -> asio::awaitable<core::result<std::optional<shards::stored_cell>>> {
        if (ref) {
            const shards::cell_key key{p.row_key, p.column, *ref};
            auto r = co_await shards::async_get_cells(c, p.table, std::span(&key, 1));
            if (!r) co_return r.error();
            co_return std::move(r.value().front());
        }
        auto r = co_await shards::async_cell_versions(c, p.table, p.row_key, p.column, std::nullopt, 1);
        if (!r) co_return r.error();
        if (r.value().empty()) co_return std::optional<shards::stored_cell>{};
        co_return std::move(r.value().front());
    };
    const auto render = [&](std::optional<shards::stored_cell> found) {
        if (!found) return cell_not_found(req, fmt::format("no such cell in table {}", p.table));
        return json_response(http::status::ok, cairn::net::render(p, *found), req);
    };
    co_return co_await detail::async_read_shard(gw, req, p.shard, std::get<detail::wait_params>(wait), query, render);
}

// One page of a list read for n cells: {"<key>":[cells],"next_cursor":...}. cells holds up to n + 1
// (one more than asked: there is a next page), and cursor(out, last) appends the cursor after the
// last cell shown.
template <class Cursor>
std::string render_page_of(const cell_path& p, std::vector<shards::stored_cell>& cells, std::size_t n,
                           std::string_view key, Cursor cursor) {
    const bool more = cells.size() > n;
    if (more) cells.resize(n);
    std::string body = fmt::format(R"({{"{}":[)", key);
    for (std::size_t i = 0; i < cells.size(); ++i) {
        if (i) body += ',';
        body += render(p, cells[i]);
    }
    body += R"(],"next_cursor":)";
    if (more) {
        cursor(body, cells.back());
    } else {
        body += "null";
    }
    body += '}';
    return body;
}

std::variant<std::size_t, response> parse_limit(const gateway& gw, const route_context& ctx) {
    auto l = ctx.query_param("limit");
    if (!l) return std::min<std::size_t>(100, gw.lim.page_limit_max);
    auto v = detail::parse_uint(*l, 1, gw.lim.page_limit_max);
    if (!v) return bad_field(ctx.req, "limit", fmt::format("must be an integer between 1 and {}", gw.lim.page_limit_max));
    return static_cast<std::size_t>(*v);
}

// GET .../{row_key}/{column}/versions?limit=&cursor=: newest ref_key first; cursor: the
// next_cursor of the previous page (a ref_key: the page holds the versions below it).
asio::awaitable<response> async_get_versions(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto path = parse_path(gw, ctx, true);
    if (auto* r = std::get_if<response>(&path)) co_return std::move(*r);
    const auto& p = std::get<cell_path>(path);
    if (auto e = detail::unknown_query_param(ctx.query, list_params)) co_return bad_field(req, e->field, e->detail);
    auto limit = parse_limit(gw, ctx);
    if (auto* r = std::get_if<response>(&limit)) co_return std::move(*r);
    std::optional<std::int64_t> before;
    if (auto c = ctx.query_param("cursor")) {
        before = parse_int64(*c);
        if (!before) co_return bad_field(req, "cursor", "must be a next_cursor returned by this route, unchanged");
    }
    const auto wait = parse_wait(gw, ctx);
    if (auto* r = std::get_if<response>(&wait)) co_return std::move(*r);
    const std::size_t n = std::get<std::size_t>(limit);
    const auto query = [&](shards::mariadb_conn& c) {
        return shards::async_cell_versions(c, p.table, p.row_key, p.column, before, n + 1);
    };
    const auto render_page = [&](std::vector<shards::stored_cell> cells) {
        return json_response(http::status::ok,
                             render_page_of(p, cells, n, "versions",
                                            [](std::string& out, const shards::stored_cell& last) {
                                                fmt::format_to(std::back_inserter(out), "\"{}\"", last.ref_key);
                                            }),
                             req);
    };
    co_return co_await detail::async_read_shard(gw, req, p.shard, std::get<detail::wait_params>(wait), query,
                                                render_page);
}

// GET .../{row_key}?limit=&cursor=: the latest version of each column, by column name.
asio::awaitable<response> async_get_row(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto path = parse_path(gw, ctx, false);
    if (auto* r = std::get_if<response>(&path)) co_return std::move(*r);
    const auto& p = std::get<cell_path>(path);
    if (auto e = detail::unknown_query_param(ctx.query, list_params)) co_return bad_field(req, e->field, e->detail);
    auto limit = parse_limit(gw, ctx);
    if (auto* r = std::get_if<response>(&limit)) co_return std::move(*r);
    std::optional<std::string> after;
    if (auto c = ctx.query_param("cursor")) {
        if (!core::valid_cell_column(*c)) co_return bad_field(req, "cursor", "must be a next_cursor returned by this route, unchanged");
        after = *c;
    }
    const auto wait = parse_wait(gw, ctx);
    if (auto* r = std::get_if<response>(&wait)) co_return std::move(*r);
    const std::size_t n = std::get<std::size_t>(limit);
    const auto query = [&](shards::mariadb_conn& c) { return shards::async_row_cells(c, p.table, p.row_key, after, n + 1); };
    const auto render_page = [&](std::vector<shards::stored_cell> cells) {
        return json_response(http::status::ok,
                             render_page_of(p, cells, n, "columns",
                                            [](std::string& out, const shards::stored_cell& last) {
                                                detail::append_json_string(out, last.column);
                                            }),
                             req);
    };
    co_return co_await detail::async_read_shard(gw, req, p.shard, std::get<detail::wait_params>(wait), query,
                                                render_page);
}

}  // namespace

void add_cell_routes(router& r, gateway& gw) {
    r.add(http::verb::post, "/v1/cells/{table}", core::role::write, [&gw](route_context& ctx) { return async_post_cells(gw, ctx); });
    r.add(http::verb::get, "/v1/cells/{table}/{row_key}", core::role::read,
          [&gw](route_context& ctx) { return async_get_row(gw, ctx); });
    r.add(http::verb::get, "/v1/cells/{table}/{row_key}/{column}", core::role::read,
          [&gw](route_context& ctx) { return async_get_cell(gw, ctx, true); });
    r.add(http::verb::get, "/v1/cells/{table}/{row_key}/{column}/versions", core::role::read,
          [&gw](route_context& ctx) { return async_get_versions(gw, ctx); });
    r.add(http::verb::get, "/v1/cells/{table}/{row_key}/{column}/{ref_key}", core::role::read,
          [&gw](route_context& ctx) { return async_get_cell(gw, ctx, false); });
}

}  // namespace cairn::net
