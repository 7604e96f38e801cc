#include "core/text_rules.hpp"

#include <algorithm>
#include <charconv>

namespace cairn::core {
namespace {

// Digits only, no leading zero unless the whole text is "0".
bool canonical_digits(std::string_view digits) noexcept {
    if (digits.empty()) return false;
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    return digits.size() == 1 || digits.front() != '0';
}

}  // namespace

std::optional<std::int64_t> parse_decimal_int64(std::string_view text) noexcept {
    const bool negative = !text.empty() && text.front() == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    if (!canonical_digits(digits) || (negative && digits == "0")) return std::nullopt;
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return v;
}

std::optional<std::uint64_t> parse_decimal_uint64(std::string_view text) noexcept {
    if (!canonical_digits(text)) return std::nullopt;
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return v;
}

bool has_control_chars(std::string_view text) noexcept {
    return std::any_of(text.begin(), text.end(), [](char c) {
        const auto b = static_cast<unsigned char>(c);
        return b < 0x20 || b == 0x7f;
    });
}

}  // namespace cairn::core
