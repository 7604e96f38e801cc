// Fuzz target: the TOML config file. Any text is a config or an error message, never a crash.
#include "core/config.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto c = cairn::core::parse_config(text, "fuzz.toml");
    (void)c;
    return 0;
}
