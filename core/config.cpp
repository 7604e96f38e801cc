#include "core/config.hpp"

#include <toml++/toml.h>

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

namespace cairn::core {
namespace {

// Reads keys of one TOML table, remembering which it saw so that unknown keys (typos) are
// reported instead of silently ignored.
class table_reader {
public:
    table_reader(const toml::table& t, std::string prefix) : t_(t), prefix_(std::move(prefix)) {}

    std::string key(std::string_view k) const { return prefix_.empty() ? std::string(k) : prefix_ + "." + std::string(k); }

    template <class Int>
    void integer(std::string_view k, Int& out, std::int64_t min, std::int64_t max) {
        seen_.insert(std::string(k));
        const toml::node* n = t_.get(k);
        if (!n) return;
        auto v = n->value<std::int64_t>();
        if (!n->is_integer() || !v) return fail(fmt::format("{}: must be an integer", key(k)));
        if (*v < min || *v > max) return fail(fmt::format("{}: must be between {} and {}, got {}", key(k), min, max, *v));
        out = static_cast<Int>(*v);
    }
    template <class Duration>
    void duration(std::string_view k, Duration& out, std::int64_t min, std::int64_t max) {
        std::int64_t count = out.count();
        integer(k, count, min, max);
        out = Duration(count);
    }
    void string(std::string_view k, std::string& out, bool allow_empty = false) {
        seen_.insert(std::string(k));
        const toml::node* n = t_.get(k);
        if (!n) return;
        if (!n->is_string()) return fail(fmt::format("{}: must be a string", key(k)));
        auto v = *n->value<std::string>();
        if (v.empty() && !allow_empty) return fail(fmt::format("{}: must not be empty", key(k)));
        out = std::move(v);
    }
    void boolean(std::string_view k, bool& out) {
        seen_.insert(std::string(k));
        const toml::node* n = t_.get(k);
        if (!n) return;
        if (!n->is_boolean()) return fail(fmt::format("{}: must be true or false", key(k)));
        out = *n->value<bool>();
    }
    void skip(std::string_view k) { seen_.insert(std::string(k)); }

    void check_unknown() {
        for (auto&& [k, v] : t_) {
            if (!seen_.contains(std::string(k.str()))) fail(fmt::format("{}: unknown key", key(k.str())));
        }
    }
    const std::string& error() const { return error_; }
    void fail(std::string message) {
        if (error_.empty()) error_ = std::move(message);
    }

private:
    const toml::table& t_;
    std::string prefix_;
    std::set<std::string> seen_;
    std::string error_;
};

const toml::table* sub_table(const toml::table& root, std::string_view k, std::string& error) {
    const toml::node* n = root.get(k);
    if (!n) return nullptr;
    if (!n->is_table()) {
        error = fmt::format("{}: must be a table ([{}])", k, k);
        return nullptr;
    }
    return n->as_table();
}

}  // namespace

config default_config() {
    config c;
    shard_config a;
    shard_config b;
    b.port = 33062;
    c.shards = {a, b};
    return c;
}

config_result parse_config(std::string_view text, std::string_view source_name) {
    toml::table root;
    try {
        root = toml::parse(text, source_name);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        return fmt::format("{}:{}:{}: {}", source_name, where.line, where.column, e.description());
    }
    config c = default_config();
    std::string error;
    auto first_error = [&](const std::string& e) {
        if (error.empty() && !e.empty()) error = e;
    };

    table_reader top(root, "");
    top.integer("node_id", c.node_id, 0, 1023);
    top.string("log_level", c.log_level);
    if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
        c.log_level != "error") {
        top.fail("log_level: must be one of trace, debug, info, warn, error");
    }
    for (auto k : {"listen", "journal", "apply", "limits", "shards", "tokens"}) top.skip(k);
    top.check_unknown();
    first_error(top.error());

