#include "apps/bench/scenarios.hpp"

#include "apps/bench/cairnd_runner.hpp"
#include "apps/bench/edge_sql.hpp"
#include "apps/bench/hostile.hpp"
#include "apps/bench/http_conn.hpp"
#include "apps/bench/sustained.hpp"
#include "apps/bench/ws_conn.hpp"
#include "core/log_task_end.hpp"
#include "core/page_cursor.hpp"
#include "core/shard_map.hpp"
#include "shards/edge_store.hpp"
#include "shards/gateways.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/pool.hpp"
#include "shards/range_copy.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

namespace cairn::bench {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr std::uint64_t get_destination_offset = 1'000'000'000'000;  // get: destination = source + this
constexpr std::uint64_t page_destination_offset = 2'000'000'000'000;
constexpr std::uint64_t count_destination_offset = 3'000'000'000'000;
constexpr std::size_t page_limit = 100;
constexpr std::size_t drain_batch_edges = 1000;                       // = cairn's apply.batch_ops_max default

std::uint64_t splitmix(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t wall_ms() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::atomic<std::uint64_t> ts_counter{0};

core::error_code error_of_status(unsigned status) {
    if (status == 503 || status == 429) return core::errc::overloaded;
    if (status == 404) return core::errc::not_found;
    if (status == 401) return core::errc::unauthorized;
    if (status == 403) return core::errc::forbidden;
    if (status >= 400 && status < 500) return core::errc::bad_request;
    return core::errc::shard_unavailable;
}

run_report base_report(const bench_config& cfg) {
    run_report r;
    r.scenario = cfg.scenario;
    r.target = cfg.target;
    r.concurrency = cfg.load.concurrency;
    return r;
}

// The report of a scenario that runs once (drain, feed, restart, split_copy): what it counts, how
// many connections it uses, and the size of the work it was given (extra[backlog_name]).
run_report once_report(const bench_config& cfg, std::string unit, std::uint32_t concurrency, const char* backlog_name) {
    run_report r = base_report(cfg);
    r.mode = "once";
    r.unit = std::move(unit);
    r.concurrency = concurrency;
    r.extra[backlog_name] = static_cast<double>(cfg.backlog);
    return r;
}

run_report scenario_failed(run_report r, std::string why) {
    r.status = run_status::failed;
    r.note = std::move(why);
    return r;
}

run_report not_measurable(const bench_config& cfg, std::string why) {
    run_report r = base_report(cfg);
    r.mode = "none";
    r.status = run_status::not_measurable;
    r.note = std::move(why);
    return r;
}

std::string run_nonce() {
    return fmt::format("{:x}", wall_ms() % 0xffffffffULL);
}

// ---- shared direct plumbing ----------------------------------------------------------------------

// How cairn-bench connects to shard `shard` of cfg.shards, in database `database`.
shards::conn_params bench_conn_params(const bench_config& cfg, std::size_t shard, std::string database,
                                      std::chrono::milliseconds query_timeout) {
    shards::conn_params p;
    p.host = cfg.shards[shard].host;
    p.port = cfg.shards[shard].port;
    p.user = cfg.user;
    p.password = cfg.password;
    p.database = std::move(database);
    p.connect_timeout = 5s;
    p.query_timeout = query_timeout;
    return p;
}

struct shard_pools {
    core::shard_map map;
    std::vector<std::unique_ptr<shards::pool>> pools;

    shard_pools(asio::any_io_executor ex, const bench_config& cfg, std::size_t per_shard)
        : map(core::shard_map::equal_ranges(static_cast<std::uint32_t>(cfg.shards.size()))) {
        for (std::size_t s = 0; s < cfg.shards.size(); ++s) {
            pools.push_back(std::make_unique<shards::pool>(ex, bench_conn_params(cfg, s, cfg.database, 60s), per_shard, 30s));
        }
    }
};

// One connection to each shard, held for the whole run (as a client without cairn would).
class shard_leases {
public:
    explicit shard_leases(shard_pools& p) : pools_(p), leases_(p.pools.size()) {}

    asio::awaitable<core::result<void>> async_acquire_all() {
        for (std::size_t i = 0; i < leases_.size(); ++i) {
            auto r = co_await async_conn(static_cast<core::shard_index>(i));
            if (!r) co_return r.error();
        }
        co_return core::success();
    }

    // The connection to shard i, reconnecting if the last one failed.
    asio::awaitable<core::result<shards::mariadb_conn*>> async_conn(core::shard_index i) {
        auto& l = leases_.at(i);
        if (l && l->is_open()) co_return &*l;
        l.reset();
        auto got = co_await pools_.pools.at(i)->async_acquire();
        if (!got) co_return got.error();
        l = std::move(got).value();
        co_return &*l;
    }

private:
    shard_pools& pools_;
    std::vector<shards::lease> leases_;
};

asio::awaitable<core::result<void>> async_ensure_schema(shard_pools& p) {
    for (auto& pool : p.pools) {
        auto l = co_await pool->async_acquire();
        if (!l) co_return l.error();
        auto r = co_await shards::async_create_edge_schema(*l.value());
        if (!r) co_return r.error();
    }
    co_return core::success();
}

// Writes edges (source_of(i) -> destination_of(i), i in [0, n)) with batched upserts, one
// coroutine per shard, each sending batch_edges edges' rows per statement. Returns when done.
template <class Source, class Destination>
asio::awaitable<core::result<void>> async_upsert_edges(shard_pools& p, std::string graph, std::uint64_t n,
                                                       std::size_t batch_edges, Source source_of,
                                                       Destination destination_of, std::uint64_t ts) {
    const auto shard_count = static_cast<core::shard_index>(p.pools.size());
    // Build the statements first: the measured part is sending them (cairn's apply folds and
    // formats inside its measured time too, so this favours direct slightly).
    std::vector<std::vector<std::string>> statements(shard_count);
    for (std::uint64_t start = 0; start < n; start += batch_edges) {
        std::vector<std::vector<direct_row>> rows(shard_count);
        const std::uint64_t stop = std::min<std::uint64_t>(n, start + batch_edges);
        for (std::uint64_t i = start; i < stop; ++i) {
            const auto s = static_cast<std::int64_t>(source_of(i));
            const auto d = static_cast<std::int64_t>(destination_of(i));
            for (auto& [shard, row] : direct_rows_of(p.map, s, d, static_cast<std::int64_t>(ts >> 22), ts)) {
                rows[shard].push_back(row);
            }
        }
        for (core::shard_index sh = 0; sh < shard_count; ++sh) {
            if (!rows[sh].empty()) statements[sh].push_back(direct_upsert_sql(graph, rows[sh]));
        }
    }
    auto ex = co_await asio::this_coro::executor;
    std::atomic<std::size_t> pending{shard_count};
    core::error_code first_error;
    asio::steady_timer done(ex, clock_type::time_point::max());
    for (core::shard_index sh = 0; sh < shard_count; ++sh) {
        asio::co_spawn(
            ex,
            [&, sh]() -> asio::awaitable<void> {
                auto l = co_await p.pools[sh]->async_acquire();
                if (!l) {
                    first_error = l.error();
                } else {
                    for (const auto& sql : statements[sh]) {
                        auto r = co_await l.value()->async_execute(sql);
                        if (!r) {
                            first_error = r.error();
                            break;
                        }
                    }
                }
                if (--pending == 0) done.cancel();
            },
            core::log_task_end{"bench-upsert"});
    }
    // The io_context is single-threaded here: the shard coroutines start only after this wait.
    core::error_code ec;
    if (pending > 0) co_await done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (first_error) co_return first_error;
    co_return core::success();
}

// ---- write -----------------------------------------------------------------------------------------

// The body of one write request: cfg.batch random edges (one object, or {"edges": [...]}).
void random_edge_writes(const bench_config& cfg, std::uint64_t& rng, std::string& body) {
    body.clear();
    if (cfg.batch > 1) body += R"({"edges":[)";
    for (std::uint32_t i = 0; i < cfg.batch; ++i) {
        const auto s = splitmix(rng) % cfg.key_space + 1;
        const auto d = splitmix(rng) % cfg.key_space + 1;
        fmt::format_to(std::back_inserter(body), R"({}{{"source_id":{},"destination_id":{}}})", i ? "," : "", s, d);
    }
    if (cfg.batch > 1) body += "]}";
}

class http_write_worker final : public worker {
public:
    http_write_worker(asio::any_io_executor ex, const bench_config& cfg, std::uint32_t index)
        : conn_(ex, cfg.host, cfg.port), cfg_(cfg), rng_(cfg.seed * 1000003 + index) {
        target_ = fmt::format("/v1/graphs/{}/edges", cfg.graph.empty() ? "bench" : cfg.graph);
    }
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_.async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        random_edge_writes(cfg_, rng_, body_);
        auto r = co_await conn_.async_request(http::verb::post, target_, body_);
        if (!r) co_return r.error();
        if (r.value().status_code != 202) co_return error_of_status(r.value().status_code);
        co_return core::success();
    }

private:
    http_conn conn_;
    const bench_config& cfg_;
    std::uint64_t rng_;
    std::string target_;
    std::string body_;
};

// WebSocket: workers share connections, cfg.ws_pipeline of them per connection, so that each
// connection has that many requests in flight (one per worker) on one socket. The workers own
// the connections (the registry keeps weak references), so a connection ends with its last
// worker, inside the load, while its io_context is alive.
class ws_conns {
public:
    explicit ws_conns(const bench_config& cfg) : cfg_(cfg) {}
    std::shared_ptr<ws_conn> get(asio::any_io_executor ex, std::uint32_t worker_index) {
        std::lock_guard lock(mu_);
        const std::size_t c = worker_index / std::max<std::uint32_t>(1, cfg_.ws_pipeline);
        if (conns_.size() <= c) conns_.resize(c + 1);
        auto conn = conns_[c].lock();
        if (!conn) {
            conn = std::make_shared<ws_conn>(std::move(ex), cfg_.host, cfg_.port);
            conns_[c] = conn;
        }
        return conn;
    }

private:
    const bench_config& cfg_;
    std::mutex mu_;
    std::vector<std::weak_ptr<ws_conn>> conns_;
};

class ws_write_worker final : public worker {
public:
    ws_write_worker(std::shared_ptr<ws_conn> c, const bench_config& cfg, std::uint32_t index)
        : conn_(std::move(c)), cfg_(cfg), rng_(cfg.seed * 1000003 + index) {
        path_ = fmt::format("/v1/graphs/{}/edges", cfg.graph.empty() ? "bench" : cfg.graph);
    }
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_->async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        random_edge_writes(cfg_, rng_, body_);
        auto r = co_await conn_->async_call("POST", path_, body_);
        if (!r) co_return r.error();
        if (r.value() != 202) co_return error_of_status(r.value());
        co_return core::success();
    }

private:
    std::shared_ptr<ws_conn> conn_;
    const bench_config& cfg_;
    std::uint64_t rng_;
    std::string path_;
    std::string body_;
};

