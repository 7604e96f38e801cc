// A state-machine property of the journal: random appends (single, bursts, with idempotency
// keys), apply outcomes, injected MDB_MAP_FULL, reopen, and destruction with requests in flight,
// checked against a std::map model fed only by acknowledgements. Everything acknowledged must be
// present after every reopen with identical bytes; nothing unacknowledged may appear.
#include "journal/journal.hpp"

#include "journal/detail/lmdb.hpp"
#include "journal_test_util.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <map>
#include <mutex>
#include <tuple>

namespace cairn::journal {
namespace {

constexpr std::uint32_t shards = 2;
const std::vector<std::string> keys = {"", "alpha", "beta", "gamma"};

// The system under test and the model of what it acknowledged.
struct sut {
    test::temp_dir dir{test::temp_dir::memory_base()};
    test::manual_wall wall;
    core::hlc clock{7, wall.fn()};
    options opts;
    std::unique_ptr<journal> j;

    std::map<std::uint64_t, std::string> ops;  // seq -> record bytes
    std::uint64_t last_seq = 0;
    std::vector<std::uint64_t> cursors = std::vector<std::uint64_t>(shards, 0);
    std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>, error_task> errors;
    std::map<std::pair<std::uint32_t, std::uint64_t>, dead_letter> dead;
    std::map<std::string, appended> idem;

    sut() {
        opts = test::test_options(dir.path(), wall);
        opts.shard_count = shards;
        opts.retention = std::chrono::hours(24 * 365);
        j = std::move(journal::open(opts, clock).value());
    }

    // Records an acknowledged append of ops.
    void acked(const std::vector<core::op>& sent, const std::string& key, const appended& a) {
        if (!key.empty()) {
            if (auto it = idem.find(key); it != idem.end()) {
                auto want = it->second;
                want.deduplicated = true;
                RC_ASSERT(a == want);
                return;
            }
        }
        RC_ASSERT(!a.deduplicated);
        RC_ASSERT(a.first_seq == last_seq + 1);
        RC_ASSERT(a.last_seq == last_seq + sent.size());
        for (std::size_t k = 0; k < sent.size(); ++k) {
            const std::uint64_t seq = a.first_seq + k;
            ops[seq] = test::expected_bytes(sent[k], opts.node_id, seq);
            RC_ASSERT(a.ts[k] == sent[k].ts);
        }
        last_seq = a.last_seq;
        if (!key.empty()) idem[key] = a;
    }

    void reopen() {
        j.reset();
        auto r = journal::open(opts, clock);
        RC_ASSERT(static_cast<bool>(r));
        j = std::move(r.value());
        verify();
    }

    void verify() const {
        RC_ASSERT(j->last_seq() == last_seq);
        auto all = j->read_ops(0, ops.size() + 10);
        RC_ASSERT(static_cast<bool>(all));
        RC_ASSERT(all.value().size() == ops.size());
        auto it = ops.begin();
        for (const auto& [seq, o] : all.value()) {
            RC_ASSERT(seq == it->first);
            RC_ASSERT(core::encode_op(o) == it->second);
            RC_ASSERT(j->read_op_bytes(seq).value() == it->second);
            ++it;
        }
        for (std::uint32_t s = 0; s < shards; ++s) {
            RC_ASSERT(j->cursor(s) == cursors[s]);
            std::vector<error_task> want;
            for (const auto& [k, t] : errors) {
                if (std::get<0>(k) == s) want.push_back(t);
            }
            RC_ASSERT(j->due_errors(s, UINT64_MAX, 1000).value() == want);
        }
        std::vector<dead_letter> want_dead;
        for (const auto& [k, d] : dead) want_dead.push_back(d);
        RC_ASSERT(j->list_dead(1000).value() == want_dead);
    }
};

struct model {};  // Everything the property checks is learnt from acknowledgements, in sut.
using command = rc::state::Command<model, sut>;

std::vector<core::op> gen_ops(core::hlc& clock, std::size_t n, bool explicit_ids) {
    std::vector<core::op> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto v = *rc::gen::inRange<std::int64_t>(0, 1'000'000);
        out.push_back(test::make_op(v, clock.now(), explicit_ids ? core::make_op_id(9, static_cast<std::uint64_t>(v)) : 0));
    }
    return out;
}

struct append_one : command {
    std::size_t n = *rc::gen::inRange<std::size_t>(1, 5);
    std::size_t key = *rc::gen::inRange<std::size_t>(0, keys.size());
    bool explicit_ids = *rc::gen::arbitrary<bool>();

    void run(const model&, sut& s) const override {
        auto ops = gen_ops(s.clock, n, explicit_ids);
        auto r = test::append_sync(*s.j, ops, keys[key]);
        RC_ASSERT(static_cast<bool>(r));
        s.acked(ops, keys[key], r.value());
    }
    void show(std::ostream& os) const override { os << "append(" << n << " ops, key '" << keys[key] << "')"; }
};

struct append_burst : command {
    std::size_t k = *rc::gen::inRange<std::size_t>(2, 30);

