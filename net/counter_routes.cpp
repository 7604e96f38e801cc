// Counter routes (issue 6): increments through the journal, and totals, time series and top-N
// breakdowns read from the declared tables. See docs/api.md and docs/counters.md.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "journal/journal.hpp"
#include "net/counter_json.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/journal_write.hpp"
#include "net/detail/json_escape.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "shards/counter_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using detail::bad_field;

const core::counter_catalog& catalog_of(const gateway& gw) {
    static const core::counter_catalog none;
    return gw.counters ? *gw.counters : none;
}

response unknown_metric(const gateway& gw, const request& req, std::string_view name) {
    std::string declared;
    for (const auto& m : catalog_of(gw).metrics) declared += (declared.empty() ? "" : ", ") + m.name;
    return problem(problems::unknown_metric, fmt::format("no counter metric '{}' is declared (declared: {})", name,
                               declared.empty() ? "none; see [[counters.metrics]] in the config" : declared),
                   "metric", req.version(), req.keep_alive());
}

asio::awaitable<response> async_post_increments(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const auto name = ctx.params.get("metric").value_or("");
    const auto* m = catalog_of(gw).find(name);
    if (!m) co_return unknown_metric(gw, req, name);
    auto parsed = parse_counter_writes(catalog_of(gw), *m, req.body(), gw.clock, core::system_wall_clock_ms(),
                                       gw.lim.batch_ops_max);
    if (auto* err = std::get_if<input_error>(&parsed)) co_return bad_field(req, err->field, err->detail);
    if (auto e = detail::unknown_query_param(ctx.query, detail::write_query_params)) {
        co_return bad_field(req, e->field, e->detail);
    }
    co_return co_await detail::async_journal_write(gw, ctx, std::move(std::get<std::vector<core::op>>(parsed)));
}

enum class read_kind { total, series, top };

// A parsed read: the query parameters checked against the metric's declaration.
struct read_request {
    const core::counter_metric* metric = nullptr;
    core::counter_query query;
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
    std::optional<std::pair<std::int64_t, std::int64_t>> compare;  // top: the earlier period
    std::size_t n = 10;
    detail::wait_params wait;
};

std::optional<input_error> parse_time_param(const route_context& ctx, std::string_view name, std::int64_t& out) {
    const auto v = ctx.query_param(name);
    if (!v) return input_error{std::string(name), "is required"};
    const auto t = core::parse_utc_time(*v);
    if (!t) {
        return input_error{std::string(name),
                           "must be milliseconds since the Unix epoch or RFC 3339 UTC text such as 2026-11-23T00:00:00Z"};
    }
    out = *t;
    return std::nullopt;
}

std::optional<input_error> check_range(std::string_view from_name, std::int64_t from, std::string_view to_name,
                                       std::int64_t to, core::counter_granularity g) {
    const auto unit = core::bucket_ms(g);
    for (auto [name, t] : {std::pair{from_name, from}, std::pair{to_name, to}}) {
        if (t % unit != 0) {
            return input_error{std::string(name), fmt::format("must be at the start of a UTC {} (granularity {}), got {}",
                                                              core::granularity_name(g), core::granularity_name(g),
                                                              core::format_utc_time(t))};
        }
    }
    if (to <= from) return input_error{std::string(to_name), fmt::format("must be after {}", from_name)};
    return std::nullopt;
}