class direct_write_worker final : public worker {
public:
    direct_write_worker(shard_pools& p, const bench_config& cfg, std::uint32_t index)
        : pools_(p), leases_(p), cfg_(cfg), rng_(cfg.seed * 1000003 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await leases_.async_acquire_all(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        // Each edge is two rows, forward and backward, each one autocommit upsert on its shard:
        // the same rows cairn writes, with the same durability (one commit each).
        const std::string graph = cfg_.graph.empty() ? std::string("bench") : cfg_.graph;
        std::vector<std::vector<direct_row>> rows(pools_.pools.size());
        for (std::uint32_t i = 0; i < cfg_.batch; ++i) {
            const auto s = static_cast<std::int64_t>(splitmix(rng_) % cfg_.key_space + 1);
            const auto d = static_cast<std::int64_t>(splitmix(rng_) % cfg_.key_space + 1);
            const auto now = wall_ms();
            const auto ts = direct_ts(now, ts_counter.fetch_add(1));
            for (auto& [shard, row] : direct_rows_of(pools_.map, s, d, static_cast<std::int64_t>(now), ts)) {
                rows[shard].push_back(row);
            }
        }
        for (core::shard_index sh = 0; sh < rows.size(); ++sh) {
            if (rows[sh].empty()) continue;
            // One statement per row when batch is 1 (single-row autocommit); else one per shard.
            if (cfg_.batch == 1) {
                for (const auto& row : rows[sh]) {
                    const std::string sql = direct_upsert_sql(graph, {row});
                    auto c = co_await leases_.async_conn(sh);
                    if (!c) co_return c.error();
                    auto r = co_await c.value()->async_execute(sql);
                    if (!r) co_return r.error();
                }
            } else {
                const std::string sql = direct_upsert_sql(graph, rows[sh]);
                auto c = co_await leases_.async_conn(sh);
                if (!c) co_return c.error();
                auto r = co_await c.value()->async_execute(sql);
                if (!r) co_return r.error();
            }
        }
        co_return core::success();
    }

private:
    shard_pools& pools_;
    shard_leases leases_;
    const bench_config& cfg_;
    std::uint64_t rng_;
};

run_report run_load_scenario(const bench_config& cfg, bool needs_schema, std::function<std::unique_ptr<worker>(
                                                                             asio::any_io_executor, shard_pools*, std::uint32_t)> make) {
    run_report r = base_report(cfg);
    asio::io_context ioc(static_cast<int>(std::max<std::uint32_t>(1, cfg.load.threads)));
    std::unique_ptr<shard_pools> pools;
    if (!cfg.shards.empty()) pools = std::make_unique<shard_pools>(ioc.get_executor(), cfg, cfg.load.concurrency + 1);
    if (needs_schema) {
        if (!pools) return scenario_failed(r, "needs --shards");
        core::result<void> s = core::errc::timeout;
        asio::co_spawn(
            ioc, [&]() -> asio::awaitable<void> { s = co_await async_ensure_schema(*pools); },
            core::log_task_end{"bench-schema"});
        ioc.run();
        ioc.restart();
        if (!s) return scenario_failed(r, "cannot create the edge schema on the shards: " + s.error().message());
    }
    auto lr = run_load(ioc, cfg.load,
                       [&](asio::any_io_executor ex, std::uint32_t i) { return make(std::move(ex), pools.get(), i); }, r);
    if (!lr) return r;
    if (r.ops == 0) return scenario_failed(r, "no operation succeeded: " + r.first_error);
    return r;
}

run_report run_write(const bench_config& cfg) {
    if (cfg.target == "cairn-ws") {
        ws_conns conns(cfg);
        auto r = run_load_scenario(cfg, false, [&](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<ws_write_worker>(conns.get(ex, i), cfg, i);
        });
        if (r.status == run_status::ok) {
            r.note = fmt::format("POST .../edges over /v1/ws, {} requests in flight per connection", cfg.ws_pipeline);
        }
        r.extra["edges_per_request"] = cfg.batch;
        r.extra["ws_pipeline"] = cfg.ws_pipeline;
        return r;
    }
    if (cfg.target == "cairn-http") {
        auto r = run_load_scenario(cfg, false, [&cfg](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<http_write_worker>(std::move(ex), cfg, i);
        });
        if (r.status == run_status::ok) r.note = "POST /v1/graphs/{graph}/edges, ack after the journal commit";
        r.extra["edges_per_request"] = cfg.batch;
        return r;
    }
    if (cfg.shards.empty()) return scenario_failed(base_report(cfg), "--target direct needs --shards");
    auto r = run_load_scenario(cfg, true, [&cfg](asio::any_io_executor, shard_pools* p, std::uint32_t i) {
        return std::make_unique<direct_write_worker>(*p, cfg, i);
    });
    if (r.status == run_status::ok) r.note = cfg.batch == 1 ? "two single-row autocommit upserts with the last-writer-wins guard per edge "
                              "(forward and backward row)"
                            : "one multi-row autocommit upsert per shard per request";
    r.extra["edges_per_request"] = cfg.batch;
    return r;
}

// ---- get -------------------------------------------------------------------------------------------

class http_get_worker final : public worker {
public:
    http_get_worker(asio::any_io_executor ex, const bench_config& cfg, std::string graph, std::uint32_t index)
        : conn_(ex, cfg.host, cfg.port), cfg_(cfg), graph_(std::move(graph)), rng_(cfg.seed * 7919 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_.async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        const auto s = splitmix(rng_) % cfg_.preload + 1;
        target_.clear();
        fmt::format_to(std::back_inserter(target_), "/v1/graphs/{}/edges/{}/{}", graph_, s, s + get_destination_offset);
        auto r = co_await conn_.async_request(http::verb::get, target_);
        if (!r) co_return r.error();
        if (r.value().status_code != 200) co_return error_of_status(r.value().status_code);
        co_return core::success();
    }

private:
    http_conn conn_;
    const bench_config& cfg_;
    std::string graph_;
    std::uint64_t rng_;
    std::string target_;
};

class ws_get_worker final : public worker {
public:
    ws_get_worker(std::shared_ptr<ws_conn> c, const bench_config& cfg, std::string graph, std::uint32_t index)
        : conn_(std::move(c)), cfg_(cfg), graph_(std::move(graph)), rng_(cfg.seed * 7919 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_->async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        const auto s = splitmix(rng_) % cfg_.preload + 1;
        path_.clear();
        fmt::format_to(std::back_inserter(path_), "/v1/graphs/{}/edges/{}/{}", graph_, s, s + get_destination_offset);
        auto r = co_await conn_->async_call("GET", path_);
        if (!r) co_return r.error();
        if (r.value() != 200) co_return error_of_status(r.value());
        co_return core::success();
    }

private:
    std::shared_ptr<ws_conn> conn_;
    const bench_config& cfg_;
    std::string graph_;
    std::uint64_t rng_;
    std::string path_;
};

constexpr std::string_view direct_get_sql =
    "SELECT graph, node_id, direction, other_id, state, position, ts, pos_ts, pos_set FROM edges "
    "WHERE graph = ? AND node_id = ? AND direction = 0 AND other_id = ?";

class direct_get_worker final : public worker {
public:
    direct_get_worker(shard_pools& p, const bench_config& cfg, std::string graph, std::uint32_t index)
        : pools_(p), leases_(p), cfg_(cfg), graph_(std::move(graph)), rng_(cfg.seed * 7919 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await leases_.async_acquire_all(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        // Issue 3's baseline: a prepared SELECT of the edge's row by primary key, binary protocol
        // (prepared once per connection), the same columns cairn reads.
        const auto s = static_cast<std::int64_t>(splitmix(rng_) % cfg_.preload + 1);
        const auto d = s + static_cast<std::int64_t>(get_destination_offset);
        auto c = co_await leases_.async_conn(pools_.map.shard_of_id(s));
        if (!c) co_return c.error();
        const std::array<shards::sql_param, 3> params{std::string_view(graph_), s, d};
        auto r = co_await c.value()->async_query_prepared(direct_get_sql, params);
        if (!r) co_return r.error();
        if (r.value().size() != 1) co_return core::errc::not_found;
        co_return core::success();
    }

private:
    shard_pools& pools_;
    shard_leases leases_;
    const bench_config& cfg_;
    std::string graph_;
    std::uint64_t rng_;
};

run_report run_get(const bench_config& cfg) {
    if (cfg.shards.empty()) return scenario_failed(base_report(cfg), "get needs --shards (to preload the edges it reads)");
    if (cfg.preload == 0) return scenario_failed(base_report(cfg), "get needs --preload > 0");
    const std::string graph = cfg.graph.empty() ? "bench_get" : cfg.graph;
    {
        // Preload straight into the shards (idempotent: the same rows and ts every time).
        asio::io_context ioc;
        shard_pools p(ioc.get_executor(), cfg, 2);
        core::result<void> s = core::errc::timeout;
        asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<void> {
                auto schema = co_await async_ensure_schema(p);
                if (!schema) {
                    s = schema;
                    co_return;
                }
                s = co_await async_upsert_edges(
                    p, graph, cfg.preload, drain_batch_edges, [](std::uint64_t i) { return i + 1; },
                    [](std::uint64_t i) { return i + 1 + get_destination_offset; }, direct_ts(1, 0));
            },
            core::log_task_end{"bench-preload"});
        ioc.run();
        if (!s) return scenario_failed(base_report(cfg), "preloading the edges failed: " + s.error().message());
    }
    if (cfg.target == "cairn-ws") {
        ws_conns conns(cfg);
        auto r = run_load_scenario(cfg, false, [&](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<ws_get_worker>(conns.get(ex, i), cfg, graph, i);
        });
        if (r.status == run_status::ok) {
            r.note = fmt::format("GET .../edges/{{source}}/{{destination}} over /v1/ws, {} in flight per connection",
                                 cfg.ws_pipeline);
        }
        r.extra["preloaded_edges"] = static_cast<double>(cfg.preload);
        r.extra["ws_pipeline"] = cfg.ws_pipeline;
        return r;
    }
    if (cfg.target == "cairn-http") {
        auto r = run_load_scenario(cfg, false, [&cfg, &graph](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<http_get_worker>(std::move(ex), cfg, graph, i);
        });
        if (r.status == run_status::ok) r.note = "GET /v1/graphs/{graph}/edges/{source}/{destination}";
        r.extra["preloaded_edges"] = static_cast<double>(cfg.preload);
        return r;
    }
    auto r = run_load_scenario(cfg, false, [&cfg, &graph](asio::any_io_executor, shard_pools* p, std::uint32_t i) {
        return std::make_unique<direct_get_worker>(*p, cfg, graph, i);
    });
    if (r.status == run_status::ok) r.note = "prepared point SELECT by primary key (binary protocol, prepared once per connection)";
    r.extra["preloaded_edges"] = static_cast<double>(cfg.preload);
    return r;
}

// ---- page and count ------------------------------------------------------------------------------

// Runs one preload (schema, then fill) on a private io_context; an error message or "".
template <class Fill>
std::string preload_with(const bench_config& cfg, Fill fill) {
    asio::io_context ioc;
    shard_pools p(ioc.get_executor(), cfg, 2);
    core::result<void> s = core::errc::timeout;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto schema = co_await async_ensure_schema(p);
            if (!schema) {
                s = schema;
                co_return;
            }
            s = co_await fill(p);
        },
        core::log_task_end{"bench-preload"});
    ioc.run();
    return s ? std::string{} : s.error().message();
}

