#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "tests/fuzz/support/gateway.hpp"

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
#include "net/router.hpp"
#include "net/routes.hpp"
#include "net/ws_api.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

// LeakSanitizer, at exit: OpenSSL's one-time initialisation (which libmariadb runs from
// mysql_library_init, shards/mariadb_conn.cpp) keeps a per-thread error state of an I/O thread
// that OpenSSL frees only in its own exit handler, after LeakSanitizer looked. Not cairn's memory;
// the report's stack ends in libcrypto (built without frame pointers), so the module is named. The
// fuzz gateway has no TLS: nothing else of cairn's allocates through OpenSSL.
extern "C" const char* __lsan_default_suppressions() { return "leak:libcrypto.so\n"; }

namespace cairn::fuzz {
namespace {

namespace asio = boost::asio;

[[noreturn]] void harness_broken(const std::string& what) {
    std::fprintf(stderr, "fuzz gateway: %s\n", what.c_str());
    std::abort();
}

// Small limits, so that no input waits long: a read waiting for ?after= gives up after 50 ms, a
// shard that cannot be reached is retried within 200 ms. connections_max stays at its default: a
// connection closed by the fuzzer with requests in flight lives on until they end (up to ~1 s for
// some that wait on the unreachable shards), and at 150 inputs/s 64 of them were all busy at once.
std::string config_text(const std::string& journal_dir) {
    std::vector<std::string> shards{"127.0.0.1:9", "127.0.0.1:9"};
    if (const char* env = std::getenv("CAIRN_FUZZ_SHARDS"); env && *env) {
        shards.clear();
        std::stringstream in(env);
        for (std::string s; std::getline(in, s, ',');) shards.push_back(s);
    }
    std::string text = fmt::format(R"(node_id = 1
[listen]
address = "127.0.0.1"
threads = 2
[journal]
path = "{}"
size_bytes_max = 268435456
wait_max_ms = 100
[apply]
connect_timeout_ms = 200
query_timeout_ms = 1000
outage_backoff_max_ms = 200
retry_backoff_initial_ms = 20
retry_backoff_max_ms = 200
read_pool_connections = 2
[limits]
body_bytes_max = 65536
connections_max = 1024
timeout_read_ms = 2000
timeout_idle_ms = 5000
applied_wait_max_ms = 50
stop_drain_ms = 200
stop_timeout_ms = 1000
[[tokens]]
token = "{}"
role = "admin"
[[tokens]]
token = "{}"
role = "read"
[entities]
kinds = ["entry", "user"]
[cells]
tables = ["users"]
[[counters.metrics]]
name = "plays"
shard_on = "track_id"
dimensions = [{{ name = "track_id", type = "int" }}, {{ name = "country", type = "string", length = 2 }}]
tables = [{{ name = "plays_by_track_day_country", granularity = "day", key = ["track_id", "time", "country"] }}]
)",
                                   journal_dir, admin_token, read_token);
    for (const auto& s : shards) {
        const auto colon = s.rfind(':');
        if (colon == std::string::npos) harness_broken("CAIRN_FUZZ_SHARDS: expected host:port, got " + s);
        text += fmt::format("[[shards]]\nhost = \"{}\"\nport = {}\nuser = \"cairn\"\npassword = \"cairn\"\ndatabase = \"cairn\"\n",
                            s.substr(0, colon), s.substr(colon + 1));
    }
    return text;
}

// Everything cairnd's main builds, kept for the life of the process (never destroyed: the atexit
// hook only stops the threads, so nothing runs while the process exits).
struct running {
    core::config cfg;
    core::registry metrics;
    core::hlc clock;
    std::unique_ptr<journal::journal> jn;
    asio::io_context ioc{2};
    core::routing routing;
    std::unique_ptr<shards::shard_set> shard_set;
    std::unique_ptr<indexing::index_registry> indexes;
    std::unique_ptr<indexing::cleaner> cleaner;
    std::unique_ptr<net::gateway> gw;
    net::router router;
    std::unique_ptr<net::auth> auth;
    std::unique_ptr<net::http_server> server;
    std::vector<std::thread> threads;
    std::uint16_t port = 0;
    std::string dir;  // the temporary folder of the journal, removed at exit

