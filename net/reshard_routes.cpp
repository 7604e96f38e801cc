#include "net/reshard_routes.hpp"

#include "core/config.hpp"
#include "core/hlc.hpp"
#include "net/detail/answers.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/body_fields.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "shards/gateways.hpp"
#include "shards/map_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/range_copy.hpp"
#include "shards/shard_identity.hpp"
#include "shards/shard_set.hpp"
#include "shards/split_routes.hpp"

#include <boost/asio/this_coro.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using detail::answer;
using detail::body_fields;
using detail::refuse;
using detail::take;

constexpr std::string_view split_fields[] = {"shard", "to"};
constexpr std::string_view no_fields[] = {""};

response shards_problem(const request& req, std::string_view what, const core::error_code& ec) {
    return refuse(req, problems::shard_unavailable, fmt::format("{}: {}", what, ec.message()));
}

// What shard 0 says about the map: the versions, the live gateways, and the split that has not ended
// (planned included) with each gateway's part in it and the driver's progress.
struct shard0_state {
    std::uint32_t base_count = 0;
    std::vector<shards::stored_map> maps;
    std::vector<shards::lease_row> leases;
    std::optional<shards::stored_map> open;  // the newest split that has not ended
    std::vector<shards::adoption> adopted;
    std::optional<shards::split_progress> progress;
};

asio::awaitable<core::result<shard0_state>> async_read_shard0(gateway& gw) {
    shard0_state st;
    const auto query = [&st](shards::mariadb_conn& c) -> asio::awaitable<core::result<void>> {
        auto id = co_await shards::async_read_shard_identity(c);
        if (!id) co_return id.error();
        if (!id.value()) co_return core::errc::shard_rejected;
        st.base_count = id.value()->count;
        auto maps = co_await shards::async_read_maps(c);
        if (!maps) co_return maps.error();
        st.maps = std::move(maps).value();
        auto leases = co_await shards::async_list_leases(c);
        if (!leases) co_return leases.error();
        st.leases = std::move(leases).value();
        for (const auto& m : st.maps) {
            if (!shards::split_ended(m.state)) st.open = m;
        }
        if (st.open) {
            auto adopted = co_await shards::async_adoptions(c, st.open->version);
            if (!adopted) co_return adopted.error();
            st.adopted = std::move(adopted).value();
            auto progress = co_await shards::async_read_progress(c, st.open->version);
            if (!progress) co_return progress.error();
            st.progress = std::move(progress).value();
        }
        co_return core::success();
    };
    if (auto r = co_await gw.shards.at(0).async_read(query); !r) co_return r.error();
    co_return st;
}

json ranges_json(const core::shard_map& map) {
    json out = json::array();
    for (std::uint32_t s = 0; s < map.size(); ++s) {
        const auto r = map.range_of(s);
        out.push_back({{"shard", s}, {"first", r.first}, {"last", r.last}});
    }
    return out;
}

// A split request's checks, shared by plan and split: what it would do, or the answer that refuses it.
struct checked_split {
    shard0_state st;
    std::uint32_t shard = 0;
    std::uint32_t new_shard = 0;
    std::string to;
    std::uint32_t version_in_force = 1;
    core::shard_map before = core::shard_map::equal_ranges(1);
    core::shard_map after = core::shard_map::equal_ranges(1);
};

