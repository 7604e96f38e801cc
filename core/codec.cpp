#include "core/codec.hpp"

#include "core/detail/op_record.hpp"

namespace cairn::core {
namespace {

// Turns a model's unpacked body into the op (or passes its error on).
template <class Body>
result<op> finish(op out, result<Body> body) {
    if (!body) return body.error();
    out.body = std::move(body.value());
    return out;
}

}  // namespace

bool valid_graph_name(std::string_view graph) noexcept {
    if (graph.empty() || graph.size() > graph_name_bytes_max) return false;
    for (char c : graph) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

void encode_op(const op& o, std::string& out) {
    detail::string_writer w{out};
    detail::record_packer pk(w);
    std::visit(
        [&](const auto& body) {
            pk.pack_array(detail::record_header_fields + detail::field_count(body));
            pk.pack(op_format_version);
            pk.pack(o.op_id);
            pk.pack(o.ts);
            pk.pack(static_cast<std::uint8_t>(o.kind()));
            detail::pack_fields(pk, body);
        },
        o.body);
}

std::string encode_op(const op& o) {
    std::string out;
    encode_op(o, out);
    return out;
}

result<op> decode_op(std::span<const char> bytes) {
    if (bytes.size() > op_record_bytes_max) return errc::journal_corrupt;
    try {
        // Limits (array, map, str, bin, ext, depth): records are arrays of scalars and byte
        // strings, none longer than a record, nested at most 4 deep (an entity's index entries).
        const msgpack::unpack_limit limit(64, 64, op_record_bytes_max, op_record_bytes_max, 1024, 6);
        std::size_t offset = 0;
        msgpack::object_handle oh = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
        if (offset != bytes.size()) return errc::journal_corrupt;
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size < detail::record_header_fields) {
            return errc::journal_corrupt;
        }
        const msgpack::object* f = obj.via.array.ptr;
        if (f[0].as<std::uint8_t>() != op_format_version) return errc::journal_corrupt;
        op out;
        out.op_id = f[1].as<std::uint64_t>();
        out.ts = f[2].as<std::uint64_t>();
        const detail::record_fields fields(f + detail::record_header_fields,
                                           obj.via.array.size - detail::record_header_fields);
        switch (static_cast<model>(f[3].as<std::uint8_t>())) {
            case model::edge: return finish(std::move(out), detail::unpack_edge(fields));
            case model::node: return finish(std::move(out), detail::unpack_node(fields));
            case model::entity: return finish(std::move(out), detail::unpack_entity(fields));
            case model::index: return finish(std::move(out), detail::unpack_index_def(fields));
            case model::cell: return finish(std::move(out), detail::unpack_cell(fields));
            case model::counter: return finish(std::move(out), detail::unpack_counter(fields));
            default: return errc::journal_corrupt;
        }
    } catch (const std::exception&) {
        return errc::journal_corrupt;
    }
}

}  // namespace cairn::core
