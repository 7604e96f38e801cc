// The opaque cursor of a page of edges: where the page ends (position, other_id) and which way
// the next read goes. Pure values and a text encoding; no I/O, any thread.
//
// Encoding (docs/api.md calls it opaque): base64url without padding of 18 bytes, always 24
// characters: a version byte (1), a kind byte (0 next, 1 previous), then position and other_id
// as big-endian two's-complement int64. The kind travels in the cursor so that a client passes
// whichever cursor it was given as the one `cursor` parameter.
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

inline constexpr std::size_t page_cursor_chars = 24;

std::string encode_page_cursor(const page_cursor& c);
// nullopt unless text is exactly what encode_page_cursor produces for some cursor.
std::optional<page_cursor> decode_page_cursor(std::string_view text) noexcept;

}  // namespace cairn::core
