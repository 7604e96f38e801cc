#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "tests/sim/simulator.hpp"

#include "core/assert.hpp"
#include "core/cells.hpp"
#include "core/hlc.hpp"
#include "core/indexes.hpp"
#include "core/limits.hpp"
#include "core/metrics.hpp"
#include "core/routing.hpp"
#include "core/shard_map.hpp"
#include "journal/journal.hpp"
#include "shards/apply_worker.hpp"
#include "shards/journal_await.hpp"
#include "shards/model_dispatch.hpp"
#include "tests/sim/memory_shard.hpp"
#include "tests/sim/run_to_end.hpp"
#include "tests/support/edge_model.hpp"

#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <unistd.h>

namespace cairn::sim {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::uint64_t start_ms = 1'750'000'000'000;
constexpr std::int64_t node_ids = 8;  // a small key space, so that ops collide on the same rows
constexpr std::int64_t entity_ids = 6;  // the same for entities
constexpr std::size_t drain_rounds_max = 400;

core::limits sim_limits() {
    core::limits l;
    l.apply_batch_ops_max = 8;  // many batches, so that crashes and faults fall between them
    l.retry_attempts_max = 4;
    l.retry_backoff_initial = 100ms;
    l.retry_backoff_max = 2'000ms;
    l.outage_backoff_max = 1'000ms;
    return l;
}

std::string describe(const core::op& o) {
    return std::visit(
        [&](const auto& b) -> std::string {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, core::edge_op>) {
                return fmt::format("edge {}->{} {} pos {}{}", b.source_id, b.destination_id,
                                   core::edge_state_name(b.state), b.position, b.sets_position ? "" : " (keep)");
            } else if constexpr (std::is_same_v<T, core::node_op>) {
                return fmt::format("node {} {} {}", b.node_id, core::node_action_name(b.action), core::node_scope_name(b.scope));
            } else if constexpr (std::is_same_v<T, core::counter_op>) {
                return fmt::format("counter {}[{}] +{}", b.metric, b.dimensions.empty() ? "" : b.dimensions[0], b.delta);
            } else if constexpr (std::is_same_v<T, core::cell_op>) {
                return fmt::format("cell {} {} {} v{} {} ({} index entries)", b.table, static_cast<int>(b.row_key.back()),
                                   b.column, b.ref_key, b.body, b.entries.size());
            } else if constexpr (std::is_same_v<T, core::index_def_op>) {
                return fmt::format("index {} {}", b.name, b.dropped ? "drop" : "create");
            } else if constexpr (std::is_same_v<T, core::entity_op>) {
                return fmt::format("entity {} {}{} ({} index entries)", b.entity_kind, static_cast<int>(b.id.back()),
                                   b.deleted ? " deleted" : "", b.entries.size());
            } else {
                return std::string(core::model_name(T::kind));
            }
        },
        o.body);
}

// A dead letter's key.
using letter_key = std::pair<core::shard_index, std::uint64_t>;  // (shard, seq)

class simulator {
public:
    explicit simulator(const sim_options& o)
        : opts_(o),
          rng_(o.seed),
          shard_count_(2 + static_cast<std::uint32_t>(o.seed % 2)),
          with_split_((o.seed / 2) % 2 == 1),
          total_shards_(shard_count_ + (with_split_ ? 1 : 0)),
          map_(core::shard_map::equal_ranges(shard_count_)) {
        const fs::path base = opts_.dir.empty() ? (fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path())
                                                : fs::path(opts_.dir);
        dir_ = base / fmt::format("cairn-sim-{}-{}", ::getpid(), opts_.seed);
        fs::remove_all(dir_);
        for (core::shard_index i = 0; i < total_shards_; ++i) {
            shards_.push_back(std::make_unique<memory_shard>(i, opts_.seed * 1'000'003 + i));
            shards_.back()->set_swallow_rejections_for_test(opts_.swallow_rejections);
            shards_.back()->set_faults(random_faults());
        }
        last_cursor_.assign(total_shards_, 0);
        failed_over_.assign(total_shards_, false);
    }

