// What moves a split from state to state once an operator has started it (docs/resharding.md, "The
// phases"): every gateway runs one, and the one with the lowest node id among the live leases on shard
// 0 acts. Each interval it reads the active split and takes the next step when its condition holds:
//   adopting -> copying      every live gateway adopted, and shard I applied each one's ops up to its
//                            adoption seq - 1 (its applied mark there);
//   copying -> catching_up   the range is copied from I to N (shards/range_copy.hpp); after an
//                            interruption from the first group not marked done, inside it past its
//                            marked position if its rows stand alone (the copy is idempotent);
//   catching_up -> verifying N's applied mark of each adopted gateway reached I's;
//   verifying -> switched    the diff of every table of the range but the counters' is clean (counters
//                            differ by design: R's increments from the adoption are N's alone); a diff
//                            that stays dirty for verify_attempts rounds fails the split;
//   switched -> done,        every live gateway routes by the state's table (shard_map_adoptions'
//   done -> cleaning         seen_state, which each split_follower writes); before done, I's counter
//                            sums of R go (reads over every shard would count them again); before
//                            cleaning, I also applied each gateway's ops below its cut-over seq;
//   cleaning -> retired      I's rows of R are deleted (async_delete_range), throttled like the copy.
// One coroutine on its own strand; start() and stop() from any thread.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"
#include "shards/map_store.hpp"
#include "shards/range_copy.hpp"  // range_chunk_diff, held by value

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;
class shard_set;

struct split_driver_options {
    std::chrono::milliseconds interval{1000};
    std::size_t copy_chunk_rows = 1000;
    double copy_rows_per_second_max = 0;  // 0: as fast as the shards go
    int verify_attempts = 60;             // diff rounds before a dirty diff fails the split
};

class split_driver {
public:
    // set and cfg must outlive it (cfg's shards give the copy its own connections).
    split_driver(boost::asio::any_io_executor ex, shard_set& set, const core::config& cfg, std::uint32_t node_id,
                 split_driver_options opts);
    void start();
    void stop();  // any thread; the loop (and a copy under way, at its next chunk) ends at its next step

    // One round: at most one state moved. Errors: the shards' (the next round tries again).
    boost::asio::awaitable<core::result<void>> async_drive_once();

private:
    boost::asio::awaitable<void> async_run();
    // Connects one of its own connections to shard `index` and checks the shard's identity there.
    boost::asio::awaitable<core::result<void>> async_connect_checked(mariadb_conn& conn, core::shard_index index);
    // The source's connection of a copy, diff or clean, checked, and the plan read from it.
    boost::asio::awaitable<core::result<std::vector<copy_group>>> async_open_source(mariadb_conn& source, core::shard_index from);
    // Both connections of a copy or diff, checked, and the copy's plan read from the source.
    boost::asio::awaitable<core::result<std::vector<copy_group>>> async_open_pair(mariadb_conn& source, core::shard_index from,
                                                                                  mariadb_conn& target, core::shard_index to);

    // The options of a copy, diff or clean: stopped by stop(); throttled: at the copy's rate.
    range_copy_options step_options(bool throttled);
    // Deletes shard from's counter sums of range (the counters group; whole tables stay).
    boost::asio::awaitable<core::result<void>> async_delete_counters(core::shard_index from, core::hash_range range);
    // Raises the map version in the identity rows of the split's two shards (shard_identity.map_version).
    boost::asio::awaitable<core::result<void>> async_raise_fence(std::uint32_t version, core::shard_index from,
                                                                 core::shard_index to);
    // The progress kept on shard 0 (map_store.hpp's split_progress), through conn.
    boost::asio::awaitable<void> async_publish(mariadb_conn& conn, std::uint32_t version);
    // A copy or clean starts: progress from 0, with the source's estimate of the rows it reads.
    boost::asio::awaitable<void> async_start_step(mariadb_conn& source, const std::vector<copy_group>& plan, std::string what);
    void on_chunk(const range_copy_progress& p, std::string_view verb);
    // What a copy or clean still has to do: the plan without the parts done by an earlier run (read
    // through conn, shard 0), each of them logged. A part done while it runs is marked by on_part_done.
    boost::asio::awaitable<core::result<void>> async_skip_done(mariadb_conn& conn, std::uint32_t version, split_step step,
                                                               std::vector<copy_group>& plan);
    void on_part_done(std::uint32_t version, split_step step, const range_copy_progress& p);
    // A chunk of a resumable copy group written: the position the next publish writes to shard 0.
    void on_copy_position(std::uint32_t version, const range_copy_progress& p);
    // Runs step, publishing the progress (and the parts done) through conn every 2 s meanwhile, and
    // stopping it if the split leaves `state` meanwhile (cancelled).
    boost::asio::awaitable<core::result<range_copy_stats>> async_publishing(
        mariadb_conn& conn, std::uint32_t version, split_state state,
        const std::function<boost::asio::awaitable<core::result<range_copy_stats>>()>& step);

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::steady_timer timer_;
    shard_set& set_;
    const core::config& cfg_;
    std::uint32_t node_id_;
    split_driver_options opts_;
    std::atomic<bool> stopping_{false};
    // The connections of its own that a copy, diff or clean uses now: stop() aborts their statements.
    std::mutex live_mutex_;
    std::vector<mariadb_conn*> live_;  // guarded by live_mutex_
    friend class live_conns;
    int dirty_diffs_ = 0;    // on the strand: verifying rounds whose diff was not clean
    // On the strand: the chunks that differed at different applied marks (still applying), compared
    // again alone in the next attempt; of split version pending_chunks_version_ (0: compare them all).
    std::vector<range_chunk_diff> pending_chunks_;
    std::uint32_t pending_chunks_version_ = 0;
    std::string last_note_;  // on the strand: the last "waiting for ..." logged, so it is logged once
    // On the strand: what status shows, and the sums behind it (the copy's progress counts per table).
    split_progress progress_;
    bool publish_failed_ = false;
    // On the strand: parts done, not yet written to shard 0 (the next publish writes them; one lost
    // is done again by the next run). ticker_: the running step's publish timer, woken by a part done.
    std::vector<step_done> parts_done_;
    boost::asio::steady_timer* ticker_ = nullptr;
    // On the strand: the split left the state the running step is for (cancelled): the step stops.
    bool abandoned_ = false;
    // On the strand: the copy's last position inside a resumable group, and whether shard 0 has it yet.
    std::optional<copy_position> position_;
    bool position_dirty_ = false;
    std::uint64_t step_read_ = 0, step_done_ = 0, table_read_ = 0, table_done_ = 0;
    std::chrono::steady_clock::time_point last_chunk_log_{};
};

}  // namespace cairn::shards
