#include "net/detail/ws_message.hpp"

#include "net/detail/json_escape.hpp"

#include <msgpack.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace cairn::net::detail {
namespace {

using json = nlohmann::json;
namespace http = boost::beast::http;
constexpr int message_depth_max = ws_message_depth_max;
constexpr std::size_t id_string_bytes_max = ws_id_string_bytes_max;

// Parses JSON text with a depth limit (nlohmann's parser itself is iterative), refusing a key
// that appears twice in one object (which one would win is the reader's guess, not the client's).
std::optional<json> parse_json_limited(std::string_view text) {
    bool refused = false;
    std::vector<std::vector<std::string>> keys;  // the keys seen, per open object
    auto cb = [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth > message_depth_max) refused = true;
        if (refused) return false;
        switch (event) {
            case json::parse_event_t::object_start: keys.emplace_back(); break;
            case json::parse_event_t::object_end:
                if (!keys.empty()) keys.pop_back();
                break;
            case json::parse_event_t::key: {
                if (keys.empty()) break;
                auto& seen = keys.back();
                const auto& k = parsed.get_ref<const std::string&>();
                if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
                    refused = true;
                    return false;
                }
                seen.push_back(k);
                break;
            }
            default: break;
        }
        return true;
    };
    json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
    if (refused || j.is_discarded()) return std::nullopt;
    return j;
}

// True when no map of o (at most message_depth_max deep) has a key twice.
bool map_keys_unique(const msgpack::object& o) {
    if (o.type == msgpack::type::ARRAY) {
        for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
            if (!map_keys_unique(o.via.array.ptr[i])) return false;
        }
    } else if (o.type == msgpack::type::MAP) {
        std::vector<std::string_view> keys;
        keys.reserve(o.via.map.size);
        for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
            const auto& kv = o.via.map.ptr[i];
            if (kv.key.type == msgpack::type::STR) keys.emplace_back(kv.key.via.str.ptr, kv.key.via.str.size);
            if (!map_keys_unique(kv.val)) return false;
        }
        std::sort(keys.begin(), keys.end());
        if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return false;
    }
    return true;
}