std::uint64_t page_node_edges(const bench_config& cfg) { return cfg.node_edges ? cfg.node_edges : 1000; }
std::uint64_t page_nodes(const bench_config& cfg) {
    return std::max<std::uint64_t>(1, cfg.preload / page_node_edges(cfg));
}

// How a read worker reaches cairn: one keep-alive HTTP connection, or a shared pipelined
// WebSocket connection. Both answer a GET with its status and a text holding the JSON body.
class http_transport {
public:
    http_transport(asio::any_io_executor ex, const bench_config& cfg) : conn_(std::move(ex), cfg.host, cfg.port) {}
    asio::awaitable<core::result<void>> async_connect() { co_return co_await conn_.async_connect(); }
    asio::awaitable<core::result<http_result>> async_fetch(std::string_view target) {
        co_return co_await conn_.async_request(http::verb::get, target);
    }

private:
    http_conn conn_;
};

class ws_transport {
public:
    explicit ws_transport(std::shared_ptr<ws_conn> c) : conn_(std::move(c)) {}
    asio::awaitable<core::result<void>> async_connect() { co_return co_await conn_->async_connect(); }
    asio::awaitable<core::result<http_result>> async_fetch(std::string_view target) {
        auto r = co_await conn_->async_get(target);
        if (!r) co_return r.error();
        http_result out;  // the answer frame holds the body
        out.status_code = r.value().first;
        out.body = std::move(r.value().second);
        co_return out;
    }

private:
    std::shared_ptr<ws_conn> conn_;
};

