// The msgpack side of journal records, shared by core/codec.cpp and each model's record
// fields (core/<model>_codec.cpp). Only those files include it: it pulls in msgpack.
//
// A record is one array: [version, op_id, ts, model, model fields...]. A model's fields are
// written by pack_fields(packer, body) after the header, and read back by its unpack function
// from the array's elements after the header. Unpack functions may let msgpack-c's type_error
// escape: decode_op turns every exception into errc::journal_corrupt.
#pragma once

#include "core/op.hpp"
#include "core/result.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace cairn::core::detail {

struct string_writer {
    std::string& out;
    void write(const char* data, std::size_t size) { out.append(data, size); }
};
using record_packer = msgpack::packer<string_writer>;
using record_fields = std::span<const msgpack::object>;

inline constexpr std::uint32_t record_header_fields = 4;

// Edges (core/edge_codec.cpp).
std::uint32_t field_count(const edge_op& e) noexcept;
void pack_fields(record_packer& pk, const edge_op& e);
result<edge_op> unpack_edge(record_fields f);

// Whole-node ops (core/node_codec.cpp).
std::uint32_t field_count(const node_op& n) noexcept;
void pack_fields(record_packer& pk, const node_op& n);
result<node_op> unpack_node(record_fields f);

// Entity writes (core/entity_codec.cpp).
std::uint32_t field_count(const entity_op& e) noexcept;
void pack_fields(record_packer& pk, const entity_op& e);
result<entity_op> unpack_entity(record_fields f);

// The index entries an entity or cell write carries (core/index_codec.cpp): an array of
// [index str, values array (int, or bin for id/string), shard_hash uint], at most 64.
void pack_index_entries(record_packer& pk, const std::vector<index_entry>& entries);
result<std::vector<index_entry>> unpack_index_entries(const msgpack::object& o);

// Index definitions (core/index_codec.cpp).
std::uint32_t field_count(const index_def_op& d) noexcept;
void pack_fields(record_packer& pk, const index_def_op& d);
result<index_def_op> unpack_index_def(record_fields f);

// Cell writes (core/cell_codec.cpp).
std::uint32_t field_count(const cell_op& c) noexcept;
void pack_fields(record_packer& pk, const cell_op& c);
result<cell_op> unpack_cell(record_fields f);

// Counter increments (core/counter_codec.cpp).
std::uint32_t field_count(const counter_op& c) noexcept;
void pack_fields(record_packer& pk, const counter_op& c);
result<counter_op> unpack_counter(record_fields f);

}  // namespace cairn::core::detail
