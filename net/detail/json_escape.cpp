#include "net/detail/json_escape.hpp"

#include <cstdint>

namespace cairn::net::detail {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// The length of the valid UTF-8 sequence at the start of s, or 0 if it is not valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
std::size_t utf8_sequence_length(std::string_view s) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    std::size_t len = 0;
    std::uint32_t lo = 0x80;
    std::uint32_t hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (s.size() < len) return 0;
    const auto b1 = static_cast<unsigned char>(s[1]);
    if (b1 < lo || b1 > hi) return 0;
    for (std::size_t i = 2; i < len; ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80 || b > 0xBF) return 0;
    }
    return len;
}

}  // namespace

bool is_valid_utf8(std::string_view v) noexcept {
    std::size_t i = 0;
    while (i < v.size()) {
        if (static_cast<unsigned char>(v[i]) < 0x80) {
            ++i;
            continue;
        }
        const std::size_t n = utf8_sequence_length(v.substr(i));
        if (n == 0) return false;
        i += n;
    }
    return true;
}

void append_json_string(std::string& out, std::string_view v) {
    out.reserve(out.size() + v.size() + 2);
    out += '"';
    append_json_chars(out, v);
    out += '"';
}

void append_json_chars(std::string& out, std::string_view v) {
    static constexpr char hex[] = "0123456789abcdef";
    std::size_t i = 0;
    while (i < v.size()) {
        const auto c = static_cast<unsigned char>(v[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence_length(v.substr(i));
            if (n == 0) {
                out += replacement;
                ++i;
            } else {
                out.append(v.data() + i, n);
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 0xF];
                } else {
                    out += static_cast<char>(c);
                }
        }
        ++i;
    }
}

}  // namespace cairn::net::detail
