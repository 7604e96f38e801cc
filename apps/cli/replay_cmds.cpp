#include "apps/cli/replay_cmds.hpp"

#include "core/counters.hpp"
#include "core/hlc.hpp"
#include "journal/export_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <msgpack.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

namespace cairn::cli {
namespace {

using clock = std::chrono::steady_clock;

constexpr unsigned busy_retries = 120;                  // 503s (overloaded, journal full) waited out per request
constexpr std::size_t records_per_request = 2'000;      // POST /v1/admin/replay/records
constexpr std::size_t request_bytes_max = 768 * 1024;   // below cairnd's default 1 MiB body limit

// A time flag: Unix ms, RFC 3339 in UTC ("2026-11-24T10:00:00Z"), or a duration before now ("2h").
std::uint64_t parse_time_ms(const std::string& text, const std::string& flag) {
    if (auto t = core::parse_utc_time(text); t && *t >= 0) return static_cast<std::uint64_t>(*t);
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) {
        throw cli_exit{exit_usage, fmt::format("cairn: {} \"{}\": expected Unix ms, a UTC time such as "
                                               "2026-11-24T10:00:00Z, or a duration before now such as 2h", flag, text)};
    }
    const std::uint64_t ago_ms = parse_duration_s(text, flag) * 1000;
    const std::uint64_t now = core::system_wall_clock_ms();
    return now > ago_ms ? now - ago_ms : 0;
}

// The sum of the replay answers.
struct tally {
    std::uint64_t scanned = 0;
    std::uint64_t matched = 0;
    std::uint64_t replayed = 0;
    std::uint64_t expired = 0;
    std::uint64_t undeclared = 0;
    std::string undeclared_example;
    std::uint64_t retired = 0;
    std::uint64_t first_seq = 0;  // the seqs the replayed ops got on cairnd
    std::uint64_t last_seq = 0;
    clock::time_point started = clock::now();

    void add(const json& a) {
        scanned += a.value("scanned", std::uint64_t{0});
        matched += a.value("matched", std::uint64_t{0});
        replayed += a.value("replayed", std::uint64_t{0});
        expired += a.value("expired_counters_skipped", std::uint64_t{0});
        undeclared += a.value("undeclared_skipped", std::uint64_t{0});
        if (undeclared_example.empty()) undeclared_example = a.value("undeclared_example", std::string());
        if (a.contains("journaled_last_seq")) {
            if (first_seq == 0) first_seq = a["journaled_first_seq"].get<std::uint64_t>();
            last_seq = a["journaled_last_seq"].get<std::uint64_t>();
        }
    }
    double seconds() const { return std::chrono::duration<double>(clock::now() - started).count(); }
    double rate() const { return seconds() > 0 ? static_cast<double>(replayed) / seconds() : 0; }