template <class Transport>
class page_worker final : public worker {
public:
    page_worker(Transport t, const bench_config& cfg, std::string graph, std::uint32_t index)
        : conn_(std::move(t)), cfg_(cfg), graph_(std::move(graph)), rng_(cfg.seed * 104729 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_.async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        // Walk a node's list page by page with the cursors cairn hands out; at the end, another node.
        if (cursor_.empty()) node_ = splitmix(rng_) % page_nodes(cfg_) + 1;
        target_.clear();
        fmt::format_to(std::back_inserter(target_), "/v1/graphs/{}/nodes/{}/edges?limit={}", graph_, node_, page_limit);
        if (!cursor_.empty()) target_ += "&cursor=" + cursor_;
        auto r = co_await conn_.async_fetch(target_);
        cursor_.clear();
        if (!r) co_return r.error();
        if (r.value().status_code != 200) co_return error_of_status(r.value().status_code);
        const std::string_view body = r.value().body;
        // The cursors follow the edges in cairn's page (net/edge_read_routes.cpp): looked for from the
        // end, so that the load generator does not scan 10 KB of edges per page on the box it shares.
        constexpr std::string_view key = R"("next_cursor":")";
        if (auto at = body.rfind(key); at != std::string_view::npos) {
            const auto start = at + key.size();
            const auto end = body.find('"', start);
            if (end != std::string_view::npos) cursor_ = std::string(body.substr(start, end - start));
        }
        co_return core::success();
    }

private:
    Transport conn_;
    const bench_config& cfg_;
    std::string graph_;
    std::uint64_t rng_;
    std::uint64_t node_ = 1;
    std::string cursor_;
    std::string target_;
};

class direct_page_worker final : public worker {
public:
    direct_page_worker(shard_pools& p, const bench_config& cfg, std::string graph, std::uint32_t index)
        : pools_(p), leases_(p), cfg_(cfg), graph_(std::move(graph)), rng_(cfg.seed * 104729 + index) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await leases_.async_acquire_all(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        // The same prepared range read cairn sends (shards::page_edges_statement), cursor kept by the client.
        if (!cursor_) node_ = static_cast<std::int64_t>(splitmix(rng_) % page_nodes(cfg_) + 1);
        shards::edge_page_request req;
        req.graph = graph_;
        req.node_id = node_;
        req.limit = page_limit;
        req.cursor = cursor_;
        cursor_.reset();
        auto c = co_await leases_.async_conn(pools_.map.shard_of_id(node_));
        if (!c) co_return c.error();
        auto r = co_await shards::async_page_edges(*c.value(), std::move(req));
        if (!r) co_return r.error();
        cursor_ = r.value().next;
        co_return core::success();
    }

private:
    shard_pools& pools_;
    shard_leases leases_;
    const bench_config& cfg_;
    std::string graph_;
    std::uint64_t rng_;
    std::int64_t node_ = 1;
    std::optional<core::page_cursor> cursor_;
};

run_report run_page(const bench_config& cfg) {
    if (cfg.shards.empty()) return scenario_failed(base_report(cfg), "page needs --shards (to preload the edges it reads)");
    const std::string graph = cfg.graph.empty() ? "bench_page" : cfg.graph;
    const std::uint64_t per_node = page_node_edges(cfg);
    const std::uint64_t n = page_nodes(cfg) * per_node;
    const auto err = preload_with(cfg, [&](shard_pools& p) {
        return async_upsert_edges(
            p, graph, n, drain_batch_edges, [per_node](std::uint64_t i) { return i / per_node + 1; },
            [](std::uint64_t i) { return i + page_destination_offset; }, direct_ts(1, 0));
    });
    if (!err.empty()) return scenario_failed(base_report(cfg), "preloading the edges failed: " + err);
    run_report r;
    if (cfg.target == "cairn-http") {
        r = run_load_scenario(cfg, false, [&cfg, &graph](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<page_worker<http_transport>>(http_transport(std::move(ex), cfg), cfg, graph, i);
        });
        if (r.status == run_status::ok) r.note = "GET /v1/graphs/{graph}/nodes/{id}/edges?limit=100, following next_cursor";
    } else if (cfg.target == "cairn-ws") {
        ws_conns conns(cfg);
        r = run_load_scenario(cfg, false, [&](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<page_worker<ws_transport>>(ws_transport(conns.get(ex, i)), cfg, graph, i);
        });
        if (r.status == run_status::ok) {
            r.note = fmt::format("the same pages over /v1/ws, {} in flight per connection", cfg.ws_pipeline);
        }
        r.extra["ws_pipeline"] = cfg.ws_pipeline;
    } else {
        r = run_load_scenario(cfg, false, [&cfg, &graph](asio::any_io_executor, shard_pools* p, std::uint32_t i) {
            return std::make_unique<direct_page_worker>(*p, cfg, graph, i);
        });
        if (r.status == run_status::ok) r.note = "the same prepared by_position range read, cursor kept by the client";
    }
    r.extra["nodes"] = static_cast<double>(page_nodes(cfg));
    r.extra["edges_per_node"] = static_cast<double>(per_node);
    return r;
}

template <class Transport>
class count_worker final : public worker {
public:
    count_worker(Transport t, const std::string& graph)
        : conn_(std::move(t)), target_(fmt::format("/v1/graphs/{}/nodes/1/count", graph)) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await conn_.async_connect(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        auto r = co_await conn_.async_fetch(target_);
        if (!r) co_return r.error();
        if (r.value().status_code != 200) co_return error_of_status(r.value().status_code);
        co_return core::success();
    }

private:
    Transport conn_;
    std::string target_;
};

class direct_count_worker final : public worker {
public:
    direct_count_worker(shard_pools& p, const std::string& graph)
        : pools_(p), leases_(p),
          sql_(fmt::format("SELECT COUNT(*) FROM edges WHERE graph = '{}' AND node_id = 1 AND direction = 0 AND state = 0",
                           graph)) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return co_await leases_.async_acquire_all(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        auto c = co_await leases_.async_conn(pools_.map.shard_of_id(1));
        if (!c) co_return c.error();
        auto r = co_await c.value()->async_query(sql_);
        if (!r) co_return r.error();
        co_return core::success();
    }

private:
    shard_pools& pools_;
    shard_leases leases_;
    std::string sql_;
};

