// The HTTP server's metrics: requests by route pattern and status, request duration, open
// connections, accept errors and connections closed to admit others. Counter cells are looked up once per (route, status) and then
// cached, so the request path takes no lock. Any thread.
#pragma once

#include "core/metrics.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>

namespace cairn::net {
class router;
}

namespace cairn::net::detail {

class http_metrics {
public:
    // r's patterns are read now and on cache misses; r and reg must outlive this object.
    http_metrics(core::registry& reg, const router& r);

    // route_index: the router's index, or router::npos for requests that matched no route.
    void count_request(std::size_t route_index, unsigned status);
    void observe_duration(std::chrono::nanoseconds d) noexcept { duration_.observe(d); }
    void set_connections(std::size_t n) noexcept { connections_.set(static_cast<double>(n)); }
    void count_accept_error() noexcept { accept_errors_.inc(); }
    void count_eviction() noexcept { evictions_.inc(); }
    void count_tls_handshake_failure() noexcept { tls_handshake_failures_.inc(); }
    std::uint64_t accept_errors() const noexcept { return accept_errors_.value(); }

private:
    static constexpr unsigned status_first = 100;
    static constexpr unsigned status_count = 500;  // 100..599

    core::counter& lookup(std::size_t route_index, unsigned status);

    core::registry& reg_;
    const router& router_;
    std::size_t routes_cached_;  // routes known at construction; the last cache row is "unmatched"
    std::unique_ptr<std::atomic<core::counter*>[]> cells_;
    core::histogram& duration_;
    core::gauge& connections_;
    core::counter& accept_errors_;
    core::counter& evictions_;
    core::counter& tls_handshake_failures_;
};

}  // namespace cairn::net::detail
