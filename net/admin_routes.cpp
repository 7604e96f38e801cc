#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/admin_routes.hpp"

#include "core/codec.hpp"
#include "indexing/index_registry.hpp"
#include "indexing/indexed_objects.hpp"
#include "journal/journal.hpp"
#include "net/detail/answers.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/body_fields.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/op_forms.hpp"
#include "net/edge_json.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "shards/edge_store.hpp"
#include "shards/gateways.hpp"
#include "shards/journal_await.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/replicas.hpp"
#include "shards/shard_set.hpp"

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using detail::answer;
using detail::body_fields;
using detail::op_json;
using detail::parse_edited_op;
using detail::refuse;
using detail::take;

constexpr std::size_t dead_page_limit_default = 100;
constexpr std::size_t dead_page_limit_max = 1000;
constexpr std::size_t dead_scan_max = 10000;       // dead letters one list request reads at most
constexpr std::size_t errors_limit_max = 10000;    // error tasks one request lists or reschedules at most
constexpr std::size_t set_page = 500;              // dead letters per journal commit of a set action
constexpr std::uint64_t shard_max = std::numeric_limits<std::uint32_t>::max();

constexpr std::string_view dead_list_params[] = {"shard", "model", "error", "older_than_s", "newer_than_s",
                                                 "limit", "cursor"};
constexpr std::string_view dead_drop_params[] = {"shard", "model", "error", "older_than_s", "newer_than_s", "all"};
constexpr std::string_view errors_params[] = {"shard", "limit"};
constexpr std::string_view no_params[] = {""};
constexpr std::string_view reinject_fields[] = {"shard", "seq", "all", "reset_attempts", "model", "error",
                                                "older_than_s", "newer_than_s"};
constexpr std::string_view retry_now_fields[] = {"shard", "seq", "all"};
constexpr std::string_view pause_fields[] = {"shard", "all"};

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

response not_found(const request& req, std::string_view detail) { return refuse(req, problems::not_found, detail); }

// A failed journal read or commit. The admin writes go through the same writer as client writes.
response journal_problem(const request& req, const core::error_code& ec) {
    if (ec == core::errc::journal_corrupt) {
        return problem(problems::journal_corrupt, "a journal record does not decode; see the gateway's log", std::nullopt, req.version(),
                       req.keep_alive());
    }
    auto res = problem(problems::journal_unavailable, fmt::format("the journal did not take the change: {}", ec.message()), std::nullopt,
                       req.version(), req.keep_alive());
    res.set(http::field::retry_after, "1");
    return res;
}

std::optional<core::op> decode(const std::string& bytes) {
    auto d = core::decode_op(std::span(bytes.data(), bytes.size()));
    if (!d) return std::nullopt;
    return std::move(d.value());
}

std::uint64_t age_s(std::uint64_t now_ms, std::uint64_t then_ms) { return now_ms > then_ms ? (now_ms - then_ms) / 1000 : 0; }

json task_summary(const gateway& gw, const journal::error_task& t, std::uint64_t now_ms) {
    json j{{"shard", t.shard},
           {"seq", t.seq},
           {"attempts", t.attempts},
           {"first_failed_ms", t.first_failed_ms},
           {"last_error", t.errors.empty() ? std::string() : t.errors.back()}};
    if (auto o = decode(t.op_bytes)) {
        j["op_id"] = std::to_string(o->op_id);
        j["op"] = op_json(gw, *o);
    } else {
        j["op"] = nullptr;
    }
    (void)now_ms;
    return j;
}

json dead_summary(const gateway& gw, const journal::dead_letter& d, std::uint64_t now_ms) {
    json j = task_summary(gw, d.task, now_ms);
    j["died_ms"] = d.died_ms;
    j["age_s"] = age_s(now_ms, d.died_ms);
    return j;
}

json dead_detail(const gateway& gw, const journal::dead_letter& d, std::uint64_t now_ms) {
    json j = dead_summary(gw, d, now_ms);
    j["errors"] = d.task.errors;
    if (auto o = decode(d.task.op_bytes)) j["ts"] = std::to_string(o->ts);
    return j;
}

json error_summary(const gateway& gw, const journal::error_task& t, std::uint64_t now_ms) {
    json j = task_summary(gw, t, now_ms);
    j["due_ms"] = t.due_ms;
    j["due_in_ms"] = t.due_ms > now_ms ? t.due_ms - now_ms : 0;
    j["errors_count"] = t.errors.size();
    return j;
}

// Which dead letters a list, re-injection or drop covers. Every set field must match.
struct dead_filter {
    std::optional<std::uint32_t> shard;
    std::optional<std::string> model;
    std::optional<std::string> error;  // a substring of any message of the error history
    std::optional<std::uint64_t> older_than_s;
    std::optional<std::uint64_t> newer_than_s;

    bool any() const { return shard || model || error || older_than_s || newer_than_s; }

    bool matches(const journal::dead_letter& d, std::uint64_t now_ms) const {
        if (shard && d.task.shard != *shard) return false;
        if (model) {
            auto o = decode(d.task.op_bytes);
            if (!o || core::model_name(o->kind()) != *model) return false;
        }
        if (error) {
            const bool found = std::any_of(d.task.errors.begin(), d.task.errors.end(),
                                           [&](const std::string& e) { return e.find(*error) != std::string::npos; });
            if (!found) return false;
        }
        const std::uint64_t age = age_s(now_ms, d.died_ms);
        if (older_than_s && age < *older_than_s) return false;
        if (newer_than_s && age > *newer_than_s) return false;
        return true;
    }
};

