// A gateway's hold on its node id (shards/gateways.hpp): claimed on shard 0 before cairnd listens,
// renewed every third of its ttl while it runs, released on a clean stop. Several gateways on the
// same shards are safe only with distinct node ids (op ids and timestamps embed them), so a
// conflict stops cairnd with the reason; an unreachable shard 0 does not (writes are journaled
// while a shard is down): the claim is retried at each renewal.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/metrics.hpp"
#include "core/result.hpp"
#include "shards/gateways.hpp"
#include "shards/mariadb_conn.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace cairn::journal {
class journal;
}

namespace cairn::shards {

class shard_set;

// Claims or releases on a connection of its own, on a private io_context: for cairnd's start (before
// the shard set runs) and its end (after it stopped). Bounded by p's connect and query timeouts.
// The database behind p must be shard 0 of shard_count (shards/shard_identity.hpp; a database without
// an identity gets it, as a pool's first connection would give it): else nothing is written, the error
// is shard_rejected and *why (if given) says why.
core::result<lease_verdict> claim_lease_now(const conn_params& p, std::uint32_t shard_count, const lease_claim& claim,
                                            std::string* why = nullptr);
core::result<void> release_lease_now(const conn_params& p, std::uint32_t shard_count, const lease_claim& claim);
// How many shards shard 0's identity says the deployment started with (the shard map's version 1), or
// none when shard 0 has no identity yet (this gateway is the first).
core::result<std::optional<std::uint32_t>> read_base_shard_count_now(const conn_params& p);

class node_lease_keeper {
public:
    // Renews claim (its last_seq refreshed from j) on shard 0 of set. on_lost(reason) runs on the
    // keeper's strand when another journal holds the node id; the keeper then stops. held: whether
    // the start's claim succeeded. Registers cairn_node_lease_held.
    node_lease_keeper(boost::asio::any_io_executor ex, shard_set& set, const journal::journal& j, lease_claim claim,
                      bool held, std::function<void(const std::string&)> on_lost, core::registry& metrics);
    void start();
    void stop();  // any thread; the loop ends at its next step
    bool held() const noexcept { return held_.load(); }

private:
    boost::asio::awaitable<void> async_run();

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    boost::asio::steady_timer timer_;
    shard_set& set_;
    const journal::journal& journal_;
    lease_claim claim_;
    std::function<void(const std::string&)> on_lost_;
    std::atomic<bool> held_;
    std::atomic<bool> stopping_{false};
    bool warned_ = false;  // on the strand: an unreachable shard 0 is logged once per outage
};

}  // namespace cairn::shards
