// The node ids the split tests write (online resharding, docs/resharding.md): a deployment of two
// shards whose shard 0 splits into a third. Ids of the half that moves (upper), of the half that stays
// on shard 0 (lower) and of shard 1 (on_one, the destinations, so that the backward rows stay out of
// the way); and the forward edges a shard's database holds. Tests only.
#pragma once

#include "core/shard_map.hpp"
#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/shard_up.hpp"
#include "tests/support/own_servers.hpp"
#include "tests/support/test_shards.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace cairn::test {

struct split_keys {
    core::shard_map three = core::shard_map::equal_ranges(2).split(0).value();  // the map after the split
    std::vector<std::int64_t> upper, lower, on_one;
};

// The first n ids of each kind (ids from 1 up, by the map after the split).
inline split_keys pick_split_keys(std::size_t n, std::size_t n_one) {
    split_keys k;
    for (std::int64_t id = 1; k.upper.size() < n || k.lower.size() < n || k.on_one.size() < n_one; ++id) {
        const auto s = k.three.shard_of_id(id);
        if (s == 2 && k.upper.size() < n) k.upper.push_back(id);
        if (s == 0 && k.lower.size() < n) k.lower.push_back(id);
        if (s == 1 && k.on_one.size() < n_one) k.on_one.push_back(id);
    }
    return k;
}

using edge_set = std::set<std::pair<std::int64_t, std::int64_t>>;

// The forward edges (source, destination) of graph g in database `database` on server s (none when
// it has no edges table yet: nothing applied there).
inline edge_set forward_edges(const shard_endpoint& s, const std::string& database) {
    edge_set out;
    auto rows = query_sql(s, "SELECT node_id, other_id FROM edges WHERE graph = 'g' AND direction = 0", database);
    if (!rows) return out;
    for (const auto& line : rows.value()) {
        std::istringstream in(line);
        std::int64_t a = 0, b = 0;
        in >> a >> b;
        out.emplace(a, b);
    }
    return out;
}

// Writes the edge source -> destination in graph g through cairnd on port; true when acknowledged.
inline bool post_edge(std::uint16_t port, std::int64_t source, std::int64_t destination) {
    auto w = http_post(port, "/v1/graphs/g/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", source, destination));
    return w && w->status == 202;
}

// The deployment a split test starts from: the databases made fresh (o.database on both servers of
// o.shards, database_n on the second for the third shard), the edges upper[i] -> on_one[i] and
// lower[i] -> on_one[i] for i < edges written through a first gateway of o (into *acked if given) and
// applied, the gateway stopped; then o lists the third shard (database_n on the second server), while
// keys still route by the two shards the deployment started with. Empty, or what failed.
inline std::string deploy_edges_then_list_a_third_shard(cairnd_options& o, const split_keys& keys, std::size_t edges,
                                                        const std::string& database_n, edge_set* acked = nullptr) {
    fresh_database(o.database);
    fresh_database(database_n);
    {
        cairnd_process first(o);
        if (!first.start()) return "the first gateway did not start: " + first.log_tail();
        for (std::size_t i = 0; i < edges; ++i) {
            for (const auto source : {keys.upper.at(i), keys.lower.at(i)}) {
                if (!post_edge(first.port(), source, keys.on_one.at(i))) return fmt::format("the edge {} -> {} was not acknowledged", source, keys.on_one.at(i));
                if (acked) acked->insert({source, keys.on_one.at(i)});
            }
        }
        if (!wait_applied(first.port(), std::chrono::seconds(60))) return "the first edges were not applied: " + first.log_tail(8000);
        if (first.terminate() != 0) return "the first gateway did not stop cleanly: " + first.log_tail();
    }
    o.shards.push_back(o.shards.at(1));
    o.shard_databases = {"", "", database_n};
    return {};
}

// A backlog of the moved half in another gateway's journal: through a gateway of options o, with shard
// 0's applying paused, the edges upper[i] -> on_one[(i + shift) % n] for i < count are journaled (into
// *backlog) and wait for the old owner, while the new shard's worker (shard 2) passes them under the map
// of two shards (none is its own); once it has, the gateway stops. Empty, or what failed.
inline std::string journal_a_backlog_of_the_moved_half(const cairnd_options& o, const split_keys& keys, std::size_t count,
                                                       std::size_t shift, edge_set& backlog) {
    cairnd_process b(o);
    if (!b.start()) return "the gateway did not start: " + b.log_tail();
    auto paused = http_post(b.port(), "/v1/admin/apply/pause", R"({"shard": 0})");
    if (!paused || paused->status != 200) return "pausing shard 0: " + (paused ? paused->body : std::string("no answer"));
    const auto applied = [&](const char* shard) { return metric(b.port(), fmt::format("cairn_apply_applied_seq{{shard=\"{}\"}}", shard)); };
    const auto on_0 = applied("0");
    double last = 0;  // the backlog's last seq
    for (std::size_t i = 0; i < count; ++i) {
        const std::pair<std::int64_t, std::int64_t> e{keys.upper.at(i), keys.on_one.at((i + shift) % keys.on_one.size())};
        auto w = http_post(b.port(), "/v1/graphs/g/edges", fmt::format(R"({{"source_id": {}, "destination_id": {}}})", e.first, e.second));
        if (!w || w->status != 202) return fmt::format("the edge {} -> {} was not acknowledged", e.first, e.second);
        last = nlohmann::json::parse(w->body)["seq"].get<double>();
        backlog.insert(e);
    }
    if (!wait_until([&] { return applied("2").value_or(0) >= last; }, std::chrono::seconds(30))) {
        return "the new shard's worker did not pass the backlog: " + b.log_tail(8000);
    }
    if (applied("0") != on_0) return "shard 0 applied some of the backlog";
    if (b.terminate() != 0) return "the gateway did not stop cleanly: " + b.log_tail();
    return {};
}


}  // namespace cairn::test
