// Counters (issue 6, SoundCloud's statistics tables): the declared metrics, the increment op,
// UTC buckets and the choice of the table that answers a query. Plain values, no I/O.
//
// A metric declares its dimensions (integers or bounded strings), the dimension whose value
// picks the shard (shard_on: every row of one increment lives on that one shard, so the
// increment and its op id commit in one transaction), and its tables. A table is hourly or
// daily; its clustered primary key is an ordered list of dimensions with "time" (the bucket)
// somewhere in it, as SoundCloud's (owner_id, track_id, hour) and (track_id, day, country): a
// time series is then one range read. Dimensions a table's key leaves out are summed away.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

enum class model : std::uint8_t;

enum class counter_granularity : std::uint8_t { hour = 0, day = 1 };
inline constexpr std::int64_t ms_per_hour = 3'600'000;
inline constexpr std::int64_t ms_per_day = 86'400'000;

std::string_view granularity_name(counter_granularity g) noexcept;
std::optional<counter_granularity> granularity_from_name(std::string_view name) noexcept;
constexpr std::int64_t bucket_ms(counter_granularity g) noexcept {
    return g == counter_granularity::hour ? ms_per_hour : ms_per_day;
}
// The start of the UTC hour or day holding time_ms (ms since the Unix epoch, >= 0). Buckets are
// UTC: 23:59:59.999 is in the old day, 00:00:00.000 in the new one.
constexpr std::int64_t bucket_start_ms(std::int64_t time_ms, counter_granularity g) noexcept {
    return time_ms - time_ms % bucket_ms(g);
}

enum class dimension_type : std::uint8_t { integer = 0, string = 1 };

struct counter_dimension {
    std::string name;  // [a-z][a-z0-9_]{0,31}, not "time"
    dimension_type type = dimension_type::integer;
    std::size_t length_max = 0;  // strings: bytes, 1..255
};

// The bucket's place in a table key.
inline constexpr int counter_key_time = -1;

struct counter_table {
    std::string name;  // [a-z][a-z0-9_]{0,47}; the table on the shards is counts_<name>
    counter_granularity granularity = counter_granularity::hour;
    std::vector<int> key;  // dimension indices in key order; counter_key_time once

    std::size_t time_position() const noexcept;
    bool has_dimension(std::size_t dim) const noexcept;
    std::string sql_name() const { return "counts_" + name; }
};

struct counter_metric {
    std::string name;  // [a-z][a-z0-9_]{0,31}
    std::vector<counter_dimension> dimensions;  // 1..16
    std::size_t shard_on = 0;                   // index into dimensions
    std::vector<counter_table> tables;          // 1..16

    std::optional<std::size_t> dimension_index(std::string_view name) const noexcept;
};

struct counter_catalog {
    std::vector<counter_metric> metrics;
    // Applied op ids are kept this long on the shards; an increment whose op is older than this
    // is refused by the apply path (it could have been applied and forgotten: counting it again
    // could double-count). See docs/counters.md.
    std::chrono::hours op_ids_keep{168};
    std::int64_t future_ms_max = 3'600'000;  // increments at most this far ahead of now
    std::size_t series_points_max = 10'000;  // buckets in one time series answer
    std::size_t groups_max = 100'000;        // distinct values in one breakdown

    const counter_metric* find(std::string_view metric) const noexcept;
};

// Every rule of the declarations; the first broken one as "counters.metrics[i].field: why".
std::optional<std::string> check_catalog(const counter_catalog& c);

inline constexpr std::size_t counter_delta_abs_max = std::size_t{1} << 50;

// One increment: add delta to every table of the metric, in the buckets of time_ms.
struct counter_op {
    static constexpr model kind = static_cast<model>(5);  // model::counter
    std::string metric;
    std::vector<std::string> dimensions;  // the metric's dimensions in declared order; integers in decimal
    std::int64_t time_ms = 0;             // UTC ms since the Unix epoch
    std::int64_t delta = 0;
    std::uint64_t shard_hash = 0;  // hash of the shard_on dimension's value (counter_shard_hash)

    friend bool operator==(const counter_op&, const counter_op&) = default;
};

// The routing hash of a dimension value: hash_id of an integer (as for edges' node ids), a
// 64-bit FNV-1a of a string's bytes put through the same finalizer.
std::uint64_t counter_value_hash(const counter_dimension& d, std::string_view value) noexcept;

// Checks one dimension value (integers: decimal int64; strings: at most length_max bytes) and
// returns nullopt, or why not.
std::optional<std::string> check_dimension_value(const counter_dimension& d, std::string_view value);

// What a read asks: equality filters on dimensions, optionally a breakdown by one more.
struct counter_query {
    std::vector<std::pair<std::size_t, std::string>> filters;  // (dimension, value), distinct dimensions
    std::optional<std::size_t> group_by;
    counter_granularity granularity = counter_granularity::hour;
};

// The table that answers q with one range read per shard: of granularity q.granularity, every
// key column before the bucket filtered, every filter and group_by in its key, and group_by
// after the bucket. Of several, the one with the fewest key columns. nullptr: none.
const counter_table* choose_counter_table(const counter_metric& m, const counter_query& q) noexcept;

// Parses a time given by a client: milliseconds since the Unix epoch (decimal), or RFC 3339 in
// UTC: "2026-11-23", "2026-11-23T23:59:59Z", "2026-11-23T23:59:59.999Z". nullopt: neither.
std::optional<std::int64_t> parse_utc_time(std::string_view text) noexcept;
// "2026-11-23T23:00:00Z" (milliseconds shown only when not zero).
std::string format_utc_time(std::int64_t ms);

}  // namespace cairn::core
