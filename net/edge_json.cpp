#include "net/edge_json.hpp"

#include "core/text_rules.hpp"

#include "core/codec.hpp"
#include "net/detail/json_parse.hpp"

#include <simdjson.h>

#include <fmt/format.h>

#include <charconv>


namespace cairn::net {
namespace {

using detail::parse_json;

// A non-negative int64 given as a JSON number or a decimal string.
std::optional<std::int64_t> id_of(const simdjson::dom::element& v) {
    if (v.is_int64()) {
        const std::int64_t n = v.get_int64().value_unsafe();
        if (n < 0) return std::nullopt;
        return n;
    }
    if (v.is_string()) return parse_id(v.get_string().value_unsafe());
    return std::nullopt;
}

// A client ts: positive milliseconds since the Unix epoch, at most ts_future_ms_max ahead.
std::variant<std::uint64_t, input_error> client_ts_of(const simdjson::dom::element& value, const std::string& field,
                                                      std::uint64_t now_ms, const edge_write_options& opts) {
    if (!value.is_uint64() && !value.is_int64()) {
        return input_error{field, "must be milliseconds since the Unix epoch (an integer)"};
    }
    const auto ms = value.is_uint64() ? value.get_uint64().value_unsafe()
                                      : static_cast<std::uint64_t>(value.get_int64().value_unsafe());
    if (value.is_int64() && value.get_int64().value_unsafe() <= 0) {
        return input_error{field, "must be positive milliseconds since the Unix epoch"};
    }
    if (ms > now_ms + opts.ts_future_ms_max || ms > core::hlc_ms_max) {
        return input_error{field, fmt::format("is more than {} ms in the future", opts.ts_future_ms_max)};
    }
    return ms;
}

std::variant<core::op, input_error> parse_one(std::string_view graph, const simdjson::dom::element& el,
                                              const std::string& prefix, core::hlc& clock, std::uint64_t now_ms,
                                              const edge_write_options& opts) {
    const std::string where = prefix.empty() ? "body" : prefix;
    if (!el.is_object()) return input_error{where, "must be a JSON object describing one edge"};
    core::edge_op e;
    e.graph = std::string(graph);
    bool have_source = false;
    bool have_destination = false;
    std::optional<std::int64_t> position;
    std::optional<bool> keep_position;
    std::optional<std::uint64_t> client_ms;
    // Named, not iterated in place: value_unsafe() returns a reference into a temporary.
    const simdjson::dom::object fields = el.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (key == "source_id" || key == "destination_id") {
            auto id = id_of(value);
            if (!id) {
                return input_error{detail::field_path(prefix, key),
                                   "must be an integer between 0 and 9223372036854775807 (a number or a decimal string)"};
            }
            (key == "source_id" ? e.source_id : e.destination_id) = *id;
            (key == "source_id" ? have_source : have_destination) = true;
        } else if (key == "state") {
            std::optional<core::edge_state> s;
            if (value.is_string()) s = core::edge_state_from_name(value.get_string().value_unsafe());
            if (!s) return input_error{detail::field_path(prefix, key), "must be one of \"normal\", \"removed\", \"archived\", \"negative\""};
            e.state = *s;
        } else if (key == "position") {
            if (!value.is_int64()) return input_error{detail::field_path(prefix, key), "must be a 64-bit signed integer"};
            position = value.get_int64().value_unsafe();
        } else if (key == "keep_position") {
            if (!value.is_bool()) return input_error{detail::field_path(prefix, key), "must be true or false"};
            keep_position = value.get_bool().value_unsafe();
        } else if (key == "ts") {
            auto ms = client_ts_of(value, detail::field_path(prefix, key), now_ms, opts);
            if (auto* err = std::get_if<input_error>(&ms)) return std::move(*err);
            client_ms = std::get<std::uint64_t>(ms);
        } else {
            return input_error{detail::field_path(prefix, key), "is not a known field of an edge write"};
        }
    }
    if (!have_source) return input_error{detail::field_path(prefix, "source_id"), "is required"};
    if (!have_destination) return input_error{detail::field_path(prefix, "destination_id"), "is required"};
    core::op o;
    // A client ts keeps its place in the order (a replay or retry); logical 0 and our node id
    // make it a valid hybrid-clock value. Ties with other client ts are broken by the edge rules.
    o.ts = client_ms ? core::hlc_make(*client_ms, 0, clock.node_id()) : clock.now();
    e.position = position.value_or(static_cast<std::int64_t>(core::hlc_ms(o.ts)));
    e.sets_position = !keep_position.value_or(e.state == core::edge_state::archived);
    o.body = std::move(e);
    return o;
}

}  // namespace

