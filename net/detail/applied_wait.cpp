#include "net/detail/applied_wait.hpp"

#include "core/text_rules.hpp"
#include "net/gateway.hpp"
#include "shards/shard_set.hpp"

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

std::variant<wait_params, input_error> parse_wait_params(const route_context& ctx, const core::limits& lim,
                                                         std::uint64_t last_seq) {
    wait_params w;
    const auto max_ms = static_cast<std::uint64_t>(lim.applied_wait_max.count());
    w.timeout = std::chrono::milliseconds(std::min<std::uint64_t>(5000, max_ms));
    if (auto t = ctx.query_param("timeout_ms")) {
        auto v = parse_uint(*t, 0, max_ms);
        if (!v) return input_error{"timeout_ms", fmt::format("must be an integer between 0 and {}", max_ms)};
        w.timeout = std::chrono::milliseconds(*v);
    }
    if (auto a = ctx.query_param("after")) {
        if (!parse_uint(*a, 0, std::numeric_limits<std::uint64_t>::max())) {
            return input_error{"after", "must be the seq of a write's acknowledgement (a non-negative integer)"};
        }
        auto v = parse_uint(*a, 0, last_seq);
        // A seq this gateway has not issued yet would only time out: say so at once.
        if (!v) return input_error{"after", fmt::format("is beyond this gateway's last journaled seq {}", last_seq)};
        w.after = *v;
    }
    return w;
}

boost::asio::awaitable<std::optional<response>> async_wait_after(gateway& gw, const request& req, const wait_params& wait,
                                                                 std::vector<core::shard_index> shards) {
    if (!wait.after) co_return std::nullopt;
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