asio::awaitable<std::variant<checked_split, response>> async_check_split(gateway& gw, const request& req) {
    body_fields b;
    if (auto e = b.parse(req.body(), split_fields)) co_return detail::bad_field(req, e->field, e->detail);
    std::optional<std::uint64_t> shard;
    std::optional<std::string> to;
    if (auto e = take(b.uint("shard", core::shard_map::shards_max), shard)) co_return detail::bad_field(req, e->field, e->detail);
    if (auto e = take(b.string("to"), to)) co_return detail::bad_field(req, e->field, e->detail);
    if (!shard) co_return detail::bad_field(req, "shard", "is required: the shard whose range splits");
    if (!to || to->empty()) co_return detail::bad_field(req, "to", "is required: the new shard's host:port, as [[shards]] lists it");
    auto read = co_await async_read_shard0(gw);
    if (!read) co_return shards_problem(req, "reading the map on shard 0", read.error());
    checked_split c;
    c.st = std::move(read).value();
    if (c.st.open) {
        co_return refuse(req, problems::split_running,
                         fmt::format("map version {} splits shard {} ({}): one split at a time; see GET /v1/admin/reshard",
                                     c.st.open->version, c.st.open->split_shard, shards::split_state_name(c.st.open->state)));
    }
    c.before = shards::map_in_force(c.st.maps, c.st.base_count, &c.version_in_force);
    if (*shard >= c.before.size()) {
        co_return detail::bad_field(req, "shard", fmt::format("must be a shard of the map in force (0..{})", c.before.size() - 1));
    }
    c.shard = static_cast<std::uint32_t>(*shard);
    auto after = c.before.split(c.shard);
    if (!after) co_return detail::bad_field(req, "shard", "cannot split further (a range of one hash, or the map has the most shards)");
    c.after = std::move(after).value();
    c.new_shard = c.before.size();
    c.to = *to;
    const auto& listed = gw.cfg->shards;
    if (listed.size() <= c.new_shard) {
        co_return refuse(req, problems::split_not_ready,
                         fmt::format("the new shard would be shard {}, and this gateway's [[shards]] lists {} shards: add {} as "
                                     "shard {} to the config of every gateway and restart them first",
                                     c.new_shard, listed.size(), c.to, c.new_shard),
                         "to");
    }
    if (gw.shards.address(c.new_shard) != c.to) {
        co_return refuse(req, problems::split_not_ready,
                         fmt::format("this gateway lists shard {} at {}, not {}", c.new_shard, gw.shards.address(c.new_shard), c.to),
                         "to");
    }
    co_return c;
}

// The rows of the moved half on both sides, per table: the plan's figures, and the new shard's
// emptiness (rows there before the copy would outlive it: a failed split's copy, another deployment).
struct half_counts {
    std::vector<shards::range_table_diff> tables;
    std::set<std::string, std::less<>> whole;  // tables copied whole (on every shard; cleaning keeps them)
    std::uint64_t on_from = 0;  // every table's rows on the old owner (whole tables: all their rows)
    std::uint64_t on_to = 0;    // the new shard's rows of the half, whole tables left out
};

// Connects to both shards (each checked against its identity row) and reads the copy plan of the
// source. why: the source's own words when the plan cannot be read.
asio::awaitable<core::result<std::vector<shards::copy_group>>> async_open_pair(gateway& gw, shards::mariadb_conn& source,
                                                                              std::uint32_t from, shards::mariadb_conn& target,
                                                                              std::uint32_t to, std::string& why) {
    const auto count = static_cast<std::uint32_t>(gw.shards.size());
    if (auto r = co_await shards::async_connect_checked(source, from, count); !r) co_return r.error();
    if (auto r = co_await shards::async_connect_checked(target, to, count); !r) co_return r.error();
    auto plan = co_await shards::async_plan_range_copy(source, gw.cfg->counters, gw.cfg->cells);
    if (!plan) why = source.last_error();
    co_return plan;
}