    ~simulator() {
        gw_.workers.clear();
        gw_.journal.reset();
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    sim_result run() {
        open_gateway();
        for (std::size_t i = 0; i < opts_.steps && ok(); ++i) {
            ++result_.steps;
            random_step();
            if (ok()) check_invariants();
        }
        if (ok()) finish();
        result_.ok = ok();
        for (const auto& s : shards_) result_.statements += s->statements();
        return result_;
    }

private:
    struct gateway {
        std::unique_ptr<core::registry> metrics;
        std::unique_ptr<core::hlc> clock;
        std::unique_ptr<journal::journal> journal;
        std::vector<std::unique_ptr<shards::apply_worker>> workers;
    };

    bool ok() const { return result_.failure.empty(); }

    void fail(std::string what) {
        if (ok()) result_.failure = fmt::format("step {}: {}", result_.steps, what);
    }

    void trace(const std::string& what) {
        for (unsigned char c : what) result_.trace = (result_.trace ^ c) * 1099511628211ULL;
        result_.trace = (result_.trace ^ 0xff) * 1099511628211ULL;
        if (opts_.verbose) std::cerr << fmt::format("[seed {} step {} t={}] {}\n", opts_.seed, result_.steps, now_ms_ - start_ms, what);
    }

    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
    bool chance(int per_mille) { return static_cast<int>(below(1000)) < per_mille; }

    fault_rates random_faults() {
        if (chance(150)) return {};  // some shards run clean
        fault_rates f;
        f.open_fails = static_cast<int>(below(80));
        f.lost_before = static_cast<int>(below(80));
        f.lost_after = static_cast<int>(below(80));
        f.lost_partway = static_cast<int>(below(60));
        f.deadlock = static_cast<int>(below(80));
        f.rejected = static_cast<int>(below(80));
        f.duplicated = static_cast<int>(below(80));
        f.crash_after = static_cast<int>(below(15));
        return f;
    }

    // Runs a coroutine on the simulation's io_context until it and everything it started are done
    // (the journal's callbacks hold work on the io_context, so run() waits for its writer thread).
    template <class T>
    T run_to_end(asio::awaitable<T> a) {
        return sim::run_to_end(ioc_, std::move(a));
    }

    void open_gateway() {
        gw_.metrics = std::make_unique<core::registry>();
        gw_.clock = std::make_unique<core::hlc>(1, [this] { return now_ms_; });
        journal::options jo;
        jo.path = dir_.string();
        jo.shard_count = total_shards_;
        jo.node_id = 1;
        jo.retention = std::chrono::hours(24 * 30);
        jo.size_bytes_max = 64ull << 20;
        jo.wall_ms = [this] { return now_ms_; };
        auto j = journal::journal::open(jo, *gw_.clock);
        if (!j) {
            fail("the journal does not open: " + j.error().message());
            return;
        }
        gw_.journal = std::move(j).value();
        for (core::shard_index i = 0; i < total_shards_; ++i) {
            shards::apply_worker_options wo;
            wo.shard = i;
            wo.lim = limits_;
            wo.wall_ms = [this] { return now_ms_; };
            wo.mark_check = !opts_.skip_mark_check;
            wo.late_check = !opts_.skip_late_check;
            gw_.workers.push_back(std::make_unique<shards::apply_worker>(ioc_.get_executor(), *gw_.journal, routing_,
                                                                         *shards_[i], wo, *gw_.metrics));
        }
    }

    // kill -9 of the gateway between two of its steps, or right after a shard applied a batch the
    // gateway never heard of: what is in the journal stays, everything else is gone.
    void settle() { sim::settle(ioc_); }

    void crash() {
        ++result_.crashes;
        trace("crash");
        settle();
        gw_.workers.clear();
        gw_.journal.reset();
        gw_.clock.reset();
        gw_.metrics.reset();
        open_gateway();
    }

    core::op random_op() {
        core::op o;
        o.ts = gw_.clock->now();
        const auto kind = below(16);
        if (kind < 6) {
            core::edge_op e;
            e.graph = "follows";
            e.source_id = static_cast<std::int64_t>(below(node_ids));
            e.destination_id = static_cast<std::int64_t>(below(node_ids));
            const auto st = below(10);
            e.state = st < 6 ? core::edge_state::normal : static_cast<core::edge_state>(1 + st % 3);
            e.position = static_cast<std::int64_t>(below(5));
            e.sets_position = below(4) != 0;
            o.body = std::move(e);
        } else if (kind < 7) {
            core::node_op n;
            n.graph = "follows";
            n.node_id = static_cast<std::int64_t>(below(node_ids));
            n.action = static_cast<core::node_action>(below(4));
            n.scope = static_cast<core::node_scope>(below(3));
            o.body = std::move(n);
        } else if (kind >= 12 && kind < 15) {
            // A cell of a few rows, columns and versions (so that writes race for one cell, and
            // the first writer must win), with the row of a cell index on its BASE column.
            core::cell_op c;
            c.table = "users";
            c.row_key = std::string(15, '\0') + static_cast<char>(below(entity_ids));
            c.column = below(2) == 0 ? "BASE" : "PROFILE";
            c.ref_key = static_cast<std::int64_t>(below(3));
            const auto company = static_cast<std::int64_t>(below(4));
            c.body = fmt::format("company {} note {}", company, below(3));
            if (c.column == "BASE") {
                c.entries.push_back({"users_by_company", {core::index_value(company)},
                                     core::index_value_hash(core::index_value(company))});
            }
            o.body = std::move(c);
        } else if (kind == 15) {
            // An index definition, created or dropped: on every shard, the newest wins.
            core::index_def_op d;
            d.name = below(2) == 0 ? "by_age" : "by_email";
            d.dropped = chance(300);
            if (!d.dropped) {
                core::index_def def;
                def.name = d.name;
                def.kind = "user";
                def.properties.push_back({d.name.substr(3), core::index_value_type::integer, 0});
                d.definition = core::encode_index_def(def);
            }
            o.body = std::move(d);
        } else if (kind >= 9) {
            // An entity of a few ids (so that writes race), with the rows of two indexes (an
            // integer and a string value, each routed by its own hash) unless it is a delete.
            core::entity_op e;
            e.entity_kind = "user";
            e.id = std::string(15, '\0') + static_cast<char>(below(entity_ids));
            e.deleted = chance(200);
            if (!e.deleted) {
                const auto city = static_cast<std::int64_t>(below(4));
                const std::string name = fmt::format("name-{}", below(5));
                e.body = fmt::format("city {} {}", city, name);
                e.entries.push_back({"by_city", {core::index_value(city)}, core::index_value_hash(core::index_value(city))});
                e.entries.push_back({"by_name", {core::index_value(name)}, core::index_value_hash(core::index_value(name))});
            }
            o.body = std::move(e);
        } else {
            core::counter_op c;
            const auto id = static_cast<std::int64_t>(below(node_ids));
            c.metric = "clicks";
            c.dimensions = {std::to_string(id)};
            c.time_ms = static_cast<std::int64_t>(now_ms_ - below(3 * 3'600'000));
            c.delta = 1 + static_cast<std::int64_t>(below(5));
            c.shard_hash = core::hash_id(id);
            o.body = std::move(c);
        }
        return o;
    }

    void write() {
        std::vector<core::op> ops;
        std::string key;
        bool resend = false;
        if (!sent_.empty() && chance(100)) {
            // A client retries a request it had no answer for: the same key and body.
            auto it = sent_.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(below(sent_.size())));
            key = it->first;
            ops = it->second;
            resend = true;
        } else {
            const auto n = 1 + below(4);
            for (std::uint64_t i = 0; i < n; ++i) ops.push_back(random_op());
            if (chance(300)) {
                key = fmt::format("key-{}", next_key_++);
                sent_[key] = ops;
            }
        }
        const std::uint64_t last_before = gw_.journal->last_seq();
        auto r = run_to_end(shards::async_append(*gw_.journal, ops, key));
        if (!r) {
            fail("an append failed: " + r.error().message());
            return;
        }
        const auto& a = r.value();
        if (resend) {
            if (!a.deduplicated || gw_.journal->last_seq() != last_before) {
                fail(fmt::format("a retried request with key {} was journaled again", key));
            }
            trace(fmt::format("retry of {} -> seqs {}..{}", key, a.first_seq, a.last_seq));
            return;
        }
        for (std::size_t i = 0; i < ops.size(); ++i) {
            ops[i].op_id = a.op_ids[i];
            record_acked(a.first_seq + i, ops[i]);
            trace(fmt::format("ack seq {} op {:x}: {}", a.first_seq + i, ops[i].op_id, describe(ops[i])));
        }
    }

