#include "shards/apply_worker.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"
#include "core/hlc.hpp"
#include "core/log_task_end.hpp"
#include "journal/journal.hpp"
#include "shards/apply_target.hpp"
#include "shards/journal_await.hpp"
#include "shards/model_dispatch.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// How many times a deadlock or lock-wait timeout is retried at once before the batch backs off.
constexpr int retry_now_max = 5;
// The longest a busy worker leaves its applied mark behind the ops it applied.
constexpr auto mark_interval = 200ms;
// How often an idle worker opens a session (by its wall clock): a shard that went away, or a
// replica promoted behind its address, is noticed (and the mark checked) without waiting for a write.
constexpr std::uint64_t idle_probe_ms = 5'000;

}  // namespace

apply_worker::apply_worker(asio::any_io_executor ex, journal::journal& j, const core::routing& routing,
                           apply_target& target, apply_worker_options opts, core::registry& metrics)
    : strand_(asio::make_strand(ex)),
      journal_(j),
      routing_(routing),
      target_(target),
      opts_(std::move(opts)),
      wake_(strand_),
      pace_(strand_),
      paused_(opts_.paused),
      rng_(static_cast<std::minstd_rand::result_type>(opts_.shard + 1)),
      m_applied_seq_(metrics.add_gauge("cairn_apply_applied_seq", "Journal seq applied through, per shard",
                                       {{"shard", std::to_string(opts_.shard)}})),
      m_up_(metrics.add_gauge("cairn_shard_up", "1 if the shard answered its last statement, 0 if it is down",
                              {{"shard", std::to_string(opts_.shard)}})),
      m_batch_latency_(metrics.add_histogram("cairn_apply_batch_seconds", "Time to apply one batch on a shard",
                                             core::histogram::latency_bounds(),
                                             {{"shard", std::to_string(opts_.shard)}})),
      m_batch_ops_(metrics.add_histogram("cairn_apply_batch_ops", "Ops in one applied batch",
                                         core::histogram::size_bounds(), {{"shard", std::to_string(opts_.shard)}})),
      m_applied_ops_(metrics.add_counter("cairn_apply_ops_total", "Ops applied on a shard",
                                         {{"shard", std::to_string(opts_.shard)}})),
      m_errors_queued_(metrics.add_counter("cairn_apply_error_queued_total",
                                           "Ops sent to the error queue (first failures and retries)",
                                           {{"shard", std::to_string(opts_.shard)}})),
      m_dead_(metrics.add_counter("cairn_apply_dead_lettered_total", "Ops that became dead letters",
                                  {{"shard", std::to_string(opts_.shard)}})),
      m_outages_(metrics.add_counter("cairn_apply_outage_waits_total", "Back-offs because the shard was unreachable",
                                     {{"shard", std::to_string(opts_.shard)}})),
      m_rewound_(metrics.add_counter("cairn_apply_rewound_seqs_total",
                                     "Journal seqs applied again because the shard's applied mark was behind the cursor "
                                     "(a promoted replica, a restore, or a mark not yet written before a restart)",
                                     {{"shard", std::to_string(opts_.shard)}})),
      m_lost_(metrics.add_counter("cairn_apply_unrecoverable_seqs_total",
                                  "Journal seqs the shard's applied mark says it lacks that retention had already deleted",
                                  {{"shard", std::to_string(opts_.shard)}})),
      m_late_reapplied_(metrics.add_counter("cairn_apply_late_reapplied_total",
                                            "Ops applied late (retries, re-injected dead letters) applied again because "
                                            "the shard's late mark was behind the journal's (a promoted replica, a restore)",
                                            {{"shard", std::to_string(opts_.shard)}})) {
    if (!opts_.wall_ms) opts_.wall_ms = core::system_wall_clock_ms;
    if (!opts_.counters) opts_.counters = std::make_shared<const core::counter_catalog>();
    if (!opts_.cells) opts_.cells = std::make_shared<const core::cell_config>();
    if (!opts_.entities) opts_.entities = std::make_shared<const core::entity_config>();
    applied_seq_ = journal_.cursor(opts_.shard);
    m_applied_seq_.set(static_cast<double>(applied_seq_.load()));
}

apply_worker::~apply_worker() = default;

void apply_worker::start() {
    asio::co_spawn(strand_, async_run(), core::log_task_end{fmt::format("apply shard {}", opts_.shard)});
}

void apply_worker::stop() {
    stopping_ = true;
    asio::post(strand_, [this] {
        wake_.cancel();
        pace_.cancel();
    });
    wake_waiters();
}

