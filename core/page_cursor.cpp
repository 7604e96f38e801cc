#include "core/page_cursor.hpp"

#include "core/shard_map.hpp"

#include <algorithm>
#include <array>

namespace cairn::core {
namespace {

constexpr std::uint8_t cursor_version = 2;
constexpr std::size_t payload_bytes = 18;
constexpr std::size_t check_bytes = cursor_check_bytes;
constexpr std::size_t cursor_bytes = payload_bytes + check_bytes;
static_assert(cursor_bytes % 3 == 0, "a whole number of base64 groups: no padding, fixed length");
static_assert(page_cursor_chars == cursor_bytes / 3 * 4);

constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int sextet_of(char c) noexcept {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

void put_be64(std::uint8_t* out, std::int64_t v) noexcept {
    const auto u = static_cast<std::uint64_t>(v);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(u >> (56 - 8 * i));
}

std::int64_t get_be64(const std::uint8_t* in) noexcept {
    std::uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | in[i];
    return static_cast<std::int64_t>(u);
}

void put_check(std::uint8_t* out, std::string_view scope, const std::uint8_t* payload) noexcept {
    const std::uint64_t h = cursor_check(scope, std::string_view(reinterpret_cast<const char*>(payload), payload_bytes));
    for (std::size_t i = 0; i < check_bytes; ++i) out[i] = static_cast<std::uint8_t>(h >> (40 - 8 * i));
}

}  // namespace

std::uint64_t cursor_check(std::string_view scope, std::string_view bytes) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](std::uint8_t b) {
        h ^= b;
        h *= 0x100000001b3ULL;
    };
    const auto n = static_cast<std::uint64_t>(scope.size());
    for (int i = 0; i < 8; ++i) mix(static_cast<std::uint8_t>(n >> (56 - 8 * i)));
    for (char c : scope) mix(static_cast<std::uint8_t>(c));
    for (char c : bytes) mix(static_cast<std::uint8_t>(c));
    return hash_id(static_cast<std::int64_t>(h)) >> (64 - 8 * cursor_check_bytes);
}

std::string encode_page_cursor(const page_cursor& c, std::string_view scope) {
    std::array<std::uint8_t, cursor_bytes> bytes{};
    bytes[0] = cursor_version;
    bytes[1] = static_cast<std::uint8_t>(c.which);
    put_be64(bytes.data() + 2, c.position);
    put_be64(bytes.data() + 10, c.other_id);
    put_check(bytes.data() + payload_bytes, scope, bytes.data());
    std::string out;
    out.reserve(page_cursor_chars);
    for (std::size_t i = 0; i < cursor_bytes; i += 3) {
        const std::uint32_t group = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
        for (int s = 18; s >= 0; s -= 6) out += alphabet[(group >> s) & 63];
    }
    return out;
}

std::optional<page_cursor> decode_page_cursor(std::string_view text, std::string_view scope) noexcept {
    if (text.size() != page_cursor_chars) return std::nullopt;
    std::array<std::uint8_t, cursor_bytes> bytes{};
    for (std::size_t g = 0; g < cursor_bytes / 3; ++g) {
        std::uint32_t group = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const int v = sextet_of(text[g * 4 + k]);
            if (v < 0) return std::nullopt;
            group = (group << 6) | static_cast<std::uint32_t>(v);
        }
        bytes[g * 3] = static_cast<std::uint8_t>(group >> 16);
        bytes[g * 3 + 1] = static_cast<std::uint8_t>(group >> 8);
        bytes[g * 3 + 2] = static_cast<std::uint8_t>(group);
    }
    if (bytes[0] != cursor_version) return std::nullopt;
    if (bytes[1] > static_cast<std::uint8_t>(page_cursor::kind::previous)) return std::nullopt;
    std::array<std::uint8_t, check_bytes> check{};
    put_check(check.data(), scope, bytes.data());
    if (!std::equal(check.begin(), check.end(), bytes.begin() + payload_bytes)) return std::nullopt;
    page_cursor c;
    c.which = static_cast<page_cursor::kind>(bytes[1]);
    c.position = get_be64(bytes.data() + 2);
    c.other_id = get_be64(bytes.data() + 10);
    return c;
}

}  // namespace cairn::core
