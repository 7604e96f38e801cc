// The one shape of a read of one shard, shared by the read routes: wait (bounded) until the
// request's after= seq is applied on that shard, lease a read connection, run the query, give the
// connection back, answer a shard failure with 503 shard-unavailable, else render. Runs on the
// session's strand.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/detail/applied_wait.hpp"
#include "net/gateway.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/awaitable.hpp>

namespace cairn::net::detail {

// query(shards::mariadb_conn&) -> awaitable<core::result<T>>; render(T&&) -> response. Taken by
// reference (g++ 12 cannot copy a closure made inside a coroutine into another coroutine's frame):
// they, what they capture and req must outlive the await, as the caller's frame does.
template <class Query, class Render>
boost::asio::awaitable<response> async_read_shard(gateway& gw, const request& req, core::shard_index shard,
                                                  const wait_params& wait, const Query& query,
                                                  const Render& render) {
    if (wait.after) {
        // Not a braced list inside the co_await: g++ 12 cannot put its backing array in the frame.
        std::vector<core::shard_index> needed(1, shard);
        if (auto p = co_await async_wait_after(gw, req, wait, std::move(needed))) co_return std::move(*p);
    }
    // What must see a write (?after=) is read on the primary; the rest may be served by a replica
    // within limits.replica_staleness_max.
    auto r = co_await gw.shards.at(shard).async_read(query, wait.after ? shards::read_source::primary : shards::read_source::any);
    if (!r) co_return shard_problem(req, r.error());
    co_return render(std::move(r).value());
}

}  // namespace cairn::net::detail
