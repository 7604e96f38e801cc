#include "core/edge_rules.hpp"

#include <tuple>

namespace cairn::core {

int edge_state_rank(edge_state s) noexcept {
    switch (s) {
        case edge_state::normal: return 0;
        case edge_state::negative: return 1;
        case edge_state::archived: return 2;
        case edge_state::removed: return 3;
    }
    return 0;
}

std::string_view edge_state_name(edge_state s) noexcept {
    switch (s) {
        case edge_state::normal: return "normal";
        case edge_state::removed: return "removed";
        case edge_state::archived: return "archived";
        case edge_state::negative: return "negative";
    }
    return "normal";
}

std::optional<edge_state> edge_state_from_name(std::string_view name) noexcept {
    if (name == "normal") return edge_state::normal;
    if (name == "removed") return edge_state::removed;
    if (name == "archived") return edge_state::archived;
    if (name == "negative") return edge_state::negative;
    return std::nullopt;
}

std::optional<edge_state> edge_state_from_code(std::uint64_t code) noexcept {
    if (code > 3) return std::nullopt;
    return static_cast<edge_state>(code);
}

edge_row edge_merge(const std::optional<edge_row>& current, const edge_op& o, std::uint64_t ts) noexcept {
    const edge_row incoming{o.state, o.position, ts, ts, o.sets_position};
    if (!current) return incoming;
    edge_row row = *current;
    if (std::tuple(ts, edge_state_rank(o.state)) > std::tuple(row.ts, edge_state_rank(row.state))) {
        row.state = o.state;
        row.ts = ts;
    }
    if (std::tuple(o.sets_position, ts, o.position) > std::tuple(row.pos_set, row.pos_ts, row.position)) {
        row.position = o.position;
        row.pos_ts = ts;
        row.pos_set = o.sets_position;
    }
    return row;
}

}  // namespace cairn::core