std::optional<input_error> check_model(const std::optional<std::string>& model) {
    if (model && !core::model_from_name(*model)) {
        return input_error{"model", "must be \"edge\", \"node\", \"entity\", \"cell\", \"counter\" or \"index\""};
    }
    return std::nullopt;
}

// Reads the filter from query parameters.
std::variant<dead_filter, input_error> filter_from_query(const route_context& ctx) {
    dead_filter f;
    if (auto s = ctx.query_param("shard")) {
        auto v = detail::parse_uint(*s, 0, shard_max);
        if (!v) return input_error{"shard", "must be a shard index"};
        f.shard = static_cast<std::uint32_t>(*v);
    }
    f.model = ctx.query_param("model");
    if (auto e = check_model(f.model)) return *e;
    f.error = ctx.query_param("error");
    for (auto [name, out] : {std::pair{"older_than_s", &f.older_than_s}, std::pair{"newer_than_s", &f.newer_than_s}}) {
        if (auto s = ctx.query_param(name)) {
            auto v = detail::parse_uint(*s, 0, std::numeric_limits<std::uint32_t>::max());
            if (!v) return input_error{name, "must be a number of seconds"};
            *out = *v;
        }
    }
    return f;
}

// What a set action covers: one (shard, seq), a filter, or everything.
struct target {
    std::optional<std::uint32_t> shard;
    std::optional<std::uint64_t> seq;
    bool all = false;
    dead_filter filter;
};


// Reads shard, seq, all and (with filters) model, error, older_than_s, newer_than_s from a body.
// The body must name what it acts on: seq (with shard), a filter, or "all": true.
std::variant<target, input_error> target_from_body(const body_fields& b, bool with_filters, std::size_t shard_count) {
    target t;
    std::optional<std::uint64_t> shard;
    std::optional<bool> all;
    if (auto e = take(b.uint("shard", shard_max), shard)) return *e;
    if (auto e = take(b.uint("seq", std::numeric_limits<std::uint64_t>::max()), t.seq)) return *e;
    if (auto e = take(b.boolean("all"), all)) return *e;
    if (shard && *shard >= shard_count) return input_error{"shard", fmt::format("must be below {}", shard_count)};
    if (shard) t.shard = static_cast<std::uint32_t>(*shard);
    t.all = all.value_or(false);
    if (with_filters) {
        t.filter.shard = t.shard;
        if (auto e = take(b.string("model"), t.filter.model)) return *e;
        if (auto e = check_model(t.filter.model)) return *e;
        if (auto e = take(b.string("error"), t.filter.error)) return *e;
        if (auto e = take(b.uint("older_than_s", UINT32_MAX), t.filter.older_than_s)) return *e;
        if (auto e = take(b.uint("newer_than_s", UINT32_MAX), t.filter.newer_than_s)) return *e;
    }
    if (t.seq && !t.shard) return input_error{"shard", "is required with seq"};
    if (!t.all && !t.shard && !t.seq && !t.filter.any()) {
        return input_error{"body", "must name what to act on: shard (and seq), a filter, or \"all\": true"};
    }
    if (t.all && (t.shard || t.seq || t.filter.any())) return input_error{"all", "cannot be combined with a shard, seq or filter"};
    return t;
}

std::optional<std::pair<std::uint32_t, std::uint64_t>> parse_key(const route_context& ctx, std::size_t shard_count) {
    auto shard = detail::parse_uint(ctx.params.get("shard").value_or(""), 0, shard_count == 0 ? 0 : shard_count - 1);
    auto seq = detail::parse_uint(ctx.params.get("seq").value_or(""), 1, std::numeric_limits<std::uint64_t>::max());
    if (!shard || !seq) return std::nullopt;
    return std::pair{static_cast<std::uint32_t>(*shard), *seq};
}

response bad_key(const request& req, std::size_t shard_count) {
    return detail::bad_field(req, "shard/seq",
                             fmt::format("must be a shard index below {} and a seq of at least 1", shard_count));
}

std::uint64_t now_ms() { return core::system_wall_clock_ms(); }

// ---- status --------------------------------------------------------------------------------

json render_status(gateway& gw) {
    const auto st = gw.journal.get_stats();
    const std::uint64_t now = now_ms();
    const bool healthy = gw.journal.healthy();
    const bool space_ok = st.map_bytes_max == 0 || st.map_bytes_used * 10 < st.map_bytes_max * 9;
    std::uint64_t min_applied = st.last_seq;
    json shards = json::array();
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        const shards::shard* w = &gw.shards.at(static_cast<core::shard_index>(i));
        const std::uint64_t applied = w->applied_seq();
        min_applied = std::min(min_applied, applied);
        auto queued = gw.journal.list_errors(static_cast<std::uint32_t>(i), std::nullopt, errors_limit_max);
        const auto minute = w->last_minute();
        json replicas = json::array();
        std::uint64_t replica_reads = 0;
        if (const auto* rs = w->replicas()) {
            for (const auto& r : rs->status()) {
                replicas.push_back(json{{"replica", r.name},
                                        {"serving", r.serving},
                                        {"lag_ms", r.lag_ms < 0 ? json(nullptr) : json(r.lag_ms)},
                                        {"probed_ms_ago", r.probed_ms_ago < 0 ? json(nullptr) : json(r.probed_ms_ago)}});
            }
            replica_reads = rs->reads();
        }
        shards.push_back(json{{"shard", i},
                              {"up", w->up()},
                              {"applied_seq", applied},
                              {"lag_ops", st.last_seq > applied ? st.last_seq - applied : 0},
                              {"paused", w->paused()},
                              {"error_queue", queued ? json(queued.value().size()) : json(nullptr)},
                              {"applied_last_minute", minute.ok},
                              {"failed_last_minute", minute.failed},
                              {"error_rate", minute.failed_fraction()},
                              {"replicas", std::move(replicas)},
                              {"replica_reads", replica_reads}});
    }
    json oldest = nullptr;
    if (min_applied < st.last_seq) {
        if (auto t = gw.journal.read_op_time_ms(min_applied + 1)) {
            oldest = json{{"seq", min_applied + 1}, {"appended_ms", t.value()},
                          {"age_ms", now > t.value() ? now - t.value() : 0}};
        }
    }
    return json{{"ready", healthy && space_ok},
                {"journal",
                 {{"healthy", healthy},
                  {"last_seq", st.last_seq},
                  {"ops_kept", st.ops_count},
                  {"map_bytes_used", st.map_bytes_used},
                  {"map_bytes_max", st.map_bytes_max},
                  {"map_use", st.map_bytes_max ? static_cast<double>(st.map_bytes_used) / static_cast<double>(st.map_bytes_max) : 0.0},
                  {"error_queue", st.error_count},
                  {"dead_letters", st.dead_count},
                  {"oldest_unapplied", oldest}}},
                {"shards", shards}};
}

