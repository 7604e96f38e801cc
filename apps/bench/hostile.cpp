#include "apps/bench/hostile.hpp"

#include "apps/bench/cairnd_runner.hpp"
#include "apps/bench/http_conn.hpp"
#include "apps/bench/load.hpp"
#include "core/log_task_end.hpp"
#include "net/detail/ws_message.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <fmt/format.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cairn::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;
using namespace std::string_literals;

// As slowloris.py does by default: every 15 s each connection gets one more header line, and the
// connections that died are opened again (all at once: the harsher case).
constexpr auto hoarder_reconnect = 15s;  // how soon a hoarder comes back after cairnd closed it
constexpr auto loris_drip = 15s;         // a slowloris hoarder sends one more header line this often
constexpr std::size_t ramp_batch = 250; // hoarders that connect at once, every ramp_pause
constexpr auto ramp_pause = 25ms;

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

run_report make_report(const bench_config& cfg, std::string note) {
    run_report r;
    r.scenario = cfg.scenario;
    r.target = cfg.target;
    r.concurrency = cfg.load.concurrency;
    r.note = std::move(note);
    return r;
}

run_report failed(run_report r, std::string why) {
    r.status = run_status::failed;
    r.note = std::move(why);
    return r;
}

// ---- hoard ----------------------------------------------------------------------------------

// A real client: a new connection for each request (the case hoarded slots would hurt).
class fresh_connection_worker : public worker {
public:
    fresh_connection_worker(asio::any_io_executor ex, const bench_config& cfg)
        : ex_(std::move(ex)), cfg_(cfg), target_(fmt::format("/v1/graphs/{}/nodes/1/count", cfg.graph.empty() ? "bench_hoard" : cfg.graph)) {}
    asio::awaitable<core::result<void>> async_setup() override { co_return core::success(); }
    asio::awaitable<core::result<void>> async_op(std::uint64_t) override {
        http_conn conn(ex_, cfg_.host, cfg_.port, 10s);
        auto r = co_await conn.async_request(http::verb::get, target_);
        conn.close();
        if (!r) co_return r.error();
        if (r.value().status_code != 200) co_return core::errc::bad_request;
        co_return core::success();
    }

private:
    asio::any_io_executor ex_;
    const bench_config& cfg_;
    std::string target_;
};

struct hoard_counters {
    std::atomic<std::uint64_t> open{0};      // connections the hoarders hold now
    std::atomic<std::uint64_t> closed{0};    // closed by cairnd (evicted or timed out)
    std::atomic<std::uint64_t> failed{0};    // connects that failed
};

// One hoarder: connects, then holds the connection idle or as a slowloris (a header that never
// ends, one line every loris_drip) until cairnd closes it, and comes back hoarder_reconnect later.
// On loopback the hoarders connect from 127.0.0.2, and let connect(2) pick the port
// (IP_BIND_ADDRESS_NO_PORT): the real client's new connection per request then does not search the
// ephemeral ports that 10,000 hoarders hold on the same 4-tuple space. Without it that search in the
// load generator's own connect(2) (__inet_hash_connect, __inet_check_established: 17% of the machine's
// samples in a profile of 2026-11-28) made the real client's p99 about 6 ms with or without cairnd
// evicting anyone. Real hoarders come from other hosts. Elsewhere the hoarders connect as they are.
void bind_hoarder_source(tcp::socket& s, const tcp::endpoint& ep, error_code& ec) {
    if (!ep.address().is_loopback() || !ep.address().is_v4()) return;
    s.open(tcp::v4(), ec);
    if (ec) return;
    const int on = 1;
    if (::setsockopt(s.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on) != 0) return;  // best effort
    s.bind(tcp::endpoint(asio::ip::make_address_v4("127.0.0.2"), 0), ec);
}

asio::awaitable<void> async_hoard(const bench_config& cfg, bool loris, std::shared_ptr<hoard_counters> n) {
    auto ex = co_await asio::this_coro::executor;
    const tcp::endpoint ep(asio::ip::make_address(cfg.host), cfg.port);
    asio::steady_timer pause(ex);
    for (;;) {
        beast::tcp_stream s(ex);
        s.expires_after(10s);
        error_code ec;
        bind_hoarder_source(s.socket(), ep, ec);
        if (!ec) co_await s.async_connect(ep, use_ec(ec));
        if (ec) {
            ++n->failed;
        } else {
            ++n->open;
            std::array<char, 512> sink;
            if (loris) {
                static constexpr std::string_view start = "GET /livez HTTP/1.1\r\nHost: bench\r\n";
                s.expires_after(10s);
                co_await asio::async_write(s, asio::buffer(start.data(), start.size()), use_ec(ec));
                while (!ec) {
                    // Nothing should come back: the read ends by the drip's timeout (still open) or
                    // by the close.
                    s.expires_after(loris_drip);
                    co_await s.async_read_some(asio::buffer(sink), use_ec(ec));
                    if (ec != beast::error::timeout) break;
                    static constexpr std::string_view drip = "X-Drip: 1\r\n";
                    s.expires_after(10s);
                    ec = {};
                    co_await asio::async_write(s, asio::buffer(drip.data(), drip.size()), use_ec(ec));
                }
            } else {
                while (!ec) {
                    s.expires_never();
                    co_await s.async_read_some(asio::buffer(sink), use_ec(ec));
                }
            }
            --n->open;
            ++n->closed;
        }
        pause.expires_after(hoarder_reconnect);
        co_await pause.async_wait(use_ec(ec));
    }
}