    if (auto* t = sub_table(root, "listen", error)) {
        table_reader r(*t, "listen");
        r.string("address", c.listen_address);
        r.integer("port", c.listen_port, 0, 65535);
        r.integer("threads", c.threads, 1, 64);
        r.check_unknown();
        first_error(r.error());
    }
    if (auto* t = sub_table(root, "journal", error)) {
        table_reader r(*t, "journal");
        r.string("path", c.journal_path);
        r.integer("size_bytes_max", c.journal_size_bytes_max, 1 << 20, std::int64_t{1} << 42);
        r.duration("retention_seconds", c.journal_retention, 0, std::int64_t{366} * 24 * 3600);
        r.integer("queue_ops_max", c.lim.journal_queue_ops_max, 1, 10'000'000);
        r.integer("group_ops_max", c.lim.journal_group_ops_max, 1, 1'000'000);
        r.duration("wait_max_ms", c.lim.journal_wait_max, 0, 600'000);
        r.integer("unapplied_ops_max", c.lim.journal_unapplied_ops_max, 1, std::int64_t{1} << 40);
        r.check_unknown();
        first_error(r.error());
    }
    if (auto* t = sub_table(root, "apply", error)) {
        table_reader r(*t, "apply");
        r.boolean("paused", c.apply_paused);
        r.integer("batch_ops_max", c.lim.apply_batch_ops_max, 1, 100'000);
        r.integer("retry_attempts_max", c.lim.retry_attempts_max, 1, 1000);
        r.duration("retry_backoff_initial_ms", c.lim.retry_backoff_initial, 1, 3'600'000);
        r.duration("retry_backoff_max_ms", c.lim.retry_backoff_max, 1, 86'400'000);
        r.duration("outage_backoff_max_ms", c.lim.outage_backoff_max, 1, 3'600'000);
        r.duration("query_timeout_ms", c.lim.query_timeout, 1, 3'600'000);
        r.duration("connect_timeout_ms", c.lim.connect_timeout, 1, 600'000);
        r.integer("read_pool_connections", c.lim.read_pool_connections, 1, 1024);
        r.integer("get_batch_keys_max", c.lim.get_batch_keys_max, 1, 10'000);
        r.check_unknown();
        first_error(r.error());
        if (error.empty() && c.lim.retry_backoff_initial > c.lim.retry_backoff_max) {
            error = "apply.retry_backoff_initial_ms: must not exceed apply.retry_backoff_max_ms";
        }
    }
    if (auto* t = sub_table(root, "limits", error)) {
        table_reader r(*t, "limits");
        r.integer("body_bytes_max", c.lim.body_bytes_max, 1024, 64 << 20);
        r.integer("header_bytes_max", c.lim.header_bytes_max, 1024, 1 << 20);
        r.integer("connections_max", c.lim.connections_max, 1, 1'000'000);
        r.integer("batch_ops_max", c.lim.batch_ops_max, 1, 100'000);
        r.duration("timeout_read_ms", c.lim.timeout_read, 1, 3'600'000);
        r.duration("timeout_idle_ms", c.lim.timeout_idle, 1, 86'400'000);
        r.integer("ws_in_flight_max", c.lim.ws_in_flight_max, 1, 100'000);
        r.integer("page_limit_max", c.lim.page_limit_max, 1, 100'000);
        r.integer("set_scan_rows_max", c.lim.set_scan_rows_max, 1, 100'000'000);
        r.duration("applied_wait_max_ms", c.lim.applied_wait_max, 0, 3'600'000);
        r.check_unknown();
        first_error(r.error());
    }
    if (const toml::node* n = root.get("shards")) {
        const toml::array* arr = n->as_array();
        if (!arr || arr->empty()) {
            first_error("shards: must be a non-empty array of tables ([[shards]])");
        } else {
            c.shards.clear();
            for (std::size_t i = 0; i < arr->size(); ++i) {
                const toml::table* t = (*arr)[i].as_table();
                if (!t) {
                    first_error(fmt::format("shards[{}]: must be a table", i));
                    break;
                }
                shard_config s;
                table_reader r(*t, fmt::format("shards[{}]", i));
                r.string("host", s.host);
                r.integer("port", s.port, 1, 65535);
                r.string("user", s.user);
                r.string("password", s.password, true);
                r.string("database", s.database);
                r.check_unknown();
                first_error(r.error());
                c.shards.push_back(std::move(s));
            }
            if (c.shards.size() > 1024) first_error("shards: at most 1024 shards");
        }
    }
    if (const toml::node* n = root.get("tokens")) {
        const toml::array* arr = n->as_array();
        if (!arr) {
            first_error("tokens: must be an array of tables ([[tokens]])");
        } else {
            for (std::size_t i = 0; i < arr->size(); ++i) {
                const toml::table* t = (*arr)[i].as_table();
                if (!t) {
                    first_error(fmt::format("tokens[{}]: must be a table", i));
                    break;
                }
                token_config tc;
                std::string role_name = "read";
                table_reader r(*t, fmt::format("tokens[{}]", i));
                r.string("token", tc.token);
                r.string("role", role_name);
                r.check_unknown();
                first_error(r.error());
                if (tc.token.size() < 16) first_error(fmt::format("tokens[{}].token: must be at least 16 characters", i));
                if (role_name == "read") tc.token_role = role::read;
                else if (role_name == "write") tc.token_role = role::write;
                else if (role_name == "admin") tc.token_role = role::admin;
                else first_error(fmt::format("tokens[{}].role: must be read, write or admin", i));
                c.tokens.push_back(std::move(tc));
            }
        }
    }
    if (!error.empty()) return error;
    return c;
}

config_result load_config_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return fmt::format("{}: cannot open config file", path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_config(ss.str(), path);
}

}  // namespace cairn::core