void apply_worker::wake_waiters() {
    const std::uint64_t applied = applied_seq_.load();
    const bool all = stopping_.load();
    std::lock_guard lock(waiters_mutex_);
    auto keep = std::partition(waiters_.begin(), waiters_.end(),
                               [&](const applied_waiter& w) { return !all && w.seq > applied; });
    for (auto it = keep; it != waiters_.end(); ++it) {
        // A timer may only be touched on its own executor; the shared_ptr keeps it alive until then.
        asio::post(it->timer->get_executor(), [t = it->timer] { t->cancel(); });
    }
    waiters_.erase(keep, waiters_.end());
}

asio::awaitable<bool> apply_worker::async_wait_applied(std::uint64_t seq, std::chrono::milliseconds timeout) {
    if (applied_seq_.load() >= seq) co_return true;
    if (stopping_.load() || timeout <= std::chrono::milliseconds::zero()) co_return false;
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, timeout);
    {
        std::lock_guard lock(waiters_mutex_);
        waiters_.push_back({seq, timer});
    }
    // The seq may have advanced (or stop() run) before the waiter was registered: let
    // wake_waiters decide, under the lock, so that no wake-up is lost.
    wake_waiters();
    // A reader waiting for an op already journaled is not kept waiting by the pacing of batches
    // (async_pace looks for such waiters before it waits: either it sees this one or this cancel
    // finds its wait). One waiting for ops not yet written (a feed's long poll) does not cut it.
    if (seq <= journal_.last_seq()) asio::post(strand_, [this] { pace_.cancel(); });
    core::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    {
        std::lock_guard lock(waiters_mutex_);
        std::erase_if(waiters_, [&](const applied_waiter& w) { return w.timer == timer; });
    }
    co_return applied_seq_.load() >= seq;
}

void apply_worker::notify() noexcept {
    if (!notified_.exchange(true)) asio::post(strand_, [this] { wake_.cancel(); });
}

std::uint64_t apply_worker::rewind_to(std::uint64_t seq) noexcept {
    std::uint64_t cur = rewind_request_.load();
    while (seq < cur && !rewind_request_.compare_exchange_weak(cur, seq)) {
    }
    const std::uint64_t ticket = rewind_asked_.fetch_add(1) + 1;  // after the request: see async_requested_rewind
    notified_ = true;
    asio::post(strand_, [this] { wake_.cancel(); });
    return ticket;
}

void apply_worker::set_paused(bool paused) noexcept {
    paused_ = paused;
    notified_ = true;
    asio::post(strand_, [this] { wake_.cancel(); });
}

void apply_worker::hold_for_routing(bool held) noexcept {
    routing_hold_ = held;
    notified_ = true;
    asio::post(strand_, [this] { wake_.cancel(); });
}

std::uint64_t apply_worker::now_ms() const { return opts_.wall_ms(); }

