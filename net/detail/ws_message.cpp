#include "net/detail/ws_message.hpp"

#include "net/detail/json_escape.hpp"
#include "net/detail/msgpack_json.hpp"

#include <msgpack.hpp>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// No tree is built for a message (issue 15): a text frame is read with simdjson's On Demand API,
// member by member, every value checked as it is read and the body kept as the text it came in
// (the route parses it, as it parses an HTTP body); a binary frame is unpacked by msgpack-c into
// its zone, walked once for the rules, and its body written as JSON text straight from the zone.

namespace cairn::net::detail {
namespace {

namespace http = boost::beast::http;
namespace od = simdjson::ondemand;

constexpr std::size_t id_string_bytes_max = ws_id_string_bytes_max;
constexpr std::size_t path_bytes_max = 8192;

enum class member : std::uint8_t { id, method, path, body, idempotency_key, unknown };

member member_of(std::string_view key) {
    if (key == "id") return member::id;
    if (key == "method") return member::method;
    if (key == "path") return member::path;
    if (key == "body") return member::body;
    if (key == "idempotency_key") return member::idempotency_key;
    return member::unknown;
}

// A member whose value must be a string (method, path, idempotency_key).
struct string_member {
    bool present = false;
    bool is_string = false;
    std::string_view text;  // into the parser's buffers, valid until the message is decided
};

// What one pass over a message found, before the rules that give its answer.
struct members {
    nlohmann::json id;  // null: absent or not an acceptable id
    string_member method, path, idempotency_key;
    bool body_present = false;
    std::string body;               // JSON text, empty for none or null
    bool body_representable = true; // binary: false when the body holds bin, ext, NaN or infinity
    bool strings_utf8 = true;       // every key and string is UTF-8 (a text frame's always are: simdjson checks)
    std::optional<std::string> unknown;  // the first unknown member in byte order of the keys
};

void note_unknown(members& found, std::string_view key) {
    if (!found.unknown || key < *found.unknown) found.unknown = std::string(key);
}

// ---- text frames ----------------------------------------------------------------------------

constexpr std::size_t keys_inline = 16;

// Keys of one object or map, to find one that comes twice: inline up to keys_inline, so that
// the common small object allocates nothing.
class key_set {
public:
    explicit key_set(std::size_t n) {
        if (n > keys_inline) large_.reserve(n);
    }
    void add(std::string_view key) {
        if (size_ < keys_inline) {
            small_[size_++] = key;
            return;
        }
        if (large_.empty()) large_.assign(small_.begin(), small_.end());
        large_.push_back(key);
        ++size_;
    }
    bool unique() {
        std::string_view* first = large_.empty() ? small_.data() : large_.data();
        std::sort(first, first + size_);
        return std::adjacent_find(first, first + size_) == first + size_;
    }

private:
    std::array<std::string_view, keys_inline> small_;
    std::vector<std::string_view> large_;
    std::size_t size_ = 0;
};

// Reads v to its end, checking what On Demand leaves unchecked until asked: every scalar parsed,
// at most ws_message_depth_max levels (depth is v's), no key twice in an object. Keys are
// unescaped into the parser's buffer, which holds them until the next message.
bool check_value(od::value v, int depth) {
    od::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) return false;
    switch (type) {
        case od::json_type::object: {
            if (depth > ws_message_depth_max) return false;
            od::object obj;
            if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
            key_set keys(0);
            for (auto field_result : obj) {
                od::field field;
                std::string_view key;
                if (std::move(field_result).get(field) != simdjson::SUCCESS || field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
                keys.add(key);
                if (!check_value(field.value(), depth + 1)) return false;
            }
            return keys.unique();
        }
        case od::json_type::array: {
            if (depth > ws_message_depth_max) return false;
            od::array arr;
            if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
            for (auto element : arr) {
                od::value el;
                if (std::move(element).get(el) != simdjson::SUCCESS || !check_value(el, depth + 1)) return false;
            }
            return true;
        }
        case od::json_type::string: {
            std::string_view s;
            return v.get_string().get(s) == simdjson::SUCCESS;
        }
        case od::json_type::number: {
            od::number n;  // no integer beyond 64 bits, no float beyond a double: the routes' parser refuses them too
            return v.get_number().get(n) == simdjson::SUCCESS;
        }
        case od::json_type::boolean: {
            bool b = false;
            return v.get_bool().get(b) == simdjson::SUCCESS;
        }
        case od::json_type::null: {
            bool is_null = false;
            return v.is_null().get(is_null) == simdjson::SUCCESS && is_null;
        }
    }
    return false;
}

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// A member that must be a string: its text if it is one (checked: escapes, UTF-8), else checked
// as any value.
bool read_string_member(od::value v, od::json_type type, string_member& out) {
    out.present = true;
    if (type != od::json_type::string) return check_value(v, 2);
    out.is_string = true;
    return v.get_string().get(out.text) == simdjson::SUCCESS;
}

bool read_id(od::value v, od::json_type type, nlohmann::json& id) {
    if (type == od::json_type::number) {
        od::number n;
        if (v.get_number().get(n) != simdjson::SUCCESS) return false;
        if (n.is_int64()) id = n.get_int64();
        if (n.is_uint64()) id = n.get_uint64();
        return true;  // a float is JSON, but not an id
    }
    if (type == od::json_type::string) {
        std::string_view s;
        if (v.get_string().get(s) != simdjson::SUCCESS) return false;
        if (s.size() <= id_string_bytes_max) id = std::string(s);
        return true;
    }
    return check_value(v, 2);
}

// The body: checked like any value, and its text kept as it came (the route parses it). A
// scalar's text is its token; an object's or array's runs from its first token to where the
// document stands once it is read (the next member's comma or the message's closing brace).
bool read_body(od::document& doc, od::value v, od::json_type type, std::string& body) {
    const std::string_view token = v.raw_json_token();
    if (!check_value(v, 2)) return false;
    if (type == od::json_type::null) return true;
    if (type != od::json_type::object && type != od::json_type::array) {
        body = trim_right(token);
        return true;
    }
    const char* end = nullptr;
    if (doc.current_location().get(end) != simdjson::SUCCESS || end < token.data()) return false;
    body = trim_right(std::string_view(token.data(), static_cast<std::size_t>(end - token.data())));
    return true;
}

// False when the text is not one JSON object within the limits; otherwise found holds its members.
bool read_text(std::string_view data, members& found) {
    // On Demand reads up to SIMDJSON_PADDING bytes past the end: the frame is copied into a
    // buffer of this thread that has them (it only grows).
    thread_local std::string padded;
    thread_local od::parser parser;
    padded.resize(data.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(padded.data(), data.data(), data.size());
    std::memset(padded.data() + data.size(), 0, simdjson::SIMDJSON_PADDING);

    od::document doc;
    od::object top;
    if (parser.iterate(padded.data(), data.size(), padded.size()).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(top) != simdjson::SUCCESS) {
        return false;
    }
    key_set keys(0);  // the message's own keys, one of them twice refuses it like any object's
    for (auto field_result : top) {
        od::field field;
        std::string_view key;
        if (std::move(field_result).get(field) != simdjson::SUCCESS || field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
        keys.add(key);
        const member which = member_of(key);
        if (which == member::unknown) note_unknown(found, key);
        od::value v = field.value();
        od::json_type type;
        if (v.type().get(type) != simdjson::SUCCESS) return false;
        bool ok = false;
        switch (which) {
            case member::id: ok = read_id(v, type, found.id); break;
            case member::method: ok = read_string_member(v, type, found.method); break;
            case member::path: ok = read_string_member(v, type, found.path); break;
            case member::idempotency_key: ok = read_string_member(v, type, found.idempotency_key); break;
            case member::body:
                found.body_present = true;
                ok = read_body(doc, v, type, found.body);
                break;
            case member::unknown: ok = check_value(v, 2); break;
        }
        if (!ok) return false;
    }
    // Nothing may follow the object.
    return keys.unique() && doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// ---- binary frames --------------------------------------------------------------------------

// True when no map of o has a key twice or a key that is not a string; clears utf8 when a key or
// string is not UTF-8. o comes from an unpack with a depth limit.
bool map_keys_ok(const msgpack::object& o, bool& utf8) {
    if (o.type == msgpack::type::STR) {
        if (utf8 && !is_valid_utf8(std::string_view(o.via.str.ptr, o.via.str.size))) utf8 = false;
    } else if (o.type == msgpack::type::ARRAY) {
        for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
            if (!map_keys_ok(o.via.array.ptr[i], utf8)) return false;
        }
    } else if (o.type == msgpack::type::MAP) {
        key_set keys(o.via.map.size);
        for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
            const auto& kv = o.via.map.ptr[i];
            if (kv.key.type != msgpack::type::STR) return false;
            keys.add(std::string_view(kv.key.via.str.ptr, kv.key.via.str.size));
            if (!map_keys_ok(kv.key, utf8) || !map_keys_ok(kv.val, utf8)) return false;
        }
        if (!keys.unique()) return false;
    }
    return true;
}

void read_string_member(const msgpack::object& v, string_member& out) {
    out.present = true;
    if (v.type == msgpack::type::STR) {
        out.is_string = true;
        out.text = std::string_view(v.via.str.ptr, v.via.str.size);
    }
}

// False when the bytes are not one msgpack map within the limits; otherwise found holds its
// members. zone keeps the unpacked objects that found's strings point into.
bool read_binary(std::string_view bytes, members& found, msgpack::object_handle& unpacked) {
    // Every element takes at least a byte (a map entry two), so no header may claim more: a
    // frame of a few bytes that claims millions of elements is refused before msgpack-c
    // allocates room for them (an allocation bomb).
    const std::size_t elements = std::min<std::size_t>(1 << 20, bytes.size());
    const msgpack::unpack_limit limit(elements, elements / 2, bytes.size(), bytes.size(), bytes.size(), ws_message_depth_max);
    std::size_t offset = 0;
    try {
        unpacked = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
    } catch (const std::exception&) {
        return false;
    }
    const msgpack::object& top = unpacked.get();
    if (offset != bytes.size() || top.type != msgpack::type::MAP || !map_keys_ok(top, found.strings_utf8)) return false;
    for (std::uint32_t i = 0; i < top.via.map.size; ++i) {
        const auto& [k, v] = top.via.map.ptr[i];
        const std::string_view key(k.via.str.ptr, k.via.str.size);  // a string: map_keys_ok
        switch (member_of(key)) {
            case member::id:
                if (v.type == msgpack::type::POSITIVE_INTEGER) {
                    found.id = v.via.u64;
                } else if (v.type == msgpack::type::NEGATIVE_INTEGER) {
                    found.id = v.via.i64;
                } else if (v.type == msgpack::type::STR && v.via.str.size <= id_string_bytes_max &&
                           is_valid_utf8(std::string_view(v.via.str.ptr, v.via.str.size))) {
                    found.id = std::string(v.via.str.ptr, v.via.str.size);
                }
                break;
            case member::method: read_string_member(v, found.method); break;
            case member::path: read_string_member(v, found.path); break;
            case member::idempotency_key: read_string_member(v, found.idempotency_key); break;
            case member::body:
                found.body_present = true;
                if (v.type != msgpack::type::NIL) found.body_representable = append_msgpack_json(found.body, v);
                break;
            case member::unknown: note_unknown(found, key); break;
        }
    }
    return true;
}

// ---- the rules, the same for both kinds of frame ---------------------------------------------

message refuse(message m, std::string error, std::string field = {}) {
    m.error = std::move(error);
    m.error_field = std::move(field);
    return m;
}

bool path_ok(const string_member& p) {
    return p.is_string && !p.text.empty() && p.text.front() == '/' && p.text.size() <= path_bytes_max;
}

message decide(members& found) {
    message m;
    if (found.id.is_null()) return refuse(std::move(m), "id must be an integer or a string of at most 128 bytes; answers carry it back", "id");
    m.id = std::move(found.id);
    if (!found.strings_utf8) return refuse(std::move(m), "every string of a binary frame (keys included) must be valid UTF-8");
    if (found.unknown) return refuse(std::move(m), "unknown member (known: id, method, path, body, idempotency_key)", *found.unknown);
    if (found.method.present) {
        const std::string_view name = found.method.is_string ? found.method.text : std::string_view{};
        const auto verb = http::string_to_verb(boost::beast::string_view(name.data(), name.size()));
        if (name == "SUBSCRIBE") {
            m.kind = message_kind::subscribe;
        } else if (name == "UNSUBSCRIBE") {
            m.kind = message_kind::unsubscribe;
        } else if (verb == http::verb::get || verb == http::verb::post || verb == http::verb::put || verb == http::verb::delete_) {
            m.method = verb;
        } else {
            return refuse(std::move(m), R"(method must be "GET", "POST", "PUT", "DELETE", "SUBSCRIBE" or "UNSUBSCRIBE")", "method");
        }
    }
    if (m.kind == message_kind::unsubscribe) {
        // It names the subscription by its id alone.
        if (found.path.present || found.body_present || found.idempotency_key.present) {
            return refuse(std::move(m), "UNSUBSCRIBE takes only the id of the SUBSCRIBE it ends",
                          found.path.present ? "path" : found.body_present ? "body" : "idempotency_key");
        }
        return m;
    }
    if (!path_ok(found.path)) {
        return refuse(std::move(m), R"(path must be the route's path and query, starting with /, e.g. "/v1/graphs/follows/edges/1/2")", "path");
    }
    if (m.kind == message_kind::subscribe) {
        const std::string_view p = found.path.text;
        if (p != "/v1/feed" && !p.starts_with("/v1/feed?")) {
            return refuse(std::move(m),
                          R"(SUBSCRIBE works on the change feed: path must be "/v1/feed" with its query, e.g. "/v1/feed?from=0&model=edge")",
                          "path");
        }
        if (found.body_present || found.idempotency_key.present) {
            return refuse(std::move(m), "SUBSCRIBE takes an id and a path only", found.body_present ? "body" : "idempotency_key");
        }
    }
    m.path = found.path.text;
    if (!found.body_representable) {
        return refuse(std::move(m), "body holds a msgpack value that JSON has no form for (bin, ext, NaN or an infinity)", "body");
    }
    m.body = std::move(found.body);
    if (found.idempotency_key.present) {
        if (!found.idempotency_key.is_string) return refuse(std::move(m), "idempotency_key must be a string", "idempotency_key");
        m.idempotency_key = found.idempotency_key.text;
    }
    return m;
}

message parse_unchecked(std::string_view data, bool binary) {
    members found;
    msgpack::object_handle unpacked;  // binary: what found's strings point into
    if (!(binary ? read_binary(data, found, unpacked) : read_text(data, found))) {
        message m;
        m.error = binary ? "a binary frame must be one msgpack map (nested at most 32 deep, no key twice in a map)"
                         : "a text frame must be one JSON object (nested at most 32 deep, no key twice in an object)";
        return m;
    }
    return decide(found);
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
