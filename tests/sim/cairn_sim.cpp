// cairn-sim: runs the seeded simulation of the apply pipeline (tests/sim/simulator.hpp) for many
// seeds, or replays one. Prints one summary line, "simulation: seeds=<n> failures=<n>", and for
// each failure its seed, what failed and the command that replays it.
#include "tests/sim/simulator.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>
#include <optional>

namespace {
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // set from a signal handler
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "cairn-sim: the seeded simulation of cairn's apply pipeline. Each seed runs the real journal and apply\n"
        "workers on a simulated clock against in-memory shards whose faults (lost connections before and after\n"
        "commit, deadlocks, refusals, duplicated applies, shards down, gateway crashes, failovers to a lagging replica) come from the seed, checks\n"
        "the invariants after every step and convergence at the end.\n\n"
        "Examples:\n"
        "  cairn-sim --seeds 1000            seeds 1..1000 (what CI runs)\n"
        "  cairn-sim --seed 4711 --verbose   replay one seed, step by step\n"
        "  cairn-sim --seeds 1000000 --first-seed 1000001 --progress 10000   a long run\n"
        "  cairn-sim --seeds 100000000 --max-time 7200   as many seeds as two hours allow\n"
        "Ctrl-C (or SIGTERM) ends a run early: the seeds in progress finish and the summary is printed.\n\n"
        "Exit codes: 0 every seed passed, 1 a seed failed, 2 bad arguments."};
    std::uint64_t seeds = 100;
    std::uint64_t first_seed = 1;
    std::optional<std::uint64_t> one_seed;
    std::size_t steps = 250;
    bool verbose = false;
    bool broken = false;
    bool broken_marks = false;
    bool broken_late = false;
    std::uint64_t progress = 0;
    std::size_t failures_shown_max = 10;
    unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
    double max_time = 0;
    app.add_option("--seeds", seeds, "how many seeds to run")->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    app.add_option("--first-seed", first_seed, "the first seed of the run");
    app.add_option("--seed", one_seed, "run (replay) only this seed");
    app.add_option("--steps", steps, "random steps per seed before the faults stop")->check(CLI::Range(1, 1'000'000));
    app.add_flag("-v,--verbose", verbose, "log every step of every seed to stderr");
    app.add_flag("--broken-swallow-rejections", broken,
                 "run the deliberately broken variant (refused statements reported as success): must fail");
    app.add_flag("--broken-skip-mark-check", broken_marks,
                 "run the other broken variant (apply workers without their mark check, so a failover to a lagging "
                 "replica loses writes): must fail");
    app.add_flag("--broken-skip-late-check", broken_late,
                 "run the third broken variant (the mark check leaves out the ops applied late, so a failover to a "
                 "replica lacking one below its mark loses it): must fail on the seeds the summary names");
    app.add_option("--progress", progress, "print a progress line every N seeds (0: never)");
    app.add_option("--failures-shown", failures_shown_max, "failures printed in full at most");
    app.add_option("--max-time", max_time,
                   "stop starting seeds after this many seconds; the summary counts the seeds that ran (0: no limit)")
        ->check(CLI::Range(0.0, 3.0e7));
    app.add_option("--jobs", jobs, "seeds run at once, one thread each (default: the cores)")->check(CLI::Range(1u, 256u));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::off);
    if (one_seed) {
        first_seed = *one_seed;
        seeds = 1;
    }
    // SIGINT or SIGTERM ends a run as --max-time does: the seeds in progress finish and the summary
    // is printed. A second signal kills at once (the handler resets itself).
    struct sigaction sa {};
    sa.sa_handler = [](int) { stop_requested.store(true); };
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    const auto started = std::chrono::steady_clock::now();
    // Seeds are independent (each has its own journal folder, io_context and shards): threads take
    // the next seed from a counter; the failures are reported in seed order.
    std::mutex mu;
    std::atomic<std::uint64_t> next{0};
    std::uint64_t done = 0, last_seed = 0, statements = 0, acked = 0, crashes = 0, dead = 0, failovers = 0, failovers_late = 0;
    std::uint64_t splits = 0, split_ops = 0;
    std::vector<std::uint64_t> late_seeds;  // seeds with such a failover, for replays and simulator_test
    std::map<std::uint64_t, std::string> failures;
    const auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(max_time));
    auto run = [&] {
        // The deadline is checked before a seed is taken, so every taken seed is run: the seeds
        // that ran are exactly first_seed..last_seed.
        const auto out_of_time = [&] {
            return stop_requested.load() || (max_time > 0 && std::chrono::steady_clock::now() >= deadline);
        };
        for (std::uint64_t i = 0; !out_of_time() && (i = next++) < seeds;) {
            cairn::sim::sim_options o;
            o.seed = first_seed + i;
            o.steps = steps;
            o.verbose = verbose;
            o.swallow_rejections = broken;
            o.skip_mark_check = broken_marks;
            o.skip_late_check = broken_late;
            const auto r = cairn::sim::run_simulation(o);
            std::lock_guard lock(mu);
            statements += r.statements;
            acked += r.acked_ops;
            crashes += r.crashes;
            dead += r.dead_letters;
            failovers += r.failovers;
            failovers_late += r.failovers_late;
            splits += r.splits;
            split_ops += r.split_ops;
            if (r.failovers_late > 0) late_seeds.push_back(o.seed);
            if (!r.ok) failures[o.seed] = r.failure;
            ++done;
            last_seed = std::max(last_seed, o.seed);
            if (progress != 0 && done % progress == 0) {
                const auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                std::cerr << fmt::format("cairn-sim: {} of {} seeds, {} failures, {:.0f} s\n", done, seeds,
                                         failures.size(), s);
            }
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < std::min<std::uint64_t>(jobs, seeds); ++t) threads.emplace_back(run);
    run();
    for (auto& t : threads) t.join();
    std::size_t shown = 0;
    for (const auto& [seed, what] : failures) {
        if (shown++ == failures_shown_max) break;
        std::cout << fmt::format("seed {} failed: {}\n  replay: cairn-sim --seed {}{} --verbose\n", seed, what, seed,
                                 std::string(broken ? " --broken-swallow-rejections" : "") +
                                     (broken_marks ? " --broken-skip-mark-check" : "") +
                                     (broken_late ? " --broken-skip-late-check" : ""));
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (stop_requested.load()) std::cout << "cairn-sim: stopped by a signal; the summary covers the seeds that ran\n";
    std::cout << fmt::format("simulation: seeds={} failures={}\n", done, failures.size());
    std::cout << fmt::format("  seeds {}..{} ({} seeds) in {:.1f} s; {} acknowledged ops, {} shard statements, {} gateway crashes, "
                             "{} dead letters, {} shard failovers ({} to a replica that lacked an op applied late below "
                             "its mark), {} shard splits ({} ops routed to a split's new shard)\n",
                             first_seed, done == 0 ? first_seed : last_seed, done, secs, acked, statements, crashes, dead,
                             failovers, failovers_late, splits, split_ops);
    if (!late_seeds.empty()) {
        std::sort(late_seeds.begin(), late_seeds.end());
        if (late_seeds.size() > 20) late_seeds.resize(20);
        std::cout << fmt::format("  seeds with such a failover: {}\n", fmt::join(late_seeds, " "));
    }
    return failures.empty() ? 0 : 1;
}
