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
