#include "shards/shard.hpp"

#include "journal/journal.hpp"
#include "shards/apply_target.hpp"
#include "shards/apply_worker.hpp"
#include "shards/point_batcher.hpp"
#include "shards/pool.hpp"
#include "shards/replicas.hpp"
#include "shards/shard_identity.hpp"

#include <fmt/format.h>

namespace cairn::shards {

shard::shard(boost::asio::any_io_executor ex, journal::journal& j, const core::routing& routing, shard_options opts,
             core::registry& metrics)
    : index_(opts.index),
      read_pool_(std::make_unique<pool>(ex, opts.conn, opts.lim.read_pool_connections)),
      apply_pool_(std::make_unique<pool>(ex, opts.conn, 1)),
      target_(make_mariadb_apply_target(*apply_pool_)) {
    // No connection to a database that another gateway's config placed elsewhere in the map.
    const std::uint32_t count = opts.config_shards;
    pool::connection_check check = [index = static_cast<std::uint32_t>(index_), count](mariadb_conn& c) {
        return async_check_shard_identity(c, index, count);
    };
    read_pool_->set_connection_check(check);
    // A read of a shard that is down answers 503 at once, while one read at a time tries it again.
    read_pool_->set_fail_fast(true);
    if (!opts.replicas.empty()) {
        pool::connection_check replica_check = [index = static_cast<std::uint32_t>(index_), count](mariadb_conn& c) {
            return async_check_replica_identity(c, index, count);
        };
        replicas_ = std::make_unique<replica_set>(ex, index_, std::move(opts.replicas), opts.lim.read_pool_connections,
                                                  opts.lim.replica_staleness_max, j.node_id(), std::move(replica_check),
                                                  metrics);
    }
    apply_pool_->set_connection_check(std::move(check));
    const core::labels shard_label{{"shard", std::to_string(index_)}};
    // get_batch_runners read connections at most carry combined point reads; pages and counts keep the rest.
    get_batcher_ = std::make_unique<edge_get_batcher>(
        ex, *read_pool_, &async_multi_get, opts.lim.get_batch_runners, opts.lim.get_batch_keys_max,
        &metrics.add_histogram("cairn_edge_get_batch_keys", "Point reads of single edges combined in one query",
                               core::histogram::size_bounds(), shard_label));
    count_batcher_ = std::make_unique<edge_count_batcher>(
        ex, *read_pool_, &async_count_many, opts.lim.get_batch_runners, opts.lim.get_batch_keys_max,
        &metrics.add_histogram("cairn_edge_count_batch_keys", "Distinct counts of nodes' edges read in one query",
                               core::histogram::size_bounds(), shard_label));
    apply_worker_options wo;
    wo.shard = index_;
    wo.lim = opts.lim;
    wo.paused = opts.apply_paused;
    wo.counters = std::move(opts.counters);
    wo.cells = std::move(opts.cells);
    wo.entities = std::move(opts.entities);
    worker_ = std::make_unique<apply_worker>(ex, j, routing, *target_, std::move(wo), metrics);
    metrics.add_callback_gauge("cairn_apply_lag_ops", "Journaled ops not yet applied on the shard", shard_label,
                               [&j, w = worker_.get()] {
                                   const auto last = j.last_seq();
                                   const auto applied = w->applied_seq();
                                   return static_cast<double>(last > applied ? last - applied : 0);
                               });
}

// The worker and the batcher use the pools: they go first.
shard::~shard() {
    replicas_.reset();
    worker_.reset();
    get_batcher_.reset();
    count_batcher_.reset();
    target_.reset();
}

boost::asio::awaitable<core::result<lease>> shard::async_read_lease() { return read_pool_->async_acquire(); }

boost::asio::awaitable<std::optional<lease>> shard::async_replica_lease() {
    if (!replicas_) co_return std::nullopt;
    co_return co_await replicas_->async_try_lease();
}

boost::asio::awaitable<bool> shard::async_wait_applied(std::uint64_t seq, std::chrono::milliseconds timeout) {
    return worker_->async_wait_applied(seq, timeout);
}

std::uint64_t shard::applied_seq() const noexcept { return worker_->applied_seq(); }
bool shard::up() const noexcept { return worker_->shard_up(); }
bool shard::known_down() const noexcept { return worker_->shard_known_down(); }
bool shard::paused() const noexcept { return worker_->paused(); }
void shard::set_paused(bool paused) noexcept { worker_->set_paused(paused); }
void shard::hold_for_routing(bool held) noexcept { worker_->hold_for_routing(held); }
std::uint64_t shard::rewind_to(std::uint64_t seq) noexcept { return worker_->rewind_to(seq); }
std::uint64_t shard::rewinds_done() const noexcept { return worker_->rewinds_done(); }
core::minute_window::totals shard::last_minute() const { return worker_->last_minute(); }
void shard::notify() noexcept { worker_->notify(); }
void shard::start() {
    worker_->start();
    if (replicas_) replicas_->start(*read_pool_);
}

void shard::stop() {
    worker_->stop();
    if (replicas_) replicas_->stop();
    read_pool_->close_all();
    apply_pool_->close_all();
}

void shard::abort() {
    if (replicas_) replicas_->abort();
    read_pool_->shutdown();
    apply_pool_->shutdown();
}

std::string shard::busy() const { return fmt::format("{}/{}", apply_pool_->in_use(), read_pool_->in_use()); }

}  // namespace cairn::shards
