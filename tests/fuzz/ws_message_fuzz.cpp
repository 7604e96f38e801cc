// Fuzz target: a WebSocket request message (JSON text and msgpack binary frames). Never a crash,
// never an exception; what is accepted has a readable id and a path that starts with '/' (a
// SUBSCRIBE's with /v1/feed, and no body; an UNSUBSCRIBE has nothing but its id), and its body is
// JSON text that parses again (with nlohmann, a parser independent of the one that read it) and,
// from a text frame, is a piece of the frame as it came.
#include "net/detail/ws_message.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // The first byte picks the frame type, so one corpus covers both.
    const bool binary = (data[0] & 1) != 0;
    const std::string_view frame(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto m = cairn::net::detail::parse_message(frame, binary);
    if (m.error.empty()) {
        using cairn::net::detail::message_kind;
        if (m.id.is_null()) std::abort();
        if (m.kind == message_kind::unsubscribe) {
            // Only an id: nothing else may have been taken.
            if (!m.path.empty() || !m.body.empty() || !m.idempotency_key.empty()) std::abort();
            return 0;
        }
        if (m.path.empty() || m.path.front() != '/') std::abort();
        if (m.kind == message_kind::subscribe && (!m.path.starts_with("/v1/feed") || !m.body.empty())) std::abort();
        if (!m.body.empty() && nlohmann::json::parse(m.body, nullptr, false).is_discarded()) std::abort();
        if (!binary && frame.find(m.body) == std::string_view::npos) std::abort();
        // Every byte of an accepted text frame was checked: the whole frame is JSON to nlohmann too.
        if (!binary && nlohmann::json::parse(frame, nullptr, false).is_discarded()) std::abort();
    }
    return 0;
}