    explicit running(core::config c)
        : cfg(std::move(c)), clock(cfg.node_id),
          routing(core::route_table(1, core::shard_map::equal_ranges(static_cast<std::uint32_t>(cfg.shards.size())))) {}
};

running* the_gateway = nullptr;

void stop_at_exit() {
    if (the_gateway == nullptr) return;
    the_gateway->ioc.stop();
    for (auto& t : the_gateway->threads) t.join();
    the_gateway->threads.clear();
    std::error_code ignored;
    std::filesystem::remove_all(the_gateway->dir, ignored);
}

running* start() {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp ? tmp : "/tmp") + "/cairn-fuzz-gateway.XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) harness_broken("cannot create a temporary folder");
    auto parsed = core::parse_config(config_text(dir + "/journal"), "fuzz gateway");
    if (!parsed) harness_broken("bad config: " + parsed.error());
    auto* g = new running(std::move(parsed).value());
    g->dir = dir;
    g->cfg.listen_port = 0;
    const char* level = std::getenv("CAIRN_FUZZ_LOG");
    spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::off);

    journal::options jopts;
    jopts.path = g->cfg.journal_path;
    jopts.size_bytes_max = g->cfg.journal_size_bytes_max;
    jopts.grow_bytes = g->cfg.journal_grow_bytes;
    jopts.retention = g->cfg.journal_retention;
    jopts.node_id = g->cfg.node_id;
    jopts.shard_count = static_cast<std::uint32_t>(g->cfg.shards.size());
    jopts.queue_ops_max = g->cfg.lim.journal_queue_ops_max;
    jopts.group_ops_max = g->cfg.lim.journal_group_ops_max;
    jopts.unapplied_ops_max = g->cfg.lim.journal_unapplied_ops_max;
    auto opened = journal::journal::open(jopts, g->clock);
    if (!opened) harness_broken("cannot open the journal: " + opened.error().message());
    g->jn = std::move(opened).value();
    g->shard_set = std::make_unique<shards::shard_set>(g->ioc.get_executor(), *g->jn, g->routing, g->cfg, g->metrics);
    g->jn->set_commit_listener([s = g->shard_set.get()](std::uint64_t) { s->notify_all(); });
    g->gw = std::make_unique<net::gateway>(net::gateway{*g->jn, g->clock, g->routing, *g->shard_set, g->cfg.lim, g->metrics,
                                                        &g->cfg.counters, &g->cfg.cells, &g->cfg.entities});
    g->indexes = std::make_unique<indexing::index_registry>(*g->shard_set, g->cfg.lim.query_timeout + g->cfg.lim.connect_timeout);
    g->gw->indexes = g->indexes.get();
    g->cleaner = std::make_unique<indexing::cleaner>(g->ioc.get_executor(), *g->jn, *g->shard_set, *g->indexes, g->cfg.lim,
                                                     g->metrics);
    g->gw->index_cleaner = g->cleaner.get();
    g->gw->tokens_required = !g->cfg.tokens.empty();
    net::add_api_routes(g->router, *g->gw);
    g->auth = std::make_unique<net::auth>(g->cfg.tokens);
    net::server_options so;
    so.address = g->cfg.listen_address;
    so.port = 0;
    so.lim = g->cfg.lim;
    so.stop_timeout = g->cfg.lim.stop_drain;
    g->server = std::make_unique<net::http_server>(g->ioc, so, g->router, *g->auth, g->metrics);
    if (auto r = g->server->listen(); !r) harness_broken("cannot listen: " + r.error().message());
    g->port = g->server->port();
    g->server->set_upgrade_handler(net::make_ws_handler(g->router, g->cfg.lim, g->metrics));
    g->shard_set->start_all();
    asio::co_spawn(asio::make_strand(g->ioc), g->indexes->async_refresh_loop(std::chrono::seconds(2)),
                   core::log_task_end("index_refresh"));
    g->server->start();
    for (int i = 0; i < 2; ++i) g->threads.emplace_back([g] { g->ioc.run(); });
    the_gateway = g;
    std::atexit(stop_at_exit);
    return g;
}

// A connected socket to the gateway, closed when it goes out of scope. A connect that fails is
// tried twice more, 100 ms apart (a long campaign once met a moment where the machine's loopback
// connects failed for every process at once); the third failure stops the harness, with errno.
struct socket_fd {
    int fd = -1;
    socket_fd() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(gateway_port());
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        for (int attempt = 0;; ++attempt) {
            fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) harness_broken(std::string("socket() failed: ") + std::strerror(errno));
            if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return;
            const int e = errno;
            ::close(fd);
            if (attempt == 2) harness_broken(std::string("cannot connect to the gateway: ") + std::strerror(e) + " (" + gateway_vitals() + ")");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    ~socket_fd() { ::close(fd); }
    socket_fd(const socket_fd&) = delete;
    socket_fd& operator=(const socket_fd&) = delete;
};