std::variant<read_request, input_error> parse_read(const gateway& gw, const route_context& ctx,
                                                   const core::counter_metric& m, read_kind kind) {
    read_request out;
    out.metric = &m;
    std::vector<std::string_view> known = {"from", "to", "granularity", "after", "timeout_ms"};
    if (kind == read_kind::top) {
        for (std::string_view p : {"by", "n", "compare_from", "compare_to"}) known.push_back(p);
    }
    for (const auto& d : m.dimensions) known.push_back(d.name);
    if (auto e = detail::unknown_query_param(ctx.query, known)) {
        e->detail = fmt::format("is neither a parameter of this read nor a dimension of metric {}", m.name);
        return *e;
    }
    for (std::size_t i = 0; i < m.dimensions.size(); ++i) {
        auto v = ctx.query_param(m.dimensions[i].name);
        if (!v) continue;
        if (auto why = core::check_dimension_value(m.dimensions[i], *v)) return input_error{m.dimensions[i].name, *why};
        out.query.filters.emplace_back(i, std::move(*v));
    }
    if (auto e = parse_time_param(ctx, "from", out.from_ms)) return *e;
    if (auto e = parse_time_param(ctx, "to", out.to_ms)) return *e;
    if (auto g = ctx.query_param("granularity")) {
        auto parsed = core::granularity_from_name(*g);
        if (!parsed) return input_error{"granularity", "must be \"hour\" or \"day\""};
        out.query.granularity = *parsed;
    } else {
        // Whole days read the daily table when there is one that fits; anything else hours.
        const bool whole_days = out.from_ms % core::ms_per_day == 0 && out.to_ms % core::ms_per_day == 0;
        out.query.granularity = whole_days ? core::counter_granularity::day : core::counter_granularity::hour;
    }
    if (kind == read_kind::top) {
        const auto by = ctx.query_param("by");
        if (!by) return input_error{"by", "is required: the dimension to break the counts down by"};
        out.query.group_by = m.dimension_index(*by);
        if (!out.query.group_by) return input_error{"by", fmt::format("'{}' is not a dimension of metric {}", *by, m.name)};
        if (auto n = ctx.query_param("n")) {
            auto v = detail::parse_uint(*n, 1, 1000);
            if (!v) return input_error{"n", "must be between 1 and 1000"};
            out.n = static_cast<std::size_t>(*v);
        }
        const bool cf = ctx.query_param("compare_from").has_value();
        const bool ct = ctx.query_param("compare_to").has_value();
        if (cf != ct) return input_error{cf ? "compare_to" : "compare_from", "is required with the other compare_ parameter"};
        if (cf) {
            std::pair<std::int64_t, std::int64_t> c;
            if (auto e = parse_time_param(ctx, "compare_from", c.first)) return *e;
            if (auto e = parse_time_param(ctx, "compare_to", c.second)) return *e;
            out.compare = c;
        }
    }
    // Without an explicit granularity, a range of whole days falls back to hours when no daily
    // table fits the query.
    if (!ctx.query_param("granularity") && out.query.granularity == core::counter_granularity::day &&
        !core::choose_counter_table(m, out.query)) {
        out.query.granularity = core::counter_granularity::hour;
    }
    if (auto e = check_range("from", out.from_ms, "to", out.to_ms, out.query.granularity)) return *e;
    if (out.compare) {
        if (auto e = check_range("compare_from", out.compare->first, "compare_to", out.compare->second, out.query.granularity)) {
            return *e;
        }
    }
    if (kind == read_kind::series) {
        const auto points = (out.to_ms - out.from_ms) / core::bucket_ms(out.query.granularity);
        const auto max = catalog_of(gw).series_points_max;
        if (static_cast<std::uint64_t>(points) > max) {
            return input_error{"to", fmt::format("asks for {} {}s; at most {} points per series (counters.series_points_max)",
                                                 points, core::granularity_name(out.query.granularity), max)};
        }
    }
    auto w = detail::parse_wait_params(ctx, gw);
    if (auto* e = std::get_if<input_error>(&w)) return *e;
    out.wait = std::get<detail::wait_params>(w);
    return out;
}

// Why no table answers: the tables of the metric and what the query lacks.
std::string no_table_detail(const core::counter_metric& m, const core::counter_query& q) {
    std::string tables;
    for (const auto& t : m.tables) {
        tables += fmt::format("{}{} ({}: ", tables.empty() ? "" : "; ", t.name, core::granularity_name(t.granularity));
        for (std::size_t i = 0; i < t.key.size(); ++i) {
            tables += i ? ", " : "";
            tables += t.key[i] == core::counter_key_time ? std::string("time")
                                                         : m.dimensions[static_cast<std::size_t>(t.key[i])].name;
        }
        tables += ')';
    }
    return fmt::format(
        "no {} table of metric {} answers this query with one range read: every key column before time must be "
        "given, every given dimension{} must be in the key (tables: {})",
        core::granularity_name(q.granularity), m.name, q.group_by ? " and the 'by' dimension (after time)" : "", tables);
}