    void run(const model&, sut& s) const override {
        test::collector<appended> results;
        std::vector<std::vector<core::op>> sent(k);
        for (std::size_t i = 0; i < k; ++i) {
            sent[i] = gen_ops(s.clock, 1 + i % 3, false);
            s.j->append(sent[i], {}, results.callback(i));
        }
        const auto calls = results.wait(k);
        for (std::size_t i = 0; i < k; ++i) {
            RC_ASSERT(calls[i].first == i);  // acks in submission order, with contiguous seqs
            RC_ASSERT(static_cast<bool>(calls[i].second));
            s.acked(sent[i], {}, calls[i].second.value());
        }
    }
    void show(std::ostream& os) const override { os << "append_burst(" << k << ")"; }
};

struct outcome : command {
    std::uint32_t shard = *rc::gen::inRange<std::uint32_t>(0, shards);
    int advance = *rc::gen::inRange(0, 5);  // quarters of the way to last_seq
    bool put_error = *rc::gen::arbitrary<bool>();
    bool remove_error = *rc::gen::arbitrary<bool>();
    bool kill_error = *rc::gen::arbitrary<bool>();
    std::uint64_t due = *rc::gen::inRange<std::uint64_t>(0, 50);
    std::size_t history = *rc::gen::inRange<std::size_t>(0, 20);

    void run(const model&, sut& s) const override {
        apply_outcome o;
        o.shard = shard;
        const std::uint64_t cur = s.cursors[shard];
        if (advance > 0) o.cursor = cur + (s.last_seq - cur) * static_cast<std::uint64_t>(advance) / 4;
        auto first_of_shard = [&]() -> const error_task* {
            for (const auto& [k, t] : s.errors) {
                if (std::get<0>(k) == shard) return &t;
            }
            return nullptr;
        };
        if (remove_error) {
            if (const auto* t = first_of_shard()) o.remove_errors.push_back(*t);
        }
        if (put_error && s.last_seq > 0) {
            const std::uint64_t seq = 1 + due % s.last_seq;
            error_task t{shard, seq, due, 1, {}, s.ops.count(seq) ? s.ops.at(seq) : "", due * 10};
            for (std::size_t i = 0; i < history; ++i) t.errors.push_back("error #" + std::to_string(i));
            o.put_errors.push_back(t);
        }
        if (kill_error) {
            if (const auto* t = first_of_shard()) {
                o.remove_errors.push_back(*t);
                o.put_dead.push_back(dead_letter{*t, due});
            }
        }
        RC_ASSERT(static_cast<bool>(test::commit_sync(*s.j, o)));
        // The model applies the same order as the journal: removes, puts, dead letters, cursor.
        for (const auto& t : o.remove_errors) s.errors.erase({t.shard, t.due_ms, t.seq});
        for (auto t : o.put_errors) {
            if (t.errors.size() > 16) t.errors.erase(t.errors.begin(), t.errors.end() - 16);
            s.errors[{t.shard, t.due_ms, t.seq}] = t;
        }
        for (const auto& d : o.put_dead) s.dead[{d.task.shard, d.task.seq}] = d;
        if (o.cursor) s.cursors[shard] = *o.cursor;
    }
    void show(std::ostream& os) const override {
        os << "outcome(shard " << shard << ", advance " << advance << "/4, put " << put_error << ", remove "
           << remove_error << ", dead " << kill_error << ")";
    }
};

struct reopen : command {
    void run(const model&, sut& s) const override { s.reopen(); }
    void show(std::ostream& os) const override { os << "reopen"; }
};

// Destroys the journal with appends still queued: each completes once, committed or
// shutting_down, and after reopening exactly the committed ones are there.
struct destroy_with_pending : command {
    std::size_t k = *rc::gen::inRange<std::size_t>(1, 40);

    void run(const model&, sut& s) const override {
        test::collector<appended> results;
        std::vector<std::vector<core::op>> sent(k);
        for (std::size_t i = 0; i < k; ++i) {
            sent[i] = gen_ops(s.clock, 1 + i % 2, false);
            s.j->append(sent[i], {}, results.callback(i));
        }
        s.j.reset();
        const auto calls = results.wait(k);
        RC_ASSERT(results.count() == k);  // each exactly once, all before the destructor returned
        for (std::size_t i = 0; i < k; ++i) {
            RC_ASSERT(calls[i].first == i);
            const auto& r = calls[i].second;
            if (r) {
                s.acked(sent[i], {}, r.value());
            } else {
                RC_ASSERT(r.error() == core::errc::shutting_down);
            }
        }
        auto r = journal::open(s.opts, s.clock);
        RC_ASSERT(static_cast<bool>(r));
        s.j = std::move(r.value());
        s.verify();
    }
    void show(std::ostream& os) const override { os << "destroy_with_pending(" << k << ")"; }
};

struct map_full : command {
    std::size_t key = *rc::gen::inRange<std::size_t>(0, keys.size());

    void run(const model&, sut& s) const override {
        s.j->fail_next_commit_for_test(MDB_MAP_FULL);
        auto r = test::append_sync(*s.j, gen_ops(s.clock, 2, false), keys[key]);
        RC_ASSERT(!r);
        RC_ASSERT(r.error() == core::errc::journal_full);
        RC_ASSERT(s.j->healthy());
    }
    void show(std::ostream& os) const override { os << "map_full(key '" << keys[key] << "')"; }
};

RC_GTEST_PROP(journal_prop, everything_acknowledged_survives_reopen_with_identical_bytes, ()) {
    sut s;
    const model m;
    const auto cmds = *rc::gen::resize(
        30, rc::state::gen::commands(
                m, rc::state::gen::execOneOfWithArgs<append_one, append_one, append_burst, outcome, outcome, reopen,
                                                     destroy_with_pending, map_full>()));
    rc::state::runAll(cmds, m, s);
    s.reopen();
}

}  // namespace
}  // namespace cairn::journal
