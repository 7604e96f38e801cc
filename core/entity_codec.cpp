// Record fields of an entity write: kind (str), id (bin, 16 bytes), deleted (bool), body (bin:
// the stored body, empty for a delete), entries (array of [index str, values array (int, or bin
// for id/string), shard_hash uint]). See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core::detail {
namespace {

std::string bin_of(const msgpack::object& o) {
    if (o.type != msgpack::type::BIN) throw msgpack::type_error();
    return std::string(o.via.bin.ptr, o.via.bin.size);
}

void pack_bin(record_packer& pk, const std::string& bytes) {
    pk.pack_bin(static_cast<std::uint32_t>(bytes.size()));
    pk.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
}

}  // namespace

std::uint32_t field_count(const entity_op&) noexcept { return 5; }

void pack_fields(record_packer& pk, const entity_op& e) {
    CAIRN_ASSERT(valid_entity_kind(e.entity_kind) && e.id.size() == 16 && e.deleted == e.body.empty());
    pk.pack(e.entity_kind);
    pack_bin(pk, e.id);
    pk.pack(e.deleted);
    pack_bin(pk, e.body);
    pk.pack_array(static_cast<std::uint32_t>(e.entries.size()));
    for (const auto& entry : e.entries) {
        pk.pack_array(3);
        pk.pack(entry.index);
        pk.pack_array(static_cast<std::uint32_t>(entry.values.size()));
        for (const auto& v : entry.values) {
            if (const auto* i = std::get_if<std::int64_t>(&v)) {
                pk.pack(*i);
            } else {
                pack_bin(pk, std::get<std::string>(v));
            }
        }
        pk.pack(entry.shard_hash);
    }
}

result<entity_op> unpack_entity(record_fields f) {
    if (f.size() != 5 || f[4].type != msgpack::type::ARRAY) return errc::journal_corrupt;
    entity_op e;
    e.entity_kind = f[0].as<std::string>();
    e.id = bin_of(f[1]);
    e.deleted = f[2].as<bool>();
    e.body = bin_of(f[3]);
    const auto& entries = f[4].via.array;
    if (entries.size > 64) return errc::journal_corrupt;
    for (std::uint32_t i = 0; i < entries.size; ++i) {
        const auto& x = entries.ptr[i];
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
                entry.values.emplace_back(bin_of(value));
            } else {
                entry.values.emplace_back(value.as<std::int64_t>());
            }
        }
        entry.shard_hash = x.via.array.ptr[2].as<std::uint64_t>();
        e.entries.push_back(std::move(entry));
    }
    if (!valid_entity_kind(e.entity_kind) || e.id.size() != 16 || e.deleted != e.body.empty() ||
        e.body.size() > stored_body_bytes_max) {
        return errc::journal_corrupt;
    }
    return e;
}

}  // namespace cairn::core::detail