// Runs one grouped read on every shard it needs and sums the shards' rows by (bucket, group).
struct summed_rows {
    std::map<std::pair<std::int64_t, std::string>, std::int64_t> sums;
    bool moved_half_left_out = false;  // a shard was read grouped by shard_on too (too_large names it)
};

// The hashes of shard s whose counter sums this read must leave out: a split's moved half R on its
// old shard while reads of R have moved to the new shard but the old one may still hold sums of R
// (it counts R's increments until each gateway's cut-over; the driver deletes them once it has applied
// every gateway's ops below it, before cleaning: docs/resharding.md). Summed over every shard they would count twice. A table whose key leaves
// shard_on out is counted on the first map's owner alone and never copied: nothing.
std::optional<core::hash_range> moved_half_on(const core::route_table& routes, const shards::counter_read& q,
                                              core::shard_index s) {
    const auto& split = routes.split();
    if (!split || !split->reads_moved || s != split->from) return std::nullopt;
    if (!q.table->has_dimension(q.metric->shard_on)) return std::nullopt;
    return routes.next_map().range_of(routes.map().size());
}

asio::awaitable<core::error_code> async_read_all(gateway& gw, const shards::counter_read& q,
                                                 std::vector<core::shard_index> shards, std::size_t rows_max,
                                                 std::shared_ptr<const core::route_table> routes,
                                                 std::shared_ptr<summed_rows> out) {
    // Rows by shard_on value too are more than the groups asked for: bounded by groups_max at least.
    const std::size_t split_rows_max = std::max(rows_max, catalog_of(gw).groups_max);
    auto query = [q, rows_max, split_rows_max, routes, out](core::shard_index s,
                                                            shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
        const auto leave_out = moved_half_on(*routes, q, s);
        auto read = q;
        // Grouped by the shard_on value as well, unless the breakdown already is.
        if (leave_out && read.group_by != read.metric->shard_on) read.route_by = read.metric->shard_on;
        if (leave_out) out->moved_half_left_out = true;
        auto rows = co_await shards::async_read_counters(conn, read, leave_out ? split_rows_max : rows_max);
        if (!rows) co_return rows.error();
        const auto& dim = read.metric->dimensions[read.metric->shard_on];
        for (auto& row : rows.value()) {
            if (leave_out && leave_out->contains(core::counter_value_hash(dim, read.route_by ? row.route_value : row.group))) {
                continue;
            }
            out->sums[{row.bucket_ms, std::move(row.group)}] += row.count;
        }
        co_return core::success();
    };
    co_return co_await gw.shards.async_read_each(shards, query, detail::fan_out_deadline(gw.lim));
}

response read_problem(const gateway& gw, const request& req, const core::error_code& ec, const summed_rows& rows) {
    if (ec == core::errc::too_large && rows.moved_half_left_out) {
        return problem(problems::too_many_groups,
                       fmt::format("while a split moves reads, the old shard's rows are read by each value of the metric's "
                                   "shard_on dimension to leave out the moved half, and this read has more than {} of them "
                                   "(counters.groups_max): filter by that dimension, or read again once the split is done",
                                   catalog_of(gw).groups_max),
                       std::nullopt, req.version(), req.keep_alive());
    }
    if (ec == core::errc::too_large) {
        return problem(problems::too_many_groups, fmt::format("the breakdown has more than {} distinct values (counters.groups_max): add filters",
                                   catalog_of(gw).groups_max),
                       std::nullopt, req.version(), req.keep_alive());
    }
    return detail::shard_problem(req, ec);
}

void append_filters(std::string& out, const core::counter_metric& m, const core::counter_query& q) {
    out += R"("filters":{)";
    for (std::size_t i = 0; i < q.filters.size(); ++i) {
        const auto& [dim, value] = q.filters[i];
        if (i) out += ',';
        detail::append_json_string(out, m.dimensions[dim].name);
        out += ':';
        if (m.dimensions[dim].type == core::dimension_type::integer) {
            out += value;
        } else {
            detail::append_json_string(out, value);
        }
    }
    out += '}';
}

