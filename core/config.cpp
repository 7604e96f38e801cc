#include "core/config.hpp"

#include <toml++/toml.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace cairn::core {

std::string_view role_name(role r) noexcept {
    switch (r) {
        case role::none: return "none";
        case role::read: return "read";
        case role::write: return "write";
        case role::admin: return "admin";
    }
    return "none";
}
namespace {

// Reads keys of one TOML table, remembering which it saw so that unknown keys (typos) are
// reported instead of silently ignored.
class table_reader {
public:
    table_reader(const toml::table& t, std::string prefix) : t_(t), prefix_(std::move(prefix)) {}

    std::string key(std::string_view k) const { return prefix_.empty() ? std::string(k) : prefix_ + "." + std::string(k); }
    // "file:line: key" for a value of the file (an error names where to look).
    static std::string at(const toml::node& n, const std::string& what) {
        const auto& src = n.source();
        if (!src.path || src.begin.line == 0) return what;
        return fmt::format("{}:{}: {}", *src.path, src.begin.line, what);
    }

    template <class Int>
    void integer(std::string_view k, Int& out, std::int64_t min, std::int64_t max) {
        seen_.insert(std::string(k));
        const toml::node* n = t_.get(k);
        if (!n) return;
        // Type first: toml++'s value<int64_t>() converts a float node, out of range undefined
        // (found by config_fuzz: `node_id = 1e80`).
        if (!n->is_integer()) return fail(fmt::format("{}: must be an integer", at(*n, key(k))));
        auto v = n->value<std::int64_t>();
        if (!v) return fail(fmt::format("{}: must be an integer", at(*n, key(k))));
        if (*v < min || *v > max) return fail(fmt::format("{}: must be between {} and {}, got {}", at(*n, key(k)), min, max, *v));
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
        if (!n->is_string()) return fail(fmt::format("{}: must be a string", at(*n, key(k))));
        auto v = *n->value<std::string>();
        if (v.empty() && !allow_empty) return fail(fmt::format("{}: must not be empty", at(*n, key(k))));
        out = std::move(v);
    }
    void boolean(std::string_view k, bool& out) {
        seen_.insert(std::string(k));
        const toml::node* n = t_.get(k);
        if (!n) return;
        if (!n->is_boolean()) return fail(fmt::format("{}: must be true or false", at(*n, key(k))));
        out = *n->value<bool>();
    }
    void skip(std::string_view k) { seen_.insert(std::string(k)); }

