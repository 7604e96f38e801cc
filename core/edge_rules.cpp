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

node_registers node_merge(node_registers current, node_action action, std::uint64_t ts) noexcept {
    if (action == node_action::remove) {
        current.removed_ts = std::max(current.removed_ts, ts);
        return current;
    }
    const bool archived = action == node_action::archive;
    if (std::tuple(ts, archived) > std::tuple(current.archive_ts, current.archived)) {
        current.archive_ts = ts;
        current.archived = archived;
    }
    return current;
}

node_status node_status_of(const node_registers& r) noexcept {
    if (r.removed_ts == 0 && r.archive_ts == 0) return {};
    if (r.removed_ts >= r.archive_ts) return {edge_state::removed, r.removed_ts};
    return {r.archived ? edge_state::archived : edge_state::normal, r.archive_ts};
}

edge_state edge_effective_state(const edge_row& own, const node_registers& a, const node_registers& b) noexcept {
    auto removes = [&](const node_registers& r) { return r.removed_ts != 0 && r.removed_ts >= own.ts; };
    if (removes(a) || removes(b)) return edge_state::removed;
    if (own.state != edge_state::normal && own.state != edge_state::archived) return own.state;
    auto archives = [&](const node_registers& r) { return r.archive_ts != 0 && r.archived && r.archive_ts >= own.ts; };
    if (archives(a) || archives(b)) return edge_state::archived;
    auto unarchives = [&](const node_registers& r) { return r.archive_ts != 0 && !r.archived && r.archive_ts > own.ts; };
    if (unarchives(a) || unarchives(b)) return edge_state::normal;
    return own.state;
}

}  // namespace cairn::core