run_report run_count(const bench_config& cfg) {
    if (cfg.shards.empty()) return scenario_failed(base_report(cfg), "count needs --shards (to preload the node it counts)");
    const std::uint64_t n = cfg.node_edges ? cfg.node_edges : 1'000'000;
    const std::string graph = cfg.graph.empty() ? fmt::format("bench_count_{}", n) : cfg.graph;
    // Node 1 gets n forward edges and the count row cairn's apply would keep; the count row is
    // written last, so its presence means an earlier run finished the preload.
    const auto err = preload_with(cfg, [&](shard_pools& p) -> asio::awaitable<core::result<void>> {
        auto l = co_await p.pools[p.map.shard_of_id(1)]->async_acquire();
        if (!l) co_return l.error();
        const std::string check = fmt::format(
            "SELECT count FROM edge_counts WHERE graph = '{}' AND node_id = 1 AND direction = 0 AND state = 0", graph);
        auto have = co_await l.value()->async_query(check);
        if (!have) co_return have.error();
        if (have.value().size() == 1 && have.value().uint64_at(0, 0) == n) co_return core::success();
        l.value().reset();
        auto filled = co_await async_upsert_edges(
            p, graph, n, drain_batch_edges, [](std::uint64_t) { return std::uint64_t{1}; },
            [](std::uint64_t i) { return i + count_destination_offset; }, direct_ts(1, 0));
        if (!filled) co_return filled;
        auto l2 = co_await p.pools[p.map.shard_of_id(1)]->async_acquire();
        if (!l2) co_return l2.error();
        const std::string sql = fmt::format(
            "INSERT INTO edge_counts (graph, node_id, direction, state, count) VALUES ('{}', 1, 0, 0, {}) "
            "ON DUPLICATE KEY UPDATE count = VALUES(count)",
            graph, n);
        co_return co_await l2.value()->async_execute(sql);
    });
    if (!err.empty()) return scenario_failed(base_report(cfg), "preloading the node failed: " + err);
    run_report r;
    if (cfg.target == "cairn-http") {
        r = run_load_scenario(cfg, false, [&cfg, &graph](asio::any_io_executor ex, shard_pools*, std::uint32_t) {
            return std::make_unique<count_worker<http_transport>>(http_transport(std::move(ex), cfg), graph);
        });
        if (r.status == run_status::ok) r.note = "GET /v1/graphs/{graph}/nodes/1/count (the stored count row)";
    } else if (cfg.target == "cairn-ws") {
        ws_conns conns(cfg);
        r = run_load_scenario(cfg, false, [&](asio::any_io_executor ex, shard_pools*, std::uint32_t i) {
            return std::make_unique<count_worker<ws_transport>>(ws_transport(conns.get(ex, i)), graph);
        });
        if (r.status == run_status::ok) {
            r.note = fmt::format("the same count over /v1/ws, {} in flight per connection", cfg.ws_pipeline);
        }
        r.extra["ws_pipeline"] = cfg.ws_pipeline;
    } else {
        r = run_load_scenario(cfg, false, [&graph](asio::any_io_executor, shard_pools* p, std::uint32_t) {
            return std::make_unique<direct_count_worker>(*p, graph);
        });
        if (r.status == run_status::ok) r.note = "SELECT COUNT(*) over the node's rows (covering index range)";
    }
    r.extra["node_edges"] = static_cast<double>(n);
    return r;
}

// ---- drain and restart -----------------------------------------------------------------------------

std::string work_dir_of(const bench_config& cfg) {
    if (!cfg.work_dir.empty()) {
        std::filesystem::create_directories(cfg.work_dir);
        return cfg.work_dir;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/cairn-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return "/tmp";
    return buf.data();
}

// Journals `backlog` edges (i+1 -> i+1+backlog, in graph) through cairnd's HTTP API in batches,
// on `connections` keep-alive connections.
core::result<void> write_backlog(std::uint16_t port, const std::string& graph, std::uint64_t backlog,
                                 std::uint32_t connections) {
    asio::io_context ioc;
    std::atomic<std::uint64_t> next{0};
    std::mutex mu;
    core::error_code first_error;
    const std::string target = fmt::format("/v1/graphs/{}/edges", graph);
    std::vector<std::unique_ptr<http_conn>> conns;
    for (std::uint32_t c = 0; c < connections; ++c) {
        conns.push_back(std::make_unique<http_conn>(ioc.get_executor(), "127.0.0.1", port, 60s));
        asio::co_spawn(
            ioc,
            [&, conn = conns.back().get()]() -> asio::awaitable<void> {
                std::string body;
                for (;;) {
                    const std::uint64_t start = next.fetch_add(drain_batch_edges);
                    if (start >= backlog) co_return;
                    const std::uint64_t stop = std::min<std::uint64_t>(backlog, start + drain_batch_edges);
                    body = R"({"edges":[)";
                    for (std::uint64_t i = start; i < stop; ++i) {
                        fmt::format_to(std::back_inserter(body), R"({}{{"source_id":{},"destination_id":{}}})",
                                       i == start ? "" : ",", i + 1, i + 1 + backlog);
                    }
                    body += "]}";
                    auto r = co_await conn->async_request(http::verb::post, target, body);
                    core::error_code ec;
                    if (!r) ec = r.error();
                    else if (r.value().status_code != 202) ec = error_of_status(r.value().status_code);
                    if (ec) {
                        std::lock_guard lock(mu);
                        if (!first_error) first_error = ec;
                        co_return;
                    }
                }
            },
            core::log_task_end{"bench-backlog"});
    }
    ioc.run();
    if (first_error) return first_error;
    return core::success();
}

struct backlog_cairnd {
    std::unique_ptr<cairnd_child> child;
    std::string error;
};

// Forgets the node id leases of gateways that are gone (released or lapsed) in the bench's own
// database: each backlog run starts a fresh journal under the config's node id, which cairnd
// refuses while an earlier journal's lease stands (docs/operations.md). Safe here: the backlogs
// are edges (last writer wins by ts), so no counter deduplicates by a repeated op id. A running
// gateway's lease is kept.
core::result<void> forget_gone_leases(const bench_config& cfg) {
    if (cfg.shards.empty()) return core::success();
    const auto p = bench_conn_params(cfg, 0, cfg.database, 30s);
    asio::io_context ioc;
    core::result<void> out = core::success();
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            shards::mariadb_conn conn(ioc.get_executor(), p);
            out = co_await conn.async_connect();
            if (out) out = co_await shards::async_create_gateway_schema(conn);
            if (out) out = co_await conn.async_execute("DELETE FROM gateway_leases WHERE released = 1 OR expires_at <= NOW(6)");
            conn.close();
        },
        core::log_task_end{"bench-forget-leases"});
    ioc.run();
    return out;
}

// A cairnd with a fresh journal in dir holding `backlog` unapplied edges of graph, stopped.
backlog_cairnd prepare_backlog(const bench_config& cfg, const std::string& dir, const std::string& name,
                               const std::string& graph) {
    backlog_cairnd out;
    cairnd_spec spec;
    spec.binary = cfg.cairnd_binary;
    spec.config = cfg.cairnd_config;
    spec.journal_dir = dir + "/" + name + "-journal";
    spec.log_path = dir + "/" + name + "-cairnd.log";
    spec.port = pick_free_port();
    std::error_code fs_ec;
    std::filesystem::remove_all(spec.journal_dir, fs_ec);
    if (auto f = forget_gone_leases(cfg); !f) {
        out.error = "cannot clear the gone gateways' node id leases on shard 0: " + f.error().message();
        return out;
    }
    out.child = std::make_unique<cairnd_child>(spec);
    if (auto s = out.child->spawn(true); !s) {
        out.error = "cannot start cairnd: " + s.error().message();
        return out;
    }
    if (auto ready = out.child->wait_ready(60s); !ready) {
        out.error = fmt::format("cairnd did not become ready ({}); see {}", ready.error().message(), spec.log_path);
        return out;
    }
    if (auto w = write_backlog(spec.port, graph, cfg.backlog, std::max<std::uint32_t>(1, std::min<std::uint32_t>(cfg.load.concurrency, 4)));
        !w) {
        out.error = "writing the backlog failed: " + w.error().message();
        return out;
    }
    if (const int code = out.child->stop(); code != 0) out.error = fmt::format("cairnd exited with {} after the backlog", code);
    return out;
}

// Waits until every shard of the cairnd child has applied everything (/readyz?verbose: every lag 0),
// polling every 20 ms. Errors: shard_unavailable when cairnd exited, timeout past `limit`.
core::result<void> wait_drained(cairnd_child& child, std::chrono::minutes limit) {
    const auto deadline = clock_type::now() + limit;
    for (;;) {
        auto v = http_get_sync("127.0.0.1", child.spec().port, "/readyz?verbose");
        if (v) {
            auto lag = parse_total_lag(v.value().body);
            if (lag && *lag == 0) return core::success();
        }
        if (!child.running()) return core::errc::shard_unavailable;
        if (clock_type::now() > deadline) return core::errc::timeout;
        std::this_thread::sleep_for(20ms);
    }
}

