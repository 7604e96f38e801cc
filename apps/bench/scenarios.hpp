// cairn-bench's scenarios: each one is a name, the issue 3 line it measures, the targets it
// supports, and a run function that returns a report. New scenarios (page, count, WebSocket)
// plug in by adding an entry to scenarios(); until then they report "not measurable".
// Blocking; one run at a time.
#pragma once

#include "apps/bench/load.hpp"
#include "apps/bench/report.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cairn::bench {

struct shard_address {
    std::string host;
    std::uint16_t port = 0;
};

// "host:port,host:port" -> addresses; an error names the bad entry.
core::result<std::vector<shard_address>> parse_shards(const std::string& list, std::string& bad_entry);

struct bench_config {
    std::string scenario = "write";
    std::string target = "cairn-http";
    load_options load;
    // cairn
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    // direct: the same shards, in the same order, as cairnd's config
    std::vector<shard_address> shards;
    std::string database = "cairn";
    std::string user = "cairn";
    std::string password = "cairn";
    // data
    std::string graph;              // default: per scenario
    std::uint64_t key_space = 1000000;  // write: ids drawn from 1..key_space
    std::uint32_t batch = 1;        // write: edges per request (cairn) or per statement (direct)
    std::uint32_t ws_pipeline = 16; // cairn-ws: requests in flight per connection (connections = concurrency / this)
    std::uint64_t preload = 10000;  // get, page: edges written before reading
    std::uint64_t node_edges = 0;   // page: edges per node (default 1000); count: the node's edges (default 1000000)
    std::uint64_t backlog = 100000; // drain, restart: journaled edges
    std::uint32_t restarts = 3;     // restart: measured restarts
    double rate_max = 256000;       // sustained: the search's highest rate (it starts at load.rate or 1000)
    std::uint32_t hoarders = 10000; // hoard: idle and slowloris connections held against cairnd
    std::uint64_t seed = 1;
    // drain, restart, sustained: the cairnd that cairn-bench starts and stops itself
    std::string cairnd_binary;
    std::string cairnd_config;
    std::string work_dir;           // journals and logs; default a new directory under $TMPDIR
};

struct scenario_def {
    std::string name;
    std::string measures;  // the issue 3 line
    // Runs the scenario for cfg.target; never throws for operating errors (they become a
    // failed report).
    std::function<run_report(const bench_config&)> run;
};

const std::vector<scenario_def>& scenarios();
const std::vector<std::string>& targets();

// Runs cfg.scenario for cfg.target; an unknown scenario or target is a failed report.
run_report run_scenario(const bench_config& cfg);

}  // namespace cairn::bench
