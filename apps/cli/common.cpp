#include "apps/cli/common.hpp"

#include "client/http_connection.hpp"
#include "core/config.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <iostream>

#include <unistd.h>
#include <thread>
#include <algorithm>

namespace cairn::cli {

std::string env_or(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// flags > environment > config file > defaults.
void resolve_settings(settings& s) {
    std::string url = s.url.empty() ? env_or("CAIRN_URL") : s.url;
    std::string token = s.token.empty() ? env_or("CAIRN_TOKEN") : s.token;
    if (!s.config_path.empty() && (url.empty() || token.empty())) {
        auto cfg = core::load_config_file(s.config_path);
        if (!cfg) throw cli_exit{exit_usage, fmt::format("cairn: bad config {}: {}", s.config_path, cfg.error())};
        if (url.empty()) {
            std::string host = cfg.value().listen_address;
            if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
            if (host == "::") host = "::1";
            if (host.find(':') != std::string::npos) host = "[" + host + "]";
            url = fmt::format("{}://{}:{}", cfg.value().tls.enabled() ? "https" : "http", host, cfg.value().listen_port);
        }
        if (token.empty()) {
            for (const auto& t : cfg.value().tokens) {
                if (t.token_role == core::role::admin) {
                    token = t.token;
                    break;
                }
            }
        }
    }
    if (url.empty()) url = "http://127.0.0.1:8080";
    auto e = parse_url(url);
    if (!e) throw cli_exit{exit_usage, fmt::format("cairn: bad URL \"{}\": expected http://host:port or https://host:port", url)};
    if (s.cacert.empty()) s.cacert = env_or("CAIRN_CACERT");
    if (s.cert.empty()) s.cert = env_or("CAIRN_CERT");
    if (s.key.empty()) s.key = env_or("CAIRN_KEY");
    if (e->https) {
        auto ctx = client::make_tls_context(s.cacert, s.cert, s.key);
        if (auto* why = std::get_if<std::string>(&ctx)) throw cli_exit{exit_usage, "cairn: TLS: " + *why};
        e->tls = std::get<0>(std::move(ctx));
    } else if (!s.cacert.empty() || !s.cert.empty()) {
        throw cli_exit{exit_usage, fmt::format("cairn: --cacert and --cert need an https:// URL, got \"{}\"", url)};
    }
    s.url = url;
    s.token = token;
    s.to = *e;
}

// Percent-encodes a query value.
std::string encode(std::string_view v) {
    std::string out;
    for (unsigned char c : v) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += fmt::format("%{:02X}", c);
        }
    }
    return out;
}

// Calls cairnd; returns the JSON answer of a 2xx, throws cli_exit for everything else. With
// --json, a problem's JSON is printed to stdout too, so that scripts can read it.
json call(const settings& s, std::string_view method, const std::string& target, const std::string& body,
          std::string_view content_type, unsigned busy_retries) {
    auto r = http_call(s.to, method, target, body, s.token, std::chrono::seconds(s.timeout_s), content_type);
    // 503 with Retry-After (journal full, overloaded): wait as told, at most busy_retries times.
    for (unsigned tries = 0; r && r.value().status == 503 && tries < busy_retries; ++tries) {
        std::this_thread::sleep_for(std::chrono::seconds(std::clamp(r.value().retry_after_s, 1u, 30u)));
        r = http_call(s.to, method, target, body, s.token, std::chrono::seconds(s.timeout_s), content_type);
    }
    if (!r) {
        throw cli_exit{exit_unreachable, fmt::format("cairn: no answer from cairnd at {}: {}", s.url, r.error().message())};
    }
    const auto& rep = r.value();
    json parsed = json::parse(rep.body, nullptr, false);
    if (rep.status >= 200 && rep.status < 300) {
        if (parsed.is_discarded()) throw cli_exit{exit_unreachable, "cairn: cairnd answered with something that is not JSON"};
        return parsed;
    }
    if (s.json_out && !parsed.is_discarded()) std::cout << parsed.dump() << "\n";
    std::string what = fmt::format("HTTP {}", rep.status);
    if (parsed.is_object()) {
        what = parsed.value("title", what);
        if (parsed.contains("detail")) what += ": " + parsed["detail"].get<std::string>();
    }
    const int code = rep.status == 401 || rep.status == 403 ? exit_auth : rep.status >= 500 ? exit_unreachable : exit_refused;
    std::string hint;
    if (rep.status == 401) hint = " (set --token, CAIRN_TOKEN or an admin token in --config)";
    throw cli_exit{code, fmt::format("cairn: {} {}: {}{}", method, target, what, hint)};
}

