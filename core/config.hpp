// cairnd's configuration: a TOML file where every key has a default. Loading validates every
// value and names the offending key in its error. Plain values; no I/O after load.
#pragma once

#include "core/cells.hpp"
#include "core/counters.hpp"
#include "core/entities.hpp"
#include "core/limits.hpp"

#include <boost/outcome/result.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cairn::core {

// A MariaDB replica of a shard (MariaDB's own replication, set up by the operator): reads without
// ?after= may go to it while it is within limits.replica_staleness_max. User, password and database
// are the shard's.
struct replica_config {
    std::string host;
    std::uint16_t port = 3306;
};

struct shard_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 33061;
    std::string user = "cairn";
    std::string password = "cairn";
    std::string database = "cairn";
    std::vector<replica_config> replicas;  // [[shards.replicas]]
};

// Each includes the ones below. none: a caller without a token, who may use only public routes
// (the health probes) when tokens are configured.
enum class role : std::uint8_t { none = 0, read = 1, write = 2, admin = 3 };

// "none", "read", "write" or "admin": the names the config file and GET /v1/whoami use.
std::string_view role_name(role r) noexcept;

struct token_config {
    std::string token;
    role token_role = role::read;
};

// [listen.tls]: HTTPS and WSS on the listener, TLS 1.2 or newer. Files in PEM, paths relative to the
// working directory. Read when cairnd starts; a file that is missing or does not fit is an error then.
struct tls_config {
    std::string cert_file;       // the certificate chain (the server's first); empty: plain HTTP
    std::string key_file;        // its private key (unencrypted)
    std::string client_ca_file;  // set: every client must present a certificate these CAs signed
    bool enabled() const noexcept { return !cert_file.empty(); }
};

struct config {
    std::uint64_t node_id = 1;
    std::string listen_address = "127.0.0.1";
    std::uint16_t listen_port = 8080;
    std::uint32_t threads = 2;
    std::chrono::microseconds io_spin{0};  // listen.spin_us: an I/O thread polls this long after work before it sleeps
    tls_config tls;
    std::string journal_path = "var/journal";
    std::uint64_t journal_size_bytes_max = std::uint64_t{8} << 30;
    std::uint64_t journal_grow_bytes = std::uint64_t{1} << 20;  // data.mdb grown ahead in steps of this; 0: off
    std::chrono::seconds journal_retention{24 * 3600};
    std::vector<shard_config> shards;  // default: two local shards on 33061 and 33062
    std::vector<token_config> tokens;  // empty: no authentication (loopback development)
    std::string log_level = "info";
    bool apply_paused = false;
    limits lim;
    counter_catalog counters;  // [counters] and [[counters.metrics]]
    cell_config cells;         // [cells]
    entity_config entities;    // [entities]
};

using config_result = boost::outcome_v2::result<config, std::string, boost::outcome_v2::policy::terminate>;

// Parses TOML text; error strings look like "journal.size_bytes_max: must be >= 1048576".
config_result parse_config(std::string_view toml_text, std::string_view source_name = "config");
config_result load_config_file(const std::string& path);

// The effective configuration as TOML (defaults included) that parse_config reads back to the
// same values. With redact_secrets, shard passwords and tokens read "<redacted>" (what
// cairnd --check-config prints; such a text does not parse back: a token must be 16 characters).
std::string config_to_toml(const config& c, bool redact_secrets);
// The configuration with every default, including the two local development shards.
config default_config();

}  // namespace cairn::core
