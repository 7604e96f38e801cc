#include "net/router.hpp"

#include "net/auth.hpp"

#include "core/assert.hpp"

#include <boost/beast/http/field.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace cairn::net {

namespace {

constexpr std::size_t parts_max = 16;
using parts_array = std::array<std::string_view, parts_max>;

// Splits "/a/b" into {"a", "b"}; "/" into {""}. Returns parts_max + 1 when there are too many
// parts for any pattern, and 0 when the path does not start with '/'.
std::size_t split_path(std::string_view path, parts_array& parts) {
    if (path.empty() || path.front() != '/') return 0;
    path.remove_prefix(1);
    std::size_t n = 0;
    for (;;) {
        if (n == parts_max) return parts_max + 1;
        const auto slash = path.find('/');
        parts[n++] = path.substr(0, slash);
        if (slash == std::string_view::npos) return n;
        path.remove_prefix(slash + 1);
    }
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes %XX and '+'; an invalid escape is kept as it is.
std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

bool needs_decoding(std::string_view s) {
    return s.find_first_of("%+") != std::string_view::npos;
}

}  // namespace

std::optional<std::string_view> path_params::get(std::string_view name) const {
    for (std::size_t i = 0; i < size_; ++i) {
        if (items_[i].first == name) return items_[i].second;
    }
    return std::nullopt;
}

void path_params::push(std::string_view name, std::string_view value) noexcept {
    CAIRN_ASSERT(size_ < captures_max);
    items_[size_++] = {name, value};
}

std::optional<std::string> route_context::query_param(std::string_view name) const {
    std::string_view rest = query;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        const auto eq = pair.find('=');
        const std::string_view key = pair.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        const bool key_matches = needs_decoding(key) ? percent_decode(key) == name : key == name;
        if (!key_matches) continue;
        return needs_decoding(value) ? percent_decode(value) : std::string(value);
    }
    return std::nullopt;
}

std::vector<router::route_info> router::routes() const {
    std::vector<route_info> out;
    for (const auto& p : paths_) {
        for (const auto& m : p.methods) out.push_back({m.method, p.pattern, m.required});
    }
    return out;
}

std::pair<std::string_view, std::string_view> router::split_target(std::string_view target) noexcept {
    const auto q = target.find('?');
    if (q == std::string_view::npos) return {target, {}};
    return {target.substr(0, q), target.substr(q + 1)};
}

void router::add(http::verb method, std::string pattern, core::role required, handler h) {
    CAIRN_ASSERT(h != nullptr);
    auto existing = std::find_if(paths_.begin(), paths_.end(), [&](const path_entry& p) { return p.pattern == pattern; });
    if (existing != paths_.end()) {
        for (const auto& m : existing->methods) {
            CAIRN_ASSERT(m.method != method);  // The same method and pattern were added twice.
        }
        existing->methods.push_back({method, required, std::move(h)});
        return;
    }

    path_entry p;
    p.pattern = std::move(pattern);
    parts_array parts;
    const std::size_t n = split_path(p.pattern, parts);
    CAIRN_ASSERT(n >= 1);          // A pattern starts with '/'.
    CAIRN_ASSERT(n <= parts_max);  // At most parts_max segments.
    std::size_t captures = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string_view part = parts[i];
        segment s;
        if (part.size() >= 2 && part.front() == '{' && part.back() == '}') {
            s.capture = true;
            s.text = std::string(part.substr(1, part.size() - 2));
            CAIRN_ASSERT(!s.text.empty());
            for (const auto& other : p.segments) {
                CAIRN_ASSERT(!(other.capture && other.text == s.text));  // Capture names are unique.
            }
            ++captures;
        } else {
            CAIRN_ASSERT(part.find_first_of("{}") == std::string_view::npos);
            s.text = std::string(part);
        }
        p.segments.push_back(std::move(s));
    }
    CAIRN_ASSERT(captures <= path_params::captures_max);
    p.methods.push_back({method, required, std::move(h)});
    paths_.push_back(std::move(p));

    // Most specific first: at the first segment where two patterns differ in kind, the literal
    // wins. Ties keep the order of addition.
    order_.push_back(paths_.size() - 1);
    std::stable_sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
        const auto& sa = paths_[a].segments;
        const auto& sb = paths_[b].segments;
        const std::size_t common = std::min(sa.size(), sb.size());
        for (std::size_t i = 0; i < common; ++i) {
            if (sa[i].capture != sb[i].capture) return !sa[i].capture;
        }
        return false;
    });
}