    // The hashes of an op's rows (every shard's: empty with all = true).
    static std::vector<std::uint64_t> row_hashes(const core::op& o, bool& all) {
        all = false;
        std::vector<std::uint64_t> out;
        const auto add_entries = [&](const std::vector<core::index_entry>& entries) {
            for (const auto& entry : entries) out.push_back(entry.shard_hash);
        };
        if (const auto* e = std::get_if<core::edge_op>(&o.body)) out = {core::hash_id(e->source_id), core::hash_id(e->destination_id)};
        if (const auto* e = std::get_if<core::entity_op>(&o.body)) out = {core::hash_bytes(e->id)}, add_entries(e->entries);
        if (const auto* c = std::get_if<core::cell_op>(&o.body)) out = {core::hash_bytes(c->row_key)}, add_entries(c->entries);
        if (const auto* c = std::get_if<core::counter_op>(&o.body)) out = {c->shard_hash};
        all = std::holds_alternative<core::node_op>(o.body) || std::holds_alternative<core::index_def_op>(o.body);
        return out;
    }

    void record_acked(std::uint64_t seq, const core::op& o) {
        // The shards whose workers take the op at this seq, by the route table under test.
        const auto table = routing_.load();
        std::uint32_t owners = 0;
        for (core::shard_index s = 0; s < total_shards_; ++s) {
            const shards::counter_maps counters{table->apply_map(s, seq), table->base_map()};
            if (shards::touches_shard(o, table->apply_map(s, seq), s, &counters)) owners |= 1u << s;
        }
        // Worked out here, not only by the routing under test: an entity's row on its id's shard, a
        // cell's on its row key's, each index row on its value's shard, an index definition (and a
        // node's registers) on every shard, a counter op's on its shard_on value's shard (in the
        // deployment's first map too: this simulation splits a shard of it, so the same); from a
        // split's adoption seq, the rows in the new shard's range on it as well (counter ops too:
        // docs/resharding.md). A route that forgot one fails here.
        bool all = false;
        const auto hashes = row_hashes(o, all);
        std::uint32_t want = all ? (1u << shard_count_) - 1 : 0;
        for (const auto h : hashes) want |= 1u << map_.shard_of_hash(h);
        if (split_ && seq >= split_->adoption_seq) {
            const auto r = next_map_->range_of(shard_count_);
            bool in_r = all;
            for (const auto h : hashes) in_r = in_r || r.contains(h);
            if (in_r) want |= 1u << shard_count_;
        }
        if (want != owners) {
            fail(fmt::format("op {:x} ({}) at seq {} routes to shards {:#x}, its rows live on {:#x}", o.op_id, describe(o), seq,
                             owners, want));
        }
        acked_[seq] = {o, owners};
        if (split_ && (owners & (1u << shard_count_))) ++result_.split_ops;
        by_id_[o.op_id] = o;
        ++seqs_of_id_[o.op_id];
        owned_by_[o.op_id] |= owners;
        ++result_.acked_ops;
    }

