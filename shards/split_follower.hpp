// A gateway's side of online resharding (docs/resharding.md): every interval it reads the map's
// versions on shard 0 and routes by what they say. It adopts a split that reached `adopting` — its
// adoption seq made durable in its journal, then recorded on shard 0, while every shard's worker waits
// at that seq — releases the new shard once the copy is written, moves reads when the split has
// switched, cuts over when it is done, and takes the new map once the old rows are being cleaned. The
// table it routes by is kept in the journal (journal::route_record), so a restart routes as before
// even while shard 0 is down. One coroutine on its own strand; start() and stop() from any thread.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"
#include "core/shard_map.hpp"
#include "core/routing.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace cairn::journal {
class journal;
}

namespace cairn::shards {

class shard_set;

class split_follower {
public:
    // set, j and routing must outlive it; routing is the table set routes by.
    split_follower(boost::asio::any_io_executor ex, shard_set& set, journal::journal& j, core::routing& routing,
                   std::uint32_t node_id, std::chrono::milliseconds interval);
    // first_round, if set, is called once on the follower's strand: with true after its first round
    // that succeeded, or with false once rounds have failed for first_round_wait (shard 0 silent).
    void start(std::function<void(bool followed)> first_round = {},
               std::chrono::milliseconds first_round_wait = std::chrono::seconds(10));
    void stop();  // any thread; the loop ends at its next step

    // The table to route by before the first round, for cairnd's start: the journal's record, else
    // version 1, the equal ranges of base_count shards (shard 0's identity count when it answers, else
    // the config's). Errors: the journal's; a record that does not parse is journal_corrupt.
    static core::result<core::route_table> initial_table(const journal::journal& j, std::uint32_t base_count);

    // One round: reads shard 0, adopts or cuts over when due, installs and records the table that
    // follows and wakes the apply workers. Errors: shard 0's (the next round tries again), the
    // journal's, and shard_rejected for stored versions that do not fit together. Must not run
    // concurrently with itself (the loop runs it; tests may call it instead of start()).
    boost::asio::awaitable<core::result<void>> async_follow_once();

private:
    boost::asio::awaitable<void> async_run();
    boost::asio::awaitable<core::result<void>> async_record(const core::route_table& t);
    // Shard's worker sent back to seq, durably in the journal, before the caller goes on (false: stopping).
    boost::asio::awaitable<bool> async_rewind(core::shard_index shard, std::uint64_t seq);
    // Waits until nothing but the caller's own `own` references holds that table (an apply batch or a
    // request that loaded it keeps it until it ends), up to 10 s (then warns) or until stopping.
    boost::asio::awaitable<void> async_wait_unused(const std::shared_ptr<const core::route_table>& replaced, long own);

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::steady_timer timer_;
    shard_set& set_;
    journal::journal& journal_;
    core::routing& routing_;
    std::uint32_t node_id_;
    std::chrono::milliseconds interval_;
    std::atomic<bool> stopping_{false};
    std::function<void(bool)> first_round_;  // on the strand; cleared once called
    std::chrono::milliseconds first_round_wait_{0};
    bool warned_ = false;   // on the strand: a failing round is logged once until one succeeds
    std::string problem_;   // on the strand: what the last round found wrong beyond its error code
    // On the strand: the version and state this gateway last told shard 0 it routes by.
    std::optional<std::pair<std::uint32_t, std::uint8_t>> marked_;
    // On the strand: the split version whose twins this process has put (async_put_twins).
    std::uint32_t twinned_ = 0;
    // Once the copy runs, every op below this gateway's adoption seq that waits in the old owner's
    // error queue or dead letters and has rows in the moved half gets a twin on the new shard (its
    // error queue or dead letters, unless one is there): an op the old owner applies after the copy
    // read its rows still reaches the new shard (docs/resharding.md, "adopting").
    boost::asio::awaitable<core::result<void>> async_put_twins(std::uint32_t version, std::uint32_t from, std::uint32_t to,
                                                               const core::shard_map& next, std::uint64_t adoption_seq);
};

}  // namespace cairn::shards
