// cairn-bench: the load generator of issue 3. Runs one scenario against one target (cairn over
// HTTP, or the MariaDB shards directly with the same rows, concurrency and durability) and
// prints a text report; --json writes the same report for scripts/bench.
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "apps/bench/report.hpp"
#include "apps/bench/scenarios.hpp"
#include "apps/bench/summary.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <fstream>
#include <iostream>

namespace {

using namespace cairn::bench;

std::string scenario_help() {
    std::string out = "Scenarios (issue 3 line):\n";
    for (const auto& s : scenarios()) out += "  " + s.name + std::string(11 - std::min<std::size_t>(10, s.name.size()), ' ') + s.measures + "\n";
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "cairn-bench: load generator for cairn and its direct-to-MariaDB baseline.\n\n"
        "Examples:\n"
        "  cairn-bench --scenario write --target cairn-http --port 8080 --concurrency 16 --duration 10\n"
        "  cairn-bench --scenario write --target direct --shards 127.0.0.1:33061,127.0.0.1:33062 --concurrency 16\n"
        "  cairn-bench --scenario write --target cairn-http --rate 5000 --concurrency 64   # open loop, CO-correct\n"
        "  cairn-bench --scenario get --target cairn-http --shards 127.0.0.1:33061,127.0.0.1:33062 --preload 10000\n"
        "  cairn-bench --scenario write --target cairn-ws --concurrency 256 --ws-pipeline 64   # 4 connections\n"
        "  cairn-bench --scenario drain --target cairn-http --cairnd build/release/apps/cairnd \\\n"
        "              --cairnd-config bench.toml --backlog 1000000\n"
        "  cairn-bench --scenario restart --cairnd build/release/apps/cairnd --cairnd-config bench.toml --json out.json\n"
        "  cairn-bench --summarize bench/results/raw --summary-out bench/results --summary-label 2026-11-23\n"
        "  scripts/bench --quick        runs every scenario and its baseline and writes bench/results/\n\n"
        "The write scenario measures acknowledged writes: start cairnd with --apply-paused for it.\n"
        "drain and restart start and stop their own cairnd (--cairnd, --cairnd-config; the config names the shards).\n"
        "Exit codes: 0 the run succeeded or the scenario is not measurable yet, 1 the run failed, 2 bad arguments.\n"};
    app.footer(scenario_help());
    bench_config cfg;
    double warmup_s = 1.0;
    double duration_s = 5.0;
    std::string shards;
    std::string json_path;
    bool quiet = false;
    std::string summarize_dir;
    std::string summary_out;
    std::string summary_label = "results";
    app.add_option("-s,--scenario", cfg.scenario, "write, sustained, drain, feed, get, page, count, split_copy (drops and recreates database cairn_bench_split on the first two --shards), restart, hoard, bomb")
        ->check(CLI::IsMember([] {
            std::vector<std::string> names;
            for (const auto& s : scenarios()) names.push_back(s.name);
            return names;
        }()))
        ->capture_default_str();
    app.add_option("-t,--target", cfg.target, "cairn-http, cairn-ws (pipelined over /v1/ws) or direct")
        ->check(CLI::IsMember(targets()))
        ->capture_default_str();
    app.add_option("-c,--concurrency", cfg.load.concurrency, "connections (closed loop: requests in flight)")
        ->check(CLI::Range(1u, 4096u))
        ->capture_default_str();
    app.add_option("-r,--rate", cfg.load.rate, "open loop: requests/s over all connections (0: closed loop); "
                                               "latency counts from each request's intended send time")
        ->check(CLI::NonNegativeNumber);
    app.add_option("-d,--duration", duration_s, "measured seconds (after warmup)")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("-w,--warmup", warmup_s, "seconds of load before measuring")->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("--threads", cfg.load.threads, "client I/O threads")->check(CLI::Range(1u, 64u))->capture_default_str();
    app.add_option("--host", cfg.host, "cairnd address")->capture_default_str();
    app.add_option("-p,--port", cfg.port, "cairnd port")->capture_default_str();
    app.add_option("--shards", shards, "direct (and get's preload): host:port,... in cairnd's shard order");
    app.add_option("--database", cfg.database, "shard database")->capture_default_str();
    app.add_option("--user", cfg.user, "shard user")->capture_default_str();
    app.add_option("--password", cfg.password, "shard password")->capture_default_str();
    app.add_option("--graph", cfg.graph, "graph name (default per scenario)");
    app.add_option("--key-space", cfg.key_space, "write: node ids are drawn from 1..N")->check(CLI::Range(1ull, 1ull << 62))->capture_default_str();
    app.add_option("--batch", cfg.batch, "write: edges per request (cairn) / statement (direct)")->check(CLI::Range(1u, 1000u))->capture_default_str();
    app.add_option("--preload", cfg.preload, "get: edges written to the shards before reading")->capture_default_str();
    app.add_option("--node-edges", cfg.node_edges, "page: edges per node (default 1000); count: the node's edges (default 1000000)");
    app.add_option("--backlog", cfg.backlog, "drain, restart, feed: edges journaled with apply paused; split_copy: edges on the source shard")->check(CLI::Range(1ull, 100000000ull))->capture_default_str();
    app.add_option("--ws-pipeline", cfg.ws_pipeline, "cairn-ws: requests in flight per connection; "
                                                     "connections = concurrency / this")
        ->check(CLI::Range(1u, 4096u))
        ->capture_default_str();
    app.add_option("--rate-max", cfg.rate_max, "sustained: the highest rate the search tries (it starts at --rate, "
                                               "default 1000)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--hoarders", cfg.hoarders, "hoard: idle and slowloris connections held against cairnd")
        ->check(CLI::Range(0u, 60000u))
        ->capture_default_str();
    app.add_option("--restarts", cfg.restarts, "restart: measured restarts")->check(CLI::Range(1u, 100u))->capture_default_str();
    app.add_option("--cairnd", cfg.cairnd_binary, "drain, restart, sustained: the cairnd binary to start")->check(CLI::ExistingFile);
    app.add_option("--cairnd-config", cfg.cairnd_config, "drain, restart, sustained: its config (shards, database)")->check(CLI::ExistingFile);
    app.add_option("--work-dir", cfg.work_dir, "drain, restart, sustained: journals and logs (default: a new temp dir)");
    app.add_option("--seed", cfg.seed, "random seed")->capture_default_str();
    app.add_option("--json", json_path, "write the report as JSON to this file");
    app.add_flag("-q,--quiet", quiet, "no text report");
    app.add_option("--summarize", summarize_dir,
                   "instead of running: join the --json reports in this directory into tables (see scripts/bench)");
    app.add_option("--summary-out", summary_out, "--summarize: output directory (default: the input directory)");
    app.add_option("--summary-label", summary_label, "--summarize: file name prefix, e.g. the date")->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    spdlog::set_level(spdlog::level::warn);
    if (!summarize_dir.empty()) {
        const auto files = write_summary(summarize_dir, summary_out.empty() ? summarize_dir : summary_out, summary_label);
        for (const auto& f : files.written) std::cout << "wrote " << f << "\n";
        if (!files.error.empty()) {
            std::cerr << "cairn-bench: " << files.error << "\n";
            return 1;
        }
        return 0;
    }
    cfg.load.warmup = std::chrono::duration<double>(warmup_s);
    cfg.load.duration = std::chrono::duration<double>(duration_s);
    if (!shards.empty()) {
        std::string bad;
        auto parsed = parse_shards(shards, bad);
        if (!parsed) {
            std::cerr << "cairn-bench: --shards: bad entry '" << bad << "' (want host:port)\n";
            return 2;
        }
        cfg.shards = std::move(parsed).value();
    }

    // hoard holds thousands of connections: the open-files soft limit (often 1,024) goes up to the hard one.
    if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    const run_report r = run_scenario(cfg);
    if (!quiet) std::cout << to_text(r) << std::flush;
    if (!json_path.empty()) {
        std::ofstream out(json_path);
        out << to_json(r) << "\n";
        if (!out) {
            std::cerr << "cairn-bench: cannot write " << json_path << "\n";
            return 1;
        }
    }
    return r.status == run_status::failed ? 1 : 0;
}
