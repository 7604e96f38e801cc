// The index definitions (of entities and of cells) this gateway knows: read from the shards' index_defs (every shard
// holds every definition; the newest ts of a name wins across shards) at start, every few
// seconds, and at once after this gateway created or dropped one. Thread-safe.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/indexes.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <mutex>

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace cairn::net {

struct gateway;

class index_registry {
public:
    // The indexes of an entity kind; of a cell table (every column).
    std::vector<core::index_def> of_kind(std::string_view kind) const;
    std::vector<core::index_def> of_cell_table(std::string_view table) const;
    std::optional<core::index_def> find(std::string_view name) const;
    std::vector<core::index_def> all() const;
    bool loaded() const;

    // Reads index_defs from every shard that answers and replaces the set (a shard that does not
    // answer keeps nothing from being replaced: the newest ts wins among those that did).
    // Returns false if no shard answered.
    boost::asio::awaitable<bool> async_refresh(gateway& gw);

    // Refreshes every `every` until stop() (which ends the wait at once). Run it on one
    // coroutine; the registry and gw must outlive it.
    boost::asio::awaitable<void> async_refresh_loop(gateway& gw, std::chrono::milliseconds every);
    void stop();

private:
    // The indexes of entity kind / cell table `name`.
    std::vector<core::index_def> matching(bool cells, std::string_view name) const;

    std::mutex timer_mu_;
    boost::asio::steady_timer* timer_ = nullptr;  // the loop's, while it waits; guarded by timer_mu_
    std::atomic<bool> stopping_{false};
    mutable std::shared_mutex mu_;
    std::map<std::string, core::index_def, std::less<>> live_;
    bool loaded_ = false;
};

}  // namespace cairn::net