// With marks, each side's applied marks tag its tables (verify: "applying" rather than "differs" while
// the two shards have not applied the same ops).
// target_only: the new shard alone (both sides read it), for the emptiness check of a split, which must
// answer at once: counting the old owner's half is a scan of its tables (plan does it).
asio::awaitable<core::result<half_counts>> async_count_half_once(gateway& gw, std::uint32_t from, std::uint32_t to,
                                                                 core::hash_range range, bool without_counters, bool marks,
                                                                 bool target_only, std::string& why) {
    const auto ex = co_await asio::this_coro::executor;
    if (target_only) from = to;
    shards::mariadb_conn source(ex, shards::conn_params_of(*gw.cfg, from));
    shards::mariadb_conn target(ex, shards::conn_params_of(*gw.cfg, to));
    auto plan = co_await async_open_pair(gw, source, from, target, to, why);
    if (!plan) co_return plan.error();
    if (without_counters) std::erase_if(plan.value(), [](const shards::copy_group& g) { return g.name == "counters"; });
    half_counts h;
    for (const auto& g : plan.value()) {
        for (const auto& t : g.tables) {
            if (t.route == shards::route_by::whole) h.whole.insert(t.name);
        }
    }
    shards::range_copy_options o;
    o.chunk_rows = 5000;
    auto diff = co_await shards::async_diff_range(source, target, plan.value(), range, o,
                                                  marks ? "SELECT node_id, seq FROM applied_marks ORDER BY node_id" : "");
    if (!diff) why = !source.last_error().empty() ? source.last_error() : target.last_error();
    source.close();
    target.close();
    if (!diff) co_return diff.error();
    h.tables = std::move(diff).value();
    for (const auto& t : h.tables) {
        h.on_from += t.rows_from;
        // Whole tables (index definitions, counter op ids) are on every shard the gateways list, the
        // new one included: they do not make it unfit.
        if (!h.whole.contains(t.table)) h.on_to += t.rows_to;
    }
    co_return h;
}

// A snapshot that meets a table created after it began (a new shard's worker creating its tables just
// after a start) fails with shard_retry: read again, a few times.
// why: the shard's own words when it failed.
asio::awaitable<core::result<half_counts>> async_count_half(gateway& gw, std::uint32_t from, std::uint32_t to,
                                                            core::hash_range range, bool without_counters, bool marks,
                                                            std::string& why, bool target_only = false) {
    auto r = co_await async_count_half_once(gw, from, to, range, without_counters, marks, target_only, why);
    for (int attempt = 1; attempt < 5 && !r && r.error() == core::errc::shard_retry; ++attempt) {
        why.clear();
        r = co_await async_count_half_once(gw, from, to, range, without_counters, marks, target_only, why);
    }
    co_return r;
}

// Tables the whole-table diff found "applying" (rows differ while the shards' applied marks differ:
// under steady writes two whole tables rarely meet at the same marks) compared again chunk by chunk, as
// the split driver verifies: a chunk that differs at different marks is compared again alone, up to 10
// times. Returns, per table asked, whether it settled: true (every chunk the same), false (a chunk
// differs at the same marks), absent (still applying).
asio::awaitable<core::result<std::map<std::string, bool, std::less<>>>> async_recheck_by_chunks(
    gateway& gw, std::uint32_t from, std::uint32_t to, core::hash_range range, const std::set<std::string, std::less<>>& tables,
    std::string& why) {
    const auto ex = co_await asio::this_coro::executor;
    shards::mariadb_conn source(ex, shards::conn_params_of(*gw.cfg, from));
    shards::mariadb_conn target(ex, shards::conn_params_of(*gw.cfg, to));
    auto plan = co_await async_open_pair(gw, source, from, target, to, why);
    if (!plan) co_return plan.error();
    for (auto& g : plan.value()) std::erase_if(g.tables, [&](const shards::copy_table& t) { return !tables.contains(t.name); });
    std::erase_if(plan.value(), [](const shards::copy_group& g) { return g.tables.empty(); });
    constexpr std::string_view marks_sql = "SELECT node_id, seq FROM applied_marks ORDER BY node_id";
    shards::range_copy_options o;
    o.chunk_rows = 1000;
    auto diff = co_await shards::async_diff_range_chunks(source, target, plan.value(), range, o, marks_sql);
    for (int attempt = 0; attempt < 10 && diff; ++attempt) {
        const bool again = std::any_of(diff.value().begin(), diff.value().end(),
                                       [](const shards::range_chunk_diff& c) { return c.tag_from != c.tag_to; });
        if (!again) break;
        diff = co_await shards::async_rediff_chunks(source, target, plan.value(), range, diff.value(), o, marks_sql);
    }
    if (!diff) why = !source.last_error().empty() ? source.last_error() : target.last_error();
    source.close();
    target.close();
    if (!diff) co_return diff.error();
    std::map<std::string, bool, std::less<>> out;
    for (const auto& t : tables) out[t] = true;
    for (const auto& c : diff.value()) {
        if (c.tag_from == c.tag_to) {
            out[c.table] = false;
        } else if (auto it = out.find(c.table); it != out.end() && it->second) {
            out.erase(it);
        }
    }
    co_return out;
}

