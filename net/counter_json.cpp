#include "net/counter_json.hpp"

#include "net/detail/json_escape.hpp"
#include "net/detail/json_parse.hpp"

#include <fmt/format.h>


namespace cairn::net {
namespace {

// A dimension's value as the op stores it (integers in canonical decimal), or why not.
std::variant<std::string, std::string> dimension_value(const core::counter_dimension& d,
                                                       const simdjson::dom::element& v) {
    std::string text;
    if (d.type == core::dimension_type::integer) {
        if (v.is_int64()) {
            text = std::to_string(v.get_int64().value_unsafe());
        } else if (v.is_string()) {
            text = std::string(v.get_string().value_unsafe());
        } else {
            return std::variant<std::string, std::string>(std::in_place_index<1>, "must be a 64-bit integer (a number or a decimal string)");
        }
    } else {
        if (!v.is_string()) return std::variant<std::string, std::string>(std::in_place_index<1>, "must be a string");
        text = std::string(v.get_string().value_unsafe());
    }
    if (auto why = core::check_dimension_value(d, text)) {
        return std::variant<std::string, std::string>(std::in_place_index<1>, std::move(*why));
    }
    return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(text));
}

std::variant<core::op, input_error> parse_one(const core::counter_catalog& catalog, const core::counter_metric& m,
                                              const simdjson::dom::element& el, const std::string& prefix,
                                              core::hlc& clock, std::uint64_t now_ms) {
    if (!el.is_object()) return input_error{prefix.empty() ? "body" : prefix, "must be a JSON object describing one increment"};
    core::counter_op c;
    c.metric = m.name;
    c.dimensions.resize(m.dimensions.size());
    std::vector<bool> given(m.dimensions.size(), false);
    bool have_dimensions = false;
    std::optional<std::int64_t> time_ms;
    c.delta = 1;
    const simdjson::dom::object fields = el.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (key == "dimensions") {
            if (!value.is_object()) return input_error{detail::field_path(prefix, key), "must be an object of dimension values"};
            have_dimensions = true;
            const simdjson::dom::object dims = value.get_object().value_unsafe();
            for (auto [name, v] : dims) {
                const auto where = detail::field_path(detail::field_path(prefix, "dimensions"), name);
                const auto i = m.dimension_index(name);
                if (!i) {
                    std::string declared;
                    for (const auto& d : m.dimensions) declared += (declared.empty() ? "" : ", ") + d.name;
                    return input_error{where, fmt::format("is not a dimension of metric {} (declared: {})", m.name, declared)};
                }
                auto val = dimension_value(m.dimensions[*i], v);
                if (val.index() == 1) return input_error{where, std::get<1>(std::move(val))};
                c.dimensions[*i] = std::get<0>(std::move(val));
                given[*i] = true;
            }
        } else if (key == "time") {
            std::optional<std::int64_t> t;
            if (value.is_int64() && value.get_int64().value_unsafe() >= 0) {
                t = value.get_int64().value_unsafe();
            } else if (value.is_string()) {
                t = core::parse_utc_time(value.get_string().value_unsafe());
            }
            if (!t) {
                return input_error{detail::field_path(prefix, key),
                                   "must be milliseconds since the Unix epoch or RFC 3339 UTC text such as "
                                   "\"2026-11-23T23:59:59.999Z\""};
            }
            time_ms = *t;
        } else if (key == "delta") {
            if (!value.is_int64()) return input_error{detail::field_path(prefix, key), "must be an integer"};
            const auto d = value.get_int64().value_unsafe();
            constexpr auto max = static_cast<std::int64_t>(core::counter_delta_abs_max);
            if (d > max || d < -max) {
                return input_error{detail::field_path(prefix, key), fmt::format("must be at most {} in magnitude", core::counter_delta_abs_max)};
            }
            c.delta = d;
        } else {
            return input_error{detail::field_path(prefix, key), "is not a known field of an increment (dimensions, time, delta)"};
        }
    }
    if (!have_dimensions) return input_error{detail::field_path(prefix, "dimensions"), "is required"};
    for (std::size_t i = 0; i < given.size(); ++i) {
        if (!given[i]) return input_error{detail::field_path(detail::field_path(prefix, "dimensions"), m.dimensions[i].name), "is required"};
    }
    c.time_ms = time_ms.value_or(static_cast<std::int64_t>(now_ms));
    if (c.time_ms > static_cast<std::int64_t>(now_ms) + catalog.future_ms_max) {
        return input_error{detail::field_path(prefix, "time"),
                           fmt::format("is more than {} ms in the future (counters.future_ms_max)", catalog.future_ms_max)};
    }
    c.shard_hash = core::counter_value_hash(m.dimensions[m.shard_on], c.dimensions[m.shard_on]);
    core::op o;
    o.ts = clock.now();
    o.body = std::move(c);
    return o;
}

}  // namespace

std::variant<std::vector<core::op>, input_error> parse_counter_writes(const core::counter_catalog& catalog,
                                                                      const core::counter_metric& metric,
                                                                      std::string_view body, core::hlc& clock,
                                                                      std::uint64_t now_ms, std::size_t batch_ops_max) {
    simdjson::dom::element root;
    if (auto err = detail::parse_json(body, root)) return std::move(*err);
    std::vector<core::op> ops;
    simdjson::dom::element list;
    if (root.is_object() && root.get_object().value_unsafe().at_key("increments").get(list) == simdjson::SUCCESS) {
        if (root.get_object().value_unsafe().size() != 1) return input_error{"body", "a batch has the single field \"increments\""};
        if (!list.is_array()) return input_error{"increments", "must be an array of increment objects"};
        const auto arr = list.get_array().value_unsafe();
        if (arr.size() == 0) return input_error{"increments", "must not be empty"};
        if (arr.size() > batch_ops_max) {
            return input_error{"increments", fmt::format("holds {} increments; at most {} per request", arr.size(), batch_ops_max)};
        }
        ops.reserve(arr.size());
        std::size_t i = 0;
        for (auto el : arr) {
            auto one = parse_one(catalog, metric, el, fmt::format("increments[{}]", i++), clock, now_ms);
            if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
            ops.push_back(std::move(std::get<core::op>(one)));
        }
        return ops;
    }
    auto one = parse_one(catalog, metric, root, "", clock, now_ms);
    if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
    ops.push_back(std::move(std::get<core::op>(one)));
    return ops;
}

std::string render_counter_op(const core::counter_catalog& catalog, const core::counter_op& c) {
    std::string out = R"({"metric":)";
    detail::append_json_string(out, c.metric);
    out += R"(,"dimensions":{)";
    const auto* m = catalog.find(c.metric);
    for (std::size_t i = 0; i < c.dimensions.size(); ++i) {
        if (i) out += ',';
        // Without its declaration (config changed since) a dimension is shown by position.
        const bool known = m && i < m->dimensions.size();
        detail::append_json_string(out, known ? m->dimensions[i].name : fmt::format("#{}", i));
        out += ':';
        if (known && m->dimensions[i].type == core::dimension_type::integer &&
            !core::check_dimension_value(m->dimensions[i], c.dimensions[i])) {
            out += c.dimensions[i];
        } else {
            detail::append_json_string(out, c.dimensions[i]);
        }
    }
    fmt::format_to(std::back_inserter(out), R"(}},"time":{},"delta":{}}})", c.time_ms, c.delta);
    return out;
}

}  // namespace cairn::net
