#include "apps/bench/load.hpp"

#include "core/log_task_end.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace cairn::bench {
namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

struct worker_stats {
    histogram latency;
    std::uint64_t ops = 0;
    std::uint64_t errors = 0;
    std::string first_error;
};

struct shared_state {
    clock_type::time_point start;
    clock_type::time_point record_from;
    clock_type::time_point end;
    double rate = 0;
    std::atomic<std::uint64_t> next{0};  // open loop: the next request's index
};

std::uint64_t ns_between(clock_type::time_point a, clock_type::time_point b) {
    return b <= a ? 0 : static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

asio::awaitable<void> async_closed_loop(worker& w, worker_stats& st, const shared_state& s) {
    for (std::uint64_t k = 0;; ++k) {
        const auto sent = clock_type::now();
        if (sent >= s.end) co_return;
        auto r = co_await w.async_op(k);
        const auto done = clock_type::now();
        if (sent < s.record_from) continue;
        if (r) {
            ++st.ops;
            st.latency.record(ns_between(sent, done));
        } else {
            ++st.errors;
            if (st.first_error.empty()) st.first_error = r.error().message();
        }
    }
}

asio::awaitable<void> async_open_loop(worker& w, worker_stats& st, shared_state& s) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto interval = std::chrono::duration<double>(1.0 / s.rate);
    for (;;) {
        const std::uint64_t k = s.next.fetch_add(1);
        const auto intended =
            s.start + std::chrono::duration_cast<clock_type::duration>(interval * static_cast<double>(k));
        if (intended >= s.end) co_return;
        if (clock_type::now() < intended) {
            timer.expires_at(intended);
            core::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        auto r = co_await w.async_op(k);
        const auto done = clock_type::now();
        if (intended < s.record_from) continue;
        if (r) {
            ++st.ops;
            st.latency.record(ns_between(intended, done));
        } else {
            ++st.errors;
            if (st.first_error.empty()) st.first_error = r.error().message();
        }
    }
}

void run_threads(asio::io_context& ioc, std::uint32_t threads) {
    std::vector<std::thread> pool;
    for (std::uint32_t i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
    ioc.run();
    for (auto& t : pool) t.join();
    ioc.restart();
}

}  // namespace

core::result<void> run_load(asio::io_context& ioc, const load_options& opts, const worker_factory& make,
                            run_report& r) {
    const std::uint32_t threads = std::max<std::uint32_t>(1, opts.threads);
    std::vector<std::unique_ptr<worker>> workers;
    std::vector<worker_stats> stats(opts.concurrency);
    for (std::uint32_t i = 0; i < opts.concurrency; ++i) workers.push_back(make(ioc.get_executor(), i));

    // Phase 1: every worker connects, so that connecting is not measured.
    std::mutex mu;
    core::error_code setup_error;
    for (auto& w : workers) {
        asio::co_spawn(
            ioc,
            [&w, &mu, &setup_error]() -> asio::awaitable<void> {
                auto s = co_await w->async_setup();
                if (!s) {
                    std::lock_guard lock(mu);
                    if (!setup_error) setup_error = s.error();
                }
            },
            core::log_task_end{"bench-setup"});
    }
    run_threads(ioc, threads);

    r.mode = opts.rate > 0 ? "open" : "closed";
    r.concurrency = opts.concurrency;
    r.rate_target = opts.rate;
    r.warmup_s = opts.warmup.count();
    r.duration_s = opts.duration.count();
    if (setup_error) {
        r.status = run_status::failed;
        r.note = "setup failed: " + setup_error.message();
        return setup_error;
    }

    // Phase 2: the load.
    shared_state s;
    s.start = clock_type::now();
    s.record_from = s.start + std::chrono::duration_cast<clock_type::duration>(opts.warmup);
    s.end = s.record_from + std::chrono::duration_cast<clock_type::duration>(opts.duration);
    s.rate = opts.rate;
    for (std::uint32_t i = 0; i < opts.concurrency; ++i) {
        worker& w = *workers[i];
        worker_stats& st = stats[i];
        if (opts.rate > 0) {
            asio::co_spawn(ioc, async_open_loop(w, st, s), core::log_task_end{"bench-open-loop"});
        } else {
            asio::co_spawn(ioc, async_closed_loop(w, st, s), core::log_task_end{"bench-closed-loop"});
        }
    }
    run_threads(ioc, threads);
    workers.clear();  // Close the connections before the io_context goes.

    for (const auto& st : stats) {
        r.latency_ns.merge(st.latency);
        r.ops += st.ops;
        r.errors += st.errors;
        if (r.first_error.empty()) r.first_error = st.first_error;
    }
    finish_throughput(r);
    return core::success();
}

}  // namespace cairn::bench
