// Runs one read per shard at once and waits for all of them (multi-get, counter reads that do
// not name their shard). Each task runs on the caller's executor (a session's strand), so the
// tasks and the caller share state without locks. Bounded: the wait ends after `deadline` even
// if a task never reports (it then counts as shard_timeout).
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/log_task_end.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace cairn::net::detail {

struct fan_out_state {
    explicit fan_out_state(boost::asio::any_io_executor ex) : done(std::move(ex)) {}
    boost::asio::steady_timer done;  // cancelled when the last task ends
    std::size_t remaining = 0;
    core::error_code error;  // the first failure
};

template <class Task>
boost::asio::awaitable<void> async_fan_out_one(std::shared_ptr<fan_out_state> st, Task task, core::shard_index shard) {
    core::result<void> r = co_await task(shard);
    if (!r && !st->error) st->error = r.error();
    if (--st->remaining == 0) st->done.cancel();
}

// task(shard) -> awaitable<core::result<void>>, copied once per shard; it must keep what it
// uses alive (shared_ptr) or refer to the caller's frame, which outlives the tasks only until
// the deadline: give tasks shared state. Returns the first error, or shard_timeout.
// The caller must run on a strand (or a one-thread executor): the tasks run on its executor and
// share state without locks, so on a bare multi-threaded io_context they would race.
template <class Task>
boost::asio::awaitable<core::error_code> async_fan_out(const std::vector<core::shard_index>& shards, Task task,
                                                       std::chrono::milliseconds deadline) {
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

}  // namespace cairn::net::detail
