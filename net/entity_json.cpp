#include "net/entity_json.hpp"

#include "core/assert.hpp"
#include "net/detail/body_json.hpp"
#include "net/detail/index_values.hpp"

namespace cairn::net {

std::variant<core::entity_op, input_error> entity_op_of(const core::entity_config& cfg, std::string_view kind,
                                                        std::string_view id, const simdjson::dom::element* body,
                                                        const std::vector<core::index_def>& indexes) {
    CAIRN_ASSERT(id.size() == 16);
    if (!cfg.declared(kind)) return input_error{"kind", "must name a declared entity kind"};
    core::entity_op e;
    e.entity_kind = std::string(kind);
    e.id = std::string(id);
    e.deleted = body == nullptr;
    if (e.deleted) return e;
    auto stored = detail::stored_body_of(*body, "body", cfg.compress_bytes_min);
    if (auto* err = std::get_if<input_error>(&stored)) return *err;
    e.body = std::get<std::string>(std::move(stored));
    auto entries = detail::index_entries_of(indexes, *body, "");
    if (auto* err = std::get_if<input_error>(&entries)) return *err;
    e.entries = std::get<std::vector<core::index_entry>>(std::move(entries));
    return e;
}

}  // namespace cairn::net