std::optional<std::int64_t> parse_id(std::string_view text) noexcept {
    const auto v = core::parse_decimal_int64(text);
    if (!v || *v < 0) return std::nullopt;
    return v;
}

std::variant<std::vector<std::pair<std::int64_t, std::int64_t>>, input_error> parse_edge_keys(std::string_view body,
                                                                                            std::size_t batch_ops_max) {
    simdjson::dom::element root;
    if (auto err = parse_json(body, root)) return std::move(*err);
    simdjson::dom::element edges;
    if (!root.is_object() || root.get_object().value_unsafe().at_key("edges").get(edges) != simdjson::SUCCESS ||
        root.get_object().value_unsafe().size() != 1) {
        return input_error{"body", "must be an object with the single field \"edges\""};
    }
    if (!edges.is_array()) return input_error{"edges", "must be an array of {\"source_id\", \"destination_id\"} objects"};
    const auto arr = edges.get_array().value_unsafe();
    if (arr.size() == 0) return input_error{"edges", "must not be empty"};
    if (arr.size() > batch_ops_max) {
        return input_error{"edges", fmt::format("holds {} edges; at most {} per request", arr.size(), batch_ops_max)};
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;
    keys.reserve(arr.size());
    std::size_t i = 0;
    for (auto el : arr) {
        const std::string prefix = fmt::format("edges[{}]", i++);
        if (!el.is_object()) return input_error{prefix, "must be an object with source_id and destination_id"};
        std::optional<std::int64_t> source;
        std::optional<std::int64_t> destination;
        const simdjson::dom::object fields = el.get_object().value_unsafe();
        for (auto [key, value] : fields) {
            if (key != "source_id" && key != "destination_id") {
                return input_error{detail::field_path(prefix, key), "is not a known field of an edge key"};
            }
            auto id = id_of(value);
            if (!id) {
                return input_error{detail::field_path(prefix, key),
                                   "must be an integer between 0 and 9223372036854775807 (a number or a decimal string)"};
            }
            (key == "source_id" ? source : destination) = *id;
        }
        if (!source) return input_error{detail::field_path(prefix, "source_id"), "is required"};
        if (!destination) return input_error{detail::field_path(prefix, "destination_id"), "is required"};
        keys.emplace_back(*source, *destination);
    }
    return keys;
}

std::variant<core::op, input_error> parse_node_write(std::string_view graph, std::string_view node_id,
                                                     std::string_view action, std::string_view direction,
                                                     std::string_view body, core::hlc& clock, std::uint64_t now_ms,
                                                     const edge_write_options& opts) {
    if (!core::valid_graph_name(graph)) {
        return input_error{"graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _"};
    }
    const auto id = parse_id(node_id);
    if (!id) return input_error{"node_id", "must be an integer between 0 and 9223372036854775807"};
    const auto a = core::node_action_from_name(action);
    if (!a) return input_error{"action", "must be one of \"remove\", \"archive\", \"negate\", \"restore\", \"unarchive\""};
    const auto scope = direction.empty() ? std::optional{core::node_scope::both} : core::node_scope_from_name(direction);
    if (!scope) return input_error{"direction", "must be \"forward\", \"backward\" or \"both\""};
    std::optional<std::uint64_t> client_ms;
    if (body.find_first_not_of(" \t\r\n") != std::string_view::npos) {
        simdjson::dom::element root;
        if (auto err = parse_json(body, root)) return std::move(*err);
        if (!root.is_object()) return input_error{"body", "must be empty or a JSON object {\"ts\": ..}"};
        const simdjson::dom::object fields = root.get_object().value_unsafe();
        for (auto [key, value] : fields) {
            if (key != "ts") return input_error{std::string(key), "is not a known field of a node write"};
            auto ms = client_ts_of(value, "ts", now_ms, opts);
            if (auto* err = std::get_if<input_error>(&ms)) return std::move(*err);
            client_ms = std::get<std::uint64_t>(ms);
        }
    }
    core::op o;
    o.ts = client_ms ? core::hlc_make(*client_ms, 0, clock.node_id()) : clock.now();
    o.body = core::node_op{std::string(graph), *id, *a, *scope};
    return o;
}

std::variant<std::vector<core::op>, input_error> parse_edge_writes(std::string_view graph, std::string_view body,
                                                                   core::hlc& clock, std::uint64_t now_ms,
                                                                   const edge_write_options& opts) {
    if (!core::valid_graph_name(graph)) {
        return input_error{"graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _"};
    }
    simdjson::dom::element root;
    if (auto err = parse_json(body, root)) return std::move(*err);
    std::vector<core::op> ops;
    if (root.is_object()) {
        simdjson::dom::element edges;
        if (root.get_object().value_unsafe().at_key("edges").get(edges) == simdjson::SUCCESS) {
            if (root.get_object().value_unsafe().size() != 1) {
                return input_error{"body", "a batch has the single field \"edges\""};
            }
            if (!edges.is_array()) return input_error{"edges", "must be an array of edge objects"};
            const auto arr = edges.get_array().value_unsafe();
            if (arr.size() == 0) return input_error{"edges", "must not be empty"};
            if (arr.size() > opts.batch_ops_max) {
                return input_error{"edges", fmt::format("holds {} edges; at most {} per request", arr.size(), opts.batch_ops_max)};
            }
            ops.reserve(arr.size());
            std::size_t i = 0;
            for (auto el : arr) {
                auto one = parse_one(graph, el, fmt::format("edges[{}]", i++), clock, now_ms, opts);
                if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
                ops.push_back(std::move(std::get<core::op>(one)));
            }
            return ops;
        }
    }
    auto one = parse_one(graph, root, "", clock, now_ms, opts);
    if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
    ops.push_back(std::move(std::get<core::op>(one)));
    return ops;
}

namespace {

// The fields of one single-node query, {"node_id": .., "direction": "forward"|"backward", "state":
// ..}, at prefix (e.g. "queries[2]") of a body; what names it in errors ("set query", "count
// query"); with many_states, "state" may name several, comma-separated.
struct node_query_fields {
    std::int64_t node_id = 0;
    bool forward = true;
    core::edge_state_set states = core::edge_state::normal;
};
std::variant<node_query_fields, input_error> parse_node_query_fields(simdjson::dom::object fields, const std::string& prefix,
                                                                     std::string_view what, bool many_states) {
    node_query_fields q;
    bool have_node = false;
    for (auto [key, value] : fields) {
        if (key == "node_id") {
            auto id = id_of(value);
            if (!id) return input_error{detail::field_path(prefix, key), "must be an integer between 0 and 9223372036854775807"};
            q.node_id = *id;
            have_node = true;
        } else if (key == "direction") {
            const std::string_view d = value.is_string() ? value.get_string().value_unsafe() : "";
            if (d != "forward" && d != "backward") return input_error{detail::field_path(prefix, key), "must be \"forward\" or \"backward\""};
            q.forward = d == "forward";
        } else if (key == "state") {
            const std::string_view text = value.is_string() ? value.get_string().value_unsafe() : "";
            if (many_states) {
                auto st = core::edge_state_set_from_names(text);
                if (!st) {
                    return input_error{detail::field_path(prefix, key),
                                       "must be one or more of normal, removed, archived, negative, comma-separated"};
                }
                q.states = *st;
            } else {
                auto st = core::edge_state_from_name(text);
                if (!st) return input_error{detail::field_path(prefix, key), "must be one of \"normal\", \"removed\", \"archived\", \"negative\""};
                q.states = *st;
            }
        } else {
            return input_error{detail::field_path(prefix, key), fmt::format("is not a known field of a {}", what)};
        }
    }
    if (!have_node) return input_error{detail::field_path(prefix, "node_id"), "is required"};
    return q;
}

// One count query: one node, direction and state.
std::variant<set_query, input_error> parse_node_query(simdjson::dom::element el, const std::string& prefix,
                                                      std::string_view what) {
    if (!el.is_object()) return input_error{prefix, "must be an object with node_id, direction and state"};
    auto f = parse_node_query_fields(el.get_object().value_unsafe(), prefix, what, false);
    if (auto* e = std::get_if<input_error>(&f)) return std::move(*e);
    const auto& q = std::get<node_query_fields>(f);
    return set_query{q.node_id, q.forward, q.states.list().front()};
}

}  // namespace

std::variant<std::vector<set_query>, input_error> parse_count_queries(std::string_view body, std::size_t batch_ops_max) {
    simdjson::dom::element root;
    if (auto err = parse_json(body, root)) return std::move(*err);
    simdjson::dom::element queries;
    if (!root.is_object() || root.get_object().value_unsafe().at_key("queries").get(queries) != simdjson::SUCCESS ||
        root.get_object().value_unsafe().size() != 1) {
        return input_error{"body", "must be an object with the single field \"queries\""};
    }
    if (!queries.is_array()) return input_error{"queries", "must be an array of {\"node_id\", \"direction\", \"state\"} objects"};
    const auto arr = queries.get_array().value_unsafe();
    if (arr.size() == 0) return input_error{"queries", "must not be empty"};
    if (arr.size() > batch_ops_max) {
        return input_error{"queries", fmt::format("holds {} queries; at most {} per request", arr.size(), batch_ops_max)};
    }
    std::vector<set_query> out;
    out.reserve(arr.size());
    std::size_t i = 0;
    for (auto el : arr) {
        auto q = parse_node_query(el, fmt::format("queries[{}]", i++), "count query");
        if (auto* e = std::get_if<input_error>(&q)) return std::move(*e);
        out.push_back(std::get<set_query>(q));
    }
    return out;
}

std::variant<std::vector<std::int64_t>, input_error> parse_id_list(std::string_view body, std::string_view field,
                                                                   std::size_t ids_max) {
    simdjson::dom::element root;
    if (auto err = parse_json(body, root)) return std::move(*err);
    simdjson::dom::element list;
    if (!root.is_object() || root.get_object().value_unsafe().at_key(field).get(list) != simdjson::SUCCESS ||
        root.get_object().value_unsafe().size() != 1) {
        return input_error{"body", fmt::format("must be an object with the single field \"{}\"", field)};
    }
    if (!list.is_array()) return input_error{std::string(field), "must be an array of node ids"};
    const auto arr = list.get_array().value_unsafe();
    if (arr.size() == 0) return input_error{std::string(field), "must not be empty"};
    if (arr.size() > ids_max) {
        return input_error{std::string(field), fmt::format("holds {} ids; at most {} per request", arr.size(), ids_max)};
    }
    std::vector<std::int64_t> out;
    out.reserve(arr.size());
    std::size_t i = 0;
    for (auto el : arr) {
        auto id = id_of(el);
        if (!id) {
            return input_error{fmt::format("{}[{}]", field, i), "must be an integer between 0 and 9223372036854775807 (a number or a decimal string)"};
        }
        out.push_back(*id);
        ++i;
    }
    return out;
}

namespace {

// One operand of a set request at prefix (e.g. "queries[1].queries[0]"): a leaf, or an operation
// at `depth` (the top one is 1) whose leaves are counted into `leaves`.
std::variant<set_term, input_error> parse_set_term(simdjson::dom::element el, const std::string& prefix, std::size_t depth,
                                                   std::size_t& leaves);

std::variant<set_term, input_error> parse_set_operation(simdjson::dom::object fields, const std::string& prefix,
                                                        std::size_t depth, std::size_t& leaves) {
    if (depth > set_depth_max) {
        return input_error{prefix.empty() ? "queries" : prefix,
                           fmt::format("nests operations more than {} deep", set_depth_max)};
    }
    set_term t;
    bool have_queries = false;
    for (auto [key, value] : fields) {
        if (key == "op") {
            const std::string_view op = value.is_string() ? value.get_string().value_unsafe() : "";
            if (op != "intersect" && op != "union" && op != "difference") {
                return input_error{detail::field_path(prefix, "op"), "must be \"intersect\", \"union\" or \"difference\""};
            }
            t.op = std::string(op);
        } else if (key == "queries") {
            const auto field = detail::field_path(prefix, "queries");
            if (!value.is_array()) return input_error{field, "must be an array of single-node queries or nested operations"};
            const auto arr = value.get_array().value_unsafe();
            if (arr.size() == 0) return input_error{field, "must not be empty"};
            have_queries = true;
            std::size_t i = 0;
            for (auto operand : arr) {
                auto sub = parse_set_term(operand, fmt::format("{}[{}]", field, i++), depth, leaves);
                if (auto* e = std::get_if<input_error>(&sub)) return std::move(*e);
                t.operands.push_back(std::move(std::get<set_term>(sub)));
            }
        } else if (depth > 1) {
            return input_error{detail::field_path(prefix, key), "is not a known field of a nested set operation (op, queries)"};
        }
    }
    if (t.op.empty()) return input_error{detail::field_path(prefix, "op"), "is required"};
    if (!have_queries) return input_error{detail::field_path(prefix, "queries"), "is required"};
    if (t.op == "difference" && t.operands.size() < 2) {
        return input_error{detail::field_path(prefix, "queries"), "a difference needs at least 2 queries (the first minus the others)"};
    }
    return t;
}

std::variant<set_term, input_error> parse_set_term(simdjson::dom::element el, const std::string& prefix, std::size_t depth,
                                                   std::size_t& leaves) {
    if (!el.is_object()) return input_error{prefix, "must be an object: a single-node query or a nested {op, queries}"};
    const simdjson::dom::object fields = el.get_object().value_unsafe();
    simdjson::dom::element ignored;
    if (fields.at_key("op").get(ignored) == simdjson::SUCCESS) return parse_set_operation(fields, prefix, depth + 1, leaves);
    if (++leaves > set_queries_max) {
        return input_error{"queries", fmt::format("hold more than {} single-node queries in all", set_queries_max)};
    }
    auto f = parse_node_query_fields(fields, prefix, "set query", true);
    if (auto* e = std::get_if<input_error>(&f)) return std::move(*e);
    const auto& q = std::get<node_query_fields>(f);
    set_term t;
    t.node_id = q.node_id;
    t.forward = q.forward;
    t.states = q.states;
    return t;
}

}  // namespace

std::variant<set_request, input_error> parse_set_request(std::string_view body) {
    simdjson::dom::element root;
    if (auto err = parse_json(body, root)) return std::move(*err);
    if (!root.is_object()) return input_error{"body", "must be a JSON object with op and queries"};
    set_request out;
    bool have_order = false;
    const simdjson::dom::object fields = root.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (key == "op" || key == "queries") {
            continue;  // the top-level operation, below
        } else if (key == "limit") {
            if (!value.is_uint64() || value.get_uint64().value_unsafe() == 0) {
                return input_error{"limit", "must be a positive integer"};
            }
            out.limit = static_cast<std::size_t>(std::min<std::uint64_t>(value.get_uint64().value_unsafe(), SIZE_MAX));
        } else if (key == "cursor") {
            if (value.is_null()) continue;
            if (!value.is_string()) return input_error{"cursor", "must be a next_cursor or prev_cursor returned by this route"};
            out.cursor = std::string(value.get_string().value_unsafe());
        } else if (key == "order") {
            const std::string_view o = value.is_string() ? value.get_string().value_unsafe() : "";
            if (o != "asc" && o != "desc") return input_error{"order", "must be \"asc\" or \"desc\""};
            out.descending = o == "desc";
            have_order = true;
        } else if (key == "count") {
            if (!value.is_bool()) return input_error{"count", "must be true or false"};
            out.count = value.get_bool().value_unsafe();
        } else {
            return input_error{std::string(key), "is not a known field of a set request"};
        }
    }
    std::size_t leaves = 0;
    auto top = parse_set_operation(fields, "", 1, leaves);
    if (auto* e = std::get_if<input_error>(&top)) return std::move(*e);
    out.expr = std::move(std::get<set_term>(top));
    if (out.count && (out.limit || out.cursor || have_order)) {
        return input_error{"count", "counts the whole expression: it takes no limit, cursor or order"};
    }
    return out;
}

