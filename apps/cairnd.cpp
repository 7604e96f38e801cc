// cairnd: the gateway server. Loads the config, opens the journal, starts one apply worker per
// shard and the HTTP server, and runs until SIGINT/SIGTERM (exit 0) or a sticky journal
// failure (exit 2: restart to recover; nothing acknowledged is lost).
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "core/hlc.hpp"
#include "core/log_task_end.hpp"
#include "core/metrics.hpp"
#include "core/routing.hpp"
#include "indexing/cleaner.hpp"
#include "indexing/index_registry.hpp"
#include "journal/journal.hpp"
#include "net/auth.hpp"
#include "net/gateway.hpp"
#include "net/http_server.hpp"
#include "net/io_loop.hpp"
#include "net/tls.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "net/ws_api.hpp"
#include "shards/node_lease.hpp"
#include "shards/split_driver.hpp"
#include "shards/split_follower.hpp"
#include "shards/shard_set.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

namespace {

// This machine's name, for the lease row that tells another gateway who holds a node id.
std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
    return buf;
}

namespace asio = boost::asio;
using namespace cairn;

constexpr int exit_config = 1;
constexpr int exit_journal_failed = 2;
constexpr int exit_startup = 3;
constexpr int exit_stop_deadline = 4;

// The last resort of a stop, on its own thread so that it works whatever the io threads do:
// once the drain time has passed it runs `abandon` (which ends what is still in flight), and
// once the stop timeout has passed it logs `pending()` and ends the process. Nothing that was
// acknowledged is lost by that: it is in the journal, as after kill -9.
class stop_watchdog {
public:
    stop_watchdog(std::chrono::milliseconds drain, std::chrono::milliseconds timeout, std::function<void()> abandon,
                  std::function<std::string()> pending)
        : drain_(drain), timeout_(timeout), abandon_(std::move(abandon)), pending_(std::move(pending)) {}
    ~stop_watchdog() { finished(); }

