#include "net/tls.hpp"

#include <boost/asio/ssl/context.hpp>

#include <fmt/format.h>

#include <openssl/ssl.h>

#include <filesystem>

namespace cairn::net {

namespace ssl = boost::asio::ssl;

std::variant<std::shared_ptr<ssl::context>, std::string> make_tls_context(const core::tls_config& c) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    const auto problem = [](const std::string& key, const std::string& file, const boost::system::error_code& ec) {
        std::error_code fs_ec;
        if (!std::filesystem::exists(file, fs_ec)) return fmt::format("{}: {}: no such file", key, file);
        return fmt::format("{}: {}: {}", key, file, ec.message());
    };
    boost::system::error_code ec;
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                     ec);
    if (ec) return fmt::format("listen.tls: {}", ec.message());
    // Belt and braces: the protocol floor is also set where OpenSSL 1.1+ looks for it.
    if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
        return std::string("listen.tls: OpenSSL refuses TLS 1.2 as the minimum version");
    }
    ctx->use_certificate_chain_file(c.cert_file, ec);
    if (ec) return problem("listen.tls.cert_file", c.cert_file, ec);
    ctx->use_private_key_file(c.key_file, ssl::context::pem, ec);
    if (ec) return problem("listen.tls.key_file", c.key_file, ec);
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
        return fmt::format("listen.tls.key_file: {}: does not match the certificate of {}", c.key_file, c.cert_file);
    }
    if (!c.client_ca_file.empty()) {
        ctx->load_verify_file(c.client_ca_file, ec);
        if (ec) return problem("listen.tls.client_ca_file", c.client_ca_file, ec);
        ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
        if (ec) return fmt::format("listen.tls.client_ca_file: {}", ec.message());
    }
    return ctx;
}

}  // namespace cairn::net
