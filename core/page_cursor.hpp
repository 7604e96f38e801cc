// The opaque cursor of a page of edges: where the page ends (position, other_id) and which way
// the next read goes, bound to the query that made it. Pure values and a text encoding; no I/O,
// any thread.
//
// Encoding (docs/api.md calls it opaque): base64url without padding of 24 bytes, always 32
// characters: a version byte (2), a kind byte (0 next, 1 previous), position and other_id as
// big-endian two's-complement int64, then a 48-bit check: the first 6 bytes of a 64-bit hash of
// the query's scope and the 18 bytes before. The kind travels in the cursor so that a client
// passes whichever cursor it was given as the one `cursor` parameter; the check makes a cursor of
// another query (node, graph, direction, state, set operands) or a changed one a refusal instead
// of a silently different page. It is no signature: whoever knows the scheme can make a cursor,
// which only pages the query it names, which that caller may read anyway.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::core {

// Pages are ordered newest first: by (position, other_id) descending.
struct page_cursor {
    enum class kind : std::uint8_t {
        next = 0,      // rows strictly after the key in page order: (position, other_id) < key
        previous = 1,  // rows strictly before it: (position, other_id) > key
    };
    kind which = kind::next;
    std::int64_t position = 0;
    std::int64_t other_id = 0;

    friend bool operator==(const page_cursor&, const page_cursor&) = default;
};

inline constexpr std::size_t page_cursor_chars = 32;

// The 48-bit check that binds a cursor's bytes to its scope: FNV-1a over the scope's length
// (8 bytes, big-endian), the scope and the bytes, then hash_id's finalizer (core/shard_map.hpp),
// its top 48 bits. Page cursors carry it; other routes' cursors (index queries) too.
std::uint64_t cursor_check(std::string_view scope, std::string_view bytes) noexcept;
inline constexpr std::size_t cursor_check_bytes = 6;

// scope names the query the cursor continues, in any stable spelling the route chooses (e.g.
// "page|graph|node|direction|state"); decode must be given the same scope.
std::string encode_page_cursor(const page_cursor& c, std::string_view scope);
// nullopt unless text is exactly what encode_page_cursor produces for some cursor and this scope.
std::optional<page_cursor> decode_page_cursor(std::string_view text, std::string_view scope) noexcept;

}  // namespace cairn::core
