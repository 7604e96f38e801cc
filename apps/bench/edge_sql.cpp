#include "apps/bench/edge_sql.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"

#include <fmt/format.h>

namespace cairn::bench {

std::vector<std::pair<core::shard_index, direct_row>> direct_rows_of(const core::shard_map& map, std::int64_t source_id,
                                                                     std::int64_t destination_id, std::int64_t position,
                                                                     std::uint64_t ts) {
    return {{map.shard_of_id(source_id), direct_row{source_id, 0, destination_id, position, ts}},
            {map.shard_of_id(destination_id), direct_row{destination_id, 1, source_id, position, ts}}};
}

std::string direct_upsert_sql(std::string_view graph, const std::vector<direct_row>& rows) {
    CAIRN_ASSERT(core::valid_graph_name(graph));
    CAIRN_ASSERT(!rows.empty());
    std::string sql;
    sql.reserve(360 + rows.size() * (graph.size() + 72));
    sql += "INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) VALUES ";
    bool first = true;
    for (const auto& r : rows) {
        if (!first) sql += ',';
        first = false;
        fmt::format_to(std::back_inserter(sql), "('{}',{},{},{},0,0,{},{},{},1)", graph, r.node_id,
                       static_cast<int>(r.direction), r.other_id, r.position, r.ts, r.ts);
    }
    sql += " ON DUPLICATE KEY UPDATE"
           " state = IF(VALUES(ts) > ts, VALUES(state), state),"
           " own_state = IF(VALUES(ts) > ts, VALUES(own_state), own_state),"
           " position = IF(VALUES(ts) > ts, VALUES(position), position),"
           " pos_ts = IF(VALUES(ts) > ts, VALUES(pos_ts), pos_ts),"
           " pos_set = IF(VALUES(ts) > ts, VALUES(pos_set), pos_set),"
           " ts = GREATEST(ts, VALUES(ts))";
    return sql;
}

std::uint64_t direct_ts(std::uint64_t now_ms, std::uint64_t counter) noexcept {
    return (now_ms << 22) | ((counter & 0xfff) << 10) | 1023u;
}

}  // namespace cairn::bench