double metric_value(const bench_config& cfg, std::string_view series) {
    auto r = http_get_sync(cfg.host, cfg.port, "/metrics", 5s);
    if (!r || r.value().status_code != 200) return -1;
    const std::string& text = r.value().body;
    const auto at = text.find(fmt::format("\n{} ", series));
    if (at == std::string::npos) return 0;
    return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

// One measured phase of the real client.
core::result<run_report> real_client_phase(const bench_config& cfg) {
    run_report r = make_report(cfg, "");
    asio::io_context ioc;
    auto made = run_load(
        ioc, cfg.load,
        [&cfg](asio::any_io_executor ex, std::uint32_t) { return std::make_unique<fresh_connection_worker>(std::move(ex), cfg); },
        r);
    if (!made) return made.error();
    return r;
}

}  // namespace

run_report run_hoard(const bench_config& cfg) {
    run_report out = make_report(cfg, "");
    if (cfg.target != "cairn-http") return failed(std::move(out), "hoard runs against cairn-http only");
    const std::uint32_t hoarders = cfg.hoarders;
    // Baseline: the real client alone.
    auto base = real_client_phase(cfg);
    if (!base) return failed(std::move(out), "baseline: " + base.error().message());
    const double evicted_before = metric_value(cfg, "cairn_http_connections_evicted_total");

    // The hoarders, ramped up on their own threads, half idle and half slowloris.
    asio::io_context hoard_ioc;
    auto counters = std::make_shared<hoard_counters>();
    asio::co_spawn(
        hoard_ioc,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor);
            for (std::uint32_t i = 0; i < hoarders; ++i) {
                asio::co_spawn(hoard_ioc, async_hoard(cfg, i % 2 == 1, counters), asio::detached);
                if ((i + 1) % ramp_batch == 0) {
                    t.expires_after(ramp_pause);
                    error_code ec;
                    co_await t.async_wait(use_ec(ec));
                }
            }
        },
        asio::detached);
    std::thread hoard_thread([&] { hoard_ioc.run(); });
    // Let the ramp finish and cairnd fill up before measuring.
    const auto ramp = ramp_pause * (hoarders / ramp_batch + 1);
    std::this_thread::sleep_for(ramp + 2s);
    const std::uint64_t open_at_start = counters->open.load();
    auto hoarded = real_client_phase(cfg);
    const std::uint64_t open_at_end = counters->open.load();
    hoard_ioc.stop();
    hoard_thread.join();
    if (!hoarded) return failed(std::move(out), "with hoarders: " + hoarded.error().message());
    const double evicted_after = metric_value(cfg, "cairn_http_connections_evicted_total");

    out = std::move(hoarded).value();
    out.note = fmt::format(
        "a real client (a new connection per GET) beside {} hoarders (half idle, half slowloris; each reconnects {} s "
        "after cairnd closes it) vs the same client alone",
        hoarders, std::chrono::duration_cast<std::chrono::seconds>(hoarder_reconnect).count());
    const double p99_base = static_cast<double>(base.value().latency_ns.percentile(99)) / 1000.0;
    const double p99_hoard = static_cast<double>(out.latency_ns.percentile(99)) / 1000.0;
    out.extra["hoarders"] = hoarders;
    out.extra["baseline_throughput"] = base.value().throughput;
    out.extra["baseline_p99_us"] = p99_base;
    out.extra["hoarded_p99_us"] = p99_hoard;
    out.extra["p99_ratio"] = p99_base > 0 ? p99_hoard / p99_base : 0;
    out.extra["hoarders_open_at_start"] = static_cast<double>(open_at_start);
    out.extra["hoarders_open_at_end"] = static_cast<double>(open_at_end);
    out.extra["hoarder_connects_failed"] = static_cast<double>(counters->failed.load());
    out.extra["evicted_during_run"] = evicted_before >= 0 && evicted_after >= 0 ? evicted_after - evicted_before : -1;
    return out;
}

