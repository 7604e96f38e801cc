// cairn-bench's hostile-client scenarios (issue 13), each measured beside its own baseline in the
// same run:
//   hoard  a real client's latency (a new connection per request) without, then with, `hoarders`
//          idle and slowloris connections held against cairnd (each reconnects 15 s after cairnd
//          closes it, as slowloris.py does; measure for 30 s or more to see those waves); target:
//          p99 at most 2x.
//   bomb   what a malformed WebSocket message costs cairn's parser (msgpack headers claiming
//          billions of elements or bytes, nesting past the limit) against a normal message of the
//          same size; target: at most 10x.
// Blocking; one run at a time.
#pragma once

#include "apps/bench/report.hpp"
#include "apps/bench/scenarios.hpp"

namespace cairn::bench {

run_report run_hoard(const bench_config& cfg);
run_report run_bomb(const bench_config& cfg);

}  // namespace cairn::bench