json split_json(const shards::stored_map& m) {
    return {{"version", m.version},           {"shard", m.split_shard},
            {"new_shard", m.new_shard},       {"new_address", m.new_address},
            {"state", shards::split_state_name(m.state)}, {"state_ms", m.state_ms}};
}

asio::awaitable<response> async_plan(gateway& gw, route_context& ctx, bool start) {
    const auto& req = ctx.req;
    auto checked = co_await async_check_split(gw, req);
    if (auto* r = std::get_if<response>(&checked)) co_return std::move(*r);
    auto& c = std::get<checked_split>(checked);
    const auto range = c.after.range_of(c.new_shard);
    // Its worker creates the new shard's tables when it first connects: reading it before would meet
    // tables that appear meanwhile.
    if (!gw.shards.at(c.new_shard).up()) {
        co_return refuse(req, problems::shard_unavailable,
                         fmt::format("shard {} ({}) has not answered this gateway yet: try again once it is up (cairn status)",
                                     c.new_shard, c.to));
    }
    std::string why;
    auto counts = co_await async_count_half(gw, c.shard, c.new_shard, range, false, false, why, start);
    if (!counts) {
        co_return shards_problem(req, fmt::format("counting the moved half on shards {} and {}{}{}", c.shard, c.new_shard,
                                                  why.empty() ? "" : " (", why.empty() ? "" : why + ")"),
                                 counts.error());
    }
    if (counts.value().on_to != 0) {
        co_return refuse(req, problems::split_not_ready,
                         fmt::format("shard {} already holds {} rows of the moved half (a failed split's copy, or another "
                                     "deployment's data): a split needs it empty — empty its database first",
                                     c.new_shard, counts.value().on_to),
                         "to");
    }
    json out;
    out["map_version"] = c.version_in_force + 0;
    out["shard"] = c.shard;
    out["new_shard"] = c.new_shard;
    out["to"] = c.to;
    out["moved"] = {{"first", range.first}, {"last", range.last}};
    out["before"] = ranges_json(c.before);
    out["after"] = ranges_json(c.after);
    // The old owner's half, counted by plan only (split answers at once: tables empty, rows null).
    json tables = json::array();
    if (!start) {
        for (const auto& t : counts.value().tables) tables.push_back({{"table", t.table}, {"rows", t.rows_from}});
    }
    out["tables"] = tables;
    out["rows"] = start ? json(nullptr) : json(counts.value().on_from);
    const auto throttle = gw.lim.split_copy_rows_per_second_max;
    out["rows_per_second_max"] = throttle;
    // The copy reads every row of shard I's tables (both halves); at the throttle that takes this long.
    out["copy_eta_s"] = throttle == 0 || start ? json(nullptr) : json(counts.value().on_from * 2 / throttle);
    json gateways = json::array();
    for (const auto& l : c.st.leases) {
        if (l.active) gateways.push_back({{"node_id", l.node_id}, {"holder", l.holder}});
    }
    out["gateways"] = gateways;
    if (!start) co_return answer(req, out);

    auto proposed = co_await gw.shards.at(0).async_read([&](shards::mariadb_conn& conn) -> asio::awaitable<core::result<shards::stored_map>> {
        auto m = co_await shards::async_propose_split(conn, c.st.base_count, c.shard, c.to, core::system_wall_clock_ms());
        if (!m) co_return m.error();
        if (auto r = co_await shards::async_move_split(conn, m.value().version, shards::split_state::planned,
                                                       shards::split_state::adopting, core::system_wall_clock_ms());
            !r) {
            co_return r.error();
        }
        m.value().state = shards::split_state::adopting;
        co_return m;
    });
    if (!proposed && proposed.error() == core::errc::conflict) {
        co_return refuse(req, problems::split_running, "another split was proposed meanwhile; see GET /v1/admin/reshard");
    }
    if (!proposed) co_return shards_problem(req, "proposing the split on shard 0", proposed.error());
    out["split"] = split_json(proposed.value());
    co_return answer(req, out, http::status::accepted);
}

