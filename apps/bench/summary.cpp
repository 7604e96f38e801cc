#include "apps/bench/summary.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace cairn::bench {
namespace {

using json = nlohmann::ordered_json;

// Scenario order and target of issue 3, by scenario name.
const std::vector<std::pair<std::string, std::string>>& scenario_targets() {
    static const std::vector<std::pair<std::string, std::string>> t{
        {"write", "≥ 5x at 16 and 64 clients"},
        {"sustained", "≥ 2x"},
        {"memory", "≤ 256 MiB, flat"},
        {"drain", "≥ 0.8"},
        {"feed", "a line (issue 16)"},
        {"split_copy", "a line (issue 16)"},
        {"get", "≥ 0.6 over HTTP, ≥ 1.0 over WebSocket"},
        {"page", "≥ 0.8"},
        {"count", "p99 ≤ 1 ms"},
        {"restart", "ready ≤ 2 s"},
        {"hoard", "p99 ≤ 2x alone"},
        {"bomb", "≤ 10x a normal message"},
    };
    return t;
}

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }
std::string str(const json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; }
double lat_ms(const json& j, const char* key) { return j.contains("latency") ? num(j["latency"], key) / 1000.0 : 0.0; }

std::string fmt_rate(double v) {
    if (v >= 100) return fmt::format("{:.0f}", v);
    return fmt::format("{:.1f}", v);
}
std::string fmt_ms(double v) {
    if (v >= 100) return fmt::format("{:.0f}", v);
    if (v >= 10) return fmt::format("{:.1f}", v);
    return fmt::format("{:.2f}", v);
}
std::string lat_cell(const json& j) {
    if (!j.contains("latency") || num(j["latency"], "count") == 0) return "—";
    return fmt::format("{} / {} / {} / {}", fmt_ms(lat_ms(j, "p50_us")), fmt_ms(lat_ms(j, "p99_us")),
                       fmt_ms(lat_ms(j, "p999_us")), fmt_ms(lat_ms(j, "max_us")));
}

bool is_ok(const json& j) { return str(j, "status") == "ok"; }

// The median of a line's per-round figures (the lower middle of an even count), their spread, and
// the round the median came from.
struct median_spread {
    const json* run = nullptr;
    double median = 0, min = 0, max = 0;
    std::size_t rounds = 0;
};
median_spread median_of(std::vector<std::pair<double, const json*>> v) {
    median_spread out;
    if (v.empty()) return out;
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto& mid = v[(v.size() - 1) / 2];
    out.run = mid.second;
    out.median = mid.first;
    out.min = v.front().first;
    out.max = v.back().first;
    out.rounds = v.size();
    return out;
}

// The run of median throughput among a line's successful rounds (scripts/bench --rounds): its
// figures stand for the line. A line whose every round failed shows its first.
const json* median_run(const std::vector<const json*>& runs) {
    std::vector<std::pair<double, const json*>> v;
    for (const json* j : runs) {
        if (is_ok(*j)) v.emplace_back(num(*j, "throughput"), j);
    }
    const auto m = median_of(std::move(v));
    return m.run != nullptr ? m.run : runs.front();
}

// The round whose extra[key] is the median among a line's successful rounds (a line that is its
// own baseline, e.g. hoard's p99 with / alone), with the spread of that figure.
median_spread median_by_extra(const std::vector<const json*>& runs, const char* key) {
    std::vector<std::pair<double, const json*>> v;
    for (const json* j : runs) {
        if (is_ok(*j) && j->contains("extra")) v.emplace_back(num((*j)["extra"], key), j);
    }
    return median_of(std::move(v));
}

// cairn/direct per round (the i-th successful run of each, in the order they ran): median and spread.
median_spread ratios(const std::vector<const json*>& cairn, const std::vector<const json*>& direct) {
    std::vector<double> c, d;
    for (const json* j : cairn) if (is_ok(*j)) c.push_back(num(*j, "throughput"));
    for (const json* j : direct) if (is_ok(*j)) d.push_back(num(*j, "throughput"));
    std::vector<std::pair<double, const json*>> r;
    for (std::size_t i = 0; i < std::min(c.size(), d.size()); ++i) {
        if (d[i] > 0) r.emplace_back(c[i] / d[i], nullptr);
    }
    return median_of(std::move(r));
}

struct line_key {
    std::string scenario;
    std::string mode;
    double concurrency = 0;
    double rate = 0;
    friend auto operator<=>(const line_key&, const line_key&) = default;
};

}  // namespace

