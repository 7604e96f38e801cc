#include "indexing/cleaner.hpp"

#include "core/codec.hpp"
#include "core/hlc.hpp"
#include "core/log_task_end.hpp"
#include "core/shard_map.hpp"
#include "indexing/index_registry.hpp"
#include "indexing/indexed_objects.hpp"
#include "journal/journal.hpp"
#include "shards/index_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <spdlog/spdlog.h>

namespace cairn::indexing {
namespace {

namespace asio = boost::asio;

constexpr std::size_t page_rows = 500;
constexpr std::size_t examples_max = 10;
// Error tasks and dead letters read when looking for ops older than a new index (beyond: not seen).
constexpr std::size_t late_scan_max = 100'000;

}  // namespace

std::string_view cleaner_mode_name(cleaner_mode m) noexcept {
    switch (m) {
        case cleaner_mode::clean: return "clean";
        case cleaner_mode::verify: return "verify";
        case cleaner_mode::repair: return "repair";
    }
    return "clean";
}

struct cleaner::job {
    core::index_def def;
    std::size_t rows_per_s = 0;
    mutable std::mutex mu;
    cleaner_progress p;  // guarded by mu
    core::gauge* g_scanned = nullptr;
    core::gauge* g_total = nullptr;
    core::counter* c_added = nullptr;
    core::counter* c_removed = nullptr;