asio::awaitable<response> async_status(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, no_fields)) co_return detail::bad_field(req, e->field, e->detail);
    auto read = co_await async_read_shard0(gw);
    if (!read) co_return shards_problem(req, "reading the map on shard 0", read.error());
    const auto& st = read.value();
    std::uint32_t version = 1;
    const auto in_force = shards::map_in_force(st.maps, st.base_count, &version);
    json out;
    out["map"] = {{"version", version}, {"shards", in_force.size()}, {"ranges", ranges_json(in_force)}};
    json history = json::array();
    for (const auto& m : st.maps) history.push_back(split_json(m));
    out["history"] = history;
    out["split"] = nullptr;
    if (!st.open) co_return answer(req, out);
    const auto& m = *st.open;
    json split = split_json(m);
    const auto now = core::system_wall_clock_ms();
    split["in_state_ms"] = now > m.state_ms ? now - m.state_ms : 0;
    split["after"] = ranges_json(m.map);
    const auto moved = m.map.range_of(m.new_shard);
    split["moved"] = {{"first", moved.first}, {"last", moved.last}};
    // Every gateway that is live or took part: its adoption and the state it routes by.
    json gateways = json::array();
    std::vector<std::uint64_t> nodes;
    for (const auto& l : st.leases) {
        if (l.active) nodes.push_back(l.node_id);
    }
    for (const auto& a : st.adopted) nodes.push_back(a.node_id);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (const auto n : nodes) {
        json g{{"node_id", n}, {"live", false}, {"holder", nullptr}, {"adopted_from_seq", nullptr}, {"routes_by", nullptr},
               {"cut_over_seq", nullptr}};
        for (const auto& l : st.leases) {
            if (l.node_id == n) {
                g["live"] = l.active;
                g["holder"] = l.holder;
            }
        }
        for (const auto& a : st.adopted) {
            if (a.node_id != n) continue;
            g["adopted_from_seq"] = a.from_seq;
            if (a.seen != shards::split_state::planned) g["routes_by"] = shards::split_state_name(a.seen);
            if (a.cut_over_seq != 0) g["cut_over_seq"] = a.cut_over_seq;
        }
        gateways.push_back(std::move(g));
    }
    split["gateways"] = gateways;
    split["progress"] = nullptr;
    if (st.progress) {
        const auto& p = *st.progress;
        json pj{{"driver", p.driver},       {"note", p.note},           {"table", p.table},
                {"rows_read", p.rows_read}, {"rows_done", p.rows_done}, {"rows_estimate", p.rows_estimate},
                {"started_ms", p.started_ms}, {"updated_ms", p.updated_ms}, {"eta_s", nullptr}};
        // The copy or clean under way: the rest of the estimate at the rate so far.
        const bool stepping = m.state == shards::split_state::copying || m.state == shards::split_state::cleaning;
        if (stepping && p.started_ms != 0 && p.updated_ms > p.started_ms && p.rows_read != 0 && p.rows_estimate > p.rows_read) {
            const double rate = static_cast<double>(p.rows_read) / static_cast<double>(p.updated_ms - p.started_ms);
            pj["eta_s"] = static_cast<std::uint64_t>(static_cast<double>(p.rows_estimate - p.rows_read) / rate / 1000.0);
        }
        split["progress"] = std::move(pj);
    }
    out["split"] = std::move(split);
    co_return answer(req, out);
}

