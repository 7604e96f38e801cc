#include "shards/split_follower.hpp"

#include "core/codec.hpp"
#include "core/hlc.hpp"
#include "core/log_task_end.hpp"
#include "journal/journal.hpp"
#include "shards/journal_await.hpp"
#include "shards/map_store.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/shard_identity.hpp"
#include "shards/shard_set.hpp"
#include "shards/split_routes.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace cairn::shards {
namespace asio = boost::asio;

namespace {

// What one round reads from shard 0.
struct shard0_view {
    std::vector<stored_map> maps;
    std::uint32_t base_count = 0;                // shard 0's identity count: the map's version 1
    std::optional<std::uint64_t> adopted_from;   // this gateway's adoption of the active split
};

}  // namespace

// Asks shard's worker to go back to seq and waits until it has (its cursor committed at or below seq,
// or found there; its next step does it, once its shard is up); false if stop() came first. Checks every
// 10 ms, says so after 1 s and every 10 s.
asio::awaitable<bool> split_follower::async_rewind(core::shard_index shard, std::uint64_t seq) {
    const std::uint64_t ticket = set_.at(shard).rewind_to(seq);
    asio::steady_timer wait(strand_);
    for (int i = 1; !stopping_; ++i) {
        if (set_.at(shard).rewinds_done() >= ticket) co_return true;
        if (i == 100 || i % 1000 == 0) {
            spdlog::warn("routing: waiting for shard {}'s worker to go back to seq {} (its shard must be up)", shard, seq);
        }
        wait.expires_after(std::chrono::milliseconds(10));
        core::error_code ec;
        co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return false;
}

asio::awaitable<void> split_follower::async_wait_unused(const std::shared_ptr<const core::route_table>& replaced, long own) {
    asio::steady_timer wait(strand_);
    for (int i = 1; !stopping_ && replaced.use_count() > own; ++i) {
        if (i == 2000) {
            spdlog::warn("routing: something still acts by the replaced route table after 10 s ({} holders); shard 0 learns "
                         "of the new one anyway",
                         replaced.use_count() - own);
            co_return;
        }
        wait.expires_after(std::chrono::milliseconds(5));
        core::error_code ec;
        co_await wait.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

namespace {

std::string describe(const core::route_table& t) {
    if (!t.split()) return fmt::format("map version {} ({} shards)", t.version(), t.map().size());
    const auto& sp = *t.split();
    return fmt::format("map version {}: shard {} splitting to shard {}, adopted from seq {}{}{}{}{}", t.version(), sp.from,
                       t.map().size(), sp.adoption_seq, sp.adoption_pending ? " (not yet recorded: every shard waits there)" : "",
                       sp.new_shard_held ? ", the new shard held for the copy" : "", sp.reads_moved ? ", reads moved" : "",
                       sp.cut_over_seq != 0 ? fmt::format(", cut over from seq {}", sp.cut_over_seq) : "");
}

}  // namespace

split_follower::split_follower(asio::any_io_executor ex, shard_set& set, journal::journal& j, core::routing& routing,
                               std::uint32_t node_id, std::chrono::milliseconds interval)
    : strand_(asio::make_strand(ex)),
      timer_(strand_),
      set_(set),
      journal_(j),
      routing_(routing),
      node_id_(node_id),
      interval_(interval) {}

void split_follower::start(std::function<void(bool)> first_round, std::chrono::milliseconds first_round_wait) {
    first_round_ = std::move(first_round);
    first_round_wait_ = first_round_wait;
    asio::co_spawn(strand_, async_run(), core::log_task_end("split_follower"));
}

void split_follower::stop() {
    stopping_ = true;
    asio::post(strand_, [this] { timer_.cancel(); });
}

core::result<core::route_table> split_follower::initial_table(const journal::journal& j, std::uint32_t base_count) {
    auto record = j.route_record();
    if (!record) return record.error();
    if (record.value().empty()) return core::route_table(1, core::shard_map::equal_ranges(base_count));
    auto t = core::route_table::parse(record.value(), base_count);
    if (!t) return core::errc::journal_corrupt;
    return t;
}

asio::awaitable<void> split_follower::async_run() {
    const auto started = std::chrono::steady_clock::now();
    while (!stopping_) {
        auto r = co_await async_follow_once();
        if (stopping_) break;
        if (first_round_ && (r || std::chrono::steady_clock::now() - started >= first_round_wait_)) {
            auto call = std::move(first_round_);
            first_round_ = nullptr;
            call(r.has_value());
        }
        if (!r && !warned_) {
            spdlog::warn("routing: following the shard map on shard 0 failed: {}{}{}; trying again every {} ms",
                         r.error().message(), problem_.empty() ? "" : ": ", problem_, interval_.count());
            warned_ = true;
        } else if (r && warned_) {
            spdlog::info("routing: following the shard map on shard 0 again");
            warned_ = false;
        }
        timer_.expires_after(interval_);
        core::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<core::result<void>> split_follower::async_record(const core::route_table& t) {
    journal::apply_outcome o;
    o.shard = 0;
    o.put_route = t.to_text();
    co_return co_await async_commit_outcome(journal_, std::move(o));
}

asio::awaitable<core::result<void>> split_follower::async_follow_once() {
    problem_.clear();
    const auto node = node_id_;
    std::string why;
    auto read = co_await set_.at(0).async_read([&](mariadb_conn& c) -> asio::awaitable<core::result<shard0_view>> {
        shard0_view v;
        auto id = co_await async_read_shard_identity(c);
        if (!id) co_return id.error();
        // The connection check wrote it before this query could run; absent only if it was deleted.
        if (!id.value()) co_return core::errc::shard_rejected;
        v.base_count = id.value()->count;
        auto maps = co_await async_read_maps(c, &why);
        if (!maps) co_return maps.error();
        v.maps = std::move(maps).value();
        if (const auto* active = active_split(v.maps)) {
            auto adopted = co_await async_adoptions(c, active->version);
            if (!adopted) co_return adopted.error();
            for (const auto& a : adopted.value()) {
                if (a.node_id == node) v.adopted_from = a.from_seq;
            }
        }
        co_return v;
    });
    if (!read) {
        problem_ = why;
        co_return read.error();
    }
    const shard0_view& view = read.value();
    const auto current = routing_.load();
    const stored_map* active = active_split(view.maps);
    // A map that names a shard this gateway's config does not list cannot be followed: its writes of
    // that shard's range would reach no one. The shard must be added to the config first.
    {
        std::uint32_t version = 1;
        const auto in_force = map_in_force(view.maps, view.base_count, &version);
        const std::uint32_t needed = active != nullptr ? active->map.size() : in_force.size();
        if (needed > set_.size()) {
            problem_ = fmt::format("map version {} needs {} shards; this gateway's config lists {}: add the new shard ({}) "
                                   "to [[shards]] and restart it",
                                   active != nullptr ? active->version : version, needed, set_.size(),
                                   active != nullptr ? active->new_address : std::string("see shard_maps on shard 0"));
            co_return core::errc::shard_rejected;
        }
        // The new shard must be the server the split names: a gateway that lists another one there would
        // write the moved half's rows to it, apart from every other gateway's.
        if (active != nullptr && set_.address(active->new_shard) != active->new_address) {
            problem_ = fmt::format("map version {} moves shard {}'s upper half to shard {} at {}, but this gateway's config "
                                   "lists shard {} at {}: it does not adopt the split (which waits in adopting) until its "
                                   "[[shards]] names that address; or cancel the split (cairn reshard cancel)",
                                   active->version, active->split_shard, active->new_shard, active->new_address,
                                   active->new_shard, set_.address(active->new_shard));
            co_return core::errc::shard_rejected;
        }
    }

    std::optional<std::uint64_t> adoption = view.adopted_from;
    std::optional<std::uint64_t> late_from;  // a late adoption's seq (after reads moved)
    if (active != nullptr && current->split() && current->version() == active->version && !adoption) {
        adoption = current->split()->adoption_seq;  // adopted here, not yet recorded on shard 0
    }
    if (active != nullptr && !adoption && active->state > split_state::adopting) {
        // A gateway that joins after the adoption phase (started, or back from losing shard 0): since it
        // started, its workers may have applied ops on the old owner under the old map after the copy read
        // its rows, and the new shard would never get them (counter ops silently). Before reads move the
        // split fails, and is started again; after, it can only go on: this gateway adopts it late (below).
        if (active->state < split_state::switched) {
            const auto failed_now = co_await set_.at(0).async_read([&](mariadb_conn& c) -> asio::awaitable<core::result<void>> {
                co_return co_await async_move_split(c, active->version, active->state, split_state::failed, core::system_wall_clock_ms());
            });
            if (!failed_now && failed_now.error() != core::errc::conflict) co_return failed_now.error();
            if (failed_now) {
                spdlog::error("routing: node {} joined map version {} while it was {}, without having adopted it: ops it "
                              "applied on shard {} since it started may be missing on shard {}, so the split fails; start it "
                              "again (cairn reshard split)",
                              node, active->version, split_state_name(active->state), active->split_shard, active->new_shard);
            }
            co_return core::success();  // the next round follows the map in force
        }
        // After reads moved the split can only go on: this gateway adopts it from the first seq its
        // journal holds, and the new shard's worker applies every op from there again by that table —
        // the moved half's ops that the old owner got alone (under the old map, before this round) reach
        // the new shard too (rows: last writer wins; counter ops: the new shard knows the op ids the copy
        // brought, and counts the rest once).
        auto first = journal_.first_seq();
        if (!first) co_return first.error();
        late_from = std::max<std::uint64_t>(first.value(), 1);
        spdlog::warn("routing: node {} joined map version {} after reads moved ({}), without having adopted it: it adopts it "
                     "from seq {} (the journal's first), and shard {} applies every op of the moved half from there again",
                     node, active->version, split_state_name(active->state), *late_from, active->new_shard);
    }
    if (active != nullptr && !adoption && late_from) {
        auto pending = pending_adoption_table(view.maps, view.base_count, *late_from);
        if (!pending) co_return pending.error();
        routing_.install(std::move(pending).value());
        // The new shard's worker passed these seqs under the old map: it goes back (its next step, while
        // the pending adoption holds every apply from the seq). The rewound cursor must be durable before
        // the adoption is: a restart after the adoption is recorded follows the recorded table and would
        // not rewind again (the ops would stay missing on the new shard). Not yet: the next round asks again.
        if (!co_await async_rewind(active->new_shard, *late_from - 1)) co_return core::success();  // stopping
        adoption = *late_from;
        spdlog::info("routing: adopting {}", describe(*routing_.load()));
    } else if (active != nullptr && !adoption) {
        // Adopt: from the journal's next seq every shard's worker waits (the pending adoption) until
        // the seq is durable here and on shard 0; nothing is applied under a split a restart forgets.
        std::optional<core::error_code> refused;
        routing_.install_at([this] { return journal_.last_seq(); }, [&](std::uint64_t next_seq) {
            auto t = pending_adoption_table(view.maps, view.base_count, next_seq);
            if (!t) {
                refused = t.error();
                return *current;
            }
            return std::move(t).value();
        });
        if (refused) co_return *refused;
        adoption = routing_.load()->split()->adoption_seq;
        spdlog::info("routing: adopting {}", describe(*routing_.load()));
    }
    const auto now = routing_.load();
    if (active != nullptr && now->split() && now->split()->adoption_pending) {
        if (auto r = co_await async_record(*now); !r) co_return r.error();
        auto held = co_await set_.at(0).async_read([&](mariadb_conn& c) -> asio::awaitable<core::result<std::uint64_t>> {
            co_return co_await async_adopt(c, active->version, node, now->split()->adoption_seq);
        });
        if (!held) co_return held.error();
        if (held.value() != now->split()->adoption_seq) {
            // Shard 0 holds an earlier adoption of this node that its journal does not know (a journal
            // restored from a backup): ops between the two were routed without the split. Every shard
            // stays held at the seq; an operator must fail the split (cairn reshard).
            problem_ = fmt::format("shard 0 says node {} adopted map version {} from seq {}, its journal says {}: applying "
                                   "stays stopped at seq {} until the split is failed",
                                   node, active->version, held.value(), now->split()->adoption_seq, now->split()->adoption_seq);
            co_return core::errc::conflict;
        }
        adoption = held.value();
    }

    // The cut-over: this gateway's next seq once the split is done (kept while it stays done).
    std::optional<std::uint64_t> cut_over;
    if (now->split() && now->split()->cut_over_seq != 0) cut_over = now->split()->cut_over_seq;
    std::optional<core::error_code> failed;
    const auto follow = [&](std::optional<std::uint64_t> cut) -> std::optional<core::route_table> {
        auto t = route_table_for(view.maps, view.base_count, adoption, cut);
        if (!t) {
            failed = t.error();
            return std::nullopt;
        }
        return std::move(t).value();
    };
    // Workers that must go back over this gateway's journal once the next table is installed (they
    // re-apply by it) and before it is recorded (a restart before the record decides the same again).
    struct going_back {
        core::shard_index shard = 0;
        std::uint64_t to = 0;
        const stored_map* twins_of = nullptr;  // a split that ended while this gateway was away
    };
    std::vector<going_back> back;
    // Splits that ended (cleaning, retired) while this gateway was down: it never routed by them, and
    // each new shard's worker passed this gateway's ops under the old map (none were its rows then).
    // The ops its old owner had not applied when this gateway went down (past the owner's cursor) may
    // be rows of the moved half now: the new shard's worker goes back to that cursor and applies them by
    // the new map (rows: last writer wins; counter ops: the copy brought the op ids of what the old
    // owner had applied). The old owner's error-queue entries and dead letters of ops that touch the
    // moved half get twins on the new shard, as an adopting gateway's do (the old owner's retry, by the
    // new map, no longer writes those rows).
    for (const auto& m : view.maps) {
        if (m.version <= current->version() || (m.state != split_state::cleaning && m.state != split_state::retired)) continue;
        if (m.new_shard >= set_.size() || m.split_shard >= set_.size()) continue;  // route_table_for refuses it below
        const std::uint64_t back_to = std::min(journal_.cursor(m.split_shard), journal_.cursor(m.new_shard));
        if (journal_.cursor(m.new_shard) > back_to) {
            spdlog::warn("routing: map version {} split shard {} to shard {} while node {} was away: shard {} applies this "
                         "gateway's ops from seq {} again by the new map",
                         m.version, m.split_shard, m.new_shard, node, m.new_shard, back_to + 1);
        }
        back.push_back({m.new_shard, back_to, &m});
    }
    std::optional<core::route_table> next;
    if (active != nullptr && active->state == split_state::done && !cut_over) {
        routing_.install_at([this] { return journal_.last_seq(); }, [&](std::uint64_t next_seq) {
            next = follow(next_seq);
            return next ? *next : *routing_.load();
        });
    } else {
        next = follow(cut_over);
        if (next && !(*next == *routing_.load())) routing_.install(*next);
    }
    if (failed) co_return *failed;
    if (!(*next == *current)) {
        spdlog::info("routing: now {}", describe(*next));
        set_.notify_all();
    }
    for (const auto& g : back) {
        if (journal_.cursor(g.shard) > g.to) {
            if (!co_await async_rewind(g.shard, g.to)) co_return core::success();  // stopping
        }
        // Twins already there (a restart before the table was recorded) are not put again.
        if (g.twins_of != nullptr) {
            const auto& m = *g.twins_of;
            if (auto r = co_await async_put_twins(m.version, m.split_shard, m.new_shard, m.map, journal_.last_seq() + 1); !r) {
                co_return r.error();
            }
        }
    }
    // Recorded after it is installed: a restart that reads an older record routes rows to both owners
    // a little longer, or holds the new shard again, which are both safe; only the adoption had to be
    // durable first.
    if (auto stored = journal_.route_record(); !stored || stored.value() != next->to_text()) {
        if (auto r = co_await async_record(*next); !r) co_return r.error();
    }
    if (active != nullptr && adoption && active->state >= split_state::copying && twinned_ != active->version) {
        if (auto r = co_await async_put_twins(active->version, active->split_shard, active->new_shard, active->map, *adoption); !r) {
            co_return r.error();
        }
        twinned_ = active->version;
    }
    // Then shard 0 learns that this gateway routes by the state's table: the driver moves a split on
    // from switched and done only once every live gateway has — and acts on it (e.g. once all cut
    // over, it deletes the old owner's counter sums of R): so first nothing may act by the table this
    // round replaced.
    if (!(*next == *current)) co_await async_wait_unused(current, now == current ? 2 : 1);
    if (active != nullptr && adoption && !(marked_ && marked_->first == active->version && marked_->second >= static_cast<std::uint8_t>(active->state))) {
        auto m = co_await set_.at(0).async_read([&](mariadb_conn& c) -> asio::awaitable<core::result<void>> {
            const std::uint64_t cut = next->split() ? next->split()->cut_over_seq : 0;
            co_return co_await async_mark_seen(c, active->version, node, active->state, cut);
        });
        if (!m) co_return m.error();
        marked_ = std::pair{active->version, static_cast<std::uint8_t>(active->state)};
    }
    co_return core::success();
}

asio::awaitable<core::result<void>> split_follower::async_put_twins(std::uint32_t version, std::uint32_t from, std::uint32_t to,
                                                                    const core::shard_map& next, std::uint64_t adoption_seq) {
    constexpr std::size_t all = std::numeric_limits<std::size_t>::max();
    auto errors = journal_.list_errors(from, std::nullopt, all);
    if (!errors) co_return errors.error();
    auto dead = journal_.list_dead_from(from, 0, all);
    if (!dead) co_return dead.error();
    // What the new shard holds already (a twin put before a restart of this gateway).
    std::set<std::uint64_t> there;
    auto on_to = journal_.list_errors(to, std::nullopt, all);
    if (!on_to) co_return on_to.error();
    for (const auto& e : on_to.value()) there.insert(e.seq);
    auto dead_to = journal_.list_dead_from(to, 0, all);
    if (!dead_to) co_return dead_to.error();
    for (const auto& d : dead_to.value()) {
        if (d.task.shard == to) there.insert(d.task.seq);
    }
    const auto moves = [&](const journal::error_task& t) {
        if (t.shard != from || t.seq >= adoption_seq || there.contains(t.seq)) return false;
        auto op = core::decode_op(t.op_bytes);
        if (!op) return false;  // the old owner's retry dead-letters it; nothing to twin
        const auto owners = shards_of(op.value(), next);
        return std::find(owners.begin(), owners.end(), to) != owners.end();
    };
    journal::apply_outcome outcome;
    outcome.shard = to;
    const std::string why = fmt::format("a twin of shard {}'s entry: map version {} moved this op's rows to shard {}", from, version, to);
    for (const auto& e : errors.value()) {
        if (!moves(e)) continue;
        journal::error_task twin = e;
        twin.shard = to;
        twin.due_ms = 0;  // due at once; the new shard's worker holds it until the copy is written
        twin.attempts = 0;
        twin.errors = {why};
        outcome.put_errors.push_back(std::move(twin));
        there.insert(e.seq);
    }
    for (const auto& d : dead.value()) {
        if (!moves(d.task)) continue;
        journal::dead_letter twin = d;
        twin.task.shard = to;
        twin.task.errors.push_back(why);
        outcome.put_dead.push_back(std::move(twin));
        there.insert(d.task.seq);
    }
    if (outcome.put_errors.empty() && outcome.put_dead.empty()) co_return core::success();
    const auto queued = outcome.put_errors.size();
    const auto letters = outcome.put_dead.size();
    if (auto r = co_await async_commit_outcome(journal_, std::move(outcome)); !r) co_return r.error();
    spdlog::info("routing: map version {}: {} error-queue entries and {} dead letters of shard {} below seq {} twinned to shard {}",
                 version, queued, letters, from, adoption_seq, to);
    set_.notify_all();
    co_return core::success();
}

}  // namespace cairn::shards