// Waits until fd is ready for events or the deadline passes.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left.count()));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

}  // namespace

std::uint16_t gateway_port() {
    static running* g = start();
    return g->port;
}

std::chrono::nanoseconds runqueue_wait() {
    std::uint64_t total = 0;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::FILE* f = std::fopen((task.path() / "schedstat").c_str(), "r");
        if (f == nullptr) continue;
        unsigned long long on_cpu = 0, waiting = 0;
        if (std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2) total += waiting;
        std::fclose(f);
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
}

bool starved_since(std::chrono::nanoseconds mark, std::chrono::milliseconds window) {
    return runqueue_wait() - mark > window / 4;
}

std::optional<std::string> exchange(std::string_view bytes, std::chrono::milliseconds timeout) {
    socket_fd s;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto waited_at = runqueue_wait();
    int extensions = 0;
    std::string reply;
    char buf[16384];
    // Send and read at once: a gateway that answers early (or closes) must not block the sender.
    std::size_t sent = 0;
    bool send_closed = false;
    for (;;) {
        if (!send_closed && sent == bytes.size()) {
            ::shutdown(s.fd, SHUT_WR);
            send_closed = true;
        }
        const short events = static_cast<short>(POLLIN | (send_closed ? 0 : POLLOUT));
        if (!wait_for(s.fd, events, deadline)) {
            if (extensions == 8 || !starved_since(waited_at, timeout)) return std::nullopt;
            ++extensions;
            deadline = std::chrono::steady_clock::now() + timeout;
            waited_at = runqueue_wait();
            continue;
        }
        pollfd p{s.fd, events, 0};
        ::poll(&p, 1, 0);
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            const auto n = ::recv(s.fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) {
                reply.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) return reply;  // closed (or reset)
        }
        if (!send_closed && (p.revents & POLLOUT)) {
            const auto n = ::send(s.fd, bytes.data() + sent, bytes.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                sent += static_cast<std::size_t>(n);
            } else if (errno != EAGAIN && errno != EINTR) {
                send_closed = true;  // the gateway closed its side: read what it wrote
            }
        }
    }
}

// An empty string when GET /livez on a new connection answers 200 within 10 s, else what happened
// instead (no answer, or the answer's status line).
std::string livez_problem() {
    const auto reply = exchange("GET /livez HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n", std::chrono::seconds(10));
    if (!reply) return "no answer within 10 s";
    if (reply->starts_with("HTTP/1.1 200 ")) return {};
    if (reply->empty()) return "the connection closed without an answer";
    return "answered " + reply->substr(0, std::min<std::size_t>(reply->find('\r'), 120));
}

bool gateway_serves() { return livez_problem().empty(); }

std::string gateway_vitals() {
    gateway_port();
    std::string out;
    std::stringstream in(the_gateway->metrics.render());
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("#")) continue;
        if (line.starts_with("cairn_http_connections") || line.starts_with("cairn_http_accept_errors") ||
            line.starts_with("cairn_ws_") || line.find("code=\"503\"") != std::string::npos) {
            if (!out.empty()) out += "; ";
            out += line;
        }
    }
    return out;
}

// Every 128 inputs: the gateway still serves a new connection. A burst of inputs may leave it at
// limits.connections_max for a moment (connections closed by the fuzzer with requests in flight live
// until those end), which it answers with 503 too-many-connections, as it should: so three tries a
// second apart, and a gateway that fails all three is broken. Each try's outcome is printed.
void check_still_serving(const char* target) {
    static std::uint64_t inputs = 0;
    if (++inputs % 128 != 0) return;
    std::string outcomes;
    for (int attempt = 0; attempt < 3; ++attempt) {
        const auto problem = livez_problem();
        if (problem.empty()) return;
        outcomes += (outcomes.empty() ? "" : "; ") + problem;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    std::fprintf(stderr, "%s: the gateway no longer answers GET /livez (%s; %s)\n", target, outcomes.c_str(), gateway_vitals().c_str());
    std::abort();
}

}  // namespace cairn::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    cairn::fuzz::gateway_port();
    return 0;
}
