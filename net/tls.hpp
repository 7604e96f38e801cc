// TLS on the listener (issue 13): the server's OpenSSL context, built once from the config's
// [listen.tls] files. TLS 1.2 or newer only; with a client CA, every client must present a
// certificate it signed. No I/O after it is built; shared by every connection.
#pragma once

#include "core/config.hpp"

#include <memory>
#include <string>
#include <variant>

namespace boost::asio::ssl {
class context;
}

namespace cairn::net {

// The context, or an error that names the file and what is wrong with it (never a key's bytes).
std::variant<std::shared_ptr<boost::asio::ssl::context>, std::string> make_tls_context(const core::tls_config& c);

}  // namespace cairn::net
