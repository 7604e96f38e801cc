#include "core/indexes.hpp"

#include "core/cells.hpp"
#include "core/shard_map.hpp"

#include <msgpack.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace cairn::core {
namespace {

bool property_name_ok(std::string_view s) noexcept {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
}

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};

}  // namespace

std::string_view index_type_name(index_value_type t) noexcept {
    switch (t) {
        case index_value_type::id: return "id";
        case index_value_type::integer: return "int";
        case index_value_type::string: return "string";
        case index_value_type::boolean: return "bool";
    }
    return "string";
}

std::optional<index_value_type> index_type_from_name(std::string_view name) noexcept {
    if (name == "id") return index_value_type::id;
    if (name == "int") return index_value_type::integer;
    if (name == "string") return index_value_type::string;
    if (name == "bool") return index_value_type::boolean;
    return std::nullopt;
}

bool valid_index_name(std::string_view name) noexcept {
    return !name.empty() && name.size() <= 48 && name[0] >= 'a' && name[0] <= 'z' &&
           std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::optional<std::string> check_index_def(const index_def& d) {
    if (!valid_index_name(d.name)) return "name: must be 1 to 48 characters of a-z, 0-9 and _, starting with a letter";
    if (d.on_cells()) {
        if (!valid_cell_table(d.kind)) return "table: must name a cell table (1 to 32 characters of a-z, 0-9 and _)";
        if (!valid_cell_column(d.column)) return "column: must be 1 to 64 characters of A-Z, a-z, 0-9, _, . and -";
    } else if (d.kind.empty()) {
        return "kind: is required";
    }
    if (d.properties.empty() || d.properties.size() > index_properties_max) {
        return fmt::format("properties: must name 1 to {} properties", index_properties_max);
    }
    std::set<std::string_view> seen;
    for (std::size_t i = 0; i < d.properties.size(); ++i) {
        const auto& p = d.properties[i];
        if (!property_name_ok(p.name)) return fmt::format("properties[{}].name: must be 1 to 64 characters of A-Z, a-z, 0-9 and _", i);
        if (!seen.insert(p.name).second) return fmt::format("properties[{}].name: '{}' is named twice", i, p.name);
        if (p.type == index_value_type::string && (p.length_max < 1 || p.length_max > 255)) {
            return fmt::format("properties[{}].length: a string property needs a length between 1 and 255 bytes", i);
        }
        if (p.type != index_value_type::string && p.length_max != 0) {
            return fmt::format("properties[{}].length: only string properties have a length", i);
        }
    }
    if (d.shard_on >= d.properties.size()) return "shard_on: must name one of the properties";
    return std::nullopt;
}

// [name, kind, [[prop name, type, length]...], shard_on], and column for a cell index (a
// definition stored before cell indexes existed has four fields: an entity index).
std::string encode_index_def(const index_def& d) {
    std::string out;
    string_writer w{out};
    msgpack::packer<string_writer> pk(w);
    pk.pack_array(d.on_cells() ? 5 : 4);
    pk.pack(d.name);
    pk.pack(d.kind);
    pk.pack_array(static_cast<std::uint32_t>(d.properties.size()));
    for (const auto& p : d.properties) {
        pk.pack_array(3);
        pk.pack(p.name);
        pk.pack(static_cast<std::uint8_t>(p.type));
        pk.pack(static_cast<std::uint64_t>(p.length_max));
    }
    pk.pack(static_cast<std::uint64_t>(d.shard_on));
    if (d.on_cells()) pk.pack(d.column);
    return out;
}

result<index_def> decode_index_def(std::string_view bytes) {
    try {
        const msgpack::unpack_limit limit(16, 4, 1024, 0, 0, 4);
        std::size_t offset = 0;
        auto oh = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
        const auto& o = oh.get();
        if (offset != bytes.size() || o.type != msgpack::type::ARRAY || (o.via.array.size != 4 && o.via.array.size != 5)) {
            return errc::journal_corrupt;
        }
        const auto* f = o.via.array.ptr;
        index_def d;
        d.name = f[0].as<std::string>();
        d.kind = f[1].as<std::string>();
        if (f[2].type != msgpack::type::ARRAY) return errc::journal_corrupt;
        for (std::uint32_t i = 0; i < f[2].via.array.size; ++i) {
            const auto& p = f[2].via.array.ptr[i];
            if (p.type != msgpack::type::ARRAY || p.via.array.size != 3) return errc::journal_corrupt;
            const auto type = p.via.array.ptr[1].as<std::uint8_t>();
            if (type > 3) return errc::journal_corrupt;
            d.properties.push_back({p.via.array.ptr[0].as<std::string>(), static_cast<index_value_type>(type),
                                    static_cast<std::size_t>(p.via.array.ptr[2].as<std::uint64_t>())});
        }
        d.shard_on = static_cast<std::size_t>(f[3].as<std::uint64_t>());
        if (o.via.array.size == 5) {
            d.column = f[4].as<std::string>();
            if (d.column.empty()) return errc::journal_corrupt;
        }
        if (check_index_def(d)) return errc::journal_corrupt;
        return d;
    } catch (const std::exception&) {
        return errc::journal_corrupt;
    }
}

std::uint64_t index_value_hash(const index_value& v) noexcept {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return hash_id(*i);
    return hash_bytes(std::get<std::string>(v));
}

}  // namespace cairn::core