// The gateways on these shards: the node id leases on shard 0 and every shard's applied marks. For
// each, what it acknowledged and the shards do not all hold yet (its last seq at its last renewal,
// this gateway's now, past the lowest of its marks): what a lost disk of that gateway would lose.
// null, with the reason in gateways_error, when a shard does not answer.
asio::awaitable<void> async_add_gateways(gateway& gw, json& status) {
    // A shard known to be down would hold the status for a connect timeout: say so instead.
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        if (gw.shards.at(static_cast<core::shard_index>(i)).known_down()) {
            status["gateways"] = nullptr;
            status["gateways_error"] = fmt::format("shard {} is down", i);
            co_return;
        }
    }
    const auto list = [](shards::mariadb_conn& c) { return shards::async_list_leases(c); };
    auto leases = co_await gw.shards.at(0).async_read(list);
    if (!leases) {
        status["gateways"] = nullptr;
        status["gateways_error"] = fmt::format("shard 0 did not answer: {}", leases.error().message());
        co_return;
    }
    std::vector<core::shard_index> all;
    for (std::size_t i = 0; i < gw.shards.size(); ++i) all.push_back(static_cast<core::shard_index>(i));
    // The tasks run on this strand: they share `marks` without locks.
    auto marks = std::make_shared<std::vector<std::map<std::uint64_t, std::uint64_t>>>(gw.shards.size());
    auto query = [marks](core::shard_index s, shards::mariadb_conn& c) -> asio::awaitable<core::result<void>> {
        auto m = co_await shards::async_read_applied_marks(c);
        if (!m) co_return m.error();
        for (const auto& [node, seq] : m.value()) (*marks)[s][node] = seq;
        co_return core::success();
    };
    if (auto ec = co_await gw.shards.async_read_each(all, query, detail::fan_out_deadline(gw.lim))) {
        status["gateways"] = nullptr;
        status["gateways_error"] = fmt::format("a shard did not answer: {}", ec.message());
        co_return;
    }
    json out = json::array();
    for (const auto& l : leases.value()) {
        const bool self = l.node_id == gw.journal.node_id() && l.journal_id == gw.journal.journal_id();
        std::uint64_t applied = std::numeric_limits<std::uint64_t>::max();
        for (const auto& per_shard : *marks) {
            const auto it = per_shard.find(l.node_id);
            applied = std::min(applied, it == per_shard.end() ? 0 : it->second);
        }
        const std::uint64_t last = self ? gw.journal.last_seq() : l.last_seq;
        out.push_back(json{{"node_id", l.node_id},
                           {"self", self},
                           {"holder", l.holder},
                           {"active", l.active},
                           {"released", l.released},
                           {"renewed_ms_ago", l.renewed_ago_ms},
                           {"last_seq", last},
                           {"applied_through", applied},
                           {"unapplied_ops", last > applied ? last - applied : 0}});
    }
    status["gateways"] = std::move(out);
}

// ---- dead letters --------------------------------------------------------------------------

