#include "shards/shard_set.hpp"

#include "core/assert.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cairn::shards {

shard_set::shard_set(boost::asio::any_io_executor ex, journal::journal& j, const core::routing& routing,
                     const core::config& cfg, core::registry& metrics)
    : routing_(routing) {
    const auto counters = std::make_shared<const core::counter_catalog>(cfg.counters);
    const auto cells = std::make_shared<const core::cell_config>(cfg.cells);
    const auto entities = std::make_shared<const core::entity_config>(cfg.entities);
    for (std::uint32_t i = 0; i < cfg.shards.size(); ++i) {
        addresses_.push_back(fmt::format("{}:{}", cfg.shards[i].host, cfg.shards[i].port));
        shard_options o;
        o.index = i;
        o.config_shards = static_cast<std::uint32_t>(cfg.shards.size());
        o.conn = conn_params_of(cfg, i);
        for (const auto& r : cfg.shards[i].replicas) {
            conn_params p = o.conn;
            p.host = r.host;
            p.port = r.port;
            o.replicas.push_back(std::move(p));
        }
        o.lim = cfg.lim;
        o.apply_paused = cfg.apply_paused;
        o.counters = counters;
        o.cells = cells;
        o.entities = entities;
        shards_.push_back(std::make_unique<shard>(ex, j, routing, std::move(o), metrics));
    }
}

shard_set::~shard_set() = default;

conn_params conn_params_of(const core::config& cfg, core::shard_index i) {
    CAIRN_ASSERT(i < cfg.shards.size());
    const auto& s = cfg.shards[i];
    conn_params p;
    p.host = s.host;
    p.port = s.port;
    p.user = s.user;
    p.password = s.password;
    p.database = s.database;
    p.connect_timeout = cfg.lim.connect_timeout;
    p.query_timeout = cfg.lim.query_timeout;
    return p;
}

shard& shard_set::at(core::shard_index i) const {
    CAIRN_ASSERT(i < shards_.size());
    return *shards_[i];
}

void shard_set::notify_all() noexcept {
    for (auto& s : shards_) s->notify();
}

void shard_set::start_all() {
    for (auto& s : shards_) s->start();
}

void shard_set::hold_all_for_routing(bool held) noexcept {
    for (auto& s : shards_) s->hold_for_routing(held);
}

void shard_set::stop_all() {
    for (auto& s : shards_) s->stop();
}

void shard_set::abort_all() {
    for (auto& s : shards_) s->abort();
}

std::string shard_set::busy() const {
    std::string out;
    for (std::size_t i = 0; i < shards_.size(); ++i) fmt::format_to(std::back_inserter(out), "{}{}", i ? " " : "", shards_[i]->busy());
    return out;
}

boost::asio::awaitable<std::vector<core::shard_index>> shard_set::async_wait_applied(
    std::uint64_t seq, std::vector<core::shard_index> shards, std::chrono::milliseconds timeout) const {
    std::sort(shards.begin(), shards.end());
    shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<core::shard_index> behind;
    for (core::shard_index s : shards) {
        // Rounded up: a wait never ends before the timeout the client asked for.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        const bool applied = co_await at(s).async_wait_applied(seq, std::max(left, std::chrono::milliseconds::zero()));
        if (!applied) behind.push_back(s);
    }
    co_return behind;
}

}  // namespace cairn::shards
