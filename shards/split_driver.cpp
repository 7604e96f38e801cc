#include "shards/split_driver.hpp"

#include "core/log_task_end.hpp"
#include "core/hlc.hpp"
#include "shards/gateways.hpp"
#include "shards/map_store.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/range_copy.hpp"
#include "shards/shard_identity.hpp"
#include "shards/shard_set.hpp"
#include "shards/split_routes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace cairn::shards {
namespace asio = boost::asio;

namespace {

// What one round reads from shard 0.
struct split_view {
    std::optional<stored_map> active;
    std::vector<std::uint64_t> live;  // node ids of the live leases
    std::vector<adoption> adopted;    // of the active split
};

// The applied marks (node id -> seq) on one shard.
using marks = std::map<std::uint64_t, std::uint64_t>;

}  // namespace

// Registers connections with the driver for as long as it lives, so that stop() can abort them.
class live_conns {
public:
    live_conns(split_driver& d, std::initializer_list<mariadb_conn*> conns) : d_(d), mine_(conns) {
        std::lock_guard lock(d_.live_mutex_);
        d_.live_.insert(d_.live_.end(), mine_.begin(), mine_.end());
    }
    ~live_conns() {
        std::lock_guard lock(d_.live_mutex_);
        std::erase_if(d_.live_, [this](mariadb_conn* c) { return std::find(mine_.begin(), mine_.end(), c) != mine_.end(); });
    }
    live_conns(const live_conns&) = delete;
    live_conns& operator=(const live_conns&) = delete;

private:
    split_driver& d_;
    std::vector<mariadb_conn*> mine_;
};

split_driver::split_driver(asio::any_io_executor ex, shard_set& set, const core::config& cfg, std::uint32_t node_id,
                           split_driver_options opts)
    : strand_(asio::make_strand(ex)), timer_(strand_), set_(set), cfg_(cfg), node_id_(node_id), opts_(opts) {}

void split_driver::start() { asio::co_spawn(strand_, async_run(), core::log_task_end("split_driver")); }

void split_driver::stop() {
    stopping_ = true;
    {
        std::lock_guard lock(live_mutex_);
        for (auto* c : live_) c->abort();
    }
    asio::post(strand_, [this] { timer_.cancel(); });
}