    std::string line(double frac) const {
        const double s = seconds();
        const std::string left = frac > 0.001 && frac < 1 ? duration_text(static_cast<std::uint64_t>(s / frac * (1 - frac) * 1000)) : "?";
        return fmt::format("replay [{}] {:3.0f}% scanned {} matched {} replayed {}, {:.0f} ops/s, {} left", bar(frac),
                           frac * 100, scanned, matched, replayed, rate(), left);
    }
};

// Sleeps as long as replaying faster than rate ops/s would need.
void pace(const tally& t, double rate) {
    if (rate <= 0) return;
    const double due_s = static_cast<double>(t.replayed) / rate;
    const double ahead = due_s - t.seconds();
    if (ahead > 0) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
}

// Waits until every shard applied through seq; false when timeout passed first.
bool wait_applied(const settings& s, std::uint64_t seq, unsigned timeout_s) {
    progress p;
    const auto deadline = clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
        const json st = call(s, "GET", "/v1/admin/status");
        std::uint64_t behind = 0;
        std::uint64_t min_applied = seq;
        std::vector<std::string> paused;  // the shards behind that are paused
        for (const auto& sh : st["shards"]) {
            const auto applied = sh["applied_seq"].get<std::uint64_t>();
            if (applied < seq) {
                ++behind;
                min_applied = std::min(min_applied, applied);
                if (sh.value("paused", false)) paused.push_back(sh["shard"].dump());
            }
        }
        if (behind == 0) {
            p.end();
            return true;
        }
        if (clock::now() >= deadline) {
            p.end();
            return false;
        }
        p.show(fmt::format("waiting for {} shard(s) to apply through seq {} (slowest at {}){}", behind, seq, min_applied,
                           paused.empty()      ? std::string()
                           : paused.size() == 1 ? "; shard " + paused[0] + " is paused: cairn apply resume --shard " + paused[0]
                                                : "; shards are paused: cairn apply resume --all"));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

int report(const settings& s, const tally& t, bool dry_run, bool wait, unsigned wait_timeout_s, const std::string& source) {
    bool applied = true;
    if (wait && !dry_run && t.last_seq) applied = wait_applied(s, t.last_seq, wait_timeout_s);
    if (s.json_out) {
        json out{{"source", source},
                 {"dry_run", dry_run},
                 {"scanned", t.scanned},
                 {"matched", t.matched},
                 {"replayed", t.replayed},
                 {"expired_counters_skipped", t.expired},
                 {"undeclared_skipped", t.undeclared},
                 {"retired_in_range", t.retired},
                 {"seconds", t.seconds()}};
        if (t.last_seq) {
            out["journaled_first_seq"] = t.first_seq;
            out["journaled_last_seq"] = t.last_seq;
        }
        if (wait && !dry_run) out["applied"] = applied;
        print_json(out);
    } else {
        fmt::print("{}: scanned {}, matched {}, {} {} in {:.1f} s\n", source, t.scanned, t.matched,
                   dry_run ? "would replay" : "replayed", dry_run ? t.matched - t.expired - t.undeclared : t.replayed,
                   t.seconds());
        if (t.last_seq) fmt::print("journaled again as seq {}..{}\n", t.first_seq, t.last_seq);
        if (wait && !dry_run && t.last_seq && applied) fmt::print("every shard applied them\n");
    }
    if (t.expired) {
        std::cerr << fmt::format("cairn: warning: {} counter increments are older than counters.op_ids_keep_hours and were "
                                 "skipped: their op ids may be gone from the shards, so replaying them could count them "
                                 "twice (--include-expired-counters replays them; the apply path then dead-letters those "
                                 "it cannot prove unapplied)\n",
                                 t.expired);
    }
    if (t.undeclared) {
        std::cerr << fmt::format("cairn: warning: {} ops name what cairnd does not declare (e.g. {}) and were skipped\n",
                                 t.undeclared, t.undeclared_example);
    }
    if (t.retired) {
        std::cerr << fmt::format("cairn: warning: {} ops of the range were already retired from cairnd's journal "
                                 "(journal.retention); replay them from an export file (--file)\n",
                                 t.retired);
    }
    if (!applied) {
        std::cerr << fmt::format("cairn: not every shard applied through seq {} within {} s (see cairn status)\n", t.last_seq,
                                 wait_timeout_s);
        return exit_unreachable;
    }
    return exit_ok;
}

struct filters {
    std::optional<std::uint64_t> from_seq, to_seq, since_ms, until_ms;
    std::optional<unsigned> shard;
    std::string model, name, key;
    bool dry_run = false;
    bool include_expired = false;

    std::string query() const {
        std::string q;
        auto add = [&q](std::string_view k, const std::string& v) { q += fmt::format("{}{}={}", q.empty() ? "" : "&", k, encode(v)); };
        if (from_seq) add("from_seq", std::to_string(*from_seq));
        if (to_seq) add("to_seq", std::to_string(*to_seq));
        if (since_ms) add("since_ms", std::to_string(*since_ms));
        if (until_ms) add("until_ms", std::to_string(*until_ms));
        if (shard) add("shard", std::to_string(*shard));
        if (!model.empty()) add("model", model);
        if (!name.empty()) add("name", name);
        if (!key.empty()) add("key", key);
        if (dry_run) add("dry_run", "true");
        if (include_expired) add("expired_counters", "include");
        return q;
    }
};

// Replays a range of cairnd's own journal, one bounded scan per request.
int replay_journal(const settings& s, filters f, unsigned batch, double rate, bool wait, unsigned wait_timeout_s) {
    tally t;
    progress p;
    const std::uint64_t start = f.from_seq.value_or(1);
    std::uint64_t next = start;
    const unsigned scan = rate > 0 ? std::clamp(static_cast<unsigned>(rate), 1u, batch) : batch;
    for (;;) {
        f.from_seq = next;
        const json a = call(s, "POST", fmt::format("/v1/admin/replay?{}&scan_max={}", f.query(), scan), "",
                            "application/json", busy_retries);
        t.add(a);
        if (next == start) t.retired = a.value("retired_in_range", std::uint64_t{0});
        // The first answer fixes the end: ops journaled after it (the replayed ones too) are not in range.
        f.to_seq = a["to_seq"].get<std::uint64_t>();
        next = a["next_seq"].get<std::uint64_t>();
        const double span = static_cast<double>(*f.to_seq >= start ? *f.to_seq - start + 1 : 1);
        p.show(t.line(static_cast<double>(next - start) / span));
        if (a["done"].get<bool>()) break;
        pace(t, rate);
    }
    p.end();
    return report(s, t, f.dry_run, wait, wait_timeout_s, "cairnd's journal");
}

std::string pack_records(const std::vector<journal::export_record>& records, std::size_t from, std::size_t to) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    pk.pack_array(static_cast<std::uint32_t>(to - from));
    for (std::size_t i = from; i < to; ++i) {
        pk.pack_array(3);
        pk.pack(records[i].seq);
        pk.pack(records[i].append_ms);
        pk.pack_bin(static_cast<std::uint32_t>(records[i].op_bytes.size()));
        pk.pack_bin_body(records[i].op_bytes.data(), static_cast<std::uint32_t>(records[i].op_bytes.size()));
    }
    return {buf.data(), buf.size()};
}

// Replays the records of an export file, in requests of bounded size.
int replay_file(const settings& s, const std::string& path, const filters& f, double rate, bool wait,
                unsigned wait_timeout_s) {
    auto reader = journal::export_reader::open(path);
    if (!reader) {
        const int code = reader.error() == core::errc::not_found ? exit_usage : exit_check_failed;
        throw cli_exit{code, fmt::format("cairn: {}: {}", path, reader.error() == core::errc::journal_corrupt
                                                                     ? "not a cairn export file, or damaged"
                                                                     : reader.error().message())};
    }
    auto& r = *reader.value();
    tally t;
    progress p;
    const std::string q = f.query();
    std::vector<journal::export_record> block;
    for (;;) {
        auto more = r.next(block);
        if (!more) {
            p.end();
            throw cli_exit{exit_check_failed,
                           fmt::format("cairn: {}: damaged after {} of {} bytes ({}); the {} ops replayed before it stay "
                                       "replayed",
                                       path, r.bytes_read(), r.file_bytes(), more.error().message(), t.replayed)};
        }
        if (!more.value()) break;
        std::size_t i = 0;
        while (i < block.size()) {
            std::size_t j = i;
            std::size_t bytes = 0;
            while (j < block.size() && j - i < records_per_request && (j == i || bytes + block[j].op_bytes.size() + 32 <= request_bytes_max)) {
                bytes += block[j].op_bytes.size() + 32;
                ++j;
            }
            const json a = call(s, "POST", "/v1/admin/replay/records" + (q.empty() ? std::string() : "?" + q),
                                pack_records(block, i, j), "application/msgpack", busy_retries);
            t.add(a);
            i = j;
            p.show(t.line(r.file_bytes() ? static_cast<double>(r.bytes_read()) / static_cast<double>(r.file_bytes()) : 1.0));
            pace(t, rate);
        }
    }
    p.end();
    return report(s, t, f.dry_run, wait, wait_timeout_s, path);
}

int export_journal(const settings& s, const std::string& dir, const std::string& out, const journal::export_range& range) {
    progress p;
    const auto started = clock::now();
    auto summary = journal::export_journal(dir, range, out, [&](std::uint64_t records, std::uint64_t last_seq) {
        p.show(fmt::format("export: {} ops written, through seq {}", records, last_seq));
    });
    p.end();
    if (!summary) {
        const auto& e = summary.error();
        const int code = e == core::errc::not_found || e == core::errc::bad_request ? exit_usage
                         : e == core::errc::journal_corrupt                           ? exit_check_failed
                                                                                      : exit_unreachable;
        throw cli_exit{code, fmt::format("cairn: journal export {} -> {}: {}", dir, out,
                                         e == core::errc::not_found ? "no journal in that directory" : e.message())};
    }
    const auto& v = summary.value();
    const double secs = std::chrono::duration<double>(clock::now() - started).count();
    if (s.json_out) {
        print_json(json{{"file", out},
                        {"records", v.records},
                        {"first_seq", v.first_seq},
                        {"last_seq", v.last_seq},
                        {"op_bytes", v.op_bytes},
                        {"file_bytes", v.file_bytes},
                        {"seconds", secs}});
    } else {
        fmt::print("exported {} ops (seq {}..{}), {} of ops in {} of file, to {} in {:.1f} s\n", v.records, v.first_seq,
                   v.last_seq, bytes_text(static_cast<double>(v.op_bytes)), bytes_text(static_cast<double>(v.file_bytes)),
                   out, secs);
    }
    return exit_ok;
}

}  // namespace

