// The face of one shard as its apply worker sees it: sessions that create the schema and apply
// batches of ops. MariaDB is one implementation (make_mariadb_apply_target, over a pool); the
// seeded simulation (tests/sim/) gives the real apply worker an in-memory shard with faults
// behind this same face. Implementations say which executors may call them.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/op.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/outage.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <span>
#include <string>

namespace cairn::shards {

class pool;

// One connection's worth of a shard, held for one batch (or one round of error-queue retries).
// One operation at a time; the session is dropped when the batch is done, and a session whose
// statement failed with an outage is never used again.
class apply_session {
public:
    virtual ~apply_session() = default;

    // Creates every model's tables if missing. Errors: as async_apply.
    virtual boost::asio::awaitable<core::result<void>> async_create_schema(const apply_context& ctx) = 0;

    // Applies the rows of ops that live on shard, idempotently and commutatively (see
    // async_apply_ops). Errors: shard_unavailable and shard_timeout are outages (the connection
    // was lost or timed out: the ops may or may not have been applied); shard_retry (a deadlock or
    // lock-wait timeout: nothing applied, try again at once); anything else is the ops' fault on a
    // healthy shard (shard_rejected, undeclared, op_expired: the worker isolates the op and queues it).
    // ops and ctx must stay valid until the await completes.
    virtual boost::asio::awaitable<core::result<void>> async_apply(const apply_context& ctx, core::shard_index shard,
                                                                   std::span<const core::op* const> ops) = 0;

    // Records on the shard that the gateway node_id has applied every op through seq that lives
    // here (or queued it as an error): what another gateway waits on for ?after=<node>:<seq>.
    // Never lowers the mark. Called after the ops it covers succeeded. Errors: as async_apply.
    virtual boost::asio::awaitable<core::result<void>> async_mark_applied(std::uint64_t node_id, std::uint64_t seq) = 0;

    // node_id's applied mark as the shard holds it now (0 if it holds none). The mark is data on
    // the shard, so it travels with the rows: a replica promoted after a failover, or a restore,
    // holds the mark of exactly the ops it holds. Errors: as async_apply.
    virtual boost::asio::awaitable<core::result<std::uint64_t>> async_read_mark(std::uint64_t node_id) = 0;

    // Records on the shard that node_id's late applications (journal::late_apply: retries and
    // re-injected dead letters, applied after the applied mark had passed their seq) numbered
    // through `number` are applied here. Never lowers it; written after the applications it covers,
    // so a promoted replica's late mark names exactly the late applications it holds. Errors: as
    // async_apply.
    virtual boost::asio::awaitable<core::result<void>> async_mark_late(std::uint64_t node_id, std::uint64_t number) = 0;

    // node_id's late mark as the shard holds it now (0 if none). Errors: as async_apply.
    virtual boost::asio::awaitable<core::result<std::uint64_t>> async_read_late_mark(std::uint64_t node_id) = 0;

    // The shard map version the shard's identity row names (shard_identity.map_version): a split's
    // driver raises it on the old and the new shard once the split is done, so that a gateway still
    // routing by an older table (one that never read the map on shard 0) applies nothing there.
    // Errors: as async_apply.
    virtual boost::asio::awaitable<core::result<std::uint32_t>> async_read_map_version() = 0;

    // The failure as an operator reads it in logs and dead letters (with the server's error number
    // and text when there is one).
    virtual std::string describe(const core::error_code& ec) const = 0;
};

class apply_target {
public:
    virtual ~apply_target() = default;

    // A session. Errors: shard_unavailable, shard_timeout (outages), shutting_down.
    virtual boost::asio::awaitable<core::result<std::unique_ptr<apply_session>>> async_open() = 0;

    // How many connections the face has made so far (any thread). A new connection may reach
    // another server than the last one did (a replica promoted behind the same address), so the
    // apply worker checks its applied mark again when this changes.
    virtual std::uint64_t connections_made() const noexcept = 0;

    // Where the shard is, for logs ("127.0.0.1:3306"); empty if it has no address.
    virtual std::string name() const { return {}; }
    // A failed async_open as an operator reads it: with the server's own reason when there is one,
    // so that a refused port, a wrong password and an unknown database do not look alike.
    virtual std::string describe_open_failure(const core::error_code& ec) const { return ec.message(); }
};

// Sessions are leases of p's connections; p must outlive the target and its sessions.
std::unique_ptr<apply_target> make_mariadb_apply_target(pool& p);

}  // namespace cairn::shards
