#include "core/edge_rules.hpp"

#include <algorithm>
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

std::vector<edge_state> edge_state_set::list() const {
    std::vector<edge_state> out;
    for (unsigned s = 0; s < 4; ++s) {
        if ((bits_ >> s) & 1u) out.push_back(static_cast<edge_state>(s));
    }
    return out;
}

std::string edge_state_set::names() const {
    std::string out;
    for (const auto s : list()) {
        if (!out.empty()) out += ',';
        out += edge_state_name(s);
    }
    return out;
}

std::optional<edge_state_set> edge_state_set_from_names(std::string_view names) noexcept {
    std::optional<edge_state_set> out;
    for (;;) {
        const auto comma = names.find(',');
        const auto st = edge_state_from_name(names.substr(0, comma));
        if (!st) return std::nullopt;
        if (out) {
            out->add(*st);
        } else {
            out = edge_state_set(*st);
        }
        if (comma == std::string_view::npos) return out;
        names.remove_prefix(comma + 1);
    }
}

int node_action_rank(node_action a) noexcept {
    switch (a) {
        case node_action::unarchive: return 0;
        case node_action::negate: return 1;
        case node_action::archive: return 2;
        case node_action::remove: return 3;
    }
    return 0;
}

node_registers node_merge(node_registers current, node_action action, std::uint64_t ts) noexcept {
    if (action == node_action::remove) current.removed_ts = std::max(current.removed_ts, ts);
    if (std::tuple(ts, node_action_rank(action)) > std::tuple(current.action_ts, node_action_rank(current.action))) {
        current.action_ts = ts;
        current.action = action;
    }
    return current;
}

edge_state node_action_state(node_action a) noexcept {
    switch (a) {
        case node_action::remove: return edge_state::removed;
        case node_action::archive: return edge_state::archived;
        case node_action::negate: return edge_state::negative;
        case node_action::unarchive: return edge_state::normal;
    }
    return edge_state::normal;
}

node_status node_status_of(const node_registers& r) noexcept {
    if (r.action_ts == 0) return {};
    return {node_action_state(r.action), r.action_ts};
}

edge_state edge_effective_state(const edge_row& own, const node_registers& source_forward,
                                const node_registers& destination_backward) noexcept {
    auto removes = [&](const node_registers& r) { return r.removed_ts != 0 && r.removed_ts >= own.ts; };
    if (removes(source_forward) || removes(destination_backward)) return edge_state::removed;
    edge_state out = own.state;
    for (const auto* r : {&source_forward, &destination_backward}) {
        if (r->action_ts == 0 || r->action == node_action::unarchive) continue;
        const auto hidden = node_action_state(r->action);
        if (edge_state_rank(hidden) > edge_state_rank(out)) out = hidden;
    }
    return out;
}

}  // namespace cairn::core
