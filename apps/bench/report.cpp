#include "apps/bench/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace cairn::bench {
namespace {

double us(std::uint64_t ns) {
    return std::round(static_cast<double>(ns) / 1000.0 * 1000.0) / 1000.0;  // microseconds, 3 decimals
}

}  // namespace

std::string_view status_name(run_status s) noexcept {
    switch (s) {
        case run_status::ok: return "ok";
        case run_status::not_measurable: return "not_measurable";
        case run_status::failed: return "failed";
    }
    return "failed";
}

void finish_throughput(run_report& r) noexcept {
    r.throughput = r.duration_s > 0 ? static_cast<double>(r.ops) / r.duration_s : 0.0;
}

std::string to_json(const run_report& r) {
    nlohmann::ordered_json j;
    j["version"] = 1;
    j["scenario"] = r.scenario;
    j["target"] = r.target;
    j["mode"] = r.mode;
    j["status"] = status_name(r.status);
    j["note"] = r.note;
    j["concurrency"] = r.concurrency;
    j["rate_target"] = r.rate_target;
    j["warmup_s"] = r.warmup_s;
    j["duration_s"] = r.duration_s;
    j["unit"] = r.unit;
    j["ops"] = r.ops;
    j["errors"] = r.errors;
    j["first_error"] = r.first_error;
    j["throughput"] = std::round(r.throughput * 10.0) / 10.0;
    const auto& h = r.latency_ns;
    j["latency"] = {
        {"count", h.count()},
        {"min_us", us(h.min())},
        {"mean_us", us(static_cast<std::uint64_t>(h.mean()))},
        {"p50_us", us(h.percentile(50))},
        {"p99_us", us(h.percentile(99))},
        {"p999_us", us(h.percentile(99.9))},
        {"max_us", us(h.max())},
    };
    auto extra = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.extra) extra[k] = v;
    j["extra"] = extra;
    return j.dump(2);
}

std::string to_text(const run_report& r) {
    std::string out = fmt::format("{} / {} ({}", r.scenario, r.target, r.mode);
    if (r.mode == "closed") fmt::format_to(std::back_inserter(out), ", concurrency {}", r.concurrency);
    if (r.mode == "open") fmt::format_to(std::back_inserter(out), ", {} req/s on {} connections", r.rate_target, r.concurrency);
    out += ")\n";
    if (r.status != run_status::ok) {
        fmt::format_to(std::back_inserter(out), "  status      {}: {}\n", status_name(r.status), r.note);
        if (r.status == run_status::not_measurable) return out;
    } else if (!r.note.empty()) {
        fmt::format_to(std::back_inserter(out), "  note        {}\n", r.note);
    }
    fmt::format_to(std::back_inserter(out), "  throughput  {:.1f} {}/s ({} {} in {:.2f} s, {} errors)\n", r.throughput,
                   r.unit, r.ops, r.unit, r.duration_s, r.errors);
    const auto& h = r.latency_ns;
    if (h.count() > 0) {
        fmt::format_to(std::back_inserter(out), "  latency     p50 {:.1f} us  p99 {:.1f} us  p99.9 {:.1f} us  max {:.1f} us  ({} samples)\n",
                       us(h.percentile(50)), us(h.percentile(99)), us(h.percentile(99.9)), us(h.max()), h.count());
    }
    for (const auto& [k, v] : r.extra) fmt::format_to(std::back_inserter(out), "  {:<11} {}\n", k, v);
    if (!r.first_error.empty()) fmt::format_to(std::back_inserter(out), "  first error {}\n", r.first_error);
    return out;
}

}  // namespace cairn::bench