response list_dead(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, dead_list_params)) return detail::bad_field(req, e->field, e->detail);
    auto fv = filter_from_query(ctx);
    if (auto* e = std::get_if<input_error>(&fv)) return detail::bad_field(req, e->field, e->detail);
    const auto& filter = std::get<dead_filter>(fv);
    std::size_t limit = dead_page_limit_default;
    if (auto s = ctx.query_param("limit")) {
        auto v = detail::parse_uint(*s, 1, dead_page_limit_max);
        if (!v) return detail::bad_field(req, "limit", fmt::format("must be an integer between 1 and {}", dead_page_limit_max));
        limit = *v;
    }
    std::uint32_t from_shard = filter.shard.value_or(0);
    std::uint64_t from_seq = 0;
    if (auto c = ctx.query_param("cursor")) {
        const auto dash = c->find('-');
        auto s = detail::parse_uint(c->substr(0, dash), 0, shard_max);
        auto q = dash == std::string::npos ? std::nullopt
                                           : detail::parse_uint(c->substr(dash + 1), 0, std::numeric_limits<std::uint64_t>::max());
        if (!s || !q) return detail::bad_field(req, "cursor", "must be a next_cursor returned by this route, unchanged");
        from_shard = static_cast<std::uint32_t>(*s);
        from_seq = *q;
    }
    const std::uint64_t now = now_ms();
    json items = json::array();
    std::size_t scanned = 0;
    std::optional<std::pair<std::uint32_t, std::uint64_t>> next;
    bool done = false;
    while (!done && items.size() < limit && scanned < dead_scan_max) {
        auto page = gw.journal.list_dead_from(from_shard, from_seq, std::min(set_page, dead_scan_max - scanned));
        if (!page) return journal_problem(req, page.error());
        if (page.value().empty()) break;
        for (const auto& d : page.value()) {
            if (filter.shard && d.task.shard != *filter.shard) {
                done = true;
                break;
            }
            ++scanned;
            if (items.size() == limit) {
                next = std::pair{d.task.shard, d.task.seq};
                done = true;
                break;
            }
            if (filter.matches(d, now)) items.push_back(dead_summary(gw, d, now));
        }
        const auto& last = page.value().back().task;
        from_shard = last.shard;
        from_seq = last.seq + 1;
        if (!done && scanned >= dead_scan_max) next = std::pair{from_shard, from_seq};
    }
    if (!done && !next && items.size() == limit) {
        // The page filled exactly at the end of what was read: is there anything after it?
        auto more = gw.journal.list_dead_from(from_shard, from_seq, 1);
        if (!more) return journal_problem(req, more.error());
        if (!more.value().empty() && (!filter.shard || more.value().front().task.shard == *filter.shard)) {
            next = std::pair{from_shard, from_seq};
        }
    }
    json out{{"dead", items}, {"scanned", scanned}};
    out["next_cursor"] = next ? json(fmt::format("{}-{}", next->first, next->second)) : json(nullptr);
    return answer(req, out);
}

response show_dead(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto key = parse_key(ctx, gw.shards.size());
    if (!key) return bad_key(req, gw.shards.size());
    auto d = gw.journal.get_dead(key->first, key->second);
    if (!d && d.error() == core::errc::not_found) {
        return not_found(req, fmt::format("no dead letter of seq {} on shard {}", key->second, key->first));
    }
    if (!d) return journal_problem(req, d.error());
    return answer(req, dead_detail(gw, d.value(), now_ms()));
}

asio::awaitable<response> async_edit_dead(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto key = parse_key(ctx, gw.shards.size());
    if (!key) co_return bad_key(req, gw.shards.size());
    auto d = gw.journal.get_dead(key->first, key->second);
    if (!d && d.error() == core::errc::not_found) {
        co_return not_found(req, fmt::format("no dead letter of seq {} on shard {}", key->second, key->first));
    }
    if (!d) co_return journal_problem(req, d.error());
    // Held until the edited op is journaled: a new index's back-fill waits for writes that
    // computed their index entries without it (index_registry::async_write_barrier).
    indexing::index_registry::write_ticket ticket;
    if (gw.indexes) ticket = gw.indexes->enter_write();
    auto parsed = parse_edited_op(gw, req.body());
    if (auto* e = std::get_if<input_error>(&parsed)) {
        co_return detail::bad_field(req, e->field, e->detail);
    }
    core::op edited = std::move(std::get<core::op>(parsed));
    const auto old = decode(d.value().task.op_bytes);
    const auto owners = shards::shards_of(edited, gw.routing.load()->read_map());
    if (owners.size() != 1 || owners.front() != key->first) {
        // The edited op has rows on other shards too (the other half of an edge), or none on this
        // one. Re-applied on this shard alone it would leave the halves apart (the other shard applied
        // the old op), so it is journaled again as a new write, applied on every shard it touches,
        // and the dead letter goes. If dropping the letter fails (a journal failure, which is sticky),
        // the letter stays beside the new write: drop it after the restart.
        edited.op_id = 0;  // a new write: the journal gives it its op id
        std::vector<core::op> ops(1, edited);  // not a braced list inside co_await: g++ 12 fails on it
        auto appended = co_await shards::async_append(gw.journal, std::move(ops), "");
        if (!appended) co_return journal_problem(req, appended.error());
        edited.op_id = appended.value().op_ids.front();
        journal::apply_outcome outcome;
        outcome.shard = key->first;
        outcome.remove_dead.push_back(d.value());
        outcome.put_edits.push_back({key->first, key->second, now_ms(), appended.value().last_seq, core::encode_op(edited)});
        auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
        if (!committed) co_return journal_problem(req, committed.error());
        spdlog::info("admin: dead letter shard {} seq {} edited and journaled again as seq {} (rows on shards {}): {} -> {}",
                     key->first, key->second, appended.value().last_seq, fmt::join(owners, ","),
                     old ? dump(op_json(gw, *old)) : std::string("(undecodable)"), dump(op_json(gw, edited)));
        co_return answer(req, json{{"routed", "new_write"},
                                   {"seq", appended.value().last_seq},
                                   {"op_id", std::to_string(edited.op_id)},
                                   {"shards", owners},
                                   {"op", op_json(gw, edited)},
                                   {"replaced", json{{"shard", key->first}, {"seq", key->second}}}});
    }
    // Its rows all live on this shard: edited in place, keeping its identity; re-inject it next.
    edited.op_id = old ? old->op_id : core::make_op_id(gw.journal.node_id(), key->second);
    journal::dead_letter updated = d.value();
    updated.task.op_bytes = core::encode_op(edited);
    journal::apply_outcome outcome;
    outcome.shard = key->first;
    outcome.remove_dead.push_back(d.value());
    outcome.put_dead.push_back(updated);
    outcome.put_edits.push_back({key->first, key->second, now_ms(), 0, updated.task.op_bytes});
    auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
    if (!committed) co_return journal_problem(req, committed.error());
    spdlog::info("admin: dead letter shard {} seq {} edited: {} -> {}", key->first, key->second,
                 old ? dump(op_json(gw, *old)) : std::string("(undecodable)"), dump(op_json(gw, edited)));
    auto out = dead_detail(gw, updated, now_ms());
    out["routed"] = "in_place";
    co_return answer(req, out);
}