    // The stop began (any thread; once).
    void begin() {
        std::lock_guard lock(mu_);
        if (thread_.joinable() || done_) return;
        thread_ = std::thread([this] { run(); });
    }
    // The io threads have returned: the stop completed in time.
    void finished() {
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

private:
    void run() {
        const auto started = std::chrono::steady_clock::now();
        std::unique_lock lock(mu_);
        if (cv_.wait_until(lock, started + drain_, [this] { return done_; })) return;
        lock.unlock();
        spdlog::info("stop: {} ms of drain passed; closing connections and abandoning shard statements in flight "
                     "(pending: {})",
                     drain_.count(), pending_());
        abandon_();
        lock.lock();
        if (cv_.wait_until(lock, started + timeout_, [this] { return done_; })) return;
        spdlog::critical("stop: not finished after {} ms (limits.stop_timeout_ms); exiting with code {}; still "
                         "pending: {}",
                         timeout_.count(), exit_stop_deadline, pending_());
        spdlog::default_logger()->flush();
        std::_Exit(exit_stop_deadline);
    }

    const std::chrono::milliseconds drain_;
    const std::chrono::milliseconds timeout_;
    const std::function<void()> abandon_;
    const std::function<std::string()> pending_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;  // guarded by mu_
    std::thread thread_;
};

// Raises the soft limit of open files to the hard one: each connection, shard connection and the
// journal take a descriptor, and Debian's default soft limit (1,024) is below connections_max
// plus the pools, so the listener would fail accepts (EMFILE) before connections_max is reached.
// Warns when even the hard limit is too low.
void raise_open_files_limit(const core::config& cfg) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        rlimit raised = rl;
        raised.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    const std::size_t per_shard = cfg.lim.read_pool_connections + 4;  // reads, apply, cleaner, spare
    const std::size_t needed = cfg.lim.connections_max * 2 + cfg.shards.size() * per_shard + 64;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < needed) {
        spdlog::warn("open files limit is {} (hard {}); limits.connections_max = {} needs about {}: raise it "
                     "(ulimit -n, LimitNOFILE=) or accepts will fail with EMFILE",
                     rl.rlim_cur, rl.rlim_max, cfg.lim.connections_max, needed);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "cairnd: the cairn gateway. Writes are acknowledged once durable in the local LMDB journal and applied\n"
        "to the MariaDB shards in the background.\n\n"
        "Examples:\n"
        "  cairnd                           serve on 127.0.0.1:8080 with the local shards of scripts/shards\n"
        "  cairnd --config cairn.toml       serve with a config file (see docs/config.md)\n"
        "  cairnd --config cairn.toml --check-config   validate the config and exit\n\n"
        "Stop: SIGTERM or SIGINT. Requests and apply batches in flight get limits.stop_drain_ms to finish;\n"
        "what was acknowledged and not applied stays in the journal and is applied after the restart.\n\n"
        "Exit codes: 0 stopped by a signal, 1 bad config or arguments, 2 journal failure (restart to recover),\n"
        "3 could not start (journal cannot be opened, port in use), 4 the stop did not finish within\n"
        "limits.stop_timeout_ms (the log names what was pending; nothing acknowledged is lost)."};
    std::string config_path;
    bool check_only = false;
    std::optional<std::uint16_t> port_override;
    std::optional<std::string> journal_override;
    bool paused_override = false;
    app.add_option("-c,--config", config_path, "TOML config file; every key has a default")->check(CLI::ExistingFile);
    app.add_flag("--check-config", check_only, "validate the config, print it and exit");
    app.add_option("--port", port_override, "listen port (overrides listen.port)");
    app.add_option("--journal", journal_override, "journal directory (overrides journal.path)");
    app.add_flag("--apply-paused", paused_override, "start with applying paused (writes are journaled only)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help exits 0; any other argument error (a config file that does not exist, an unknown
        // option) is the documented 1, not CLI11's own codes.
        return app.exit(e) == 0 ? 0 : exit_config;
    }

    auto loaded = config_path.empty() ? core::config_result(core::default_config()) : core::load_config_file(config_path);
    if (!loaded) {
        std::cerr << "cairnd: bad config: " << loaded.error() << "\n";
        return exit_config;
    }
    core::config cfg = std::move(loaded).value();
    if (port_override) cfg.listen_port = *port_override;
    if (journal_override) cfg.journal_path = *journal_override;
    if (paused_override) cfg.apply_paused = true;
    spdlog::set_level(spdlog::level::from_str(cfg.log_level));
    if (check_only) {
        // The effective config (file, defaults and overrides), as TOML that cairnd reads back;
        // passwords and tokens redacted.
        std::cout << "# config ok: " << cfg.shards.size() << " shards, listen " << cfg.listen_address << ":"
                  << cfg.listen_port << ", journal " << cfg.journal_path << "\n"
                  << core::config_to_toml(cfg, true);
        return 0;
    }

    raise_open_files_limit(cfg);
    core::registry metrics;
    core::hlc clock(cfg.node_id);
    journal::options jopts;
    jopts.path = cfg.journal_path;
    jopts.size_bytes_max = cfg.journal_size_bytes_max;
    jopts.grow_bytes = cfg.journal_grow_bytes;
    jopts.retention = cfg.journal_retention;
    jopts.node_id = cfg.node_id;
    jopts.shard_count = static_cast<std::uint32_t>(cfg.shards.size());
    jopts.queue_ops_max = cfg.lim.journal_queue_ops_max;
    jopts.group_ops_max = cfg.lim.journal_group_ops_max;
    jopts.unapplied_ops_max = cfg.lim.journal_unapplied_ops_max;
    auto opened = journal::journal::open(jopts, clock);
    if (!opened) {
        spdlog::critical("cannot open the journal at {}: {}", cfg.journal_path, opened.error().message());
        return exit_startup;
    }
    journal::journal& jn = *opened.value();
    metrics.attach_histogram("cairn_journal_commit_seconds",
                             "From the start of a journal commit until it is durable and acknowledged (incl. its flushes)", {},
                             jn.commit_latency());
    metrics.add_callback_counter("cairn_journal_idle_syncs_total",
                                 "Flushes made only to make the last commit durable (nothing queued behind it)", {},
                                 [&jn] { return static_cast<double>(jn.idle_syncs().value()); });
    metrics.attach_histogram("cairn_journal_group_ops", "Ops committed in one journal transaction", {},
                             jn.group_ops());
    metrics.add_callback_counter("cairn_writes_accepted_total", "Ops acknowledged after the journal commit", {},
                                 [&jn] { return static_cast<double>(jn.ops_appended().value()); });
    metrics.add_callback_gauge("cairn_journal_last_seq", "Last journaled seq", {},
                               [&jn] { return static_cast<double>(jn.last_seq()); });
    metrics.add_callback_gauge("cairn_error_queue_depth", "Tasks in the error queue", {},
                               [&jn] { return static_cast<double>(jn.get_stats().error_count); });
    metrics.add_callback_gauge("cairn_dead_letters", "Dead letters kept for inspection", {},
                               [&jn] { return static_cast<double>(jn.get_stats().dead_count); });
    metrics.add_callback_gauge("cairn_journal_map_used_bytes", "Bytes used in the journal's LMDB map", {},
                               [&jn] { return static_cast<double>(jn.get_stats().map_bytes_used); });
    metrics.add_callback_gauge("cairn_journal_healthy", "1 while the journal can commit", {},
                               [&jn] { return jn.healthy() ? 1.0 : 0.0; });
    // What this gateway alone holds: were its disk lost, these ops would be lost (docs/operations.md).
    const auto min_cursor = [&jn, n = jopts.shard_count] {
        std::uint64_t m = jn.last_seq();
        for (std::uint32_t s = 0; s < n; ++s) m = std::min(m, jn.cursor(s));
        return m;
    };
    metrics.add_callback_gauge("cairn_apply_unapplied_ops",
                               "Journaled ops after the lowest shard cursor: at most this many acknowledged ops are not "
                               "yet on every shard they touch",
                               {}, [&jn, min_cursor] { return static_cast<double>(jn.last_seq() - min_cursor()); });
    metrics.add_callback_gauge(
        "cairn_apply_oldest_unapplied_age_seconds",
        "Age of the oldest journaled op after the lowest shard cursor (0 when every shard applied everything)", {},
        [&jn, min_cursor] {
            const std::uint64_t m = min_cursor();
            if (m >= jn.last_seq()) return 0.0;
            auto t = jn.read_op_time_ms(m + 1);
            const std::uint64_t now = core::system_wall_clock_ms();
            return t && now > t.value() ? static_cast<double>(now - t.value()) / 1000.0 : 0.0;
        });

    asio::io_context ioc(static_cast<int>(cfg.threads));
    // What keys route by (docs/resharding.md): the table this gateway last followed (its journal's
    // record), else version 1 of the map — the equal ranges of as many shards as the first gateway
    // listed, which shard 0's identity keeps; the config may list more (a shard added ahead of a split).
    const auto shard0 = shards::conn_params_of(cfg, 0);
    auto base_count = static_cast<std::uint32_t>(cfg.shards.size());
    if (auto b = shards::read_base_shard_count_now(shard0); !b) {
        spdlog::warn("shard 0 ({}:{}) did not say how many shards the map started with: {}; routing by the journal's "
                     "record, else by the {} [[shards]] of the config",
                     shard0.host, shard0.port, b.error().message(), cfg.shards.size());
    } else if (b.value()) {
        base_count = *b.value();
    }
    if (base_count > cfg.shards.size()) {
        spdlog::critical("cannot start: the deployment's shard map started with {} shards (shard 0's shard_identity), the "
                         "config lists {}: every gateway must list every shard, in the same order",
                         base_count, cfg.shards.size());
        return exit_startup;
    }
    auto initial = shards::split_follower::initial_table(jn, base_count);
    if (!initial) {
        spdlog::critical("cannot start: the journal's route record: {}", initial.error().message());
        return exit_startup;
    }
    if (initial.value().shards() > cfg.shards.size()) {
        spdlog::critical("cannot start: this gateway routes by {}, which needs {} shards; the config lists {}",
                         initial.value().to_text(), initial.value().shards(), cfg.shards.size());
        return exit_startup;
    }
    core::routing routing(std::move(initial).value());
    shards::shard_set shard_set(ioc.get_executor(), jn, routing, cfg, metrics);
    jn.set_commit_listener([&shard_set](std::uint64_t) { shard_set.notify_all(); });

    net::gateway gw{jn, clock, routing, shard_set, cfg.lim, metrics, &cfg.counters, &cfg.cells, &cfg.entities};
    indexing::index_registry indexes(shard_set, cfg.lim.query_timeout + cfg.lim.connect_timeout);
    gw.indexes = &indexes;
    indexing::cleaner index_cleaner(ioc.get_executor(), jn, shard_set, indexes, cfg.lim, metrics);
    gw.index_cleaner = &index_cleaner;
    gw.tokens_required = !cfg.tokens.empty();
    gw.cfg = &cfg;
    net::router router;
    net::add_api_routes(router, gw);
    net::auth auth(cfg.tokens);
    net::server_options so;
    so.address = cfg.listen_address;
    so.port = cfg.listen_port;
    if (cfg.tls.enabled()) {
        auto tls = net::make_tls_context(cfg.tls);
        if (auto* e = std::get_if<std::string>(&tls)) {
            spdlog::critical("cannot set up TLS: {}", *e);
            return exit_startup;
        }
        so.tls = std::get<0>(std::move(tls));
    }
    so.lim = cfg.lim;
    so.stop_timeout = cfg.lim.stop_drain;
    // The node id's lease on shard 0, before any client can reach this gateway: another running
    // gateway with this node id (or a journal whose op ids this one would repeat) refuses the start;
    // an unreachable shard 0 does not (the keeper below claims it when it answers).
    shards::lease_claim claim;
    claim.node_id = cfg.node_id;
    claim.journal_id = jn.journal_id();
    claim.holder = fmt::format("{}:{} (pid {})", host_name(), cfg.listen_port, ::getpid());
    claim.last_seq = jn.last_seq();
    claim.ttl = cfg.lim.node_lease_ttl;
    claim.reuse_after = cfg.counters.op_ids_keep;
    bool lease_held = false;
    const auto config_shards = static_cast<std::uint32_t>(cfg.shards.size());
    std::string not_shard0;
    if (auto v = shards::claim_lease_now(shard0, config_shards, claim, &not_shard0); !v) {
        spdlog::warn("node id {}: shard 0 ({}:{}) did not answer the lease claim: {}; starting anyway and claiming it "
                     "when shard 0 answers",
                     cfg.node_id, shard0.host, shard0.port, not_shard0.empty() ? v.error().message() : not_shard0);
    } else if (!v.value().held) {
        spdlog::critical("cannot start: {}", v.value().refusal);
        return exit_startup;
    } else {
        lease_held = true;
        spdlog::info("node id {}: lease on shard 0 held (journal {:016x})", cfg.node_id, claim.journal_id);
    }

    net::http_server server(ioc, so, router, auth, metrics);
    if (auto r = server.listen(); !r) {
        spdlog::critical("cannot listen on {}:{}: {}", cfg.listen_address, cfg.listen_port, r.error().message());
        return exit_startup;
    }
    server.set_upgrade_handler(net::make_ws_handler(router, cfg.lim, metrics));
    // The lease row names the port really bound (listen.port 0 picks one); the keeper's first renewal writes it.
    claim.holder = fmt::format("{}:{} (pid {})", host_name(), server.port(), ::getpid());
    // The workers apply nothing until the follower has read the shards' map once: the journal's route
    // record may predate a split that ran while this gateway was down, and ops applied by it would land
    // on the wrong shard. A shard 0 that stays silent for 10 s releases them with a warning (the map
    // fence, apply_worker::async_check_fence, still keeps them off the shards a split moved rows from).
    shard_set.hold_all_for_routing(true);
    shard_set.start_all();
    // Follows the shard map's versions on shard 0 (splits) every second.
    const auto node32 = static_cast<std::uint32_t>(cfg.node_id);  // the config allows 0..1023
    shards::split_follower follower(ioc.get_executor(), shard_set, jn, routing, node32, std::chrono::seconds(1));
    follower.start([&shard_set, &routing](bool followed) {
        if (followed) {
            spdlog::info("routing: map version {} read from shard 0; applying", routing.load()->version());
        } else {
            spdlog::warn("routing: shard 0 did not answer for 10 s; applying by the journal's route record (map version {}) "
                         "until it does (if a split ran while this gateway was down, its two shards apply nothing from it "
                         "meanwhile: their identity rows name a newer map version)",
                         routing.load()->version());
        }
        shard_set.hold_all_for_routing(false);
    });
    // Moves a split an operator started from state to state (the live gateway with the lowest node id acts).
    shards::split_driver_options split_opts;
    split_opts.copy_rows_per_second_max = static_cast<double>(cfg.lim.split_copy_rows_per_second_max);
    shards::split_driver driver(ioc.get_executor(), shard_set, cfg, node32, split_opts);
    driver.start();
    // On a strand: a refresh fans out one task per shard, and those share its state without locks
    // (shard_set::async_fan_out); on the bare io_context they would run on several threads at once.
    // Its stop() is posted there too, so that it cannot fall between the loop's check and its wait.
    const auto refresh_strand = asio::make_strand(ioc);
    asio::co_spawn(refresh_strand, indexes.async_refresh_loop(std::chrono::seconds(2)),
                   core::log_task_end("index_refresh"));
    server.start();
    spdlog::info("cairnd listening on {}:{}{} with {} shards, journal {} (last seq {})", cfg.listen_address,
                 server.port(), cfg.tls.enabled() ? " (TLS)" : "", cfg.shards.size(), cfg.journal_path, jn.last_seq());

    // Shutdown: on a signal (exit 0) or a sticky journal failure (exit 2). Everything here runs on
    // one strand, so the health check cannot re-arm itself after the stop. The stop ends every
    // long-lived operation: the server stops accepting and closes idle connections (WebSocket
    // clients get a close frame), the workers, the cleaner and the index refresh end at their next
    // step, reads waiting on after= are woken, idle shard connections are closed; requests and
    // batches in flight get limits.stop_drain, then the watchdog closes the rest and aborts shard
    // statements still running. The io_context then runs out of work and main returns.
    std::atomic<int> exit_code{0};
    auto work = asio::make_work_guard(ioc);
    const auto control = asio::make_strand(ioc);
    asio::signal_set signals(control, SIGINT, SIGTERM);
    asio::steady_timer health(control);
    const auto stop_started = std::make_shared<std::atomic<std::int64_t>>(0);
    stop_watchdog watchdog(
        cfg.lim.stop_drain, cfg.lim.stop_timeout,
        [&] { shard_set.abort_all(); },
        [&] {
            return fmt::format("tasks: {}; connections: {}; shard connections in use (apply/read): {}",
                               core::describe_live_tasks(), server.connections(), shard_set.busy());
        });
    std::function<void(int)> shutdown_on_control;
    std::atomic<bool> lease_lost{false};
    shards::node_lease_keeper lease_keeper(
        ioc.get_executor(), shard_set, jn, claim, lease_held,
        [&](const std::string& reason) {
            lease_lost = true;
            spdlog::critical("stopping: {}", reason);
            asio::post(control, [&] { shutdown_on_control(exit_startup); });
        },
        metrics);
    auto shutdown = [&](int code) {  // On `control`.
        if (exit_code.load() != 0) return;
        exit_code = code == 0 ? -1 : code;
        stop_started->store(std::chrono::steady_clock::now().time_since_epoch().count());
        spdlog::info("cairnd shutting down (drain {} ms, timeout {} ms)", cfg.lim.stop_drain.count(),
                     cfg.lim.stop_timeout.count());
        signals.cancel();
        health.cancel();
        server.stop();
        asio::post(refresh_strand, [&indexes] { indexes.stop(); });
        index_cleaner.stop();
        lease_keeper.stop();
        follower.stop();
        driver.stop();
        shard_set.stop_all();
        work.reset();
        watchdog.begin();
    };
    shutdown_on_control = shutdown;
    lease_keeper.start();
    signals.async_wait([&](const core::error_code& ec, int) {
        if (!ec) shutdown(0);
    });
    std::function<void(const core::error_code&)> check_health = [&](const core::error_code& ec) {
        if (ec || exit_code.load() != 0) return;
        if (!jn.healthy()) {
            spdlog::critical("the journal failed and refuses writes; exiting so that a restart recovers it");
            shutdown(exit_journal_failed);
            return;
        }
        health.expires_after(std::chrono::milliseconds(200));
        health.async_wait(check_health);
    };
    asio::post(control, [&] { check_health({}); });

    std::vector<std::thread> threads;
    // The I/O threads poll through the short gaps between events (listen.spin_us, net/io_loop.hpp).
    net::io_loop_shared io_loop;
    const auto run_io = [&ioc, &io_loop, spin = cfg.io_spin] { net::run_io_loop(ioc, spin, io_loop); };
    for (std::uint32_t i = 1; i < cfg.threads; ++i) threads.emplace_back(run_io);
    run_io();
    for (auto& t : threads) t.join();
    watchdog.finished();
    const auto stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::duration(std::chrono::steady_clock::now().time_since_epoch().count() -
                                            stop_started->load()));
    // The writer thread must not reach the workers any more; then it is joined (the journal closed)
    // now, while the io_context lives: a completion callback it still holds may own a copy of a
    // strand, whose destructor uses the io_context's strand service. Nothing below uses the journal.
    jn.set_commit_listener({});
    claim.last_seq = jn.last_seq();
    opened.value().reset();
    if (lease_keeper.held() && !lease_lost) {
        // Released, not deleted: this journal keeps the node id (and takes it back when it restarts).
        if (auto r = shards::release_lease_now(shard0, config_shards, claim); !r) {
            spdlog::warn("node id {}: releasing the lease failed: {} (it lapses in {} s)", cfg.node_id, r.error().message(),
                         claim.ttl.count());
        }
    }
    spdlog::info("cairnd stopped in {} ms", stop_ms.count());
    const int code = exit_code.load();
    return code < 0 ? 0 : code;
}