asio::awaitable<response> async_get_read(gateway& gw, route_context& ctx, read_kind kind) {
    const auto& req = ctx.req;
    const auto name = ctx.params.get("metric").value_or("");
    const auto* m = catalog_of(gw).find(name);
    if (!m) co_return unknown_metric(gw, req, name);
    auto parsed = parse_read(gw, ctx, *m, kind);
    if (auto* e = std::get_if<input_error>(&parsed)) co_return bad_field(req, e->field, e->detail);
    const auto& rr = std::get<read_request>(parsed);
    const auto* table = core::choose_counter_table(*m, rr.query);
    if (!table) {
        co_return problem(problems::no_table, no_table_detail(*m, rr.query), std::nullopt, req.version(), req.keep_alive());
    }
    // One shard when the query names the shard_on dimension, else every shard.
    const auto routes = gw.routing.load();
    const core::shard_map& map = routes->read_map();
    std::vector<core::shard_index> needed;
    for (const auto& [dim, value] : rr.query.filters) {
        if (dim == m->shard_on) needed.push_back(map.shard_of_hash(core::counter_value_hash(m->dimensions[dim], value)));
    }
    if (needed.empty()) {
        for (core::shard_index s = 0; s < map.size(); ++s) needed.push_back(s);
    }
    if (auto p = co_await detail::async_wait_after(gw, req, rr.wait, needed)) co_return std::move(*p);

    shards::counter_read q;
    q.metric = m;
    q.table = table;
    q.filters = rr.query.filters;
    q.group_by = rr.query.group_by;
    q.by_bucket = kind == read_kind::series;
    q.from_ms = rr.from_ms;
    q.to_ms = rr.to_ms;
    const std::size_t rows_max = kind == read_kind::series ? catalog_of(gw).series_points_max : catalog_of(gw).groups_max;
    auto now = std::make_shared<summed_rows>();
    if (auto ec = co_await async_read_all(gw, q, needed, rows_max, routes, now)) co_return read_problem(gw, req, ec, *now);

    std::string body = R"({"metric":)";
    detail::append_json_string(body, m->name);
    fmt::format_to(std::back_inserter(body), R"(,"table":"{}","granularity":"{}","from":"{}","to":"{}",)", table->name,
                   core::granularity_name(table->granularity), core::format_utc_time(rr.from_ms),
                   core::format_utc_time(rr.to_ms));
    append_filters(body, *m, rr.query);
    std::int64_t total = 0;
    for (const auto& [_, c] : now->sums) total += c;

    if (kind == read_kind::total) {
        fmt::format_to(std::back_inserter(body), R"(,"total":{}}})", total);
        co_return json_response(http::status::ok, std::move(body), req);
    }
    if (kind == read_kind::series) {
        // Every bucket of the range, zeros included, so that a chart needs no gap filling.
        body += R"(,"points":[)";
        const auto unit = core::bucket_ms(table->granularity);
        for (std::int64_t t = rr.from_ms; t < rr.to_ms; t += unit) {
            const auto it = now->sums.find({t, std::string()});
            fmt::format_to(std::back_inserter(body), R"({}{{"time":"{}","time_ms":{},"count":{}}})", t == rr.from_ms ? "" : ",",
                           core::format_utc_time(t), t, it == now->sums.end() ? 0 : it->second);
        }
        fmt::format_to(std::back_inserter(body), R"(],"total":{}}})", total);
        co_return json_response(http::status::ok, std::move(body), req);
    }

    // top: the n largest groups of the period, with the earlier period's counts beside them.
    std::shared_ptr<summed_rows> before;
    if (rr.compare) {
        before = std::make_shared<summed_rows>();
        q.from_ms = rr.compare->first;
        q.to_ms = rr.compare->second;
        if (auto ec = co_await async_read_all(gw, q, needed, rows_max, routes, before)) co_return read_problem(gw, req, ec, *before);
    }
    std::vector<std::pair<std::string, std::int64_t>> groups;
    for (const auto& [key, c] : now->sums) groups.emplace_back(key.second, c);
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (groups.size() > rr.n) groups.resize(rr.n);
    const auto& by = m->dimensions[*rr.query.group_by];
    body += R"(,"by":)";
    detail::append_json_string(body, by.name);
    if (rr.compare) {
        fmt::format_to(std::back_inserter(body), R"(,"compare_from":"{}","compare_to":"{}")",
                       core::format_utc_time(rr.compare->first), core::format_utc_time(rr.compare->second));
    }
    body += R"(,"rows":[)";
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const auto& [value, c] = groups[i];
        body += i ? ",{\"value\":" : "{\"value\":";
        if (by.type == core::dimension_type::integer) {
            body += value;
        } else {
            detail::append_json_string(body, value);
        }
        fmt::format_to(std::back_inserter(body), R"(,"count":{})", c);
        if (before) {
            const auto it = before->sums.find({0, value});
            const std::int64_t prev = it == before->sums.end() ? 0 : it->second;
            fmt::format_to(std::back_inserter(body), R"(,"previous_count":{})", prev);
            // Change in percent against the earlier period; null when it counted nothing.
            if (prev != 0) {
                fmt::format_to(std::back_inserter(body), R"(,"change_percent":{:.1f})",
                               100.0 * static_cast<double>(c - prev) / static_cast<double>(prev));
            } else {
                body += R"(,"change_percent":null)";
            }
        }
        body += '}';
    }
    fmt::format_to(std::back_inserter(body), R"(],"total":{}}})", total);
    co_return json_response(http::status::ok, std::move(body), req);
}

