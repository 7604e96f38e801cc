// Record fields of an entity write: kind (str), id (bin, 16 bytes), deleted (bool), body (bin:
// the stored body, empty for a delete), entries (detail::pack_index_entries). See
// docs/journal-format.md.
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
    pack_index_entries(pk, e.entries);
}

result<entity_op> unpack_entity(record_fields f) {
    if (f.size() != 5) return errc::journal_corrupt;
    entity_op e;
    e.entity_kind = f[0].as<std::string>();
    e.id = bin_of(f[1]);
    e.deleted = f[2].as<bool>();
    e.body = bin_of(f[3]);
    auto entries = unpack_index_entries(f[4]);
    if (!entries) return entries.error();
    e.entries = std::move(entries.value());
    if (!valid_entity_kind(e.entity_kind) || e.id.size() != 16 || e.deleted != e.body.empty() ||
        e.body.size() > stored_body_bytes_max) {
        return errc::journal_corrupt;
    }
    return e;
}

}  // namespace cairn::core::detail