// Parses msgpack with msgpack-c's iterative unpacker and its depth limit first; nlohmann's
// recursive reader then only sees input known to be shallow.
std::optional<json> parse_msgpack_limited(std::string_view bytes) {
    try {
        // Every element takes at least a byte (a map entry two), so no header may claim more: a
        // frame of a few bytes that claims millions of elements is refused before msgpack-c
        // allocates room for them (an allocation bomb).
        const std::size_t elements = std::min<std::size_t>(1 << 20, bytes.size());
        const msgpack::unpack_limit limit(elements, elements / 2, bytes.size(), bytes.size(), bytes.size(),
                                          message_depth_max);
        std::size_t offset = 0;
        const auto oh = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
        if (offset != bytes.size() || !map_keys_unique(oh.get())) return std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
    json j = json::from_msgpack(bytes.begin(), bytes.end(), true, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

// msgpack strings are bytes: nlohmann keeps them as they come, and would throw when such a string
// is later written as JSON. Every key and string value must be UTF-8 (the depth is bounded above).
bool strings_are_utf8(const json& j) {
    if (j.is_string()) return is_valid_utf8(j.get_ref<const std::string&>());
    if (j.is_object()) {
        for (const auto& [key, value] : j.items()) {
            if (!is_valid_utf8(key) || !strings_are_utf8(value)) return false;
        }
        return true;
    }
    if (j.is_array()) {
        for (const auto& value : j) {
            if (!strings_are_utf8(value)) return false;
        }
    }
    return true;
}

message parse_unchecked(std::string_view data, bool binary) {
    message m;
    auto parsed = binary ? parse_msgpack_limited(data) : parse_json_limited(data);
    if (!parsed || !parsed->is_object()) {
        m.error = binary ? "a binary frame must be one msgpack map (nested at most 32 deep, no key twice in a map)"
                         : "a text frame must be one JSON object (nested at most 32 deep, no key twice in an object)";
        return m;
    }
    json& j = *parsed;
    if (auto it = j.find("id"); it != j.end()) {
        const bool ok_number = it->is_number_integer() || it->is_number_unsigned();
        const bool ok_string = it->is_string() && it->get_ref<const std::string&>().size() <= id_string_bytes_max &&
                               is_valid_utf8(it->get_ref<const std::string&>());
        if (ok_number || ok_string) m.id = *it;
    }
    if (m.id.is_null()) {
        m.error = "id must be an integer or a string of at most 128 bytes; answers carry it back";
        m.error_field = "id";
        return m;
    }
    if (binary && !strings_are_utf8(j)) {
        m.error = "every string of a binary frame (keys included) must be valid UTF-8";
        return m;
    }
    for (const auto& [key, value] : j.items()) {
        if (std::find(ws_message_members.begin(), ws_message_members.end(), key) == ws_message_members.end()) {
            m.error = "unknown member (known: id, method, path, body, idempotency_key)";
            m.error_field = key;
            return m;
        }
    }
    if (auto it = j.find("method"); it != j.end()) {
        const std::string_view name = it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view{};
        const auto verb = http::string_to_verb(boost::beast::string_view(name.data(), name.size()));
        if (name == "SUBSCRIBE") {
            m.kind = message_kind::subscribe;
        } else if (name == "UNSUBSCRIBE") {
            m.kind = message_kind::unsubscribe;
        } else if (verb == http::verb::get || verb == http::verb::post || verb == http::verb::put || verb == http::verb::delete_) {
            m.method = verb;
        } else {
            m.error = "method must be \"GET\", \"POST\", \"PUT\", \"DELETE\", \"SUBSCRIBE\" or \"UNSUBSCRIBE\"";
            m.error_field = "method";
            return m;
        }
    }
    auto path = j.find("path");
    if (m.kind == message_kind::unsubscribe) {
        // It names the subscription by its id alone.
        if (path != j.end() || j.contains("body") || j.contains("idempotency_key")) {
            m.error = "UNSUBSCRIBE takes only the id of the SUBSCRIBE it ends";
            m.error_field = path != j.end() ? "path" : j.contains("body") ? "body" : "idempotency_key";
        }
        return m;
    }
    if (path == j.end() || !path->is_string() || path->get_ref<const std::string&>().empty() ||
        path->get_ref<const std::string&>().front() != '/' || path->get_ref<const std::string&>().size() > 8192) {
        m.error = "path must be the route's path and query, starting with /, e.g. \"/v1/graphs/follows/edges/1/2\"";
        m.error_field = "path";
        return m;
    }
    if (m.kind == message_kind::subscribe) {
        const std::string_view p = path->get_ref<const std::string&>();
        if (p != "/v1/feed" && !p.starts_with("/v1/feed?")) {
            m.error = "SUBSCRIBE works on the change feed: path must be \"/v1/feed\" with its query, e.g. \"/v1/feed?from=0&model=edge\"";
            m.error_field = "path";
            return m;
        }
        if (j.contains("body") || j.contains("idempotency_key")) {
            m.error = "SUBSCRIBE takes an id and a path only";
            m.error_field = j.contains("body") ? "body" : "idempotency_key";
            return m;
        }
    }
    m.path = path->get_ref<const std::string&>();
    if (auto it = j.find("body"); it != j.end() && !it->is_null()) m.body = it->dump();
    if (auto it = j.find("idempotency_key"); it != j.end()) {
        if (!it->is_string()) {
            m.error = "idempotency_key must be a string";
            m.error_field = "idempotency_key";
            return m;
        }
        m.idempotency_key = it->get_ref<const std::string&>();
    }
    return m;
}

}  // namespace

message parse_message(std::string_view data, bool binary) {
    try {
        return parse_unchecked(data, binary);
    } catch (const std::exception&) {
        // Only bad_alloc, or a library throwing where its documentation says it does not: either
        // way the message is refused, never the connection.
        message m;
        m.error = "the message cannot be read";
        return m;
    }
}

}  // namespace cairn::net::detail
