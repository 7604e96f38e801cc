// Index routes (issues 5 and 6): create, list and drop index definitions of entity kinds and of
// cell columns at run time (stored on every shard through the journal), and queries that read
// index rows and re-apply the filter to the canonical objects (the entity; the latest cell of the
// column). See docs/api.md, docs/entities.md and docs/cells.md.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/index_cursor.hpp"
#include "core/page_cursor.hpp"
#include "indexing/cleaner.hpp"
#include "indexing/index_registry.hpp"
#include "indexing/indexed_objects.hpp"
#include "journal/journal.hpp"
#include "net/cell_json.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/index_values.hpp"
#include "net/detail/journal_write.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/json_parse.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "shards/index_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <msgpack.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using detail::bad_field;

constexpr std::string_view query_fixed_params[] = {"limit", "cursor", "after", "timeout_ms"};
constexpr std::size_t cleaner_rate_default = 20'000;  // rows per second a cleaner run reads at most
constexpr std::size_t indexes_per_kind_max = 32;

}  // namespace

namespace {

// ---- definitions over HTTP ----------------------------------------------------------------------

std::string render_def(const core::index_def& d) {
    std::string out = fmt::format(R"({{"name":"{}",)", d.name);
    if (d.on_cells()) {
        fmt::format_to(std::back_inserter(out), R"("table":"{}","column":)", d.kind);
        detail::append_json_string(out, d.column);
    } else {
        fmt::format_to(std::back_inserter(out), R"("kind":"{}")", d.kind);
    }
    out += R"(,"properties":[)";
    for (std::size_t i = 0; i < d.properties.size(); ++i) {
        const auto& p = d.properties[i];
        out += i ? "," : "";
        out += R"({"name":)";
        detail::append_json_string(out, p.name);
        fmt::format_to(std::back_inserter(out), R"(,"type":"{}")", core::index_type_name(p.type));
        if (p.type == core::index_value_type::string) fmt::format_to(std::back_inserter(out), R"(,"length":{})", p.length_max);
        out += '}';
    }
    out += R"(],"shard_on":)";
    detail::append_json_string(out, d.properties[d.shard_on].name);
    out += '}';
    return out;
}

std::variant<core::index_def, input_error> parse_def(const gateway& gw, std::string_view body) {
    simdjson::dom::element root;
    if (auto err = detail::parse_json(body, root)) return std::move(*err);
    if (!root.is_object()) {
        return input_error{"body", "must be an object {name, kind, properties, shard_on} or {name, table, column, properties, shard_on}"};
    }
    core::index_def d;
    std::string shard_on;
    std::string table;
    const simdjson::dom::object fields = root.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (key == "name" || key == "kind" || key == "shard_on" || key == "table" || key == "column") {
            if (!value.is_string()) return input_error{std::string(key), "must be a string"};
            std::string v(value.get_string().value_unsafe());
            if (key == "column" && v.empty()) return input_error{"column", "must not be empty"};
            (key == "name" ? d.name : key == "kind" ? d.kind : key == "table" ? table : key == "column" ? d.column : shard_on) = std::move(v);
        } else if (key == "properties") {
            if (!value.is_array()) return input_error{"properties", "must be an array of {name, type, length}"};
            std::size_t i = 0;
            // Named: a range-for over get_array().value_unsafe() would walk a destroyed temporary.
            const simdjson::dom::array list = value.get_array().value_unsafe();
            for (auto p : list) {
                const auto where = fmt::format("properties[{}]", i++);
                if (!p.is_object()) return input_error{where, "must be an object {name, type, length}"};
                core::index_property prop;
                const simdjson::dom::object pf = p.get_object().value_unsafe();
                for (auto [pk, pv] : pf) {
                    if (pk == "name") {
                        if (!pv.is_string()) return input_error{where + ".name", "must be a string"};
                        prop.name = std::string(pv.get_string().value_unsafe());
                    } else if (pk == "type") {
                        std::optional<core::index_value_type> t;
                        if (pv.is_string()) t = core::index_type_from_name(pv.get_string().value_unsafe());
                        if (!t) return input_error{where + ".type", "must be \"id\", \"int\", \"string\" or \"bool\""};
                        prop.type = *t;
                    } else if (pk == "length") {
                        if (!pv.is_int64() || pv.get_int64().value_unsafe() < 1 || pv.get_int64().value_unsafe() > 255) {
                            return input_error{where + ".length", "must be an integer between 1 and 255"};
                        }
                        prop.length_max = static_cast<std::size_t>(pv.get_int64().value_unsafe());
                    } else {
                        return input_error{where + "." + std::string(pk), "is not a field of a property (name, type, length)"};
                    }
                }
                d.properties.push_back(std::move(prop));
            }
        } else {
            return input_error{std::string(key), "is not a field of an index (name, kind or table and column, properties, shard_on)"};
        }
    }
    if (!d.kind.empty() && !table.empty()) return input_error{"table", "an index reads an entity kind or a cell table, not both"};
    if (!table.empty() || !d.column.empty()) {
        // A cell index: the table's cells of one column.
        if (table.empty()) return input_error{"table", "is required with column (the cell table the index reads)"};
        if (d.column.empty()) return input_error{"column", "is required with table (the cell column the index reads)"};
        if (!gw.cells || !gw.cells->declared(table)) return input_error{"table", "must be a declared cell table"};
        d.kind = std::move(table);
    } else if (!gw.entities || !gw.entities->declared(d.kind)) {
        return input_error{"kind", "must be a declared entity kind"};
    }
    if (shard_on.empty() && d.properties.size() == 1) shard_on = d.properties[0].name;
    d.shard_on = d.properties.size();
    for (std::size_t i = 0; i < d.properties.size(); ++i) {
        if (d.properties[i].name == shard_on) d.shard_on = i;
    }
    if (auto why = core::check_index_def(d)) {
        const auto colon = why->find(':');
        return input_error{why->substr(0, colon), why->substr(colon + 2)};
    }
    return d;
}

