#include "net/detail/body_json.hpp"

#include "net/detail/json_escape.hpp"
#include "net/detail/msgpack_json.hpp"

#include <msgpack.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace cairn::net::detail {
namespace {

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};
using packer = msgpack::packer<string_writer>;

// A double as msgpack, as msgpack-c's pack_double would write it (an integral value in range as
// an integer, anything else as float64) but without its undefined behaviour: for 2^64 it converts
// the double to uint64 (out of range; found by body_json_fuzz, regression-two-to-the-64).
void pack_double(packer& pk, double d) {
    constexpr double two_to_64 = 18446744073709551616.0;
    constexpr double minus_two_to_63 = -9223372036854775808.0;
    if (std::isfinite(d) && d == std::floor(d)) {
        if (d >= 0 && d < two_to_64) {
            pk.pack_uint64(static_cast<std::uint64_t>(d));
            return;
        }
        if (d < 0 && d >= minus_two_to_63) {
            pk.pack_int64(static_cast<std::int64_t>(d));
            return;
        }
    }
    // float64, big-endian, written as raw bytes so that msgpack-c's conversion is never reached.
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    char buf[9];
    buf[0] = static_cast<char>(0xcb);
    for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
    pk.pack_bin_body(buf, sizeof buf);  // appends the bytes as they are
}

// Canonical msgpack of a JSON value: object members sorted by key. Keys are unique (shape_error
// refuses a repeated one first).
void pack_json(packer& pk, const simdjson::dom::element& v) {
    switch (v.type()) {
        case simdjson::dom::element_type::OBJECT: {
            std::vector<std::pair<std::string_view, simdjson::dom::element>> members;
            const simdjson::dom::object obj = v.get_object().value_unsafe();
            for (auto [key, value] : obj) members.emplace_back(key, value);
            std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
            pk.pack_map(static_cast<std::uint32_t>(members.size()));
            for (const auto& [key, value] : members) {
                pk.pack_str(static_cast<std::uint32_t>(key.size()));
                pk.pack_str_body(key.data(), static_cast<std::uint32_t>(key.size()));
                pack_json(pk, value);
            }
            return;
        }
        case simdjson::dom::element_type::ARRAY: {
            const simdjson::dom::array arr = v.get_array().value_unsafe();
            pk.pack_array(static_cast<std::uint32_t>(arr.size()));
            for (auto el : arr) pack_json(pk, el);
            return;
        }
        case simdjson::dom::element_type::STRING: {
            const std::string_view s = v.get_string().value_unsafe();
            pk.pack_str(static_cast<std::uint32_t>(s.size()));
            pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
            return;
        }
        case simdjson::dom::element_type::INT64: pk.pack(v.get_int64().value_unsafe()); return;
        case simdjson::dom::element_type::UINT64: pk.pack(v.get_uint64().value_unsafe()); return;
        case simdjson::dom::element_type::DOUBLE: pack_double(pk, v.get_double().value_unsafe()); return;
        case simdjson::dom::element_type::BOOL: pk.pack(v.get_bool().value_unsafe()); return;
        case simdjson::dom::element_type::NULL_VALUE: pk.pack_nil(); return;
    }
}

// The first array or object of v (depth levels deep) that the reader would refuse, as a message.
std::optional<std::string> shape_error(const simdjson::dom::element& v, std::size_t depth) {
    if (depth > stored_body_depth_max) return fmt::format("nests deeper than {} levels", stored_body_depth_max);
    if (v.is_object()) {
        const simdjson::dom::object obj = v.get_object().value_unsafe();
        if (obj.size() > stored_body_elements_max) {
            return fmt::format("has an object of {} members; at most {} are allowed", obj.size(), stored_body_elements_max);
        }
        // A repeated key is refused rather than resolved: readers disagree on which one wins, so
        // the body a client meant is not knowable (issue 13).
        std::vector<std::string_view> keys;
        keys.reserve(obj.size());
        for (auto [key, value] : obj) keys.push_back(key);
        std::sort(keys.begin(), keys.end());
        if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
            return fmt::format("has the key \"{}\" twice in one object", dup->substr(0, 64));
        }
        for (auto [key, value] : obj) {
            if (auto e = shape_error(value, depth + 1)) return e;
        }
    } else if (v.is_array()) {
        const simdjson::dom::array arr = v.get_array().value_unsafe();
        if (arr.size() > stored_body_elements_max) {
            return fmt::format("has an array of {} elements; at most {} are allowed", arr.size(), stored_body_elements_max);
        }
        for (auto el : arr) {
            if (auto e = shape_error(el, depth + 1)) return e;
        }
    }
    return std::nullopt;
}

}  // namespace

