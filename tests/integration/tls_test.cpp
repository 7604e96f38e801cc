// TLS on the listener (issue 13) with off-the-shelf clients: curl, openssl s_client and Debian's
// node-ws speak HTTPS and WSS to the real cairnd on real shards, a write reads back over each;
// TLS 1.1, a plain-text client and a handshake that never finishes are turned away without holding
// a connection past limits.timeout_read; client certificates are required when a client CA is
// configured; a certificate that is missing or does not match its key stops cairnd at start with
// an error that names the key and the file; the `cairn` CLI speaks https:// with --cacert (and
// --cert/--key). Certificates are made for each test with `openssl`.
#include "tests/integration/cli_support.hpp"
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <fstream>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;

// Opens a TCP connection to 127.0.0.1:port; -1 on failure.
int connect_to(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Reads until the peer closes (or resets) the connection; what it sent, and whether it closed
// within `within`.
std::pair<std::string, bool> read_until_closed(int fd, std::chrono::milliseconds within) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) return {got, false};
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char buf[4096];
        const auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return {got, true};
        got.append(buf, static_cast<std::size_t>(n));
    }
}

class tls : public ::testing::Test {
protected:
    void SetUp() override {
        CAIRN_REQUIRE_SHARDS(2u);
        dir_ = make_temp_dir("cairn-tls");
        // A CA, a server certificate for localhost and 127.0.0.1, a client certificate, and a key
        // that belongs to neither.
        const std::string script = fmt::format(
            "cd '{0}' && set -e; "
            "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext; "
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
            "-days 2 -subj /CN=cairn-test-ca; "
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr "
            "-subj /CN=localhost; "
            "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
            "-extfile server.ext; "
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout client.key -out client.csr "
            "-subj /CN=cairn-test-client; "
            "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2; "
            "openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out other.key",
            dir_);
        const auto [rc, out] = run_capture(script);
        ASSERT_EQ(rc, 0) << "openssl could not make the test certificates:\n" << out;
    }
    void TearDown() override {
        if (gw_) {
            EXPECT_EQ(gw_->terminate(), 0) << gw_->log_tail();
        }
        std::error_code ignored;
        if (!dir_.empty() && !HasFailure()) std::filesystem::remove_all(dir_, ignored);
    }

    std::string file(const std::string& name) const { return dir_ + "/" + name; }

    // cairnd with [listen.tls] of these files; started, or the test fails.
    void start(const std::string& db, const std::string& tls_extra = {}, const std::string& key = "server.key",
               std::vector<std::string> env = {}) {
        fresh_database(db);
        cairnd_options o;
        o.database = db;
        o.env = std::move(env);
        o.ready_by_log = true;
        o.extra_toml = fmt::format("[listen.tls]\ncert_file = \"{}\"\nkey_file = \"{}\"\n{}\n[limits]\ntimeout_read_ms = 1000\n",
                                   file("server.pem"), file(key), tls_extra);
        gw_ = std::make_unique<cairnd_process>(o);
        ASSERT_TRUE(gw_->start()) << gw_->log_tail();
    }
    std::string url(const std::string& target) const { return fmt::format("https://localhost:{}{}", gw_->port(), target); }
    // curl over TLS with the test CA; its exit status and "<body>\n<status>".
    std::pair<int, std::string> curl(const std::string& args) {
        return run_capture(fmt::format("timeout 20 curl -sS --cacert '{}' -w '\\n%{{http_code}}' {}", file("ca.pem"), args));
    }
    double metric_over_tls(const std::string& series) {
        const auto [rc, out] = curl("'" + url("/metrics") + "'");
        EXPECT_EQ(rc, 0) << out;
        const auto at = out.find("\n" + series + " ");
        return at == std::string::npos ? -1 : std::stod(out.substr(at + series.size() + 2));
    }

    std::string dir_;
    std::unique_ptr<cairnd_process> gw_;
};

