// Appends a string to JSON text as a quoted, escaped JSON string. Input bytes that are not
// valid UTF-8 become U+FFFD, so the output is valid JSON whatever the input. No I/O; any thread.
#pragma once

#include <string>
#include <string_view>

namespace cairn::net::detail {

// Appends "<escaped v>" (with the quotes) to out.
void append_json_string(std::string& out, std::string_view v);
// Appends the escaped characters of v without quotes, to build a string from parts.
void append_json_chars(std::string& out, std::string_view v);

}  // namespace cairn::net::detail
