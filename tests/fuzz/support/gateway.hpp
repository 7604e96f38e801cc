// An in-process cairnd for the fuzz targets of the whole request path (http_request_fuzz,
// ws_dispatch_fuzz): the real journal (in a temporary folder), shard set, router with every route
// of the API, auth, HTTP server and WebSocket handler, wired as apps/cairnd.cpp wires them and
// served on a loopback port by two I/O threads, so each input travels the same code a client's
// bytes do: Beast's parser under cairn's limits, the session's HTTP rules, auth, the router and
// each route's body parsing, and over WebSocket the real dispatch.
//
// The shards: by default two addresses where nothing listens (127.0.0.1:9), so every read ends in
// a shard-unavailable problem after its request was parsed and checked, and writes are journaled
// and acknowledged as usual (applying them fails and waits, as during an outage). With
// CAIRN_FUZZ_SHARDS=host:port,host:port (e.g. the test shards of scripts/shards) the reads reach
// real MariaDB and their answers are rendered too, at a lower rate of executions.
//
// The gateway starts on first use and lives until the process exits (an atexit hook stops its
// threads). Tokens: fuzz::admin_token (admin) and fuzz::read_token (read) are configured, so the
// Authorization header is parsed and checked like any other input.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::fuzz {

inline constexpr std::string_view admin_token = "fuzz-admin-token-0123456789";
inline constexpr std::string_view read_token = "fuzz-read-token-0123456789";

// The port of the running gateway (started by the first call; aborts if it cannot start).
std::uint16_t gateway_port();

// Sends bytes on a new connection, closes its sending side and returns everything the gateway
// wrote back until it closed the connection; nullopt if it has not closed it within timeout
// (a hang: the caller reports it). A timeout during which this process was starved of the CPU
// (starved_since) is extended, up to 8 times: a campaign at the lowest priority beside a busy
// machine must not report the machine as a hang.
std::optional<std::string> exchange(std::string_view bytes,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(8));

// The time this process's threads have spent runnable but waiting for a CPU, summed over its threads
// (/proc/self/task/*/schedstat), and whether more than a quarter of `window` passed so since `mark`
// (the deadlocked or idle wait, by contrast, sleeps: it adds nothing).
std::chrono::nanoseconds runqueue_wait();
bool starved_since(std::chrono::nanoseconds mark, std::chrono::milliseconds window);

// Whether the gateway still answers GET /livez with 200 on a new connection.
bool gateway_serves();

// The gateway's connection vitals from its metrics (open connections, evictions, refusals, accept
// errors, WebSocket sessions and requests), one line, for the message of a harness that fails.
std::string gateway_vitals();

// Called after each input: every 128th call checks gateway_serves() and aborts, naming target,
// when the gateway no longer answers.
void check_still_serving(const char* target);

// The gateway also defines LLVMFuzzerInitialize, which starts it before the first input.

}  // namespace cairn::fuzz