std::string summary_table(const std::vector<std::string>& report_jsons) {
    std::vector<json> reports;
    for (const auto& s : report_jsons) {
        auto j = json::parse(s, nullptr, false);
        if (!j.is_discarded() && j.is_object()) reports.push_back(std::move(j));
    }
    std::string out =
        "| scenario | clients | cairn | direct | ratio cairn/direct | cairn p50 / p99 / p99.9 / max (ms) | direct p50 / p99 / p99.9 / max (ms) | target |\n"
        "|---|---|---|---|---|---|---|---|\n";
    std::string memory_lines;  // issue 3 line 7, from the sustained runs
    for (const auto& [scenario, target] : scenario_targets()) {
        if (scenario == "memory") {
            out += memory_lines;
            continue;
        }
        // Lines: one per (mode, concurrency, rate); cairn over HTTP (and WebSocket when it exists) beside direct.
        std::map<line_key, std::map<std::string, std::vector<const json*>>> lines;
        std::vector<const json*> unmeasurable;
        for (const auto& j : reports) {
            if (str(j, "scenario") != scenario) continue;
            if (str(j, "status") == "not_measurable") {
                unmeasurable.push_back(&j);
                continue;
            }
            line_key k{scenario, str(j, "mode"), str(j, "mode") == "once" ? 0 : num(j, "concurrency"), num(j, "rate_target")};
            // Sustained: cairn's searched rate and direct's closed loop share a line per client count.
            if (scenario == "sustained") k.mode = "search";
            lines[k][str(j, "target")].push_back(&j);
        }
        for (const auto& [k, by_target] : lines) {
            const json* direct = by_target.contains("direct") ? median_run(by_target.at("direct")) : nullptr;
            for (const auto& [tgt, runs] : by_target) {
                const json* j = median_run(runs);
                if (tgt == "direct" && by_target.size() > 1) continue;
                const bool is_direct = tgt == "direct";
                const std::string unit = str(*j, "unit");
                std::string clients = k.mode == "once" ? "—" : fmt::format("{:.0f}", k.concurrency);
                if (k.mode == "open") clients += fmt::format(" @ {:.0f}/s", k.rate);
                std::string cairn_cell = "—", direct_cell = "—", ratio = "—";
                auto cell = [&](const json& r) {
                    if (!is_ok(r)) return fmt::format("failed: {}", str(r, "note"));
                    if (unit == "restarts") return std::string("—");
                    return fmt::format("{} {}/s", fmt_rate(num(r, "throughput")), unit);
                };
                if (!is_direct) cairn_cell = fmt::format("{} ({})", cell(*j), tgt);
                if (direct) direct_cell = cell(*direct);
                if (!is_direct && direct && is_ok(*j) && is_ok(*direct) && num(*direct, "throughput") > 0) {
                    const auto rs = ratios(runs, by_target.at("direct"));
                    if (k.mode == "open") {
                        // The same offered load on both: the throughputs match, the tails are the line.
                        const double dp99 = lat_ms(*direct, "p99_us");
                        if (dp99 > 0) ratio = fmt::format("**{:.2f}** (p99 cairn / direct)", lat_ms(*j, "p99_us") / dp99);
                    } else if (rs.rounds > 1) {
                        // The median of the rounds' ratios, with their spread (min–max).
                        ratio = fmt::format("**{:.2f}** ({:.2f}–{:.2f}, {} rounds)", rs.median, rs.min, rs.max, rs.rounds);
                    } else {
                        ratio = fmt::format("**{:.2f}**", num(*j, "throughput") / num(*direct, "throughput"));
                    }
                }
                if (!is_direct && scenario == "sustained" && is_ok(*j) && j->contains("extra")) {
                    const auto& x = (*j)["extra"];
                    cairn_cell += fmt::format(", lag ≤ {:.0f} ops", num(x, "lag_max_ops"));
                    memory_lines += fmt::format(
                        "| memory | {} | peak RSS {:.0f} MiB, {} over a {:.0f} s soak at {:.0f} writes/s ({}) | — | — | — | — | ≤ 256 MiB, flat |\n",
                        clients, num(x, "peak_rss_mib"), num(x, "rss_flat") > 0 ? "flat" : "GROWING", num(x, "soak_s"),
                        num(x, "sustained_rate"), tgt);
                }
                if (!is_direct && unit == "restarts") {
                    cairn_cell = fmt::format("ready in {} ms (p50 of {}; {:.0f} unapplied edges)",
                                             fmt_ms(lat_ms(*j, "p50_us")), static_cast<int>(num(*j, "ops")),
                                             j->contains("extra") ? num((*j)["extra"], "backlog_edges") : 0.0);
                }
                // Issue 13's lines are their own baselines: the figures are in extra.
                if (!is_direct && scenario == "hoard") {
                    // Each round measures the client alone and then beside the hoarders: the line is the
                    // round of median p99 ratio, with the ratios' spread.
                    if (const auto m = median_by_extra(runs, "p99_ratio"); m.run != nullptr) {
                        j = m.run;
                        const auto& x = (*j)["extra"];
                        cairn_cell = fmt::format("p99 {} ms beside {:.0f} hoarders vs {} ms alone ({:.0f} evicted during the run)",
                                                 fmt_ms(num(x, "hoarded_p99_us") / 1000), num(x, "hoarders"),
                                                 fmt_ms(num(x, "baseline_p99_us") / 1000), num(x, "evicted_during_run"));
                        ratio = m.rounds > 1 ? fmt::format("**{:.2f}** ({:.2f}–{:.2f}, {} rounds; p99 with / alone)",
                                                           num(x, "p99_ratio"), m.min, m.max, m.rounds)
                                             : fmt::format("**{:.2f}** (p99 with / alone)", num(x, "p99_ratio"));
                    }
                }
                if (!is_direct && scenario == "bomb" && is_ok(*j) && j->contains("extra")) {
                    const auto& x = (*j)["extra"];
                    cairn_cell = fmt::format("worst bomb {:.1f} µs vs {:.1f} µs for a normal {:.0f}-byte message; JSON nested past "
                                             "the limit {:.1f}x",
                                             num(x, "worst_bomb_ns") / 1000, num(x, "normal_ns") / 1000,
                                             num(x, "message_bytes"), num(x, "json_ratio"));
                    ratio = fmt::format("**{:.2f}** (bomb / normal)", num(x, "worst_ratio"));
                }
                out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", scenario, clients, cairn_cell, direct_cell,
                                   ratio, is_direct ? "—" : lat_cell(*j), direct ? lat_cell(*direct) : "—", target);
            }
        }
        if (lines.empty()) {
            std::string why = "no run";
            for (const json* j : unmeasurable) {
                why = fmt::format("{} ({})", str(*j, "note"), str(*j, "target"));
                if (str(*j, "target") != "direct") break;
            }
            if (!unmeasurable.empty()) {
                out += fmt::format("| {} | — | not yet measurable: {} | — | — | — | — | {} |\n", scenario, why, target);
            }
        } else {
            for (const json* j : unmeasurable) {
                if (str(*j, "target") == "direct" && scenario == "restart") continue;  // no baseline by design
                out += fmt::format("| {} | — | not yet measurable ({}): {} | — | — | — | — | {} |\n", scenario,
                                   str(*j, "target"), str(*j, "note"), target);
            }
        }
    }
    return out;
}

