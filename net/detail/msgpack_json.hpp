// A msgpack value as JSON text, for the readers of msgpack that hand JSON on (stored bodies,
// WebSocket binary frames). No I/O; any thread.
#pragma once

#include <msgpack.hpp>

#include <string>

namespace cairn::net::detail {

// Appends o as JSON to out; false (out then holds part of it) for what JSON has no form for: a
// map key that is not a string, bin and ext values, NaN and infinities. Strings that are not
// UTF-8 become U+FFFD (append_json_string). Recursive: o must come from an unpack with a depth
// limit.
bool append_msgpack_json(std::string& out, const msgpack::object& o);

}  // namespace cairn::net::detail