    void step_shard(core::shard_index s) {
        using step = shards::apply_worker::step_outcome;
        const auto o = run_to_end(gw_.workers[s]->async_step());
        const char* names[] = {"idle", "progressed", "outage", "journal error"};
        trace(fmt::format("shard {} step: {} (cursor {})", s, names[static_cast<int>(o)], gw_.journal->cursor(s)));
        if (o == step::journal_error) fail(fmt::format("shard {}: the journal failed", s));
        if (shards_[s]->take_crash_request()) crash();
    }

    void poison() {
        if (acked_.empty()) return;
        auto it = acked_.lower_bound(1 + below(acked_.rbegin()->first));
        if (it == acked_.end()) return;
        std::vector<core::shard_index> owners;
        for (core::shard_index s = 0; s < total_shards_; ++s) {
            if (it->second.owners & (1u << s)) owners.push_back(s);
        }
        if (owners.empty()) return;
        const auto s = owners[below(owners.size())];
        shards_[s]->poison(it->second.op.op_id);
        trace(fmt::format("poison op {:x} on shard {}", it->second.op.op_id, s));
    }

    void reinject(bool all) {
        auto dead = gw_.journal->list_dead(100'000);
        if (!dead) {
            fail("listing dead letters failed: " + dead.error().message());
            return;
        }
        std::map<core::shard_index, std::vector<journal::dead_letter>> picked;
        for (auto& d : dead.value()) {
            if (!all && !chance(500)) continue;
            // Usually an operator fixes what made it fail first; sometimes not, and it dies again.
            if (all || chance(700)) shards_[d.task.shard]->heal();
            picked[d.task.shard].push_back(std::move(d));
        }
        for (auto& [s, letters] : picked) {
            auto r = run_to_end(shards::async_commit_outcome(
                *gw_.journal, journal::reinject_outcome(s, letters, now_ms_, chance(500))));
            if (!r) {
                fail("re-injecting failed: " + r.error().message());
                return;
            }
            for (const auto& d : letters) {
                dead_seen_.erase({s, d.task.seq});
                trace(fmt::format("re-inject seq {} on shard {}", d.task.seq, s));
            }
            result_.reinjected += letters.size();
        }
    }

    // cairn replay: journaled ops appended again with their own op id and ts.
    void replay() {
        const auto last = gw_.journal->last_seq();
        if (last == 0) return;
        const auto from = below(last);
        auto read = gw_.journal->read_ops(from, 1 + below(8));
        if (!read || read.value().empty()) return;
        std::vector<core::op> ops;
        for (auto& [seq, o] : read.value()) ops.push_back(std::move(o));
        auto r = run_to_end(shards::async_append(*gw_.journal, ops, ""));
        if (!r) {
            fail("a replay append failed: " + r.error().message());
            return;
        }
        for (std::size_t i = 0; i < ops.size(); ++i) {
            if (r.value().op_ids[i] != ops[i].op_id) fail("a replayed op got another op id");
            record_acked(r.value().first_seq + i, ops[i]);
        }
        result_.replayed_ops += ops.size();
        trace(fmt::format("replay seqs {}..{} as {}..{}", from + 1, from + ops.size(), r.value().first_seq,
                          r.value().last_seq));
    }

    void random_step() {
        const auto s = static_cast<core::shard_index>(below(total_shards_));
        const auto pick = below(100);
        if (with_split_ && chance(20)) {
            split_step();
        } else if (pick < 30) {
            write();
        } else if (pick < 70) {
            step_shard(s);
        } else if (pick < 77) {
            now_ms_ += below(3'000);
            trace("clock");
        } else if (pick < 78) {
            fail_over(s);
        } else if (pick < 82) {
            // Down for a long stretch: it comes back only by another toggle.
            shards_[s]->set_down(!shards_[s]->down());
            trace(fmt::format("shard {} {}", s, shards_[s]->down() ? "down" : "up"));
        } else if (pick < 85) {
            poison();
        } else if (pick < 87) {
            crash();
        } else if (pick < 91) {
            reinject(false);
        } else if (pick < 93) {
            replay();
        } else if (pick < 96) {
            auto& w = *gw_.workers[s];
            w.set_paused(!w.paused());
            settle();
            trace(fmt::format("shard {} {}", s, w.paused() ? "paused" : "resumed"));
        } else {
            shards_[s]->set_faults(random_faults());
            trace(fmt::format("shard {} faults changed", s));
        }
    }

    // A replica of shard s stops replicating here; the next time, the primary is lost and that
    // replica promoted (the shard goes down, and comes back with the replica's data): the apply
    // worker's mark check must apply again what the replica lacks.
    void fail_over(core::shard_index s) {
        if (!shards_[s]->has_replica()) {
            shards_[s]->take_replica();
            trace(fmt::format("shard {}'s replica stops", s));
            return;
        }
        // An op at or below the replica's mark that the old primary applied only after the replica
        // stopped — a retry from the error queue, a re-injected dead letter — is not in the range the
        // cursor is rewound over: the late marks must bring it back. Counted, so that a run shows it
        // met such failovers.
        const auto mark = shards_[s]->replica_mark(gw_.journal->node_id());
        for (auto it = acked_.begin(); it != acked_.end() && it->first <= mark; ++it) {
            const auto id = it->second.op.op_id;
            if (shards_[s]->applies().contains(id) && !shards_[s]->replica_applied(id)) {
                ++result_.failovers_late;
                trace(fmt::format("shard {}'s replica lacks op seq {}, applied late below its mark", s, it->first));
                break;
            }
        }
        const bool outage = below(2) == 0;
        shards_[s]->fail_over(outage);
        failed_over_[s] = true;
        ++result_.failovers;
        // Dead letters' applies counted on the old primary are gone with it.
        for (auto& [key, n] : dead_seen_) {
            if (key.first != s) continue;
            const auto it = shards_[s]->applies().find(acked_.at(key.second).op.op_id);
            n = it == shards_[s]->applies().end() ? 0 : it->second;
        }
        trace(fmt::format("shard {} fails over to its replica{}", s, outage ? " (down)" : " (seamless)"));
    }

    // After every step.
    void check_invariants() {
        // A held shard applies nothing: before the adoption seq nothing is its, after it the copy
        // of its range must come first.
        if (split_ && split_->new_shard_held && !shards_[shard_count_]->applies().empty()) {
            fail(fmt::format("shard {} applied ops while it was held for the copy of its range", shard_count_));
        }
        for (core::shard_index s = 0; s < total_shards_ && ok(); ++s) {
            const auto cursor = gw_.journal->cursor(s);
            const auto& marks = shards_[s]->marks();
            const auto mark_it = marks.find(gw_.journal->node_id());
            const std::uint64_t mark = mark_it == marks.end() ? 0 : mark_it->second;
            // A cursor goes back only by the mark check, and then exactly to the shard's mark.
            if (cursor < last_cursor_[s] && cursor != mark) {
                fail(fmt::format("shard {}'s cursor went back from {} to {}, not to its mark {}", s, last_cursor_[s], cursor,
                                 mark));
            }
            if (cursor > gw_.journal->last_seq()) fail(fmt::format("shard {}'s cursor {} is past the last seq", s, cursor));
            last_cursor_[s] = cursor;
            // After a failover the shard lacks what it applied after its replica stopped, until
            // the mark check has rewound the cursor to the mark.
            if (failed_over_[s] && cursor <= mark) failed_over_[s] = false;
            auto errors = gw_.journal->list_errors(s, std::nullopt, 1'000'000);
            auto dead = gw_.journal->list_dead_from(s, 0, 1'000'000);
            if (!errors || !dead) {
                fail("reading the error queue or dead letters failed");
                return;
            }
            std::set<std::uint64_t> queued, dead_seqs;
            for (const auto& e : errors.value()) queued.insert(e.seq);
            for (const auto& d : dead.value()) {
                if (d.task.shard == s) dead_seqs.insert(d.task.seq);
            }
            const auto& applies = shards_[s]->applies();
            // Never silently dropped: below the cursor every op of this shard is applied, queued or dead.
            for (auto it = acked_.begin(); it != acked_.end() && it->first <= cursor && !failed_over_[s]; ++it) {
                const auto& [seq, a] = *it;
                const core::op& o = a.op;
                if ((a.owners & (1u << s)) == 0) continue;
                if (!applies.contains(o.op_id) && !queued.contains(seq) && !dead_seqs.contains(seq)) {
                    fail(fmt::format("op seq {} ({}) is below shard {}'s cursor {} but was neither applied, queued "
                                     "for retry nor dead-lettered: lost",
                                     seq, describe(o), s, cursor));
                    return;
                }
            }
            // The applied mark other gateways wait on (shards/gateways.hpp) claims nothing the shard
            // lacks: an op at or below it is applied, queued or dead, or was refused by the shard (its
            // batch's cursor, and so its error task, may not be committed yet: a crash in between).
            if (mark > gw_.journal->last_seq()) fail(fmt::format("shard {}'s applied mark {} is past the last seq", s, mark));
            for (auto it = acked_.begin(); it != acked_.end() && it->first <= mark && ok(); ++it) {
                const auto& [seq, a] = *it;
                if ((a.owners & (1u << s)) == 0) continue;
                if (!applies.contains(a.op.op_id) && !queued.contains(seq) && !dead_seqs.contains(seq) &&
                    !shards_[s]->refused(a.op.op_id)) {
                    fail(fmt::format("shard {}'s applied mark {} claims op seq {} ({}), which is neither applied, queued "
                                     "nor dead",
                                     s, mark, seq, describe(a.op)));
                }
            }
            // Nothing applied that was not acknowledged, nor on a shard that owned it at none of its
            // seqs (a counter op counted by two shards in the tables summed over every shard counts twice).
            for (const auto& [id, n] : applies) {
                if (!by_id_.contains(id)) fail(fmt::format("shard {} applied op {:x}, which was never acknowledged", s, id));
                if (!(owned_by_.contains(id) && (owned_by_.at(id) & (1u << s)))) {
                    fail(fmt::format("shard {} applied op {:x} ({}), which is not its at any of its seqs", s, id,
                                     describe(by_id_.at(id))));
                }
            }
            // A dead letter is not applied again until it is re-injected (checked for ops journaled
            // once: a replayed copy of the op may be applied on its own).
            for (const auto seq : dead_seqs) {
                const auto& o = acked_.at(seq).op;
                if (seqs_of_id_.at(o.op_id) != 1) continue;
                const auto it = applies.find(o.op_id);
                const std::uint32_t n = it == applies.end() ? 0 : it->second;
                auto [seen, fresh] = dead_seen_.try_emplace({s, seq}, n);
                if (fresh) {
                    ++result_.dead_letters;
                    trace(fmt::format("dead letter seq {} on shard {}", seq, s));
                } else if (seen->second != n) {
                    fail(fmt::format("dead letter seq {} on shard {} was applied again without being re-injected", seq, s));
                }
            }
        }
    }

    bool drained() {
        for (core::shard_index s = 0; s < total_shards_; ++s) {
            if (gw_.journal->cursor(s) != gw_.journal->last_seq()) return false;
            // An idle worker brings its applied mark up to its cursor (or other gateways' reads wait).
            const auto& marks = shards_[s]->marks();
            const auto mark = marks.find(gw_.journal->node_id());
            if ((mark == marks.end() ? 0 : mark->second) != gw_.journal->last_seq()) return false;
            auto errors = gw_.journal->list_errors(s, std::nullopt, 1);
            if (!errors || !errors.value().empty()) return false;
        }
        return true;
    }

    // Faults stop; the queues must drain (liveness).
    void drain(const char* what) {
        for (std::size_t round = 0; round < drain_rounds_max && ok(); ++round) {
            if (drained()) return;
            for (core::shard_index s = 0; s < total_shards_ && ok(); ++s) step_shard(s);
            now_ms_ += static_cast<std::uint64_t>(limits_.retry_backoff_max.count());
            if (ok()) check_invariants();
        }
        if (ok() && !drained()) fail(fmt::format("liveness: {}, the queues did not drain in {} rounds", what, drain_rounds_max));
    }

    // A split of a random shard of the map to the spare shard, one stage at a time: adopted at the
    // journal's next seq (every op from it that touches the new range also goes to the new shard,
    // counter ops to it alone), the new shard held; then released, as when its copy is written.
    void split_step() {
        if (!split_) {
            core::split_route sp;
            sp.from = static_cast<core::shard_index>(below(shard_count_));
            std::optional<core::error_code> refused;
            routing_.install_at([this] { return gw_.journal->last_seq(); }, [&](std::uint64_t next_seq) {
                sp.adoption_seq = next_seq;
                auto t = core::route_table::splitting(2, map_, sp);
                if (!t) {
                    refused = t.error();
                    return *routing_.load();
                }
                return std::move(t).value();
            });
            if (refused) return fail("a split the map allows was refused: " + refused->message());
            next_map_ = map_.split(sp.from).value();
            split_ = sp;
            ++result_.splits;
            trace(fmt::format("split shard {} to shard {}: adopted from seq {}", sp.from, shard_count_, sp.adoption_seq));
        } else if (split_->new_shard_held) {
            release_split();
        }
    }

    void release_split() {
        split_->new_shard_held = false;
        auto t = core::route_table::splitting(2, map_, *split_);
        if (!t) return fail("releasing the split's new shard was refused: " + t.error().message());
        routing_.install(std::move(t).value());
        trace(fmt::format("split: shard {} released", shard_count_));
    }

    void finish() {
        trace("faults stop");
        for (auto& s : shards_) {
            s->set_faults({});
            s->set_down(false);
        }
        for (auto& w : gw_.workers) w->set_paused(false);
        // A held shard waits for its copy, which only an operator's split would bring.
        if (split_ && split_->new_shard_held) release_split();
        settle();
        drain("after the faults stopped");
        // Some dead letters are re-injected (and then apply), the rest stay dead.
        if (ok()) reinject(false);
        if (ok()) drain("after re-injecting dead letters");
        if (ok()) check_convergence();
    }

    // Rows, counts and counters equal a model that applied each applied op once; every acked op
    // of a shard is applied there unless it is still a dead letter.
    void check_convergence() {
        auto dead = gw_.journal->list_dead(1'000'000);
        if (!dead) return fail("listing dead letters failed");
        std::set<letter_key> still_dead;
        for (const auto& d : dead.value()) still_dead.insert({d.task.shard, d.task.seq});
        for (core::shard_index s = 0; s < total_shards_ && ok(); ++s) {
            const memory_shard& shard = *shards_[s];
            // Where shard s's rows are: a split's new shard takes the next map's (it applies
            // nothing from before the adoption), the split shard keeps the old map's until a
            // cut-over (which this simulation does not make), and the others are the same in both.
            const core::shard_map& rows_map = split_ && s == shard_count_ ? *next_map_ : map_;
            std::set<std::uint64_t> required;
            for (const auto& [seq, a] : acked_) {
                if ((a.owners & (1u << s)) == 0) continue;
                if (!still_dead.contains({s, seq})) required.insert(a.op.op_id);
            }
            std::vector<core::op> applied_edges;
            std::map<counter_key, std::int64_t> counters;
            std::map<total_key, std::int64_t> totals;
            // Entities: the op with the greatest ts per entity (ts are unique), and per index row.
            std::map<entity_key, const core::op*> newest;
            std::map<index_row_key, std::uint64_t> want_index_rows;
            // Cells: the op with the smallest (ts, body) per cell; index definitions: the newest
            // per name, a drop winning a tie.
            std::map<cell_key, const core::op*> first_cells;
            std::map<std::string, const core::op*> newest_defs;
            for (const auto& [id, n] : shard.applies()) {
                const auto& o = by_id_.at(id);
                if (const auto* c = std::get_if<core::counter_op>(&o.body)) {
                    // The tables keyed by shard_on on the rows' shard; the others on the owner in
                    // the first map (map_: this simulation splits a shard of version 1).
                    if (rows_map.shard_of_hash(c->shard_hash) == s) counters[counter_key_of(*c)] += c->delta;
                    if (map_.shard_of_hash(c->shard_hash) == s) totals[{c->metric, c->time_ms / 3'600'000}] += c->delta;
                } else if (const auto* cell = std::get_if<core::cell_op>(&o.body)) {
                    if (rows_map.shard_of_hash(core::hash_bytes(cell->row_key)) == s) {
                        auto& best = first_cells[{cell->table, cell->row_key, cell->column, cell->ref_key}];
                        if (!best || o.ts < best->ts ||
                            (o.ts == best->ts && cell->body < std::get<core::cell_op>(best->body).body)) {
                            best = &o;
                        }
                    }
                    for (const auto& entry : cell->entries) {
                        if (rows_map.shard_of_hash(entry.shard_hash) != s) continue;
                        auto& ts = want_index_rows[{entry.index, entry.values, cell->row_key}];
                        ts = std::max(ts, core::cell_index_version(cell->ref_key));
                    }
                } else if (const auto* d = std::get_if<core::index_def_op>(&o.body)) {
                    auto& best = newest_defs[d->name];
                    if (!best || o.ts > best->ts ||
                        (o.ts == best->ts && d->dropped && !std::get<core::index_def_op>(best->body).dropped)) {
                        best = &o;
                    }
                } else if (const auto* e = std::get_if<core::entity_op>(&o.body)) {
                    if (rows_map.shard_of_hash(core::hash_bytes(e->id)) == s) {
                        auto& best = newest[{e->entity_kind, e->id}];
                        if (!best || best->ts < o.ts) best = &o;
                    }
                    for (const auto& entry : e->entries) {
                        if (rows_map.shard_of_hash(entry.shard_hash) != s) continue;
                        auto& ts = want_index_rows[{entry.index, entry.values, e->id}];
                        ts = std::max(ts, o.ts);
                    }
                } else {
                    applied_edges.push_back(o);
                }
            }
            for (const auto id : required) {
                if (!shard.applies().contains(id)) {
                    return fail(fmt::format("convergence: op {:x} ({}) was acknowledged but never applied on shard {}", id,
                                            describe(by_id_.at(id)), s));
                }
            }
            const auto expected = test::edge_model::of(applied_edges);
            const auto on_shard = [&](std::int64_t node) { return rows_map.shard_of_id(node) == s; };
            std::map<test::edge_key, core::edge_row> want_rows, got_rows;
            for (const auto& [k, r] : expected.rows) {
                if (on_shard(std::get<1>(k))) want_rows[k] = r;
            }
            const auto got = shard.edges();
            for (const auto& [k, r] : got.rows) {
                if (on_shard(std::get<1>(k))) got_rows[k] = r;
            }
            if (want_rows != got_rows) return fail(fmt::format("convergence: shard {}'s edge rows differ from the model", s));
            std::map<test::count_key, std::int64_t> want_counts, got_counts;
            for (const auto& [k, n] : expected.counts) {
                if (on_shard(std::get<1>(k))) want_counts[k] = n;
            }
            for (const auto& [k, n] : got.counts) {
                if (on_shard(std::get<1>(k))) got_counts[k] = n;
            }
            if (want_counts != got_counts) return fail(fmt::format("convergence: shard {}'s edge counts differ from the model", s));
            std::map<counter_key, std::int64_t> got_counters;
            for (const auto& [k, cell] : shard.counters()) got_counters[k] = cell.sum;
            if (counters != got_counters) return fail(fmt::format("convergence: shard {}'s counters differ from the model", s));
            std::map<total_key, std::int64_t> got_totals;
            for (const auto& [k, cell] : shard.totals()) got_totals[k] = cell.sum;
            if (totals != got_totals) return fail(fmt::format("convergence: shard {}'s counter totals differ from the model", s));
            std::map<entity_key, entity_row> want_entities;
            for (const auto& [k, o] : newest) {
                const auto& e = std::get<core::entity_op>(o->body);
                want_entities[k] = {o->ts, e.deleted, e.body};
            }
            if (want_entities != shard.entities()) {
                return fail(fmt::format("convergence: shard {}'s entity rows differ from the model", s));
            }
            if (want_index_rows != shard.index_rows()) {
                return fail(fmt::format("convergence: shard {}'s entity and cell index rows differ from the model", s));
            }
            std::map<cell_key, cell_row> want_cells;
            for (const auto& [k, o] : first_cells) want_cells[k] = {o->ts, std::get<core::cell_op>(o->body).body};
            if (want_cells != shard.cells()) return fail(fmt::format("convergence: shard {}'s cells differ from the model", s));
            std::map<std::string, index_def_row> want_defs;
            for (const auto& [name, o] : newest_defs) {
                const auto& d = std::get<core::index_def_op>(o->body);
                want_defs[name] = {o->ts, d.dropped, d.definition};
            }
            if (want_defs != shard.index_defs()) {
                return fail(fmt::format("convergence: shard {}'s index definitions differ from the model", s));
            }
        }
        trace("converged");
    }

    const sim_options opts_;
    std::mt19937_64 rng_;
    const std::uint32_t shard_count_;
    // Seeds with (seed / 2) odd list one shard more than the map holds, and split one shard of
    // the map to it while they run: adopted at the journal's next seq, held, then released (the
    // copy of the range is not simulated: the new shard is checked for what it applied itself).
    const bool with_split_;
    const std::uint32_t total_shards_;
    const core::shard_map map_;
    core::routing routing_{core::route_table(1, map_)};
    std::optional<core::split_route> split_;
    std::optional<core::shard_map> next_map_;
    const core::limits limits_ = sim_limits();
    fs::path dir_;
    std::uint64_t now_ms_ = start_ms;
    asio::io_context ioc_{1};
    std::vector<std::unique_ptr<memory_shard>> shards_;
    gateway gw_;
    sim_result result_;

    struct acked_op {
        core::op op;                // with its op id
        std::uint32_t owners = 0;   // bit s: the op has rows on shard s
    };
    std::map<std::uint64_t, acked_op> acked_;           // seq -> op
    std::map<std::uint64_t, core::op> by_id_;           // op id -> op
    std::map<std::uint64_t, std::uint32_t> seqs_of_id_;  // op id -> seqs it was journaled at
    std::map<std::uint64_t, std::uint32_t> owned_by_;    // op id -> the shards it is routed to at any of its seqs
    std::map<std::string, std::vector<core::op>> sent_;  // idempotency key -> the ops sent with it
    std::uint64_t next_key_ = 1;
    std::vector<std::uint64_t> last_cursor_;
    std::vector<bool> failed_over_;  // shard failed over; its mark check has not run yet
    std::map<letter_key, std::uint32_t> dead_seen_;  // dead letter -> applies of its op when it died
};

}  // namespace

sim_result run_simulation(const sim_options& opts) {
    simulator sim(opts);
    return sim.run();
}

}  // namespace cairn::sim
