// The route table (core/route_table.hpp) a gateway routes by now, which a split changes while the
// gateway runs. Every thread may load() it; whoever acts on a table holds the loaded pointer for as
// long as it acts, so one batch or one request is routed by one table from start to end.
// Installing is for the one place that follows the shards' map (cairnd's split follower, a test).
#pragma once

#include "core/route_table.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace cairn::core {

class routing {
public:
    explicit routing(route_table first) : current_(std::make_shared<const route_table>(std::move(first))) {}
    routing(const routing&) = delete;
    routing& operator=(const routing&) = delete;

    std::shared_ptr<const route_table> load() const noexcept { return current_.load(std::memory_order_acquire); }

    // The journal's last seq (last_seq()) and the table, read as one: no install_at() falls between
    // them. An apply worker takes only the ops through that seq under that table.
    template <class LastSeq>
    std::pair<std::uint64_t, std::shared_ptr<const route_table>> load_with_last(LastSeq&& last_seq) const {
        std::lock_guard lock(seq_mutex_);
        const std::uint64_t last = last_seq();
        return {last, load()};
    }

    // Installs make(last_seq() + 1) — a table whose adoption or cut-over seq is the journal's next —
    // as one step with respect to load_with_last(): every op at or past that seq is taken under the
    // new table, since a worker that loaded the old one read a last seq below it.
    template <class LastSeq, class Make>
    void install_at(LastSeq&& last_seq, Make&& make) {
        std::lock_guard lock(seq_mutex_);
        install(make(last_seq() + 1));
    }

    // Replaces the table, for a change that does not route by seq (a held shard released, reads moved).
    void install(route_table next) {
        current_.store(std::make_shared<const route_table>(std::move(next)), std::memory_order_release);
    }

private:
    std::atomic<std::shared_ptr<const route_table>> current_;
    mutable std::mutex seq_mutex_;
};

}  // namespace cairn::core
