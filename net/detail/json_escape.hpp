// Appends a string to JSON text as a quoted, escaped JSON string. Input bytes that are not
// valid UTF-8 become U+FFFD, so the output is valid JSON whatever the input; and checks UTF-8.
// No I/O; any thread.
#pragma once

#include <string>
#include <string_view>

namespace cairn::net::detail {

// Appends "<escaped v>" (with the quotes) to out.
void append_json_string(std::string& out, std::string_view v);
// Appends the escaped characters of v without quotes, to build a string from parts.
void append_json_chars(std::string& out, std::string_view v);
// True if v is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view v) noexcept;

}  // namespace cairn::net::detail
