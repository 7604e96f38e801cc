// Helpers shared by the end-to-end tests that drive a real cairnd over HTTP: write edges,
// wait until everything is applied, read the shards directly. Blocking; for tests only.
#pragma once

#include "tests/support/cairnd_process.hpp"
#include "tests/support/http_client.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace cairn::test {

// The status and body of one HTTP exchange; nullopt from the helpers below means no answer.
struct simple_reply {
    int status = 0;
    std::string body;
};

std::optional<simple_reply> http_get(std::uint16_t port, const std::string& target);
std::optional<simple_reply> http_post(std::uint16_t port, const std::string& target, const std::string& body,
                                      const std::map<std::string, std::string>& headers = {});
std::optional<simple_reply> http_request(std::uint16_t port, const std::string& method, const std::string& target,
                                         const std::string& body);

// One keep-alive connection for a writer thread; replace it after a failure.
class http_connection {
public:
    explicit http_connection(std::uint16_t port) : client_(std::make_unique<http_client>(port)) {}
    std::optional<simple_reply> post(const std::string& target, const std::string& body,
                                     const std::map<std::string, std::string>& headers = {});
    // Any method ("PUT", "DELETE", ...), a JSON body.
    std::optional<simple_reply> send(const std::string& method, const std::string& target, const std::string& body);

private:
    std::unique_ptr<http_client> client_;
};

// GET /readyz?verbose as JSON (nullopt if cairnd does not answer).
std::optional<nlohmann::json> readiness(std::uint16_t port);

// Every entity an index query answers, walking its pages: target is the query's path and query
// (e.g. "/v1/entities/entry/by/i?user_id=..&limit=2"), followed by &cursor= until there is none (at
// most pages_max pages). nullopt if a page did not answer 200.
std::optional<std::vector<nlohmann::json>> index_query_all(std::uint16_t port, const std::string& target,
                                                           int pages_max = 200);
// Waits until every shard's lag is 0; false on timeout.
bool wait_applied(std::uint16_t port, std::chrono::seconds timeout);
// A metric's value from GET /metrics (first series whose name and labels start with `series`).
std::optional<double> metric(std::uint16_t port, const std::string& series);

// Forward edges (graph, source, destination, state) on all shards in database db.
std::set<std::tuple<std::string, std::int64_t, std::int64_t, int>> forward_edges(const std::string& db);

// Every edge op (source, destination) in the journal at dir, read in this process while no cairnd
// has it open (node id 1, as cairnd_process configures it). Fails the test if it does not open.
std::set<std::pair<std::int64_t, std::int64_t>> journaled_edges(const std::string& dir, std::size_t shard_count);

// Runs a shell command from the repo root (scripts/shards ...); returns its exit status.
int run_script(const std::string& command);
// Runs a shell command (stdin /dev/null unless it redirects it) and returns its exit status
// (-1 if it did not exit) and everything it printed, stdout and stderr merged.
std::pair<int, std::string> run_capture(const std::string& command);

}  // namespace cairn::test