// Collects the dead letters a target covers, by shard, scanning in pages.
core::result<std::map<std::uint32_t, std::vector<journal::dead_letter>>> collect_dead(gateway& gw, const target& t) {
    std::map<std::uint32_t, std::vector<journal::dead_letter>> out;
    if (t.seq) {
        auto d = gw.journal.get_dead(*t.shard, *t.seq);
        if (!d) return d.error();
        out[*t.shard].push_back(std::move(d.value()));
        return out;
    }
    const std::uint64_t now = now_ms();
    std::uint32_t from_shard = t.filter.shard.value_or(0);
    std::uint64_t from_seq = 0;
    for (;;) {
        auto page = gw.journal.list_dead_from(from_shard, from_seq, set_page);
        if (!page) return page.error();
        if (page.value().empty()) break;
        for (auto& d : page.value()) {
            if (t.filter.shard && d.task.shard != *t.filter.shard) return out;
            if (t.filter.matches(d, now)) out[d.task.shard].push_back(d);
        }
        from_shard = page.value().back().task.shard;
        from_seq = page.value().back().task.seq + 1;
    }
    return out;
}

// A dead entity or cell op carries the rows of the indexes that existed when it was written, and
// an index created since could not back-fill it (it was not applied). Re-injected as it is, it
// would apply without those rows. So such a letter is journaled again with its rows recomputed,
// keeping its op id and ts (applying it where it had applied changes nothing), applied on every
// shard it touches (the new rows may live on other shards than the letter's), and the letter goes,
// recorded as replaced (cairn trace shows the new seq). Returns the letters it took, by shard,
// with the seq each op was journaled at again.
struct journaled_again {
    std::map<std::uint32_t, std::vector<std::pair<journal::dead_letter, std::uint64_t>>> letters;
    std::size_t ops = 0;
};

asio::awaitable<core::result<journaled_again>> async_journal_reindexed(
    gateway& gw, std::map<std::uint32_t, std::vector<journal::dead_letter>>& found) {
    journaled_again out;
    if (!gw.indexes) co_return out;
    std::vector<core::op> ops;
    std::map<std::uint64_t, std::size_t> index_of;  // op id -> its place in ops (one new write per op)
    std::map<std::uint32_t, std::vector<std::pair<journal::dead_letter, std::size_t>>> taken;
    for (auto& [shard, letters] : found) {
        std::erase_if(letters, [&, s = shard](const journal::dead_letter& d) {
            auto o = decode(d.task.op_bytes);
            if (!o) return false;
            auto at = index_of.find(o->op_id);
            if (at == index_of.end()) {
                if (!indexing::recompute_entries(*o, *gw.indexes)) return false;
                at = index_of.emplace(o->op_id, ops.size()).first;
                ops.push_back(std::move(*o));
            }
            taken[s].emplace_back(d, at->second);
            return true;
        });
    }
    if (ops.empty()) co_return out;
    std::vector<std::uint64_t> seq_of(ops.size());
    std::vector<std::string> bytes_of(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) bytes_of[i] = core::encode_op(ops[i]);
    for (std::size_t done = 0; done < ops.size();) {
        const std::size_t n = std::min(set_page, ops.size() - done);
        std::vector<core::op> chunk(ops.begin() + static_cast<std::ptrdiff_t>(done),
                                    ops.begin() + static_cast<std::ptrdiff_t>(done + n));
        auto appended = co_await shards::async_append(gw.journal, std::move(chunk), std::string());
        if (!appended) co_return appended.error();
        for (std::size_t k = 0; k < n; ++k) seq_of[done + k] = appended.value().first_seq + k;
        done += n;
    }
    out.ops = ops.size();
    const std::uint64_t now = now_ms();
    for (auto& [shard, letters] : taken) {
        // Journaled: if dropping a letter fails now (a journal failure, which is sticky), it stays
        // beside its new write and a later re-inject applies it once more, which changes nothing.
        for (std::size_t i = 0; i < letters.size(); i += set_page) {
            journal::apply_outcome outcome;
            outcome.shard = shard;
            for (std::size_t k = i; k < std::min(letters.size(), i + set_page); ++k) {
                const auto& [d, at] = letters[k];
                outcome.remove_dead.push_back(d);
                outcome.put_edits.push_back({shard, d.task.seq, now, seq_of[at], bytes_of[at]});
                out.letters[shard].emplace_back(d, seq_of[at]);
            }
            auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
            if (!committed) co_return committed.error();
        }
    }
    co_return out;
}

