#include "net/detail/http_metrics.hpp"

#include "net/router.hpp"

#include <string>

namespace cairn::net::detail {

namespace {
constexpr const char* requests_name = "cairn_http_requests_total";
constexpr const char* requests_help = "HTTP requests answered, by route pattern and status code";
}  // namespace

http_metrics::http_metrics(core::registry& reg, const router& r)
    : reg_(reg),
      router_(r),
      routes_cached_(r.pattern_count()),
      cells_(new std::atomic<core::counter*>[(routes_cached_ + 1) * status_count]),
      duration_(reg.add_histogram("cairn_http_request_duration_seconds",
                                  "Time from a request read to its response ready to write",
                                  core::histogram::latency_bounds())),
      connections_(reg.add_gauge("cairn_http_connections", "Open HTTP connections")),
      accept_errors_(reg.add_counter("cairn_http_accept_errors_total",
                                     "Failed accepts (e.g. EMFILE); the listener backs off after each")),
      evictions_(reg.add_counter("cairn_http_connections_evicted_total",
                                 "Connections waiting for a request closed to admit a new one at limits.connections_max")),
      tls_handshake_failures_(reg.add_counter("cairn_tls_handshake_failures_total",
                                              "TLS connections that ended before their handshake did (a plain-text "
                                              "client, a refused client certificate, a timeout)")) {
    for (std::size_t i = 0; i < (routes_cached_ + 1) * status_count; ++i) {
        cells_[i].store(nullptr, std::memory_order_relaxed);
    }
}

core::counter& http_metrics::lookup(std::size_t route_index, unsigned status) {
    const std::string route = route_index == router::npos ? std::string("unmatched") : router_.pattern(route_index);
    return reg_.add_counter(requests_name, requests_help, {{"route", route}, {"code", std::to_string(status)}});
}

void http_metrics::count_request(std::size_t route_index, unsigned status) {
    const std::size_t row = route_index == router::npos ? routes_cached_ : route_index;
    if (row > routes_cached_ || (row == routes_cached_ && route_index != router::npos) || status < status_first ||
        status >= status_first + status_count) {
        lookup(route_index, status).inc();  // A route added after the server was built: slow but correct.
        return;
    }
    std::atomic<core::counter*>& cell = cells_[row * status_count + (status - status_first)];
    core::counter* c = cell.load(std::memory_order_acquire);
    if (c == nullptr) {
        // The registry returns the same cell for the same labels, so a race here is harmless.
        c = &lookup(route_index, status);
        cell.store(c, std::memory_order_release);
    }
    c->inc();
}

}  // namespace cairn::net::detail
