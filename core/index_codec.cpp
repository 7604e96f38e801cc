// Record fields of an index definition op: name (str), dropped (bool), definition (bin:
// core::encode_index_def, empty for a drop). See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core::detail {

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
