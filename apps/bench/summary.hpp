// Joins the JSON reports of one scripts/bench run into per-scenario files, a markdown table with
// the ratio cairn/direct per line, and gnuplot data files. Blocking file I/O; any thread.
#pragma once

#include <string>
#include <vector>

namespace cairn::bench {

struct summary_files {
    std::vector<std::string> written;  // every file written, for the log
    std::string error;                 // empty on success
};

// Reads raw_dir/*.json (reports of cairn-bench --json) and writes into out_dir:
//   <label>-<scenario>.json  {"scenario", "runs": [...]} per scenario
//   <label>-<scenario>.dat   gnuplot rows "concurrency http_throughput ws_throughput direct_throughput
//                            http_p99_ms ws_p99_ms direct_p99_ms" (closed-loop lines; 0 where a target has none)
//   <label>-table.md         the markdown table
summary_files write_summary(const std::string& raw_dir, const std::string& out_dir, const std::string& label);

// The markdown table for a set of reports (each a JSON object as to_json writes it).
std::string summary_table(const std::vector<std::string>& report_jsons);

}  // namespace cairn::bench
