// Fuzz target: an edge page cursor from a client. It decodes only if it is exactly what the encoder
// makes of some cursor of that scope. The first byte picks one of a few scopes, so the fuzzer also
// meets cursors made for another query.
#include "core/page_cursor.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    constexpr std::string_view scopes[] = {"", "page|follows|1|forward|normal", "set|follows|intersect|1f0n,2b0n"};
    if (size == 0) return 0;
    const std::string_view scope = scopes[data[0] % 3];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    auto c = cairn::core::decode_page_cursor(text, scope);
    if (c && cairn::core::encode_page_cursor(*c, scope) != text) std::abort();
    return 0;
}
