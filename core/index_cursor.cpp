#include "core/index_cursor.hpp"

#include "core/page_cursor.hpp"

#include <msgpack.hpp>

#include <fmt/format.h>

#include <charconv>
#include <exception>

namespace cairn::core {
namespace {

constexpr std::size_t check_hex = 2 * cursor_check_bytes;

}  // namespace

std::string encode_index_cursor(const index_cursor& c, std::string_view scope) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pk.pack_array(static_cast<std::uint32_t>(c.values.size() + 1));
    for (const auto& v : c.values) {
        if (const auto* i = std::get_if<std::int64_t>(&v)) {
            pk.pack(*i);
        } else {
            const auto& b = std::get<std::string>(v);
            pk.pack_bin(static_cast<std::uint32_t>(b.size()));
            pk.pack_bin_body(b.data(), static_cast<std::uint32_t>(b.size()));
        }
    }
    pk.pack_bin(static_cast<std::uint32_t>(c.object_id.size()));
    pk.pack_bin_body(c.object_id.data(), static_cast<std::uint32_t>(c.object_id.size()));
    std::string out;
    out.reserve(2 * buf.size() + check_hex);
    for (unsigned char ch : std::string_view(buf.data(), buf.size())) out += fmt::format("{:02x}", ch);
    fmt::format_to(std::back_inserter(out), "{:012x}", cursor_check(scope, std::string_view(buf.data(), buf.size())));
    return out;
}

std::optional<index_cursor> decode_index_cursor(const index_def& def, std::string_view text, std::string_view scope) noexcept {
    if (text.size() <= check_hex || text.size() % 2 != 0 || text.size() > index_cursor_chars_max) return std::nullopt;
    // Lowercase only, as written: one cursor, one spelling.
    if (text.find_first_not_of("0123456789abcdef") != std::string_view::npos) return std::nullopt;
    try {
        const std::string_view hex = text.substr(0, text.size() - check_hex);
        std::string bytes;
        for (std::size_t i = 0; i < hex.size(); i += 2) {
            unsigned v = 0;
            auto [ptr, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
            if (ec != std::errc() || ptr != hex.data() + i + 2) return std::nullopt;
            bytes += static_cast<char>(v);
        }
        if (fmt::format("{:012x}", cursor_check(scope, bytes)) != text.substr(hex.size())) return std::nullopt;
        const msgpack::unpack_limit limit(index_properties_max + 1, 0, 0, 1024, 0, 2);
        std::size_t offset = 0;
        auto oh = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
        const auto& o = oh.get();
        if (offset != bytes.size() || o.type != msgpack::type::ARRAY || o.via.array.size != def.properties.size() + 1) {
            return std::nullopt;
        }
        index_cursor c;
        for (std::size_t i = 0; i < def.properties.size(); ++i) {
            const auto& v = o.via.array.ptr[i];
            const auto t = def.properties[i].type;
            if (t == index_value_type::integer || t == index_value_type::boolean) {
                if (v.type != msgpack::type::POSITIVE_INTEGER && v.type != msgpack::type::NEGATIVE_INTEGER) return std::nullopt;
                c.values.emplace_back(v.as<std::int64_t>());
            } else {
                if (v.type != msgpack::type::BIN) return std::nullopt;
                c.values.emplace_back(std::string(v.via.bin.ptr, v.via.bin.size));
            }
        }
        const auto& id = o.via.array.ptr[def.properties.size()];
        if (id.type != msgpack::type::BIN || id.via.bin.size != 16) return std::nullopt;
        c.object_id.assign(id.via.bin.ptr, id.via.bin.size);
        // One cursor, one spelling: msgpack may write one integer in several widths.
        if (encode_index_cursor(c, scope) != text) return std::nullopt;
        return c;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace cairn::core
