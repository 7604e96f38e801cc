// The result of one cairn-bench run and its two renderings: a text block for people and a JSON
// object for scripts/bench (which joins runs into tables and charts). No I/O; any thread.
#pragma once

#include "apps/bench/histogram.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace cairn::bench {

enum class run_status { ok, not_measurable, failed };

struct run_report {
    std::string scenario;     // write, get, drain, restart, page, count, ...
    std::string target;       // cairn-http, cairn-ws, direct
    std::string mode;         // closed (concurrency), open (fixed rate) or once (drain, restart)
    run_status status = run_status::ok;
    std::string note;         // why not measurable or failed; how the baseline is made
    std::uint32_t concurrency = 0;
    double rate_target = 0;   // open loop: intended requests/s; 0 otherwise
    double warmup_s = 0;
    double duration_s = 0;    // the measured window
    std::string unit = "ops"; // what throughput counts: ops (requests), rows, restarts
    std::uint64_t ops = 0;    // successful operations in the window
    std::uint64_t errors = 0; // failed operations in the window
    std::string first_error;  // the first failure's message, for the log
    double throughput = 0;    // unit per second
    histogram latency_ns;     // per operation; open loop: from the intended send time
    std::map<std::string, double> extra;  // scenario-specific figures (rows, backlog_ops, ready_ms, ...)
};

std::string_view status_name(run_status s) noexcept;

// Fills throughput from ops and duration_s (0 when duration_s is 0).
void finish_throughput(run_report& r) noexcept;

// A JSON object: every field above, latency as {count, p50_us, p99_us, p999_us, max_us, mean_us,
// min_us}, plus "version": 1. Percentiles are in microseconds with three decimals.
std::string to_json(const run_report& r);

// A few aligned lines: what ran, throughput, percentiles, errors, extras.
std::string to_text(const run_report& r);

}  // namespace cairn::bench
