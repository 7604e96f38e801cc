#include "core/document.hpp"

#include <zstd.h>

#include <algorithm>

namespace cairn::core {
namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

constexpr int zstd_level = 3;

}  // namespace

std::optional<id16> parse_id16(std::string_view text) noexcept {
    std::string_view hex = text;
    std::string packed;
    if (text.size() == 36) {
        // UUID text: dashes after 8, 12, 16 and 20 hex digits.
        for (std::size_t at : {8u, 13u, 18u, 23u}) {
            if (text[at] != '-') return std::nullopt;
        }
        packed.reserve(32);
        for (char c : text) {
            if (c != '-') packed += c;
        }
        hex = packed;
    }
    if (hex.size() != 32) return std::nullopt;
    id16 out{};
    for (std::size_t i = 0; i < 16; ++i) {
        const int hi = hex_value(hex[2 * i]);
        const int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
    return out;
}

std::string format_id16(const id16& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(36);
    for (std::size_t i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
        out += digits[id[i] >> 4];
        out += digits[id[i] & 15];
    }
    return out;
}

std::string format_id16_bytes(std::string_view bytes) {
    id16 id{};
    std::copy_n(bytes.begin(), std::min<std::size_t>(bytes.size(), id.size()), id.begin());
    return format_id16(id);
}

std::string_view id16_bytes(const id16& id) noexcept {
    return {reinterpret_cast<const char*>(id.data()), id.size()};
}

std::string encode_body(std::string_view msgpack, std::size_t compress_min) {
    std::string out;
    if (msgpack.size() >= compress_min) {
        out.resize(1 + ZSTD_compressBound(msgpack.size()));
        const std::size_t n = ZSTD_compress(out.data() + 1, out.size() - 1, msgpack.data(), msgpack.size(), zstd_level);
        if (!ZSTD_isError(n) && n < msgpack.size()) {
            out[0] = static_cast<char>(body_format::zstd_msgpack);
            out.resize(1 + n);
            return out;
        }
    }
    out.clear();
    out.reserve(1 + msgpack.size());
    out += static_cast<char>(body_format::msgpack);
    out += msgpack;
    return out;
}

result<std::string> decode_body(std::string_view stored, std::size_t decoded_max) {
    if (stored.empty()) return errc::journal_corrupt;
    const std::string_view payload = stored.substr(1);
    switch (static_cast<body_format>(stored[0])) {
        case body_format::msgpack: return std::string(payload);
        case body_format::zstd_msgpack: {
            const unsigned long long size = ZSTD_getFrameContentSize(payload.data(), payload.size());
            if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > decoded_max) {
                return errc::journal_corrupt;
            }
            std::string out(static_cast<std::size_t>(size), '\0');
            const std::size_t n = ZSTD_decompress(out.data(), out.size(), payload.data(), payload.size());
            if (ZSTD_isError(n) || n != size) return errc::journal_corrupt;
            return out;
        }
    }
    return errc::journal_corrupt;
}

}  // namespace cairn::core