asio::awaitable<void> apply_worker::async_pace() {
    if (!std::exchange(pace_next_, false) || opts_.lim.apply_batch_interval <= std::chrono::milliseconds::zero()) co_return;
    const auto due = batch_started_ + opts_.lim.apply_batch_interval;
    if (stopping_.load() || std::chrono::steady_clock::now() >= due) co_return;
    // A backlog (a full batch or more journaled past this one) is applied at full speed. The batch
    // took nothing past the journal's last seq, which never goes down.
    const std::uint64_t journaled = journal_.last_seq();
    if (journaled - batch_through_ >= opts_.lim.apply_batch_ops_max) co_return;
    {
        std::lock_guard lock(waiters_mutex_);
        if (std::any_of(waiters_.begin(), waiters_.end(), [&](const applied_waiter& w) { return w.seq <= journaled; })) {
            co_return;
        }
    }
    pace_.expires_at(due);
    core::error_code ec;
    co_await pace_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> apply_worker::async_sleep(std::chrono::milliseconds d) {
    if (notified_.load() || stopping_.load()) co_return;
    wake_.expires_after(d);
    core::error_code ec;
    co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void apply_worker::note_outage(std::string_view what, const std::string& detail) {
    if (stopping_.load()) return;  // a stop aborts the shard's connections: that is no outage
    if (shard_up_.exchange(false) || outage_delay_ == 0ms) {
        const std::string where = target_.name();
        spdlog::warn("shard {}{}{}{}: {} failed: {}; writes are kept in the journal until it is back", opts_.shard,
                     where.empty() ? "" : " (", where, where.empty() ? "" : ")", what, detail);
    }
    known_down_ = true;
    m_up_.set(0);
    m_outages_.inc();
    // Whatever answers next may be another server (a promoted replica behind the same address).
    check_mark_ = true;
    outage_delay_ = std::clamp(outage_delay_ * 2, std::chrono::milliseconds(50), opts_.lim.outage_backoff_max);
}

void apply_worker::note_up(std::string_view how) {
    if (!shard_up_.exchange(true) && !how.empty()) spdlog::info("shard {}: {}", opts_.shard, how);
    known_down_ = false;
    m_up_.set(1);
    outage_delay_ = 0ms;
}

std::chrono::milliseconds apply_worker::retry_delay(std::uint32_t attempts) {
    auto d = opts_.lim.retry_backoff_initial;
    for (std::uint32_t i = 1; i < attempts && d < opts_.lim.retry_backoff_max; ++i) d *= 2;
    d = std::min(d, opts_.lim.retry_backoff_max);
    // Jitter in [d/2, d] so that many failed ops do not come due at the same instant.
    std::uniform_int_distribution<std::int64_t> jitter(d.count() / 2, d.count());
    return std::chrono::milliseconds(jitter(rng_));
}

asio::awaitable<core::result<void>> apply_worker::async_apply(apply_session& session, const core::route_table& table,
                                                              std::uint64_t at, std::span<const core::op* const> ops) {
    const core::shard_index s = opts_.shard;
    const apply_context ctx{table.apply_map(s, at), *opts_.counters, *opts_.cells, *opts_.entities, now_ms(), &table.base_map()};
    co_return co_await session.async_apply(ctx, s, ops);
}

asio::awaitable<core::result<void>> apply_worker::async_apply_one(apply_session& session, std::uint64_t seq,
                                                                  const core::op& o) {
    const auto table = routing_.load();
    const std::array<const core::op*, 1> one{&o};
    co_return co_await async_apply(session, *table, table->route_seq(opts_.shard, seq), one);
}

asio::awaitable<bool> apply_worker::async_ensure_schema() {
    auto session = co_await target_.async_open();
    if (!session) {
        note_outage("connecting", target_.describe_open_failure(session.error()));
        co_return false;
    }
    const auto table = routing_.load();
    const apply_context ctx{table->map(), *opts_.counters, *opts_.cells, *opts_.entities, now_ms(), &table->base_map()};
    auto r = co_await session.value()->async_create_schema(ctx);
    if (!r) {
        note_outage("creating tables", session.value()->describe(r.error()));
        co_return false;
    }
    schema_ready_ = true;
    note_up({});
    co_return true;
}

asio::awaitable<void> apply_worker::async_run() {
    while (!stopping_) {
        if (paused_ && schema_ready_) {
            notified_ = false;
            co_await async_sleep(1s);
            continue;
        }
        notified_ = false;
        const step_outcome o = co_await async_step();
        // A stop (which aborts the shard's connections) is no outage, and ends the loop at once.
        if (stopping_) break;
        switch (o) {
            case step_outcome::progressed:
                co_await async_pace();
                break;
            case step_outcome::idle:
                co_await async_sleep(100ms);
                break;
            case step_outcome::journal_error:
                co_await async_sleep(1s);
                break;
            case step_outcome::outage: {
                // Sleep without being woken by new ops: the shard is down, not idle. stop() posts
                // its cancel to this strand after setting stopping_, so either the check above saw
                // it or the cancel finds this wait.
                wake_.expires_after(outage_delay_);
                core::error_code ec;
                co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                break;
            }
        }
    }
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_requested_rewind() {
    // Every ticket up to `asked` set its request before it was handed out: what this step takes (or
    // an earlier step took) covers them.
    const std::uint64_t asked = rewind_asked_.load();
    const auto done = [&] {
        std::uint64_t d = rewind_done_.load();
        while (d < asked && !rewind_done_.compare_exchange_weak(d, asked)) {
        }
    };
    const std::uint64_t requested = rewind_request_.exchange(no_rewind);
    if (requested == no_rewind) {
        done();
        co_return step_outcome::idle;
    }
    const std::uint64_t cursor = journal_.cursor(opts_.shard);
    auto first = journal_.first_seq();
    if (!first) {
        rewind_to(requested);  // asked again at the next step
        co_return step_outcome::journal_error;
    }
    const std::uint64_t to = std::max(requested, first.value() > 0 ? first.value() - 1 : 0);
    if (to >= cursor) {
        done();
        co_return step_outcome::idle;
    }
    spdlog::info("shard {} ({}): applying seqs {}..{} again by the route table in force (a split adopted late)", opts_.shard,
                 target_.name(), to + 1, cursor);
    if (auto r = co_await async_rewind_cursor(to); !r) {
        rewind_to(requested);
        co_return step_outcome::journal_error;
    }
    m_rewound_.inc(cursor - to);
    done();
    co_return step_outcome::progressed;
}

asio::awaitable<core::result<void>> apply_worker::async_rewind_cursor(std::uint64_t to) {
    const auto shard = opts_.shard;
    journal::apply_outcome rewind;
    rewind.shard = shard;
    rewind.cursor = to;
    rewind.rewind = true;
    auto committed = co_await async_commit_outcome(journal_, std::move(rewind));
    if (!committed) {
        spdlog::error("shard {}: rewinding the cursor failed: {}", shard, committed.error().message());
        co_return committed.error();
    }
    look_ahead_ = true;  // the range holds ops that wait in the error queue or are dead letters
    applied_seq_ = to;
    m_applied_seq_.set(static_cast<double>(to));
    co_return core::success();
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_step() {
    if (!schema_ready_ && !co_await async_ensure_schema()) co_return step_outcome::outage;
    if (const step_outcome r = co_await async_requested_rewind(); r != step_outcome::idle) co_return r;
    if (paused_ || routing_hold_) co_return step_outcome::idle;
    const step_outcome applied = co_await async_apply_batch();
    if (applied == step_outcome::outage || applied == step_outcome::journal_error) co_return applied;
    // A pause that came during the batch holds the error queue too (an operator pauses to
    // inspect or re-inject, and expects nothing to be retried meanwhile).
    if (paused_) co_return applied;
    const step_outcome retried = co_await async_retry_errors();
    if (retried != step_outcome::idle) co_return retried;
    if (const step_outcome marked = co_await async_flush_mark(applied == step_outcome::idle);
        marked == step_outcome::outage) {
        co_return marked;
    }
    if (applied == step_outcome::idle) co_return co_await async_idle_probe();
    co_return applied;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_idle_probe() {
    const std::uint64_t now = now_ms();
    if (!opts_.mark_check || (now >= last_probe_ms_ && now - last_probe_ms_ < idle_probe_ms)) {
        co_return step_outcome::idle;
    }
    last_probe_ms_ = now;
    auto session = co_await target_.async_open();
    if (!session) {
        note_outage("connecting", target_.describe_open_failure(session.error()));
        co_return step_outcome::outage;
    }
    note_up("answering again");
    if (mark_check_due()) co_return co_await async_check_mark(*session.value());
    co_return step_outcome::idle;
}

asio::awaitable<core::result<void>> apply_worker::async_write_mark(apply_session& s, std::uint64_t seq) {
    auto r = co_await s.async_mark_applied(journal_.node_id(), seq);
    if (r) {
        marked_seq_ = seq;
        marked_at_ = std::chrono::steady_clock::now();
    }
    co_return r;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_flush_mark(bool idle) {
    const std::uint64_t applied = applied_seq_.load();
    if (marked_seq_ >= applied || (!idle && std::chrono::steady_clock::now() - marked_at_ < mark_interval)) {
        co_return step_outcome::idle;
    }
    auto session = co_await target_.async_open();
    if (!session) {
        note_outage("connecting", target_.describe_open_failure(session.error()));
        co_return step_outcome::outage;
    }
    if (mark_check_due()) {
        if (const step_outcome c = co_await async_check_mark(*session.value()); c != step_outcome::idle) co_return c;
        if (marked_seq_ >= applied_seq_.load()) co_return step_outcome::idle;
    }
    auto r = co_await async_write_mark(*session.value(), applied_seq_.load());
    if (!r && is_outage(r.error())) {
        note_outage("writing the applied mark", session.value()->describe(r.error()));
        co_return step_outcome::outage;
    }
    if (!r) {
        // The mark only serves other gateways' reads; a refusal must not stop applying.
        spdlog::warn("shard {}: writing the applied mark failed: {}", opts_.shard, session.value()->describe(r.error()));
        marked_at_ = std::chrono::steady_clock::now();
        co_return step_outcome::idle;
    }
    co_return step_outcome::progressed;
}

core::result<std::set<std::uint64_t>> apply_worker::held_past(std::uint64_t cursor) const {
    const core::shard_index shard = opts_.shard;
    std::set<std::uint64_t> out;
    auto errors = journal_.list_errors(shard, std::nullopt, std::numeric_limits<std::size_t>::max());
    if (!errors) return errors.error();
    for (const auto& e : errors.value()) {
        if (e.seq > cursor) out.insert(e.seq);
    }
    auto dead = journal_.list_dead_from(shard, cursor + 1, std::numeric_limits<std::size_t>::max());
    if (!dead) return dead.error();
    for (const auto& d : dead.value()) {
        if (d.task.shard == shard) out.insert(d.task.seq);
    }
    return out;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_check_fence(apply_session& s, const core::route_table& table) {
    const auto now = std::chrono::steady_clock::now();
    const std::uint64_t connections = target_.connections_made();
    if (fence_passed_version_ == table.version() && fence_connections_ == connections && now - fence_checked_at_ < fence_interval) {
        co_return step_outcome::idle;
    }
    auto held = co_await s.async_read_map_version();
    if (!held && is_outage(held.error())) {
        note_outage("reading the shard's map version", s.describe(held.error()));
        co_return step_outcome::outage;
    }
    fence_checked_at_ = now;
    fence_connections_ = connections;
    if (!held) {
        spdlog::warn("shard {}: reading its map version failed: {}; applying by map version {}", opts_.shard,
                     s.describe(held.error()), table.version());
        fence_passed_version_ = table.version();
        co_return step_outcome::idle;
    }
    if (held.value() > table.version()) {
        // A split made the shard's rows another map's (docs/resharding.md): what this table would write
        // here may belong to another shard now. The follower reads the map in force on shard 0; until
        // it has, this shard waits (backing off as in an outage; the journal keeps everything).
        fence_passed_version_ = 0;
        note_outage("the shard map check",
                    fmt::format("the shard is at map version {}, this gateway routes by version {}: nothing is applied "
                                "there until it has read the map in force on shard 0",
                                held.value(), table.version()));
        co_return step_outcome::outage;
    }
    fence_passed_version_ = table.version();
    co_return step_outcome::idle;
}

bool apply_worker::mark_check_due() const noexcept {
    return opts_.mark_check && (check_mark_ || target_.connections_made() != checked_connections_);
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_check_mark(apply_session& s) {
    const core::shard_index shard = opts_.shard;
    // Taken before the read: a connection made meanwhile is checked again next time.
    const std::uint64_t connections = target_.connections_made();
    const std::uint64_t cursor = journal_.cursor(shard);
    if (cursor == 0) {
        check_mark_ = false;
        checked_connections_ = connections;
        co_return step_outcome::idle;
    }
    auto mark = co_await s.async_read_mark(journal_.node_id());
    if (!mark && is_outage(mark.error())) {
        note_outage("reading the applied mark", s.describe(mark.error()));
        co_return step_outcome::outage;
    }
    check_mark_ = false;
    checked_connections_ = connections;
    if (!mark) {
        spdlog::warn("shard {}: reading this gateway's applied mark failed: {}; not checking it until the next new "
                     "connection",
                     shard, s.describe(mark.error()));
        co_return step_outcome::idle;
    }
    marked_seq_ = mark.value();
    if (const step_outcome late = co_await async_reapply_late(s); late != step_outcome::idle) co_return late;
    if (mark.value() >= cursor) co_return step_outcome::idle;
    auto first = journal_.first_seq();
    if (!first) {
        spdlog::error("shard {}: reading the journal's first seq failed: {}", shard, first.error().message());
        check_mark_ = true;
        co_return step_outcome::journal_error;
    }
    // Seqs mark+1..cursor were applied (or skipped as not this shard's) and the shard does not
    // record them: applying them again is harmless (idempotent), and brings back whatever the
    // shard lost. Those that retention already deleted cannot come back from here.
    std::uint64_t to = mark.value();
    if (first.value() > to + 1) {
        to = std::min(first.value() - 1, cursor);
        spdlog::error("shard {} ({}): this gateway's applied mark there is seq {}, but the journal no longer holds seqs "
                      "{}..{} (journal.retention_seconds): whatever of them the shard lacks is lost to it unless it is "
                      "restored from elsewhere (e.g. the old primary's data)",
                      shard, target_.name(), mark.value(), mark.value() + 1, to);
        m_lost_.inc(to - mark.value());
    }
    if (to >= cursor) co_return step_outcome::idle;
    spdlog::info("shard {} ({}): this gateway's applied mark there is seq {}, the journal's cursor {}: applying seqs "
                 "{}..{} again (a shard that lost them, such as a promoted replica, gets them back; otherwise they "
                 "change nothing)",
                 shard, target_.name(), mark.value(), cursor, to + 1, cursor);
    if (auto r = co_await async_rewind_cursor(to); !r) {
        check_mark_ = true;
        co_return step_outcome::journal_error;
    }
    m_rewound_.inc(cursor - to);
    co_return step_outcome::progressed;
}

journal::error_task apply_worker::first_failure(std::uint64_t seq, std::string op_bytes, std::string error,
                                                std::string_view what) {
    journal::error_task task;
    task.shard = opts_.shard;
    task.seq = seq;
    task.attempts = 1;
    task.first_failed_ms = now_ms();
    task.due_ms = task.first_failed_ms + static_cast<std::uint64_t>(retry_delay(1).count());
    task.errors.push_back(std::move(error));
    task.op_bytes = std::move(op_bytes);
    spdlog::warn("shard {}: op seq {}{} failed: {}; queued for retry", opts_.shard, seq, what, task.errors.back());
    m_errors_queued_.inc();
    return task;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_reapply_late(apply_session& s) {
    const core::shard_index shard = opts_.shard;
    const std::uint64_t last = journal_.late_last(shard);
    if (last == 0 || !opts_.late_check) co_return step_outcome::idle;
    auto held = co_await s.async_read_late_mark(journal_.node_id());
    if (!held && is_outage(held.error())) {
        note_outage("reading the late mark", s.describe(held.error()));
        co_return step_outcome::outage;
    }
    if (!held) {
        spdlog::warn("shard {}: reading this gateway's late mark failed: {}", shard, s.describe(held.error()));
        co_return step_outcome::idle;
    }
    if (held.value() >= last) co_return step_outcome::idle;
    spdlog::info("shard {} ({}): this gateway's late mark there is {}, the journal's {}: applying the ops applied late "
                 "(retries, re-injected dead letters) numbered {}..{} again",
                 shard, target_.name(), held.value(), last, held.value() + 1, last);
    journal::apply_outcome requeue;  // those that fail here now: back to the error queue
    requeue.shard = shard;
    std::uint64_t after = held.value();
    while (after < last) {
        auto page = journal_.list_late(shard, after, 64);
        if (!page) {
            spdlog::error("shard {}: reading the journal's late applications failed: {}", shard, page.error().message());
            check_mark_ = true;
            co_return step_outcome::journal_error;
        }
        const std::uint64_t next_kept = page.value().empty() ? last + 1 : page.value().front().number;
        if (next_kept > after + 1) {
            const std::uint64_t gone = std::min(next_kept, last + 1) - after - 1;
            spdlog::error("shard {} ({}): {} late applications numbered {}..{} are past the journal's retention: "
                          "whatever of them the shard lacks is lost to it",
                          shard, target_.name(), gone, after + 1, after + gone);
            m_lost_.inc(gone);
        }
        for (auto& l : page.value()) {
            auto decoded = core::decode_op(l.op_bytes);
            core::result<void> r = decoded ? core::success() : core::result<void>(decoded.error());
            if (decoded) {
                for (int attempt = 0; attempt <= retry_now_max; ++attempt) {
                    r = co_await async_apply_one(s, l.seq, decoded.value());
                    if (r || r.error() != core::errc::shard_retry) break;
                }
            }
            if (!r && is_outage(r.error())) {
                note_outage("applying an op applied late again", s.describe(r.error()));
                co_return step_outcome::outage;
            }
            if (!r) {
                requeue.put_errors.push_back(first_failure(
                    l.seq, std::move(l.op_bytes),
                    decoded ? s.describe(r.error()) : "the stored op does not decode: " + r.error().message(),
                    " (applied late before)"));
            } else {
                m_late_reapplied_.inc();
            }
        }
        after = page.value().empty() ? last : page.value().back().number;
    }
    if (!requeue.put_errors.empty()) {
        if (auto c = co_await async_commit_outcome(journal_, std::move(requeue)); !c) {
            spdlog::error("shard {}: committing the error queue failed: {}", shard, c.error().message());
            check_mark_ = true;
            co_return step_outcome::journal_error;
        }
    }
    if (auto m = co_await s.async_mark_late(journal_.node_id(), last); !m) {
        if (is_outage(m.error())) {
            note_outage("writing the late mark", s.describe(m.error()));
            co_return step_outcome::outage;
        }
        spdlog::warn("shard {}: writing the late mark failed: {}", shard, s.describe(m.error()));
    }
    co_return step_outcome::idle;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_apply_batch() {
    const core::shard_index shard = opts_.shard;
    const std::uint64_t cursor = journal_.cursor(shard);
    // Routed by the table read together with the journal's last seq, and only the ops through that
    // seq are taken: an op at or past the adoption seq of a table installed later is never taken
    // under an older one (core::routing::install_at).
    const auto [last, table] = routing_.load_with_last([this] { return journal_.last_seq(); });
    if (last <= cursor) co_return step_outcome::idle;
    // Every shard's worker reads the same ranges: one of them decodes a range, the others share it.
    auto read = journal_.read_ops_shared(cursor, opts_.lim.apply_batch_ops_max, opts_.lim.apply_batch_bytes_max);
    if (!read) {
        spdlog::error("shard {}: reading the journal after seq {} failed: {}", shard, cursor, read.error().message());
        co_return step_outcome::journal_error;
    }
    const journal::journal::op_batch& batch = *read.value();
    if (batch.empty()) co_return step_outcome::idle;

    // Error tasks and dead letters past the cursor exist only after a rewind (async_check_mark):
    // those ops are not applied in the batches. They failed on the old server too and stay where
    // they are: the queue retries them; a dead letter waits for an operator, whatever server the
    // shard is. Looked up after the start (a rewind may precede a crash) and after each rewind,
    // until none is left past the cursor.
    std::set<std::uint64_t> held;
    if (look_ahead_) {
        auto r = held_past(cursor);
        if (!r) {
            spdlog::error("shard {}: reading the error queue and dead letters failed: {}", shard, r.error().message());
            co_return step_outcome::journal_error;
        }
        held = std::move(r).value();
        look_ahead_ = !held.empty();
    }
    // One batch is applied under one rule: it ends where the table's next segment starts (a split's
    // adoption or cut-over seq).
    const std::uint64_t first = batch.front().first;
    // A split's new shard is held until the copy of its range is written: it waits here.
    if (first > last || !table->may_apply(shard, first)) co_return step_outcome::idle;
    const std::uint64_t through = std::min(last, table->segment_last(first));
    const core::shard_map& rows = table->apply_map(shard, first);
    const counter_maps counters{rows, table->base_map()};
    std::vector<const core::op*> mine;
    std::vector<std::uint64_t> mine_seqs;
    std::uint64_t taken_through = first;
    for (const auto& [seq, o] : batch) {
        if (seq > through) break;
        taken_through = seq;
        if (held.contains(seq)) continue;
        if (touches_shard(o, rows, shard, &counters)) {
            mine.push_back(&o);
            mine_seqs.push_back(seq);
        }
    }
    journal::apply_outcome outcome;
    outcome.shard = shard;
    outcome.cursor = taken_through;

    if (!mine.empty()) {
        batch_started_ = std::chrono::steady_clock::now();
        batch_through_ = taken_through;
        pace_next_ = true;
        auto session = co_await target_.async_open();
        if (!session) {
            note_outage("connecting", target_.describe_open_failure(session.error()));
            co_return step_outcome::outage;
        }
        apply_session& s = *session.value();
        // Nothing is applied (and no mark written) on a connection the mark check has not seen.
        if (mark_check_due()) {
            if (const step_outcome c = co_await async_check_mark(s); c != step_outcome::idle) co_return c;
        }
        if (const step_outcome c = co_await async_check_fence(s, *table); c != step_outcome::idle) co_return c;
        core::result<void> r = core::success();
        for (int attempt = 0; attempt <= retry_now_max; ++attempt) {
            r = co_await async_apply(s, *table, first, mine);
            if (r || r.error() != core::errc::shard_retry) break;
        }
        if (!r && is_outage(r.error())) {
            note_outage("applying a batch", s.describe(r.error()));
            co_return step_outcome::outage;
        }
        if (!r) {
            // Some op of the batch fails on a healthy shard: apply each op alone, so that only
            // the failing ones go to the error queue and the rest are applied now.
            for (std::size_t i = 0; i < mine.size(); ++i) {
                std::array<const core::op*, 1> one{mine[i]};
                core::result<void> r1 = core::success();
                for (int attempt = 0; attempt <= retry_now_max; ++attempt) {
                    r1 = co_await async_apply(s, *table, first, one);
                    if (r1 || r1.error() != core::errc::shard_retry) break;
                }
                if (r1) continue;
                if (is_outage(r1.error())) {
                    // Nothing is committed to the journal: the whole batch is applied again
                    // later, which is harmless because applying is idempotent.
                    note_outage("applying an op", s.describe(r1.error()));
                    co_return step_outcome::outage;
                }
                outcome.put_errors.push_back(first_failure(mine_seqs[i], core::encode_op(*mine[i]), s.describe(r1.error()), ""));
            }
        }
        // Before the cursor commit: were the mark written and the commit lost, the batch is applied
        // again, and the mark claimed nothing the shard does not hold.
        if (auto m = co_await async_write_mark(s, taken_through); !m) {
            if (is_outage(m.error())) {
                note_outage("writing the applied mark", s.describe(m.error()));
                co_return step_outcome::outage;
            }
            spdlog::warn("shard {}: writing the applied mark failed: {}", shard, s.describe(m.error()));
        }
        m_batch_latency_.observe(std::chrono::steady_clock::now() - batch_started_);
        m_batch_ops_.observe(static_cast<double>(mine.size()));
        m_applied_ops_.inc(mine.size() - outcome.put_errors.size());
        outcomes_.add(now_ms(), mine.size() - outcome.put_errors.size(), outcome.put_errors.size());
    }
    auto committed = co_await async_commit_outcome(journal_, std::move(outcome));
    if (!committed) {
        spdlog::error("shard {}: committing the cursor failed: {}", shard, committed.error().message());
        co_return step_outcome::journal_error;
    }
    applied_seq_ = taken_through;
    m_applied_seq_.set(static_cast<double>(applied_seq_.load()));
    wake_waiters();
    note_up("applying again");
    co_return step_outcome::progressed;
}

asio::awaitable<apply_worker::step_outcome> apply_worker::async_retry_errors() {
    const core::shard_index shard = opts_.shard;
    auto due = journal_.due_errors(shard, now_ms(), 64);
    if (!due) {
        spdlog::error("shard {}: reading the error queue failed: {}", shard, due.error().message());
        co_return step_outcome::journal_error;
    }
    if (due.value().empty()) co_return step_outcome::idle;
    auto session = co_await target_.async_open();
    if (!session) {
        note_outage("connecting", target_.describe_open_failure(session.error()));
        co_return step_outcome::outage;
    }
    apply_session& s = *session.value();
    if (mark_check_due()) {
        if (const step_outcome c = co_await async_check_mark(s); c != step_outcome::idle) co_return c;
    }
    const auto table = routing_.load();
    if (const step_outcome c = co_await async_check_fence(s, *table); c != step_outcome::idle) co_return c;
    journal::apply_outcome outcome;
    outcome.shard = shard;
    bool outage = false;
    for (auto& task : due.value()) {
        // A split's new shard holds a twin (of the old owner's entry) until the copy is written.
        if (!table->may_apply(shard, table->route_seq(shard, task.seq))) continue;
        auto decoded = core::decode_op(task.op_bytes);
        journal::error_task next = task;
        bool retry_at_once = false;
        outcome.remove_errors.push_back(std::move(task));
        if (decoded) {
            auto r = co_await async_apply_one(s, next.seq, decoded.value());
            if (r) {
                m_applied_ops_.inc();
                outcomes_.add(now_ms(), 1, 0);
                // Applied after the applied mark passed its seq: a replica that the mark says is
                // complete may lack it, so the journal numbers it and the late mark covers it.
                outcome.put_late.push_back({shard, 0, next.seq, now_ms(), std::move(next.op_bytes)});
                continue;
            }
            if (is_outage(r.error())) {
                // A shard outage is not the op's fault: keep the task as it was.
                outcome.remove_errors.pop_back();
                note_outage("retrying an op", s.describe(r.error()));
                outage = true;
                break;
            }
            next.errors.push_back(s.describe(r.error()));
            // A deadlock or lock-wait timeout is retried at once (and still counted).
            retry_at_once = r.error() == core::errc::shard_retry;
        } else {
            next.errors.push_back("the stored op does not decode: " + decoded.error().message());
            next.attempts = opts_.lim.retry_attempts_max;  // retrying cannot help
        }
        if (next.errors.size() > 16) next.errors.erase(next.errors.begin());
        next.attempts += 1;
        outcomes_.add(now_ms(), 0, 1);
        if (next.attempts >= opts_.lim.retry_attempts_max) {
            spdlog::error("shard {}: op seq {} failed {} times; it is now a dead letter: {}", shard, next.seq,
                          next.attempts, next.errors.back());
            outcome.put_dead.push_back({std::move(next), now_ms()});
            m_dead_.inc();
        } else {
            next.due_ms = now_ms();
            if (!retry_at_once) next.due_ms += static_cast<std::uint64_t>(retry_delay(next.attempts).count());
            outcome.put_errors.push_back(std::move(next));
            m_errors_queued_.inc();
        }
    }
    if (outcome.remove_errors.empty()) co_return outage ? step_outcome::outage : step_outcome::idle;
    const bool late = !outcome.put_late.empty();
    auto committed = co_await async_commit_outcome(journal_, std::move(outcome));
    if (!committed) {
        spdlog::error("shard {}: committing the error queue failed: {}", shard, committed.error().message());
        co_return step_outcome::journal_error;
    }
    if (late && !outage) {
        // After the commit, which numbered them: a late mark never names a number the journal may
        // still give to another op. Were it lost, the mark check applies them again (idempotent).
        if (auto m = co_await s.async_mark_late(journal_.node_id(), journal_.late_last(shard)); !m) {
            if (is_outage(m.error())) {
                note_outage("writing the late mark", s.describe(m.error()));
                co_return step_outcome::outage;
            }
            spdlog::warn("shard {}: writing the late mark failed: {}", shard, s.describe(m.error()));
        }
    }
    co_return outage ? step_outcome::outage : step_outcome::progressed;
}

}  // namespace cairn::shards
