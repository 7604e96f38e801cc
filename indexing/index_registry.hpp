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
#include <cstdint>
#include <mutex>

#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace cairn::shards {
class shard_set;
}

namespace cairn::indexing {

class index_registry {
public:
    // Reads the definitions from shards (which must outlive the registry), each read bounded by
    // timeout (connect and query).
    index_registry(shards::shard_set& shards, std::chrono::milliseconds timeout) : shards_(shards), timeout_(timeout) {}

    // Held by a write from the moment it reads the definitions (to compute its ops' index entries)
    // until its ops are journaled or refused. Movable; gives itself back when destroyed.
    class write_ticket {
    public:
        write_ticket() = default;
        write_ticket(write_ticket&& o) noexcept : reg_(std::exchange(o.reg_, nullptr)), epoch_(o.epoch_) {}
        write_ticket& operator=(write_ticket&& o) noexcept {
            if (this != &o) {
                release();
                reg_ = std::exchange(o.reg_, nullptr);
                epoch_ = o.epoch_;
            }
            return *this;
        }
        write_ticket(const write_ticket&) = delete;
        write_ticket& operator=(const write_ticket&) = delete;
        ~write_ticket() { release(); }

    private:
        friend class index_registry;
        write_ticket(index_registry* r, std::uint64_t e) : reg_(r), epoch_(e) {}
        void release() noexcept;
        index_registry* reg_ = nullptr;
        std::uint64_t epoch_ = 0;
    };

    // Take one before reading the definitions for a write; keep it until the write is journaled.
    write_ticket enter_write();
    // Waits until every ticket taken before the call was given back (polling every millisecond,
    // at most timeout): after it, every op journaled later was computed from the definitions
    // this registry held when the call began. A new index's back-fill needs that (docs/entities.md:
    // "Creating an index under live writes"). Returns false on timeout. Any executor.
    boost::asio::awaitable<bool> async_write_barrier(std::chrono::milliseconds timeout);

    // The indexes of an entity kind; of a cell table (every column).
    std::vector<core::index_def> of_kind(std::string_view kind) const;
    std::vector<core::index_def> of_cell_table(std::string_view table) const;
    std::optional<core::index_def> find(std::string_view name) const;
    std::vector<core::index_def> all() const;
    bool loaded() const;

    // Reads index_defs from every shard that answers and replaces the set (a shard that does not
    // answer keeps nothing from being replaced: the newest ts wins among those that did).
    // Returns false if no shard answered.
    boost::asio::awaitable<bool> async_refresh();

    // Refreshes every `every` until stop() (which ends the wait at once). Run it on one
    // coroutine; the registry must outlive it.
    boost::asio::awaitable<void> async_refresh_loop(std::chrono::milliseconds every);
    void stop();

private:
    // The indexes of entity kind / cell table `name`.
    std::vector<core::index_def> matching(bool cells, std::string_view name) const;

    shards::shard_set& shards_;
    const std::chrono::milliseconds timeout_;
    std::mutex timer_mu_;
    boost::asio::steady_timer* timer_ = nullptr;  // the loop's, while it waits; guarded by timer_mu_
    std::atomic<bool> stopping_{false};
    mutable std::shared_mutex mu_;
    std::map<std::string, core::index_def, std::less<>> live_;
    bool loaded_ = false;
    // Refreshes run concurrently (the loop, and the routes after a create or drop); the one that
    // started last wins, so a slow refresh that read the shards before a create cannot put back
    // the set without the new index after a later one installed it.
    std::atomic<std::uint64_t> refreshes_started_{0};
    std::uint64_t refresh_installed_ = 0;  // guarded by mu_

    std::mutex tickets_mu_;
    std::uint64_t ticket_epoch_ = 0;                      // guarded by tickets_mu_
    std::map<std::uint64_t, std::size_t> tickets_out_;    // epoch -> tickets not given back; guarded by tickets_mu_
};

}  // namespace cairn::indexing