// GET /v1/counters: the declared metrics, so that a client can see what it may send and ask.
std::string render_catalog(const core::counter_catalog& c) {
    std::string out = R"({"metrics":[)";
    for (std::size_t i = 0; i < c.metrics.size(); ++i) {
        const auto& m = c.metrics[i];
        fmt::format_to(std::back_inserter(out), R"({}{{"name":"{}","shard_on":"{}","dimensions":[)", i ? "," : "", m.name,
                       m.dimensions[m.shard_on].name);
        for (std::size_t d = 0; d < m.dimensions.size(); ++d) {
            const auto& dim = m.dimensions[d];
            if (dim.type == core::dimension_type::integer) {
                fmt::format_to(std::back_inserter(out), R"({}{{"name":"{}","type":"int"}})", d ? "," : "", dim.name);
            } else {
                fmt::format_to(std::back_inserter(out), R"({}{{"name":"{}","type":"string","length":{}}})", d ? "," : "",
                               dim.name, dim.length_max);
            }
        }
        out += R"(],"tables":[)";
        for (std::size_t t = 0; t < m.tables.size(); ++t) {
            const auto& tab = m.tables[t];
            fmt::format_to(std::back_inserter(out), R"({}{{"name":"{}","granularity":"{}","key":[)", t ? "," : "", tab.name,
                           core::granularity_name(tab.granularity));
            for (std::size_t k = 0; k < tab.key.size(); ++k) {
                fmt::format_to(std::back_inserter(out), R"({}"{}")", k ? "," : "",
                               tab.key[k] == core::counter_key_time ? std::string("time")
                                                                    : m.dimensions[static_cast<std::size_t>(tab.key[k])].name);
            }
            out += "]}";
        }
        out += "]}";
    }
    fmt::format_to(std::back_inserter(out), R"(],"op_ids_keep_hours":{}}})", c.op_ids_keep.count());
    return out;
}

}  // namespace

void add_counter_routes(router& r, gateway& gw) {
    r.add(http::verb::get, "/v1/counters", core::role::read, [&gw](route_context& ctx) -> asio::awaitable<response> {
        co_return json_response(http::status::ok, render_catalog(catalog_of(gw)), ctx.req);
    });
    r.add(http::verb::post, "/v1/counters/{metric}", core::role::write,
          [&gw](route_context& ctx) { return async_post_increments(gw, ctx); });
    r.add(http::verb::get, "/v1/counters/{metric}/total", core::role::read,
          [&gw](route_context& ctx) { return async_get_read(gw, ctx, read_kind::total); });
    r.add(http::verb::get, "/v1/counters/{metric}/series", core::role::read,
          [&gw](route_context& ctx) { return async_get_read(gw, ctx, read_kind::series); });
    r.add(http::verb::get, "/v1/counters/{metric}/top", core::role::read,
          [&gw](route_context& ctx) { return async_get_read(gw, ctx, read_kind::top); });
}

}  // namespace cairn::net
