#include "tests/support/e2e.hpp"
#include "tests/support/shard_up.hpp"
#include "tests/support/wait.hpp"

#include "core/config.hpp"
#include "core/hlc.hpp"
#include "journal/journal.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <sys/wait.h>

namespace cairn::test {

namespace {

std::optional<simple_reply> to_simple(core::result<http_reply> r) {
    if (!r) return std::nullopt;
    return simple_reply{static_cast<int>(r.value().code()), std::move(r.value().body)};
}

}  // namespace

std::optional<simple_reply> http_get(std::uint16_t port, const std::string& target) {
    http_client c(port);
    return to_simple(c.send(http::verb::get, target));
}

std::optional<simple_reply> http_post(std::uint16_t port, const std::string& target, const std::string& body,
                                      const std::map<std::string, std::string>& headers) {
    http_client c(port);
    header_list h(headers.begin(), headers.end());
    h.emplace_back("Content-Type", "application/json");
    return to_simple(c.send(http::verb::post, target, body, h));
}

std::optional<simple_reply> http_request(std::uint16_t port, const std::string& method, const std::string& target,
                                         const std::string& body) {
    http_client c(port);
    return to_simple(c.send(http::string_to_verb(method), target, body));
}

std::optional<simple_reply> http_connection::post(const std::string& target, const std::string& body,
                                                  const std::map<std::string, std::string>& headers) {
    header_list h(headers.begin(), headers.end());
    h.emplace_back("Content-Type", "application/json");
    return to_simple(client_->send(http::verb::post, target, body, h));
}

std::optional<simple_reply> http_connection::send(const std::string& method, const std::string& target,
                                                  const std::string& body) {
    return to_simple(client_->send(http::string_to_verb(method), target, body, {{"Content-Type", "application/json"}}));
}

std::optional<nlohmann::json> readiness(std::uint16_t port) {
    auto r = http_get(port, "/readyz?verbose");
    if (!r) return std::nullopt;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

std::optional<std::vector<nlohmann::json>> index_query_all(std::uint16_t port, const std::string& target, int pages_max) {
    std::vector<nlohmann::json> out;
    std::string cursor;
    for (int pages = 0; pages < pages_max; ++pages) {
        auto r = http_get(port, cursor.empty() ? target : target + "&cursor=" + cursor);
        if (!r || r->status != 200) return std::nullopt;
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (!j.is_object()) return std::nullopt;
        for (auto& e : j["entities"]) out.push_back(std::move(e));
        if (!j["next_cursor"].is_string()) break;
        cursor = j["next_cursor"].get<std::string>();
    }
    return out;
}

// Waits until pred holds of the shard checks of /readyz?verbose (an array, one object per shard).
template <class Pred>
bool wait_for_shards(std::uint16_t port, std::chrono::seconds timeout, Pred pred) {
    return wait_until(
        [&] {
            const auto j = readiness(port);
            return j && j->is_object() && j->contains("checks") && (*j)["checks"].contains("shards") &&
                   (*j)["checks"]["shards"].is_array() && pred((*j)["checks"]["shards"]);
        },
        timeout);
}

bool wait_applied(std::uint16_t port, std::chrono::seconds timeout) {
    return wait_for_shards(port, timeout, [](const nlohmann::json& shards) {
        return std::all_of(shards.begin(), shards.end(),
                           [](const nlohmann::json& s) { return s.value("lag_ops", std::uint64_t{1}) == 0; });
    });
}

bool wait_shard_up(std::uint16_t port, std::size_t shard, std::chrono::seconds timeout) {
    return wait_for_shards(port, timeout, [shard](const nlohmann::json& shards) {
        return shards.size() > shard && shards[shard].is_object() && shards[shard].value("up", false);
    });
}

std::optional<double> metric(std::uint16_t port, const std::string& series) {
    auto r = http_get(port, "/metrics");
    if (!r || r->status != 200) return std::nullopt;
    std::istringstream in(r->body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with('#') || !line.starts_with(series)) continue;
        const auto space = line.rfind(' ');
        return std::stod(line.substr(space + 1));
    }
    return std::nullopt;
}

std::set<std::tuple<std::string, std::int64_t, std::int64_t, int>> forward_edges(const std::string& db) {
    std::set<std::tuple<std::string, std::int64_t, std::int64_t, int>> out;
    for (const auto& s : test_shards()) {
        auto rows = query_sql(s, "SELECT graph, node_id, other_id, state FROM edges WHERE direction = 0", db);
        if (!rows) throw std::runtime_error("reading edges failed: " + rows.error().message());
        for (const auto& line : rows.value()) {
            std::istringstream in(line);
            std::string graph;
            std::int64_t a = 0;
            std::int64_t b = 0;
            int state = 0;
            in >> graph >> a >> b >> state;
            out.emplace(graph, a, b, state);
        }
    }
    return out;
}

int run_script(const std::string& command) {
    const char* repo = std::getenv("CAIRN_REPO");
    const std::string full = fmt::format("cd '{}' && {}", repo ? repo : ".", command);
    const int rc = std::system(full.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::pair<int, std::string> run_capture(const std::string& command) {
    std::string out;
    FILE* p = ::popen(("exec </dev/null 2>&1; " + command).c_str(), "r");
    if (p == nullptr) return {-1, "popen failed"};
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = ::pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::set<std::pair<std::int64_t, std::int64_t>> journaled_edges(const std::string& dir, std::size_t shard_count) {
    core::hlc clock(1);
    journal::options o;
    o.path = dir;
    o.node_id = 1;
    o.shard_count = static_cast<std::uint32_t>(shard_count);
    o.size_bytes_max = core::default_config().journal_size_bytes_max;
    auto j = journal::journal::open(o, clock);
    EXPECT_TRUE(j) << "the journal at " << dir << " does not open: " << (j ? "" : j.error().message());
    std::set<std::pair<std::int64_t, std::int64_t>> out;
    if (!j) return out;
    std::uint64_t after = 0;
    for (;;) {
        auto ops = j.value()->read_ops(after, 10'000);
        EXPECT_TRUE(ops) << "reading the journal failed";
        if (!ops || ops.value().empty()) break;
        for (const auto& [seq, op] : ops.value()) {
            if (const auto* e = std::get_if<core::edge_op>(&op.body)) out.emplace(e->source_id, e->destination_id);
            after = seq;
        }
    }
    return out;
}

}  // namespace cairn::test
