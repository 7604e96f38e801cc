// Fuzz target: the text of a shard map, as stored on shard 0 for online resharding
// (docs/resharding.md) — a row an operator can edit, so parsed as untrusted — and the text of a route
// table, as a gateway's journal keeps it (journal::route_record). A map parses only if it is exactly
// what to_text() makes of some map; a parsed map routes every hash to the shard whose range holds it,
// and a split of any shard keeps every other shard's hashes where they were. A route table parses only
// if it is exactly what its to_text() makes, and it routes every row to at least one shard it has.
#include "core/route_table.hpp"
#include "core/shard_map.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

void check_route_table(std::string_view text, std::uint64_t probe) {
    auto parsed = cairn::core::route_table::parse(text);
    if (!parsed) return;
    const auto& t = parsed.value();
    // A text with its base count is read back exactly; one without (written before the base count
    // was) gains it, and reads back the same.
    if (text.find('b') != std::string_view::npos && t.to_text() != text) std::abort();
    if (auto again = cairn::core::route_table::parse(t.to_text()); !again || again.value() != t) std::abort();
    for (const std::uint64_t seq : {std::uint64_t{1}, probe % 1000, probe}) {
        bool someone = false;
        for (cairn::core::shard_index s = 0; s < t.shards(); ++s) {
            if (t.apply_map(s, seq).shard_of_hash(probe) == s) someone = true;
        }
        if (!someone || t.base_map().shard_of_hash(probe) >= t.shards()) std::abort();
        if (t.read_map().shard_of_hash(probe) >= t.shards() || t.segment_last(seq) < seq) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    {
        std::uint64_t probe = 0;
        for (std::size_t i = 0; i < size; ++i) probe = probe * 131 + data[i];
        check_route_table(text, probe);
    }
    auto parsed = cairn::core::shard_map::parse(text);
    if (!parsed) return 0;
    const auto& m = parsed.value();
    if (m.to_text() != text) std::abort();
    std::uint64_t probe = 0;
    for (std::size_t i = 0; i < size; ++i) probe = probe * 131 + data[i];
    for (const std::uint64_t h : {std::uint64_t{0}, probe, ~probe, UINT64_MAX}) {
        const auto s = m.shard_of_hash(h);
        if (s >= m.size() || !m.range_of(s).contains(h)) std::abort();
        auto split = m.split(s);
        if (!split) continue;
        const auto& after = split.value();
        const auto moved = after.range_of(m.size());
        if (after.shard_of_hash(h) != (moved.contains(h) ? m.size() : s)) std::abort();
        if (after.shard_of_hash(~h) != (moved.contains(~h) ? m.size() : m.shard_of_hash(~h))) std::abort();
    }
    return 0;
}
