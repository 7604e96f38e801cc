// Online resharding's copy and diff (docs/resharding.md, phases "copying" and "verifying"): the rows
// of one hash range, table by table, from the shard that owned the range to the shard that takes it,
// and the comparison of both shards' rows of that range.
//
// The copy makes the target's rows of the range equal to the source's as of one consistent snapshot
// per group of tables (the tables whose rows must agree with each other: edges with their counts and
// the node registers; counter sums with the op ids that made them). It overwrites what the target
// holds of those rows, so it relies on the protocol's precondition: the target applies nothing of the
// range until the copy is written (its apply worker is held). Run again, it copies again — a copy
// interrupted anywhere is finished by running it once more.
//
// Which tables, and how each row's shard is found, is the plan (async_plan_range_copy): read from the
// source's index definitions and the config's counter metrics and cell tables. Any executor; one
// statement at a time on each connection.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/result.hpp"
#include "core/shard_map.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cairn::shards {

class mariadb_conn;

// How a row's routing hash is found.
enum class route_by : std::uint8_t {
    whole,    // the table is on every shard (or holds op ids of every key): copied whole
    integer,  // hash_id of the route column (a BIGINT)
    bytes,    // hash_bytes of the route column (binary)
};

// A column of a scan key, typed so that the scan's next-chunk comparison is exact (a BIGINT compared
// with a string would be compared as a double).
enum class key_type : std::uint8_t { int64, uint64, bytes };
struct key_column {
    std::string name;
    key_type type = key_type::bytes;
};

struct copy_table {
    std::string name;
    std::vector<std::string> columns;   // the columns copied, in order
    std::vector<key_column> scan_key;   // a unique key: the scan's order (read, not necessarily copied)
    // The unique key the chunked diff orders both shards by, when the scan key is a shard's own
    // (added_id, an AUTO_INCREMENT that differs between them); empty: the scan key.
    std::vector<key_column> diff_key;
    std::vector<std::string> unique;    // the columns that identify a row on the target (the rest are overwritten)
    route_by route = route_by::whole;
    std::string route_column;           // one of columns, unless route is whole
    // A sum column (edge counts, counter sums): a row where it is 0 means the same as no row, so the
    // diff leaves such rows out (the copy still writes them: the target's row must become 0 too).
    std::string sum_column;
};

// Tables copied from one consistent snapshot of the source.
struct copy_group {
    std::string name;  // "edges", "entities", "counters", "index by_email", "cells posts" — for progress and errors
    std::vector<copy_table> tables;
    // Each row of its tables stands alone (entities, index rows, cells: last writer wins per row), so
    // a copy may resume inside it from another snapshot (copy_resume). Not edges (their counts and
    // registers must agree with them) nor counters (sums with their op ids).
    bool resumable = false;
};

// Where a copy resumes inside a resumable group: its tables before `table` are done, and `table`'s
// rows up to the scan key `after` (each key column's bytes; integers in decimal) are written.
struct copy_resume {
    std::string group;
    std::string table;
    std::vector<std::string> after;
};

// The groups for the source behind conn: edges, entities and index definitions, each index's rows,
// each cell table, and the counters (the counter tables whose key holds the metric's shard_on
// dimension, with counter_ops; a table whose key leaves shard_on out sums both halves and stays).
// Tables the source does not have (nothing applied yet) are left out.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<copy_group>>> async_plan_range_copy(
    mariadb_conn& from, const core::counter_catalog& counters, const core::cell_config& cells);

struct range_copy_options {
    std::size_t chunk_rows = 500;  // rows read per statement (1..10,000)
    // The copy's throttle: at most this many source rows read per second, averaged from its start
    // (it waits between chunks); 0: as fast as the shards go. The diff ignores it.
    double rows_per_second_max = 0;
    // Asked before every chunk; true ends the copy, diff or delete with shutting_down (cairnd's stop
    // must not wait for a whole range).
    std::function<bool()> stop_requested;
    // The copy only: where an earlier run of it stopped, if that was inside a resumable group. A point
    // that does not fit the plan (another group, a table it does not have, a key of another shape) is
    // ignored: that group is copied whole.
    std::optional<copy_resume> resume;
};

struct range_copy_progress {
    std::string group;
    std::string table;
    std::uint64_t rows_read = 0;    // of this table so far (of the group, in a group's done)
    std::uint64_t rows_copied = 0;  // of them, in the range (or all, for a whole table)
    // The copy's chunks: the scan key of the last row read, as copy_resume::after (its rows are written).
    std::vector<std::string> last_key;
};

