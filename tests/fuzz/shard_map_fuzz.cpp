// Fuzz target: the text of a shard map, as stored on shard 0 for online resharding
// (docs/resharding.md) — a row an operator can edit, so parsed as untrusted. A map parses only if it
// is exactly what to_text() makes of some map; a parsed map routes every hash to the shard whose
// range holds it, and a split of any shard keeps every other shard's hashes where they were.
#include "core/shard_map.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
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
