#include "core/cells.hpp"

#include <algorithm>

namespace cairn::core {

bool valid_cell_table(std::string_view table) noexcept {
    return !table.empty() && table.size() <= cell_table_bytes_max && table[0] >= 'a' && table[0] <= 'z' &&
           std::all_of(table.begin(), table.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

bool valid_cell_column(std::string_view column) noexcept {
    return !column.empty() && column.size() <= cell_column_bytes_max &&
           std::all_of(column.begin(), column.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '.' || c == '-';
           });
}

bool cell_config::declared(std::string_view table) const noexcept {
    return std::find(tables.begin(), tables.end(), table) != tables.end();
}

}  // namespace cairn::core