std::string set_term_text(const set_term& t) {
    if (t.op.empty()) {
        std::string out = std::to_string(t.node_id);
        out += t.forward ? 'f' : 'b';
        for (const auto s : t.states.list()) out += static_cast<char>('0' + static_cast<int>(s));
        return out;
    }
    std::string out = t.op + "(";
    for (std::size_t i = 0; i < t.operands.size(); ++i) {
        if (i) out += ',';
        out += set_term_text(t.operands[i]);
    }
    return out + ")";
}

namespace {
template <class Int>
void append_decimal(std::string& out, Int v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}
}  // namespace

void append_int64(std::string& out, std::int64_t v, id_format f) {
    if (f == id_format::string) out += '"';
    append_decimal(out, v);
    if (f == id_format::string) out += '"';
}

std::string render_edge(std::string_view graph, std::int64_t source_id, std::int64_t destination_id,
                        const core::edge_row& row, id_format ids) {
    std::string out = fmt::format(R"({{"graph":"{}","source_id":)", graph);
    append_int64(out, source_id, ids);
    out += R"(,"destination_id":)";
    append_int64(out, destination_id, ids);
    fmt::format_to(std::back_inserter(out), R"(,"state":"{}","position":)", core::edge_state_name(row.state));
    append_int64(out, row.position, ids);
    fmt::format_to(std::back_inserter(out), R"(,"ts":"{}","ts_ms":{}}})", row.ts, core::hlc_ms(row.ts));
    return out;
}

void append_page_edge(std::string& out, bool forward, std::int64_t other_id, const core::edge_row& row, id_format ids) {
    // Pages are cairn's widest answers: built by appends, without a format string per field.
    out += forward ? R"({"destination_id":)" : R"({"source_id":)";
    append_int64(out, other_id, ids);
    out += R"(,"state":")";
    out += core::edge_state_name(row.state);
    out += R"(","position":)";
    append_int64(out, row.position, ids);
    out += R"(,"ts":")";
    append_decimal(out, row.ts);
    out += R"(","ts_ms":)";
    append_decimal(out, core::hlc_ms(row.ts));
    out += '}';
}

}  // namespace cairn::net
