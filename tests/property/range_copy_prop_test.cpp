// Online resharding's copy (docs/resharding.md, shards/range_copy.hpp) against real MariaDB: shard A
// owns the whole hash space and splits; B takes the upper half R. Random writes of every model are cut
// at a random adoption point: the ops before it are applied on A only; of the ops after it, counter
// increments of R go to B only, everything else to A (some before the copy, some after) and, when it
// touches R, to B — and B applies only after the copy is written (its worker is held), shuffled and
// duplicated. Some ops from before the cut that touch R reach B too (a counter op whose commit on A was
// ambiguous and was moved to B's error queue). At the end every table's rows of R on B equal A's
// (the diff), and B's counters equal the model's sums of every increment of R, each counted once.
#include <utility>

#include "core/hlc.hpp"
#include "core/shard_map.hpp"
#include "shards/counter_store.hpp"
#include "shards/index_store.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/range_copy.hpp"
#include "tests/support/counter_example.hpp"
#include "tests/support/edge_gen.hpp"
#include "tests/support/model_gen.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>
#include <set>

namespace cairn {
namespace {

namespace asio = boost::asio;
const std::string range_copy_db = "cairn_prop_split";




rc::Gen<core::op> gen_increment(const core::counter_metric& m, std::int64_t now_ms) {
    return rc::gen::exec([&m, now_ms] {
        core::counter_op c;
        c.metric = m.name;
        c.dimensions = {std::to_string(*rc::gen::inRange(1, 4)), std::to_string(*rc::gen::inRange(1, 12)),
                        *rc::gen::element<std::string>("DE", "FR", "U\xc3"), *rc::gen::element<std::string>("ios", "web")};
        c.time_ms = now_ms - *rc::gen::inRange<std::int64_t>(0, 2 * core::ms_per_day);
        c.delta = *rc::gen::inRange<std::int64_t>(-3, 6);
        c.shard_hash = core::counter_value_hash(m.dimensions[m.shard_on], c.dimensions[m.shard_on]);
        core::op o;
        o.ts = core::hlc_make(static_cast<std::uint64_t>(now_ms) - *rc::gen::inRange<std::uint64_t>(0, 3'600'000), 0, 1);
        o.body = std::move(c);
        return o;
    });
}

struct fixture {
    asio::io_context ioc;
    core::shard_map before = core::shard_map::equal_ranges(1);  // A alone
    core::shard_map after = before.split(0).value();             // A the lower half, B (shard 1) the upper
    core::hash_range moved = after.range_of(1);
    core::counter_catalog catalog = test::counter_example_catalog();
    core::cell_config cells;
    core::entity_config entities;
    std::unique_ptr<shards::mariadb_conn> a, b;
    std::int64_t now_ms = static_cast<std::int64_t>(core::system_wall_clock_ms());

    fixture() {
        cells.tables = {"users", "schools"};
        entities.kinds = {"entry", "user"};
    }
    shards::apply_context context(const core::shard_map& map) const {
        return {map, catalog, cells, entities, static_cast<std::uint64_t>(now_ms)};
    }
    void connect() {
        const auto endpoints = test::test_shards();
        a = std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[0], range_copy_db));
        b = std::make_unique<shards::mariadb_conn>(ioc.get_executor(), test::params_for(endpoints[1], range_copy_db));
        ASSERT_TRUE(test::run_on(ioc, a->async_connect()));
        ASSERT_TRUE(test::run_on(ioc, b->async_connect()));
        // A's worker made its schema long ago; B's makes its own when it starts (held, before the copy).
        ASSERT_TRUE(test::run_on(ioc, shards::async_create_schema(*a, context(before))));
        ASSERT_TRUE(test::run_on(ioc, shards::async_create_schema(*b, context(after))));
    }
    // Empties every table of both databases (B's index table too, which only the copy creates).
    void clear() {
        for (auto* c : {a.get(), b.get()}) {
            auto t = test::run_on(ioc, c->async_query("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"));
            RC_ASSERT(t.has_value());
            for (std::size_t i = 0; i < t.value().size(); ++i) {
                RC_ASSERT(test::run_on(ioc, c->async_execute("DELETE FROM " + std::string(*t.value().at(i, 0)))).has_value());
            }
        }
    }
    // Applies ops in random batches: on A (shard 0 of `before`), or on B (shard 1 of `after`).
    void apply(bool on_b, const std::vector<core::op>& ops) {
        const auto& map = on_b ? after : before;
        const core::shard_index shard = on_b ? 1 : 0;
        std::size_t at = 0;
        while (at < ops.size()) {
            const auto n = *rc::gen::inRange<std::size_t>(1, 8);
            std::vector<const core::op*> batch;
            for (std::size_t i = at; i < std::min(ops.size(), at + n); ++i) {
                if (shards::touches_shard(ops[i], map, shard)) batch.push_back(&ops[i]);
            }
            RC_ASSERT(test::run_on(ioc, shards::async_apply_ops(on_b ? *b : *a, context(map), shard, batch)).has_value());
            at += n;
        }
    }
};

