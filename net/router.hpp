// Maps (method, path) to a handler. Patterns are split into segments once, when added; a
// request is matched segment by segment without regexes or allocations. Build the router
// before the server starts; afterwards it is read-only and any thread may route through it.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "net/problem.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::net {

// The named captures of a matched pattern, e.g. "graph" -> "follows" for /v1/graphs/{graph}.
// Values are raw path segments (not percent-decoded) that view into the request's target.
struct path_params {
    static constexpr std::size_t captures_max = 8;

    std::optional<std::string_view> get(std::string_view name) const;
    std::size_t size() const noexcept { return size_; }

    // Used by the router while matching.
    void push(std::string_view name, std::string_view value) noexcept;
    void clear() noexcept { size_ = 0; }

private:
    std::array<std::pair<std::string_view, std::string_view>, captures_max> items_{};
    std::size_t size_ = 0;
};

// What a handler sees. All references stay valid until the handler's awaitable completes.
struct route_context {
    const request& req;
    const path_params& params;
    std::string_view query;  // the raw query string, without '?'
    core::role caller_role;

    // The first value of name in the query, percent-decoded ('+' is a space); an empty value
    // for "?name" or "?name="; nullopt when name is absent.
    std::optional<std::string> query_param(std::string_view name) const;
};

// A handler runs on the session's strand. An exception it throws becomes a 500 problem.
using handler = std::function<boost::asio::awaitable<response>(route_context&)>;

class router {
public:
    // Returned as the route index of a request that matched no pattern.
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    // pattern: "/" followed by segments separated by '/'; each segment is a literal or {name}
    // (a capture matches one non-empty segment). A path matches only exactly (no prefix match,
    // a trailing slash matters); the query string is stripped first. Where several patterns
    // match, the one with a literal at the first differing segment wins. required applies only
    // when tokens are configured (without them every caller is admin). Adding the same method
    // and pattern twice, or a malformed pattern, is a programmer error (asserts).
    void add(http::verb method, std::string pattern, core::role required, handler h);

    // Answers req: the handler's response, or a problem: 404 for an unknown path, 405 with
    // Allow for a known path and a wrong method, 403 if caller_role is below the route's, 500
    // if the handler throws. req must stay valid until the awaitable completes.
    boost::asio::awaitable<response> async_route(const request& req, core::role caller_role) const;
    // The same, and sets route_index (before the first suspension) to the index of the matched
    // pattern (see pattern()), or npos when no pattern matched the path.
    boost::asio::awaitable<response> async_route(const request& req, core::role caller_role,
                                                 std::size_t& route_index) const;

    // Patterns in the order they were first added; indexes are stable.
    std::size_t pattern_count() const noexcept { return paths_.size(); }
    const std::string& pattern(std::size_t route_index) const { return paths_.at(route_index).pattern; }

    // Every (method, pattern) added, with the role it needs, in the order added: what the API
    // description must describe (the drift test compares the two).
    struct route_info {
        http::verb method;
        std::string_view pattern;
        core::role required;
    };
    std::vector<route_info> routes() const;

    // Splits a request target into path and query (without '?').
    static std::pair<std::string_view, std::string_view> split_target(std::string_view target) noexcept;

private:
    struct segment {
        std::string text;  // the literal, or the capture's name
        bool capture = false;
    };
    struct method_entry {
        http::verb method;
        core::role required;
        handler h;
    };
    struct path_entry {
        std::string pattern;
        std::vector<segment> segments;
        std::vector<method_entry> methods;
    };

    // Matches path against paths_[i], filling params; false if it does not match.
    bool match(const path_entry& p, const std::array<std::string_view, 16>& parts, std::size_t part_count,
               path_params& params) const;

    std::vector<path_entry> paths_;
    std::vector<std::size_t> order_;  // indexes into paths_, most specific first
};

}  // namespace cairn::net