TEST_F(tls, https_and_wss_serve_writes_and_reads_and_turn_away_what_is_not_tls_1_2_or_newer) {
    start("cairn_e2e_tls");
    const auto [live_rc, live] = curl("'" + url("/livez") + "'");
    ASSERT_EQ(live_rc, 0) << live << gw_->log_tail();
    EXPECT_TRUE(live.ends_with("\n200")) << live;

    // A write and its read back, over HTTPS.
    const auto [w_rc, w] =
        curl("-X POST -d '{\"source_id\": 1, \"destination_id\": 2}' '" + url("/v1/graphs/tls/edges?wait=applied") + "'");
    ASSERT_EQ(w_rc, 0) << w;
    ASSERT_TRUE(w.ends_with("\n202")) << w;
    const auto [r_rc, r] = curl("'" + url("/v1/graphs/tls/edges/1/2") + "'");
    ASSERT_EQ(r_rc, 0) << r;
    EXPECT_TRUE(r.ends_with("\n200")) << r;
    EXPECT_NE(r.find("\"state\":\"normal\""), std::string::npos) << r;

    // openssl s_client: the certificate verifies for localhost, TLS 1.3 is chosen, HTTP flows.
    const auto s_client = [&](const std::string& extra) {
        return run_capture(fmt::format(
            "printf 'GET /livez HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | timeout 20 openssl s_client "
            "-connect 127.0.0.1:{} -servername localhost -verify_hostname localhost -CAfile '{}' -verify_return_error "
            "-ign_eof {}",
            gw_->port(), file("ca.pem"), extra));
    };
    const auto [s_rc, s_out] = s_client("");
    EXPECT_EQ(s_rc, 0) << s_out;
    EXPECT_NE(s_out.find("HTTP/1.1 200"), std::string::npos) << s_out;
    EXPECT_NE(s_out.find("TLSv1.3"), std::string::npos) << s_out;
    const auto [s12_rc, s12_out] = s_client("-tls1_2");
    EXPECT_EQ(s12_rc, 0) << s12_out;
    EXPECT_NE(s12_out.find("HTTP/1.1 200"), std::string::npos) << s12_out;
    // TLS 1.1, offered by a client that allows it, is refused by the server.
    const auto [s11_rc, s11_out] = s_client("-tls1_1 -cipher 'DEFAULT:@SECLEVEL=0'");
    EXPECT_NE(s11_rc, 0) << s11_out;
    EXPECT_EQ(s11_out.find("HTTP/1.1 200"), std::string::npos) << s11_out;

    // WebSocket over TLS with node-ws.
    const auto [node_rc, node_out] = run_capture(fmt::format("node '{}/tests/ws/node_wss_client.js' {} '{}'",
                                                             CAIRN_SOURCE_DIR, gw_->port(), file("ca.pem")));
    if (node_out.find("Cannot find module") != std::string::npos && !running_in_ci()) {
        std::cerr << "node-ws is not installed: the wss check is skipped\n";
    } else {
        EXPECT_EQ(node_rc, 0) << node_out << gw_->log_tail();
        EXPECT_NE(node_out.find("ok: a write and its read over wss"), std::string::npos) << node_out;
    }

    // The CLI over https://: verified with --cacert (also by an IP address in the certificate);
    // without it the system's CAs do not know this one, and it says so.
    for (const auto& host : {std::string("localhost"), std::string("127.0.0.1")}) {
        auto status = run_cairn({"--url", fmt::format("https://{}:{}", host, gw_->port()), "--cacert", file("ca.pem"),
                                 "status", "--json"});
        EXPECT_EQ(status.code, 0) << host << ": " << status.err << status.out;
        EXPECT_TRUE(status.code == 0 && status.json().contains("journal")) << status.out;
    }
    auto untrusted = run_cairn({"--url", fmt::format("https://localhost:{}", gw_->port()), "status"});
    EXPECT_NE(untrusted.code, 0);
    EXPECT_NE(untrusted.err.find("certificate"), std::string::npos) << untrusted.err;
    EXPECT_EQ(run_cairn({"--url", fmt::format("http://localhost:{}", gw_->port()), "--cacert", file("ca.pem"), "status"}).code,
              2);  // --cacert with an http:// URL is a usage error

    const double failures_before = metric_over_tls("cairn_tls_handshake_failures_total");
    ASSERT_GE(failures_before, 1.0);  // the TLS 1.1 attempt
    // A plain-text HTTP client gets no HTTP answer and is closed at once.
    {
        const int fd = connect_to(gw_->port());
        ASSERT_GE(fd, 0);
        const std::string req = "GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n";
        ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
        const auto [got, closed] = read_until_closed(fd, 5s);
        ::close(fd);
        EXPECT_TRUE(closed);
        EXPECT_EQ(got.find("HTTP/1.1"), std::string::npos) << got;
    }
    // A client that connects and never starts its handshake is closed after timeout_read (1 s).
    {
        const int fd = connect_to(gw_->port());
        ASSERT_GE(fd, 0);
        const auto started = std::chrono::steady_clock::now();
        const auto [got, closed] = read_until_closed(fd, 10s);
        const auto took = std::chrono::steady_clock::now() - started;
        ::close(fd);
        EXPECT_TRUE(closed) << "a silent connection was held for 10 s";
        EXPECT_GE(took, 900ms);
        EXPECT_TRUE(got.empty());
    }
    EXPECT_GE(metric_over_tls("cairn_tls_handshake_failures_total"), failures_before + 2);
    // Nothing was held: once the earlier connections have ended on the server, only the one
    // asking is open (waited for with a deadline: a closed connection ends on the server a moment
    // after the client has its answer).
    double open = -1;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while ((open = metric_over_tls("cairn_http_connections")) != 1.0 && std::chrono::steady_clock::now() < deadline) {
    }
    EXPECT_EQ(open, 1.0);
}

