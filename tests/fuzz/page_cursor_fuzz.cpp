// Fuzz target: an edge page cursor from a client. It decodes only if it is exactly what the encoder
// makes of some cursor.
#include "core/page_cursor.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto c = cairn::core::decode_page_cursor(text);
    if (c && cairn::core::encode_page_cursor(*c) != text) std::abort();
    return 0;
}
