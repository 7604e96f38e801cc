// A small blocking HTTP/1.1 client for the `cairn` CLI: one request per call to a cairnd's admin
// API, over a private io_context, with one deadline for connect, write and read. Owns nothing
// between calls; not thread-safe.
#pragma once

#include "core/result.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace boost::asio::ssl {
class context;
}

namespace cairn::cli {

struct endpoint {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    bool https = false;
    // With https: the client TLS context (client::make_tls_context), made once per command.
    std::shared_ptr<boost::asio::ssl::context> tls;
};

// Parses "http://host[:port][/]" or "https://host[:port][/]" (default ports 80 and 443); nullopt
// if it is anything else.
std::optional<endpoint> parse_url(std::string_view url);

struct reply {
    unsigned status = 0;
    std::string content_type;
    unsigned retry_after_s = 0;  // Retry-After in seconds, 0 when absent
    std::string body;
};

// Sends method target (with body of content_type, and "Authorization: Bearer token" unless token is
// empty) and returns the answer, whatever its status. Errors: resolving, connecting, writing or
// reading failed, or beast::error::timeout once timeout passed.
[[nodiscard]] core::result<reply> http_call(const endpoint& to, std::string_view method, std::string_view target,
                                            std::string_view body, std::string_view token,
                                            std::chrono::milliseconds timeout,
                                            std::string_view content_type = "application/json");

}  // namespace cairn::cli
