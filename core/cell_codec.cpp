// Record fields of a cell write: table (str), row_key (bin, 16 bytes), column (str), ref_key
// (int), body (bin: the stored body, format byte first), and, only when the cell has index rows,
// entries (detail::pack_index_entries): records written before cell indexes have five fields,
// and a cell without index rows is still written that way. See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core::detail {
namespace {

std::string bin_of(const msgpack::object& o) {
    if (o.type != msgpack::type::BIN) throw msgpack::type_error();
    return std::string(o.via.bin.ptr, o.via.bin.size);
}

}  // namespace

std::uint32_t field_count(const cell_op& c) noexcept { return c.entries.empty() ? 5 : 6; }

void pack_fields(record_packer& pk, const cell_op& c) {
    CAIRN_ASSERT(valid_cell_table(c.table) && c.row_key.size() == 16 && valid_cell_column(c.column));
    pk.pack(c.table);
    pk.pack_bin(static_cast<std::uint32_t>(c.row_key.size()));
    pk.pack_bin_body(c.row_key.data(), static_cast<std::uint32_t>(c.row_key.size()));
    pk.pack(c.column);
    pk.pack(c.ref_key);
    pk.pack_bin(static_cast<std::uint32_t>(c.body.size()));
    pk.pack_bin_body(c.body.data(), static_cast<std::uint32_t>(c.body.size()));
    if (!c.entries.empty()) pack_index_entries(pk, c.entries);
}

result<cell_op> unpack_cell(record_fields f) {
    if (f.size() != 5 && f.size() != 6) return errc::journal_corrupt;
    cell_op c;
    c.table = f[0].as<std::string>();
    c.row_key = bin_of(f[1]);
    c.column = f[2].as<std::string>();
    c.ref_key = f[3].as<std::int64_t>();
    c.body = bin_of(f[4]);
    if (f.size() == 6) {
        auto entries = unpack_index_entries(f[5]);
        if (!entries || entries.value().empty()) return errc::journal_corrupt;
        c.entries = std::move(entries.value());
    }
    if (!valid_cell_table(c.table) || c.row_key.size() != 16 || !valid_cell_column(c.column) || c.body.empty() ||
        c.body.size() > stored_body_bytes_max) {
        return errc::journal_corrupt;
    }
    return c;
}

}  // namespace cairn::core::detail
