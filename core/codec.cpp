#include "core/codec.hpp"

#include "core/assert.hpp"
#include "core/edge_rules.hpp"

#include <msgpack.hpp>

namespace cairn::core {
namespace {

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};

// Record layout (array): [version, op_id, ts, model, model fields...]
// edge fields: graph (str), source_id (int), destination_id (int), state (uint),
//              position (int), sets_position (bool)
constexpr std::uint32_t edge_record_fields = 10;


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
    string_writer w{out};
    msgpack::packer<string_writer> pk(w);
    std::visit(
        [&](const auto& body) {
            using T = std::decay_t<decltype(body)>;
            if constexpr (std::is_same_v<T, edge_op>) {
                CAIRN_ASSERT(valid_graph_name(body.graph));
                pk.pack_array(edge_record_fields);
                pk.pack(op_format_version);
                pk.pack(o.op_id);
                pk.pack(o.ts);
                pk.pack(static_cast<std::uint8_t>(model::edge));
                pk.pack(body.graph);
                pk.pack(body.source_id);
                pk.pack(body.destination_id);
                pk.pack(static_cast<std::uint8_t>(body.state));
                pk.pack(body.position);
                pk.pack(body.sets_position);
            }
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
        // Limits: arrays, maps, strings and nesting are small in every valid record.
        const msgpack::unpack_limit limit(64, 16, 1024, 1024, 1024, 4);
        std::size_t offset = 0;
        msgpack::object_handle oh =
            msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, limit);
        if (offset != bytes.size()) return errc::journal_corrupt;
        const msgpack::object& obj = oh.get();
        if (obj.type != msgpack::type::ARRAY || obj.via.array.size < 4) return errc::journal_corrupt;
        const msgpack::object* f = obj.via.array.ptr;
        if (f[0].as<std::uint8_t>() != op_format_version) return errc::journal_corrupt;
        op out;
        out.op_id = f[1].as<std::uint64_t>();
        out.ts = f[2].as<std::uint64_t>();
        const auto kind = f[3].as<std::uint8_t>();
        if (kind == static_cast<std::uint8_t>(model::edge)) {
            if (obj.via.array.size != edge_record_fields) return errc::journal_corrupt;
            edge_op e;
            e.graph = f[4].as<std::string>();
            e.source_id = f[5].as<std::int64_t>();
            e.destination_id = f[6].as<std::int64_t>();
            auto state = edge_state_from_code(f[7].as<std::uint8_t>());
            if (!state) return errc::journal_corrupt;
            e.state = *state;
            e.position = f[8].as<std::int64_t>();
            e.sets_position = f[9].as<bool>();
            if (!valid_graph_name(e.graph)) return errc::journal_corrupt;
            out.body = std::move(e);
            return out;
        }
        return errc::journal_corrupt;
    } catch (const std::exception&) {
        return errc::journal_corrupt;
    }
}

}  // namespace cairn::core