// Journals a definition op and waits (bounded) until every shard applied it, then refreshes.
asio::awaitable<response> async_write_def(gateway& gw, route_context& ctx, core::index_def_op op, http::status ok,
                                          std::string answer_body) {
    const auto& req = ctx.req;
    const auto seq_before = gw.journal.last_seq();
    std::vector<core::op> ops(1);
    ops[0].ts = gw.clock.now();
    ops[0].body = std::move(op);
    auto journaled = co_await detail::async_journal_write(gw, ctx, std::move(ops));
    if (journaled.result() != http::status::accepted) co_return journaled;
    std::vector<core::shard_index> all;
    for (core::shard_index s = 0; s < gw.routing.load()->read_map().size(); ++s) all.push_back(s);
    const auto seq = gw.journal.last_seq();
    auto behind = co_await gw.shards.async_wait_applied(std::max(seq, seq_before + 1), std::move(all), gw.lim.applied_wait_max);
    co_await gw.indexes->async_refresh();
    if (!behind.empty()) {
        // Journaled (it will apply when the shards can), but not yet everywhere.
        journaled.body() = answer_body;
        journaled.prepare_payload();
        co_return journaled;
    }
    co_return json_response(ok, std::move(answer_body), req);
}

asio::awaitable<response> async_create_index(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (!ctx.query.empty()) co_return bad_field(req, "query", "this route takes its arguments in the body");
    auto parsed = parse_def(gw, req.body());
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    auto& def = std::get<core::index_def>(parsed);
    co_await gw.indexes->async_refresh();
    // Every write of the kind (of the table) carries a row per index (a journal record holds at most 64).
    const auto siblings = def.on_cells() ? gw.indexes->of_cell_table(def.kind).size() : gw.indexes->of_kind(def.kind).size();
    if (siblings >= indexes_per_kind_max) {
        co_return bad_field(req, def.on_cells() ? "table" : "kind",
                            fmt::format("{} {} has {} indexes already; at most {}", def.on_cells() ? "cell table" : "kind",
                                        def.kind, siblings, indexes_per_kind_max));
    }
    if (auto existing = gw.indexes->find(def.name)) {
        co_return problem(problems::index_exists, fmt::format("index {} exists ({}); drop it first to define it again", def.name, render_def(*existing)),
                          "name", req.version(), req.keep_alive());
    }
    core::index_def_op op{def.name, false, core::encode_index_def(def)};
    auto res = co_await async_write_def(gw, ctx, std::move(op), http::status::created, render_def(def));
    // A new index starts empty: its back-fill runs at once (the entities written from now on
    // carry its rows themselves).
    if (res.result() == http::status::created && gw.index_cleaner) gw.index_cleaner->start(def, cleaner_rate_default);
    co_return res;
}