run_report run_drain(const bench_config& cfg) {
    run_report r = once_report(cfg, "rows", static_cast<std::uint32_t>(cfg.shards.size()), "backlog_edges");
    const std::string nonce = run_nonce();
    if (cfg.target == "cairn-ws") return not_measurable(cfg, "drain does not depend on the client API; use cairn-http");
    if (cfg.target == "cairn-http") {
        if (cfg.cairnd_binary.empty() || cfg.cairnd_config.empty()) return scenario_failed(r, "drain needs --cairnd and --cairnd-config");
        const std::string dir = work_dir_of(cfg);
        const std::string graph = cfg.graph.empty() ? "drain_c" + nonce : cfg.graph;
        auto b = prepare_backlog(cfg, dir, "drain", graph);
        if (!b.error.empty()) return scenario_failed(r, b.error);
        // Restart with apply on: the workers drain the backlog; /readyz?verbose shows the lag.
        if (auto s = b.child->spawn(false); !s) return scenario_failed(r, "cannot restart cairnd: " + s.error().message());
        const auto t0 = clock_type::now();
        auto ready = b.child->wait_ready(60s);
        if (!ready) return scenario_failed(r, "cairnd did not become ready after the restart: " + ready.error().message());
        r.extra["ready_ms"] = std::chrono::duration<double, std::milli>(ready.value()).count();
        if (auto d = wait_drained(*b.child, 30min); !d) {
            return scenario_failed(r, d.error() == core::errc::timeout ? std::string("the backlog did not drain within 30 minutes")
                                                               : "cairnd exited while draining; see " + b.child->spec().log_path);
        }
        const auto took = std::chrono::duration<double>(clock_type::now() - t0).count();
        b.child->stop();
        std::error_code fs_ec;
        std::filesystem::remove_all(b.child->spec().journal_dir, fs_ec);
        r.ops = 2 * cfg.backlog;
        r.duration_s = took;
        r.concurrency = 0;
        finish_throughput(r);
        r.note = "rows/s from the restart with apply on until every shard's lag is 0 (2 rows per edge, with counts)";
        return r;
    }
    if (cfg.shards.empty()) return scenario_failed(r, "--target direct needs --shards");
    asio::io_context ioc;
    shard_pools p(ioc.get_executor(), cfg, 2);
    core::result<void> s = core::errc::timeout;
    double took = 0;
    const std::string graph = cfg.graph.empty() ? "drain_d" + nonce : cfg.graph;
    const std::uint64_t backlog = cfg.backlog;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto schema = co_await async_ensure_schema(p);
            if (!schema) {
                s = schema;
                co_return;
            }
            const auto t0 = clock_type::now();
            s = co_await async_upsert_edges(
                p, graph, backlog, drain_batch_edges, [](std::uint64_t i) { return i + 1; },
                [backlog](std::uint64_t i) { return i + 1 + backlog; }, direct_ts(wall_ms(), 0));
            took = std::chrono::duration<double>(clock_type::now() - t0).count();
        },
        core::log_task_end{"bench-drain-direct"});
    ioc.run();
    if (!s) return scenario_failed(r, "direct upserts failed: " + s.error().message());
    r.ops = 2 * cfg.backlog;
    r.duration_s = took;
    finish_throughput(r);
    r.note = fmt::format("multi-row upserts with the last-writer-wins guard, {} edges' rows per statement, "
                         "one connection per shard (no counts)", drain_batch_edges);
    return r;
}

// ---- change feed (issue 16) -------------------------------------------------------------------------

constexpr std::uint64_t feed_page_ops = 1000;

// Reads the feed from seq 0 until next_from reaches `until`, in pages of feed_page_ops, on one
// keep-alive HTTP connection; returns the ops delivered.
core::result<std::uint64_t> read_feed_http(std::uint16_t port, std::uint64_t until) {
    asio::io_context ioc;
    core::result<std::uint64_t> out = core::errc::timeout;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            http_conn conn(ioc.get_executor(), "127.0.0.1", port, 60s);
            std::uint64_t from = 0, ops = 0;
            while (from < until) {
                auto r = co_await conn.async_request(http::verb::get, fmt::format("/v1/feed?from={}&limit={}", from, feed_page_ops), "");
                if (!r) {
                    out = r.error();
                    co_return;
                }
                const auto page = r.value().status_code == 200 ? scan_feed_page(r.value().body) : std::nullopt;
                if (!page || page->next_from <= from) {
                    out = core::errc::shard_rejected;
                    co_return;
                }
                ops += page->ops;
                from = page->next_from;
            }
            out = ops;
        },
        core::log_task_end{"bench-feed-http"});
    ioc.run();
    return out;
}

// How fast a consumer catches up with a gateway: the change feed of a fresh journal holding `backlog`
// edges that every shard has applied, read from seq 0 to its end in pages of 1,000 ops, over HTTP
// (GET /v1/feed on one keep-alive connection) or pushed to one WebSocket subscription; against
// reading the same edges' forward rows straight from the shards, 1,000 source ids per prepared
// range query on each shard (a consumer without cairn that knows the id space).
run_report run_feed(const bench_config& cfg) {
    run_report r = once_report(cfg, "ops", 1, "backlog_edges");
    const std::string nonce = run_nonce();
    if (cfg.target == "cairn-http" || cfg.target == "cairn-ws") {
        if (cfg.cairnd_binary.empty() || cfg.cairnd_config.empty()) return scenario_failed(r, "feed needs --cairnd and --cairnd-config");
        const std::string dir = work_dir_of(cfg);
        const std::string graph = cfg.graph.empty() ? "feed_c" + nonce : cfg.graph;
        auto b = prepare_backlog(cfg, dir, "feed", graph);
        if (!b.error.empty()) return scenario_failed(r, b.error);
        if (auto s = b.child->spawn(false); !s) return scenario_failed(r, "cannot restart cairnd: " + s.error().message());
        if (auto ready = b.child->wait_ready(60s); !ready) return scenario_failed(r, "cairnd did not become ready: " + ready.error().message());
        if (auto d = wait_drained(*b.child, 30min); !d) return scenario_failed(r, "the backlog did not drain: " + d.error().message());
        // A fresh journal: the backlog's ops are seqs 1..backlog.
        const auto t0 = clock_type::now();
        core::result<std::uint64_t> got = core::errc::timeout;
        if (cfg.target == "cairn-http") {
            got = read_feed_http(b.child->spec().port, cfg.backlog);
        } else {
            asio::io_context ioc;
            asio::co_spawn(
                ioc,
                [&]() -> asio::awaitable<void> {
                    got = co_await async_read_feed_subscription("127.0.0.1", b.child->spec().port,
                                                                fmt::format("from=0&limit={}", feed_page_ops), cfg.backlog, 60s);
                },
                core::log_task_end{"bench-feed-ws"});
            ioc.run();
        }
        const auto took = std::chrono::duration<double>(clock_type::now() - t0).count();
        b.child->stop();
        std::error_code fs_ec;
        std::filesystem::remove_all(b.child->spec().journal_dir, fs_ec);
        if (!got) return scenario_failed(r, "reading the feed failed: " + got.error().message());
        if (got.value() != cfg.backlog) return scenario_failed(r, fmt::format("the feed delivered {} of {} ops", got.value(), cfg.backlog));
        r.ops = got.value();
        r.duration_s = took;
        finish_throughput(r);
        r.note = cfg.target == "cairn-http"
                     ? fmt::format("GET /v1/feed from seq 0 to the end, {} ops per page, one keep-alive connection", feed_page_ops)
                     : fmt::format("one SUBSCRIBE /v1/feed from seq 0 to the end, {} ops per pushed page", feed_page_ops);
        return r;
    }
    if (cfg.shards.empty()) return scenario_failed(r, "--target direct needs --shards");
    asio::io_context ioc;
    shard_pools p(ioc.get_executor(), cfg, 1);
    core::result<std::uint64_t> got = core::errc::timeout;
    double took = 0;
    const std::string graph = cfg.graph.empty() ? "feed_d" + nonce : cfg.graph;
    const std::uint64_t backlog = cfg.backlog;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            if (auto schema = co_await async_ensure_schema(p); !schema) {
                got = schema.error();
                co_return;
            }
            if (auto w = co_await async_upsert_edges(
                    p, graph, backlog, drain_batch_edges, [](std::uint64_t i) { return i + 1; },
                    [backlog](std::uint64_t i) { return i + 1 + backlog; }, direct_ts(wall_ms(), 0));
                !w) {
                got = w.error();
                co_return;
            }
            std::vector<shards::lease> conns;
            for (auto& pool : p.pools) {
                auto l = co_await pool->async_acquire();
                if (!l) {
                    got = l.error();
                    co_return;
                }
                conns.push_back(std::move(l).value());
            }
            static constexpr std::string_view sql =
                "SELECT node_id, other_id, state, position, ts FROM edges WHERE graph = ? AND node_id BETWEEN ? AND ? "
                "AND direction = 0 ORDER BY node_id, other_id";
            const auto t0 = clock_type::now();
            std::uint64_t rows = 0;
            for (std::uint64_t lo = 1; lo <= backlog; lo += feed_page_ops) {
                const std::array<shards::sql_param, 3> params{std::string_view(graph), static_cast<std::int64_t>(lo),
                                                              static_cast<std::int64_t>(lo + feed_page_ops - 1)};
                for (auto& c : conns) {
                    auto page = co_await c->async_query_prepared(sql, params);
                    if (!page) {
                        got = page.error();
                        co_return;
                    }
                    rows += page.value().size();
                }
            }
            took = std::chrono::duration<double>(clock_type::now() - t0).count();
            got = rows;
        },
        core::log_task_end{"bench-feed-direct"});
    ioc.run();
    if (!got) return scenario_failed(r, "direct reads failed: " + got.error().message());
    if (got.value() != backlog) return scenario_failed(r, fmt::format("direct read {} of {} rows", got.value(), backlog));
    r.ops = got.value();
    r.duration_s = took;
    finish_throughput(r);
    r.note = fmt::format("the same edges' forward rows read from the shards, {} source ids per prepared range query and shard",
                         feed_page_ops);
    return r;
}

