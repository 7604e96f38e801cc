// What gateways keep on the shards so that several of them can share the shards (issue 16):
//  - applied_marks (every shard): per node id, the journal seq through which that gateway's apply
//    worker has applied (or queued as an error) every op for the shard. Another gateway waits on it
//    for a read with ?after=<node>:<seq> (read-your-writes across gateways); it is written after the
//    ops it covers, so it never claims more than the shard holds.
//  - late_marks (every shard): per node id, the number of the last late application (an op applied
//    after the applied mark had passed its seq: a retry from the error queue, a re-injected dead
//    letter; journal::late_apply) that gateway made here. Written after the applications it covers,
//    so a replica promoted after a failover holds exactly the late applications through its late
//    mark, and the apply worker applies the rest again from the journal.
//  - heartbeats (every shard): per node id, the time of that gateway's last heartbeat, written on
//    the primary and read on its replicas to know how old their data is (shards/replicas.hpp).
//  - gateway_leases (shard 0): one row per node id naming the journal that holds it, renewed while
//    the gateway runs. A second gateway with a node id another journal holds is refused; a new
//    journal may take a node id over only when its last holder has been silent longer than counters
//    keep op ids (a new journal restarts its seqs, so its op ids would repeat the old ones).
// Times are the server's (NOW(6)), so the gateways' clocks do not matter. The caller owns the
// connection; any executor.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/result.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// The four tables, if missing (every shard has them all; leases are used on shard 0 only). Errors: those of
// mariadb_conn.
boost::asio::awaitable<core::result<void>> async_create_gateway_schema(mariadb_conn& conn);

// Raises node_id's mark to seq (never lowers it). Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_write_applied_mark(mariadb_conn& conn, std::uint64_t node_id,
                                                                    std::uint64_t seq);
// node_id's mark on this shard; 0 if that gateway never applied anything here.
boost::asio::awaitable<core::result<std::uint64_t>> async_read_applied_mark(mariadb_conn& conn, std::uint64_t node_id);

// Raises node_id's late mark to number (never lowers it); node_id's late mark (0 if none). Errors:
// those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_write_late_mark(mariadb_conn& conn, std::uint64_t node_id,
                                                                 std::uint64_t number);
boost::asio::awaitable<core::result<std::uint64_t>> async_read_late_mark_of(mariadb_conn& conn, std::uint64_t node_id);

// Every gateway's mark on this shard: (node id, seq), by node id.
boost::asio::awaitable<core::result<std::vector<std::pair<std::uint64_t, std::uint64_t>>>> async_read_applied_marks(
    mariadb_conn& conn);

// What a gateway claims: its node id for its journal.
struct lease_claim {
    std::uint64_t node_id = 0;
    std::uint64_t journal_id = 0;         // journal::journal_id()
    std::string holder;                   // for the other gateway's error: "host:port (pid N)"
    std::uint64_t last_seq = 0;           // the journal's last seq, shown to operators
    std::chrono::seconds ttl{15};         // the lease lapses this long after its last renewal
    std::chrono::hours reuse_after{168};  // counters' op_ids_keep: when another journal may take a silent node id
};

// Whether the lease is this journal's now; when not, why, as the operator reads it.
struct lease_verdict {
    bool held = false;
    std::string refusal;
};

// Takes or renews node_id's lease for the claim's journal (see the top of the file for when another
// journal's lease is taken over). Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<lease_verdict>> async_claim_lease(mariadb_conn& conn, const lease_claim& claim);
// Marks the lease released (a clean stop): it stays this journal's, and the node id stays refused to
// other journals for reuse_after. Errors: those of mariadb_conn.
boost::asio::awaitable<core::result<void>> async_release_lease(mariadb_conn& conn, const lease_claim& claim);

// One lease row, for GET /v1/status's list of the gateways on these shards.
struct lease_row {
    std::uint64_t node_id = 0;
    std::uint64_t journal_id = 0;
    std::string holder;
    std::uint64_t last_seq = 0;
    bool released = false;
    bool active = false;                 // renewed within its ttl and not released
    std::uint64_t renewed_ago_ms = 0;
};
boost::asio::awaitable<core::result<std::vector<lease_row>>> async_list_leases(mariadb_conn& conn);

}  // namespace cairn::shards