std::string render_progress(const indexing::cleaner_progress& p) {
    const auto now = p.finished_ms ? p.finished_ms : core::system_wall_clock_ms();
    const double elapsed_s = static_cast<double>(now - std::min(now, p.started_ms)) / 1000.0;
    const double rate = elapsed_s > 0 ? static_cast<double>(p.scanned) / elapsed_s : 0.0;
    const auto left = p.total > p.scanned ? p.total - p.scanned : 0;
    std::string eta = "null";
    if (p.state == "running" && rate > 0) eta = fmt::format("{:.1f}", static_cast<double>(left) / rate);
    if (p.state == "done") eta = "0";
    std::string out = fmt::format(
        R"({{"index":"{}","state":"{}","phase":"{}","catch_up_seq":{},"late_ops_queued":{},"late_dead_letters":{},)"
        R"("rows_scanned":{},"rows_total":{},"rows_added":{},)"
        R"("rows_removed":{},"rate_rows_per_s":{:.1f},"eta_s":{},"throttle_rows_per_s":{},"started_ms":{},"finished_ms":{},"error":)",
        p.index, p.state, p.phase, p.catch_up_seq, p.late_ops_queued, p.late_dead_letters, p.scanned, p.total, p.rows_added, p.rows_removed, rate, eta, p.rows_per_s, p.started_ms,
        p.finished_ms ? std::to_string(p.finished_ms) : std::string("null"));
    if (p.error.empty()) {
        out += "null";
    } else {
        detail::append_json_string(out, p.error);
    }
    if (p.mode != indexing::cleaner_mode::clean) {
        fmt::format_to(std::back_inserter(out), R"(,"mode":"{}","missing":{},"stale":{},"shards":[)", indexing::cleaner_mode_name(p.mode),
                       p.missing, p.stale);
        for (std::size_t i = 0; i < p.shards.size(); ++i) {
            fmt::format_to(std::back_inserter(out), R"({}{{"shard":{},"missing":{},"stale":{}}})", i ? "," : "", i,
                           p.shards[i].missing, p.shards[i].stale);
        }
        out += R"(],"examples":{"missing":[)";
        for (std::size_t i = 0; i < p.missing_examples.size(); ++i) {
            if (i) out += ',';
            detail::append_json_string(out, p.missing_examples[i]);
        }
        out += R"(],"stale":[)";
        for (std::size_t i = 0; i < p.stale_examples.size(); ++i) {
            if (i) out += ',';
            detail::append_json_string(out, p.stale_examples[i]);
        }
        out += "]}";
    }
    out += '}';
    return out;
}