// ---- sustained writes and memory (apps/bench/sustained.cpp) ------------------------------------------

run_report run_sustained(const bench_config& cfg) {
    if (cfg.target == "direct") {
        // Direct writes are applied when acknowledged, so they keep up by construction: the
        // baseline is their closed-loop rate at the same concurrency.
        bench_config closed = cfg;
        closed.load.rate = 0;  // --rate is where cairn's search starts
        auto r = run_write(closed);
        if (r.status == run_status::ok) r.note = "closed-loop single-row autocommit upserts (applied on ack)";
        return r;
    }
    if (cfg.target == "cairn-ws") return not_measurable(cfg, "the sustained search runs over HTTP (the WebSocket write path is measured by write)");
    // A fresh journal under the config's node id, like the backlog runs: the earlier runs' leases go first.
    if (auto f = forget_gone_leases(cfg); !f) {
        run_report r;
        r.scenario = cfg.scenario;
        r.target = cfg.target;
        r.concurrency = cfg.load.concurrency;
        return scenario_failed(r, "cannot clear the gone gateways' node id leases on shard 0: " + f.error().message());
    }
    return run_sustained_cairn(cfg, work_dir_of(cfg), [](asio::any_io_executor ex, const bench_config& c, std::uint32_t i) {
        return std::make_unique<http_write_worker>(std::move(ex), c, i);
    });
}

run_report run_restart(const bench_config& cfg) {
    run_report r = once_report(cfg, "restarts", 0, "backlog_edges");
    if (cfg.target == "direct") {
        return not_measurable(cfg, "no direct baseline: MariaDB has no journal to recover (target: ready within 2 s)");
    }
    if (cfg.target == "cairn-ws") return not_measurable(cfg, "restart does not depend on the client API; use cairn-http");
    if (cfg.cairnd_binary.empty() || cfg.cairnd_config.empty()) return scenario_failed(r, "restart needs --cairnd and --cairnd-config");
    const std::string dir = work_dir_of(cfg);
    auto b = prepare_backlog(cfg, dir, "restart", cfg.graph.empty() ? "restart_" + run_nonce() : cfg.graph);
    if (!b.error.empty()) return scenario_failed(r, b.error);
    double total_s = 0;
    for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, cfg.restarts); ++i) {
        // Paused, so that every restart finds the whole backlog unapplied.
        if (auto s = b.child->spawn(true); !s) return scenario_failed(r, "cannot restart cairnd: " + s.error().message());
        auto ready = b.child->wait_ready(60s, 2ms);
        if (!ready) return scenario_failed(r, "cairnd did not become ready: " + ready.error().message());
        r.latency_ns.record(static_cast<std::uint64_t>(ready.value().count()));
        total_s += std::chrono::duration<double>(ready.value()).count();
        ++r.ops;
        if (const int code = b.child->stop(); code != 0) return scenario_failed(r, fmt::format("cairnd exited with {}", code));
    }
    std::error_code fs_ec;
    std::filesystem::remove_all(b.child->spec().journal_dir, fs_ec);
    r.duration_s = total_s;
    finish_throughput(r);
    r.note = "time from spawning cairnd to GET /readyz 200 with the backlog unapplied (latency = time to ready)";
    return r;
}

}  // namespace

core::result<std::vector<shard_address>> parse_shards(const std::string& list, std::string& bad_entry) {
    std::vector<shard_address> out;
    std::size_t pos = 0;
    while (pos <= list.size() && !list.empty()) {
        const auto comma = list.find(',', pos);
        const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        const auto colon = item.rfind(':');
        std::uint16_t port = 0;
        const char* first = item.data() + (colon == std::string::npos ? 0 : colon + 1);
        const char* last = item.data() + item.size();
        auto [ptr, ec] = std::from_chars(first, last, port);
        if (colon == std::string::npos || colon == 0 || ec != std::errc() || ptr != last || port == 0) {
            bad_entry = item;
            return core::errc::bad_request;
        }
        out.push_back({item.substr(0, colon), port});
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return out;
}

// A split's copy (issue 16, docs/resharding.md): shard 0's database cairn_bench_split holds `backlog`
// edges' forward rows and their counts; the upper half of the hash space is moved to shard 1's
// database. cairn: shards::async_copy_range, as a split runs it (chunks of 1,000 rows in primary-key
// order inside one consistent snapshot, upserts), then its diff checks the target (not timed). direct:
// the plain way to move the same rows — one SELECT of each whole table and multi-row INSERTs of the
// rows of the half, 1,000 per statement. Both run in cairn-bench's process: the cairn target's name only
// pairs the line with direct in the summary.
constexpr std::string_view split_database = "cairn_bench_split";
constexpr std::size_t split_chunk_rows = 1000;

// The plain move of one table: every row read at once, the half's rows inserted 1,000 per statement.
asio::awaitable<core::result<std::uint64_t>> async_move_half_direct(shards::mariadb_conn& from, shards::mariadb_conn& to,
                                                                    std::string_view table, std::string_view columns,
                                                                    std::size_t column_count, core::hash_range half) {
    auto all = co_await from.async_query(fmt::format("SELECT {} FROM {}", columns, table));
    if (!all) co_return all.error();
    const auto& rows = all.value();
    std::uint64_t moved = 0;
    std::vector<shards::sql_param> params;
    std::size_t batch = 0;
    const auto flush = [&]() -> asio::awaitable<core::result<void>> {
        if (batch == 0) co_return core::success();
        std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ", table, columns);
        for (std::size_t i = 0; i < batch; ++i) {
            sql += i ? ",(" : "(";
            for (std::size_t c = 0; c < column_count; ++c) sql += c ? ",?" : "?";
            sql += ')';
        }
        auto w = co_await to.async_query_prepared(sql, params);
        params.clear();
        batch = 0;
        if (!w) co_return w.error();
        co_return core::success();
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!half.contains(core::hash_id(rows.int64_at(i, 1)))) continue;  // column 1: node_id
        for (std::size_t c = 0; c < column_count; ++c) params.emplace_back(rows.at(i, c).value_or(""));
        ++moved;
        if (++batch == split_chunk_rows) {
            if (auto w = co_await flush(); !w) co_return w.error();
        }
    }
    if (auto w = co_await flush(); !w) co_return w.error();
    co_return moved;
}

