#include "shards/pool.hpp"

#include "core/assert.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <atomic>
#include <deque>
#include <unordered_set>
#include <mutex>
#include <optional>
#include <vector>

namespace cairn::shards {
namespace detail {

namespace asio = boost::asio;

// What a waiting acquire is given: a slot (with a connection, or empty to connect), or an error.
struct handoff {
    core::error_code ec;
    lease granted;
};

// An acquire waiting for a slot. Its completion handler is type-erased behind complete().
// Every field is guarded by pool_state::mutex_.
struct waiter {
    virtual ~waiter() = default;
    // Posts the handler to its own executor; never runs it inline.
    virtual void complete(handoff h) = 0;
    std::optional<asio::steady_timer> timer;
    bool done = false;
};

template <class Handler>
struct waiter_of final : waiter {
    explicit waiter_of(Handler h) : handler(std::move(h)) {}
    void complete(handoff h) override {
        auto ex = asio::get_associated_executor(handler);
        asio::post(ex, [hd = std::move(handler), x = std::move(h)]() mutable { hd(std::move(x)); });
    }
    Handler handler;
};

struct pool_state : std::enable_shared_from_this<pool_state> {
    pool_state(asio::any_io_executor e, conn_params p, std::size_t max, std::chrono::milliseconds wait)
        : ex(std::move(e)), params(std::move(p)), size_max(max), wait_timeout(wait) {}

    const asio::any_io_executor ex;
    const conn_params params;
    const std::size_t size_max;
    const std::chrono::milliseconds wait_timeout;

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<mariadb_conn>> idle;  // most recently returned last
    std::size_t in_use = 0;                           // slots held by leases
    std::deque<std::shared_ptr<waiter>> waiters;      // FIFO
    std::uint64_t generation = 0;
    bool closed = false;
    // Connections held by leases or being connected, for shutdown()'s abort. A connection is
    // in it exactly while something outside the pool may run an operation on it.
    std::unordered_set<mariadb_conn*> busy;
    std::string last_connect_failure;  // see pool::last_connect_failure
    bool fail_fast = false;            // see pool::set_fail_fast
    bool failing = false;              // the last connect failed
    std::size_t connecting = 0;        // acquires connecting now
    std::atomic<std::uint64_t> connections_made{0};  // see pool::connections_made
    pool::connection_check check;      // see pool::set_connection_check; set before the first acquire

    // A slot if one is free: the most recently used idle connection that is still alive, or
    // an empty slot if the pool has room. Dead idle connections found on the way are dropped.
    std::optional<lease> try_take_locked() {
        while (!idle.empty()) {
            std::unique_ptr<mariadb_conn> c = std::move(idle.back());
            idle.pop_back();
            if (c->probe_idle()) {
                ++in_use;
                busy.insert(c.get());
                return lease(shared_from_this(), std::move(c), generation);
            }
        }
        if (in_use + idle.size() < size_max) {
            ++in_use;
            return lease(shared_from_this(), nullptr, generation);
        }
        return std::nullopt;
    }

    // Called by ~lease: the slot, with its connection or without.
    void give_back(std::unique_ptr<mariadb_conn> c, std::uint64_t lease_generation) noexcept {
        std::shared_ptr<waiter> next;
        std::optional<handoff> grant;
        {
            std::lock_guard lock(mutex_);
            CAIRN_ASSERT(in_use > 0);
            if (c != nullptr) busy.erase(c.get());
            const bool keep = c != nullptr && c->is_open() && !closed && lease_generation == generation;
            if (!keep && c != nullptr) {
                c->close();
                c.reset();
            }
            if (!waiters.empty()) {
                // The slot passes straight to the oldest waiter: in_use does not change.
                next = std::move(waiters.front());
                waiters.pop_front();
                next->done = true;
                next->timer->cancel();
                if (c != nullptr) busy.insert(c.get());
                grant.emplace(handoff{{}, lease(shared_from_this(), std::move(c), generation)});
            } else {
                --in_use;
                if (c != nullptr) {
                    idle.push_back(std::move(c));
                }
            }
        }
        if (next) {
            next->complete(std::move(*grant));
        }
    }