    void check_unknown() {
        for (auto&& [k, v] : t_) {
            if (!seen_.contains(std::string(k.str()))) fail(fmt::format("{}: unknown key", at(v, key(k.str()))));
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

// One [[counters.metrics]] table.
std::string parse_metric(const toml::table& t, const std::string& where, counter_metric& m) {
    table_reader r(t, where);
    r.string("name", m.name);
    std::string shard_on;
    r.string("shard_on", shard_on);
    r.skip("dimensions");
    r.skip("tables");
    r.check_unknown();
    if (!r.error().empty()) return r.error();
    if (m.name.empty()) return where + ".name: is required";
    const toml::array* dims = t.get_as<toml::array>("dimensions");
    if (!dims) return where + ".dimensions: must be an array of tables {name, type, length}";
    for (std::size_t i = 0; i < dims->size(); ++i) {
        const auto dw = fmt::format("{}.dimensions[{}]", where, i);
        const toml::table* dt = (*dims)[i].as_table();
        if (!dt) return dw + ": must be a table {name, type, length}";
        table_reader dr(*dt, dw);
        counter_dimension d;
        std::string type = "int";
        std::int64_t length = 0;
        dr.string("name", d.name);
        dr.string("type", type);
        dr.integer("length", length, 1, 255);
        dr.check_unknown();
        if (!dr.error().empty()) return dr.error();
        if (type == "int") {
            d.type = dimension_type::integer;
            if (length != 0) return dw + ".length: only string dimensions have a length";
        } else if (type == "string") {
            d.type = dimension_type::string;
            d.length_max = static_cast<std::size_t>(length);
        } else {
            return dw + ".type: must be \"int\" or \"string\"";
        }
        m.dimensions.push_back(std::move(d));
    }
    if (shard_on.empty()) return where + ".shard_on: is required (the dimension whose value picks the shard)";
    if (auto i = m.dimension_index(shard_on)) {
        m.shard_on = *i;
    } else {
        return fmt::format("{}.shard_on: '{}' is not a declared dimension", where, shard_on);
    }
    const toml::array* tables = t.get_as<toml::array>("tables");
    if (!tables) return where + ".tables: must be an array of tables {name, granularity, key}";
    for (std::size_t i = 0; i < tables->size(); ++i) {
        const auto tw = fmt::format("{}.tables[{}]", where, i);
        const toml::table* tt = (*tables)[i].as_table();
        if (!tt) return tw + ": must be a table {name, granularity, key}";
        table_reader tr(*tt, tw);
        counter_table ct;
        std::string granularity;
        tr.string("name", ct.name);
        tr.string("granularity", granularity);
        tr.skip("key");
        tr.check_unknown();
        if (!tr.error().empty()) return tr.error();
        auto g = granularity_from_name(granularity);
        if (!g) return tw + ".granularity: must be \"hour\" or \"day\"";
        ct.granularity = *g;
        const toml::array* key = tt->get_as<toml::array>("key");
        if (!key || key->empty()) return tw + ".key: must be an array of dimension names and \"time\"";
        for (const auto& k : *key) {
            const auto name = k.value<std::string>();
            if (!name) return tw + ".key: must hold strings";
            if (*name == "time") {
                ct.key.push_back(counter_key_time);
            } else if (auto d = m.dimension_index(*name)) {
                ct.key.push_back(static_cast<int>(*d));
            } else {
                return fmt::format("{}.key: '{}' is not a declared dimension", tw, *name);
            }
        }
        m.tables.push_back(std::move(ct));
    }
    return {};
}

// [counters] with its [[counters.metrics]]; checked whole by core::check_catalog.
std::string parse_counters(const toml::table& t, counter_catalog& c) {
    table_reader r(t, "counters");
    std::int64_t keep_hours = c.op_ids_keep.count();
    r.integer("op_ids_keep_hours", keep_hours, 1, 24 * 3660);
    c.op_ids_keep = std::chrono::hours(keep_hours);
    r.integer("future_ms_max", c.future_ms_max, 0, std::int64_t{366} * ms_per_day);
    r.integer("series_points_max", c.series_points_max, 1, 1'000'000);
    r.integer("groups_max", c.groups_max, 1, 10'000'000);
    r.skip("metrics");
    r.check_unknown();
    if (!r.error().empty()) return r.error();
    if (const toml::node* n = t.get("metrics")) {
        const toml::array* arr = n->as_array();
        if (!arr) return "counters.metrics: must be an array of tables ([[counters.metrics]])";
        for (std::size_t i = 0; i < arr->size(); ++i) {
            const auto where = fmt::format("counters.metrics[{}]", i);
            const toml::table* mt = (*arr)[i].as_table();
            if (!mt) return where + ": must be a table";
            counter_metric m;
            if (auto e = parse_metric(*mt, where, m); !e.empty()) return e;
            c.metrics.push_back(std::move(m));
        }
    }
    if (auto e = check_catalog(c)) return *e;
    return {};
}

// [cells]: tables = ["users", ...], compress_bytes_min.
std::string parse_cells(const toml::table& t, cell_config& c) {
    table_reader r(t, "cells");
    r.integer("compress_bytes_min", c.compress_bytes_min, 0, std::int64_t{1} << 30);
    r.skip("tables");
    r.check_unknown();
    if (!r.error().empty()) return r.error();
    if (const toml::node* n = t.get("tables")) {
        const toml::array* arr = n->as_array();
        if (!arr) return "cells.tables: must be an array of table names";
        for (std::size_t i = 0; i < arr->size(); ++i) {
            const auto name = (*arr)[i].value<std::string>();
            if (!name || !valid_cell_table(*name)) {
                return fmt::format("cells.tables[{}]: must be 1 to 32 characters of a-z, 0-9 and _, starting with a letter", i);
            }
            if (c.declared(*name)) return fmt::format("cells.tables[{}]: '{}' is declared twice", i, *name);
            c.tables.push_back(*name);
        }
        if (c.tables.size() > 256) return "cells.tables: at most 256 tables";
    }
    return {};
}

// [entities]: kinds = ["entry", ...], compress_bytes_min.
std::string parse_entities(const toml::table& t, entity_config& c) {
    table_reader r(t, "entities");
    r.integer("compress_bytes_min", c.compress_bytes_min, 0, std::int64_t{1} << 30);
    r.skip("kinds");
    r.check_unknown();
    if (!r.error().empty()) return r.error();
    if (const toml::node* n = t.get("kinds")) {
        const toml::array* arr = n->as_array();
        if (!arr) return "entities.kinds: must be an array of kind names";
        for (std::size_t i = 0; i < arr->size(); ++i) {
            const auto name = (*arr)[i].value<std::string>();
            if (!name || !valid_entity_kind(*name)) {
                return fmt::format("entities.kinds[{}]: must be 1 to 32 characters of a-z, 0-9 and _, starting with a letter", i);
            }
            if (c.declared(*name)) return fmt::format("entities.kinds[{}]: '{}' is declared twice", i, *name);
            c.kinds.push_back(*name);
        }
        if (c.kinds.size() > 256) return "entities.kinds: at most 256 kinds";
    }
    return {};
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
    for (auto k : {"listen", "journal", "apply", "limits", "shards", "tokens", "counters", "cells", "entities"}) top.skip(k);
    top.check_unknown();
    first_error(top.error());

    if (auto* t = sub_table(root, "listen", error)) {
        table_reader r(*t, "listen");
        r.string("address", c.listen_address);
        r.integer("port", c.listen_port, 0, 65535);
        r.integer("threads", c.threads, 1, 64);
        r.duration("spin_us", c.io_spin, 0, 10000);
        r.skip("tls");
        r.check_unknown();
        first_error(r.error());
        if (const toml::node* n = t->get("tls"); n && error.empty()) {
            if (!n->is_table()) {
                error = "listen.tls: must be a table ([listen.tls])";
            } else {
                table_reader tr(*n->as_table(), "listen.tls");
                tr.string("cert_file", c.tls.cert_file);
                tr.string("key_file", c.tls.key_file);
                tr.string("client_ca_file", c.tls.client_ca_file);
                tr.check_unknown();
                first_error(tr.error());
                if (error.empty() && c.tls.cert_file.empty()) error = "listen.tls.cert_file: is required with [listen.tls]";
                if (error.empty() && c.tls.key_file.empty()) error = "listen.tls.key_file: is required with [listen.tls]";
            }
        }
    }
    if (auto* t = sub_table(root, "journal", error)) {
        table_reader r(*t, "journal");
        r.string("path", c.journal_path);
        r.integer("size_bytes_max", c.journal_size_bytes_max, 1 << 20, std::int64_t{1} << 42);
        r.integer("grow_bytes", c.journal_grow_bytes, 0, std::int64_t{1} << 30);
        r.duration("retention_seconds", c.journal_retention, 0, std::int64_t{366} * 24 * 3600);
        r.integer("queue_ops_max", c.lim.journal_queue_ops_max, 1, 10'000'000);
        r.integer("group_ops_max", c.lim.journal_group_ops_max, 1, 1'000'000);
        r.duration("wait_max_ms", c.lim.journal_wait_max, 0, 600'000);
        r.integer("unapplied_ops_max", c.lim.journal_unapplied_ops_max, 1, std::int64_t{1} << 40);
        r.duration("node_lease_seconds", c.lim.node_lease_ttl, 3, 3600);
        r.check_unknown();
        first_error(r.error());
    }
    if (auto* t = sub_table(root, "apply", error)) {
        table_reader r(*t, "apply");
        r.boolean("paused", c.apply_paused);
        r.integer("batch_ops_max", c.lim.apply_batch_ops_max, 1, 100'000);
        r.integer("batch_bytes_max", c.lim.apply_batch_bytes_max, 1024, 64 << 20);
        r.duration("batch_interval_ms", c.lim.apply_batch_interval, 0, 1000);
        r.integer("retry_attempts_max", c.lim.retry_attempts_max, 1, 1000);
        r.duration("retry_backoff_initial_ms", c.lim.retry_backoff_initial, 1, 3'600'000);
        r.duration("retry_backoff_max_ms", c.lim.retry_backoff_max, 1, 86'400'000);
        r.duration("outage_backoff_max_ms", c.lim.outage_backoff_max, 1, 3'600'000);
        r.duration("query_timeout_ms", c.lim.query_timeout, 1, 3'600'000);
        r.duration("connect_timeout_ms", c.lim.connect_timeout, 1, 600'000);
        r.integer("read_pool_connections", c.lim.read_pool_connections, 1, 1024);
        r.integer("get_batch_keys_max", c.lim.get_batch_keys_max, 1, 10'000);
        r.integer("get_batch_runners", c.lim.get_batch_runners, 1, 1024);
        r.check_unknown();
        first_error(r.error());
        if (error.empty() && c.lim.get_batch_runners > c.lim.read_pool_connections) {
            error = "apply.get_batch_runners: must not exceed apply.read_pool_connections";
        }
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
        r.duration("replica_staleness_max_ms", c.lim.replica_staleness_max, 0, 86'400'000);
        r.integer("split_copy_rows_per_second_max", c.lim.split_copy_rows_per_second_max, 0, 1'000'000'000);
        r.duration("stop_drain_ms", c.lim.stop_drain, 0, 600'000);
        r.duration("stop_timeout_ms", c.lim.stop_timeout, 100, 3'600'000);
        r.check_unknown();
        first_error(r.error());
        if (error.empty() && c.lim.stop_timeout <= c.lim.stop_drain) {
            error = "limits.stop_timeout_ms: must exceed limits.stop_drain_ms";
        }
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
                r.skip("replicas");
                r.check_unknown();
                first_error(r.error());
                if (const toml::node* rn = t->get("replicas")) {
                    const toml::array* ra = rn->as_array();
                    if (!ra) first_error(fmt::format("shards[{}].replicas: must be an array of tables ([[shards.replicas]])", i));
                    for (std::size_t j = 0; ra && j < ra->size(); ++j) {
                        const toml::table* rt = (*ra)[j].as_table();
                        if (!rt) {
                            first_error(fmt::format("shards[{}].replicas[{}]: must be a table", i, j));
                            break;
                        }
                        replica_config rc;
                        table_reader rr(*rt, fmt::format("shards[{}].replicas[{}]", i, j));
                        rr.string("host", rc.host);
                        rr.integer("port", rc.port, 1, 65535);
                        rr.check_unknown();
                        first_error(rr.error());
                        if (rc.host.empty()) first_error(fmt::format("shards[{}].replicas[{}].host: required", i, j));
                        s.replicas.push_back(std::move(rc));
                    }
                    if (s.replicas.size() > 16) first_error(fmt::format("shards[{}].replicas: at most 16", i));
                }
                c.shards.push_back(std::move(s));
            }
            if (c.shards.size() > 1024) first_error("shards: at most 1024 shards");
        }
    }
    if (auto* t = sub_table(root, "counters", error)) first_error(parse_counters(*t, c.counters));
    if (auto* t = sub_table(root, "cells", error)) first_error(parse_cells(*t, c.cells));
    if (auto* t = sub_table(root, "entities", error)) first_error(parse_entities(*t, c.entities));
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
                // The token itself is never part of a message: errors name where it is.
                const toml::node* token_node = t->get("token");
                const std::string where = table_reader::at(token_node ? *token_node : *t, fmt::format("tokens[{}].token", i));
                if (tc.token.size() < 16) first_error(fmt::format("{}: must be at least 16 characters", where));
                // What a client can send after "Bearer " (RFC 6750's token68): no spaces, no control characters.
                const bool token68 = std::all_of(tc.token.begin(), tc.token.end(), [](char ch) {
                    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                           ch == '.' || ch == '_' || ch == '~' || ch == '+' || ch == '/' || ch == '=';
                });
                if (!token68) {
                    first_error(fmt::format("{}: may hold only letters, digits and - . _ ~ + / = (no spaces or control "
                                            "characters: a Bearer header cannot carry them)",
                                            where));
                }
                for (std::size_t k = 0; k < c.tokens.size(); ++k) {
                    if (!tc.token.empty() && c.tokens[k].token == tc.token) {
                        first_error(fmt::format("{}: the same token as tokens[{}]; every token must be unique", where, k));
                    }
                }
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

std::string config_to_toml(const config& c, bool redact_secrets) {
    const auto secret = [&](const std::string& v) { return redact_secrets ? std::string("<redacted>") : v; };
    const auto ms = [](auto d) { return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()); };
    const auto n = [](auto v) { return static_cast<std::int64_t>(v); };
    const limits& l = c.lim;
    toml::table root;
    root.insert("node_id", n(c.node_id));
    root.insert("log_level", c.log_level);
    toml::table listen{{"address", c.listen_address}, {"port", n(c.listen_port)}, {"threads", n(c.threads)},
                         {"spin_us", static_cast<std::int64_t>(c.io_spin.count())}};
    if (c.tls.enabled()) {
        toml::table tls{{"cert_file", c.tls.cert_file}, {"key_file", c.tls.key_file}};
        if (!c.tls.client_ca_file.empty()) tls.insert("client_ca_file", c.tls.client_ca_file);
        listen.insert("tls", std::move(tls));
    }
    root.insert("listen", std::move(listen));
    root.insert("journal", toml::table{{"path", c.journal_path},
                                       {"size_bytes_max", n(c.journal_size_bytes_max)},
                                       {"grow_bytes", n(c.journal_grow_bytes)},
                                       {"retention_seconds", n(c.journal_retention.count())},
                                       {"queue_ops_max", n(l.journal_queue_ops_max)},
                                       {"group_ops_max", n(l.journal_group_ops_max)},
                                       {"wait_max_ms", ms(l.journal_wait_max)},
                                       {"unapplied_ops_max", n(l.journal_unapplied_ops_max)},
                                       {"node_lease_seconds", n(l.node_lease_ttl.count())}});
    root.insert("apply", toml::table{{"paused", c.apply_paused},
                                     {"batch_ops_max", n(l.apply_batch_ops_max)},
                                     {"batch_bytes_max", n(l.apply_batch_bytes_max)},
                                     {"batch_interval_ms", ms(l.apply_batch_interval)},
                                     {"retry_attempts_max", n(l.retry_attempts_max)},
                                     {"retry_backoff_initial_ms", ms(l.retry_backoff_initial)},
                                     {"retry_backoff_max_ms", ms(l.retry_backoff_max)},
                                     {"outage_backoff_max_ms", ms(l.outage_backoff_max)},
                                     {"query_timeout_ms", ms(l.query_timeout)},
                                     {"connect_timeout_ms", ms(l.connect_timeout)},
                                     {"read_pool_connections", n(l.read_pool_connections)},
                                     {"get_batch_keys_max", n(l.get_batch_keys_max)},
                                     {"get_batch_runners", n(l.get_batch_runners)}});
    root.insert("limits", toml::table{{"body_bytes_max", n(l.body_bytes_max)},
                                      {"header_bytes_max", n(l.header_bytes_max)},
                                      {"connections_max", n(l.connections_max)},
                                      {"batch_ops_max", n(l.batch_ops_max)},
                                      {"timeout_read_ms", ms(l.timeout_read)},
                                      {"timeout_idle_ms", ms(l.timeout_idle)},
                                      {"ws_in_flight_max", n(l.ws_in_flight_max)},
                                      {"page_limit_max", n(l.page_limit_max)},
                                      {"set_scan_rows_max", n(l.set_scan_rows_max)},
                                      {"applied_wait_max_ms", ms(l.applied_wait_max)},
                                      {"replica_staleness_max_ms", ms(l.replica_staleness_max)},
                                      {"split_copy_rows_per_second_max", n(l.split_copy_rows_per_second_max)},
                                      {"stop_drain_ms", ms(l.stop_drain)},
                                      {"stop_timeout_ms", ms(l.stop_timeout)}});
    toml::array shards;
    for (const auto& sh : c.shards) {
        toml::table t{{"host", sh.host},
                      {"port", n(sh.port)},
                      {"user", sh.user},
                      {"password", secret(sh.password)},
                      {"database", sh.database}};
        if (!sh.replicas.empty()) {
            toml::array replicas;
            for (const auto& rp : sh.replicas) replicas.push_back(toml::table{{"host", rp.host}, {"port", n(rp.port)}});
            t.insert("replicas", std::move(replicas));
        }
        shards.push_back(std::move(t));
    }
    root.insert("shards", std::move(shards));
    if (!c.tokens.empty()) {
        toml::array tokens;
        for (const auto& t : c.tokens) {
            tokens.push_back(toml::table{{"token", secret(t.token)}, {"role", role_name(t.token_role)}});
        }
        root.insert("tokens", std::move(tokens));
    }
    const counter_catalog& cc = c.counters;
    toml::table counters{{"op_ids_keep_hours", n(cc.op_ids_keep.count())},
                         {"future_ms_max", n(cc.future_ms_max)},
                         {"series_points_max", n(cc.series_points_max)},
                         {"groups_max", n(cc.groups_max)}};
    if (!cc.metrics.empty()) {
        toml::array metrics;
        for (const auto& m : cc.metrics) {
            toml::array dims;
            for (const auto& d : m.dimensions) {
                toml::table dt{{"name", d.name}, {"type", d.type == dimension_type::string ? "string" : "int"}};
                if (d.type == dimension_type::string) dt.insert("length", n(d.length_max));
                dims.push_back(std::move(dt));
            }
            toml::array tables;
            for (const auto& t : m.tables) {
                toml::array key;
                for (const int k : t.key) key.push_back(k == counter_key_time ? std::string("time") : m.dimensions.at(static_cast<std::size_t>(k)).name);
                tables.push_back(toml::table{{"name", t.name}, {"granularity", granularity_name(t.granularity)}, {"key", std::move(key)}});
            }
            metrics.push_back(toml::table{{"name", m.name},
                                          {"shard_on", m.dimensions.at(m.shard_on).name},
                                          {"dimensions", std::move(dims)},
                                          {"tables", std::move(tables)}});
        }
        counters.insert("metrics", std::move(metrics));
    }
    root.insert("counters", std::move(counters));
    toml::array cell_tables;
    for (const auto& t : c.cells.tables) cell_tables.push_back(t);
    root.insert("cells", toml::table{{"compress_bytes_min", n(c.cells.compress_bytes_min)}, {"tables", std::move(cell_tables)}});
    toml::array kinds;
    for (const auto& k : c.entities.kinds) kinds.push_back(k);
    root.insert("entities", toml::table{{"compress_bytes_min", n(c.entities.compress_bytes_min)}, {"kinds", std::move(kinds)}});
    std::ostringstream out;
    out << root << "\n";
    return out.str();
}

config_result load_config_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return fmt::format("{}: cannot open config file", path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_config(ss.str(), path);
}

}  // namespace cairn::core
