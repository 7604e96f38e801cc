// Awaitable adapters over the callback API of journal::journal: the journal's writer thread
// completes the callback, and the awaiting coroutine resumes on its own executor. The journal
// must outlive the await.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "journal/journal.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>

namespace cairn::shards {

namespace detail {

// Wraps a move-only completion handler so that std::function (copyable) can carry it, and
// resumes it on its associated executor with a work guard held meanwhile.
template <class Value, class Handler>
auto make_journal_callback(Handler&& handler) {
    using handler_t = std::decay_t<Handler>;
    auto h = std::make_shared<handler_t>(std::forward<Handler>(handler));
    auto work = boost::asio::make_work_guard(boost::asio::get_associated_executor(*h));
    // The journal calls this once, but may keep the std::function until after the io_context is
    // gone (in its queue, or when it is destroyed): so the handler, and the executor (a strand)
    // inside it, move out into the posted call, and nothing of them stays behind in the callback.
    return [h, work](core::result<Value> r) mutable {
        auto ex = boost::asio::get_associated_executor(*h);
        boost::asio::post(ex, [h = std::move(h), r = std::move(r)]() mutable {
            auto owned = std::move(h);
            (*owned)(std::move(r));
        });
        work.reset();
    };
}

}  // namespace detail

// Appends ops; resumes after the commit (or with the journal's error). See journal::append.
inline boost::asio::awaitable<core::result<journal::appended>> async_append(journal::journal& j,
                                                                           std::vector<core::op> ops,
                                                                           std::string idempotency_key) {
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(core::result<journal::appended>)>(
        [&j](auto handler, std::vector<core::op> o, std::string key) {
            j.append(std::move(o), std::move(key), detail::make_journal_callback<journal::appended>(std::move(handler)));
        },
        boost::asio::use_awaitable, std::move(ops), std::move(idempotency_key));
}

// Commits an apply outcome atomically; see journal::commit_outcome.
inline boost::asio::awaitable<core::result<void>> async_commit_outcome(journal::journal& j,
                                                                      journal::apply_outcome outcome) {
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(core::result<void>)>(
        [&j](auto handler, journal::apply_outcome o) {
            j.commit_outcome(std::move(o), detail::make_journal_callback<void>(std::move(handler)));
        },
        boost::asio::use_awaitable, std::move(outcome));
}

}  // namespace cairn::shards