// POST /v1/indexes/{name}/clean?rate=: starts the cleaner; GET: its progress on this gateway.
// POST /v1/indexes/{name}/verify?rate=&repair=: starts a verify run; GET: its progress and report.
asio::awaitable<response> async_clean(gateway& gw, route_context& ctx, bool start, bool verify) {
    const auto& req = ctx.req;
    const std::string name(ctx.params.get("name").value_or(""));
    constexpr std::string_view clean_params[] = {"rate"};
    constexpr std::string_view verify_params[] = {"rate", "repair"};
    const auto params = verify ? std::span<const std::string_view>(verify_params) : std::span<const std::string_view>(clean_params);
    if (auto e = detail::unknown_query_param(ctx.query, start ? params : std::span<const std::string_view>{})) {
        co_return bad_field(req, e->field, e->detail);
    }
    const std::string_view run = verify ? "verify" : "clean";
    if (start) {
        co_await gw.indexes->async_refresh();
        auto def = gw.indexes->find(name);
        if (!def) {
            co_return problem(problems::unknown_index, fmt::format("no index '{}'", name),
                              "name", req.version(), req.keep_alive());
        }
        std::size_t rate = cleaner_rate_default;
        if (auto r = ctx.query_param("rate")) {
            auto v = detail::parse_uint(*r, 1, 10'000'000);
            if (!v) co_return bad_field(req, "rate", "must be rows per second, between 1 and 10000000");
            rate = static_cast<std::size_t>(*v);
        }
        auto mode = indexing::cleaner_mode::clean;
        if (verify) {
            mode = indexing::cleaner_mode::verify;
            if (auto r = ctx.query_param("repair")) {
                if (*r != "true" && *r != "false") co_return bad_field(req, "repair", "must be true or false");
                if (*r == "true") mode = indexing::cleaner_mode::repair;
            }
        }
        if (!gw.index_cleaner->start(*def, rate, mode)) {
            co_return problem(problems::cleaner_running,
                              fmt::format("a {} run of index {} is running; see GET /v1/indexes/{}/{}", run, name, name, run),
                              "name", req.version(), req.keep_alive());
        }
    }
    auto p = gw.index_cleaner->progress(name, verify);
    if (!p) {
        co_return problem(verify ? problems::no_verify_run : problems::no_cleaner_run,
                          fmt::format("no {} run of index {} has run on this gateway", run, name), "name", req.version(),
                          req.keep_alive());
    }
    co_return json_response(start ? http::status::accepted : http::status::ok, render_progress(*p), req);
}

asio::awaitable<response> async_drop_index(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::string name(ctx.params.get("name").value_or(""));
    co_await gw.indexes->async_refresh();
    if (!gw.indexes->find(name)) {
        co_return problem(problems::unknown_index, fmt::format("no index '{}'", name), "name",
                          req.version(), req.keep_alive());
    }
    core::index_def_op op{name, true, {}};
    co_return co_await async_write_def(gw, ctx, std::move(op), http::status::ok, fmt::format(R"({{"dropped":"{}"}})", name));
}

// ---- queries ------------------------------------------------------------------------------------

constexpr std::string_view range_ops[] = {"gte", "gt", "lte", "lt"};

// The opaque cursor of a query page (core/index_cursor.hpp): the last row's key, bound to the query.
std::string encode_cursor(const shards::index_row& row, std::string_view scope) {
    return core::encode_index_cursor({row.values, row.entity_id}, scope);
}

std::optional<shards::index_row> decode_cursor(const core::index_def& def, std::string_view text, std::string_view scope) {
    auto c = core::decode_index_cursor(def, text, scope);
    if (!c) return std::nullopt;
    shards::index_row row;
    row.values = std::move(c->values);
    row.entity_id = std::move(c->object_id);
    return row;
}

bool key_less(const shards::index_row& a, const shards::index_row& b) {
    if (a.values != b.values) return a.values < b.values;
    return a.entity_id < b.entity_id;
}

// The conditions of a query: equality on a prefix of the properties, then optionally a range on
// the next one (?p=v for equality; ?p.gte=, p.gt=, p.lte=, p.lt= for the range).
std::variant<shards::index_range, input_error> parse_conditions(const core::index_def& def, const route_context& ctx) {
    shards::index_range r;
    std::optional<std::size_t> range_on;
    bool gap = false;
    for (std::size_t i = 0; i < def.properties.size(); ++i) {
        const auto& p = def.properties[i];
        const auto eq = ctx.query_param(p.name);
        bool ranged = false;
        for (const auto op : range_ops) {
            const auto name = fmt::format("{}.{}", p.name, op);
            const auto text = ctx.query_param(name);
            if (!text) continue;
            if (eq) return input_error{name, fmt::format("cannot be given with {}= (equality)", p.name)};
            if (gap || range_on.value_or(i) != i) {
                return input_error{name, "a range applies to the property after the equality prefix, and to one property only"};
            }
            auto v = detail::index_value_of_text(p, *text);
            if (auto* why = std::get_if<std::string>(&v)) return input_error{name, *why};
            auto bound = std::pair{std::get<core::index_value>(std::move(v)), op == "gte" || op == "lte"};
            auto& slot = (op == "gte" || op == "gt") ? r.lower : r.upper;
            if (slot) return input_error{name, "two bounds on the same side"};
            slot = std::move(bound);
            range_on = i;
            ranged = true;
        }
        if (eq) {
            if (gap || range_on) {
                return input_error{p.name, fmt::format("equality applies to a prefix of the index's properties (in key order: {})",
                                                       def.properties.front().name)};
            }
            auto v = detail::index_value_of_text(p, *eq);
            if (auto* why = std::get_if<std::string>(&v)) return input_error{p.name, *why};
            r.equal.push_back(std::get<core::index_value>(std::move(v)));
        } else if (!ranged) {
            gap = true;
        }
    }
    if (r.equal.empty() && !range_on) {
        return input_error{def.properties.front().name, "is required: give the first property's value or a range of it"};
    }
    return r;
}