summary_files write_summary(const std::string& raw_dir, const std::string& out_dir, const std::string& label) {
    namespace fs = std::filesystem;
    summary_files out;
    std::vector<std::string> raws;
    std::vector<fs::path> paths;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(raw_dir, ec)) {
        if (e.path().extension() == ".json") paths.push_back(e.path());
    }
    if (ec) {
        out.error = fmt::format("cannot list {}: {}", raw_dir, ec.message());
        return out;
    }
    std::sort(paths.begin(), paths.end());
    std::map<std::string, json> by_scenario;
    for (const auto& p : paths) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        auto j = json::parse(ss.str(), nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            out.error = fmt::format("{} is not a JSON report", p.string());
            return out;
        }
        raws.push_back(ss.str());
        auto& s = by_scenario[str(j, "scenario")];
        s["scenario"] = str(j, "scenario");
        s["runs"].push_back(std::move(j));
    }
    fs::create_directories(out_dir, ec);
    auto write = [&](const std::string& name, const std::string& text) {
        const std::string path = out_dir + "/" + name;
        std::ofstream f(path);
        f << text;
        if (!f && out.error.empty()) out.error = "cannot write " + path;
        out.written.push_back(path);
    };
    for (auto& [scenario, doc] : by_scenario) {
        write(fmt::format("{}-{}.json", label, scenario), doc.dump(2) + "\n");
        // gnuplot data for closed-loop lines: one column per target (cairn over HTTP, over WebSocket,
        // direct), 0 where a target has no line at that concurrency.
        static constexpr std::array<std::string_view, 3> targets = {"cairn-http", "cairn-ws", "direct"};
        std::map<double, std::array<const json*, targets.size()>> points;
        for (const auto& r : doc["runs"]) {
            if (!is_ok(r) || str(r, "mode") != "closed") continue;
            const auto t = std::find(targets.begin(), targets.end(), str(r, "target"));
            if (t == targets.end()) continue;
            auto& pt = points[num(r, "concurrency")];
            pt[static_cast<std::size_t>(t - targets.begin())] = &r;
        }
        if (points.empty()) continue;
        std::string dat =
            "# concurrency http_throughput ws_throughput direct_throughput http_p99_ms ws_p99_ms direct_p99_ms\n";
        for (const auto& [c, pt] : points) {
            dat += fmt::format("{:.0f}", c);
            for (const json* r : pt) dat += fmt::format(" {:.1f}", r ? num(*r, "throughput") : 0.0);
            for (const json* r : pt) dat += fmt::format(" {:.3f}", r ? lat_ms(*r, "p99_us") : 0.0);
            dat += '\n';
        }
        write(fmt::format("{}-{}.dat", label, scenario), dat);
    }
    write(fmt::format("{}-table.md", label), summary_table(raws));
    return out;
}

}  // namespace cairn::bench
