#include "net/cell_json.hpp"

#include "core/text_rules.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/index_values.hpp"
#include "net/detail/json_escape.hpp"
#include "net/detail/json_parse.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cairn::net {
namespace {

std::optional<std::int64_t> int64_of(const simdjson::dom::element& v) {
    if (v.is_int64()) return v.get_int64().value_unsafe();
    if (!v.is_string()) return std::nullopt;
    return core::parse_decimal_int64(v.get_string().value_unsafe());
}

std::variant<core::op, input_error> parse_one(const core::cell_config& cfg, std::string_view table,
                                              const simdjson::dom::element& el, const std::string& prefix, core::hlc& clock,
                                              const std::vector<core::index_def>& indexes) {
    if (!el.is_object()) return input_error{prefix.empty() ? "body" : prefix, "must be a JSON object describing one cell"};
    core::cell_op c;
    c.table = std::string(table);
    bool have_ref = false;
    bool have_body = false;
    simdjson::dom::element body_el;
    const simdjson::dom::object fields = el.get_object().value_unsafe();
    for (auto [key, value] : fields) {
        if (key == "row_key") {
            std::optional<core::id16> id;
            if (value.is_string()) id = core::parse_id16(value.get_string().value_unsafe());
            if (!id) return input_error{detail::field_path(prefix, key), "must be 16 bytes as 32 hex digits or UUID text"};
            c.row_key = std::string(core::id16_bytes(*id));
        } else if (key == "column") {
            if (!value.is_string() || !core::valid_cell_column(value.get_string().value_unsafe())) {
                return input_error{detail::field_path(prefix, key), "must be 1 to 64 characters of A-Z, a-z, 0-9, _, . and -"};
            }
            c.column = std::string(value.get_string().value_unsafe());
        } else if (key == "ref_key") {
            auto r = int64_of(value);
            if (!r) return input_error{detail::field_path(prefix, key), "must be a 64-bit integer (a number or a decimal string)"};
            c.ref_key = *r;
            have_ref = true;
        } else if (key == "body") {
            auto stored = detail::stored_body_of(value, detail::field_path(prefix, key), cfg.compress_bytes_min);
            if (auto* err = std::get_if<input_error>(&stored)) return std::move(*err);
            c.body = std::get<std::string>(std::move(stored));
            body_el = value;
            have_body = true;
        } else {
            return input_error{detail::field_path(prefix, key), "is not a known field of a cell (row_key, column, ref_key, body)"};
        }
    }
    if (c.row_key.empty()) return input_error{detail::field_path(prefix, "row_key"), "is required"};
    if (c.column.empty()) return input_error{detail::field_path(prefix, "column"), "is required"};
    if (!have_ref) return input_error{detail::field_path(prefix, "ref_key"), "is required"};
    if (!have_body) return input_error{detail::field_path(prefix, "body"), "is required"};
    auto entries = detail::index_entries_of(indexes, body_el, c.column);
    if (auto* err = std::get_if<input_error>(&entries)) return input_error{detail::field_path(prefix, err->field), err->detail};
    c.entries = std::get<std::vector<core::index_entry>>(std::move(entries));
    core::op o;
    o.ts = clock.now();
    o.body = std::move(c);
    return o;
}

}  // namespace

std::variant<std::vector<core::op>, input_error> parse_cell_writes(const core::cell_config& cfg, std::string_view table,
                                                                   std::string_view body, core::hlc& clock,
                                                                   std::size_t batch_ops_max,
                                                                   const std::vector<core::index_def>& indexes) {
    simdjson::dom::element root;
    if (auto err = detail::parse_json(body, root)) return std::move(*err);
    std::vector<core::op> ops;
    simdjson::dom::element list;
    if (root.is_object() && root.get_object().value_unsafe().at_key("cells").get(list) == simdjson::SUCCESS) {
        if (root.get_object().value_unsafe().size() != 1) return input_error{"body", "a batch has the single field \"cells\""};
        if (!list.is_array()) return input_error{"cells", "must be an array of cell objects"};
        const auto arr = list.get_array().value_unsafe();
        if (arr.size() == 0) return input_error{"cells", "must not be empty"};
        if (arr.size() > batch_ops_max) {
            return input_error{"cells", fmt::format("holds {} cells; at most {} per request", arr.size(), batch_ops_max)};
        }
        std::size_t i = 0;
        for (auto el : arr) {
            auto one = parse_one(cfg, table, el, fmt::format("cells[{}]", i++), clock, indexes);
            if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
            ops.push_back(std::move(std::get<core::op>(one)));
        }
        return ops;
    }
    auto one = parse_one(cfg, table, root, "", clock, indexes);
    if (auto* err = std::get_if<input_error>(&one)) return std::move(*err);
    ops.push_back(std::move(std::get<core::op>(one)));
    return ops;
}

std::string render_cell(std::string_view table, std::string_view row_key, std::string_view column, std::int64_t ref_key,
                        std::string_view stored_body, std::uint64_t ts, std::uint64_t added_id) {
    return render_cell_json(table, row_key, column, ref_key, detail::stored_body_json(stored_body).value_or("null"), ts,
                            added_id);
}

std::string render_cell_json(std::string_view table, std::string_view row_key, std::string_view column, std::int64_t ref_key,
                             std::string_view body_json, std::uint64_t ts, std::uint64_t added_id) {
    core::id16 id{};
    std::copy_n(row_key.begin(), std::min<std::size_t>(row_key.size(), 16), id.begin());
    std::string out = fmt::format(R"({{"table":"{}","row_key":"{}","column":)", table, core::format_id16(id));
    detail::append_json_string(out, column);
    fmt::format_to(std::back_inserter(out), R"(,"ref_key":{},"body":{},"ts":"{}","ts_ms":{},"added_id":{}}})", ref_key,
                   body_json, ts, core::hlc_ms(ts), added_id);
    return out;
}

}  // namespace cairn::net
