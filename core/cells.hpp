// Cells (issue 6, Uber's Schemaless): immutable versioned cells (row_key, column, ref_key) ->
// body, in named cell tables, on the shard of row_key. Plain values, no I/O.
//
// The one rule for two writes of the same cell key: the cell keeps the body of the write with
// the smaller (ts, stored body bytes) — the first writer wins, ties broken by the bytes. It is a
// minimum, so applying writes in any order, or twice, ends in the same cell; a second write
// with the same body changes nothing. The gateway refuses (409) a write whose cell it can see
// already holds a different body; the rule decides the rest (writes racing through journals).
#pragma once

#include "core/document.hpp"
#include "core/indexes.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

enum class model : std::uint8_t;

inline constexpr std::size_t cell_column_bytes_max = 64;
inline constexpr std::size_t cell_table_bytes_max = 32;

struct cell_op {
    static constexpr model kind = static_cast<model>(4);  // model::cell
    std::string table;     // declared in [cells] tables
    std::string row_key;   // 16 bytes
    std::string column;    // 1..64 bytes of [A-Za-z0-9_.-]
    std::int64_t ref_key = 0;
    std::string body;      // stored (core::encode_body)
    std::vector<index_entry> entries;  // the index rows of body (indexes of this table and column)

    friend bool operator==(const cell_op&, const cell_op&) = default;
};

bool valid_cell_table(std::string_view table) noexcept;
bool valid_cell_column(std::string_view column) noexcept;

// The winner of two stored versions of one cell (the rule above): true if (ts_a, body_a) wins.
constexpr bool cell_version_wins(std::uint64_t ts_a, std::string_view body_a, std::uint64_t ts_b,
                                 std::string_view body_b) noexcept {
    return ts_a != ts_b ? ts_a < ts_b : body_a <= body_b;
}

struct cell_config {
    std::vector<std::string> tables;    // the cell tables; the table on the shards is cells_<name>
    std::size_t compress_bytes_min = 512;
    bool declared(std::string_view table) const noexcept;
};

}  // namespace cairn::core
