// Record fields of a counter increment: metric (str), dimensions (array of str, the metric's
// declared order), time_ms (int), delta (int), shard_hash (uint). See docs/journal-format.md.
#include "core/assert.hpp"
#include "core/detail/op_record.hpp"

namespace cairn::core::detail {
namespace {

constexpr std::size_t metric_bytes_max = 32;
constexpr std::size_t dimensions_max = 16;
constexpr std::size_t dimension_bytes_max = 255;

}  // namespace

std::uint32_t field_count(const counter_op&) noexcept { return 5; }

void pack_fields(record_packer& pk, const counter_op& c) {
    CAIRN_ASSERT(!c.metric.empty() && c.metric.size() <= metric_bytes_max && c.dimensions.size() <= dimensions_max);
    pk.pack(c.metric);
    pk.pack_array(static_cast<std::uint32_t>(c.dimensions.size()));
    for (const auto& d : c.dimensions) pk.pack(d);
    pk.pack(c.time_ms);
    pk.pack(c.delta);
    pk.pack(c.shard_hash);
}

result<counter_op> unpack_counter(record_fields f) {
    if (f.size() != 5 || f[1].type != msgpack::type::ARRAY) return errc::journal_corrupt;
    counter_op c;
    c.metric = f[0].as<std::string>();
    const auto& dims = f[1].via.array;
    if (dims.size > dimensions_max) return errc::journal_corrupt;
    c.dimensions.reserve(dims.size);
    for (std::uint32_t i = 0; i < dims.size; ++i) {
        c.dimensions.push_back(dims.ptr[i].as<std::string>());
        if (c.dimensions.back().size() > dimension_bytes_max) return errc::journal_corrupt;
    }
    c.time_ms = f[2].as<std::int64_t>();
    c.delta = f[3].as<std::int64_t>();
    c.shard_hash = f[4].as<std::uint64_t>();
    if (c.metric.empty() || c.metric.size() > metric_bytes_max || c.time_ms < 0) return errc::journal_corrupt;
    return c;
}

}  // namespace cairn::core::detail