asio::awaitable<response> async_reinject(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    body_fields b;
    if (auto e = b.parse(req.body(), reinject_fields)) co_return detail::bad_field(req, e->field, e->detail);
    auto tv = target_from_body(b, true, gw.shards.size());
    if (auto* e = std::get_if<input_error>(&tv)) co_return detail::bad_field(req, e->field, e->detail);
    const target t = std::get<target>(tv);
    std::optional<bool> reset;
    if (auto e = take(b.boolean("reset_attempts"), reset)) co_return detail::bad_field(req, e->field, e->detail);
    const bool reset_attempts = reset.value_or(true);
    // Held until the letters' ops are journaled again: a new index's back-fill waits for writes
    // that computed their index rows without it (index_registry::async_write_barrier).
    indexing::index_registry::write_ticket ticket;
    if (gw.indexes) ticket = gw.indexes->enter_write();
    auto found = collect_dead(gw, t);
    if (!found && found.error() == core::errc::not_found) {
        co_return not_found(req, fmt::format("no dead letter of seq {} on shard {}", t.seq.value_or(0), t.shard.value_or(0)));
    }
    if (!found) co_return journal_problem(req, found.error());
    auto again = co_await async_journal_reindexed(gw, found.value());
    if (!again) co_return journal_problem(req, again.error());
    ticket = {};
    std::size_t count = 0;
    json seqs = json::array();
    json replaced = json::array();
    for (const auto& [shard, letters] : again.value().letters) {
        for (const auto& [d, new_seq] : letters) {
            ++count;
            if (replaced.size() < dead_page_limit_max) {
                replaced.push_back(json{{"shard", shard}, {"seq", d.task.seq}, {"new_seq", new_seq}});
            }
        }
    }
    for (auto& [shard, letters] : found.value()) {
        for (std::size_t i = 0; i < letters.size(); i += set_page) {
            const std::size_t end = std::min(letters.size(), i + set_page);
            auto outcome = journal::reinject_outcome(
                shard, std::span(letters).subspan(i, end - i), now_ms(), reset_attempts);
            const std::size_t n = outcome.put_errors.size();
            auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
            if (!committed) co_return journal_problem(req, committed.error());
            count += n;
            for (std::size_t k = i; k < i + n && seqs.size() < dead_page_limit_max; ++k) {
                seqs.push_back(json{{"shard", shard}, {"seq", letters[k].task.seq}});
            }
        }
    }
    spdlog::info("admin: {} dead letters re-injected (attempts {}), {} of them journaled again as {} new writes "
                 "with the rows of indexes created since",
                 count, reset_attempts ? "restart" : "kept", replaced.size(), again.value().ops);
    co_return answer(req, json{{"reinjected", count},
                               {"attempts_reset", reset_attempts},
                               {"letters", seqs},
                               {"journaled_again", replaced}});
}

asio::awaitable<response> async_drop(gateway& gw, route_context& ctx, std::optional<target> one) {
    const auto& req = ctx.req;
    target t;
    if (one) {
        t = *one;
    } else {
        if (auto e = detail::unknown_query_param(ctx.query, dead_drop_params)) {
            co_return detail::bad_field(req, e->field, e->detail);
        }
        auto fv = filter_from_query(ctx);
        if (auto* e = std::get_if<input_error>(&fv)) co_return detail::bad_field(req, e->field, e->detail);
        t.filter = std::get<dead_filter>(fv);
        const auto all = ctx.query_param("all");
        if (all && *all != "true") co_return detail::bad_field(req, "all", "must be \"true\"");
        t.all = all.has_value();
        if (t.filter.shard && *t.filter.shard >= gw.shards.size()) {
            co_return detail::bad_field(req, "shard", fmt::format("must be below {}", gw.shards.size()));
        }
        if (!t.all && !t.filter.any()) {
            co_return detail::bad_field(req, "all", "a drop of many dead letters needs a filter or all=true");
        }
        if (t.all && t.filter.any()) co_return detail::bad_field(req, "all", "cannot be combined with a filter");
    }
    auto found = collect_dead(gw, t);
    if (!found && found.error() == core::errc::not_found) {
        co_return not_found(req, fmt::format("no dead letter of seq {} on shard {}", t.seq.value_or(0), t.shard.value_or(0)));
    }
    if (!found) co_return journal_problem(req, found.error());
    std::size_t count = 0;
    for (auto& [shard, letters] : found.value()) {
        for (std::size_t i = 0; i < letters.size(); i += set_page) {
            journal::apply_outcome outcome;
            outcome.shard = shard;
            const auto end = std::min(letters.size(), i + set_page);
            outcome.remove_dead.assign(letters.begin() + static_cast<std::ptrdiff_t>(i),
                                       letters.begin() + static_cast<std::ptrdiff_t>(end));
            auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
            if (!committed) co_return journal_problem(req, committed.error());
            count += end - i;
        }
    }
    spdlog::warn("admin: {} dead letters dropped", count);
    co_return answer(req, json{{"dropped", count}});
}

// ---- error queue ---------------------------------------------------------------------------

response list_errors(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, errors_params)) return detail::bad_field(req, e->field, e->detail);
    std::optional<std::uint32_t> shard;
    if (auto s = ctx.query_param("shard")) {
        auto v = detail::parse_uint(*s, 0, (gw.shards.size() == 0) ? 0 : gw.shards.size() - 1);
        if (!v) return detail::bad_field(req, "shard", fmt::format("must be a shard index below {}", gw.shards.size()));
        shard = static_cast<std::uint32_t>(*v);
    }
    std::size_t limit = dead_page_limit_default;
    if (auto s = ctx.query_param("limit")) {
        auto v = detail::parse_uint(*s, 1, dead_page_limit_max);
        if (!v) return detail::bad_field(req, "limit", fmt::format("must be an integer between 1 and {}", dead_page_limit_max));
        limit = *v;
    }
    auto tasks = gw.journal.list_errors(shard, std::nullopt, limit + 1);
    if (!tasks) return journal_problem(req, tasks.error());
    const std::uint64_t now = now_ms();
    json items = json::array();
    for (std::size_t i = 0; i < std::min(limit, tasks.value().size()); ++i) items.push_back(error_summary(gw, tasks.value()[i], now));
    return answer(req, json{{"errors", items}, {"truncated", tasks.value().size() > limit},
                            {"total", gw.journal.get_stats().error_count}});
}

