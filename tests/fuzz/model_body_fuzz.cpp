// Fuzz target: each model's JSON write body as its route parses it (issue 13) — edge writes, a node
// action, edge multi-get keys, multi-count queries, the other ends of a page, a set operation, cell writes (with a cell index), counter increments
// and an entity put (with two entity indexes). The first byte picks the parser; the rest is the
// body. Never a crash, never an exception; every op a parser accepts survives the journal's codec
// unchanged (encode, decode, equal), and every refusal says why.
#include "core/codec.hpp"
#include "core/config.hpp"
#include "core/hlc.hpp"
#include "core/indexes.hpp"
#include "net/cell_json.hpp"
#include "net/counter_json.hpp"
#include "net/detail/json_parse.hpp"
#include "net/edge_json.hpp"
#include "net/entity_json.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>
#include <vector>

namespace {

using namespace cairn;

constexpr std::uint64_t now_ms = 1'750'000'000'000;

// Declared as a deployment would: one cell table, one entity kind, one counter metric.
const core::config& config() {
    static const core::config c = [] {
        auto r = core::parse_config(R"(
[cells]
tables = ["users"]
[entities]
kinds = ["user"]
[[counters.metrics]]
name = "plays"
shard_on = "track_id"
dimensions = [{ name = "track_id", type = "int" }, { name = "country", type = "string", length = 2 }]
tables = [{ name = "plays_by_track_day_country", granularity = "day", key = ["track_id", "time", "country"] }]
)");
        if (!r) std::abort();
        return std::move(r).value();
    }();
    return c;
}

core::index_def index_of(std::string name, std::string kind, std::string column,
                         std::vector<core::index_property> properties) {
    core::index_def d;
    d.name = std::move(name);
    d.kind = std::move(kind);
    d.column = std::move(column);
    d.properties = std::move(properties);
    if (core::check_index_def(d)) std::abort();
    return d;
}

const std::vector<core::index_def>& cell_indexes() {
    static const std::vector<core::index_def> v{
        index_of("users_by_company", "users", "BASE", {{"company_id", core::index_value_type::id, 0}}),
        index_of("users_by_email", "users", "BASE", {{"email", core::index_value_type::string, 64}})};
    return v;
}

const std::vector<core::index_def>& entity_indexes() {
    static const std::vector<core::index_def> v{
        index_of("users_by_city", "user", "", {{"city", core::index_value_type::integer, 0}}),
        index_of("users_by_name", "user", "", {{"name", core::index_value_type::string, 32},
                                               {"active", core::index_value_type::boolean, 0}})};
    return v;
}

void check_round_trip(const core::op& o) {
    const auto bytes = core::encode_op(o);
    auto back = core::decode_op(std::span(bytes.data(), bytes.size()));
    if (!back || !(back.value() == o)) std::abort();
}

template <class T>
void check(const std::variant<T, net::input_error>& r) {
    if (const auto* e = std::get_if<net::input_error>(&r)) {
        if (e->detail.empty()) std::abort();  // a refusal says why (its field may be an empty key)
        return;
    }
    const auto& v = std::get<T>(r);
    if constexpr (std::is_same_v<T, std::vector<core::op>>) {
        if (v.empty()) std::abort();
        for (const auto& o : v) check_round_trip(o);
    } else if constexpr (std::is_same_v<T, core::op>) {
        check_round_trip(v);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    static core::hlc clock(1, [] { return now_ms; });
    const net::edge_write_options edge_opts{64, 3'600'000};
    const auto& cfg = config();
    switch (data[0] % 7) {
        case 0: check(net::parse_edge_writes("follows", body, clock, now_ms, edge_opts)); break;
        case 1: {
            constexpr std::string_view actions[] = {"remove", "archive", "negate", "restore"};
            constexpr std::string_view directions[] = {"", "forward", "backward", "sideways"};
            check(net::parse_node_write("follows", "42", actions[(data[0] / 7) % 4], directions[(data[0] / 28) % 4], body, clock,
                                        now_ms, edge_opts));
            break;
        }
        case 2:
            // Multi-get keys, (first byte 9, 30, ...) the queries of a multi-count, or (16, 37, ...)
            // the other ends of a "which of these" page.
            if ((data[0] / 7) % 3 == 0) {
                check(net::parse_edge_keys(body, 64));
            } else if ((data[0] / 7) % 3 == 2) {
                const auto ids = net::parse_id_list(body, "other_ids", 64);
                check(ids);
                if (const auto* v = std::get_if<std::vector<std::int64_t>>(&ids)) {
                    if (v->empty() || v->size() > 64) std::abort();
                    for (const auto id : *v) {
                        if (id < 0) std::abort();
                    }
                }
            } else {
                const auto q = net::parse_count_queries(body, 64);
                check(q);
                if (const auto* v = std::get_if<std::vector<net::set_query>>(&q)) {
                    if (v->empty() || v->size() > 64) std::abort();
                    for (const auto& one : *v) {
                        if (one.node_id < 0) std::abort();
                    }
                }
            }
            break;
        case 3: {
            const auto r = net::parse_set_request(body);
            check(r);
            if (const auto* sr = std::get_if<net::set_request>(&r)) {
                // What the route relies on: known ops, a difference of 2 or more, the limits on
                // leaves and depth, and a canonical text for every accepted expression.
                std::size_t leaves = 0;
                const auto walk = [&leaves](const auto& self, const net::set_term& t, std::size_t depth) -> void {
                    if (t.op.empty()) {
                        if (!t.operands.empty() || t.node_id < 0) std::abort();
                        ++leaves;
                        return;
                    }
                    if (depth > net::set_depth_max || t.operands.empty() || (t.op != "intersect" && t.op != "union" && t.op != "difference")) std::abort();
                    if (t.op == "difference" && t.operands.size() < 2) std::abort();
                    for (const auto& o : t.operands) self(self, o, depth + 1);
                };
                walk(walk, sr->expr, 1);
                if (leaves == 0 || leaves > net::set_queries_max || net::set_term_text(sr->expr).empty()) std::abort();
            }
            break;
        }
        case 4: check(net::parse_cell_writes(cfg.cells, "users", body, clock, 64, cell_indexes())); break;
        case 5: {
            const auto* metric = cfg.counters.find("plays");
            if (metric == nullptr) std::abort();
            check(net::parse_counter_writes(cfg.counters, *metric, body, clock, now_ms, 64));
            break;
        }
        default: {
            simdjson::dom::element root;
            if (net::detail::parse_json(body, root)) break;
            const std::string id(16, '\x07');
            auto made = net::entity_op_of(cfg.entities, "user", id, &root, entity_indexes());
            if (const auto* e = std::get_if<net::input_error>(&made)) {
                if (e->detail.empty()) std::abort();
                break;
            }
            core::op o;
            o.ts = clock.now();
            o.body = std::get<core::entity_op>(std::move(made));
            check_round_trip(o);
            break;
        }
    }
    return 0;
}