run_report run_split_copy(const bench_config& cfg) {
    run_report r = once_report(cfg, "rows", 1, "source_edges");
    if (cfg.shards.size() < 2) return scenario_failed(r, "split_copy needs --shards with two shards: the source and the target");
    if (cfg.backlog == 0 || cfg.backlog > 100'000'000) return scenario_failed(r, "split_copy needs --backlog between 1 and 100,000,000");
    const auto half = core::shard_map::equal_ranges(1).split(0).value().range_of(1);
    asio::io_context ioc;
    core::result<void> outcome = core::success();
    double took = 0;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            const auto fail = [&](core::error_code ec, std::string_view what) {
                outcome = ec;
                r.first_error = std::string(what);
            };
            // A fresh database on both shards, the edge tables in each, the source's rows made by the server.
            std::vector<std::unique_ptr<shards::mariadb_conn>> conns;
            for (std::size_t s = 0; s < 2; ++s) {
                shards::mariadb_conn admin(ioc.get_executor(), bench_conn_params(cfg, s, "", 600s));
                if (auto c = co_await admin.async_connect(); !c) co_return fail(c.error(), "connecting to a shard: " + admin.last_error());
                for (const auto& sql : {fmt::format("DROP DATABASE IF EXISTS {}", split_database),
                                        fmt::format("CREATE DATABASE {}", split_database)}) {
                    if (auto e = co_await admin.async_execute(sql); !e) co_return fail(e.error(), admin.last_error());
                }
                admin.close();
                conns.push_back(std::make_unique<shards::mariadb_conn>(ioc.get_executor(), bench_conn_params(cfg, s, std::string(split_database), 600s)));
                if (auto c = co_await conns.back()->async_connect(); !c) co_return fail(c.error(), conns.back()->last_error());
                if (auto e = co_await shards::async_create_edge_schema(*conns.back()); !e) co_return fail(e.error(), conns.back()->last_error());
            }
            auto& from = *conns[0];
            auto& to = *conns[1];
            for (std::uint64_t lo = 1; lo <= cfg.backlog; lo += 100'000) {
                const auto hi = std::min<std::uint64_t>(cfg.backlog, lo + 99'999);
                for (const auto& sql :
                     {fmt::format("INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) "
                                  "SELECT 'split', seq, 0, seq + 1000000000, 0, 0, seq, 1, 1, 0 FROM seq_{}_to_{}",
                                  lo, hi),
                      fmt::format("INSERT INTO edge_counts (graph, node_id, direction, state, count) SELECT 'split', seq, 0, 0, 1 "
                                  "FROM seq_{}_to_{}",
                                  lo, hi)}) {
                    if (auto e = co_await from.async_execute(sql); !e) co_return fail(e.error(), from.last_error());
                }
            }
            const auto t0 = clock_type::now();
            std::uint64_t moved = 0;
            if (cfg.target == "direct") {
                constexpr std::string_view edge_columns = "graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set";
                auto e = co_await async_move_half_direct(from, to, "edges", edge_columns, 10, half);
                if (!e) co_return fail(e.error(), to.last_error());
                auto c = co_await async_move_half_direct(from, to, "edge_counts", "graph, node_id, direction, state, count", 5, half);
                if (!c) co_return fail(c.error(), to.last_error());
                moved = e.value() + c.value();
                took = std::chrono::duration<double>(clock_type::now() - t0).count();
            } else {
                auto plan = co_await shards::async_plan_range_copy(from, {}, {});
                if (!plan) co_return fail(plan.error(), from.last_error());
                shards::range_copy_options copy_opts;
                copy_opts.chunk_rows = split_chunk_rows;
                auto copied = co_await shards::async_copy_range(from, to, plan.value(), half, copy_opts);
                if (!copied) co_return fail(copied.error(), from.last_error() + " / " + to.last_error());
                took = std::chrono::duration<double>(clock_type::now() - t0).count();
                moved = copied.value().rows_copied;
                r.extra["rows_read"] = static_cast<double>(copied.value().rows_read);
                auto diff = co_await shards::async_diff_range(from, to, plan.value(), half, copy_opts);
                if (!diff) co_return fail(diff.error(), "the diff failed");
                for (const auto& d : diff.value()) {
                    if (!d.same()) {
                        co_return fail(core::errc::shard_rejected, fmt::format("the diff differs in {}: {} rows on the source, {} on the target",
                                                                               d.table, d.rows_from, d.rows_to));
                    }
                }
            }
            r.ops = moved;
            for (auto& c : conns) c->close();
        },
        [&](std::exception_ptr e) {
            if (!e) return;
            outcome = core::errc::shard_rejected;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                r.first_error = x.what();
            }
        });
    ioc.run();
    if (!outcome) return scenario_failed(r, fmt::format("split_copy failed: {} ({})", outcome.error().message(), r.first_error));
    r.duration_s = took;
    finish_throughput(r);
    r.note = cfg.target == "direct"
                 ? "one SELECT of each whole table, the half's rows in INSERTs of 1,000"
                 : "shards::async_copy_range: keyset chunks of 1,000 rows in one snapshot, upserts; its diff then checked the target";
    return r;
}

const std::vector<std::string>& targets() {
    static const std::vector<std::string> t{"cairn-http", "cairn-ws", "direct"};
    return t;
}

const std::vector<scenario_def>& scenarios() {
    static const std::vector<scenario_def> s{
        {"write", "1. burst acknowledged writes (run cairnd with --apply-paused) vs direct single-row autocommit upserts",
         run_write},
        {"sustained", "2. sustained writes with acks and apply keeping up (rate search) vs direct autocommit; 7. memory",
         run_sustained},
        {"drain", "3. apply drain of a journaled backlog (rows/s) vs direct batched multi-row upserts", run_drain},
        {"feed", "change feed catch-up over an applied backlog (ops/s) vs direct range reads of the same rows", run_feed},
        {"get", "4. point read of one edge vs direct prepared SELECT by primary key", run_get},
        {"page", "5. page of 100 edges by cursor vs the same range query direct", run_page},
        {"count", "6. count of a node with 1,000,000 edges vs direct COUNT(*)", run_count},
        {"split_copy",
         "issue 16: a split's copy of half a shard's edges and counts (rows/s) vs one SELECT and multi-row INSERTs (drops and "
         "recreates database cairn_bench_split on the first two --shards)",
         run_split_copy},
        {"restart", "8. time from start to ready with N unapplied ops (no baseline)", run_restart},
        {"hoard", "issue 13: a real client's p99 beside 10,000 idle and slowloris connections vs alone (cairn-http)",
         run_hoard},
        {"bomb", "issue 13: parse cost of malformed WebSocket messages (allocation bombs) vs normal ones of the same size",
         run_bomb},
    };
    return s;
}

run_report run_scenario(const bench_config& cfg) {
    if (std::find(targets().begin(), targets().end(), cfg.target) == targets().end()) {
        return scenario_failed(base_report(cfg), "unknown target " + cfg.target);
    }
    for (const auto& s : scenarios()) {
        if (s.name == cfg.scenario) return s.run(cfg);
    }
    return scenario_failed(base_report(cfg), "unknown scenario " + cfg.scenario);
}

}  // namespace cairn::bench