asio::awaitable<response> async_retry_now(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    body_fields b;
    if (auto e = b.parse(req.body(), retry_now_fields)) co_return detail::bad_field(req, e->field, e->detail);
    auto tv = target_from_body(b, false, gw.shards.size());
    if (auto* e = std::get_if<input_error>(&tv)) co_return detail::bad_field(req, e->field, e->detail);
    const target t = std::get<target>(tv);
    auto tasks = gw.journal.list_errors(t.shard, t.seq, errors_limit_max);
    if (!tasks) co_return journal_problem(req, tasks.error());
    const std::uint64_t now = now_ms();
    std::map<std::uint32_t, journal::apply_outcome> by_shard;
    std::size_t count = 0;
    for (auto& task : tasks.value()) {
        // Tasks already due are the worker's: it may be retrying them right now.
        if (task.due_ms <= now) continue;
        auto& o = by_shard[task.shard];
        o.shard = task.shard;
        journal::error_task moved = task;
        moved.due_ms = now;
        o.remove_errors.push_back(std::move(task));
        o.put_errors.push_back(std::move(moved));
        ++count;
    }
    for (auto& [shard, outcome] : by_shard) {
        auto committed = co_await shards::async_commit_outcome(gw.journal, std::move(outcome));
        if (!committed) co_return journal_problem(req, committed.error());
    }
    co_return answer(req, json{{"rescheduled", count}, {"due_already", tasks.value().size() - count}});
}

// ---- apply pause / resume ------------------------------------------------------------------

response set_paused(gateway& gw, route_context& ctx, bool paused) {
    const auto& req = ctx.req;
    body_fields b;
    if (auto e = b.parse(req.body(), pause_fields)) return detail::bad_field(req, e->field, e->detail);
    std::optional<std::uint64_t> shard;
    std::optional<bool> all;
    if (auto e = take(b.uint("shard", shard_max), shard)) return detail::bad_field(req, e->field, e->detail);
    if (auto e = take(b.boolean("all"), all)) return detail::bad_field(req, e->field, e->detail);
    if (shard && *shard >= gw.shards.size()) {
        return detail::bad_field(req, "shard", fmt::format("must be below {}", gw.shards.size()));
    }
    if (shard.has_value() == all.value_or(false)) {
        return detail::bad_field(req, "body", "must name either a shard or \"all\": true");
    }
    json out = json::array();
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        if (!shard || *shard == i) {
            if (gw.shards.at(static_cast<core::shard_index>(i)).paused() != paused) {
                spdlog::warn("admin: applying on shard {} {}", i, paused ? "paused" : "resumed");
            }
            gw.shards.at(static_cast<core::shard_index>(i)).set_paused(paused);
        }
        out.push_back(json{{"shard", i}, {"paused", gw.shards.at(static_cast<core::shard_index>(i)).paused()}, {"applied_seq", gw.shards.at(static_cast<core::shard_index>(i)).applied_seq()}});
    }
    return answer(req, json{{"shards", out}});
}

// ---- trace ---------------------------------------------------------------------------------