TEST_F(tls, a_client_ca_requires_a_client_certificate_it_signed) {
    start("cairn_e2e_tls_clients", fmt::format("client_ca_file = \"{}\"", file("ca.pem")));
    const auto [no_cert_rc, no_cert] = curl("'" + url("/livez") + "'");
    EXPECT_NE(no_cert_rc, 0) << no_cert;
    const std::string with_cert = fmt::format("--cert '{}' --key '{}' ", file("client.pem"), file("client.key"));
    const auto [rc, out] = curl(with_cert + "'" + url("/livez") + "'");
    EXPECT_EQ(rc, 0) << out << gw_->log_tail();
    EXPECT_TRUE(out.ends_with("\n200")) << out;
    // The server's own certificate is no client certificate of this CA's signing for a client
    // without its key: a client presenting a certificate with a key that is not its own fails.
    const auto [bad_rc, bad] =
        curl(fmt::format("--cert '{}' --key '{}' '{}'", file("client.pem"), file("other.key"), url("/livez")));
    EXPECT_NE(bad_rc, 0) << bad;
    // The CLI presents its certificate with --cert and --key; without them it is refused.
    const std::string https = fmt::format("https://localhost:{}", gw_->port());
    auto status = run_cairn({"--url", https, "--cacert", file("ca.pem"), "--cert", file("client.pem"), "--key",
                             file("client.key"), "status", "--json"});
    EXPECT_EQ(status.code, 0) << status.err << status.out;
    EXPECT_NE(run_cairn({"--url", https, "--cacert", file("ca.pem"), "status"}).code, 0);
    const auto [node_rc, node_out] =
        run_capture(fmt::format("node '{}/tests/ws/node_wss_client.js' {} '{}' '{}' '{}'", CAIRN_SOURCE_DIR, gw_->port(),
                                file("ca.pem"), file("client.pem"), file("client.key")));
    if (node_out.find("Cannot find module") == std::string::npos || running_in_ci()) {
        EXPECT_EQ(node_rc, 0) << node_out << gw_->log_tail();
    }
}

TEST_F(tls, a_connection_that_cannot_be_set_up_is_dropped_and_the_listener_goes_on) {
    // While this file exists, OpenSSL's SSL_new fails in cairnd (tests/fault/sslfail), so setting up
    // an accepted connection throws in the accept loop; before issue 13's mend that ended the
    // listener for good, and no later connection was served.
    const std::string fail_when = file("ssl_new_fails");
    const char* asan = std::getenv("ASAN_OPTIONS");
    start("cairn_e2e_tls_setup", {}, "server.key",
          {std::string("LD_PRELOAD=") + CAIRN_SSLFAIL_PATH, "CAIRN_SSLFAIL_WHEN=" + fail_when,
           // The layer comes before the sanitizer runtime in the library list.
           std::string("ASAN_OPTIONS=") + (asan != nullptr && *asan ? std::string(asan) + ":" : "") +
               "verify_asan_link_order=0"});
    const double before = metric_over_tls("cairn_http_accept_errors_total");
    ASSERT_GE(before, 0.0);
    std::ofstream(fail_when) << "fail\n";
    for (int i = 0; i < 3; ++i) {
        const auto [rc, out] = curl("'" + url("/livez") + "'");
        EXPECT_NE(rc, 0) << "served without an SSL object: " << out;
    }
    std::filesystem::remove(fail_when);
    const auto [rc, out] = curl("'" + url("/livez") + "'");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_TRUE(out.ends_with("\n200")) << out;
    EXPECT_EQ(metric_over_tls("cairn_http_accept_errors_total"), before + 3);
}

TEST_F(tls, a_missing_or_mismatched_certificate_stops_cairnd_at_start_naming_the_file) {
    fresh_database("cairn_e2e_tls_bad");
    for (const auto& [toml, named] : std::vector<std::pair<std::string, std::string>>{
             {fmt::format("cert_file = \"{}\"\nkey_file = \"{}\"", file("nothing.pem"), file("server.key")),
              "listen.tls.cert_file: " + file("nothing.pem") + ": no such file"},
             {fmt::format("cert_file = \"{}\"\nkey_file = \"{}\"", file("server.pem"), file("other.key")),
              "listen.tls.key_file: " + file("other.key")},
             {fmt::format("cert_file = \"{}\"", file("server.pem")), "listen.tls.key_file: is required"}}) {
        cairnd_options o;
        o.database = "cairn_e2e_tls_bad";
        o.ready_by_log = true;
        o.extra_toml = "[listen.tls]\n" + toml + "\n";
        cairnd_process gw(o);
        EXPECT_FALSE(gw.start(10s)) << toml;
        EXPECT_NE(gw.wait_exit(10s), 0) << toml;
        EXPECT_NE(gw.log_tail().find(named), std::string::npos) << gw.log_tail();
    }
}

}  // namespace
}  // namespace cairn::test
