#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "apps/cli/admin_client.hpp"

#include "client/http_connection.hpp"

#include <charconv>

namespace cairn::cli {

std::optional<endpoint> parse_url(std::string_view url) {
    endpoint e;
    if (url.starts_with("https://")) {
        e.https = true;
        url.remove_prefix(8);
    } else if (url.starts_with("http://")) {
        url.remove_prefix(7);
    } else {
        return std::nullopt;
    }
    if (!url.empty() && url.back() == '/') url.remove_suffix(1);
    if (url.empty() || url.find('/') != std::string_view::npos) return std::nullopt;
    std::string_view host = url;
    if (url.front() == '[') {  // [v6]:port
        const auto close = url.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        host = url.substr(1, close - 1);
        url.remove_prefix(close + 1);
        if (!url.empty() && url.front() != ':') return std::nullopt;
    } else if (const auto colon = url.rfind(':'); colon != std::string_view::npos) {
        host = url.substr(0, colon);
        url.remove_prefix(colon);
    } else {
        url = {};
    }
    if (host.empty()) return std::nullopt;
    e.host = std::string(host);
    if (!url.empty()) {
        url.remove_prefix(1);  // ':'
        unsigned port = 0;
        auto [ptr, ec] = std::from_chars(url.data(), url.data() + url.size(), port);
        if (ec != std::errc() || ptr != url.data() + url.size() || port == 0 || port > 65535) return std::nullopt;
        e.port = static_cast<std::uint16_t>(port);
    } else {
        e.port = e.https ? 443 : 80;
    }
    return e;
}

core::result<reply> http_call(const endpoint& to, std::string_view method, std::string_view target,
                              std::string_view body, std::string_view token, std::chrono::milliseconds timeout,
                              std::string_view content_type) {
    client::connection_options o;
    o.host = to.host;
    o.port = to.port;
    o.timeout = timeout;
    o.user_agent = "cairn-cli";
    o.content_type = std::string(content_type);
    o.auto_close = true;
    o.tls = to.tls;
    client::blocking_http_connection conn(std::move(o));
    client::header_list headers{{"Accept", "application/json"}, {"Connection", "close"}};
    if (!token.empty()) headers.emplace_back("Authorization", "Bearer " + std::string(token));
    const auto verb = client::http::string_to_verb(boost::beast::string_view(method.data(), method.size()));
    auto r = conn.send(verb, target, std::string(body), headers);
    if (!r) return r.error();
    reply out;
    out.status = r.value().status_code;
    out.content_type = r.value().header(client::http::field::content_type);
    out.retry_after_s = r.value().retry_after_s();
    out.body = std::move(r.value().body);
    return out;
}

}  // namespace cairn::cli