response trace(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    const std::uint64_t last = gw.journal.last_seq();
    auto seq = detail::parse_uint(ctx.params.get("seq").value_or(""), 1, std::numeric_limits<std::uint64_t>::max());
    if (!seq) return detail::bad_field(req, "seq", "must be a journal seq (an integer of at least 1)");
    if (*seq > last) return not_found(req, fmt::format("no write has seq {} yet (the last is {})", *seq, last));
    const std::uint64_t now = now_ms();
    std::optional<core::op> op;
    json out{{"seq", *seq}, {"last_seq", last}};
    if (auto bytes = gw.journal.read_op_bytes(*seq)) {
        op = decode(bytes.value());
        out["in_journal"] = true;
        if (auto t = gw.journal.read_op_time_ms(*seq)) out["appended_ms"] = t.value();
    } else if (bytes.error() == core::errc::not_found) {
        out["in_journal"] = false;  // retired after every shard applied it
    } else {
        return journal_problem(req, bytes.error());
    }
    auto errors = gw.journal.list_errors(std::nullopt, *seq, gw.shards.size() * 4 + 4);
    if (!errors) return journal_problem(req, errors.error());
    std::set<core::shard_index> involved;
    // The op a retry applies is the one in the error queue or the dead letter, which an operator may
    // have edited: show that one, and the journaled one beside it when they differ.
    std::optional<core::op> pending;
    for (const auto& t : errors.value()) {
        if (!pending) pending = decode(t.op_bytes);
    }
    std::vector<std::optional<journal::dead_letter>> dead(gw.shards.size());
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        auto d = gw.journal.get_dead(static_cast<std::uint32_t>(i), *seq);
        if (d) {
            if (!pending) pending = decode(d.value().task.op_bytes);
            dead[i] = std::move(d.value());
        } else if (d.error() != core::errc::not_found) {
            return journal_problem(req, d.error());
        }
    }
    // Edits of this seq's op (journal::op_edit): in place, the edited op is what a shard applied once
    // the letter left the queues; journaled again, the seq was replaced on that shard by a new write.
    std::vector<std::optional<journal::op_edit>> edits(gw.shards.size());
    std::optional<std::uint64_t> replaced_by;
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        auto e = gw.journal.get_edit(static_cast<std::uint32_t>(i), *seq);
        if (e) {
            if (e.value().new_seq != 0) {
                replaced_by = e.value().new_seq;
            } else if (!pending) {
                pending = decode(e.value().op_bytes);
            }
            edits[i] = std::move(e.value());
        } else if (e.error() != core::errc::not_found) {
            return journal_problem(req, e.error());
        }
    }
    if (pending) {
        if (op && !(*op == *pending)) out["journaled_op"] = op_json(gw, *op);
        op = std::move(pending);
    }
    if (op) {
        for (const auto s : shards::shards_of(*op, gw.routing.load()->read_map())) involved.insert(s);
        out["op"] = op_json(gw, *op);
        out["op_id"] = std::to_string(op->op_id);
        out["ts"] = std::to_string(op->ts);
    } else {
        out["op"] = nullptr;
    }
    bool any_dead = false;
    bool any_error = false;
    bool all_applied = true;
    json shards = json::array();
    for (std::size_t i = 0; i < gw.shards.size(); ++i) {
        const std::uint64_t cursor = gw.journal.cursor(static_cast<std::uint32_t>(i));
        json s{{"shard", i}, {"cursor", cursor}};
        const journal::error_task* queued = nullptr;
        for (const auto& t : errors.value()) {
            if (t.shard == i) queued = &t;
        }
        if (edits[i]) {
            s["edited_ms"] = edits[i]->edited_ms;
            if (edits[i]->new_seq != 0) s["replaced_by"] = edits[i]->new_seq;
        }
        if (dead[i]) {
            s["state"] = "dead";
            s["attempts"] = dead[i]->task.attempts;
            s["last_error"] = dead[i]->task.errors.empty() ? std::string() : dead[i]->task.errors.back();
            s["died_ms"] = dead[i]->died_ms;
            any_dead = true;
        } else if (queued) {
            s["state"] = "error_queue";
            s["attempts"] = queued->attempts;
            s["last_error"] = queued->errors.empty() ? std::string() : queued->errors.back();
            s["due_ms"] = queued->due_ms;
            s["due_in_ms"] = queued->due_ms > now ? queued->due_ms - now : 0;
            any_error = true;
        } else if (edits[i] && edits[i]->new_seq != 0) {
            s["state"] = "replaced";  // its op was edited and journaled again as replaced_by
        } else if (op && !involved.contains(static_cast<core::shard_index>(i))) {
            s["state"] = "not_involved";
        } else if (cursor >= *seq) {
            s["state"] = "applied";
        } else {
            s["state"] = "journaled";
            all_applied = false;
        }
        shards.push_back(std::move(s));
    }
    out["shards"] = shards;
    out["state"] = any_dead ? "dead" : any_error ? "error_queue" : replaced_by ? "replaced" : all_applied ? "applied" : "journaled";
    if (replaced_by) out["replaced_by"] = *replaced_by;
    return answer(req, out);
}

}  // namespace

void add_admin_routes(router& r, gateway& gw) {
    // Looking is for every reader (the dashboard of a read token shows everything); acting is admin's.
    const auto admin = core::role::admin;
    const auto look = core::role::read;
    r.add(http::verb::get, "/v1/admin/status", look, [&gw](route_context& ctx) -> asio::awaitable<response> {
        if (auto e = detail::unknown_query_param(ctx.query, no_params)) co_return detail::bad_field(ctx.req, e->field, e->detail);
        json status = render_status(gw);
        co_await async_add_gateways(gw, status);
        co_return answer(ctx.req, status);
    });
    r.add(http::verb::get, "/v1/admin/dead", look,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return list_dead(gw, ctx); });
    r.add(http::verb::delete_, "/v1/admin/dead", admin,
          [&gw](route_context& ctx) { return async_drop(gw, ctx, std::nullopt); });
    r.add(http::verb::get, "/v1/admin/dead/{shard}/{seq}", look,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return show_dead(gw, ctx); });
    r.add(http::verb::delete_, "/v1/admin/dead/{shard}/{seq}", admin, [&gw](route_context& ctx) -> asio::awaitable<response> {
        auto key = parse_key(ctx, gw.shards.size());
        if (!key) co_return bad_key(ctx.req, gw.shards.size());
        target t;
        t.shard = key->first;
        t.seq = key->second;
        auto res = co_await async_drop(gw, ctx, t);
        co_return res;
    });
    r.add(http::verb::put, "/v1/admin/dead/{shard}/{seq}/op", admin,
          [&gw](route_context& ctx) { return async_edit_dead(gw, ctx); });
    r.add(http::verb::post, "/v1/admin/dead/reinject", admin,
          [&gw](route_context& ctx) { return async_reinject(gw, ctx); });
    r.add(http::verb::get, "/v1/admin/errors", look,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return list_errors(gw, ctx); });
    r.add(http::verb::post, "/v1/admin/errors/retry-now", admin,
          [&gw](route_context& ctx) { return async_retry_now(gw, ctx); });
    r.add(http::verb::post, "/v1/admin/apply/pause", admin,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return set_paused(gw, ctx, true); });
    r.add(http::verb::post, "/v1/admin/apply/resume", admin,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return set_paused(gw, ctx, false); });
    r.add(http::verb::get, "/v1/admin/trace/{seq}", look,
          [&gw](route_context& ctx) -> asio::awaitable<response> { co_return trace(gw, ctx); });
}

}  // namespace cairn::net
