#include "indexing/indexed_objects.hpp"

#include "core/document.hpp"
#include "indexing/index_registry.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/index_values.hpp"
#include "net/detail/json_parse.hpp"
#include "shards/cell_store.hpp"
#include "shards/entity_store.hpp"

namespace cairn::indexing {
namespace {

namespace asio = boost::asio;

indexed_object of_entity(shards::stored_entity&& e) {
    return {std::move(e.id), e.ts, e.deleted, std::move(e.body), e.ts, 0, 0};
}

indexed_object of_cell(shards::stored_cell&& c) {
    return {std::move(c.row_key), core::cell_index_version(c.ref_key), false, std::move(c.body), c.ts, c.ref_key, c.added_id};
}

}  // namespace

asio::awaitable<core::result<std::vector<std::optional<indexed_object>>>> async_current_objects(
    shards::mariadb_conn& conn, const core::index_def& def, std::span<const std::string> ids) {
    std::vector<std::optional<indexed_object>> out(ids.size());
    if (def.on_cells()) {
        auto r = co_await shards::async_latest_cells(conn, def.kind, def.column, ids);
        if (!r) co_return r.error();
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (r.value()[i]) out[i] = of_cell(std::move(*r.value()[i]));
        }
    } else {
        auto r = co_await shards::async_get_entities(conn, def.kind, ids);
        if (!r) co_return r.error();
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (r.value()[i]) out[i] = of_entity(std::move(*r.value()[i]));
        }
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<indexed_object>>> async_scan_objects(shards::mariadb_conn& conn,
                                                                              const core::index_def& def,
                                                                              const std::optional<indexed_object>& after,
                                                                              std::size_t limit) {
    std::vector<indexed_object> out;
    if (def.on_cells()) {
        std::optional<std::string> after_row;
        if (after) after_row = after->id;
        auto r = co_await shards::async_scan_latest_cells(conn, def.kind, def.column, after_row, limit);
        if (!r) co_return r.error();
        for (auto& c : r.value()) out.push_back(of_cell(std::move(c)));
    } else {
        std::optional<std::pair<std::uint64_t, std::string>> before;
        if (after) before = std::pair{after->ts, after->id};
        auto r = co_await shards::async_scan_entities_by_updated(conn, def.kind, before, limit);
        if (!r) co_return r.error();
        for (auto& e : r.value()) out.push_back(of_entity(std::move(e)));
    }
    co_return out;
}

asio::awaitable<core::result<std::uint64_t>> async_count_objects(shards::mariadb_conn& conn, const core::index_def& def) {
    if (def.on_cells()) co_return co_await shards::async_count_column_rows(conn, def.kind, def.column);
    co_return co_await shards::async_count_entities(conn, def.kind);
}

std::optional<std::vector<core::index_value>> index_values_now(const core::index_def& def, const indexed_object& o) {
    if (o.deleted) return std::nullopt;
    auto json = net::detail::stored_body_json(o.body);
    if (!json) return std::nullopt;
    return index_values_of_json(def, *json);
}

std::optional<std::vector<core::index_value>> index_values_of_json(const core::index_def& def, std::string_view json) {
    simdjson::dom::element root;
    if (net::detail::parse_json(json, root) || !root.is_object()) return std::nullopt;
    auto v = net::detail::index_values_of(def, root);
    auto* values = std::get_if<std::optional<std::vector<core::index_value>>>(&v);
    if (!values) return std::nullopt;
    return *values;
}

bool recompute_entries(core::op& o, const index_registry& reg) {
    std::vector<core::index_def> defs;
    std::string_view column;
    const std::string* body = nullptr;
    std::vector<core::index_entry>* entries = nullptr;
    if (auto* e = std::get_if<core::entity_op>(&o.body); e && !e->deleted) {
        defs = reg.of_kind(e->entity_kind);
        body = &e->body;
        entries = &e->entries;
    } else if (auto* c = std::get_if<core::cell_op>(&o.body)) {
        defs = reg.of_cell_table(c->table);
        column = c->column;
        body = &c->body;
        entries = &c->entries;
    } else {
        return false;
    }
    const auto json = net::detail::stored_body_json(*body);
    if (!json) return false;
    simdjson::dom::element root;
    if (net::detail::parse_json(*json, root) || !root.is_object()) return false;
    auto now = net::detail::index_entries_of(defs, root, column);
    auto* fresh = std::get_if<std::vector<core::index_entry>>(&now);
    if (!fresh || *fresh == *entries) return false;
    *entries = std::move(*fresh);
    return true;
}

std::string object_name(const core::index_def& def, std::string_view id) {
    return (def.on_cells() ? "row " : "entity ") + core::format_id16_bytes(id);
}

}  // namespace cairn::indexing
