#include "shards/replicas.hpp"

#include "core/log_task_end.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

namespace cairn::shards {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct replica_set::state {
    struct replica {
        std::string name;  // host:port
        std::unique_ptr<pool> p;
        // The last probe's lag (ms; -1: unknown, the replica is not used) and when it was taken.
        std::atomic<std::int64_t> lag_ms{-1};
        std::atomic<std::int64_t> probed_at_ms{0};
        bool warned = false;  // on the probe's strand: the current failure was logged
        core::gauge* m_lag = nullptr;
    };

    core::shard_index shard = 0;
    std::chrono::milliseconds staleness_max{0};
    std::chrono::milliseconds interval{0};
    std::uint64_t node_id = 0;
    std::vector<std::unique_ptr<replica>> replicas;
    asio::strand<asio::any_io_executor> strand;
    asio::steady_timer timer;
    std::atomic<bool> stopping{false};
    pool* primary = nullptr;  // set by start(); used only by the probe, which ends before it goes
    core::counter* m_reads = nullptr;

    explicit state(asio::any_io_executor ex) : strand(asio::make_strand(ex)), timer(strand) {}

    bool usable(const replica& r) const {
        const std::int64_t lag = r.lag_ms.load();
        if (lag < 0) return false;
        return lag + (steady_ms() - r.probed_at_ms.load()) <= staleness_max.count();
    }

    void mark_unknown(replica& r, const std::string& why) {
        r.lag_ms = -1;
        r.m_lag->set(-1);
        if (!r.warned) {
            spdlog::warn("shard {}: replica {} is not used for reads: {}", shard, r.name, why);
            r.warned = true;
        }
    }

    asio::awaitable<void> async_probe_loop() {
        boost::system::error_code ec;
        while (!stopping.load()) {
            // The heartbeat on the primary (a failure there leaves the replicas' rows to age: they
            // fall out of the bound, and the reads that would have gone there go to the primary,
            // which fails them as it fails every read while it is down).
            if (auto l = co_await primary->async_acquire(); l && !stopping.load()) {
                const std::array<sql_param, 1> params{node_id};
                (void)co_await l.value()->async_query_prepared(write_heartbeat_sql, params);
            }
            for (auto& r : replicas) {
                if (stopping.load()) break;
                auto l = co_await r->p->async_acquire();
                if (!l) {
                    mark_unknown(*r, "cannot connect: " + (r->p->last_connect_failure().empty() ? l.error().message()
                                                                                                 : r->p->last_connect_failure()));
                    continue;
                }
                const std::array<sql_param, 1> params{node_id};
                auto lag = co_await l.value()->async_query_prepared(read_lag_sql, params);
                if (!lag || lag.value().size() != 1) {
                    mark_unknown(*r, lag ? "no heartbeat of this gateway has reached it yet"
                                         : "reading its heartbeat failed: " + lag.error().message());
                    continue;
                }
                const auto ms = static_cast<std::int64_t>(lag.value().uint64_at(0, 0) / 1000);
                r->probed_at_ms = steady_ms();
                r->lag_ms = ms;
                r->m_lag->set(static_cast<double>(ms) / 1000.0);
                if (r->warned && ms <= staleness_max.count()) {
                    spdlog::info("shard {}: replica {} serves reads again (its data is {} ms old)", shard, r->name, ms);
                    r->warned = false;
                } else if (!r->warned && ms > staleness_max.count()) {
                    spdlog::warn("shard {}: replica {} is {} ms behind (limits.replica_staleness_max_ms is {}): reads go "
                                 "to the primary",
                                 shard, r->name, ms, staleness_max.count());
                    r->warned = true;
                }
            }
            timer.expires_after(interval);
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }
};

replica_set::replica_set(asio::any_io_executor ex, core::shard_index shard, std::vector<conn_params> replicas,
                         std::size_t pool_size, std::chrono::milliseconds staleness_max, std::uint64_t node_id,
                         pool::connection_check check, core::registry& metrics)
    : state_(std::make_shared<state>(ex)) {
    state_->shard = shard;
    state_->staleness_max = staleness_max;
    state_->interval = std::clamp<std::chrono::milliseconds>(staleness_max / 4, 50ms, 1000ms);
    state_->node_id = node_id;
    state_->m_reads = &metrics.add_counter("cairn_shard_replica_reads_total", "Reads served by a replica of the shard",
                                           {{"shard", std::to_string(shard)}});
    for (auto& params : replicas) {
        auto r = std::make_unique<state::replica>();
        r->name = fmt::format("{}:{}", params.host, params.port);
        r->p = std::make_unique<pool>(ex, std::move(params), pool_size);
        r->p->set_connection_check(check);
        r->m_lag = &metrics.add_gauge("cairn_shard_replica_lag_seconds",
                                      "How old a replica's data was at its last probe (-1: unknown, not used for reads)",
                                      {{"shard", std::to_string(shard)}, {"replica", r->name}});
        r->m_lag->set(-1);
        state_->replicas.push_back(std::move(r));
    }
}

replica_set::~replica_set() { stop(); }

asio::awaitable<std::optional<lease>> replica_set::async_try_lease() {
    std::shared_ptr<state> st = state_;
    if (st->staleness_max.count() == 0) co_return std::nullopt;
    for (auto& r : st->replicas) {
        if (!st->usable(*r)) continue;
        auto l = co_await r->p->async_acquire();
        if (!l) continue;
        st->m_reads->inc();
        co_return std::move(l).value();
    }
    co_return std::nullopt;
}

std::vector<replica_set::replica_status> replica_set::status() const {
    std::vector<replica_status> out;
    const std::int64_t now = steady_ms();
    for (const auto& r : state_->replicas) {
        replica_status s;
        s.name = r->name;
        s.lag_ms = r->lag_ms.load();
        const std::int64_t at = r->probed_at_ms.load();
        s.probed_ms_ago = at == 0 ? -1 : now - at;
        s.serving = state_->staleness_max.count() > 0 && state_->usable(*r);
        out.push_back(std::move(s));
    }
    return out;
}

std::uint64_t replica_set::reads() const { return state_->m_reads->value(); }

void replica_set::start(pool& primary) {
    if (state_->replicas.empty() || state_->staleness_max.count() == 0) return;
    state_->primary = &primary;
    asio::co_spawn(state_->strand, [st = state_]() { return st->async_probe_loop(); },
                   core::log_task_end{fmt::format("replica probe of shard {}", state_->shard)});
}

void replica_set::stop() {
    if (state_->stopping.exchange(true)) return;
    asio::post(state_->strand, [st = state_] { st->timer.cancel(); });
    for (auto& r : state_->replicas) r->p->close_all();
}

void replica_set::abort() {
    for (auto& r : state_->replicas) r->p->shutdown();
}

}  // namespace cairn::shards
