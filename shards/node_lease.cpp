#include "shards/node_lease.hpp"

#include "core/log_task_end.hpp"
#include "journal/journal.hpp"
#include "shards/shard_identity.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <exception>
#include <optional>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

// Runs task on a private io_context until it ends (its connection's timeouts bound it).
template <class T>
core::result<T> run_alone(const conn_params& p, std::function<asio::awaitable<core::result<T>>(mariadb_conn&)> task,
                          std::optional<std::uint32_t> shard_count = std::nullopt, std::string* why = nullptr) {
    asio::io_context ioc;
    std::optional<core::result<T>> out;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            mariadb_conn conn(ioc.get_executor(), p);
            // A lease is written only where the shard's identity says shard 0 is, as the pools
            // check before they use a connection: a config with the shards in another order
            // must not leave lease rows (and tables) in another shard's database.
            core::result<void> c = core::success();
            if (shard_count) {
                c = co_await async_connect_checked(conn, 0, *shard_count, why);
            } else {
                c = co_await conn.async_connect();
            }
            if (!c) {
                out.emplace(c.error());
                co_return;
            }
            if (auto s = co_await async_create_gateway_schema(conn); !s) {
                out.emplace(s.error());
                co_return;
            }
            out.emplace(co_await task(conn));
            conn.close();
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    ioc.run();
    return out ? std::move(*out) : core::result<T>(core::errc::shard_unavailable);
}

}  // namespace

core::result<lease_verdict> claim_lease_now(const conn_params& p, std::uint32_t shard_count, const lease_claim& claim,
                                            std::string* why) {
    return run_alone<lease_verdict>(p, [&](mariadb_conn& c) { return async_claim_lease(c, claim); }, shard_count, why);
}

core::result<void> release_lease_now(const conn_params& p, std::uint32_t shard_count, const lease_claim& claim) {
    return run_alone<void>(p, [&](mariadb_conn& c) { return async_release_lease(c, claim); }, shard_count);
}

core::result<std::optional<std::uint32_t>> read_base_shard_count_now(const conn_params& p) {
    return run_alone<std::optional<std::uint32_t>>(
        p, [](mariadb_conn& c) -> asio::awaitable<core::result<std::optional<std::uint32_t>>> {
            auto id = co_await async_read_shard_identity(c);
            if (!id) co_return id.error();
            if (!id.value()) co_return std::optional<std::uint32_t>();
            co_return std::optional<std::uint32_t>(id.value()->count);
        });
}

node_lease_keeper::node_lease_keeper(asio::any_io_executor ex, shard_set& set, const journal::journal& j,
                                     lease_claim claim, bool held, std::function<void(const std::string&)> on_lost,
                                     core::registry& metrics)
    : strand_(asio::make_strand(ex)),
      timer_(strand_),
      set_(set),
      journal_(j),
      claim_(std::move(claim)),
      on_lost_(std::move(on_lost)),
      held_(held) {
    metrics.add_callback_gauge("cairn_node_lease_held",
                               "1 while this gateway holds its node id's lease on shard 0 (0: shard 0 unreachable)",
                               {{"node_id", std::to_string(claim_.node_id)}},
                               [this] { return held_.load() ? 1.0 : 0.0; });
}

void node_lease_keeper::start() { asio::co_spawn(strand_, async_run(), core::log_task_end("node_lease")); }

void node_lease_keeper::stop() {
    stopping_ = true;
    asio::post(strand_, [this] { timer_.cancel(); });
}

asio::awaitable<void> node_lease_keeper::async_run() {
    // The first renewal at once: the start's claim named the configured port, this one the port the
    // server really bound (listen.port 0 picks one), which /v1/admin/status shows as the holder.
    for (bool first = true; !stopping_; first = false) {
        if (!first) {
            timer_.expires_after(claim_.ttl / 3);
            core::error_code ec;
            co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (stopping_) break;
        claim_.last_seq = journal_.last_seq();
        const auto renew = [this](mariadb_conn& conn) -> asio::awaitable<core::result<lease_verdict>> {
            // The tables may not exist yet if shard 0 was down at the start.
            if (auto s = co_await async_create_gateway_schema(conn); !s) co_return s.error();
            co_return co_await async_claim_lease(conn, claim_);
        };
        auto v = co_await set_.at(0).async_read(renew);
        if (stopping_) break;
        if (!v) {
            held_ = false;
            if (!warned_) {
                spdlog::warn("node id {}: cannot renew its lease on shard 0: {}; retrying every {} s", claim_.node_id,
                             v.error().message(), (claim_.ttl / 3).count());
                warned_ = true;
            }
            continue;
        }
        if (!v.value().held) {
            held_ = false;
            on_lost_(v.value().refusal);
            break;
        }
        if (!held_.exchange(true) || warned_) spdlog::info("node id {}: lease on shard 0 held", claim_.node_id);
        warned_ = false;
    }
}

}  // namespace cairn::shards
