// cairn: the operator's command line (issue 7). Each subcommand is one or a few calls to the
// admin API of a running cairnd (docs/api.md, "Admin"), printed as a table or, with --json, as
// the API's JSON. Settings: flags > environment (CAIRN_URL, CAIRN_TOKEN) > --config (cairnd's
// TOML) > defaults. Exit codes are listed in exit_* below and in docs/cli.md.
#include "apps/cli/common.hpp"
#include "apps/cli/replay_cmds.hpp"
#include "apps/cli/reshard_cmds.hpp"
#include "core/config.hpp"
#include "journal/inspect.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace cairn;
using namespace cairn::cli;

// v as one word of a POSIX shell command: as it is when it is plain, else in single quotes.
std::string shell_word(const std::string& v) {
    if (!v.empty() && v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,:/") == std::string::npos) {
        return v;
    }
    std::string out = "'";
    for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// The filters shared by dead ls, reinject and drop.
struct dead_filter_args {
    std::optional<unsigned> shard;
    std::string model;
    std::string error;
    std::string older_than;
    std::string newer_than;

    void add_to(CLI::App* sub, bool with_shard) {
        if (with_shard) sub->add_option("--shard", shard, "only this shard's dead letters");
        sub->add_option("--model", model, "only ops of this model (edge)");
        sub->add_option("--error", error, "only those whose error history contains this text");
        sub->add_option("--older-than", older_than, "only those that died at least this long ago (90s, 15m, 2h, 1d)");
        sub->add_option("--newer-than", newer_than, "only those that died at most this long ago");
    }
    bool any() const { return shard || !model.empty() || !error.empty() || !older_than.empty() || !newer_than.empty(); }
    // The filters as command-line flags (each with a leading space), quoted for a POSIX shell.
    std::string flags() const {
        std::string out;
        auto add = [&](std::string_view flag, const std::string& v) { out += fmt::format(" {} {}", flag, shell_word(v)); };
        if (shard) add("--shard", std::to_string(*shard));
        if (!model.empty()) add("--model", model);
        if (!error.empty()) add("--error", error);
        if (!older_than.empty()) add("--older-than", older_than);
        if (!newer_than.empty()) add("--newer-than", newer_than);
        return out;
    }
    std::string query() const {
        std::string q;
        auto add = [&](std::string_view k, const std::string& v) { q += fmt::format("{}{}={}", q.empty() ? "" : "&", k, encode(v)); };
        if (shard) add("shard", std::to_string(*shard));
        if (!model.empty()) add("model", model);
        if (!error.empty()) add("error", error);
        if (!older_than.empty()) add("older_than_s", std::to_string(parse_duration_s(older_than, "--older-than")));
        if (!newer_than.empty()) add("newer_than_s", std::to_string(parse_duration_s(newer_than, "--newer-than")));
        return q;
    }
    void add_to_json(json& j) const {
        if (shard) j["shard"] = *shard;
        if (!model.empty()) j["model"] = model;
        if (!error.empty()) j["error"] = error;
        if (!older_than.empty()) j["older_than_s"] = parse_duration_s(older_than, "--older-than");
        if (!newer_than.empty()) j["newer_than_s"] = parse_duration_s(newer_than, "--newer-than");
    }
    std::string describe() const {
        std::vector<std::string> parts;
        if (shard) parts.push_back(fmt::format("shard {}", *shard));
        if (!model.empty()) parts.push_back("model " + model);
        if (!error.empty()) parts.push_back(fmt::format("error containing \"{}\"", error));
        if (!older_than.empty()) parts.push_back("older than " + older_than);
        if (!newer_than.empty()) parts.push_back("newer than " + newer_than);
        std::string out;
        for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
        return out;
    }
};

// ---- commands -------------------------------------------------------------------------------

int cmd_status(const settings& s) {
    const json st = call(s, "GET", "/v1/admin/status");
    if (s.json_out) {
        print_json(st);
        return exit_ok;
    }
    const json& j = st["journal"];
    std::cout << fmt::format("cairnd {}  ready: {}\n", s.url, str(st["ready"]));
    std::cout << fmt::format("journal  healthy: {}  last seq {}  ops kept {}  map {} of {} ({:.1f}%)\n", str(j["healthy"]),
                             str(j["last_seq"]), str(j["ops_kept"]), bytes_text(j["map_bytes_used"].get<double>()),
                             bytes_text(j["map_bytes_max"].get<double>()), j["map_use"].get<double>() * 100);
    std::cout << fmt::format("         error queue {}  dead letters {}  oldest unapplied op: {}\n\n", str(j["error_queue"]),
                             str(j["dead_letters"]),
                             j["oldest_unapplied"].is_null()
                                 ? std::string("none (every shard is caught up)")
                                 : fmt::format("seq {}, {} old", str(j["oldest_unapplied"]["seq"]),
                                               duration_text(j["oldest_unapplied"]["age_ms"].get<std::uint64_t>())));
    std::vector<std::vector<std::string>> rows;
    for (const auto& sh : st["shards"]) {
        rows.push_back({str(sh["shard"]), str(sh["up"]), str(sh["paused"]), str(sh["applied_seq"]), str(sh["lag_ops"]),
                        str(sh["error_queue"]),
                        fmt::format("{} ({:.1f}%)", str(sh["failed_last_minute"]), sh["error_rate"].get<double>() * 100)});
    }
    print_table({"SHARD", "UP", "PAUSED", "APPLIED", "LAG", "ERROR QUEUE", "FAILED/MIN"}, rows);
    // Replicas ([[shards.replicas]]): whether each serves reads now, and how old its data was.
    rows.clear();
    for (const auto& sh : st["shards"]) {
        for (const auto& r : sh.value("replicas", json::array())) {
            rows.push_back({str(sh["shard"]), str(r["replica"]), r["serving"].get<bool>() ? "yes" : "no",
                            r["lag_ms"].is_null() ? "unknown" : duration_text(r["lag_ms"].get<std::uint64_t>()),
                            r["probed_ms_ago"].is_null() ? "never" : duration_text(r["probed_ms_ago"].get<std::uint64_t>()) + " ago",
                            str(sh["replica_reads"])});
        }
    }
    if (!rows.empty()) {
        std::cout << "\n";
        print_table({"SHARD", "REPLICA", "SERVING", "BEHIND", "MEASURED", "SHARD'S REPLICA READS"}, rows);
    }
    // Every gateway on these shards, and what each holds that the shards lack (docs/operations.md).
    if (st.contains("gateways")) {
        std::cout << "\n";
        if (st["gateways"].is_null()) {
            std::cout << fmt::format("gateways: unknown ({})\n", st.value("gateways_error", std::string("no reason given")));
        } else {
            rows.clear();
            for (const auto& g : st["gateways"]) {
                rows.push_back({str(g["node_id"]) + (g["self"].get<bool>() ? " (this)" : ""), str(g["holder"]),
                                g["active"].get<bool>() ? "running" : g["released"].get<bool>() ? "stopped" : "silent",
                                duration_text(g["renewed_ms_ago"].get<std::uint64_t>()) + " ago", str(g["last_seq"]),
                                str(g["applied_through"]), str(g["unapplied_ops"])});
            }
            print_table({"NODE", "HOLDER", "STATE", "RENEWED", "LAST SEQ", "APPLIED", "UNAPPLIED"}, rows);
        }
    }
    return exit_ok;
}

int cmd_dead_ls(const settings& s, const dead_filter_args& f, unsigned limit, const std::string& cursor) {
    std::string q = f.query();
    q += fmt::format("{}limit={}", q.empty() ? "" : "&", limit);
    if (!cursor.empty()) q += "&cursor=" + encode(cursor);
    const json page = call(s, "GET", "/v1/admin/dead?" + q);
    if (s.json_out) {
        print_json(page);
        return exit_ok;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : page["dead"]) {
        rows.push_back({str(d["shard"]), str(d["seq"]), str(d["attempts"]), duration_text(d["age_s"].get<std::uint64_t>() * 1000),
                        op_text(d["op"]), cut(str(d["last_error"]), 70)});
    }
    if (rows.empty()) {
        std::cout << "no dead letters" << (f.any() ? " match" : "") << "\n";
    } else {
        print_table({"SHARD", "SEQ", "ATTEMPTS", "DIED", "OP", "LAST ERROR"}, rows);
    }
    if (!page["next_cursor"].is_null()) {
        // The next page's command, with this one's filters, as it can be run.
        std::cout << fmt::format("\nmore: cairn dead ls{}{} --cursor {}\n", f.flags(),
                                 limit != 100 ? fmt::format(" --limit {}", limit) : std::string(),
                                 page["next_cursor"].get<std::string>());
    }
    return exit_ok;
}

void print_dead(const json& d) {
    std::cout << fmt::format("dead letter: shard {} seq {}  op id {}\n", str(d["shard"]), str(d["seq"]), str(d["op_id"]));
    std::cout << fmt::format("attempts {}  first failed {} ms  died {} ms ({} ago)\n", str(d["attempts"]),
                             str(d["first_failed_ms"]), str(d["died_ms"]),
                             duration_text(d["age_s"].get<std::uint64_t>() * 1000));
    std::cout << "op (edit with: cairn dead edit " << str(d["shard"]) << " " << str(d["seq"]) << "):\n"
              << d["op"].dump(2) << "\n";
    std::cout << "error history, oldest first:\n";
    int i = 1;
    for (const auto& e : d["errors"]) std::cout << fmt::format("  {:2}. {}\n", i++, e.get<std::string>());
}

int cmd_dead_show(const settings& s, unsigned shard, std::uint64_t seq) {
    const json d = call(s, "GET", fmt::format("/v1/admin/dead/{}/{}", shard, seq));
    if (s.json_out) {
        print_json(d);
    } else {
        print_dead(d);
    }
    return exit_ok;
}

std::string read_file(const std::string& path) {
    if (path == "-") {
        std::stringstream ss;
        ss << std::cin.rdbuf();
        return ss.str();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cli_exit{exit_usage, fmt::format("cairn: cannot read {}", path)};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Opens the op in $VISUAL or $EDITOR (default vi); returns the edited text, or nothing if unchanged.
std::optional<std::string> edit_in_editor(const json& op) {
    std::string editor = env_or("VISUAL");
    if (editor.empty()) editor = env_or("EDITOR");
    if (editor.empty()) editor = "vi";
    std::string path = (std::filesystem::temp_directory_path() / "cairn-dead-op-XXXXXX.json").string();
    const int fd = ::mkstemps(path.data(), 5);
    if (fd < 0) throw cli_exit{exit_usage, "cairn: cannot create a temporary file for the editor"};
    const std::string before = op.dump(2) + "\n";
    const auto written = ::write(fd, before.data(), before.size());
    ::close(fd);
    if (written != static_cast<ssize_t>(before.size())) throw cli_exit{exit_usage, "cairn: cannot write the temporary file"};
    const int rc = std::system(fmt::format("{} '{}'", editor, path).c_str());
    std::string after = read_file(path);
    std::filesystem::remove(path);
    if (rc != 0) throw cli_exit{exit_usage, fmt::format("cairn: the editor ({}) failed; nothing was changed", editor)};
    if (after == before) return std::nullopt;
    return after;
}

int cmd_dead_edit(const settings& s, unsigned shard, std::uint64_t seq, const std::string& op_text,
                  const std::string& op_file) {
    std::string body;
    if (!op_text.empty()) {
        body = op_text;
    } else if (!op_file.empty()) {
        body = read_file(op_file);
    } else {
        if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
            throw cli_exit{exit_usage, "cairn: no terminal for an editor; give the new op with --op JSON or --op-file FILE"};
        }
        const json d = call(s, "GET", fmt::format("/v1/admin/dead/{}/{}", shard, seq));
        auto edited = edit_in_editor(d["op"]);
        if (!edited) {
            std::cerr << "cairn: the op is unchanged; nothing was sent\n";
            return exit_ok;
        }
        body = *edited;
    }
    const json d = call(s, "PUT", fmt::format("/v1/admin/dead/{}/{}/op", shard, seq), body);
    if (s.json_out) {
        print_json(d);
        return exit_ok;
    }
    if (d.value("routed", "") == "new_write") {
        // Its rows live on several shards: the gateway journaled it again, so that every shard applies it.
        std::cout << "edited and journaled again as seq " << d["seq"].get<std::uint64_t>()
                  << " (its rows live on shards " << d["shards"].dump()
                  << "); the dead letter is gone. Follow it with: cairn trace " << d["seq"].get<std::uint64_t>()
                  << "\n\n"
                  << d["op"].dump(2) << "\n";
        return exit_ok;
    }
    std::cout << "edited; re-inject it with: cairn dead reinject " << shard << " " << seq << "\n\n";
    print_dead(d);
    return exit_ok;
}

int cmd_dead_reinject(const settings& s, const std::vector<std::uint64_t>& key, bool all, const dead_filter_args& f,
                      bool keep_attempts) {
    json body{{"reset_attempts", !keep_attempts}};
    if (key.size() == 2) {
        if (all || f.any()) throw cli_exit{exit_usage, "cairn: give SHARD SEQ, filters or --all, not several"};
        body["shard"] = key[0];
        body["seq"] = key[1];
    } else if (!key.empty()) {
        throw cli_exit{exit_usage, "cairn: give both SHARD and SEQ"};
    } else if (all) {
        if (f.any()) throw cli_exit{exit_usage, "cairn: --all cannot be combined with filters"};
        body["all"] = true;
    } else if (f.any()) {
        f.add_to_json(body);
    } else {
        throw cli_exit{exit_usage, "cairn: say what to re-inject: SHARD SEQ, filters (--shard, --error, ...) or --all"};
    }
    const json r = call(s, "POST", "/v1/admin/dead/reinject", body.dump());
    if (s.json_out) {
        print_json(r);
        return exit_ok;
    }
    std::cout << fmt::format("re-injected {} dead letter{} into the error queue, due now; attempts {}\n",
                             str(r["reinjected"]), r["reinjected"] == 1 ? "" : "s",
                             r["attempts_reset"].get<bool>() ? "restart at 0"
                                                             : "kept (one more failure makes a letter dead again)");
    if (const auto& again = r["journaled_again"]; again.is_array() && !again.empty()) {
        std::cout << fmt::format("{} of them carried no rows for indexes created since they were written, so they "
                                 "were journaled again with those rows:\n",
                                 again.size());
        for (const auto& l : again) {
            std::cout << fmt::format("  shard {} seq {} -> seq {}\n", str(l["shard"]), str(l["seq"]), str(l["new_seq"]));
        }
    }
    if (key.size() == 2) {
        std::cout << fmt::format("follow it with: cairn trace {}\n", key[1]);
    } else {
        std::cout << "follow them with: cairn errors ls (and cairn trace with the seq of one)\n";
    }
    return exit_ok;
}

int cmd_dead_drop(const settings& s, const std::vector<std::uint64_t>& key, bool all, const dead_filter_args& f, bool yes) {
    std::string target;
    std::string what;
    if (key.size() == 2) {
        if (all || f.any()) throw cli_exit{exit_usage, "cairn: give SHARD SEQ, filters or --all, not several"};
        target = fmt::format("/v1/admin/dead/{}/{}", key[0], key[1]);
        what = fmt::format("the dead letter of seq {} on shard {}", key[1], key[0]);
    } else if (!key.empty()) {
        throw cli_exit{exit_usage, "cairn: give both SHARD and SEQ"};
    } else if (all) {
        if (f.any()) throw cli_exit{exit_usage, "cairn: --all cannot be combined with filters"};
        target = "/v1/admin/dead?all=true";
        what = "EVERY dead letter";
    } else if (f.any()) {
        target = "/v1/admin/dead?" + f.query();
        what = "every dead letter with " + f.describe();
    } else {
        throw cli_exit{exit_usage, "cairn: say what to drop: SHARD SEQ, filters (--shard, --error, ...) or --all"};
    }
    if (!yes) {
        if (!::isatty(STDIN_FILENO)) {
            throw cli_exit{exit_not_confirmed, "cairn: dropping needs confirmation; there is no terminal to ask, so pass --yes"};
        }
        std::cerr << "Drop " << what << "? Its writes are lost for good. [y/N] " << std::flush;
        std::string answer;
        std::getline(std::cin, answer);
        if (answer != "y" && answer != "Y" && answer != "yes") throw cli_exit{exit_not_confirmed, "cairn: not dropped"};
    }
    const json r = call(s, "DELETE", target);
    if (s.json_out) {
        print_json(r);
    } else {
        std::cout << fmt::format("dropped {} dead letter{}\n", str(r["dropped"]), r["dropped"] == 1 ? "" : "s");
    }
    return exit_ok;
}

int cmd_errors_ls(const settings& s, std::optional<unsigned> shard, unsigned limit) {
    std::string q = fmt::format("limit={}", limit);
    if (shard) q += fmt::format("&shard={}", *shard);
    const json r = call(s, "GET", "/v1/admin/errors?" + q);
    if (s.json_out) {
        print_json(r);
        return exit_ok;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : r["errors"]) {
        rows.push_back({str(t["shard"]), str(t["seq"]), str(t["attempts"]), duration_text(t["due_in_ms"].get<std::uint64_t>()),
                        op_text(t["op"]), cut(str(t["last_error"]), 70)});
    }
    if (rows.empty()) {
        std::cout << "the error queue is empty\n";
    } else {
        print_table({"SHARD", "SEQ", "ATTEMPTS", "DUE IN", "OP", "LAST ERROR"}, rows);
    }
    if (r["truncated"].get<bool>()) std::cout << fmt::format("\n(showing {} of {}; raise --limit)\n", rows.size(), str(r["total"]));
    return exit_ok;
}

int cmd_errors_retry_now(const settings& s, std::optional<unsigned> shard, std::optional<std::uint64_t> seq) {
    json body = json::object();
    if (seq && !shard) throw cli_exit{exit_usage, "cairn: --seq needs --shard"};
    if (shard) body["shard"] = *shard;
    if (seq) body["seq"] = *seq;
    if (!shard) body["all"] = true;
    const json r = call(s, "POST", "/v1/admin/errors/retry-now", body.dump());
    if (s.json_out) {
        print_json(r);
    } else {
        std::cout << fmt::format("{} task{} made due now ({} already due)\n", str(r["rescheduled"]),
                                 r["rescheduled"] == 1 ? "" : "s", str(r["due_already"]));
    }
    return exit_ok;
}

int cmd_apply(const settings& s, bool pause, std::optional<unsigned> shard, bool all) {
    if (shard.has_value() == all) throw cli_exit{exit_usage, "cairn: give either --shard N or --all"};
    json body = json::object();
    if (shard) body["shard"] = *shard;
    if (all) body["all"] = true;
    const json r = call(s, "POST", pause ? "/v1/admin/apply/pause" : "/v1/admin/apply/resume", body.dump());
    if (s.json_out) {
        print_json(r);
        return exit_ok;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& sh : r["shards"]) rows.push_back({str(sh["shard"]), str(sh["paused"]), str(sh["applied_seq"])});
    print_table({"SHARD", "PAUSED", "APPLIED"}, rows);
    if (pause) {
        // The hint is the command that undoes this one, as it can be run.
        std::cout << "\nwrites are still acknowledged and wait in the journal; resume with: cairn apply resume "
                  << (all ? std::string("--all") : "--shard " + std::to_string(*shard)) << "\n";
    }
    return exit_ok;
}

int cmd_trace(const settings& s, std::uint64_t seq) {
    const json r = call(s, "GET", fmt::format("/v1/admin/trace/{}", seq));
    if (s.json_out) {
        print_json(r);
        return exit_ok;
    }
    std::cout << fmt::format("seq {}: {}{}\n", seq, str(r["state"]),
                             r["in_journal"].get<bool>() ? "" : " (retired from the journal after every shard applied it)");
    if (!r["op"].is_null()) std::cout << fmt::format("op {}  id {}\n", op_text(r["op"]), str(r["op_id"]));
    std::vector<std::vector<std::string>> rows;
    for (const auto& sh : r["shards"]) {
        std::string detail;
        if (sh.contains("last_error")) {
            detail = fmt::format("attempts {}: {}", str(sh["attempts"]), cut(str(sh["last_error"]), 70));
        }
        if (sh.contains("due_in_ms")) detail += fmt::format(" (next try in {})", duration_text(sh["due_in_ms"].get<std::uint64_t>()));
        if (sh.contains("replaced_by")) {
            detail += fmt::format("edited and journaled again as seq {}", str(sh["replaced_by"]));
        } else if (sh.contains("edited_ms")) {
            detail += detail.empty() ? "edited" : " (edited)";
        }
        rows.push_back({str(sh["shard"]), str(sh["state"]), str(sh["cursor"]), detail});
    }
    print_table({"SHARD", "STATE", "CURSOR", "DETAIL"}, rows);
    if (r.contains("journaled_op")) std::cout << fmt::format("journaled as {}\n", op_text(r["journaled_op"]));
    if (r.contains("replaced_by")) std::cout << fmt::format("follow it with: cairn trace {}\n", str(r["replaced_by"]));
    return exit_ok;
}

// ---- journal commands: read a journal directory directly (no cairnd needed) ----------------


json inspection_json(const std::string& dir, const journal::inspection& in) {
    json j{{"dir", dir},
           {"node_id", in.node_id},
           {"format_version", in.format_version},
           {"ops", in.ops_count},
           {"first_seq", in.first_seq},
           {"last_seq", in.last_seq},
           {"first_time_ms", in.first_time_ms},
           {"last_time_ms", in.last_time_ms},
           {"ops_bytes", in.ops_bytes},
           {"errors", in.error_count},
           {"dead", in.dead_count},
           {"idempotency_keys", in.idem_count},
           {"map_bytes_used", in.map_bytes_used},
           {"map_bytes_max", in.map_bytes_max},
           {"file_bytes", in.file_bytes}};
    json cursors = json::array();
    for (const auto& [shard, seq] : in.cursors) {
        cursors.push_back({{"shard", shard}, {"applied_seq", seq}, {"lag", in.last_seq > seq ? in.last_seq - seq : 0}});
    }
    j["cursors"] = cursors;
    if (in.checked) {
        json problems = json::array();
        for (const auto& p : in.problems) problems.push_back({{"where", p.where}, {"seq", p.seq}, {"what", p.what}});
        j["ok"] = in.problems.empty();
        j["problems"] = problems;
    }
    return j;
}

journal::inspection inspect_dir(const std::string& dir, bool check) {
    auto r = journal::inspect(dir, check);
    if (r) return std::move(r.value());
    if (r.error() == core::errc::not_found) {
        throw cli_exit{exit_usage, fmt::format("cairn: {} is not a journal directory (no data.mdb)", dir)};
    }
    const int code = check ? exit_check_failed : exit_refused;
    throw cli_exit{code, fmt::format("cairn: cannot read the journal in {}: {}", dir, r.error().message())};
}

int cmd_journal_stat(const settings& s, const std::string& dir) {
    const auto in = inspect_dir(dir, false);
    if (s.json_out) {
        print_json(inspection_json(dir, in));
        return exit_ok;
    }
    fmt::print("journal {} (node id {}, format {})\n", dir, in.node_id, in.format_version);
    fmt::print("ops       {} (seq {}..{}, {} of records)\n", in.ops_count, in.first_seq, in.last_seq, bytes_text(static_cast<double>(in.ops_bytes)));
    if (in.ops_count > 0) {
        fmt::print("retained  {} (oldest op appended at {} ms, newest at {} ms)\n",
                   duration_text(in.last_time_ms - in.first_time_ms), in.first_time_ms, in.last_time_ms);
    }
    fmt::print("map       {} used of {}, data.mdb {}\n", bytes_text(static_cast<double>(in.map_bytes_used)),
               bytes_text(static_cast<double>(in.map_bytes_max)), bytes_text(static_cast<double>(in.file_bytes)));
    fmt::print("queues    {} error tasks, {} dead letters, {} idempotency keys\n", in.error_count, in.dead_count, in.idem_count);
    std::vector<std::vector<std::string>> rows;
    for (const auto& [shard, seq] : in.cursors) {
        rows.push_back({std::to_string(shard), std::to_string(seq), std::to_string(in.last_seq > seq ? in.last_seq - seq : 0)});
    }
    print_table({"SHARD", "APPLIED", "LAG"}, rows);
    return exit_ok;
}

int cmd_journal_check(const settings& s, const std::string& dir) {
    const auto in = inspect_dir(dir, true);
    if (s.json_out) {
        print_json(inspection_json(dir, in));
    } else if (in.problems.empty()) {
        fmt::print("journal {}: ok ({} ops, {} error tasks, {} dead letters decoded)\n", dir, in.ops_count, in.error_count, in.dead_count);
    } else {
        for (const auto& p : in.problems) fmt::print("{} seq {}: {}\n", p.where, p.seq, p.what);
        fmt::print("journal {}: {} problem(s)\n", dir, in.problems.size());
    }
    return in.problems.empty() ? exit_ok : exit_check_failed;
}

// ---- index ------------------------------------------------------------------------------------

int cmd_index_ls(const settings& s) {
    const json r = call(s, "GET", "/v1/indexes");
    if (s.json_out) {
        print_json(r);
        return exit_ok;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : r["indexes"]) {
        std::string props;
        for (const auto& p : d["properties"]) {
            props += (props.empty() ? "" : ", ") + p["name"].get<std::string>() + ":" + p["type"].get<std::string>();
            if (p.contains("length")) props += ":" + str(p["length"]);
        }
        // An entity kind, or a cell table's column as table/column.
        const std::string reads = d.contains("column") ? str(d["table"]) + "/" + str(d["column"]) : str(d["kind"]);
        rows.push_back({str(d["name"]), reads, props, str(d["shard_on"])});
    }
    if (rows.empty()) {
        std::cout << "no indexes\n";
    } else {
        print_table({"NAME", "READS", "PROPERTIES", "SHARD ON"}, rows);
    }
    return exit_ok;
}

// One progress line: a bar, rows, rate and time left.
std::string progress_line(const json& p) {
    const double total = static_cast<double>(p["rows_total"].get<std::uint64_t>());
    const double done = static_cast<double>(p["rows_scanned"].get<std::uint64_t>());
    const double frac = total > 0 ? std::min(1.0, done / total) : (p["state"] == "done" ? 1.0 : 0.0);
    std::string eta = p["eta_s"].is_null() ? std::string("?") : duration_text(static_cast<std::uint64_t>(p["eta_s"].get<double>() * 1000));
    return fmt::format("{} [{}] {:3.0f}% {}/{} rows ({}), {:.0f} rows/s, {} left, +{} -{}", str(p["index"]), bar(frac),
                       frac * 100, p["rows_scanned"].get<std::uint64_t>(), p["rows_total"].get<std::uint64_t>(), str(p["phase"]),
                       p["rate_rows_per_s"].get<double>(), eta, str(p["rows_added"]), str(p["rows_removed"]));
}

// Shows a cleaner run (run: "clean") or a verify run ("verify") until it ends (watch) or once: a
// bar redrawn on a terminal, plain lines every 2 s otherwise, on stderr; the final state, and a
// verify run's report, on stdout (JSON with --json).
int show_cleaner(const settings& s, const std::string& name, bool watch, std::string_view run = "clean") {
    progress bar_line;
    const auto path = fmt::format("/v1/indexes/{}/{}", encode(name), run);
    json p = call(s, "GET", path);
    while (watch && p["state"] == "running") {
        bar_line.show(progress_line(p));
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        p = call(s, "GET", path);
    }
    bar_line.end();
    const bool verify = p.contains("mode");
    if (s.json_out) {
        print_json(p);
    } else {
        std::cout << progress_line(p) << "\n" << fmt::format("state: {}{}\n", str(p["state"]),
                                                           p["error"].is_null() ? std::string() : " (" + str(p["error"]) + ")");
        if (verify) {
            const bool repaired = p["mode"] == "repair";
            std::cout << fmt::format("missing rows: {}{}, stale rows: {}{}\n", str(p["missing"]), repaired ? " (written)" : "",
                                     str(p["stale"]), repaired ? " (tombstoned)" : "");
            std::vector<std::vector<std::string>> rows;
            for (const auto& sh : p["shards"]) rows.push_back({str(sh["shard"]), str(sh["missing"]), str(sh["stale"])});
            print_table({"SHARD", "MISSING", "STALE"}, rows);
            for (const auto& e : p["examples"]["missing"]) std::cout << "  missing: " << str(e) << "\n";
            for (const auto& e : p["examples"]["stale"]) std::cout << "  stale: " << str(e) << "\n";
        }
    }
    if (p["state"] == "failed") return exit_refused;
    if (verify && p["state"] == "done" && p["mode"] == "verify" &&
        (p["missing"].get<std::uint64_t>() > 0 || p["stale"].get<std::uint64_t>() > 0)) {
        return exit_index_differs;
    }
    return exit_ok;
}

// kind: an entity index; table and column: a cell index (CLI11 allows one or the other).
int cmd_index_add(const settings& s, const std::string& name, const std::string& kind, const std::string& table,
                  const std::string& column, const std::vector<std::string>& properties, const std::string& shard_on,
                  bool no_wait) {
    json def{{"name", name}, {"properties", json::array()}};
    if (table.empty()) {
        def["kind"] = kind;
    } else {
        def["table"] = table;
        def["column"] = column;
    }
    for (const auto& p : properties) {
        // name:type[:length]
        const auto a = p.find(':');
        if (a == std::string::npos) {
            throw cli_exit{exit_usage, fmt::format("cairn: --property \"{}\": expected name:type or name:string:length", p)};
        }
        const auto b = p.find(':', a + 1);
        json prop{{"name", p.substr(0, a)}, {"type", p.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1)}};
        if (b != std::string::npos) {
            try {
                prop["length"] = std::stoi(p.substr(b + 1));
            } catch (const std::exception&) {
                throw cli_exit{exit_usage, fmt::format("cairn: --property \"{}\": the length must be a number", p)};
            }
        }
        def["properties"].push_back(prop);
    }
    if (!shard_on.empty()) def["shard_on"] = shard_on;
    const json created = call(s, "POST", "/v1/indexes", def.dump());
    if (no_wait) {
        if (s.json_out) print_json(created);
        else std::cout << "created index " << name << "; its back-fill runs: cairn index status " << name << " --watch\n";
        return exit_ok;
    }
    if (!s.json_out) std::cout << "created index " << name << "; back-filling:\n";
    return show_cleaner(s, name, true);
}

int cmd_index_drop(const settings& s, const std::string& name, bool yes) {
    if (!yes) {
        if (!::isatty(STDIN_FILENO)) {
            throw cli_exit{exit_not_confirmed, "cairn: dropping needs confirmation; there is no terminal to ask, so pass --yes"};
        }
        std::cerr << "Drop index " << name << " and its table on every shard? [y/N] " << std::flush;
        std::string answer;
        std::getline(std::cin, answer);
        if (answer != "y" && answer != "Y" && answer != "yes") throw cli_exit{exit_not_confirmed, "cairn: not dropped"};
    }
    const json r = call(s, "DELETE", "/v1/indexes/" + encode(name));
    if (s.json_out) print_json(r);
    else std::cout << "dropped index " << name << "\n";
    return exit_ok;
}

int cmd_index_verify(const settings& s, const std::string& name, std::optional<unsigned> rate, bool repair, bool no_wait) {
    std::string q = repair ? "?repair=true" : "";
    if (rate) q += fmt::format("{}rate={}", q.empty() ? "?" : "&", *rate);
    call(s, "POST", fmt::format("/v1/indexes/{}/verify{}", encode(name), q));
    return show_cleaner(s, name, !no_wait, "verify");
}

int cmd_index_clean(const settings& s, const std::string& name, std::optional<unsigned> rate, bool no_wait) {
    const std::string q = rate ? fmt::format("?rate={}", *rate) : std::string();
    call(s, "POST", fmt::format("/v1/indexes/{}/clean{}", encode(name), q));
    return show_cleaner(s, name, !no_wait);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "cairn: the operator's tool for a running cairnd (its admin API; see docs/cli.md).\n\n"
        "Examples:\n"
        "  cairn status                          shards, journal, queues and readiness on one screen\n"
        "  cairn dead ls --shard 1               dead letters of shard 1\n"
        "  cairn dead show 1 42                  one dead letter: its op as JSON and its error history\n"
        "  cairn dead edit 1 42                  fix its op in $EDITOR, then: cairn dead reinject 1 42\n"
        "  cairn apply pause --all               stop applying; writes are still acknowledged\n"
        "  cairn trace 42                        where is write 42?\n"
        "  cairn journal stat --dir DIR          a journal directory read directly (cairnd running or dead)\n"
        "  cairn replay --since 2h --shard 1     re-inject two hours of writes to shard 1 (idempotent)\n"
        "  cairn journal export --dir DIR --out F.cjx   then on another gateway: cairn journal import F.cjx\n"
        "  cairn index add entries_by_user --kind entry --property user_id:id   an index, back-filled\n"
        "  cairn reshard plan --shard 0 --to 10.0.0.7:3306   what splitting shard 0 would move\n"
        "  CAIRN_URL=http://10.0.0.5:8080 CAIRN_TOKEN=... cairn status --json\n\n"
        "Settings: flags > environment (CAIRN_URL, CAIRN_TOKEN) > --config (cairnd's TOML: listen address and\n"
        "port, the first admin token) > defaults (http://127.0.0.1:8080, no token).\n"};
    app.footer(exit_codes_text);
    app.require_subcommand(1);
    settings s;
    app.add_option("--url", s.url, "cairnd's address, http://host:port or https://host:port (env CAIRN_URL)");
    app.add_option("--cacert", s.cacert, "https: the CA file that verifies cairnd's certificate; default the "
                                         "system's CAs (env CAIRN_CACERT)")
        ->check(CLI::ExistingFile);
    app.add_option("--cert", s.cert, "https: a client certificate (PEM), when cairnd asks for one (env CAIRN_CERT)")
        ->check(CLI::ExistingFile);
    app.add_option("--key", s.key, "https: the client certificate's key (PEM; default: in --cert's file) (env CAIRN_KEY)")
        ->check(CLI::ExistingFile);
    app.add_option("--token", s.token, "an admin bearer token (env CAIRN_TOKEN)");
    app.add_option("-c,--config", s.config_path, "cairnd's TOML config: its listen address and first admin token")
        ->check(CLI::ExistingFile);
    app.add_flag("--json", s.json_out, "print the API's JSON instead of tables (for scripts)");
    auto* timeout_opt = app.add_option("--timeout", s.timeout_s,
                                       "seconds to wait for cairnd's answer (default 30; reshard plan and verify: 600)")
                            ->check(CLI::Range(1u, 3600u));
    // Global options may come after the subcommand too (cairn status --json).
    app.fallthrough();

    std::function<int()> run;

    auto* status = app.add_subcommand("status",
                                      "Shards (up, applied seq, lag, paused), journal (size, map use, queues, oldest\n"
                                      "unapplied op) and readiness.\n\n"
                                      "Examples:\n"
                                      "  cairn status\n"
                                      "  cairn status --json | jq .shards");
    status->callback([&] { run = [&] { return cmd_status(s); }; });

    auto* dead = app.add_subcommand("dead",
                                    "Dead letters: ops a healthy shard refused too often.\n\n"
                                    "Examples:\n"
                                    "  cairn dead ls\n"
                                    "  cairn dead show 1 42\n"
                                    "  cairn dead edit 1 42 --op '{\"model\":\"edge\",\"graph\":\"follows\",...}'\n"
                                    "  cairn dead reinject 1 42\n"
                                    "  cairn dead drop 1 42 --yes");
    dead->require_subcommand(1);

    dead_filter_args ls_filter;
    unsigned ls_limit = 100;
    std::string ls_cursor;
    auto* dead_ls = dead->add_subcommand("ls",
                                         "List dead letters, oldest key first, with filters.\n\n"
                                         "Examples:\n"
                                         "  cairn dead ls\n"
                                         "  cairn dead ls --shard 1 --error 'Duplicate entry' --older-than 2h\n"
                                         "  cairn dead ls --limit 50 --cursor 1-43      the next page\n"
                                         "  cairn dead ls --json | jq '.dead[].seq'");
    ls_filter.add_to(dead_ls, true);
    dead_ls->add_option("--limit", ls_limit, "at most this many (1 to 1000, default 100)")->check(CLI::Range(1u, 1000u));
    dead_ls->add_option("--cursor", ls_cursor, "continue after the previous page (its next_cursor)");
    dead_ls->callback([&] { run = [&] { return cmd_dead_ls(s, ls_filter, ls_limit, ls_cursor); }; });

    unsigned key_shard = 0;
    std::uint64_t key_seq = 0;
    auto* dead_show = dead->add_subcommand("show",
                                           "Show one dead letter: its op as JSON (the shape `dead edit` takes) and its\n"
                                           "full error history.\n\n"
                                           "Examples:\n"
                                           "  cairn dead show 1 42\n"
                                           "  cairn dead show 1 42 --json | jq .op > op.json");
    dead_show->add_option("shard", key_shard, "the shard")->required();
    dead_show->add_option("seq", key_seq, "the journal seq")->required();
    dead_show->callback([&] { run = [&] { return cmd_dead_show(s, key_shard, key_seq); }; });

    std::string edit_op;
    std::string edit_file;
    auto* dead_edit = dead->add_subcommand(
        "edit",
        "Replace a dead letter's op, validated like a client write (no --op/--op-file: $EDITOR; no \"ts\": now).\n"
        "Rows on this shard only: edited in place, re-inject it next. Rows on other shards too (an edge across\n"
        "two shards): journaled again as a new write, so both halves land; the letter goes (docs/cli.md).\n\n"
        "Examples:\n"
        "  cairn dead edit 1 42\n"
        "  cairn dead edit 1 42 --op-file op.json\n"
        "  cairn dead edit 1 42 --op '{\"model\":\"edge\",\"graph\":\"follows\",\"source_id\":5,\"destination_id\":6,\"position\":7}'");
    dead_edit->add_option("shard", key_shard, "the shard")->required();
    dead_edit->add_option("seq", key_seq, "the journal seq")->required();
    auto* op_opt = dead_edit->add_option("--op", edit_op, "the new op as JSON");
    dead_edit->add_option("--op-file", edit_file, "read the new op from a file (- for stdin)")->excludes(op_opt);
    dead_edit->callback([&] { run = [&] { return cmd_dead_edit(s, key_shard, key_seq, edit_op, edit_file); }; });

    std::vector<std::uint64_t> set_key;
    bool set_all = false;
    dead_filter_args set_filter;
    bool keep_attempts = false;
    auto* dead_reinject = dead->add_subcommand(
        "reinject",
        "Put dead letters back into the error queue, due now, so that the apply worker retries them through\n"
        "the normal apply path. Attempts restart at 0 unless --keep-attempts.\n\n"
        "Examples:\n"
        "  cairn dead reinject 1 42\n"
        "  cairn dead reinject --shard 1 --error 'Lock wait'\n"
        "  cairn dead reinject --all --keep-attempts");
    dead_reinject->add_option("key", set_key, "SHARD SEQ of one dead letter")->expected(0, 2);
    dead_reinject->add_flag("--all", set_all, "every dead letter");
    set_filter.add_to(dead_reinject, true);
    dead_reinject->add_flag("--keep-attempts", keep_attempts,
                            "keep the attempt count (one more failure makes the letter dead again)");
    dead_reinject->callback([&] { run = [&] { return cmd_dead_reinject(s, set_key, set_all, set_filter, keep_attempts); }; });

    bool yes = false;
    auto* dead_drop = dead->add_subcommand(
        "drop",
        "Delete dead letters for good (their writes are never applied). Asks for confirmation unless --yes;\n"
        "without a terminal it refuses unless --yes.\n\n"
        "Examples:\n"
        "  cairn dead drop 1 42\n"
        "  cairn dead drop --shard 1 --older-than 7d --yes\n"
        "  cairn dead drop --all --yes");
    dead_drop->add_option("key", set_key, "SHARD SEQ of one dead letter")->expected(0, 2);
    dead_drop->add_flag("--all", set_all, "every dead letter");
    set_filter.add_to(dead_drop, true);
    dead_drop->add_flag("-y,--yes", yes, "do not ask");
    dead_drop->callback([&] { run = [&] { return cmd_dead_drop(s, set_key, set_all, set_filter, yes); }; });

    auto* errors = app.add_subcommand("errors",
                                      "The error queue: ops a shard refused, retried with backoff.\n\n"
                                      "Examples:\n"
                                      "  cairn errors ls\n"
                                      "  cairn errors retry-now");
    errors->require_subcommand(1);
    std::optional<unsigned> opt_shard;
    unsigned errors_limit = 100;
    auto* errors_ls = errors->add_subcommand("ls",
                                             "List the error queue, by shard then due time.\n\n"
                                             "Examples:\n"
                                             "  cairn errors ls\n"
                                             "  cairn errors ls --shard 0 --limit 20 --json");
    errors_ls->add_option("--shard", opt_shard, "only this shard's tasks");
    errors_ls->add_option("--limit", errors_limit, "at most this many (1 to 1000, default 100)")->check(CLI::Range(1u, 1000u));
    errors_ls->callback([&] { run = [&] { return cmd_errors_ls(s, opt_shard, errors_limit); }; });

    std::optional<std::uint64_t> opt_seq;
    auto* errors_retry = errors->add_subcommand("retry-now",
                                                "Make waiting tasks due now instead of after their backoff.\n\n"
                                                "Examples:\n"
                                                "  cairn errors retry-now                 every task\n"
                                                "  cairn errors retry-now --shard 1\n"
                                                "  cairn errors retry-now --shard 1 --seq 42");
    errors_retry->add_option("--shard", opt_shard, "only this shard's tasks");
    errors_retry->add_option("--seq", opt_seq, "only this seq's task (with --shard)");
    errors_retry->callback([&] { run = [&] { return cmd_errors_retry_now(s, opt_shard, opt_seq); }; });

    auto* apply = app.add_subcommand("apply",
                                     "Stop or restart applying journaled writes to shards; writes keep being\n"
                                     "acknowledged meanwhile. A restart of cairnd resumes (unless apply.paused).\n\n"
                                     "Examples:\n"
                                     "  cairn apply pause --all\n"
                                     "  cairn apply resume --shard 1");
    apply->require_subcommand(1);
    bool apply_all = false;
    auto* pause_cmd = apply->add_subcommand("pause",
                                        "Stop applying on one shard or all.\n\n"
                                        "Examples:\n"
                                        "  cairn apply pause --shard 1\n"
                                        "  cairn apply pause --all");
    auto* resume_cmd = apply->add_subcommand("resume",
                                         "Apply again on one shard or all.\n\n"
                                         "Examples:\n"
                                         "  cairn apply resume --shard 1\n"
                                         "  cairn apply resume --all");
    for (auto* sub : {pause_cmd, resume_cmd}) {
        sub->add_option("--shard", opt_shard, "this shard");
        sub->add_flag("--all", apply_all, "every shard");
    }
    pause_cmd->callback([&] { run = [&] { return cmd_apply(s, true, opt_shard, apply_all); }; });
    resume_cmd->callback([&] { run = [&] { return cmd_apply(s, false, opt_shard, apply_all); }; });

    std::uint64_t trace_seq = 0;
    auto* trace = app.add_subcommand("trace",
                                     "Where is one write? journaled / applied on which shards / in the error queue\n"
                                     "(with its last error) / dead. SEQ is the \"seq\" of the write's acknowledgement.\n\n"
                                     "Examples:\n"
                                     "  cairn trace 42\n"
                                     "  cairn trace 42 --json | jq -r .state");
    trace->add_option("seq", trace_seq, "the journal seq")->required();
    trace->callback([&] { run = [&] { return cmd_trace(s, trace_seq); }; });

    std::string journal_dir;
    auto* journal_cmd = app.add_subcommand("journal",
                                           "A journal directory read directly, with cairnd running or dead (LMDB read-only,\n"
                                           "no lock taken; run it where the directory is): stat, check, export. And import,\n"
                                           "which applies an export file through a cairnd.\n\n"
                                           "Examples:\n"
                                           "  cairn journal stat --dir /var/lib/cairn/journal\n"
                                           "  cairn journal check --dir /var/lib/cairn/journal --json");
    journal_cmd->require_subcommand(1);
    auto* journal_stat = journal_cmd->add_subcommand("stat",
                                                     "Sizes, seq range, retention span, cursors and lag, queue counts.\n\n"
                                                     "Examples:\n"
                                                     "  cairn journal stat --dir /var/lib/cairn/journal\n"
                                                     "  cairn journal stat --dir ./journal --json | jq .cursors");
    auto* journal_check = journal_cmd->add_subcommand("check",
                                                      "Decode every op, error task and dead letter; check keys, seq order and\n"
                                                      "cursors. Exit code 6 when a problem is found (each is listed).\n\n"
                                                      "Examples:\n"
                                                      "  cairn journal check --dir /var/lib/cairn/journal\n"
                                                      "  cairn journal check --dir ./journal --json | jq .problems");
    for (auto* sub : {journal_stat, journal_check}) {
        sub->add_option("--dir", journal_dir, "the journal directory (cairnd's journal.path)")->required();
    }
    // These read the directory, not cairnd: they need no URL or token (a bad one is no error).
    bool local_only = false;
    journal_stat->callback([&] {
        local_only = true;
        run = [&] { return cmd_journal_stat(s, journal_dir); };
    });
    journal_check->callback([&] {
        local_only = true;
        run = [&] { return cmd_journal_check(s, journal_dir); };
    });

    cli::replay_commands replay_cmds;  // replay, journal export, journal import
    replay_cmds.add(app, *journal_cmd, s, run, local_only);
    cli::reshard_commands reshard_cmds;  // reshard plan, split, status, verify, cancel
    reshard_cmds.add(app, s, run);

    auto* index = app.add_subcommand("index",
                                     "Indexes of entities and of cells: define, list and drop them; run and watch the cleaner\n"
                                     "that back-fills a new index and removes stale rows.\n\n"
                                     "Examples:\n"
                                     "  cairn index ls\n"
                                     "  cairn index add entries_by_user --kind entry --property user_id:id\n"
                                     "  cairn index add users_by_company --table users --column BASE --property company_id:id\n"
                                     "  cairn index status entries_by_user --watch\n"
                                     "  cairn index drop entries_by_user --yes");
    index->require_subcommand(1);
    auto* index_ls = index->add_subcommand("ls",
                                           "List the indexes (name, what they read: an entity kind or a cell table/column,\n"
                                           "typed properties, shard_on).\n\n"
                                           "Examples:\n"
                                           "  cairn index ls\n"
                                           "  cairn index ls --json | jq -r '.indexes[].name'");
    index_ls->callback([&] { run = [&] { return cmd_index_ls(s); }; });
    std::string index_name;
    std::string index_kind;
    std::string index_table;
    std::string index_column;
    std::vector<std::string> index_props;
    std::string index_shard_on;
    bool index_no_wait = false;
    auto* index_add = index->add_subcommand(
        "add",
        "Create an index of an entity kind (--kind) or of a cell table's column (--table, --column)\n"
        "and watch its back-fill. Properties: name:type, type id, int, bool or string:LENGTH (1..255).\n\n"
        "Examples:\n"
        "  cairn index add entries_by_user --kind entry --property user_id:id\n"
        "  cairn index add users_by_email --kind user --property email:string:254 --no-wait\n"
        "  cairn index add entries_by_feed --kind entry --property feed_id:id --property rank:int --shard-on feed_id\n"
        "  cairn index add users_by_company --table users --column BASE --property company_id:id\n\n"
        "A cell index reads the latest ref_key of the column of each row; properties are in key order.");
    index_add->add_option("name", index_name, "the index name ([a-z][a-z0-9_]*)")->required();
    auto* kind_opt = index_add->add_option("--kind", index_kind, "the entity kind");
    auto* table_opt = index_add->add_option("--table", index_table, "the cell table (with --column)");
    auto* column_opt = index_add->add_option("--column", index_column, "the cell column (with --table)");
    kind_opt->excludes(table_opt)->excludes(column_opt);
    table_opt->needs(column_opt);
    column_opt->needs(table_opt);
    index_add->add_option("--property", index_props, "name:type[:length], once per property, in key order")->required();
    index_add->add_option("--shard-on", index_shard_on, "the property whose value picks the row's shard (default: the only one)");
    index_add->add_flag("--no-wait", index_no_wait, "do not watch the back-fill");
    index_add->callback([&] {
        if (index_kind.empty() && index_table.empty()) {
            throw CLI::RequiredError("--kind (an entity index) or --table and --column (a cell index)");
        }
        run = [&] {
            return cmd_index_add(s, index_name, index_kind, index_table, index_column, index_props, index_shard_on, index_no_wait);
        };
    });
    bool index_yes = false;
    auto* index_drop = index->add_subcommand("drop",
                                             "Drop an index and its table on every shard. Asks for confirmation unless --yes.\n\n"
                                             "Examples:\n"
                                             "  cairn index drop entries_by_user\n"
                                             "  cairn index drop entries_by_user --yes");
    index_drop->add_option("name", index_name, "the index")->required();
    index_drop->add_flag("-y,--yes", index_yes, "do not ask");
    index_drop->callback([&] { run = [&] { return cmd_index_drop(s, index_name, index_yes); }; });
    std::optional<unsigned> clean_rate;
    auto* index_clean = index->add_subcommand("clean",
                                              "Run the cleaner of an index (back-fill missing rows, remove stale ones) and\n"
                                              "watch it, throttled to --rate rows per second.\n\n"
                                              "Examples:\n"
                                              "  cairn index clean entries_by_user\n"
                                              "  cairn index clean entries_by_user --rate 2000 --no-wait");
    index_clean->add_option("name", index_name, "the index")->required();
    index_clean->add_option("--rate", clean_rate, "rows per second at most (default 20000)")->check(CLI::Range(1u, 10'000'000u));
    index_clean->add_flag("--no-wait", index_no_wait, "start it and return");
    index_clean->callback([&] { run = [&] { return cmd_index_clean(s, index_name, clean_rate, index_no_wait); }; });
    bool verify_repair = false;
    auto* index_verify = index->add_subcommand(
        "verify",
        "Compare an index with its entities (or cells), shard by shard, and report the rows that are\n"
        "missing (an object whose row is absent) and stale (a live row whose object now has other values\n"
        "or is deleted), with counts per shard and examples. --repair also writes the missing rows and\n"
        "tombstones the stale ones (the cleaner's commutative writes). It first waits until every shard has\n"
        "applied what was journaled when it started. Exit code 7 when differences were found and not\n"
        "repaired.\n\n"
        "Examples:\n"
        "  cairn index verify entries_by_user\n"
        "  cairn index verify entries_by_user --repair --rate 5000\n"
        "  cairn index verify entries_by_user --json | jq .missing");
    index_verify->add_option("name", index_name, "the index")->required();
    index_verify->add_flag("--repair", verify_repair, "write the missing rows and tombstone the stale ones");
    index_verify->add_option("--rate", clean_rate, "rows per second at most (default 20000)")->check(CLI::Range(1u, 10'000'000u));
    index_verify->add_flag("--no-wait", index_no_wait, "start it and return (see: cairn index status NAME --verify)");
    index_verify->callback(
        [&] { run = [&] { return cmd_index_verify(s, index_name, clean_rate, verify_repair, index_no_wait); }; });
    bool index_watch = false;
    bool status_verify = false;
    auto* index_status = index->add_subcommand("status",
                                               "The cleaner's progress on this gateway: rows scanned of the total, rate,\n"
                                               "time left; --watch redraws it until the run ends.\n\n"
                                               "Examples:\n"
                                               "  cairn index status entries_by_user\n"
                                               "  cairn index status entries_by_user --watch\n"
                                               "  cairn index status entries_by_user --json | jq .eta_s");
    index_status->add_option("name", index_name, "the index")->required();
    index_status->add_flag("-w,--watch", index_watch, "redraw until the run ends");
    index_status->add_flag("--verify", status_verify, "the latest verify run instead of the cleaner");
    index_status->callback(
        [&] { run = [&] { return show_cleaner(s, index_name, index_watch, status_verify ? "verify" : "clean"); }; });

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return exit_usage;
    }
    try {
        if (!local_only) resolve_settings(s);
        s.timeout_set = timeout_opt->count() > 0;
        return run ? run() : exit_usage;
    } catch (const cli_exit& e) {
        std::cerr << e.message << "\n";
        return e.code;
    } catch (const std::exception& e) {
        std::cerr << "cairn: " << e.what() << "\n";
        return exit_unreachable;
    }
}