struct query_state {
    std::map<std::string, std::optional<indexing::indexed_object>> found;  // by entity id / row_key
    std::vector<shards::index_row> rows;                                  // every shard's page, rows it owns
    std::size_t read = 0;                                                 // rows the shards answered in all
    // The least last row of the shards whose page was full: past it a shard may hold rows not read yet.
    std::optional<shards::index_row> bound;
};

// GET /v1/entities/{kind}/by/{index} and GET /v1/cells/{table}/by/{index}.
asio::awaitable<response> async_query(gateway& gw, route_context& ctx, bool cells) {
    const auto& req = ctx.req;
    const std::string kind(ctx.params.get(cells ? "table" : "kind").value_or(""));
    const std::string name(ctx.params.get("index").value_or(""));
    if (cells && (!gw.cells || !gw.cells->declared(kind))) {
        co_return problem(problems::unknown_cell_table, fmt::format("no cell table '{}' is declared", kind), "table", req.version(), req.keep_alive());
    }
    if (!cells && (!gw.entities || !gw.entities->declared(kind))) {
        co_return problem(problems::unknown_kind, fmt::format("no entity kind '{}' is declared", kind), "kind", req.version(), req.keep_alive());
    }
    auto def = gw.indexes->find(name);
    if (!def || def->kind != kind || def->on_cells() != cells) {
        co_return problem(problems::unknown_index, fmt::format("no index '{}' of {} {}", name, cells ? "cell table" : "kind", kind), "index",
                          req.version(), req.keep_alive());
    }
    std::vector<std::string> names;
    for (const auto& p : def->properties) {
        names.push_back(p.name);
        for (const auto op : range_ops) names.push_back(fmt::format("{}.{}", p.name, op));
    }
    std::vector<std::string_view> known(std::begin(query_fixed_params), std::end(query_fixed_params));
    for (const auto& n : names) known.push_back(n);
    if (auto e = detail::unknown_query_param(ctx.query, known)) co_return bad_field(req, e->field, e->detail);
    auto parsed = parse_conditions(*def, ctx);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    const auto range = std::get<shards::index_range>(std::move(parsed));
    std::size_t limit = std::min<std::size_t>(100, gw.lim.page_limit_max);
    if (auto l = ctx.query_param("limit")) {
        auto v = detail::parse_uint(*l, 1, gw.lim.page_limit_max);
        if (!v) co_return bad_field(req, "limit", fmt::format("must be an integer between 1 and {}", gw.lim.page_limit_max));
        limit = static_cast<std::size_t>(*v);
    }
    // The cursor's scope: the index and every condition, in the definition's order.
    std::string scope = fmt::format("index|{}|", def->name);
    for (const auto& n : names) {
        if (auto v = ctx.query_param(n)) fmt::format_to(std::back_inserter(scope), "{}={}&", n, *v);
    }
    std::optional<shards::index_row> after;
    if (auto c = ctx.query_param("cursor")) {
        after = decode_cursor(*def, *c, scope);
        if (!after) {
            co_return bad_field(req, "cursor", "must be a next_cursor returned by this route for the same conditions, unchanged");
        }
    }
    // One shard when the equality prefix names the shard_on property; otherwise every shard, in
    // parallel, their sorted pages merged.
    // One route table for the whole query: its pages and the objects' shards.
    const auto table = gw.routing.load();
    const core::shard_map map = table->read_map();
    std::vector<core::shard_index> index_shards;
    if (def->shard_on < range.equal.size()) {
        index_shards.push_back(map.shard_of_hash(core::index_value_hash(range.equal[def->shard_on])));
    } else {
        for (core::shard_index s = 0; s < map.size(); ++s) index_shards.push_back(s);
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) co_return bad_field(req, e->field, e->detail);
    const auto& wp = std::get<detail::wait_params>(w);
    if (wp.after) {
        // The index rows' shards and, since the objects may live anywhere, every shard.
        std::vector<core::shard_index> all;
        for (core::shard_index s = 0; s < map.size(); ++s) all.push_back(s);
        if (auto p = co_await detail::async_wait_after(gw, req, wp, std::move(all))) co_return std::move(*p);
    }

    // Index rows in key order, entities fetched by their shards, each re-filtered; until the page
    // is full (one match beyond it tells whether another page follows), the index is exhausted,
    // or the scan budget is spent.
    std::vector<std::pair<shards::index_row, std::string>> page;  // (row, rendered object)
    std::size_t rows_read = 0;
    std::size_t stale = 0;
    const auto deadline = detail::fan_out_deadline(gw.lim);
    while (page.size() <= limit) {
        if (rows_read >= gw.lim.set_scan_rows_max) {
            co_return problem(problems::index_scan_budget, fmt::format("more than {} index rows were read without filling the page (limits.set_scan_rows_max); "
                                          "the index holds many stale rows: run the cleaner",
                                          gw.lim.set_scan_rows_max),
                              std::nullopt, req.version(), req.keep_alive());
        }
        const std::size_t want = limit + 1 - page.size();
        auto st = std::make_shared<query_state>();
        // A shard answers only for the rows it owns by the read map: a split's old owner still holds
        // the moved half's rows from the switch until cleaning, and the new owner holds them too.
        auto scan = [st, def = *def, range, after, want, map](core::shard_index s,
                                                               shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
            auto r = co_await shards::async_range_index(conn, def, range, after, want);
            if (!r) co_return r.error();
            st->read += r.value().size();
            if (r.value().size() >= want && (!st->bound || key_less(r.value().back(), *st->bound))) st->bound = r.value().back();
            for (auto& row : r.value()) {
                if (def.shard_on < row.values.size() && map.shard_of_hash(core::index_value_hash(row.values[def.shard_on])) != s) {
                    continue;
                }
                st->rows.push_back(std::move(row));
            }
            co_return core::success();
        };
        if (auto ec = co_await gw.shards.async_read_each(index_shards, scan, deadline)) co_return detail::shard_problem(req, ec);
        std::sort(st->rows.begin(), st->rows.end(), key_less);
        // Rows past the bound may come before rows a full shard has not answered yet: the next round.
        if (st->bound) std::erase_if(st->rows, [&](const shards::index_row& r) { return key_less(*st->bound, r); });
        const bool whole_round = st->rows.size() <= want;  // every row up to the bound is in this round
        const bool exhausted = !st->bound && whole_round;   // no shard holds more
        if (st->rows.size() > want) st->rows.resize(want);
        rows_read += st->read;
        if (st->rows.empty()) {
            if (exhausted) break;
            after = *st->bound;  // every row read belonged to other shards
            continue;
        }
        // The current objects, from their shards in parallel.
        auto groups = std::make_shared<std::map<core::shard_index, std::vector<std::string>>>();
        for (const auto& row : st->rows) (*groups)[map.shard_of_hash(core::hash_bytes(row.entity_id))].push_back(row.entity_id);
        std::vector<core::shard_index> homes;
        for (const auto& [s, _] : *groups) homes.push_back(s);
        auto fetch = [st, groups, def = *def](core::shard_index s, shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
            const auto& ids = groups->at(s);
            auto r = co_await indexing::async_current_objects(conn, def, ids);
            if (!r) co_return r.error();
            for (std::size_t i = 0; i < ids.size(); ++i) st->found[ids[i]] = std::move(r.value()[i]);
            co_return core::success();
        };
        if (auto ec = co_await gw.shards.async_read_each(homes, fetch, deadline)) co_return detail::shard_problem(req, ec);
        for (const auto& row : st->rows) {
            if (page.size() > limit) break;
            after = row;
            // Kept only if the object holds exactly the row's values now: then the row matches
            // the query and is the object's current row, so no object is answered twice.
            const auto& e = st->found[row.entity_id];
            std::optional<std::string> json;  // the body, decoded once for the filter and the answer
            if (e && !e->deleted) json = detail::stored_body_json(e->body);
            const bool keep = json && indexing::index_values_of_json(*def, *json) == row.values;
            if (!keep) {
                ++stale;  // a stale index row: the object changed or went away since
                continue;
            }
            page.emplace_back(row, cells ? render_cell_json(kind, row.entity_id, def->column, e->ref_key, *json, e->ts, e->added_id)
                                         : fmt::format(R"({{"id":"{}","body":{},"ts":"{}","ts_ms":{}}})",
                                                       core::format_id16_bytes(row.entity_id), *json, e->ts, core::hlc_ms(e->ts)));
        }
        if (exhausted) break;
        if (whole_round && st->bound && page.size() <= limit) after = *st->bound;
    }
    const bool more = page.size() > limit;
    if (more) page.pop_back();
    std::string out = cells ? fmt::format(R"({{"table":"{}","column":)", kind) : fmt::format(R"({{"kind":"{}",)", kind);
    if (cells) {
        detail::append_json_string(out, def->column);
        out += ',';
    }
    fmt::format_to(std::back_inserter(out), R"("index":"{}","{}":[)", name, cells ? "cells" : "entities");
    for (std::size_t i = 0; i < page.size(); ++i) out += (i ? "," : "") + page[i].second;
    out += R"(],"next_cursor":)";
    out += more ? fmt::format("\"{}\"", encode_cursor(page.back().first, scope)) : std::string("null");
    fmt::format_to(std::back_inserter(out), R"(,"index_rows_read":{},"stale_rows_skipped":{},"shards_read":{}}})", rows_read,
                   stale, index_shards.size());
    co_return json_response(http::status::ok, std::move(out), req);
}

}  // namespace

