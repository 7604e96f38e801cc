// What every `cairn` command shares: settings (flags > environment > config file > defaults),
// exit codes, calls to cairnd's admin API, and plain-text output helpers. Blocking; for the CLI's
// one thread.
#pragma once

#include "apps/cli/admin_client.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::cli {

using json = nlohmann::json;

constexpr int exit_ok = 0;
constexpr int exit_refused = 1;      // cairnd answered with a problem (not found, invalid input, ...)
constexpr int exit_usage = 2;        // bad arguments or settings
constexpr int exit_unreachable = 3;  // no answer, or a 5xx answer (cairnd or its journal is in trouble)
constexpr int exit_not_confirmed = 4;
constexpr int exit_auth = 5;         // 401 or 403: no token, a wrong token, or a token below admin
constexpr int exit_check_failed = 6;  // journal check found problems, or an export file does not verify
constexpr int exit_index_differs = 7;  // index verify found missing or stale rows and did not repair them; reshard verify a difference

constexpr const char* exit_codes_text =
    "Exit codes: 0 done; 1 cairnd refused the request (not found, invalid input); 2 bad arguments or settings;\n"
    "3 cairnd did not answer or answered 5xx; 4 a drop was not confirmed; 5 not authorized (401/403);\n"
    "6 journal check found problems, or an export file is damaged; 7 index verify or reshard verify found differences.";

struct settings {
    std::string url;
    std::string token;
    std::string cacert;   // https: the CA file that verifies cairnd (empty: the system's CAs)
    std::string cert;     // https: a client certificate, when cairnd asks for one
    std::string key;      // its key (empty: in the certificate's file)
    std::string config_path;
    bool json_out = false;
    unsigned timeout_s = 30;
    bool timeout_set = false;  // --timeout was given (commands that scan a shard wait longer by default)
    endpoint to;
};

// A failure that ends the command with an exit code; its message goes to stderr.
struct cli_exit {
    int code;
    std::string message;
};

// The environment variable name, or empty.
std::string env_or(const char* name);

// Fills in url, token and to from the environment and the config file; throws cli_exit.
void resolve_settings(settings& s);

// Percent-encodes a query value.
std::string encode(std::string_view v);

// Calls cairnd; returns the JSON answer of a 2xx, throws cli_exit for everything else. With
// --json, a problem's JSON is printed to stdout too, so that scripts can read it. A 503 with
// Retry-After (journal full, overloaded) is retried after the time it names, busy_retries times.
json call(const settings& s, std::string_view method, const std::string& target, const std::string& body = {},
          std::string_view content_type = "application/json", unsigned busy_retries = 0);

void print_json(const json& j);
// A plain text table: the header, then rows, columns padded to their widest cell.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

std::string str(const json& v);  // a JSON value as table text ("-" for null, yes/no)
std::string cut(std::string s, std::size_t n);
std::string duration_text(std::uint64_t ms);
std::string bytes_text(double b);
std::string op_text(const json& op);

// A progress line on stderr: redrawn in place on a terminal, a plain line every 2 s otherwise.
class progress {
public:
    progress();
    void show(const std::string& line);
    void end();  // clears a redrawn line

private:
    bool tty_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point last_;
};

// A bar of 30 characters, '#' for the done fraction (clamped to 0..1), '.' for the rest.
std::string bar(double frac);

// "90", "90s", "15m", "2h", "1d" as seconds; throws cli_exit naming flag.
std::uint64_t parse_duration_s(const std::string& text, const std::string& flag);

}  // namespace cairn::cli
