#include "core/config.hpp"

#include <gtest/gtest.h>

namespace cairn::core {
namespace {

TEST(config, empty_text_gives_every_default) {
    auto c = parse_config("");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().listen_port, 8080);
    ASSERT_EQ(c.value().shards.size(), 2u);
    EXPECT_EQ(c.value().shards[1].port, 33062);
    EXPECT_TRUE(c.value().tokens.empty());
}

TEST(config, reads_every_section) {
    auto c = parse_config(R"(
node_id = 7
[listen]
port = 9000
[journal]
path = "/tmp/j"
size_bytes_max = 1073741824
retention_seconds = 60
[apply]
retry_attempts_max = 4
[[shards]]
host = "10.0.0.1"
port = 3306
password = ""
[[tokens]]
token = "0123456789abcdef-w"
role = "write"
)");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().node_id, 7u);
    EXPECT_EQ(c.value().listen_port, 9000);
    EXPECT_EQ(c.value().journal_path, "/tmp/j");
    EXPECT_EQ(c.value().journal_retention, std::chrono::seconds(60));
    EXPECT_EQ(c.value().lim.retry_attempts_max, 4u);
    ASSERT_EQ(c.value().shards.size(), 1u);
    EXPECT_EQ(c.value().shards[0].host, "10.0.0.1");
    ASSERT_EQ(c.value().tokens.size(), 1u);
    EXPECT_EQ(c.value().tokens[0].token_role, role::write);
}

struct bad_case {
    const char* text;
    const char* names;
};

TEST(config, a_bad_value_names_its_key) {
    const bad_case cases[] = {
        {"node_id = 5000", "node_id"},
        {"node_id = \"x\"", "node_id"},
        {"node_id = 1e80", "node_id: must be an integer"},  // found by config_fuzz (undefined behaviour in toml++)
        {"[limits]\nconnections_max = 2.5", "limits.connections_max: must be an integer"},
        {"[listen]\nport = 70000", "listen.port"},
        {"[journal]\nsize_bytes_max = 5", "journal.size_bytes_max"},
        {"[journal]\nsize_bytes_mx = 5", "journal.size_bytes_mx: unknown key"},
        {"[[shards]]\nport = 0", "shards[0].port"},
        {"[[tokens]]\ntoken = \"short\"", "tokens[0].token"},
        {"[[tokens]]\ntoken = \"0123456789abcdefgh\"\nrole = \"root\"", "tokens[0].role"},
        {"[apply]\nretry_backoff_initial_ms = 5000\nretry_backoff_max_ms = 10", "apply.retry_backoff_initial_ms"},
        {"log_level = \"loud\"", "log_level"},
        {"listen = 5", "listen"},
        {"[listen\n", "config:"},
        {"[listen.tls]\nkey_file = \"k.pem\"", "listen.tls.cert_file: is required"},
        {"[listen.tls]\ncert_file = \"c.pem\"", "listen.tls.key_file: is required"},
        {"[listen.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\nca = \"x\"", "listen.tls.ca: unknown key"},
        {"[listen]\ntls = 1", "listen.tls: must be a table"},
    };
    for (const auto& c : cases) {
        auto r = parse_config(c.text);
        ASSERT_FALSE(r.has_value()) << c.text;
        EXPECT_NE(r.error().find(c.names), std::string::npos) << c.text << " -> " << r.error();
    }
}

TEST(config, read_limits_have_defaults_and_bounds) {
    auto d = parse_config("");
    ASSERT_TRUE(d.has_value()) << d.error();
    EXPECT_EQ(d.value().lim.page_limit_max, 1000u);
    EXPECT_EQ(d.value().lim.applied_wait_max, std::chrono::milliseconds(30'000));
    auto c = parse_config("[limits]\npage_limit_max = 10\napplied_wait_max_ms = 250\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().lim.page_limit_max, 10u);
    EXPECT_EQ(c.value().lim.applied_wait_max, std::chrono::milliseconds(250));
    auto bad = parse_config("[limits]\npage_limit_max = 0\n");
    ASSERT_FALSE(bad.has_value());
    EXPECT_NE(bad.error().find("limits.page_limit_max"), std::string::npos) << bad.error();
}

// issue 16: a shard's replicas are tables under it, with a host and a port (the shard's credentials);
// the staleness bound is a limit, 0 turning replica reads off.
TEST(config, replicas_belong_to_their_shard_and_the_staleness_bound_has_a_default) {
    auto d = parse_config("");
    ASSERT_TRUE(d.has_value()) << d.error();
    EXPECT_EQ(d.value().lim.replica_staleness_max, std::chrono::milliseconds(1'000));
    EXPECT_TRUE(d.value().shards.at(0).replicas.empty());
    auto c = parse_config(
        "[limits]\nreplica_staleness_max_ms = 0\n"
        "[[shards]]\nhost = '10.0.0.1'\n"
        "[[shards]]\nhost = '10.0.0.2'\n[[shards.replicas]]\nhost = '10.0.0.3'\nport = 3307\n[[shards.replicas]]\nhost = '10.0.0.4'\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().lim.replica_staleness_max, std::chrono::milliseconds(0));
    EXPECT_TRUE(c.value().shards.at(0).replicas.empty());
    ASSERT_EQ(c.value().shards.at(1).replicas.size(), 2u);
    EXPECT_EQ(c.value().shards.at(1).replicas[0].host, "10.0.0.3");
    EXPECT_EQ(c.value().shards.at(1).replicas[0].port, 3307);
    EXPECT_EQ(c.value().shards.at(1).replicas[1].port, 3306);
    for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
             {"[[shards]]\n[[shards.replicas]]\nport = 3307\n", "shards[0].replicas[0].host"},
             {"[[shards]]\n[[shards.replicas]]\nhost = 'a'\nuser = 'x'\n", "shards[0].replicas[0]"},
             {"[[shards]]\n[[shards.replicas]]\nhost = 'a'\nport = 0\n", "shards[0].replicas[0].port"},
             {"[[shards]]\nreplicas = 'a'\n", "shards[0].replicas"},
             {"[limits]\nreplica_staleness_max_ms = -1\n", "limits.replica_staleness_max_ms"}}) {
        auto bad = parse_config(text);
        ASSERT_FALSE(bad.has_value()) << text;
        EXPECT_NE(bad.error().find(key), std::string::npos) << text << ": " << bad.error();
    }
}

// issue 13: tokens are long, unique and sendable; an error names the file and line, never the token.
TEST(config, tokens_are_validated_and_never_printed) {
    const std::string good = "0123456789abcdef-GOOD";
    struct token_case {
        std::string text;
        std::string names;
    };
    const token_case cases[] = {
        {"\n[[tokens]]\ntoken = \"short-secret\"\n", "cairn.toml:3: tokens[0].token: must be at least 16"},
        {"[[tokens]]\ntoken = \"0123456789 abcdef secret\"\n", "tokens[0].token: may hold only"},
        {"[[tokens]]\ntoken = \"0123456789abcdef\\tsecret\"\n", "tokens[0].token: may hold only"},
        {"[[tokens]]\ntoken = \"" + good + "\"\n[[tokens]]\ntoken = \"" + good + "\"\nrole = \"admin\"\n",
         "cairn.toml:4: tokens[1].token: the same token as tokens[0]"},
    };
    for (const auto& c : cases) {
        auto r = parse_config(c.text, "cairn.toml");
        ASSERT_FALSE(r.has_value()) << c.text;
        EXPECT_NE(r.error().find(c.names), std::string::npos) << c.text << " -> " << r.error();
        EXPECT_EQ(r.error().find("secret"), std::string::npos) << "a token was printed: " << r.error();
        EXPECT_EQ(r.error().find(good), std::string::npos) << "a token was printed: " << r.error();
    }
    // Other errors name file and line too.
    auto bad = parse_config("node_id = 1\n[limits]\npage_limit_max = 0\n", "cairn.toml");
    ASSERT_FALSE(bad.has_value());
    EXPECT_NE(bad.error().find("cairn.toml:3: limits.page_limit_max"), std::string::npos) << bad.error();
}

TEST(config, the_stop_has_a_drain_and_a_larger_last_resort_timeout) {
    auto d = parse_config("");
    ASSERT_TRUE(d.has_value()) << d.error();
    EXPECT_EQ(d.value().lim.stop_drain, std::chrono::milliseconds(2'000));
    EXPECT_EQ(d.value().lim.stop_timeout, std::chrono::milliseconds(6'000));
    auto c = parse_config("[limits]\nstop_drain_ms = 0\nstop_timeout_ms = 1500\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().lim.stop_drain, std::chrono::milliseconds(0));
    EXPECT_EQ(c.value().lim.stop_timeout, std::chrono::milliseconds(1'500));
    auto bad = parse_config("[limits]\nstop_drain_ms = 3000\nstop_timeout_ms = 3000\n");
    ASSERT_FALSE(bad.has_value());
    EXPECT_NE(bad.error().find("limits.stop_timeout_ms"), std::string::npos) << bad.error();
}

TEST(config, combined_point_reads_run_one_query_per_shard_unless_configured) {
    auto d = parse_config("");
    ASSERT_TRUE(d.has_value()) << d.error();
    EXPECT_EQ(d.value().lim.get_batch_runners, 1u);
    auto c = parse_config("[apply]\nread_pool_connections = 4\nget_batch_runners = 4\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_EQ(c.value().lim.get_batch_runners, 4u);
    // At most one runner per read connection of the shard.
    auto bad = parse_config("[apply]\nread_pool_connections = 4\nget_batch_runners = 5\n");
    ASSERT_FALSE(bad.has_value());
    EXPECT_NE(bad.error().find("apply.get_batch_runners"), std::string::npos) << bad.error();
    EXPECT_FALSE(parse_config("[apply]\nget_batch_runners = 0\n").has_value());
}

TEST(config, missing_file_is_a_clear_error) {
    auto r = load_config_file("/nonexistent/cairn.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().find("/nonexistent/cairn.toml"), std::string::npos);
}

// Issue 18: cairnd --check-config prints the effective config. Every key below is set to a value
// that is not its default, so a key the dump leaves out shows as a missing line; the dump must
// parse back to a config that dumps the same; secrets are redacted on request.
TEST(config, the_effective_config_dumps_every_key_and_reads_back) {
    const std::vector<std::string> lines = {
        "node_id = 9", "log_level = 'debug'",
        "[listen]", "address = '0.0.0.0'", "port = 9091", "threads = 3", "spin_us = 77",
        "[listen.tls]", "cert_file = 'c.pem'", "key_file = 'k.pem'", "client_ca_file = 'ca.pem'",
        "[journal]", "path = '/tmp/j9'", "size_bytes_max = 2097152", "grow_bytes = 4097", "retention_seconds = 61", "queue_ops_max = 1001",
        "group_ops_max = 1002", "wait_max_ms = 1003", "unapplied_ops_max = 1004",
        "node_lease_seconds = 1005",
        "[apply]", "paused = true", "batch_ops_max = 2001", "batch_bytes_max = 2002", "batch_interval_ms = 912", "retry_attempts_max = 23",
        "retry_backoff_initial_ms = 2004", "retry_backoff_max_ms = 2005", "outage_backoff_max_ms = 2006",
        "query_timeout_ms = 2007", "connect_timeout_ms = 2008", "read_pool_connections = 29", "get_batch_keys_max = 2010",
        "get_batch_runners = 11",
        "[limits]", "body_bytes_max = 3001", "header_bytes_max = 3002", "connections_max = 3003", "batch_ops_max = 3004",
        "timeout_read_ms = 3005", "timeout_idle_ms = 3006", "ws_in_flight_max = 3007", "page_limit_max = 3008",
        "set_scan_rows_max = 3009", "applied_wait_max_ms = 3010", "stop_drain_ms = 3011", "stop_timeout_ms = 3012",
        "replica_staleness_max_ms = 3013",
        "[[shards]]", "host = '10.1.1.1'", "port = 4001", "user = 'u1'", "password = 'secret-one'", "database = 'd1'",
        "[[shards.replicas]]", "host = '10.1.1.9'", "port = 4009",
        "[[shards]]", "host = '10.1.1.2'", "port = 4002", "user = 'u2'", "password = ''", "database = 'd2'",
        "[[tokens]]", "token = 'token-writer-0123456789'", "role = 'write'",
        "[[tokens]]", "token = 'token-admin-0123456789'", "role = 'admin'",
        "[counters]", "op_ids_keep_hours = 51", "future_ms_max = 5002", "series_points_max = 5003", "groups_max = 5004",
        "[[counters.metrics]]", "name = 'plays'", "shard_on = 'track_id'",
        "dimensions = [{ name = 'track_id', type = 'int' }, { name = 'country', type = 'string', length = 2 }]",
        "tables = [{ name = 'by_track', granularity = 'day', key = ['track_id', 'time'] },"
        " { name = 'by_country', granularity = 'hour', key = ['country', 'track_id', 'time'] }]",
        "[cells]", "compress_bytes_min = 6001", "tables = ['users', 'trips']",
        "[entities]", "compress_bytes_min = 7001", "kinds = ['entry', 'place']",
    };
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    auto c = parse_config(text);
    ASSERT_TRUE(c.has_value()) << c.error();
    const std::string dumped = config_to_toml(c.value(), false);
    // Every "key = value" with a number or a boolean appears as written (strings and arrays:
    // toml++ quotes and spaces them its own way, checked through the read-back below).
    for (const auto& l : lines) {
        const auto eq = l.find(" = ");
        if (eq == std::string::npos || l.find('\'') != std::string::npos || l.find('[') != std::string::npos) continue;
        EXPECT_NE(dumped.find(l), std::string::npos) << l << " is not in\n" << dumped;
    }
    for (const char* s : {"0.0.0.0", "c.pem", "ca.pem", "/tmp/j9", "10.1.1.2", "d2", "10.1.1.9", "4009", "secret-one", "token-admin-0123456789",
                          "by_country", "country", "trips", "place", "debug"}) {
        EXPECT_NE(dumped.find(s), std::string::npos) << s << " is not in\n" << dumped;
    }
    auto back = parse_config(dumped);
    ASSERT_TRUE(back.has_value()) << back.error() << "\n" << dumped;
    EXPECT_EQ(config_to_toml(back.value(), false), dumped);
    EXPECT_EQ(back.value().counters.metrics.at(0).tables.at(1).key, c.value().counters.metrics.at(0).tables.at(1).key);

    const std::string redacted = config_to_toml(c.value(), true);
    EXPECT_EQ(redacted.find("secret-one"), std::string::npos) << redacted;
    EXPECT_EQ(redacted.find("token-writer"), std::string::npos) << redacted;
    EXPECT_NE(redacted.find("<redacted>"), std::string::npos) << redacted;

    // The defaults dump and read back too.
    auto defaults = parse_config(config_to_toml(default_config(), false));
    ASSERT_TRUE(defaults.has_value()) << defaults.error();
    EXPECT_EQ(config_to_toml(defaults.value(), false), config_to_toml(default_config(), false));
}

}  // namespace
TEST(config, tls_is_off_by_default_and_read_from_listen_tls) {
    EXPECT_FALSE(parse_config("").value().tls.enabled());
    auto c = parse_config("[listen]\nport = 8443\n[listen.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n"
                          "client_ca_file = \"ca.pem\"\n");
    ASSERT_TRUE(c.has_value()) << c.error();
    EXPECT_TRUE(c.value().tls.enabled());
    EXPECT_EQ(c.value().tls.cert_file, "c.pem");
    EXPECT_EQ(c.value().tls.key_file, "k.pem");
    EXPECT_EQ(c.value().tls.client_ca_file, "ca.pem");
    EXPECT_EQ(c.value().listen_port, 8443);
}

}  // namespace cairn::core