// ---- bomb -----------------------------------------------------------------------------------

namespace {

// A msgpack message of exactly `size` bytes: {"id": 1, "path": "/v1/graphs/g/nodes/1/count", "body": {"pad": "x..."}}.
std::string normal_message(std::size_t size) {
    std::string head = "\x83\xa2id\x01\xa4path\xba/v1/graphs/g/nodes/1/count\xa4" "body\x81\xa3pad";
    const std::size_t pad = size - head.size() - 5;  // str32 header
    head += '\xdb';
    for (int i = 3; i >= 0; --i) head += static_cast<char>(pad >> (8 * i));
    head.append(pad, 'x');
    return head;
}

// Messages of the same size that are refused: headers claiming far more than the frame holds,
// and nesting past the limit, each padded to `size` bytes.
std::vector<std::pair<std::string, std::string>> bomb_messages(std::size_t size) {
    auto padded = [size](std::string s) {
        s.resize(size, '\xc0');  // nil: what a header claims is never there
        return s;
    };
    return {
        {"array32 claiming 4 billion", padded("\xdd\xff\xff\xff\xff"s)},
        {"map32 claiming 4 billion", padded("\xdf\xff\xff\xff\xff"s)},
        {"map of arrays claiming 1 million each", padded("\x81\xa1" "a\xdd\x00\x10\x00\x00"s)},
        {"str32 claiming 4 GB", padded("\x81\xa2id\xdb\xff\xff\xff\xff"s)},
        {"bin32 claiming 4 GB", padded("\x81\xa2id\xc6\xff\xff\xff\xff"s)},
        {"arrays nested past the limit", std::string(size, '\x91')},
    };
}

// Nanoseconds per parse of data, over at least `window` of repetitions.
double ns_per_parse(std::string_view data, bool binary, std::chrono::duration<double> window, std::uint64_t& parsed) {
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t n = 0;
    std::size_t refused = 0;
    do {
        for (int i = 0; i < 64; ++i, ++n) refused += net::detail::parse_message(data, binary).error.empty() ? 0 : 1;
    } while (std::chrono::steady_clock::now() - start < window);
    parsed += n;
    (void)refused;
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / static_cast<double>(n);
}

}  // namespace

run_report run_bomb(const bench_config& cfg) {
    run_report out = make_report(cfg, "");
    out.mode = "once";
    constexpr std::size_t size = 4096;
    const auto started = std::chrono::steady_clock::now();
    const auto window = std::chrono::duration<double>(std::max(0.2, cfg.load.duration.count() / 8));
    std::uint64_t parsed = 0;
    const std::string normal = normal_message(size);
    if (!net::detail::parse_message(normal, true).error.empty()) return failed(std::move(out), "the normal message does not parse");
    const double normal_ns = ns_per_parse(normal, true, window, parsed);
    double worst = 0;
    std::string worst_name;
    for (const auto& [name, bomb] : bomb_messages(size)) {
        if (net::detail::parse_message(bomb, true).error.empty()) return failed(std::move(out), name + " was accepted");
        const double ns = ns_per_parse(bomb, true, window, parsed);
        out.latency_ns.record(static_cast<std::uint64_t>(ns));
        out.extra["bomb_ns: " + name] = ns;
        if (ns > worst) {
            worst = ns;
            worst_name = name;
        }
    }
    // JSON text: nesting past the limit against a normal JSON message of the same size.
    const std::string normal_text =
        fmt::format(R"({{"id": 1, "path": "/v1/graphs/g/nodes/1/count", "body": {{"pad": "{}"}}}})", std::string(size - 68, 'x'));
    const double normal_text_ns = ns_per_parse(normal_text, false, window, parsed);
    const double deep_text_ns = ns_per_parse(std::string(normal_text.size(), '['), false, window, parsed);
    out.ops = parsed;
    out.unit = "parses";
    out.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    finish_throughput(out);
    out.extra["message_bytes"] = static_cast<double>(size);
    out.extra["normal_ns"] = normal_ns;
    out.extra["worst_bomb_ns"] = worst;
    out.extra["worst_ratio"] = normal_ns > 0 ? worst / normal_ns : 0;
    out.extra["json_normal_ns"] = normal_text_ns;
    out.extra["json_deep_ns"] = deep_text_ns;
    out.extra["json_ratio"] = normal_text_ns > 0 ? deep_text_ns / normal_text_ns : 0;
    out.note = fmt::format("cairn's WebSocket message parser, in process: {}-byte msgpack bombs vs a normal message of the "
                           "same size (worst: {}), and JSON nested past the limit vs normal JSON",
                           size, worst_name);
    return out;
}

}  // namespace cairn::bench
