// Fuzz target: a document body (entities, cells) from a client, and a stored body from a shard row.
// A JSON body is stored or refused with a message; a stored body reads back as the same JSON (keys
// sorted), and any bytes read from a row decode to JSON that parses, or to nothing.
#include "net/detail/body_json.hpp"
#include "net/detail/json_parse.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace d = cairn::net::detail;
    const std::string text(reinterpret_cast<const char*>(data), size);
    // As a stored body (a corrupt or hostile row): its JSON must be valid JSON. A row may nest up to
    // the reader's limit, deeper than a client's body may (the write side's parser allows less).
    if (auto j = d::stored_body_json(text)) {
        static simdjson::dom::parser deep;
        if (deep.max_depth() != 2 * d::stored_body_depth_max &&
            deep.allocate(1 << 20, 2 * d::stored_body_depth_max) != simdjson::SUCCESS) {
            return 0;
        }
        simdjson::dom::element again;
        if (deep.parse(j->data(), j->size(), true).get(again) != simdjson::SUCCESS) std::abort();
    }
    // As a client's body.
    simdjson::dom::element root;
    if (d::parse_json(text, root)) return 0;
    auto stored = d::stored_body_of(root, "body", 64);
    if (auto* s = std::get_if<std::string>(&stored)) {
        auto back = d::stored_body_json(*s);
        if (!back) std::abort();  // acknowledged means readable
        simdjson::dom::element reread;
        if (d::parse_json(*back, reread)) std::abort();
        auto restored = d::stored_body_of(reread, "body", 64);
        auto* s2 = std::get_if<std::string>(&restored);
        if (!s2 || d::stored_body_json(*s2) != back) std::abort();  // canonical: one round trip is a fixed point
    }
    return 0;
}
