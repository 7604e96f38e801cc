#include "net/detail/applied_wait.hpp"

#include "core/text_rules.hpp"
#include "net/gateway.hpp"
#include "core/hlc.hpp"
#include "journal/journal.hpp"
#include "shards/gateways.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/beast/http/field.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace cairn::net::detail {

namespace asio = boost::asio;

response bad_field(const request& req, std::string_view field, std::string_view detail) {
    return problem(problems::invalid_field, fmt::format("{} {}", field, detail),
                   field, req.version(), req.keep_alive());
}

response shard_problem(const request& req, const core::error_code& ec) {
    auto res = problem(problems::shard_unavailable, fmt::format("a shard this read needs did not answer: {}", ec.message()), std::nullopt,
                       req.version(), req.keep_alive());
    res.set(http::field::retry_after, "1");
    return res;
}

std::optional<input_error> unknown_query_param(std::string_view query, std::span<const std::string_view> known) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        const std::string_view key = pair.substr(0, pair.find('='));
        if (key.empty()) continue;
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            std::string names;
            for (auto k : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", k);
            return input_error{std::string(key), fmt::format("is not a parameter of this route (known: {})", names)};
        }
    }
    return std::nullopt;
}

std::variant<id_format, input_error> parse_id_format(const route_context& ctx) {
    const auto v = ctx.query_param("ids");
    if (!v || *v == "number") return id_format::number;
    if (*v == "string") return id_format::string;
    return input_error{"ids", "must be \"number\" or \"string\" (64-bit ids and positions as decimal strings)"};
}

std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max) noexcept {
    const auto v = core::parse_decimal_uint64(text);
    if (!v || *v < min || *v > max) return std::nullopt;
    return v;
}

std::variant<wait_params, input_error> parse_wait_params(const route_context& ctx, const gateway& gw) {
    return parse_wait_params(ctx, gw.lim, gw.journal.last_seq(), gw.journal.node_id());
}

std::variant<wait_params, input_error> parse_wait_params(const route_context& ctx, const core::limits& lim,
                                                         std::uint64_t last_seq, std::uint64_t node_id) {
    wait_params w;
    const auto max_ms = static_cast<std::uint64_t>(lim.applied_wait_max.count());
    w.timeout = std::chrono::milliseconds(std::min<std::uint64_t>(5000, max_ms));
    if (auto t = ctx.query_param("timeout_ms")) {
        auto v = parse_uint(*t, 0, max_ms);
        if (!v) return input_error{"timeout_ms", fmt::format("must be an integer between 0 and {}", max_ms)};
        w.timeout = std::chrono::milliseconds(*v);
    }
    if (auto a = ctx.query_param("after")) {
        const std::string_view text = *a;
        std::string_view seq_text = text;
        if (const auto colon = text.find(':'); colon != std::string_view::npos) {
            const auto node = parse_uint(text.substr(0, colon), 0, core::hlc_node_max);
            const auto seq = parse_uint(text.substr(colon + 1), 0, std::numeric_limits<std::uint64_t>::max());
            if (!node || !seq) {
                return input_error{"after", fmt::format("must be a write acknowledgement's \"after\" (<node id>:<seq>, node "
                                                        "id 0 to {}) or its seq",
                                                        core::hlc_node_max)};
            }
            seq_text = text.substr(colon + 1);
            if (*node != node_id) {  // another gateway's write: its seqs are not this journal's
                w.after = *seq;
                w.after_node = *node;
                return w;
            }
        }
        if (!parse_uint(seq_text, 0, std::numeric_limits<std::uint64_t>::max())) {
            return input_error{"after", "must be the seq of a write's acknowledgement (a non-negative integer) or its "
                                        "\"after\" (<node id>:<seq>)"};
        }
        auto v = parse_uint(seq_text, 0, last_seq);
        // A seq this gateway has not issued yet would only time out: say so at once.
        if (!v) return input_error{"after", fmt::format("is beyond this gateway's last journaled seq {}", last_seq)};
        w.after = *v;
    }
    return w;
}

namespace {

// Another gateway's write: polls the shards' applied marks of its node id until each of shards
// has reached seq, or the timeout.
asio::awaitable<std::optional<response>> async_wait_marks(gateway& gw, const request& req, std::uint64_t node,
                                                         std::uint64_t seq, std::vector<core::shard_index> shards,
                                                         std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    asio::steady_timer pause(co_await asio::this_coro::executor);
    for (auto delay = std::chrono::milliseconds(5);; delay = std::min(delay * 2, std::chrono::milliseconds(100))) {
        // The tasks run on this strand: they share `behind` without locks.
        auto behind = std::make_shared<std::vector<core::shard_index>>();
        auto query = [node, seq, behind](core::shard_index s, shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
            auto mark = co_await shards::async_read_applied_mark(conn, node);
            if (!mark) co_return mark.error();
            if (mark.value() < seq) behind->push_back(s);
            co_return core::success();
        };
        if (auto ec = co_await gw.shards.async_read_each(shards, query, fan_out_deadline(gw.lim))) {
            co_return shard_problem(req, ec);
        }
        if (behind->empty()) co_return std::nullopt;
        std::sort(behind->begin(), behind->end());
        shards = *behind;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            co_return not_applied_problem(
                req, seq, shards, timeout,
                fmt::format(" by the gateway with node id {} (the shards' applied marks of that gateway are behind: it "
                            "applies its own writes, so it must be running and reach those shards)",
                            node));
        }
        pause.expires_after(std::min<std::chrono::steady_clock::duration>(delay, deadline - now));
        core::error_code ec;
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace

boost::asio::awaitable<std::optional<response>> async_wait_after(gateway& gw, const request& req, const wait_params& wait,
                                                                 std::vector<core::shard_index> shards) {
    if (!wait.after) co_return std::nullopt;
    if (wait.after_node) co_return co_await async_wait_marks(gw, req, *wait.after_node, *wait.after, std::move(shards), wait.timeout);
    auto behind = co_await gw.shards.async_wait_applied(*wait.after, std::move(shards), wait.timeout);
    if (behind.empty()) co_return std::nullopt;
    co_return not_applied_problem(req, *wait.after, behind, wait.timeout, "");
}

response not_applied_problem(const request& req, std::uint64_t seq, const std::vector<core::shard_index>& behind,
                             std::chrono::milliseconds timeout, std::string_view what) {
    std::string shards_json = "[";
    for (std::size_t i = 0; i < behind.size(); ++i) fmt::format_to(std::back_inserter(shards_json), "{}{}", i ? "," : "", behind[i]);
    shards_json += ']';
    auto res = problem(problems::not_applied_yet, fmt::format("seq {} was not applied on shard(s) {} within {} ms{}", seq, shards_json,
                                   timeout.count(), what),
                       std::nullopt, req.version(), req.keep_alive());
    // RFC 9457 extension members, so that a client can retry with ?after= without parsing text.
    auto& body = res.body();
    body.pop_back();
    body += fmt::format(R"(,"seq":{},"shards":{}}})", seq, shards_json);
    res.prepare_payload();
    return res;
}

}  // namespace cairn::net::detail
