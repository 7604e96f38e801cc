// Fuzz target: a page cursor from a client — an edge page's or an index query's. It decodes only
// if it is exactly what the encoder makes of some cursor of that scope. The first byte picks one of
// a few scopes (so the fuzzer also meets cursors made for another query) and, for index cursors,
// the index's shape.
#include "core/index_cursor.hpp"
#include "core/page_cursor.hpp"

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

cairn::core::index_def index_of(unsigned shape) {
    using cairn::core::index_value_type;
    cairn::core::index_def d;
    d.name = "by_fuzz";
    d.kind = "user";
    d.properties.push_back({"a", shape % 2 ? index_value_type::integer : index_value_type::string, 64});
    if (shape >= 2) d.properties.push_back({"b", index_value_type::id, 0});
    return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    constexpr std::string_view scopes[] = {"", "page|follows|1|forward|normal", "set|follows|intersect|1f0n,2b0n"};
    if (size == 0) return 0;
    const std::string_view scope = scopes[data[0] % 3];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if ((data[0] / 3) % 2 == 0) {
        auto c = cairn::core::decode_page_cursor(text, scope);
        if (c && cairn::core::encode_page_cursor(*c, scope) != text) std::abort();
    } else {
        auto c = cairn::core::decode_index_cursor(index_of(data[0] / 6 % 4), text, scope);
        if (c && cairn::core::encode_index_cursor(*c, scope) != text) std::abort();
    }
    return 0;
}