    // Completes with a slot when one is handed over, or with shard_timeout after wait_timeout.
    asio::awaitable<handoff> async_wait_turn() {
        auto self = shared_from_this();
        return asio::async_initiate<const asio::use_awaitable_t<>&, void(handoff)>(
            [self](auto handler) {
                using handler_type = decltype(handler);
                auto w = std::make_shared<waiter_of<handler_type>>(std::move(handler));
                std::unique_lock lock(self->mutex_);
                // A slot may have come free since the caller looked.
                if (self->closed) {
                    lock.unlock();
                    w->complete(handoff{core::errc::shutting_down, {}});
                    return;
                }
                if (auto l = self->try_take_locked()) {
                    lock.unlock();
                    w->complete(handoff{{}, std::move(*l)});
                    return;
                }
                w->timer.emplace(self->ex);
                w->timer->expires_after(self->wait_timeout);
                self->waiters.push_back(w);
                w->timer->async_wait([self, weak = std::weak_ptr<waiter>(w)](const core::error_code& ec) {
                    if (ec) {
                        return;  // Cancelled: the waiter got a slot or the pool closed.
                    }
                    std::unique_lock lk(self->mutex_);
                    auto expired = weak.lock();
                    if (!expired || expired->done) {
                        return;
                    }
                    expired->done = true;
                    std::erase(self->waiters, expired);
                    lk.unlock();
                    expired->complete(handoff{core::errc::shard_timeout, {}});
                });
            },
            asio::use_awaitable);
    }

    void close(bool for_good, bool abort_busy = false) {
        std::vector<std::unique_ptr<mariadb_conn>> drop;
        std::deque<std::shared_ptr<waiter>> fail;
        {
            std::lock_guard lock(mutex_);
            // Under the mutex: a busy connection is not destroyed before it leaves `busy`.
            if (abort_busy) {
                for (mariadb_conn* c : busy) c->abort();
            }
            ++generation;
            drop.swap(idle);
            if (for_good) {
                closed = true;
                fail.swap(waiters);
                for (auto& w : fail) {
                    w->done = true;
                    w->timer->cancel();
                }
            }
        }
        for (auto& w : fail) {
            w->complete(handoff{core::errc::shutting_down, {}});
        }
        // drop's connections close as it goes out of scope (mariadb_conn::close never blocks).
    }
};

// One acquire's connect, counted in pool_state::connecting from construction (with the pool's
// mutex held) until finish(), or until it is destroyed: an exception or a coroutine frame destroyed
// mid-connect must not leave the count raised (it would refuse every connect of a failing pool).
class connect_attempt {
public:
    explicit connect_attempt(pool_state& s) noexcept : s_(s) { ++s_.connecting; }
    ~connect_attempt() {
        if (!done_) {
            std::lock_guard lock(s_.mutex_);
            --s_.connecting;
        }
    }
    connect_attempt(const connect_attempt&) = delete;
    connect_attempt& operator=(const connect_attempt&) = delete;
    // The connect ended; failed says whether it did (see pool::set_fail_fast).
    void finish(bool failed) noexcept {
        std::lock_guard lock(s_.mutex_);
        --s_.connecting;
        s_.failing = failed;
        done_ = true;
    }

private:
    pool_state& s_;
    bool done_ = false;
};

}  // namespace detail

namespace asio = boost::asio;

// -------------------------------------------------------------------------------- lease

lease::lease() noexcept = default;

lease::lease(std::shared_ptr<detail::pool_state> state, std::unique_ptr<mariadb_conn> conn,
             std::uint64_t generation) noexcept
    : state_(std::move(state)), conn_(std::move(conn)), generation_(generation) {}

lease::lease(lease&& other) noexcept
    : state_(std::move(other.state_)), conn_(std::move(other.conn_)), generation_(other.generation_) {}

lease& lease::operator=(lease&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = std::move(other.state_);
        conn_ = std::move(other.conn_);
        generation_ = other.generation_;
    }
    return *this;
}

lease::~lease() { reset(); }

mariadb_conn& lease::operator*() const noexcept {
    CAIRN_ASSERT(conn_ != nullptr);
    return *conn_;
}