// Told when a part of the work is done for good: by the copy, each group once its snapshot's rows are
// written (table empty; the counts are the group's); by the delete, each table.
using range_part_done = std::function<void(const range_copy_progress&)>;

struct range_copy_stats {
    std::uint64_t rows_read = 0;
    std::uint64_t rows_copied = 0;
};

// Copies the rows of `range` of every table of `groups` from `from` to `to`, creating a table on the
// target first when it lacks it (the source's own definition). progress, if set, is called after
// every chunk. Errors: those of mariadb_conn (the source's snapshot is rolled back).
[[nodiscard]] boost::asio::awaitable<core::result<range_copy_stats>> async_copy_range(
    mariadb_conn& from, mariadb_conn& to, const std::vector<copy_group>& groups, core::hash_range range,
    range_copy_options options, std::function<void(const range_copy_progress&)> progress = {}, range_part_done done = {});

// Deletes the rows of `range` of every routed table of groups on conn (whole tables stay): what a split's
// old owner does once no gateway writes or reads the moved half there any more (docs/resharding.md,
// "cleaning"). A chunk of the scan at a time, each its own statement; throttled like the copy. In the
// stats, rows_copied counts the rows deleted. progress, if set, is called after every chunk (rows_copied:
// deleted). Errors: those of mariadb_conn; what was deleted stays deleted, and running it again finishes.
[[nodiscard]] boost::asio::awaitable<core::result<range_copy_stats>> async_delete_range(
    mariadb_conn& conn, const std::vector<copy_group>& groups, core::hash_range range, range_copy_options options,
    std::function<void(const range_copy_progress&)> progress = {}, range_part_done done = {});

// One table's rows of the range on both shards: how many, and an order-free checksum of their copied
// columns (the sum of each row's hash, mod 2^64).
struct range_table_diff {
    std::string table;
    std::uint64_t rows_from = 0, rows_to = 0;
    std::uint64_t checksum_from = 0, checksum_to = 0;
    // What `tag_sql` (async_diff_range) answered inside each side's snapshot of the table's group, its
    // rows joined: e.g. the shards' applied marks, to tell a difference of ops one side has not applied
    // yet (different marks) from a real one (the same marks).
    std::string tag_from, tag_to;
    bool same() const noexcept { return rows_from == rows_to && checksum_from == checksum_to; }
};

// Reads every table of groups on both shards (each shard's tables of a group in one snapshot) and
// compares their rows of the range. A table missing on the target counts as empty there.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<range_table_diff>>> async_diff_range(
    mariadb_conn& from, mariadb_conn& to, const std::vector<copy_group>& groups, core::hash_range range,
    range_copy_options options, std::string_view tag_sql = {});

// A part of one table's scan-key order where the two shards' rows of the range differ: the keys
// after `after` (empty: from the table's start) up to and including `last` (empty: to its end), each
// key column's bytes (integers in decimal), with each side's rows there, checksum and tag (what
// tag_sql answered in the same snapshot as that side's read of the chunk).
struct range_chunk_diff {
    std::string table;
    std::vector<std::string> after, last;
    std::uint64_t rows_from = 0, rows_to = 0;
    std::uint64_t checksum_from = 0, checksum_to = 0;
    std::string tag_from, tag_to;
};

// The diff of async_diff_range, chunk by chunk, as Vitess's VDiff: the source's next chunk_rows rows
// of a table (in scan-key order, every row: the range is picked in cairnd) and the target's rows
// between the same keys, each side in its own short snapshot that also reads tag_sql. Under live
// writes a small chunk is rarely touched while it is read, so most compare equal whatever the shards'
// marks; the few that differ with different tags can be compared again alone (async_rediff_chunks).
// Returns the chunks that differ. A table missing on the target counts as empty there.
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<range_chunk_diff>>> async_diff_range_chunks(
    mariadb_conn& from, mariadb_conn& to, const std::vector<copy_group>& groups, core::hash_range range,
    range_copy_options options, std::string_view tag_sql = {});

// Compares the given chunks again (the same key intervals, each side in a new snapshot); returns
// those that still differ. A chunk of a table the plan lacks, or whose keys do not fit it, is returned
// as it was (it cannot be compared).
[[nodiscard]] boost::asio::awaitable<core::result<std::vector<range_chunk_diff>>> async_rediff_chunks(
    mariadb_conn& from, mariadb_conn& to, const std::vector<copy_group>& groups, core::hash_range range,
    const std::vector<range_chunk_diff>& chunks, range_copy_options options, std::string_view tag_sql = {});

}  // namespace cairn::shards