void add_index_routes(router& r, gateway& gw) {
    r.add(http::verb::post, "/v1/indexes", core::role::admin, [&gw](route_context& ctx) { return async_create_index(gw, ctx); });
    r.add(http::verb::get, "/v1/indexes", core::role::read, [&gw](route_context& ctx) -> asio::awaitable<response> {
        co_await gw.indexes->async_refresh();
        std::string out = R"({"indexes":[)";
        const auto all = gw.indexes->all();
        for (std::size_t i = 0; i < all.size(); ++i) out += (i ? "," : "") + render_def(all[i]);
        out += "]}";
        co_return json_response(http::status::ok, std::move(out), ctx.req);
    });
    r.add(http::verb::delete_, "/v1/indexes/{name}", core::role::admin,
          [&gw](route_context& ctx) { return async_drop_index(gw, ctx); });
    r.add(http::verb::post, "/v1/indexes/{name}/clean", core::role::admin,
          [&gw](route_context& ctx) { return async_clean(gw, ctx, true, false); });
    r.add(http::verb::get, "/v1/indexes/{name}/clean", core::role::read,
          [&gw](route_context& ctx) { return async_clean(gw, ctx, false, false); });
    r.add(http::verb::post, "/v1/indexes/{name}/verify", core::role::admin,
          [&gw](route_context& ctx) { return async_clean(gw, ctx, true, true); });
    r.add(http::verb::get, "/v1/indexes/{name}/verify", core::role::read,
          [&gw](route_context& ctx) { return async_clean(gw, ctx, false, true); });
    r.add(http::verb::get, "/v1/entities/{kind}/by/{index}", core::role::read,
          [&gw](route_context& ctx) { return async_query(gw, ctx, false); });
    r.add(http::verb::get, "/v1/cells/{table}/by/{index}", core::role::read,
          [&gw](route_context& ctx) { return async_query(gw, ctx, true); });
}

}  // namespace cairn::net
