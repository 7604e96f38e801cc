#include "shards/shard_set.hpp"

#include "core/assert.hpp"

#include <fmt/format.h>

namespace cairn::shards {

shard_set::shard_set(boost::asio::any_io_executor ex, journal::journal& j, const core::shard_map& map,
                     const core::config& cfg, core::registry& metrics) {
    const auto counters = std::make_shared<const core::counter_catalog>(cfg.counters);
    const auto cells = std::make_shared<const core::cell_config>(cfg.cells);
    const auto entities = std::make_shared<const core::entity_config>(cfg.entities);
    for (std::uint32_t i = 0; i < cfg.shards.size(); ++i) {
        const auto& s = cfg.shards[i];
        shard_options o;
        o.index = i;
        o.conn.host = s.host;
        o.conn.port = s.port;
        o.conn.user = s.user;
        o.conn.password = s.password;
        o.conn.database = s.database;
        o.conn.connect_timeout = cfg.lim.connect_timeout;
        o.conn.query_timeout = cfg.lim.query_timeout;
        o.lim = cfg.lim;
        o.apply_paused = cfg.apply_paused;
        o.counters = counters;
        o.cells = cells;
        o.entities = entities;
        shards_.push_back(std::make_unique<shard>(ex, j, map, std::move(o), metrics));
    }
}

shard_set::~shard_set() = default;

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

}  // namespace cairn::shards
