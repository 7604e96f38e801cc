// Fuzz target: the whole HTTP request path of an in-process cairnd (tests/fuzz/support/gateway.hpp).
// The input is the byte stream of one connection, sent as it is: one request or several pipelined,
// any method, target, headers and body, an upgrade to /v1/ws too. What must hold:
//   - the gateway never crashes (ASan, UBSan) and never hangs: it closes the connection within 8 s
//     of the client closing its side;
//   - what it writes back starts with a complete HTTP/1.1 response, and every complete response
//     whose type is JSON (application/json, application/problem+json) has a body that parses;
//   - it still serves a new connection afterwards (checked every 128 inputs).
#include "tests/fuzz/support/gateway.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

namespace http = boost::beast::http;

[[noreturn]] void fail(const char* what, std::string_view reply) {
    std::fprintf(stderr, "http_request_fuzz: %s; the gateway wrote %zu bytes:\n%.*s\n", what, reply.size(),
                 static_cast<int>(std::min<std::size_t>(reply.size(), 2000)), reply.data());
    std::abort();
}

// Parses one response at the front of bytes; the number of bytes it took, 0 if it is not complete.
std::size_t check_one_response(std::string_view bytes, bool& switching) {
    http::response_parser<http::string_body> p;
    p.header_limit(64 * 1024);
    p.body_limit(16 * 1024 * 1024);
    boost::system::error_code ec;
    std::size_t used = 0;
    while (!p.is_done()) {
        const auto n = p.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        used += n;
        if (ec == http::error::need_more) {
            if (used < bytes.size() && n > 0) {
                ec = {};
                continue;
            }
            p.put_eof(ec);  // a body delimited by the end of the connection
            if (ec) return 0;
            break;
        }
        if (ec) return 0;
    }
    const auto& res = p.get();
    if (res.result_int() == 101) {
        switching = true;  // WebSocket bytes follow
        return used;
    }
    const auto type = res[http::field::content_type];
    if (type.starts_with("application/json") || type.starts_with("application/problem+json")) {
        if (!nlohmann::json::accept(res.body())) fail("a JSON response whose body does not parse", bytes.substr(0, used));
    }
    return used;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const auto reply = cairn::fuzz::exchange(bytes);
    if (!reply) fail("the connection was not closed within 8 s of the client's end", {});
    std::string_view rest = *reply;
    bool first = true;
    bool switching = false;
    while (!rest.empty() && !switching) {
        const auto used = check_one_response(rest, switching);
        if (used == 0) {
            // Only the first response is sure to be whole: a later one may have been cut by a
            // request the gateway refused and closed the connection on (or be a HEAD's).
            if (first) fail("the reply does not start with a complete HTTP response", rest);
            break;
        }
        rest.remove_prefix(used);
        first = false;
    }
    cairn::fuzz::check_still_serving("http_request_fuzz");
    return 0;
}
