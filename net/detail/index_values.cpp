#include "net/detail/index_values.hpp"

#include "core/document.hpp"
#include "core/text_rules.hpp"

#include <fmt/format.h>


namespace cairn::net::detail {
namespace {

std::string type_rule(const core::index_property& p) {
    switch (p.type) {
        case core::index_value_type::id: return "must be a 16-byte id (32 hex digits or UUID text)";
        case core::index_value_type::integer: return "must be a 64-bit integer";
        case core::index_value_type::string: return fmt::format("must be a string of at most {} bytes", p.length_max);
        case core::index_value_type::boolean: return "must be true or false";
    }
    return "has the wrong type";
}

std::optional<core::index_value> typed(const core::index_property& p, const simdjson::dom::element& v) {
    switch (p.type) {
        case core::index_value_type::id: {
            if (!v.is_string()) return std::nullopt;
            auto id = core::parse_id16(v.get_string().value_unsafe());
            if (!id) return std::nullopt;
            return core::index_value{std::string(core::id16_bytes(*id))};
        }
        case core::index_value_type::integer:
            if (!v.is_int64()) return std::nullopt;
            return core::index_value{v.get_int64().value_unsafe()};
        case core::index_value_type::string: {
            if (!v.is_string() || v.get_string().value_unsafe().size() > p.length_max) return std::nullopt;
            return core::index_value{std::string(v.get_string().value_unsafe())};
        }
        case core::index_value_type::boolean:
            if (!v.is_bool()) return std::nullopt;
            return core::index_value{std::int64_t{v.get_bool().value_unsafe() ? 1 : 0}};
    }
    return std::nullopt;
}

}  // namespace

std::variant<std::optional<std::vector<core::index_value>>, input_error> index_values_of(const core::index_def& def,
                                                                                       const simdjson::dom::element& body) {
    std::vector<core::index_value> values;
    const simdjson::dom::object obj = body.get_object().value_unsafe();
    for (const auto& p : def.properties) {
        simdjson::dom::element v;
        if (obj.at_key(p.name).get(v) != simdjson::SUCCESS || v.is_null()) return std::optional<std::vector<core::index_value>>{};
        auto t = typed(p, v);
        if (!t) return input_error{"body." + p.name, fmt::format("{} (index {})", type_rule(p), def.name)};
        values.push_back(std::move(*t));
    }
    return std::optional<std::vector<core::index_value>>{std::move(values)};
}

std::variant<std::vector<core::index_entry>, input_error> index_entries_of(const std::vector<core::index_def>& defs,
                                                                           const simdjson::dom::element& body,
                                                                           std::string_view column) {
    std::vector<core::index_entry> out;
    for (const auto& d : defs) {
        if (d.column != column) continue;
        auto v = index_values_of(d, body);
        if (auto* e = std::get_if<input_error>(&v)) return std::move(*e);
        auto& values = std::get<std::optional<std::vector<core::index_value>>>(v);
        if (!values) continue;
        const auto hash = core::index_value_hash((*values)[d.shard_on]);
        out.push_back({d.name, std::move(*values), hash});
    }
    return out;
}

std::variant<core::index_value, std::string> index_value_of_text(const core::index_property& p, std::string_view text) {
    switch (p.type) {
        case core::index_value_type::id: {
            auto id = core::parse_id16(text);
            if (!id) return type_rule(p);
            return core::index_value{std::string(core::id16_bytes(*id))};
        }
        case core::index_value_type::integer: {
            const auto v = core::parse_decimal_int64(text);
            if (!v) return type_rule(p);
            return core::index_value{*v};
        }
        case core::index_value_type::string:
            if (text.size() > p.length_max) return type_rule(p);
            return core::index_value{std::string(text)};
        case core::index_value_type::boolean:
            if (text == "true") return core::index_value{std::int64_t{1}};
            if (text == "false") return core::index_value{std::int64_t{0}};
            return type_rule(p);
    }
    return type_rule(p);
}

}  // namespace cairn::net::detail