bool is_counter(const core::op& o) { return std::holds_alternative<core::counter_op>(o.body); }

TEST(range_copy, a_split_shard_ends_with_the_old_owners_rows_of_its_half_and_every_increment_once) {
    CAIRN_REQUIRE_SHARDS(2u);
    test::fresh_database(range_copy_db);
    fixture fx;
    fx.connect();
    ASSERT_EQ(fx.catalog.metrics.size(), 1u);
    const auto& metric = fx.catalog.metrics[0];
    core::op def;
    def.ts = core::hlc_make(1'795'000'000'000, 0, 1);
    def.body = core::index_def_op{"users_by_company", false, core::encode_index_def(test::users_by_company())};

    const bool ok = rc::check("the copy and the writes after the cut converge on the new shard", [&] {
        auto ops = *rc::gen::container<std::vector<core::op>>(rc::gen::oneOf(
            test::gen_edge_or_node_op(12, 6), test::gen_entity_write(12, 'p', '\xe9'), test::gen_cell_write(10, 10, 'a', '\x80'), gen_increment(metric, fx.now_ms)));
        for (std::size_t i = 0; i < ops.size(); ++i) ops[i].op_id = core::make_op_id(1, i + 1);
        const auto cut = *rc::gen::inRange<std::size_t>(0, ops.size() + 1);
        const std::vector<core::op> earlier(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(cut));
        std::vector<core::op> a_first = earlier, a_later, b_ops;
        for (std::size_t i = cut; i < ops.size(); ++i) {
            if (shards::touches_shard(ops[i], fx.after, 1)) b_ops.push_back(ops[i]);
            if (is_counter(ops[i])) continue;  // counted where the cut-over says: B, for R's
            (*rc::gen::arbitrary<bool>() ? a_first : a_later).push_back(ops[i]);
        }
        for (const auto& o : earlier) {
            if (shards::touches_shard(o, fx.after, 1) && *rc::gen::inRange(0, 4) == 0) b_ops.push_back(o);  // ambiguous on A
        }

        fx.clear();
        {
            const core::op* defs[] = {&def};
            RC_ASSERT(test::run_on(fx.ioc, shards::async_apply_ops(*fx.a, fx.context(fx.before), 0, defs)).has_value());
        }
        fx.apply(false, *test::gen_shuffled_with_duplicates(a_first));
        auto groups = test::run_on(fx.ioc, shards::async_plan_range_copy(*fx.a, fx.catalog, fx.cells));
        RC_ASSERT(groups.has_value());
        const shards::range_copy_options options{*rc::gen::inRange<std::size_t>(1, 7), 0, {}, {}};  // many chunks
        auto copied = test::run_on(fx.ioc, shards::async_copy_range(*fx.a, *fx.b, groups.value(), fx.moved, options));
        RC_ASSERT(copied.has_value());
        fx.apply(true, *test::gen_shuffled_with_duplicates(b_ops));
        fx.apply(false, *test::gen_shuffled_with_duplicates(a_later));

        // Every model's rows of R (entities, cells, index rows, edges, counts, node registers): B = A.
        std::vector<shards::copy_group> lww = groups.value();
        std::erase_if(lww, [](const shards::copy_group& g) { return g.name == "counters"; });
        auto diff = test::run_on(fx.ioc, shards::async_diff_range(*fx.a, *fx.b, lww, fx.moved, options));
        RC_ASSERT(diff.has_value());
        std::uint64_t rows_of_r = 0;
        for (const auto& d : diff.value()) {
            if (!d.same()) {
                RC_LOG() << d.table << ": " << d.rows_from << " rows on A, " << d.rows_to << " on B\n";
                for (std::size_t s = 0; s < 2; ++s) {
                    auto rows = test::query_sql(test::test_shards()[s], "SELECT * FROM " + d.table, range_copy_db);
                    if (rows) for (const auto& r : rows.value()) RC_LOG() << (s ? "B " : "A ") << r << "\n";
                }
            }
            RC_ASSERT(d.same());
            rows_of_r += d.rows_from;
        }
        // The chunked diff (async_diff_range_chunks: keyset chunks on A, key intervals on B) agrees:
        // no chunk differs. Then one row of R gone from B is found, in its table.
        auto chunks = test::run_on(fx.ioc, shards::async_diff_range_chunks(*fx.a, *fx.b, lww, fx.moved, options));
        RC_ASSERT(chunks.has_value());
        for (const auto& c : chunks.value()) RC_LOG() << "chunk of " << c.table << " differs: " << c.rows_from << " vs " << c.rows_to << "\n";
        RC_ASSERT(chunks.value().empty());
        for (const auto& d : diff.value()) {
            // Not a table copied whole, nor one whose rows at 0 count as absent (a deleted 0 changes nothing).
            if (d.rows_to == 0 || d.table == "node_registers" || d.table == "index_defs" || d.table == "edge_counts") continue;
            RC_ASSERT(test::exec_sql(test::test_shards()[1], {"DELETE FROM " + d.table + " ORDER BY RAND() LIMIT 1"}, range_copy_db));
            auto found = test::run_on(fx.ioc, shards::async_diff_range_chunks(*fx.a, *fx.b, lww, fx.moved, options));
            RC_ASSERT(found.has_value());
            RC_ASSERT(found.value().size() == 1u);
            RC_ASSERT(found.value().front().table == d.table);
            RC_ASSERT(found.value().front().rows_from == found.value().front().rows_to + 1);
            // Compared again alone, it still differs; the rows put back (the copy again), it does not.
            auto again = test::run_on(fx.ioc, shards::async_rediff_chunks(*fx.a, *fx.b, lww, fx.moved, found.value(), options));
            RC_ASSERT(again.has_value());
            RC_ASSERT(again.value().size() == 1u);
            RC_ASSERT(test::run_on(fx.ioc, shards::async_copy_range(*fx.a, *fx.b, lww, fx.moved, options)).has_value());
            auto mended = test::run_on(fx.ioc, shards::async_rediff_chunks(*fx.a, *fx.b, lww, fx.moved, found.value(), options));
            RC_ASSERT(mended.has_value());
            RC_ASSERT(mended.value().empty());
            break;
        }
        // And nothing of the lower half on B, but for the tables every shard holds whole.
        auto outside = test::run_on(fx.ioc, shards::async_diff_range(*fx.a, *fx.b, groups.value(), {0, fx.moved.first - 1}, options));
        RC_ASSERT(outside.has_value());
        for (const auto& d : outside.value()) {
            if (d.table != "node_registers" && d.table != "index_defs" && d.table != "counter_ops") RC_ASSERT(d.rows_to == 0u);
        }
        // Counters: B holds every increment of R once — the copied sums and B's own.
        std::vector<core::op> increments_of_r;
        for (const auto& o : ops) {
            if (is_counter(o) && fx.moved.contains(std::get<core::counter_op>(o.body).shard_hash)) increments_of_r.push_back(o);
        }
        test::counter_rows on_b;
        for (const auto& t : metric.tables) {
            auto rows = test::run_on(fx.ioc, shards::async_dump_counter_table(*fx.b, metric, t));
            RC_ASSERT(rows.has_value());
            for (auto& [key, count] : rows.value()) {
                if (count != 0) on_b[{t.name, key}] += count;
            }
        }
        RC_ASSERT(on_b == test::counter_model_of(metric, increments_of_r));
        RC_CLASSIFY(copied.value().rows_copied > 0, "rows copied");
        RC_CLASSIFY(rows_of_r > 20, "more than 20 rows of R");
        RC_CLASSIFY(!b_ops.empty() && cut > 0, "writes on both sides of the cut");
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn
