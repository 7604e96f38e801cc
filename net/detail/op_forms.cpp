#include "net/detail/op_forms.hpp"

#include "core/codec.hpp"
#include "core/document.hpp"
#include "core/edge_rules.hpp"
#include "core/hlc.hpp"
#include "core/indexes.hpp"
#include "core/text_rules.hpp"
#include "indexing/index_registry.hpp"
#include "net/cell_json.hpp"
#include "net/counter_json.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/json_escape.hpp"
#include "net/entity_json.hpp"
#include "net/gateway.hpp"

#include <simdjson.h>

#include <fmt/format.h>

#include <array>
#include <span>

namespace cairn::net::detail {
namespace {

using json = nlohmann::json;
using edit_result = std::variant<core::op, input_error>;

// One level deeper than a client write's parser (json_parse.hpp): an edit nests the body one level.
constexpr std::size_t edit_depth_max = 9;
constexpr std::uint64_t ts_future_ms_max = 3'600'000;  // as a client write's "ts"

std::uint64_t now_ms() { return core::system_wall_clock_ms(); }

// JSON this file's renderers made, as a value (null if it does not parse: never an exception).
json parsed(std::string_view text) {
    json j = json::parse(text, nullptr, false);
    return j.is_discarded() ? json() : j;
}

// An edit's fields as a client write's JSON object: every member but "model", "ts" (unless
// keep_ts) and those named in `apart`, which are returned as elements by name.
struct split_fields {
    std::string rest = "{";
    std::vector<std::pair<std::string_view, simdjson::dom::element>> apart;
    std::optional<simdjson::dom::element> find(std::string_view key) const {
        for (const auto& [k, v] : apart) {
            if (k == key) return v;
        }
        return std::nullopt;
    }
};

split_fields split(const simdjson::dom::object& fields, std::span<const std::string_view> apart, bool keep_ts) {
    split_fields out;
    for (auto [key, value] : fields) {
        if (key == "model" || (key == "ts" && !keep_ts)) continue;
        if (std::find(apart.begin(), apart.end(), key) != apart.end()) {
            out.apart.emplace_back(key, value);
            continue;
        }
        if (out.rest.size() > 1) out.rest += ',';
        append_json_string(out.rest, key);
        out.rest += ':';
        out.rest += simdjson::minify(value);
    }
    out.rest += '}';
    return out;
}

std::optional<std::string_view> string_of(const std::optional<simdjson::dom::element>& v) {
    if (!v || !v->is_string()) return std::nullopt;
    return v->get_string().value_unsafe();
}

// ---- edges and nodes ----------------------------------------------------------------------------

json render_edge(const gateway&, const core::op& o) {
    const auto& e = std::get<core::edge_op>(o.body);
    return json{{"model", "edge"},
                {"graph", e.graph},
                {"source_id", e.source_id},
                {"destination_id", e.destination_id},
                {"state", std::string(core::edge_state_name(e.state))},
                {"position", e.position},
                {"keep_position", !e.sets_position},
                {"ts", core::hlc_ms(o.ts)}};
}

std::variant<std::string, input_error> graph_of(const split_fields& f) {
    const auto g = string_of(f.find("graph"));
    if (!f.find("graph")) return input_error{"graph", "is required"};
    if (!g || !core::valid_graph_name(*g)) return input_error{"graph", "must be 1 to 32 characters of A-Z, a-z, 0-9 and _"};
    return std::string(*g);
}

// {"model": "edge", "graph", then the fields of one edge of POST /v1/graphs/{graph}/edges}.
edit_result parse_edge(gateway& gw, const simdjson::dom::object& fields) {
    static constexpr std::string_view apart[] = {"graph", "node_id", "action", "direction"};
    const auto f = split(fields, apart, true);
    for (const auto key : {"node_id", "action"}) {
        if (f.find(key)) return input_error{key, "is a field of a node op (\"model\": \"node\")"};
    }
    auto graph = graph_of(f);
    if (auto* e = std::get_if<input_error>(&graph)) return *e;
    edge_write_options opts;
    opts.batch_ops_max = 1;
    auto parsed = parse_edge_writes(std::get<std::string>(graph), f.rest, gw.clock, now_ms(), opts);
    if (auto* e = std::get_if<input_error>(&parsed)) return *e;
    auto& ops = std::get<std::vector<core::op>>(parsed);
    if (ops.size() != 1) return input_error{"body", "must describe exactly one op"};
    return std::move(ops.front());
}

json render_node(const gateway&, const core::op& o) {
    const auto& n = std::get<core::node_op>(o.body);
    return json{{"model", "node"},
                {"graph", n.graph},
                {"node_id", n.node_id},
                {"action", std::string(core::node_action_name(n.action))},
                {"direction", std::string(core::node_scope_name(n.scope))},
                {"ts", core::hlc_ms(o.ts)}};
}

// {"model": "node", "graph", "node_id" (number or decimal string), "action", "direction", "ts"}, as
// POST /v1/graphs/{graph}/nodes/{node_id}/{action} with {"ts": ..}.
edit_result parse_node(gateway& gw, const simdjson::dom::object& fields) {
    static constexpr std::string_view apart[] = {"graph", "node_id", "action"};
    const auto f = split(fields, apart, true);
    auto graph = graph_of(f);
    if (auto* e = std::get_if<input_error>(&graph)) return *e;
    auto text_of = [](const std::optional<simdjson::dom::element>& v) -> std::string {
        if (!v) return {};
        return v->is_string() ? std::string(v->get_string().value_unsafe()) : simdjson::minify(*v);
    };
    const auto body = f.rest == "{}" ? std::string_view{} : std::string_view(f.rest);
    auto one = parse_node_write(std::get<std::string>(graph), text_of(f.find("node_id")), text_of(f.find("action")),
                                text_of(f.find("direction")), body, gw.clock, now_ms(), edge_write_options{});
    if (auto* e = std::get_if<input_error>(&one)) return *e;
    return std::move(std::get<core::op>(one));
}

// ---- counters -----------------------------------------------------------------------------------

const core::counter_catalog& counters_of(const gateway& gw) {
    static const core::counter_catalog none;
    return gw.counters ? *gw.counters : none;
}

json render_counter(const gateway& gw, const core::op& o) {
    json j = parsed(render_counter_op(counters_of(gw), std::get<core::counter_op>(o.body)));
    if (!j.is_object()) j = json::object();
    j["model"] = "counter";
    j["ts"] = core::hlc_ms(o.ts);
    return j;
}

// {"model": "counter", "metric", "dimensions", "time", "delta"}, as an increment of
// POST /v1/counters/{metric}.
edit_result parse_counter(gateway& gw, const simdjson::dom::object& fields) {
    static constexpr std::string_view apart[] = {"metric"};
    const auto f = split(fields, apart, false);
    if (!f.find("metric")) return input_error{"metric", "is required"};
    const auto name = string_of(f.find("metric"));
    const core::counter_metric* metric = name ? counters_of(gw).find(*name) : nullptr;
    if (!metric) return input_error{"metric", "must name a declared counter metric"};
    auto parsed = parse_counter_writes(counters_of(gw), *metric, f.rest, gw.clock, now_ms(), 1);
    if (auto* e = std::get_if<input_error>(&parsed)) return *e;
    return std::move(std::get<std::vector<core::op>>(parsed).front());
}

// ---- cells --------------------------------------------------------------------------------------

json render_cell_op(const gateway&, const core::op& o) {
    const auto& c = std::get<core::cell_op>(o.body);
    json j = parsed(render_cell(c.table, c.row_key, c.column, c.ref_key, c.body, o.ts, 0));
    if (!j.is_object()) j = json::object();
    j.erase("added_id");
    j.erase("ts_ms");
    j["model"] = "cell";
    j["ts"] = core::hlc_ms(o.ts);
    return j;
}

// {"model": "cell", "table", "row_key", "column", "ref_key", "body"}, as one cell of
// POST /v1/cells/{table}, with the entries of the table's cell indexes now.
edit_result parse_cell(gateway& gw, const simdjson::dom::object& fields) {
    static const core::cell_config none;
    const auto& cells = gw.cells ? *gw.cells : none;
    static constexpr std::string_view apart[] = {"table"};
    const auto f = split(fields, apart, false);
    if (!f.find("table")) return input_error{"table", "is required"};
    const auto table = string_of(f.find("table"));
    if (!table || !cells.declared(*table)) return input_error{"table", "must name a declared cell table"};
    const auto indexes = gw.indexes ? gw.indexes->of_cell_table(*table) : std::vector<core::index_def>{};
    auto parsed = parse_cell_writes(cells, *table, f.rest, gw.clock, 1, indexes);
    if (auto* e = std::get_if<input_error>(&parsed)) return *e;
    return std::move(std::get<std::vector<core::op>>(parsed).front());
}

// ---- entities -----------------------------------------------------------------------------------

json render_entity(const gateway&, const core::op& o) {
    const auto& e = std::get<core::entity_op>(o.body);
    json j{{"model", "entity"}, {"kind", e.entity_kind}, {"id", core::format_id16_bytes(e.id)},
           {"deleted", e.deleted}, {"ts", core::hlc_ms(o.ts)}};
    if (!e.deleted) j["body"] = parsed(stored_body_json(e.body).value_or("null"));
    return j;
}

// {"model": "entity", "kind", "id", "deleted", "body", "ts"}: as PUT /v1/entities/{kind}/{id}
// with ?ts= (or, with "deleted": true and no body, its DELETE), with the entries of the kind's
// indexes now.
edit_result parse_entity(gateway& gw, const simdjson::dom::object& fields) {
    static const core::entity_config none;
    const auto& cfg = gw.entities ? *gw.entities : none;
    std::optional<std::string_view> kind;
    std::optional<core::id16> id;
    bool deleted = false;
    std::optional<simdjson::dom::element> body;
    std::optional<std::uint64_t> ts;
    for (auto [key, value] : fields) {
        if (key == "model") continue;
        if (key == "kind") {
            if (!value.is_string() || !cfg.declared(value.get_string().value_unsafe())) {
                return input_error{"kind", "must name a declared entity kind"};
            }
            kind = value.get_string().value_unsafe();
        } else if (key == "id") {
            if (value.is_string()) id = core::parse_id16(value.get_string().value_unsafe());
            if (!id) return input_error{"id", "must be 16 bytes as 32 hex digits or UUID text"};
        } else if (key == "deleted") {
            if (!value.is_bool()) return input_error{"deleted", "must be true or false"};
            deleted = value.get_bool().value_unsafe();
        } else if (key == "body") {
            if (!value.is_null()) body = value;
        } else if (key == "ts") {
            const auto max = std::min<std::uint64_t>(core::hlc_ms_max, now_ms() + ts_future_ms_max);
            if (!value.is_uint64() || value.get_uint64().value_unsafe() < 1 || value.get_uint64().value_unsafe() > max) {
                return input_error{"ts", fmt::format("must be positive milliseconds since the Unix epoch, at most {} ms ahead",
                                                     ts_future_ms_max)};
            }
            ts = value.get_uint64().value_unsafe();
        } else {
            return input_error{std::string(key), "is not a field of an entity op"};
        }
    }
    if (!kind) return input_error{"kind", "is required"};
    if (!id) return input_error{"id", "is required"};
    if (deleted && body) return input_error{"body", "must be absent or null when \"deleted\" is true: a delete carries no body"};
    if (!deleted && !body) return input_error{"body", "is required (or \"deleted\": true)"};
    const auto indexes = gw.indexes ? gw.indexes->of_kind(*kind) : std::vector<core::index_def>{};
    auto made = entity_op_of(cfg, *kind, core::id16_bytes(*id), deleted ? nullptr : &*body, indexes);
    if (auto* e = std::get_if<input_error>(&made)) return *e;
    core::op o;
    o.ts = ts ? core::hlc_make(*ts, 0, gw.clock.node_id()) : gw.clock.now();
    o.body = std::get<core::entity_op>(std::move(made));
    return o;
}

// ---- index definitions (rendered, never edited) -----------------------------------------------

json render_index(const gateway&, const core::op& o) {
    const auto& d = std::get<core::index_def_op>(o.body);
    json j{{"model", "index"}, {"name", d.name}, {"dropped", d.dropped}, {"ts", core::hlc_ms(o.ts)}};
    if (auto def = core::decode_index_def(d.definition)) j["kind"] = def.value().kind;
    return j;
}

// ---- the table ----------------------------------------------------------------------------------

struct model_form {
    std::string_view name;
    bool (*holds)(const core::op&);
    json (*render)(const gateway&, const core::op&);
    edit_result (*parse_edit)(gateway&, const simdjson::dom::object&);  // nullptr: not editable
};

template <class Body>
bool holds(const core::op& o) {
    return std::holds_alternative<Body>(o.body);
}

constexpr std::array<model_form, 6> forms{{
    {"edge", holds<core::edge_op>, render_edge, parse_edge},
    {"node", holds<core::node_op>, render_node, parse_node},
    {"counter", holds<core::counter_op>, render_counter, parse_counter},
    {"cell", holds<core::cell_op>, render_cell_op, parse_cell},
    {"entity", holds<core::entity_op>, render_entity, parse_entity},
    {"index", holds<core::index_def_op>, render_index, nullptr},
}};

const std::string& editable_names() {
    static const std::string names = [] {
        std::string out;
        for (const auto& f : forms) {
            if (!f.parse_edit) continue;
            out += out.empty() ? "" : ", ";
            out += fmt::format("\"{}\"", f.name);
        }
        return out;
    }();
    return names;
}

}  // namespace

json op_json(const gateway& gw, const core::op& o) {
    for (const auto& f : forms) {
        if (f.holds(o)) return f.render(gw, o);
    }
    return json{{"model", "unknown"}, {"ts", core::hlc_ms(o.ts)}};
}

std::variant<core::op, input_error> parse_edited_op(gateway& gw, std::string_view body) {
    thread_local simdjson::dom::parser parser(64 * 1024);
    if (parser.max_depth() != edit_depth_max) {
        if (parser.allocate(64 * 1024, edit_depth_max) != simdjson::SUCCESS) return input_error{"body", "cannot be parsed"};
    }
    simdjson::dom::element root;
    if (auto err = parser.parse(body.data(), body.size(), true).get(root); err) {
        return input_error{"body", fmt::format("is not valid JSON: {}", simdjson::error_message(err))};
    }
    if (!root.is_object()) return input_error{"body", "must be a JSON object describing one op"};
    const simdjson::dom::object fields = root.get_object().value_unsafe();
    std::string_view model = "edge";
    simdjson::dom::element m;
    if (fields.at_key("model").get(m) == simdjson::SUCCESS) {
        if (!m.is_string()) return input_error{"model", fmt::format("must be one of {}", editable_names())};
        model = m.get_string().value_unsafe();
    }
    for (const auto& f : forms) {
        if (f.name != model) continue;
        if (!f.parse_edit) return input_error{"model", fmt::format("ops of model \"{}\" cannot be edited", f.name)};
        return f.parse_edit(gw, fields);
    }
    return input_error{"model", fmt::format("must be one of {}", editable_names())};
}

}  // namespace cairn::net::detail
