#include "net/detail/journal_write.hpp"

#include "core/text_rules.hpp"
#include "journal/journal.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "shards/journal_await.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace cairn::net::detail {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr std::size_t idempotency_key_bytes_max = 200;

}  // namespace

response journal_error(const request& req, const core::error_code& ec) {
    response res;
    if (ec == core::errc::journal_full) {
        res = problem(problems::journal_full, "the journal has reached its size limit; writes resume when applied ops are retired",
                      std::nullopt, req.version(), req.keep_alive());
        res.set(http::field::retry_after, "30");
    } else if (ec == core::errc::disk_full) {
        res = problem(problems::disk_full, "the journal's disk is full; writes resume when there is room (nothing acknowledged is lost)",
                      std::nullopt, req.version(), req.keep_alive());
        res.set(http::field::retry_after, "30");
    } else if (ec == core::errc::overloaded) {
        res = problem(problems::overloaded, "too many writes are waiting to be journaled or applied; retry later", std::nullopt,
                      req.version(), req.keep_alive());
        res.set(http::field::retry_after, "1");
    } else if (ec == core::errc::shutting_down) {
        res = problem(problems::shutting_down, "this gateway is shutting down; retry on another or later", std::nullopt, req.version(),
                      req.keep_alive());
        res.set(http::field::retry_after, "5");
    } else {
        res = problem(problems::journal_failed, "the journal cannot commit; this gateway must restart (nothing acknowledged is lost)",
                      std::nullopt, req.version(), req.keep_alive());
        res.set(http::field::retry_after, "10");
    }
    return res;
}

namespace {

// "after" is what a read on any gateway passes as ?after= to see this write (<node id>:<seq>).
std::string render_appended(const journal::appended& a, std::uint64_t node_id) {
    if (a.ts.size() == 1) {
        return fmt::format(R"({{"seq":{},"after":"{}:{}","ts":"{}","op_id":"{}","deduplicated":{}}})", a.last_seq,
                           node_id, a.last_seq, a.ts[0], a.op_ids[0], a.deduplicated);
    }
    std::string out = fmt::format(R"({{"first_seq":{},"seq":{},"after":"{}:{}","count":{},"deduplicated":{},"ts":[)",
                                  a.first_seq, a.last_seq, node_id, a.last_seq, a.ts.size(), a.deduplicated);
    for (std::size_t i = 0; i < a.ts.size(); ++i) fmt::format_to(std::back_inserter(out), "{}\"{}\"", i ? "," : "", a.ts[i]);
    out += "]}";
    return out;
}

}  // namespace

asio::awaitable<response> async_journal_write(gateway& gw, route_context& ctx, std::vector<core::op> ops) {
    const auto& req = ctx.req;
    const auto wait_mode = ctx.query_param("wait");
    if (wait_mode && *wait_mode != "applied") {
        co_return bad_field(req, "wait", "must be \"applied\" (answer once every shard the write touches applied it)");
    }
    // after= is not a write parameter; parse_wait_params only contributes timeout_ms here.
    auto wait = parse_wait_params(ctx, gw.lim, 0, gw.journal.node_id());
    if (auto* e = std::get_if<input_error>(&wait)) co_return bad_field(req, e->field, e->detail);
    const auto wait_timeout = std::get<wait_params>(wait).timeout;
    std::string key;
    if (auto it = req.find("Idempotency-Key"); it != req.end()) {
        key = std::string(it->value());
        if (key.empty() || key.size() > idempotency_key_bytes_max || core::has_control_chars(key)) {
            co_return problem(problems::invalid_field, fmt::format("Idempotency-Key must be 1 to {} bytes with no control characters",
                                          idempotency_key_bytes_max),
                              "Idempotency-Key", req.version(), req.keep_alive());
        }
    }
    // Backpressure: while the journal's queue is full, this request waits (bounded) rather
    // than queue without limit; past the deadline it is refused with Retry-After.
    const auto deadline = std::chrono::steady_clock::now() + gw.lim.journal_wait_max;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (auto delay = 1ms;; delay = std::min(delay * 2, 50ms)) {
        auto r = co_await shards::async_append(gw.journal, ops, key);
        if (r) {
            if (wait_mode) {
                // The shards a read of these ops goes to, by the route table in force (a split's old
                // owner applies the moved half's ops until reads move: docs/resharding.md).
                const auto routes = gw.routing.load();
                std::vector<core::shard_index> touched;
                for (std::size_t i = 0; i < ops.size(); ++i) {
                    // A counter op: its owner in the read map, and in the base map (its tables that
                    // leave shard_on out are counted there, and read over every shard).
                    const shards::counter_maps counters{routes->read_map(), routes->base_map()};
                    for (const auto s : shards::shards_of(ops[i], routes->read_map(), &counters)) touched.push_back(s);
                }
                std::sort(touched.begin(), touched.end());
                touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
                auto behind = co_await gw.shards.async_wait_applied(r.value().last_seq, std::move(touched), wait_timeout);
                if (!behind.empty()) {
                    co_return not_applied_problem(req, r.value().last_seq, behind, wait_timeout,
                                               "; the write is durable in the journal and will be applied");
                }
            }
            response res{http::status::accepted, req.version()};
            res.set(http::field::content_type, "application/json");
            res.keep_alive(req.keep_alive());
            res.body() = render_appended(r.value(), gw.journal.node_id());
            res.prepare_payload();
            co_return res;
        }
        if (r.error() != core::errc::overloaded || std::chrono::steady_clock::now() + delay > deadline) {
            co_return journal_error(req, r.error());
        }
        timer.expires_after(delay);
        core::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace cairn::net::detail
