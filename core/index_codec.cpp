// Record fields of an index definition op: name (str), dropped (bool), definition (bin:
// core::encode_index_def, empty for a drop); and the index entries entity and cell writes carry.
// See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core::detail {

void pack_index_entries(record_packer& pk, const std::vector<index_entry>& entries) {
    pk.pack_array(static_cast<std::uint32_t>(entries.size()));
    for (const auto& entry : entries) {
        pk.pack_array(3);
        pk.pack(entry.index);
        pk.pack_array(static_cast<std::uint32_t>(entry.values.size()));
        for (const auto& v : entry.values) {
            if (const auto* i = std::get_if<std::int64_t>(&v)) {
                pk.pack(*i);
            } else {
                const auto& bytes = std::get<std::string>(v);
                pk.pack_bin(static_cast<std::uint32_t>(bytes.size()));
                pk.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
            }
        }
        pk.pack(entry.shard_hash);
    }
}

result<std::vector<index_entry>> unpack_index_entries(const msgpack::object& o) {
    if (o.type != msgpack::type::ARRAY || o.via.array.size > 64) return errc::journal_corrupt;
    std::vector<index_entry> out;
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        const auto& x = o.via.array.ptr[i];
        if (x.type != msgpack::type::ARRAY || x.via.array.size != 3 || x.via.array.ptr[1].type != msgpack::type::ARRAY) {
            return errc::journal_corrupt;
        }
        index_entry entry;
        entry.index = x.via.array.ptr[0].as<std::string>();
        const auto& values = x.via.array.ptr[1].via.array;
        if (values.size == 0 || values.size > index_properties_max || !valid_index_name(entry.index)) return errc::journal_corrupt;
        for (std::uint32_t v = 0; v < values.size; ++v) {
            const auto& value = values.ptr[v];
            if (value.type == msgpack::type::BIN) {
                entry.values.emplace_back(std::string(value.via.bin.ptr, value.via.bin.size));
            } else {
                entry.values.emplace_back(value.as<std::int64_t>());
            }
        }
        entry.shard_hash = x.via.array.ptr[2].as<std::uint64_t>();
        out.push_back(std::move(entry));
    }
    return out;
}

std::uint32_t field_count(const index_def_op&) noexcept { return 3; }

void pack_fields(record_packer& pk, const index_def_op& d) {
    CAIRN_ASSERT(valid_index_name(d.name) && d.dropped == d.definition.empty());
    pk.pack(d.name);
    pk.pack(d.dropped);
    pk.pack_bin(static_cast<std::uint32_t>(d.definition.size()));
    pk.pack_bin_body(d.definition.data(), static_cast<std::uint32_t>(d.definition.size()));
}

result<index_def_op> unpack_index_def(record_fields f) {
    if (f.size() != 3 || f[2].type != msgpack::type::BIN) return errc::journal_corrupt;
    index_def_op d;
    d.name = f[0].as<std::string>();
    d.dropped = f[1].as<bool>();
    d.definition.assign(f[2].via.bin.ptr, f[2].via.bin.size);
    if (!valid_index_name(d.name) || d.dropped != d.definition.empty()) return errc::journal_corrupt;
    if (!d.dropped) {
        auto def = decode_index_def(d.definition);
        if (!def || def.value().name != d.name) return errc::journal_corrupt;
    }
    return d;
}

}  // namespace cairn::core::detail
