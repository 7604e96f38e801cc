// Every shard of a gateway (shards/shard.hpp), indexed by core::shard_index, and the fan-out of
// one read to several shards at once. Built from the config by cairnd's main, which keeps it
// until the io_context has stopped; routes, the cleaner and the admin API hold a reference.
// Thread-safe: the shards are fixed for the set's lifetime.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "core/log_task_end.hpp"
#include "core/metrics.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "shards/shard.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace cairn::shards {

// How cairnd connects to shard i of cfg (asserts i < cfg.shards.size()).
conn_params conn_params_of(const core::config& cfg, core::shard_index i);

class shard_set {
public:
    // One shard per cfg.shards entry, on ex. j and routing must outlive the set.
    shard_set(boost::asio::any_io_executor ex, journal::journal& j, const core::routing& routing,
              const core::config& cfg, core::registry& metrics);
    ~shard_set();
    shard_set(const shard_set&) = delete;
    shard_set& operator=(const shard_set&) = delete;

    std::size_t size() const noexcept { return shards_.size(); }
    // Shard i's host:port as the config lists it (a split names its new shard so); asserts i < size().
    const std::string& address(core::shard_index i) const { return addresses_.at(i); }
    // Which shard holds a key: the route table in force (core/routing.hpp).
    const core::routing& routing() const noexcept { return routing_; }
    // Asserts that i < size().
    shard& at(core::shard_index i) const;

    void notify_all() noexcept;
    void start_all();
    // Every shard's worker (apply_worker::hold_for_routing); any thread.
    void hold_all_for_routing(bool held) noexcept;
    void stop_all();
    void abort_all();
    // Connections in use per shard, "apply/read apply/read ...", for the stop's log.
    std::string busy() const;

    // Waits until the apply worker of every shard in shards has applied seq, all within one
    // deadline of timeout. Returns the shards that had not by then (empty: all applied). Any
    // executor that is a strand or a single-threaded io_context (shard::async_wait_applied).
    boost::asio::awaitable<std::vector<core::shard_index>> async_wait_applied(std::uint64_t seq,
                                                                              std::vector<core::shard_index> shards,
                                                                              std::chrono::milliseconds timeout) const;

    // Runs task(shard) for each of shards at once and waits for all of them (multi-gets, reads
    // that do not name their shard). Each task runs on the caller's executor, which must be a
    // strand or a single-threaded io_context: the tasks and the caller then share state without
    // locks. task(shard) -> awaitable<core::result<void>>, copied once per shard; it must keep
    // what it uses alive (shared_ptr) or refer to the caller's frame, which outlives the tasks
    // only until the deadline. Returns the first error, or shard_timeout if a task had not ended
    // by the deadline; success when every task succeeded.
    template <class Task>
    static boost::asio::awaitable<core::error_code> async_fan_out(const std::vector<core::shard_index>& shards,
                                                                  Task task, std::chrono::milliseconds deadline);

    // The read of several shards at once: async_fan_out of query(shard, conn) ->
    // awaitable<core::result<void>>, each with a read connection of its shard leased for it (a
    // failed lease is that shard's error) and given back when its query ends. Same rules as
    // async_fan_out; the set must outlive the deadline.
    template <class Query>
    boost::asio::awaitable<core::error_code> async_read_each(const std::vector<core::shard_index>& shards, Query query,
                                                             std::chrono::milliseconds deadline) const;

private:
    struct fan_out_state {
        explicit fan_out_state(boost::asio::any_io_executor ex) : done(std::move(ex)) {}
        boost::asio::steady_timer done;  // cancelled when the last task ends
        std::size_t remaining = 0;
        core::error_code error;  // the first failure
    };
    template <class Task>
    static boost::asio::awaitable<void> async_fan_out_one(std::shared_ptr<fan_out_state> st, Task task,
                                                          core::shard_index shard);

    const core::routing& routing_;
    std::vector<std::unique_ptr<shard>> shards_;
    std::vector<std::string> addresses_;
};

template <class Task>
boost::asio::awaitable<void> shard_set::async_fan_out_one(std::shared_ptr<fan_out_state> st, Task task,
                                                          core::shard_index shard) {
    core::result<void> r = co_await task(shard);
    if (!r && !st->error) st->error = r.error();
    if (--st->remaining == 0) st->done.cancel();
}

template <class Task>
boost::asio::awaitable<core::error_code> shard_set::async_fan_out(const std::vector<core::shard_index>& shards,
                                                                  Task task, std::chrono::milliseconds deadline) {
    auto ex = co_await boost::asio::this_coro::executor;
    auto st = std::make_shared<fan_out_state>(ex);
    st->remaining = shards.size();
    st->done.expires_after(deadline);
    for (const auto s : shards) {
        boost::asio::co_spawn(ex, async_fan_out_one(st, task, s), core::log_task_end("fan_out"));
    }
    if (st->remaining > 0) {
        core::error_code ec;
        co_await st->done.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }
    if (st->remaining > 0 && !st->error) st->error = core::errc::shard_timeout;
    co_return st->error;
}

template <class Query>
boost::asio::awaitable<core::error_code> shard_set::async_read_each(const std::vector<core::shard_index>& shards,
                                                                    Query query, std::chrono::milliseconds deadline) const {
    auto task = [this, query](core::shard_index s) -> boost::asio::awaitable<core::result<void>> {
        const auto one = [&](mariadb_conn& conn) { return query(s, conn); };
        co_return co_await at(s).async_read(one);
    };
    co_return co_await async_fan_out(shards, task, deadline);
}

}  // namespace cairn::shards