asio::awaitable<void> split_driver::async_run() {
    while (!stopping_) {
        if (auto r = co_await async_drive_once(); !r && !stopping_) {
            const auto note = "driving the split failed: " + r.error().message();
            if (note != last_note_) spdlog::warn("split: {}; trying again every {} ms", note, opts_.interval.count());
            last_note_ = note;
        }
        if (stopping_) break;
        timer_.expires_after(opts_.interval);
        core::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<core::result<void>> split_driver::async_connect_checked(mariadb_conn& conn, core::shard_index index) {
    std::string why;
    auto r = co_await shards::async_connect_checked(conn, index, static_cast<std::uint32_t>(cfg_.shards.size()), &why);
    if (!why.empty()) spdlog::error("split: shard {}: {}", index, why);
    co_return r;
}

asio::awaitable<core::result<std::vector<copy_group>>> split_driver::async_open_pair(mariadb_conn& source, core::shard_index from,
                                                                                     mariadb_conn& target, core::shard_index to) {
    if (auto r = co_await async_connect_checked(target, to); !r) co_return r.error();
    co_return co_await async_open_source(source, from);
}

asio::awaitable<core::result<std::vector<copy_group>>> split_driver::async_open_source(mariadb_conn& source, core::shard_index from) {
    if (auto r = co_await async_connect_checked(source, from); !r) co_return r.error();
    co_return co_await async_plan_range_copy(source, cfg_.counters, cfg_.cells);
}

asio::awaitable<void> split_driver::async_publish(mariadb_conn& conn, std::uint32_t version) {
    progress_.driver = node_id_;
    progress_.updated_ms = core::system_wall_clock_ms();
    // Progress is for people: a failed write is logged once and the split goes on.
    if (auto r = co_await async_write_progress(conn, version, progress_); !r && !publish_failed_) {
        spdlog::warn("split: writing the progress on shard 0 failed: {}", r.error().message());
        publish_failed_ = true;
    } else if (r) {
        publish_failed_ = false;
    }
    if (position_dirty_ && position_) {
        const auto at = *position_;  // the copy may move it while this writes
        position_dirty_ = false;
        if (auto w = co_await async_mark_copy_position(conn, at); !w) {
            spdlog::warn("split: writing the copy's position in {} on shard 0 failed: {} (tried again with the next progress)",
                         at.group, w.error().message());
            position_dirty_ = true;
        }
    }
    while (!parts_done_.empty()) {
        if (auto w = co_await async_mark_step_done(conn, parts_done_.front()); !w) {
            spdlog::warn("split: marking {} {} done on shard 0 failed: {} (tried again with the next progress)",
                         split_step_name(parts_done_.front().step), parts_done_.front().unit, w.error().message());
            break;
        }
        parts_done_.erase(parts_done_.begin());
    }
}

asio::awaitable<core::result<void>> split_driver::async_skip_done(mariadb_conn& conn, std::uint32_t version, split_step step,
                                                                  std::vector<copy_group>& plan) {
    parts_done_.clear();
    auto done = co_await async_steps_done(conn, version, step);
    if (!done) co_return done.error();
    std::set<std::string, std::less<>> units;
    for (const auto& d : done.value()) units.insert(d.unit);
    std::vector<std::string> skipped;
    for (auto& g : plan) {
        if (step == split_step::copy) {
            if (units.contains(g.name)) skipped.push_back(g.name);
            continue;
        }
        std::erase_if(g.tables, [&](const copy_table& t) {
            if (t.route == route_by::whole || !units.contains(t.name)) return false;
            skipped.push_back(t.name);
            return true;
        });
    }
    if (step == split_step::copy) std::erase_if(plan, [&](const copy_group& g) { return units.contains(g.name); });
    if (!skipped.empty()) {
        spdlog::info("split: map version {}: resuming the {}: {} done by an earlier run", version, split_step_name(step),
                     fmt::join(skipped, ", "));
    }
    co_return core::success();
}

void split_driver::on_part_done(std::uint32_t version, split_step step, const range_copy_progress& p) {
    const auto& unit = step == split_step::copy ? p.group : p.table;
    spdlog::info("split: map version {}: {} of {} done ({} rows read, {} {})", version, split_step_name(step), unit, p.rows_read,
                 p.rows_copied, step == split_step::copy ? "copied" : "deleted");
    parts_done_.push_back({version, step, unit, p.rows_read, p.rows_copied, node_id_, core::system_wall_clock_ms()});
    if (ticker_ != nullptr) ticker_->cancel();  // written now rather than at the next tick
}

void split_driver::on_copy_position(std::uint32_t version, const range_copy_progress& p) {
    if (p.last_key.empty()) return;
    position_ = copy_position{version, p.group, p.table, p.last_key, p.rows_read, node_id_, core::system_wall_clock_ms()};
    position_dirty_ = true;
}

asio::awaitable<void> split_driver::async_start_step(mariadb_conn& source, const std::vector<copy_group>& plan,
                                                     std::string what) {
    progress_.note = std::move(what);
    progress_.table.clear();
    progress_.rows_read = progress_.rows_done = 0;
    step_read_ = step_done_ = table_read_ = table_done_ = 0;
    progress_.started_ms = core::system_wall_clock_ms();
    last_chunk_log_ = std::chrono::steady_clock::now();
    // The rows the step reads: the source's table statistics (an estimate, good enough for an ETA).
    progress_.rows_estimate = 0;
    auto stats = co_await source.async_query(
        "SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()");
    if (!stats) co_return;
    std::set<std::string, std::less<>> names;
    for (const auto& g : plan) {
        for (const auto& t : g.tables) names.insert(t.name);
    }
    for (std::size_t i = 0; i < stats.value().size(); ++i) {
        if (names.contains(stats.value().at(i, 0).value_or(""))) progress_.rows_estimate += stats.value().uint64_at(i, 1);
    }
}

void split_driver::on_chunk(const range_copy_progress& p, std::string_view verb) {
    if (p.table != progress_.table) {
        step_read_ += table_read_;
        step_done_ += table_done_;
        table_read_ = table_done_ = 0;
        progress_.table = p.table;
    }
    table_read_ = p.rows_read;
    table_done_ = p.rows_copied;
    progress_.rows_read = step_read_ + table_read_;
    progress_.rows_done = step_done_ + table_done_;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_chunk_log_ < std::chrono::seconds(5)) return;
    last_chunk_log_ = now;
    spdlog::info("split: {} {} ({}): {} rows read of about {}, {} in the moved half", verb, p.group, p.table,
                 progress_.rows_read, progress_.rows_estimate, progress_.rows_done);
}

asio::awaitable<core::result<range_copy_stats>> split_driver::async_publishing(
    mariadb_conn& conn, std::uint32_t version, split_state state,
    const std::function<asio::awaitable<core::result<range_copy_stats>>()>& step) {
    // A ticker on this strand writes the progress every 2 s while the step runs (the lock's connection
    // is idle meanwhile); the step's end stops it, and it is awaited before conn may go.
    bool running = true;
    bool ticker_ended = false;
    asio::steady_timer tick(strand_);
    asio::steady_timer ended(strand_, asio::steady_timer::time_point::max());
    ticker_ = &tick;
    co_await async_publish(conn, version);
    asio::co_spawn(
        strand_,
        [&]() -> asio::awaitable<void> {
            while (running) {
                tick.expires_after(std::chrono::seconds(2));
                core::error_code ec;
                co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                if (!running) break;
                co_await async_publish(conn, version);
                // A split cancelled (moved to failed) while this runs: its copy stops at the next chunk.
                if (auto maps = co_await async_read_maps(conn); maps && running) {
                    const auto it = std::find_if(maps.value().begin(), maps.value().end(),
                                                 [&](const stored_map& m) { return m.version == version; });
                    if (it == maps.value().end() || it->state != state) {
                        spdlog::warn("split: map version {} moved to {} while the driver was in {}: stopping", version,
                                     it == maps.value().end() ? std::string_view("(gone)") : split_state_name(it->state),
                                     split_state_name(state));
                        abandoned_ = true;
                    }
                }
            }
            ticker_ended = true;
            ended.cancel();
        },
        asio::detached);
    abandoned_ = false;
    auto r = co_await step();
    running = false;
    ticker_ = nullptr;
    tick.cancel();
    if (!ticker_ended) {
        core::error_code ec;
        co_await ended.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_await async_publish(conn, version);
    co_return r;
}

range_copy_options split_driver::step_options(bool throttled) {
    range_copy_options o;
    o.chunk_rows = opts_.copy_chunk_rows;
    o.stop_requested = [this] { return stopping_.load() || abandoned_; };
    if (throttled && opts_.copy_rows_per_second_max > 0) {
        o.rows_per_second_max = opts_.copy_rows_per_second_max;
        // A chunk at most a second's worth of the throttle: smooth progress, prompt stops.
        o.chunk_rows = std::clamp<std::size_t>(static_cast<std::size_t>(o.rows_per_second_max), 1, o.chunk_rows);
    }
    return o;
}

asio::awaitable<core::result<void>> split_driver::async_delete_counters(core::shard_index from, core::hash_range range) {
    const auto ex = co_await asio::this_coro::executor;
    mariadb_conn source(ex, conn_params_of(cfg_, from));
    const live_conns live(*this, {&source});
    auto plan = co_await async_open_source(source, from);
    if (!plan) co_return plan.error();
    std::erase_if(plan.value(), [](const copy_group& g) { return g.name != "counters"; });
    auto deleted = co_await async_delete_range(source, plan.value(), range, step_options(false));
    source.close();
    if (!deleted) co_return deleted.error();
    if (deleted.value().rows_copied != 0) {
        spdlog::info("split: deleted shard {}'s {} counter rows of the moved half (the new shard holds them whole)", from,
                     deleted.value().rows_copied);
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> split_driver::async_raise_fence(std::uint32_t version, core::shard_index from, core::shard_index to) {
    const auto ex = co_await asio::this_coro::executor;
    for (const core::shard_index s : {from, to}) {
        mariadb_conn conn(ex, conn_params_of(cfg_, s));
        const live_conns live(*this, {&conn});
        if (auto r = co_await async_connect_checked(conn, s); !r) co_return r;
        if (auto r = co_await async_raise_map_version(conn, version); !r) co_return r;
        conn.close();
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> split_driver::async_drive_once() {
    auto read = co_await set_.at(0).async_read([](mariadb_conn& c) -> asio::awaitable<core::result<split_view>> {
        split_view v;
        auto maps = co_await async_read_maps(c);
        if (!maps) co_return maps.error();
        // The newest split under way, cleaning included (the follower's active_split stops at done).
        for (const auto& m : maps.value()) {
            if (m.state >= split_state::adopting && m.state <= split_state::cleaning) v.active = m;
        }
        if (!v.active) co_return v;
        auto leases = co_await async_list_leases(c);
        if (!leases) co_return leases.error();
        for (const auto& l : leases.value()) {
            if (l.active) v.live.push_back(l.node_id);
        }
        auto adopted = co_await async_adoptions(c, v.active->version);
        if (!adopted) co_return adopted.error();
        v.adopted = std::move(adopted).value();
        co_return v;
    });
    if (!read) co_return read.error();
    const split_view& view = read.value();
    if (!view.active) {
        dirty_diffs_ = 0;
        co_return core::success();
    }
    // The driver is the live gateway with the lowest node id (this one, if no lease is live: shard 0
    // answered, so its own lease is being renewed).
    if (!view.live.empty() && *std::min_element(view.live.begin(), view.live.end()) != node_id_) co_return core::success();
    const stored_map& split = *view.active;
    const auto from = split.split_shard;
    const auto to = split.new_shard;
    if (to >= set_.size() || to >= cfg_.shards.size()) co_return core::errc::shard_rejected;  // the follower says why
    const auto range = split.map.range_of(to);
    // What it waits for, logged once, and kept on shard 0 for `cairn reshard status` once this driver
    // holds the lock (through the lock's connection; a gateway that does not drive publishes nothing).
    mariadb_conn* publisher = nullptr;
    const auto note = [this, &split, &publisher](std::string what) -> asio::awaitable<void> {
        if (what == last_note_) co_return;
        spdlog::info("split: {}", what);
        last_note_ = what;
        progress_.note = std::move(what);
        if (publisher != nullptr) co_await async_publish(*publisher, split.version);
    };
    const auto move_to = [&](split_state next) -> asio::awaitable<core::result<void>> {
        auto r = co_await set_.at(0).async_read([&](mariadb_conn& c) -> asio::awaitable<core::result<void>> {
            co_return co_await async_move_split(c, split.version, split.state, next, core::system_wall_clock_ms());
        });
        if (r) {
            const auto what = fmt::format("map version {} (shard {} to shard {}) {} -> {}", split.version, from, to,
                                          split_state_name(split.state), split_state_name(next));
            spdlog::info("split: {}", what);
            progress_.note = what;
            last_note_.clear();
            if (publisher != nullptr) co_await async_publish(*publisher, split.version);
        }
        co_return r;
    };
    std::map<std::uint64_t, std::uint64_t> adopted_from;
    std::map<std::uint64_t, split_state> seen;
    std::map<std::uint64_t, std::uint64_t> cut_over;
    for (const auto& a : view.adopted) {
        adopted_from[a.node_id] = a.from_seq;
        seen[a.node_id] = a.seen;
        if (a.cut_over_seq != 0) cut_over[a.node_id] = a.cut_over_seq;
    }
    const auto every_live = [&](auto&& pred) {
        return std::all_of(view.live.begin(), view.live.end(), [&](std::uint64_t n) { return pred(n); });
    };
    const auto read_marks = [this](core::shard_index s) -> asio::awaitable<core::result<marks>> {
        auto r = co_await set_.at(s).async_read([](mariadb_conn& c) { return async_read_applied_marks(c); });
        if (!r) co_return r.error();
        co_return marks(r.value().begin(), r.value().end());
    };

    // One driver at a time, also while the election changes hands (a gateway stopping or coming back
    // mid-copy): two copies from different snapshots could leave counts that disagree with the rows.
    // A named lock on shard 0, held by a connection of this round's own: a driver that dies frees it.
    mariadb_conn lock(co_await asio::this_coro::executor, conn_params_of(cfg_, 0));
    const live_conns live_lock(*this, {&lock});
    if (auto r = co_await async_connect_checked(lock, 0); !r) co_return r;
    auto got = co_await lock.async_query("SELECT GET_LOCK('cairn_split_driver', 0)");
    if (!got) co_return got.error();
    if (got.value().size() != 1 || got.value().at(0, 0) != std::optional<std::string_view>("1")) {
        co_await note(fmt::format("map version {}: another gateway is driving the split", split.version));
        co_return core::success();
    }
    publisher = &lock;
    // The state read above may be a previous driver's, who moved it since: acted on only if it holds
    // now that nobody else can move it (a copy after the new shard was released would undo its applies).
    {
        auto again = co_await async_read_maps(lock);
        if (!again) co_return again.error();
        const auto it = std::find_if(again.value().begin(), again.value().end(),
                                     [&](const stored_map& m) { return m.version == split.version; });
        if (it == again.value().end() || it->state != split.state) co_return core::success();
    }
    switch (split.state) {
        case split_state::adopting: {
            if (!every_live([&](std::uint64_t n) { return adopted_from.contains(n); })) {
                co_await note(fmt::format("map version {}: waiting for every live gateway to adopt it", split.version));
                co_return core::success();
            }
            auto on_from = co_await read_marks(from);
            if (!on_from) co_return on_from.error();
            for (const auto& [n, s] : adopted_from) {
                const auto it = on_from.value().find(n);
                if ((it == on_from.value().end() ? 0 : it->second) + 1 < s) {
                    co_await note(fmt::format("map version {}: waiting for shard {} to apply node {}'s ops before seq {}", split.version,
                                     from, n, s));
                    co_return core::success();
                }
            }
            co_return co_await move_to(split_state::copying);
        }
        case split_state::copying: {
            const auto ex = co_await asio::this_coro::executor;
            mariadb_conn source(ex, conn_params_of(cfg_, from));
            mariadb_conn target(ex, conn_params_of(cfg_, to));
            const live_conns live(*this, {&source, &target});
            auto plan = co_await async_open_pair(source, from, target, to);
            if (!plan) co_return plan.error();
            if (auto r = co_await async_skip_done(lock, split.version, split_step::copy, plan.value()); !r) co_return r;
            range_copy_options o = step_options(true);
            // Inside a group whose rows stand alone, an earlier run's position: the copy resumes there.
            position_.reset();
            position_dirty_ = false;
            auto positions = co_await async_copy_positions(lock, split.version);
            if (!positions) co_return positions.error();
            if (!plan.value().empty() && plan.value().front().resumable) {
                for (auto& at : positions.value()) {
                    if (at.group != plan.value().front().name) continue;
                    spdlog::info("split: map version {}: resuming the copy of {} in {} after {} rows read there by node {}",
                                 split.version, at.group, at.table, at.rows_read, at.driver);
                    o.resume = copy_resume{at.group, at.table, std::move(at.after)};
                }
            }
            std::set<std::string, std::less<>> resumable;
            for (const auto& g : plan.value()) {
                if (g.resumable) resumable.insert(g.name);
            }
            co_await async_start_step(source, plan.value(), fmt::format("copying shard {}'s hashes {}..{} to shard {}", from,
                                                                         range.first, range.last, to));
            auto copied = co_await async_publishing(lock, split.version, split.state, [&]() {
                return async_copy_range(
                    source, target, plan.value(), range, o,
                    [this, &split, &resumable](const range_copy_progress& p) {
                        on_chunk(p, "copying");
                        if (resumable.contains(p.group)) on_copy_position(split.version, p);
                    },
                    [this, &split](const range_copy_progress& p) { on_part_done(split.version, split_step::copy, p); });
            });
            source.close();
            target.close();
            if (!copied && abandoned_) {
                spdlog::info("split: map version {}: the copy stopped: the split left copying", split.version);
                co_return core::success();
            }
            if (!copied) co_return copied.error();
            spdlog::info("split: map version {}: copied {} rows ({} read) in this run", split.version, copied.value().rows_copied,
                         copied.value().rows_read);
            co_return co_await move_to(split_state::catching_up);
        }
        case split_state::catching_up: {
            auto on_from = co_await read_marks(from);
            if (!on_from) co_return on_from.error();
            auto on_to = co_await read_marks(to);
            if (!on_to) co_return on_to.error();
            for (const auto& [n, s] : adopted_from) {
                const auto f = on_from.value().find(n);
                const auto t = on_to.value().find(n);
                const std::uint64_t want = f == on_from.value().end() ? 0 : f->second;
                if ((t == on_to.value().end() ? 0 : t->second) < want) {
                    co_await note(fmt::format("map version {}: shard {} catching up on node {}'s ops (at {} of {})", split.version, to,
                                     n, t == on_to.value().end() ? 0 : t->second, want));
                    co_return core::success();
                }
            }
            dirty_diffs_ = 0;
            co_return co_await move_to(split_state::verifying);
        }
        case split_state::verifying: {
            const auto ex = co_await asio::this_coro::executor;
            mariadb_conn source(ex, conn_params_of(cfg_, from));
            mariadb_conn target(ex, conn_params_of(cfg_, to));
            const live_conns live(*this, {&source, &target});
            auto plan = co_await async_open_pair(source, from, target, to);
            if (!plan) co_return plan.error();
            // Counters are not compared: counter_ops holds both halves' op ids on I (copied whole).
            std::erase_if(plan.value(), [](const copy_group& g) { return g.name == "counters"; });
            const range_copy_options o = step_options(false);
            // Chunk by chunk (range_copy.hpp, as Vitess's VDiff): under live writes the two shards are
            // rarely at the same op, but a small chunk is rarely touched while it is read. Each side's
            // read of a chunk also reads that shard's applied marks: a chunk that differs at the same
            // marks is a real difference; at different marks, ops one side has not applied yet, and
            // that chunk alone is compared again (at once, a few times; then in the next rounds).
            constexpr std::string_view marks_sql = "SELECT node_id, seq FROM applied_marks ORDER BY node_id";
            if (pending_chunks_version_ != split.version) {
                pending_chunks_.clear();
                pending_chunks_version_ = 0;
            }
            for (int attempt = 0; attempt < 10 && !stopping_; ++attempt) {
                // (Two statements, not one ?: of two co_awaits: g++ 12 frees the chosen result early.)
                core::result<std::vector<range_chunk_diff>> diff = core::errc::shard_rejected;
                if (pending_chunks_version_ == 0) {
                    diff = co_await async_diff_range_chunks(source, target, plan.value(), range, o, marks_sql);
                } else {
                    diff = co_await async_rediff_chunks(source, target, plan.value(), range, pending_chunks_, o, marks_sql);
                }
                if (!diff) co_return diff.error();
                std::vector<std::string> differing;
                std::vector<range_chunk_diff> moving;
                for (auto& d : diff.value()) {
                    if (d.tag_from != d.tag_to) {
                        moving.push_back(std::move(d));
                        continue;
                    }
                    differing.push_back(fmt::format("{} after key ({}) ({} rows on shard {}, {} on shard {})", d.table,
                                                    fmt::join(d.after, ", "), d.rows_from, from, d.rows_to, to));
                }
                pending_chunks_ = std::move(moving);
                pending_chunks_version_ = split.version;
                if (differing.empty() && pending_chunks_.empty()) {
                    source.close();
                    target.close();
                    pending_chunks_version_ = 0;
                    co_return co_await move_to(split_state::switched);
                }
                if (differing.empty()) continue;  // still applying: compare those chunks again
                source.close();
                target.close();
                pending_chunks_version_ = 0;  // the next round compares every chunk again
                if (++dirty_diffs_ < opts_.verify_attempts) {
                    co_await note(fmt::format("map version {}: shards {} and {} differ in {} at the same applied ops; comparing again",
                                     split.version, from, to, fmt::join(differing, ", ")));
                    co_return core::success();
                }
                spdlog::error("split: map version {}: shards {} and {} still differ after {} comparisons at the same applied "
                              "ops: {}; the split fails",
                              split.version, from, to, dirty_diffs_, fmt::join(differing, ", "));
                co_return co_await move_to(split_state::failed);
            }
            source.close();
            target.close();
            co_await note(fmt::format("map version {}: shards {} and {} are still applying; comparing {} chunks again", split.version,
                             from, to, pending_chunks_.size()));
            co_return core::success();
        }
        case split_state::switched:
        case split_state::done: {
            if (!every_live([&](std::uint64_t n) { return seen.contains(n) && seen[n] >= split.state; })) {
                co_await note(fmt::format("map version {}: waiting for every live gateway to route by {}", split.version,
                                 split_state_name(split.state)));
                co_return core::success();
            }
            if (split.state == split_state::switched) {
                // The fence: a gateway that still routes by an older map (it never read this one on
                // shard 0) applies nothing on the two shards whose rows the split moved.
                if (auto r = co_await async_raise_fence(split.version, from, to); !r) co_return r;
                co_return co_await move_to(split_state::done);
            }
            // Cleaning deletes I's rows of R: first I must have applied every op that may still write
            // one there, those below each gateway's cut-over.
            auto on_from = co_await read_marks(from);
            if (!on_from) co_return on_from.error();
            for (const auto& [n, t] : cut_over) {
                const auto it = on_from.value().find(n);
                if ((it == on_from.value().end() ? 0 : it->second) + 1 < t) {
                    co_await note(fmt::format("map version {}: waiting for shard {} to apply node {}'s ops before its cut-over {}",
                                     split.version, from, n, t));
                    co_return core::success();
                }
            }
            // Every gateway reads the moved half's counters from N, where they are whole (I's sums
            // as copied, then every increment from the adoption), and I has counted R's last (those
            // below each cut-over). Reads over every shard leave I's sums of R out only while a
            // gateway's table has the split; in cleaning it has not: they go first.
            if (auto r = co_await async_delete_counters(from, range); !r) co_return r;
            co_return co_await move_to(split_state::cleaning);
        }
        case split_state::cleaning: {
            const auto ex = co_await asio::this_coro::executor;
            mariadb_conn source(ex, conn_params_of(cfg_, from));
            const live_conns live(*this, {&source});
            auto plan = co_await async_open_source(source, from);
            if (!plan) co_return plan.error();
            if (auto r = co_await async_skip_done(lock, split.version, split_step::clean, plan.value()); !r) co_return r;
            const range_copy_options o = step_options(true);
            co_await async_start_step(source, plan.value(), fmt::format("deleting shard {}'s rows of hashes {}..{}", from,
                                                                         range.first, range.last));
            auto deleted = co_await async_publishing(lock, split.version, split.state, [&]() {
                return async_delete_range(
                    source, plan.value(), range, o, [this](const range_copy_progress& p) { on_chunk(p, "deleting"); },
                    [this, &split](const range_copy_progress& p) { on_part_done(split.version, split_step::clean, p); });
            });
            source.close();
            if (!deleted && abandoned_) {
                spdlog::info("split: map version {}: the clean stopped: the split left cleaning", split.version);
                co_return core::success();
            }
            if (!deleted) co_return deleted.error();
            spdlog::info("split: map version {}: deleted shard {}'s {} rows of the moved half ({} read)", split.version, from,
                         deleted.value().rows_copied, deleted.value().rows_read);
            co_return co_await move_to(split_state::retired);
        }
        default:
            co_return core::success();
    }
}

}  // namespace cairn::shards