void replay_commands::add(CLI::App& app, CLI::App& journal, const settings& s, std::function<int()>& run,
                          bool& local_only) {
    auto* replay = app.add_subcommand(
        "replay",
        "Re-inject journaled writes through cairnd's normal apply path: a range of cairnd's own journal\n"
        "(by seq or append time), or an export file (--file). Replayed ops keep their op id and ts, so\n"
        "replaying twice changes nothing and counter increments are counted once. Filters narrow it down.\n\n"
        "Examples:\n"
        "  cairn replay --since 2h --dry-run                    what the last two hours hold\n"
        "  cairn replay --from-seq 1000 --to-seq 2000 --shard 1 --wait\n"
        "  cairn replay --since 2026-11-24T09:00:00Z --until 2026-11-24T10:00:00Z --model edge --name follows\n"
        "  cairn replay --model entity --key 0b7c3f0e-5a7e-4c1c-9b41-7d1f6f0a2c11\n"
        "  cairn replay --file gw3.cjx --rate 5000 --wait       writes saved from another gateway's disk");
    replay->add_option("--from-seq", range_.from_seq,
                       "the first journal seq (with --file: of the journal it was exported from; default: the oldest)");
    replay->add_option("--to-seq", range_.to_seq, "the last journal seq (default: the newest)");
    replay->add_option("--since", range_.since, "ops appended at or after: Unix ms, 2026-11-24T10:00:00Z, or 2h ago");
    replay->add_option("--until", range_.until, "ops appended at or before (same forms)");
    replay->add_option("--shard", shard_, "only ops that write a row on this shard");
    replay->add_option("--model", model_, "only ops of this model: edge, node, entity, cell, counter, index");
    replay->add_option("--name,--graph,--kind,--table,--metric", name_,
                       "only ops of this graph, entity kind, cell table, counter metric or index");
    replay->add_option("--key", key_,
                       "only ops of this key: a node id (either end of an edge), an entity id or cell row key, "
                       "a counter dimension value");
    replay->add_option("--file", file_, "replay an export file (cairn journal export) instead of cairnd's journal")
        ->check(CLI::ExistingFile);
    replay->add_flag("--dry-run", dry_run_, "count what would be replayed; change nothing");
    replay->add_flag("--include-expired-counters", include_expired_,
                     "also replay counter increments older than counters.op_ids_keep_hours (see docs/counters.md)");
    replay->add_option("--rate", rate_, "at most this many ops replayed per second (default: no limit)")->check(CLI::PositiveNumber);
    replay->add_option("--batch", batch_, "journal ops scanned per request (default 10000)")->check(CLI::Range(1u, 100000u));
    replay->add_flag("--wait", wait_, "then wait until every shard applied the replayed ops");
    replay->add_option("--wait-timeout", wait_timeout_s_, "seconds --wait waits at most (default 300)")->check(CLI::Range(1u, 86400u));
    replay->callback([this, &s, &run] {
        run = [this, &s] {
            filters f;
            f.from_seq = range_.from_seq;
            f.to_seq = range_.to_seq;
            if (!range_.since.empty()) f.since_ms = parse_time_ms(range_.since, "--since");
            if (!range_.until.empty()) f.until_ms = parse_time_ms(range_.until, "--until");
            f.shard = shard_;
            f.model = model_;
            f.name = name_;
            f.key = key_;
            f.dry_run = dry_run_;
            f.include_expired = include_expired_;
            if (!file_.empty()) return replay_file(s, file_, f, rate_, wait_, wait_timeout_s_);
            return replay_journal(s, f, batch_, rate_, wait_, wait_timeout_s_);
        };
    });

    auto* exp = journal.add_subcommand(
        "export",
        "Write a range of a journal directory's ops to a portable file (msgpack, zstd-compressed, with a\n"
        "header, checksums and a trailer), e.g. to apply a dead gateway's writes on another one with\n"
        "cairn replay --file or cairn journal import. Reads the directory read-only, cairnd running or dead.\n\n"
        "Examples:\n"
        "  cairn journal export --dir /var/lib/cairn/journal --out gw3.cjx\n"
        "  cairn journal export --dir ./journal --out last-hour.cjx --since 1h\n"
        "  cairn journal export --dir ./journal --out part.cjx --from-seq 1000 --to-seq 2000 --json");
    exp->add_option("--dir", dir_, "the journal directory (cairnd's journal.path)")->required();
    exp->add_option("--out", out_, "the file to write (written whole or not at all)")->required();
    exp->add_option("--from-seq", range_.from_seq, "the first seq (default: the oldest kept)");
    exp->add_option("--to-seq", range_.to_seq, "the last seq (default: the newest)");
    exp->add_option("--since", range_.since, "ops appended at or after: Unix ms, 2026-11-24T10:00:00Z, or 2h ago");
    exp->add_option("--until", range_.until, "ops appended at or before (same forms)");
    exp->callback([this, &s, &run, &local_only] {
        local_only = true;
        run = [this, &s] {
            journal::export_range r;
            if (range_.from_seq) r.from_seq = *range_.from_seq;
            if (range_.to_seq) r.to_seq = *range_.to_seq;
            if (!range_.since.empty()) r.since_ms = parse_time_ms(range_.since, "--since");
            if (!range_.until.empty()) r.until_ms = parse_time_ms(range_.until, "--until");
            return export_journal(s, dir_, out_, r);
        };
    });

    auto* imp = journal.add_subcommand(
        "import",
        "Apply every op of an export file through cairnd (its admin API): the ops are journaled on that\n"
        "gateway with their op ids and ts and applied like any write; importing twice changes nothing.\n"
        "The same as cairn replay --file without filters.\n\n"
        "Examples:\n"
        "  cairn journal import gw3.cjx --wait\n"
        "  cairn journal import gw3.cjx --dry-run --json");
    imp->add_option("file", file_, "the export file")->required()->check(CLI::ExistingFile);
    imp->add_flag("--dry-run", dry_run_, "count what would be imported; change nothing");
    imp->add_flag("--include-expired-counters", include_expired_,
                  "also import counter increments older than counters.op_ids_keep_hours");
    imp->add_option("--rate", rate_, "at most this many ops per second (default: no limit)")->check(CLI::PositiveNumber);
    imp->add_flag("--wait", wait_, "then wait until every shard applied them");
    imp->add_option("--wait-timeout", wait_timeout_s_, "seconds --wait waits at most (default 300)")->check(CLI::Range(1u, 86400u));
    imp->callback([this, &s, &run] {
        run = [this, &s] {
            filters f;
            f.dry_run = dry_run_;
            f.include_expired = include_expired_;
            return replay_file(s, file_, f, rate_, wait_, wait_timeout_s_);
        };
    });
}

}  // namespace cairn::cli