    template <class F>
    void update(F f) {
        std::lock_guard lock(mu);
        f(p);
        g_scanned->set(static_cast<double>(p.scanned));
        g_total->set(static_cast<double>(p.total));
    }
};

cleaner::cleaner(asio::any_io_executor ex, journal::journal& journal, shards::shard_set& shards,
                 index_registry& indexes, const core::limits& lim, core::registry& metrics)
    : ex_(std::move(ex)), journal_(journal), shards_(shards), indexes_(indexes), lim_(lim), metrics_(metrics) {}

cleaner::~cleaner() { stop(); }

bool cleaner::start(const core::index_def& def, std::size_t rows_per_s, cleaner_mode mode) {
    std::lock_guard lock(mu_);
    auto& slot = jobs_[{def.name, mode != cleaner_mode::clean}];
    if (slot) {
        std::lock_guard jl(slot->mu);
        if (slot->p.state == "running") return false;
    }
    auto j = std::make_shared<job>();
    j->def = def;
    j->rows_per_s = std::max<std::size_t>(rows_per_s, 1);
    j->p.index = def.name;
    j->p.mode = mode;
    if (mode != cleaner_mode::clean) j->p.shards.resize(shards_.routing().load()->read_map().size());
    j->p.started_ms = core::system_wall_clock_ms();
    j->p.rows_per_s = j->rows_per_s;
    const core::labels l{{"index", def.name}};
    const core::labels lm{{"index", def.name}, {"mode", mode == cleaner_mode::clean ? "clean" : "verify"}};
    j->g_scanned = &metrics_.add_gauge("cairn_cleaner_rows_scanned", "Rows the index's latest cleaner run read so far", lm);
    j->g_total = &metrics_.add_gauge("cairn_cleaner_rows_total", "Rows the index's latest cleaner run has to read", lm);
    j->c_added = &metrics_.add_counter("cairn_cleaner_rows_added_total", "Missing index rows the cleaner wrote", l);
    j->c_removed = &metrics_.add_counter("cairn_cleaner_rows_removed_total", "Stale index rows the cleaner tombstoned", l);
    j->g_scanned->set(0);
    slot = j;
    // On a strand of its own: waiting for applied seqs needs one (shard_set::async_wait_applied).
    asio::co_spawn(asio::make_strand(ex_), async_run(j), core::log_task_end("cleaner " + def.name));
    return true;
}

std::optional<cleaner_progress> cleaner::progress(const std::string& index, bool verify) const {
    std::lock_guard lock(mu_);
    const auto it = jobs_.find({index, verify});
    if (it == jobs_.end()) return std::nullopt;
    std::lock_guard jl(it->second->mu);
    return it->second->p;
}

void cleaner::stop() { stopping_ = true; }

core::result<cleaner::late_ops_state> cleaner::find_late_ops(const core::index_def& def, std::uint64_t up_to_seq) const {
    const auto of_index = [&](const std::string& op_bytes) {
        auto o = core::decode_op(std::span(op_bytes.data(), op_bytes.size()));
        if (!o) return false;
        if (const auto* e = std::get_if<core::entity_op>(&o.value().body)) return !def.on_cells() && e->entity_kind == def.kind;
        if (const auto* c = std::get_if<core::cell_op>(&o.value().body)) {
            return def.on_cells() && c->table == def.kind && c->column == def.column;
        }
        return false;
    };
    late_ops_state out;
    auto queued = journal_.list_errors(std::nullopt, std::nullopt, late_scan_max);
    if (!queued) return queued.error();
    for (const auto& t : queued.value()) {
        if (t.seq <= up_to_seq && of_index(t.op_bytes)) out.queued.emplace(t.shard, t.seq);
    }
    auto dead = journal_.list_dead(late_scan_max);
    if (!dead) return dead.error();
    for (const auto& d : dead.value()) {
        if (d.task.seq <= up_to_seq && of_index(d.task.op_bytes)) ++out.dead;
    }
    return out;
}

core::result<void> cleaner::recheck_late_ops(late_ops_state& s) const {
    auto queued = journal_.list_errors(std::nullopt, std::nullopt, late_scan_max);
    if (!queued) return queued.error();
    std::set<std::pair<std::uint32_t, std::uint64_t>> still;
    for (const auto& t : queued.value()) {
        if (s.queued.contains({t.shard, t.seq})) still.emplace(t.shard, t.seq);
    }
    for (const auto& [shard, seq] : s.queued) {
        if (still.contains({shard, seq})) continue;
        auto d = journal_.get_dead(shard, seq);
        if (d) {
            ++s.dead;
        } else if (d.error() != core::errc::not_found) {
            return d.error();
        }
    }
    s.queued = std::move(still);
    return core::success();
}

asio::awaitable<void> cleaner::async_run(std::shared_ptr<job> j) {
    const auto& def = j->def;
    asio::steady_timer throttle(co_await asio::this_coro::executor);
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t read = 0;
    // Sleeps as long as the rows read so far are ahead of rows_per_s.
    auto pace = [&](std::size_t rows) -> asio::awaitable<void> {
        read += rows;
        const auto due = t0 + std::chrono::microseconds(read * 1'000'000 / j->rows_per_s);
        // In slices, so that stop() ends a slow run within 200 ms.
        while (!stopping_ && due > std::chrono::steady_clock::now()) {
            throttle.expires_at(std::min(due, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
            core::error_code ec;
            co_await throttle.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    };
    auto fail = [&](const std::string& what, const core::error_code& ec) {
        j->update([&](cleaner_progress& p) {
            p.state = "failed";
            p.error = fmt::format("{}: {}", what, ec.message());
            p.finished_ms = core::system_wall_clock_ms();
        });
        spdlog::warn("cleaner {}: {}: {}", def.name, what, ec.message());
    };
    const auto shards = shards_.routing().load()->read_map().size();

    const std::string objects = def.on_cells() ? "cells" : "entities";
    const bool checking = j->p.mode != cleaner_mode::clean;  // p.mode never changes: read without the lock
    const bool writing = j->p.mode != cleaner_mode::verify;

    // Phase 0: catch up. An op journaled before the index was in this gateway's registry carries
    // no entry for it; if it were applied after the walk below had passed its object, neither
    // would write its row. So: wait until every write that read the definitions before this run
    // began is journaled, then until every shard has applied the journal up to there. Every op
    // journaled later carries the index's entries, and every earlier one is on the shards before
    // the walk reads them (docs/entities.md, "Creating an index under live writes").
    j->update([](cleaner_progress& p) { p.phase = "catch-up"; });
    if (!co_await indexes_.async_write_barrier(lim_.journal_wait_max + lim_.query_timeout * 2)) {
        co_return fail("waiting for writes in flight", core::errc::shard_timeout);
    }
    const std::uint64_t caught_up_seq = journal_.last_seq();
    j->update([&](cleaner_progress& p) { p.catch_up_seq = caught_up_seq; });
    {
        std::vector<core::shard_index> all;
        for (core::shard_index s = 0; s < shards; ++s) all.push_back(s);
        while (!all.empty()) {
            if (stopping_) co_return j->update([](cleaner_progress& p) { p.state = "stopped"; });
            all = co_await shards_.async_wait_applied(caught_up_seq, std::move(all), std::chrono::milliseconds(500));
        }
    }
    // The cursors pass an op that failed and went to the error queue. Such an op of this index's
    // objects, journaled before the barrier, carries no row for the index: applied after the walk
    // had passed its object, it would leave the object out of the index. So the walk waits until
    // they are applied (or dead), as long as it takes (a shard that is down holds the walk anyway).
    // Dead letters cannot be waited for: they are counted, logged and shown in the progress.
    auto late = find_late_ops(def, caught_up_seq);
    if (!late) co_return fail("reading the error queue and dead letters", late.error());
    for (;;) {
        if (stopping_) co_return j->update([](cleaner_progress& p) { p.state = "stopped"; });
        j->update([&](cleaner_progress& p) {
            p.late_ops_queued = late.value().queued.size();
            p.late_dead_letters = late.value().dead;
        });
        if (late.value().queued.empty()) {
            if (late.value().dead > 0) {
                spdlog::warn("cleaner {}: {} dead letters of its {} were journaled before it and carry no row for it; "
                             "re-injecting them (cairn dead reinject) journals them again with its rows",
                             def.name, late.value().dead, def.on_cells() ? "cells" : "entities");
            }
            break;
        }
        throttle.expires_after(std::chrono::milliseconds(200));
        core::error_code ec;
        co_await throttle.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (auto r = recheck_late_ops(late.value()); !r) {
            co_return fail("reading the error queue and dead letters", r.error());
        }
    }
    j->update([](cleaner_progress& p) { p.phase = "backfill"; });

    // Phase 1: backfill. The total is the objects (entities, rows with the column) on every shard.
    std::uint64_t total = 0;
    for (core::shard_index s = 0; s < shards; ++s) {
        const auto count = [&](shards::mariadb_conn& conn) { return async_count_objects(conn, def); };
        auto n = co_await shards_.at(s).async_read(count);
        if (!n) co_return fail(fmt::format("counting {} on shard {}", objects, s), n.error());
        total += n.value();
    }
    j->update([&](cleaner_progress& p) { p.total = total; });
    for (core::shard_index s = 0; s < shards; ++s) {
        std::optional<indexed_object> after;
        for (;;) {
            if (stopping_) co_return j->update([](cleaner_progress& p) { p.state = "stopped"; });
            std::vector<indexed_object> page;
            {
                const auto scan = [&](shards::mariadb_conn& conn) { return async_scan_objects(conn, def, after, page_rows); };
                auto r = co_await shards_.at(s).async_read(scan);
                if (!r) co_return fail(fmt::format("reading {} on shard {}", objects, s), r.error());
                page = std::move(r.value());
            }
            if (page.empty()) break;
            std::map<core::shard_index, std::vector<shards::index_row>> rows;
            const auto routes = shards_.routing().load();
            for (const auto& o : page) {
                auto values = index_values_now(def, o);
                if (!values) continue;
                const auto target = routes->read_map().shard_of_hash(core::index_value_hash((*values)[def.shard_on]));
                rows[target].push_back({std::move(*values), o.id, o.version, false});
            }
            std::uint64_t added = 0;
            for (auto& entry : rows) {
                // Not a structured binding: the lambdas below capture these (clang 14 cannot).
                const core::shard_index target = entry.first;
                auto& target_rows = entry.second;
                if (checking) {
                    // Keep only the rows that are not there: absent, or a tombstone no newer than the
                    // object (a newer one means the object changed after it was read: not missing).
                    const auto get_rows = [&](shards::mariadb_conn& conn) { return shards::async_get_index_rows(conn, def, target_rows); };
                    auto found = co_await shards_.at(target).async_read(get_rows);
                    if (!found) co_return fail(fmt::format("reading index rows on shard {}", target), found.error());
                    std::erase_if(target_rows, [&](const shards::index_row& want) {
                        return std::any_of(found.value().begin(), found.value().end(), [&](const shards::index_row& have) {
                            return have.values == want.values && have.entity_id == want.entity_id &&
                                   (!have.deleted || have.ts > want.ts);
                        });
                    });
                    if (target_rows.empty()) continue;
                    j->update([&](cleaner_progress& p) {
                        p.missing += target_rows.size();
                        p.shards.at(target).missing += target_rows.size();
                        for (const auto& r : target_rows) {
                            if (p.missing_examples.size() >= examples_max) break;
                            p.missing_examples.push_back(fmt::format("{} on shard {}: no index row{}", object_name(def, r.entity_id),
                                                                     target, writing ? " (written)" : ""));
                        }
                    });
                }
                if (!writing) continue;
                const auto put_rows = [&](shards::mariadb_conn& conn) { return shards::async_put_index_rows(conn, def, target_rows); };
                auto w = co_await shards_.at(target).async_read(put_rows);
                if (!w) co_return fail(fmt::format("writing index rows on shard {}", target), w.error());
                added += target_rows.size();
            }
            j->c_added->inc(added);
            j->update([&](cleaner_progress& p) {
                p.scanned += page.size();
                p.rows_added += added;
            });
            after = std::move(page.back());
            co_await pace(page.size());
            if (page.size() < page_rows) break;
        }
    }

    // Phase 2: stale rows. The total grows by the index rows there are now.
    std::uint64_t index_rows = 0;
    for (core::shard_index s = 0; s < shards; ++s) {
        const auto count = [&](shards::mariadb_conn& conn) { return shards::async_count_index_rows(conn, def); };
        auto n = co_await shards_.at(s).async_read(count);
        if (!n) co_return fail(fmt::format("counting index rows on shard {}", s), n.error());
        index_rows += n.value();
    }
    j->update([&](cleaner_progress& p) {
        p.phase = "stale";
        p.total = p.scanned + index_rows;
    });
    for (core::shard_index s = 0; s < shards; ++s) {
        std::optional<shards::index_row> after;
        for (;;) {
            if (stopping_) co_return j->update([](cleaner_progress& p) { p.state = "stopped"; });
            std::vector<shards::index_row> page;
            {
                const auto scan = [&](shards::mariadb_conn& conn) { return shards::async_scan_index_rows(conn, def, after, page_rows); };
                auto r = co_await shards_.at(s).async_read(scan);
                if (!r) co_return fail(fmt::format("reading index rows on shard {}", s), r.error());
                page = std::move(r.value());
            }
            if (page.empty()) break;
            after = page.back();
            // The current objects of the live rows, from their shards.
            std::map<core::shard_index, std::vector<std::string>> ids;
            const auto routes = shards_.routing().load();
            for (const auto& row : page) {
                if (!row.deleted) ids[routes->read_map().shard_of_hash(core::hash_bytes(row.entity_id))].push_back(row.entity_id);
            }
            std::map<std::string, indexed_object> current;
            for (auto& entry : ids) {
                // Not a structured binding: the lambda below captures these (clang 14 cannot).
                const core::shard_index home = entry.first;
                const auto& home_ids = entry.second;
                const auto current_of = [&](shards::mariadb_conn& conn) { return async_current_objects(conn, def, home_ids); };
                auto r = co_await shards_.at(home).async_read(current_of);
                if (!r) co_return fail(fmt::format("reading {} on shard {}", objects, home), r.error());
                for (auto& o : r.value()) {
                    if (o) current.emplace(o->id, std::move(*o));
                }
            }
            std::vector<shards::index_row> tombstones;
            for (const auto& row : page) {
                if (row.deleted) continue;
                const auto it = current.find(row.entity_id);
                // No object yet, or an older version than the row's: the object's shard has not
                // applied the op that wrote the row. Not stale: leave it. (A cell version that
                // lost to another body at the same ref_key keeps its row: queries skip it.)
                if (it == current.end() || it->second.version <= row.ts) continue;
                const auto now = index_values_now(def, it->second);
                if (now && *now == row.values) continue;
                tombstones.push_back({row.values, row.entity_id, it->second.version, true});
            }
            if (checking && !tombstones.empty()) {
                j->update([&](cleaner_progress& p) {
                    p.stale += tombstones.size();
                    p.shards.at(s).stale += tombstones.size();
                    for (const auto& r : tombstones) {
                        if (p.stale_examples.size() >= examples_max) break;
                        p.stale_examples.push_back(fmt::format("{} on shard {}: a live row for values it no longer has{}",
                                                               object_name(def, r.entity_id), s,
                                                               writing ? " (tombstoned)" : ""));
                    }
                });
            }
            if (!writing) tombstones.clear();
            if (!tombstones.empty()) {
                const auto put_rows = [&](shards::mariadb_conn& conn) { return shards::async_put_index_rows(conn, def, tombstones); };
                auto w = co_await shards_.at(s).async_read(put_rows);
                if (!w) co_return fail(fmt::format("tombstoning index rows on shard {}", s), w.error());
                j->c_removed->inc(tombstones.size());
            }
            j->update([&](cleaner_progress& p) {
                p.scanned += page.size();
                p.total = std::max(p.total, p.scanned);  // rows written since the count
                p.rows_removed += tombstones.size();
            });
            co_await pace(page.size());
            if (page.size() < page_rows) break;
        }
    }
    j->update([](cleaner_progress& p) {
        p.state = "done";
        p.total = p.scanned;
        p.finished_ms = core::system_wall_clock_ms();
    });
    if (checking) {
        const auto p = *progress(def.name, true);
        spdlog::info("index {} verified: {} missing and {} stale rows{}", def.name, p.missing, p.stale,
                     writing ? " (repaired)" : "");
    } else {
        spdlog::info("cleaner {}: done", def.name);
    }
}

}  // namespace cairn::indexing