mariadb_conn* lease::operator->() const noexcept {
    CAIRN_ASSERT(conn_ != nullptr);
    return conn_.get();
}

void lease::reset() noexcept {
    if (state_) {
        auto state = std::move(state_);
        state_.reset();
        state->give_back(std::move(conn_), generation_);
    }
    conn_.reset();
}

// --------------------------------------------------------------------------------- pool

pool::pool(asio::any_io_executor ex, conn_params params, std::size_t size_max, std::chrono::milliseconds wait_timeout)
    : state_(std::make_shared<detail::pool_state>(std::move(ex), std::move(params), size_max, wait_timeout)) {
    CAIRN_ASSERT(size_max > 0);
}

pool::~pool() { state_->close(true); }

asio::awaitable<core::result<lease>> pool::async_acquire() {
    std::shared_ptr<detail::pool_state> st = state_;  // The pool may be destroyed while we wait.
    std::optional<lease> slot;
    {
        std::lock_guard lock(st->mutex_);
        if (st->closed) {
            co_return core::errc::shutting_down;
        }
        slot = st->try_take_locked();
    }
    if (!slot) {
        detail::handoff h = co_await st->async_wait_turn();
        if (h.ec) {
            co_return h.ec;
        }
        slot.emplace(std::move(h.granted));
    }
    if (!slot->conn_) {
        auto c = std::make_unique<mariadb_conn>(st->ex, st->params);
        std::optional<detail::connect_attempt> attempt;
        {
            std::lock_guard lock(st->mutex_);
            if (st->closed) co_return core::errc::shutting_down;  // `slot` frees its place.
            // A shard whose last connect failed is tried by one acquire at a time; the others
            // fail at once rather than each wait out connect_timeout on it.
            if (st->fail_fast && st->failing && st->connecting > 0) co_return core::errc::shard_unavailable;
            attempt.emplace(*st);
            st->busy.insert(c.get());
        }
        auto r = co_await c->async_connect();
        std::string refused;
        if (r && st->check) {
            refused = co_await st->check(*c);
            if (!refused.empty()) c->close();
        }
        attempt->finish(!r || !refused.empty());
        if (!r || !refused.empty()) {
            std::lock_guard lock(st->mutex_);
            st->busy.erase(c.get());
            st->last_connect_failure = !refused.empty() ? refused
                                       : c->last_errno() != 0
                                           ? fmt::format("MariaDB error {}: {}", c->last_errno(), c->last_error())
                                           : c->last_error();
            if (!refused.empty()) co_return core::errc::shard_unavailable;
            co_return r.error();  // `slot` frees its place on the way out.
        }
        {
            std::lock_guard lock(st->mutex_);
            st->last_connect_failure.clear();
        }
        st->connections_made.fetch_add(1);
        slot->conn_ = std::move(c);  // Still busy: the lease gives it back.
    }
    co_return std::move(*slot);
}

void pool::set_fail_fast(bool on) {
    std::lock_guard lock(state_->mutex_);
    state_->fail_fast = on;
}

void pool::set_connection_check(connection_check check) {
    std::lock_guard lock(state_->mutex_);
    state_->check = std::move(check);
}

std::size_t pool::idle() const {
    std::lock_guard lock(state_->mutex_);
    return state_->idle.size();
}

std::size_t pool::in_use() const {
    std::lock_guard lock(state_->mutex_);
    return state_->in_use;
}

std::size_t pool::waiting() const {
    std::lock_guard lock(state_->mutex_);
    return state_->waiters.size();
}

std::size_t pool::size_max() const noexcept { return state_->size_max; }

std::string pool::endpoint() const { return fmt::format("{}:{}", state_->params.host, state_->params.port); }

std::uint64_t pool::connections_made() const noexcept { return state_->connections_made.load(); }

std::string pool::last_connect_failure() const {
    std::lock_guard lock(state_->mutex_);
    return state_->last_connect_failure;
}

void pool::close_all() { state_->close(false); }

void pool::shutdown() { state_->close(true, true); }

}  // namespace cairn::shards
