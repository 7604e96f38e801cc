#include "core/counters.hpp"

#include "core/shard_map.hpp"
#include "core/text_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

namespace cairn::core {
namespace {

bool valid_name(std::string_view s, std::size_t max) noexcept {
    if (s.empty() || s.size() > max || !(s[0] >= 'a' && s[0] <= 'z')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::optional<std::string> check_metric(const counter_metric& m, const std::string& where,
                                        std::set<std::string>& table_names) {
    if (!valid_name(m.name, 32)) return where + ".name: must be 1 to 32 characters of a-z, 0-9 and _, starting with a letter";
    if (m.dimensions.empty() || m.dimensions.size() > 16) return where + ".dimensions: must declare 1 to 16 dimensions";
    std::set<std::string_view> dims;
    for (std::size_t i = 0; i < m.dimensions.size(); ++i) {
        const auto& d = m.dimensions[i];
        const auto dw = fmt::format("{}.dimensions[{}]", where, i);
        if (!valid_name(d.name, 32) || d.name == "time" || d.name == "count") {
            return dw + ".name: must be 1 to 32 characters of a-z, 0-9 and _, starting with a letter, not time or count";
        }
        if (!dims.insert(d.name).second) return fmt::format("{}.name: '{}' is declared twice", dw, d.name);
        if (d.type == dimension_type::string && (d.length_max < 1 || d.length_max > 255)) {
            return dw + ".length: a string dimension needs a length between 1 and 255 bytes";
        }
    }
    if (m.shard_on >= m.dimensions.size()) return where + ".shard_on: must name a declared dimension";
    if (m.tables.empty() || m.tables.size() > 16) return where + ".tables: must declare 1 to 16 tables";
    for (std::size_t i = 0; i < m.tables.size(); ++i) {
        const auto& t = m.tables[i];
        const auto tw = fmt::format("{}.tables[{}]", where, i);
        if (!valid_name(t.name, 48)) return tw + ".name: must be 1 to 48 characters of a-z, 0-9 and _, starting with a letter";
        if (!table_names.insert(t.name).second) return fmt::format("{}.name: table '{}' is declared twice", tw, t.name);
        if (std::count(t.key.begin(), t.key.end(), counter_key_time) != 1) {
            return tw + ".key: must name \"time\" exactly once";
        }
        std::set<int> seen;
        for (int k : t.key) {
            if (k != counter_key_time && (k < 0 || static_cast<std::size_t>(k) >= m.dimensions.size())) {
                return tw + ".key: names an undeclared dimension";
            }
            if (!seen.insert(k).second) return tw + ".key: names a dimension twice";
        }
    }
    return std::nullopt;
}

}  // namespace

std::string_view granularity_name(counter_granularity g) noexcept { return g == counter_granularity::hour ? "hour" : "day"; }

std::optional<counter_granularity> granularity_from_name(std::string_view name) noexcept {
    if (name == "hour") return counter_granularity::hour;
    if (name == "day") return counter_granularity::day;
    return std::nullopt;
}

std::size_t counter_table::time_position() const noexcept {
    return static_cast<std::size_t>(std::find(key.begin(), key.end(), counter_key_time) - key.begin());
}

bool counter_table::has_dimension(std::size_t dim) const noexcept {
    return std::find(key.begin(), key.end(), static_cast<int>(dim)) != key.end();
}

std::optional<std::size_t> counter_metric::dimension_index(std::string_view n) const noexcept {
    for (std::size_t i = 0; i < dimensions.size(); ++i) {
        if (dimensions[i].name == n) return i;
    }
    return std::nullopt;
}

const counter_metric* counter_catalog::find(std::string_view metric) const noexcept {
    for (const auto& m : metrics) {
        if (m.name == metric) return &m;
    }
    return nullptr;
}

std::optional<std::string> check_catalog(const counter_catalog& c) {
    std::set<std::string> metric_names;
    std::set<std::string> table_names;
    for (std::size_t i = 0; i < c.metrics.size(); ++i) {
        const auto where = fmt::format("counters.metrics[{}]", i);
        if (auto e = check_metric(c.metrics[i], where, table_names)) return e;
        if (!metric_names.insert(c.metrics[i].name).second) {
            return fmt::format("{}.name: metric '{}' is declared twice", where, c.metrics[i].name);
        }
    }
    if (c.op_ids_keep.count() < 1) return "counters.op_ids_keep_hours: must be at least 1";
    return std::nullopt;
}

std::uint64_t counter_value_hash(const counter_dimension& d, std::string_view value) noexcept {
    if (d.type == dimension_type::integer) {
        std::int64_t v = 0;
        std::from_chars(value.data(), value.data() + value.size(), v);
        return hash_id(v);
    }
    return hash_bytes(value);
}

std::optional<std::string> check_dimension_value(const counter_dimension& d, std::string_view value) {
    if (d.type == dimension_type::integer) {
        // Canonical decimal only, so that one number is one key (no "+5", "05" or "-0").
        if (!parse_decimal_int64(value)) return "must be a 64-bit integer in canonical decimal (no '+', leading zeros or -0)";
        return std::nullopt;
    }
    if (has_control_chars(value)) return "must not hold control characters (0x00 to 0x1F, 0x7F)";
    if (value.size() > d.length_max) {
        return fmt::format("is {} bytes long; at most {} are allowed", value.size(), d.length_max);
    }
    return std::nullopt;
}

const counter_table* choose_counter_table(const counter_metric& m, const counter_query& q) noexcept {
    const counter_table* best = nullptr;
    auto filtered = [&](std::size_t dim) {
        return std::any_of(q.filters.begin(), q.filters.end(), [&](const auto& f) { return f.first == dim; });
    };
    for (const auto& t : m.tables) {
        if (t.granularity != q.granularity) continue;
        const std::size_t tp = t.time_position();
        bool fits = true;
        for (std::size_t i = 0; i < tp && fits; ++i) fits = filtered(static_cast<std::size_t>(t.key[i]));
        for (const auto& f : q.filters) fits = fits && t.has_dimension(f.first);
        if (q.group_by) {
            const auto& k = t.key;
            const auto it = std::find(k.begin(), k.end(), static_cast<int>(*q.group_by));
            fits = fits && it != k.end() && static_cast<std::size_t>(it - k.begin()) > tp;
        }
        if (fits && (!best || t.key.size() < best->key.size())) best = &t;
    }
    return best;
}

std::optional<std::int64_t> parse_utc_time(std::string_view s) noexcept {
    auto num = [&](std::size_t pos, std::size_t len, int& out) {
        if (pos + len > s.size()) return false;
        auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, out);
        return ec == std::errc() && ptr == s.data() + pos + len && s[pos] != '-' && s[pos] != '+';
    };
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos) {
        if (s.size() > 15) return std::nullopt;  // beyond year 33658
        std::int64_t ms = 0;
        std::from_chars(s.data(), s.data() + s.size(), ms);
        return ms;
    }
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, frac = 0;
    if (s.size() < 10 || !num(0, 4, y) || s[4] != '-' || !num(5, 2, mo) || s[7] != '-' || !num(8, 2, d)) return std::nullopt;
    using namespace std::chrono;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
    if (!ymd.ok() || y < 1970) return std::nullopt;
    if (s.size() > 10) {
        if (s.size() < 20 || s[10] != 'T' || !num(11, 2, h) || s[13] != ':' || !num(14, 2, mi) || s[16] != ':' ||
            !num(17, 2, sec)) {
            return std::nullopt;
        }
        std::size_t pos = 19;
        if (s[pos] == '.') {
            if (s.size() != 24 || !num(20, 3, frac)) return std::nullopt;
            pos = 23;
        }
        if (pos + 1 != s.size() || s[pos] != 'Z') return std::nullopt;
        if (h > 23 || mi > 59 || sec > 59) return std::nullopt;
    }
    const auto days = sys_days(ymd).time_since_epoch().count();
    return static_cast<std::int64_t>(days) * ms_per_day + h * ms_per_hour + mi * 60'000 + sec * 1000 + frac;
}

std::string format_utc_time(std::int64_t ms) {
    using namespace std::chrono;
    const auto day_count = ms / ms_per_day;
    const std::int64_t in_day = ms % ms_per_day;
    const year_month_day ymd{sys_days{days{day_count}}};
    const auto h = in_day / ms_per_hour;
    const auto mi = in_day % ms_per_hour / 60'000;
    const auto sec = in_day % 60'000 / 1000;
    const auto frac = in_day % 1000;
    auto out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", static_cast<int>(ymd.year()),
                           static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), h, mi, sec);
    if (frac != 0) fmt::format_to(std::back_inserter(out), ".{:03}", frac);
    out += 'Z';
    return out;
}

}  // namespace cairn::core