void print_json(const json& j) { std::cout << j.dump(2) << "\n"; }

// A plain text table: the header, then rows, columns padded to their widest cell.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& r : rows) {
        for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            if (i + 1 == cells.size()) {
                out += cells[i];
            } else {
                out += cells[i] + std::string(width[i] - cells[i].size() + 2, ' ');
            }
        }
        std::cout << out << "\n";
    };
    line(header);
    for (const auto& r : rows) line(r);
}

std::string str(const json& v) {
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    return v.dump();
}

std::string cut(std::string s, std::size_t n) {
    if (s.size() <= n) return s;
    return s.substr(0, n - 3) + "...";
}

std::string duration_text(std::uint64_t ms) {
    if (ms < 1000) return fmt::format("{} ms", ms);
    if (ms < 120'000) return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000);
    if (ms < 7'200'000) return fmt::format("{:.1f} min", static_cast<double>(ms) / 60'000);
    if (ms < 172'800'000) return fmt::format("{:.1f} h", static_cast<double>(ms) / 3'600'000);
    return fmt::format("{:.1f} d", static_cast<double>(ms) / 86'400'000);
}

std::string bytes_text(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    return fmt::format("{:.1f} {}", b, units[u]);
}

std::string op_text(const json& op) {
    if (!op.is_object()) return "(undecodable op)";
    const auto f = [&](const char* key) { return op.contains(key) ? str(op[key]) : std::string("?"); };
    const std::string model = op.contains("model") ? str(op["model"]) : std::string("edge");
    if (model == "node") return fmt::format("{} node {} {}", f("graph"), f("node_id"), f("action"));
    if (model == "counter") return fmt::format("counter {} {} delta {}", f("metric"), f("dimensions"), f("delta"));
    if (model == "cell") return fmt::format("cell {} row {} {} ref {}", f("table"), f("row_key"), f("column"), f("ref_key"));
    if (model == "entity") return fmt::format("entity {} {}{}", f("kind"), f("id"), f("deleted") == "yes" ? " deleted" : "");
    if (model == "index") return fmt::format("index {}{}", f("name"), f("dropped") == "yes" ? " dropped" : "");
    return fmt::format("{} {}->{} {} pos {}", f("graph"), f("source_id"), f("destination_id"), f("state"), f("position"));
}

// "90", "90s", "15m", "2h", "1d" as seconds.
std::uint64_t parse_duration_s(const std::string& text, const std::string& flag) {
    std::size_t used = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(text, &used);
    } catch (const std::exception&) {
        throw cli_exit{exit_usage, fmt::format("cairn: {} \"{}\": expected a duration such as 90s, 15m, 2h or 1d", flag, text)};
    }
    const std::string unit = text.substr(used);
    std::uint64_t mult = 0;
    if (unit.empty() || unit == "s") mult = 1;
    if (unit == "m") mult = 60;
    if (unit == "h") mult = 3600;
    if (unit == "d") mult = 86400;
    if (mult == 0) throw cli_exit{exit_usage, fmt::format("cairn: {} \"{}\": the unit must be s, m, h or d", flag, text)};
    return n * mult;
}


progress::progress()
    : tty_(::isatty(STDERR_FILENO) != 0), last_(std::chrono::steady_clock::now() - std::chrono::seconds(10)) {}

void progress::show(const std::string& line) {
    if (tty_) {
        std::cerr << "\r" << line << "\x1b[K" << std::flush;
        drawn_ = true;
    } else if (std::chrono::steady_clock::now() - last_ >= std::chrono::seconds(2)) {
        std::cerr << line << "\n";
        last_ = std::chrono::steady_clock::now();
    }
}

void progress::end() {
    if (drawn_) std::cerr << "\r\x1b[K" << std::flush;
    drawn_ = false;
}

std::string bar(double frac) {
    constexpr int width = 30;
    const int filled = static_cast<int>(std::clamp(frac, 0.0, 1.0) * width);
    return std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '.');
}

}  // namespace cairn::cli
