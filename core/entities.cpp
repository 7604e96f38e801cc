#include "core/entities.hpp"

#include <algorithm>

namespace cairn::core {

bool valid_entity_kind(std::string_view kind) noexcept {
    return !kind.empty() && kind.size() <= entity_kind_bytes_max && kind[0] >= 'a' && kind[0] <= 'z' &&
           std::all_of(kind.begin(), kind.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool entity_config::declared(std::string_view kind) const noexcept {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

}  // namespace cairn::core
