// Fuzz target: a journal record (an op as msgpack). A corrupted journal is an error, never
// undefined behaviour; what decodes re-encodes to bytes that decode to the same op.
#include "core/codec.hpp"

#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
    auto op = cairn::core::decode_op(bytes);
    if (!op) return 0;
    const auto again = cairn::core::encode_op(op.value());
    auto round = cairn::core::decode_op(std::span<const char>(again.data(), again.size()));
    if (!round || !(round.value() == op.value())) std::abort();
    return 0;
}