bool router::match(const path_entry& p, const parts_array& parts, std::size_t part_count,
                   path_params& params) const {
    if (p.segments.size() != part_count) return false;
    params.clear();
    for (std::size_t i = 0; i < part_count; ++i) {
        const segment& s = p.segments[i];
        if (s.capture) {
            if (parts[i].empty()) return false;
            params.push(s.text, parts[i]);
        } else if (s.text != parts[i]) {
            return false;
        }
    }
    return true;
}

boost::asio::awaitable<response> router::async_route(const request& req, core::role caller_role) const {
    std::size_t ignored = npos;
    co_return co_await async_route(req, caller_role, ignored);
}

boost::asio::awaitable<response> router::async_route(const request& req, core::role caller_role,
                                                     std::size_t& route_index) const {
    route_index = npos;
    const auto [path, query] = split_target(to_string_view(req.target()));
    parts_array parts;
    const std::size_t part_count = split_path(path, parts);

    path_params params;
    const method_entry* found = nullptr;
    bool path_known = false;
    if (part_count >= 1 && part_count <= parts_max) {
        for (const std::size_t i : order_) {
            const path_entry& p = paths_[i];
            if (!match(p, parts, part_count, params)) continue;
            if (!path_known) route_index = i;  // The most specific matching pattern names the route.
            path_known = true;
            for (const auto& m : p.methods) {
                if (m.method == req.method()) {
                    found = &m;
                    break;
                }
            }
            if (found) {
                route_index = i;
                break;
            }
        }
    }

    if (!path_known) {
        co_return problem(problems::not_found, "no route matches this path",
                          std::nullopt, req.version(), req.keep_alive());
    }
    if (!found) {
        // Rare: build the Allow list from every pattern that matches this path.
        std::vector<http::verb> verbs;
        for (const std::size_t i : order_) {
            if (!match(paths_[i], parts, part_count, params)) continue;
            for (const auto& m : paths_[i].methods) {
                if (std::find(verbs.begin(), verbs.end(), m.method) == verbs.end()) verbs.push_back(m.method);
            }
        }
        std::string allow;
        for (const auto v : verbs) {
            if (!allow.empty()) allow += ", ";
            const auto name = http::to_string(v);
            allow.append(name.data(), name.size());
        }
        response res = problem(problems::method_not_allowed, "this path does not support this method", std::nullopt, req.version(),
                               req.keep_alive());
        res.set(http::field::allow, allow);
        co_return res;
    }
    if (caller_role == core::role::none && found->required != core::role::none) {
        co_return auth::unauthorized(req);  // no token at all: ask for one
    }
    if (static_cast<int>(caller_role) < static_cast<int>(found->required)) {
        co_return problem(problems::forbidden, "this token's role does not allow this route", std::nullopt, req.version(),
                          req.keep_alive());
    }

    route_context ctx{req, params, query, caller_role};
    try {
        co_return co_await found->h(ctx);
    } catch (const std::exception& e) {
        spdlog::error("handler for {} {} threw: {}", to_string_view(http::to_string(req.method())), paths_[route_index].pattern,
                      e.what());
    } catch (...) {
        spdlog::error("handler for {} {} threw an unknown exception", to_string_view(http::to_string(req.method())),
                      paths_[route_index].pattern);
    }
    co_return problem(problems::internal, "the server failed to handle this request", std::nullopt, req.version(), req.keep_alive());
}

}  // namespace cairn::net