bool append_msgpack_json(std::string& out, const msgpack::object& o) {
    switch (o.type) {
        case msgpack::type::NIL: out += "null"; return true;
        case msgpack::type::BOOLEAN: out += o.via.boolean ? "true" : "false"; return true;
        case msgpack::type::POSITIVE_INTEGER: fmt::format_to(std::back_inserter(out), "{}", o.via.u64); return true;
        case msgpack::type::NEGATIVE_INTEGER: fmt::format_to(std::back_inserter(out), "{}", o.via.i64); return true;
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64:
            // JSON has no NaN or infinity, so no body written through cairn holds one: a row that
            // does is not a body (found by body_json_fuzz; "nan" is not JSON).
            if (!std::isfinite(o.via.f64)) return false;
            {
                // Shortest text that reads back as the same double, and as a double: an integral
                // value (written as a float by another writer, e.g. a float32 3.0, or beyond the
                // integers' range) keeps a ".0" where fmt would write none ("3").
                const std::size_t start = out.size();
                fmt::format_to(std::back_inserter(out), "{}", o.via.f64);
                if (out.find_first_of(".eE", start) == std::string::npos) out += ".0";
            }
            return true;
        case msgpack::type::STR: append_json_string(out, std::string_view(o.via.str.ptr, o.via.str.size)); return true;
        case msgpack::type::ARRAY:
            out += '[';
            for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
                if (i) out += ',';
                if (!append_msgpack_json(out, o.via.array.ptr[i])) return false;
            }
            out += ']';
            return true;
        case msgpack::type::MAP:
            out += '{';
            for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
                const auto& kv = o.via.map.ptr[i];
                if (kv.key.type != msgpack::type::STR) return false;
                if (i) out += ',';
                append_json_string(out, std::string_view(kv.key.via.str.ptr, kv.key.via.str.size));
                out += ':';
                if (!append_msgpack_json(out, kv.val)) return false;
            }
            out += '}';
            return true;
        default: return false;  // bin and ext never come from JSON
    }
}

std::variant<std::string, input_error> stored_body_of(const simdjson::dom::element& value, const std::string& field,
                                                      std::size_t compress_min) {
    if (!value.is_object()) return input_error{field, "must be a JSON object"};
    if (auto e = shape_error(value, 1)) return input_error{field, *e};
    std::string packed;
    string_writer w{packed};
    packer pk(w);
    pack_json(pk, value);
    if (packed.size() > stored_body_decoded_max) {
        return input_error{field, fmt::format("is {} bytes as msgpack; at most {} are allowed", packed.size(),
                                              stored_body_decoded_max)};
    }
    auto stored = core::encode_body(packed, compress_min);
    if (stored.size() > core::stored_body_bytes_max) {
        return input_error{field, fmt::format("is {} bytes stored (msgpack, compressed); at most {} are allowed", stored.size(),
                                              core::stored_body_bytes_max)};
    }
    return stored;
}

std::optional<std::string> stored_body_json(std::string_view stored) {
    auto packed = core::decode_body(stored, stored_body_decoded_max);
    if (!packed) return std::nullopt;
    try {
        // No header may claim more elements than there are bytes left to hold them (see ws_message.cpp).
        const std::size_t elements = std::min(stored_body_elements_max, packed.value().size());
        const msgpack::unpack_limit limit(elements, std::min(stored_body_elements_max, packed.value().size() / 2),
                                          packed.value().size(), 0, 0, stored_body_depth_max);
        std::size_t offset = 0;
        auto oh = msgpack::unpack(packed.value().data(), packed.value().size(), offset, nullptr, nullptr, limit);
        if (offset != packed.value().size()) return std::nullopt;
        std::string out;
        // A body is an object; a row holding anything else is not one.
        if (oh.get().type != msgpack::type::MAP || !append_msgpack_json(out, oh.get())) return std::nullopt;
        return out;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace cairn::net::detail
