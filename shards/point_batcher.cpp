#include "shards/point_batcher.hpp"

#include "core/idle_tasks.hpp"
#include "core/log_task_end.hpp"
#include "shards/edge_store.hpp"
#include "shards/pool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace cairn::shards {

namespace asio = boost::asio;

namespace {

// After reads last met, this many batches of a lone read in a row before a read that finds the
// batcher idle stops waiting for the end of its thread's turn.
constexpr unsigned contention_memory = 8;

// Resumes the calling coroutine once its thread's loop has run every handler ready now
// (core/idle_tasks.hpp). Requires core::idle_loop_running().
asio::awaitable<void> async_end_of_turn() {
    co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
        [](auto handler) {
            core::defer_to_idle(core::idle_task([h = std::move(handler)]() mutable {
                auto ex = asio::get_associated_executor(h);
                asio::post(ex, std::move(h));
            }));
        },
        asio::use_awaitable);
}

}  // namespace

template <class Key, class Value>
struct point_batcher<Key, Value>::slot {
    std::string graph;
    Key key;
    std::shared_ptr<asio::steady_timer> timer;  // on the reader's executor; cancelled when done
    core::result<Value> result = core::errc::shard_timeout;
    bool done = false;  // guarded by the batcher's mu_
};

template <class Key, class Value>
point_batcher<Key, Value>::point_batcher(asio::any_io_executor ex, pool& p, fetch_fn fetch, std::size_t runners_max,
                                         std::size_t batch_keys_max, core::histogram* batch_keys)
    : ex_(std::move(ex)),
      pool_(p),
      fetch_(fetch),
      runners_max_(std::max<std::size_t>(1, runners_max)),
      batch_keys_max_(std::max<std::size_t>(1, batch_keys_max)),
      batch_keys_(batch_keys) {}

template <class Key, class Value>
point_batcher<Key, Value>::~point_batcher() = default;

template <class Key, class Value>
asio::awaitable<core::result<Value>> point_batcher<Key, Value>::async_get(std::string graph, Key key) {
    auto s = std::make_shared<slot>();
    s->graph = std::move(graph);
    s->key = std::move(key);
    // The wait is bounded by the runner's own timeouts (acquire + query); the timer's expiry
    // only guards against a lost wake-up.
    s->timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, std::chrono::minutes(5));
    bool start = false;
    bool end_of_turn = false;
    {
        std::lock_guard lock(mu_);
        queue_.push_back(s);
        if (runners_ < runners_max_) {
            ++runners_;
            start = true;
            end_of_turn = contention_ > 0;
        } else {
            contention_ = contention_memory;
        }
    }
    if (start) {
        // The batcher was idle (the common case at low load): this read runs the first batch
        // itself, with no hand-off to another coroutine and back, then leaves whatever arrived
        // meanwhile to a runner, which takes over the runner count this read took. Under
        // concurrent reads it goes at the end of its thread's turn: the reads that arrived with it
        // (the other frames of one WebSocket read, the other requests of one wakeup) queue
        // meanwhile and share its query. A lone reader does not wait: that costs a poll of the
        // sockets and a hand-off, and nobody would join.
        if (end_of_turn && core::idle_loop_running()) co_await async_end_of_turn();
        auto batch = take_batch();
        if (!batch.empty()) co_await async_serve(std::move(batch), s.get());
        bool more = false;
        {
            std::lock_guard lock(mu_);
            more = !queue_.empty();
            if (!more) --runners_;
        }
        if (more) asio::co_spawn(ex_, async_run(), core::log_task_end{"point read batcher"});
    }
    for (;;) {
        {
            std::lock_guard lock(mu_);
            if (s->done) co_return std::move(s->result);
        }
        core::error_code ec;
        co_await s->timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (!ec) {
            // Expired: nothing answered within five minutes. The slot may still be queued; the
            // runner that takes it will find nobody waiting, which is harmless.
            std::lock_guard lock(mu_);
            if (!s->done) co_return core::errc::shard_timeout;
        }
    }
}

template <class Key, class Value>
std::vector<std::shared_ptr<typename point_batcher<Key, Value>::slot>> point_batcher<Key, Value>::take_batch() {
    std::vector<std::shared_ptr<slot>> batch;
    std::lock_guard lock(mu_);
    if (queue_.empty()) return batch;
    // Every queued read of the first one's graph, up to the limit, in arrival order.
    const std::string graph = queue_.front()->graph;
    for (auto it = queue_.begin(); it != queue_.end() && batch.size() < batch_keys_max_;) {
        if ((*it)->graph == graph) {
            batch.push_back(std::move(*it));
            it = queue_.erase(it);
        } else {
            ++it;
        }
    }
    if (batch.size() > 1 || !queue_.empty()) {
        contention_ = contention_memory;
    } else if (contention_ > 0) {
        --contention_;
    }
    return batch;
}

template <class Key, class Value>
asio::awaitable<void> point_batcher<Key, Value>::async_serve(std::vector<std::shared_ptr<slot>> batch, const slot* self) {
    // Each distinct key once, ascending.
    std::vector<Key> keys;
    keys.reserve(batch.size());
    for (const auto& s : batch) keys.push_back(s->key);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (batch_keys_) batch_keys_->observe(static_cast<double>(keys.size()));
    core::result<std::vector<Value>> r = core::errc::shard_unavailable;
    {
        auto lease = co_await pool_.async_acquire();
        if (!lease) {
            r = lease.error();
        } else {
            r = co_await fetch_(*lease.value(), batch.front()->graph, std::span<const Key>(keys));
        }
    }
    {
        std::lock_guard lock(mu_);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (r) {
                const auto at = std::lower_bound(keys.begin(), keys.end(), batch[i]->key) - keys.begin();
                batch[i]->result = r.value().at(static_cast<std::size_t>(at));
            } else {
                batch[i]->result = r.error();
            }
            batch[i]->done = true;
        }
    }
    // A timer may only be touched on its own executor; the shared_ptr keeps it alive. The read
    // that ran this batch itself is not waiting.
    for (const auto& s : batch) {
        if (s.get() != self) asio::post(s->timer->get_executor(), [t = s->timer] { t->cancel(); });
    }
}

template <class Key, class Value>
asio::awaitable<void> point_batcher<Key, Value>::async_run() {
    for (;;) {
        auto batch = take_batch();
        if (batch.empty()) {
            std::lock_guard lock(mu_);
            if (queue_.empty()) {
                --runners_;
                co_return;
            }
            continue;  // a read arrived between the two locks
        }
        co_await async_serve(std::move(batch), nullptr);
    }
}

template class point_batcher<std::pair<std::int64_t, std::int64_t>, std::optional<core::edge_row>>;
template class point_batcher<node_count_key, std::int64_t>;

}  // namespace cairn::shards