// What shard 0 says, for a request that takes no body (verify, cancel); or the answer that refuses it.
asio::awaitable<std::variant<shard0_state, response>> async_read_for_bodyless(gateway& gw, const request& req) {
    body_fields b;
    if (auto e = b.parse(req.body(), no_fields)) co_return detail::bad_field(req, e->field, e->detail);
    auto read = co_await async_read_shard0(gw);
    if (!read) co_return shards_problem(req, "reading the map on shard 0", read.error());
    co_return std::move(read).value();
}

asio::awaitable<response> async_verify(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto read = co_await async_read_for_bodyless(gw, req);
    if (auto* refused = std::get_if<response>(&read)) co_return std::move(*refused);
    const auto& st = std::get<shard0_state>(read);
    // The split under way, or else the newest that did not fail (a retired split: what is left on I).
    std::optional<shards::stored_map> m = st.open;
    if (!m) {
        for (const auto& v : st.maps) {
            if (v.state != shards::split_state::failed) m = v;
        }
    }
    if (!m) co_return refuse(req, problems::not_found, "no split to verify: the map never split");
    if (m->state < shards::split_state::catching_up) {
        co_return refuse(req, problems::split_running,
                         fmt::format("map version {} is {}: there is nothing to compare until its copy has run",
                                     m->version, shards::split_state_name(m->state)));
    }
    const auto range = m->map.range_of(m->new_shard);
    if (m->new_shard >= gw.cfg->shards.size()) {
        co_return refuse(req, problems::split_not_ready, fmt::format("this gateway's config does not list shard {}", m->new_shard));
    }
    // Counter sums are left out while both hold the half (counter_ops holds both halves' op ids on the
    // old shard); after cleaning, everything of the half is
    // compared (the old owner must hold none).
    const bool cleaned = m->state >= shards::split_state::cleaning;
    std::string why;
    auto counts = co_await async_count_half(gw, m->split_shard, m->new_shard, range, !cleaned, !cleaned, why);
    if (!counts) {
        co_return shards_problem(req, fmt::format("comparing the moved half{}{}{}", why.empty() ? "" : " (", why,
                                                  why.empty() ? "" : ")"),
                                 counts.error());
    }
    // Tables that differ while the shards' marks differ: compared again chunk by chunk.
    std::set<std::string, std::less<>> applying_tables;
    for (const auto& t : counts.value().tables) {
        if (!cleaned && !t.same() && t.tag_from != t.tag_to) applying_tables.insert(t.table);
    }
    std::map<std::string, bool, std::less<>> settled;
    if (!applying_tables.empty()) {
        auto r = co_await async_recheck_by_chunks(gw, m->split_shard, m->new_shard, range, applying_tables, why);
        if (!r) {
            co_return shards_problem(req, fmt::format("comparing the moved half chunk by chunk{}{}{}", why.empty() ? "" : " (", why,
                                                      why.empty() ? "" : ")"),
                                     r.error());
        }
        settled = std::move(r).value();
    }
    json tables = json::array();
    bool clean = true;
    for (const auto& t : counts.value().tables) {
        // Before cleaning both must agree; after it the old owner holds none of the half (whole tables,
        // such as the counters' op ids, stay on every shard).
        const bool whole = cleaned && counts.value().whole.contains(t.table);
        const auto by_chunks = settled.find(t.table);
        const bool ok = whole || (cleaned ? t.rows_from == 0 : t.same() || (by_chunks != settled.end() && by_chunks->second));
        const bool applying = !ok && !cleaned && t.tag_from != t.tag_to && by_chunks == settled.end();
        if (!ok && !applying) clean = false;
        tables.push_back({{"table", t.table},
                          {"rows_on_shard", t.rows_from},
                          {"rows_on_new_shard", t.rows_to},
                          {"checksum_on_shard", fmt::format("{:016x}", t.checksum_from)},
                          {"checksum_on_new_shard", fmt::format("{:016x}", t.checksum_to)},
                          {"verdict", whole ? "whole" : ok ? (cleaned ? "gone" : "same") : applying ? "applying" : "differs"},
                          // The whole-table figures above disagreed while the marks did; the verdict is the
                          // chunks' (async_recheck_by_chunks).
                          {"by_chunks", by_chunks != settled.end()}});
    }
    json out = split_json(*m);
    out["compared"] = cleaned ? "the old owner holds none of the moved half" : "both shards hold the same moved half";
    out["tables"] = tables;
    out["clean"] = clean;
    co_return answer(req, out);
}

asio::awaitable<response> async_cancel(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    auto read = co_await async_read_for_bodyless(gw, req);
    if (auto* refused = std::get_if<response>(&read)) co_return std::move(*refused);
    const auto& st = std::get<shard0_state>(read);
    if (!st.open) co_return refuse(req, problems::not_found, "no split is under way");
    const auto m = *st.open;
    if (m.state >= shards::split_state::switched) {
        co_return refuse(req, problems::split_running,
                         fmt::format("map version {} is {}: reads have moved to shard {}, so it can only go forward", m.version,
                                     shards::split_state_name(m.state), m.new_shard));
    }
    auto moved = co_await gw.shards.at(0).async_read([&](shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
        co_return co_await shards::async_move_split(conn, m.version, m.state, shards::split_state::failed,
                                                    core::system_wall_clock_ms());
    });
    if (!moved && moved.error() == core::errc::conflict) {
        co_return refuse(req, problems::split_running, "the split moved on meanwhile; look again (GET /v1/admin/reshard)");
    }
    if (!moved) co_return shards_problem(req, "failing the split on shard 0", moved.error());
    json out = split_json(m);
    out["state"] = "failed";
    out["was"] = shards::split_state_name(m.state);
    co_return answer(req, out);
}

}  // namespace

// A gateway without its config (the unit tests' and fuzz targets' gateways) has no shard addresses.
template <class Handler>
auto needs_config(gateway& gw, Handler route) {
    return [&gw, route](route_context& ctx) -> asio::awaitable<response> {
        if (gw.cfg == nullptr) co_return refuse(ctx.req, problems::internal, "this gateway has no shard addresses to reshard with");
        co_return co_await route(gw, ctx);
    };
}

void add_reshard_routes(router& r, gateway& gw) {
    const auto admin = core::role::admin;
    const auto look = core::role::read;
    r.add(http::verb::get, "/v1/admin/reshard", look, needs_config(gw, [](gateway& g, route_context& ctx) { return async_status(g, ctx); }));
    r.add(http::verb::post, "/v1/admin/reshard/plan", admin,
          needs_config(gw, [](gateway& g, route_context& ctx) { return async_plan(g, ctx, false); }));
    r.add(http::verb::post, "/v1/admin/reshard/split", admin,
          needs_config(gw, [](gateway& g, route_context& ctx) { return async_plan(g, ctx, true); }));
    r.add(http::verb::post, "/v1/admin/reshard/verify", admin,
          needs_config(gw, [](gateway& g, route_context& ctx) { return async_verify(g, ctx); }));
    r.add(http::verb::post, "/v1/admin/reshard/cancel", admin,
          needs_config(gw, [](gateway& g, route_context& ctx) { return async_cancel(g, ctx); }));
}

}  // namespace cairn::net
