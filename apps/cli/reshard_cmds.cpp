#include "apps/cli/reshard_cmds.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

namespace cairn::cli {
namespace {

// Unless yes: shows what (if given) and asks question on the terminal; throws cli_exit
// (exit_not_confirmed) without a terminal to ask or without a yes.
void confirm(bool yes, std::string_view action, std::string_view question, std::string_view refused,
             const std::function<void()>& show = {}) {
    if (yes) return;
    if (!::isatty(STDIN_FILENO)) {
        throw cli_exit{exit_not_confirmed, fmt::format("cairn: {} needs confirmation; there is no terminal to ask, so pass --yes", action)};
    }
    if (show) show();
    std::cerr << question << " [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") throw cli_exit{exit_not_confirmed, fmt::format("cairn: {}", refused)};
}

std::string split_body(unsigned shard, const std::string& to) { return json{{"shard", shard}, {"to", to}}.dump(); }

std::string range_text(const json& r) {
    return fmt::format("{:016x}..{:016x}", r["first"].get<std::uint64_t>(), r["last"].get<std::uint64_t>());
}

void print_ranges(const json& ranges) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : ranges) rows.push_back({str(r["shard"]), range_text(r)});
    print_table({"SHARD", "HASHES"}, rows);
}

void print_plan(const json& p) {
    std::cout << fmt::format("split shard {} of map version {}: hashes {} move to shard {} at {}\n\n", str(p["shard"]),
                             str(p["map_version"]), range_text(p["moved"]), str(p["new_shard"]), str(p["to"]));
    std::cout << "before:\n";
    print_ranges(p["before"]);
    std::cout << "\nafter:\n";
    print_ranges(p["after"]);
    std::cout << "\nrows of the moved half on shard " << str(p["shard"]) << ":\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& t : p["tables"]) rows.push_back({str(t["table"]), str(t["rows"])});
    print_table({"TABLE", "ROWS"}, rows);
    std::cout << fmt::format("in all: {} rows; copy throttle: {}; copy time at the throttle: {}\n", str(p["rows"]),
                             p["rows_per_second_max"].get<std::uint64_t>() == 0
                                 ? std::string("none (limits.split_copy_rows_per_second_max = 0)")
                                 : str(p["rows_per_second_max"]) + " rows/s",
                             p["copy_eta_s"].is_null() ? std::string("as fast as the shards go")
                                                       : duration_text(p["copy_eta_s"].get<std::uint64_t>() * 1000));
    std::cout << "live gateways (each must list shard " << str(p["new_shard"]) << " at " << str(p["to"])
              << " in its [[shards]]):";
    for (const auto& g : p["gateways"]) std::cout << fmt::format(" node {} ({})", str(g["node_id"]), str(g["holder"]));
    std::cout << "\n";
}

std::string progress_text(const json& split) {
    const json& p = split["progress"];
    std::string line = fmt::format("map version {}: {}", str(split["version"]), str(split["state"]));
    if (p.is_null()) return line;
    const auto state = split["state"].get<std::string>();
    if ((state == "copying" || state == "cleaning") && p["started_ms"].get<std::uint64_t>() != 0) {
        const auto est = p["rows_estimate"].get<std::uint64_t>();
        const auto read = p["rows_read"].get<std::uint64_t>();
        line += fmt::format("  {} {} rows read of about {}, {} {}", est ? bar(static_cast<double>(read) / static_cast<double>(est)) : "",
                            read, est, str(p["rows_done"]), state == "copying" ? "copied" : "deleted");
        if (!p["table"].get<std::string>().empty()) line += fmt::format(" ({})", str(p["table"]));
        if (!p["eta_s"].is_null()) line += ", about " + duration_text(p["eta_s"].get<std::uint64_t>() * 1000) + " left";
    } else if (!p["note"].get<std::string>().empty()) {
        line += "  " + p["note"].get<std::string>();
    }
    return line;
}

void print_status(const json& st) {
    const json& m = st["map"];
    std::cout << fmt::format("map version {}: {} shards\n", str(m["version"]), str(m["shards"]));
    print_ranges(m["ranges"]);
    const json& split = st["split"];
    if (split.is_null()) {
        std::cout << "\nno split under way\n";
    } else {
        std::cout << fmt::format("\nsplit: map version {}, shard {} to shard {} at {}; hashes {} move\n", str(split["version"]),
                                 str(split["shard"]), str(split["new_shard"]), str(split["new_address"]),
                                 range_text(split["moved"]));
        std::cout << fmt::format("state: {} for {}\n", str(split["state"]),
                                 duration_text(split["in_state_ms"].get<std::uint64_t>()));
        std::cout << progress_text(split) << "\n";
        if (!split["progress"].is_null()) {
            std::cout << fmt::format("driven by node {}: {}\n", str(split["progress"]["driver"]), str(split["progress"]["note"]));
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& g : split["gateways"]) {
            rows.push_back({str(g["node_id"]), str(g["live"]), str(g["holder"]), str(g["adopted_from_seq"]), str(g["routes_by"]),
                            str(g["cut_over_seq"])});
        }
        std::cout << "\n";
        print_table({"NODE", "LIVE", "HOLDER", "ADOPTED FROM SEQ", "ROUTES BY", "CUT OVER AT"}, rows);
    }
    if (!st["history"].empty()) {
        std::cout << "\nsplits:\n";
        std::vector<std::vector<std::string>> rows;
        for (const auto& h : st["history"]) {
            rows.push_back({str(h["version"]), str(h["shard"]), str(h["new_shard"]), str(h["new_address"]), str(h["state"])});
        }
        print_table({"VERSION", "SHARD", "NEW SHARD", "ADDRESS", "STATE"}, rows);
    }
}

// plan and verify scan the moved half's tables within the request (minutes on a shard of many
// millions of rows): they wait 600 s for the answer unless --timeout says otherwise.
constexpr unsigned scan_timeout_s = 600;
settings scanning(const settings& s) {
    settings out = s;
    if (!s.timeout_set) out.timeout_s = std::max(s.timeout_s, scan_timeout_s);
    return out;
}

// Follows the split of `version` until it retires or fails (or the timeout passes): a progress line,
// and a line per state it enters.
int watch_split(const settings& s, std::uint64_t version, unsigned timeout_s) {
    progress line;
    std::string last_state;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
        const json st = call(s, "GET", "/v1/admin/reshard");
        std::string state;
        const json* split = nullptr;
        if (!st["split"].is_null() && st["split"]["version"].get<std::uint64_t>() == version) {
            split = &st["split"];
            state = (*split)["state"].get<std::string>();
        } else {
            for (const auto& h : st["history"]) {
                if (h["version"].get<std::uint64_t>() == version) state = h["state"].get<std::string>();
            }
        }
        if (state != last_state) {
            line.end();
            std::cerr << fmt::format("map version {}: {}\n", version, state.empty() ? "gone" : state);
            last_state = state;
        }
        if (state == "retired") {
            line.end();
            return exit_ok;
        }
        if (state == "failed" || state.empty()) {
            line.end();
            std::cerr << "cairn: the split failed; see the driving gateway's log (cairn reshard status names it)\n";
            return exit_refused;
        }
        if (split != nullptr) line.show(progress_text(*split));
        if (timeout_s != 0 && std::chrono::steady_clock::now() >= deadline) {
            line.end();
            std::cerr << fmt::format("cairn: the split is still {} after {} s; it goes on (cairn reshard status)\n", state, timeout_s);
            return exit_unreachable;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

}  // namespace

void reshard_commands::add(CLI::App& app, const settings& s, std::function<int()>& run) {
    auto* reshard = app.add_subcommand("reshard",
                                       "Online resharding: split a shard's range of the hash space in two, the upper half\n"
                                       "moving to a new shard while every gateway goes on serving (docs/operations.md,\n"
                                       "\"Splitting a shard\").\n\n"
                                       "Examples:\n"
                                       "  cairn reshard plan --shard 0 --to 10.0.0.7:3306\n"
                                       "  cairn reshard split --shard 0 --to 10.0.0.7:3306 --yes --wait\n"
                                       "  cairn reshard status --watch\n"
                                       "  cairn reshard verify\n"
                                       "  cairn reshard cancel --yes");
    reshard->require_subcommand(1);
    const auto add_target = [this](CLI::App* sub) {
        sub->add_option("--shard", shard_, "the shard whose range splits (it keeps the lower half)")->required();
        sub->add_option("--to", to_, "the new shard's host:port, exactly as every gateway's [[shards]] lists it")->required();
    };

    auto* plan = reshard->add_subcommand("plan",
                                         "What a split would do, without starting it: the map before and after, the rows\n"
                                         "of each table that move (counted on the shard: a full scan of its tables), the\n"
                                         "copy's time at the throttle, and the checks a split must pass (no split under\n"
                                         "way, the new shard listed in this gateway's config at that address and empty).\n"
                                         "Waits up to 600 s for the scan's answer unless --timeout is given.\n\n"
                                         "Examples:\n"
                                         "  cairn reshard plan --shard 0 --to 10.0.0.7:3306\n"
                                         "  cairn reshard plan --shard 1 --to 10.0.0.8:3306 --json | jq .rows");
    add_target(plan);
    plan->callback([this, &s, &run] {
        run = [this, &s] {
            const json p = call(scanning(s), "POST", "/v1/admin/reshard/plan", split_body(*shard_, to_));
            if (s.json_out) {
                print_json(p);
            } else {
                print_plan(p);
            }
            return exit_ok;
        };
    });

    auto* split = reshard->add_subcommand(
        "split",
        "Start a split: the same checks as plan, then the split is recorded on shard 0 and every gateway\n"
        "takes part (adopting, copying, catching up, verifying, switched, done, cleaning, retired). Every\n"
        "gateway must list the new shard in its [[shards]] first (and have been restarted with it).\n"
        "--wait follows it to the end.\n\n"
        "Examples:\n"
        "  cairn reshard split --shard 0 --to 10.0.0.7:3306\n"
        "  cairn reshard split --shard 0 --to 10.0.0.7:3306 --yes --wait --wait-timeout 3600");
    add_target(split);
    split->add_flag("-y,--yes", yes_, "do not ask");
    split->add_flag("--wait", wait_, "follow the split until it retires or fails");
    split->add_option("--wait-timeout", wait_timeout_s_, "with --wait: give up waiting after this many seconds (0: never)");
    split->callback([this, &s, &run] {
        run = [this, &s] {
            confirm(yes_, "a split", "\nStart this split?", "not started",
                    [&] { print_plan(call(s, "POST", "/v1/admin/reshard/plan", split_body(*shard_, to_))); });
            const json p = call(s, "POST", "/v1/admin/reshard/split", split_body(*shard_, to_));
            const auto version = p["split"]["version"].get<std::uint64_t>();
            if (s.json_out && !wait_) {
                print_json(p);
                return exit_ok;
            }
            if (!s.json_out) {
                std::cout << fmt::format("split started: map version {}, shard {} to shard {} at {}; follow it with: cairn "
                                         "reshard status --watch\n",
                                         version, str(p["shard"]), str(p["new_shard"]), str(p["to"]));
            }
            if (!wait_) return exit_ok;
            const int code = watch_split(s, version, wait_timeout_s_);
            if (s.json_out) print_json(call(s, "GET", "/v1/admin/reshard"));
            return code;
        };
    });

    auto* status = reshard->add_subcommand("status",
                                           "The map in force, the split under way (its state, each gateway's part, the\n"
                                           "driving gateway's progress and ETA) and the splits before. --watch follows the\n"
                                           "split under way to its end.\n\n"
                                           "Examples:\n"
                                           "  cairn reshard status\n"
                                           "  cairn reshard status --watch\n"
                                           "  cairn reshard status --json | jq .split.progress");
    status->add_flag("-w,--watch", watch_, "follow the split under way until it retires or fails");
    status->callback([this, &s, &run] {
        run = [this, &s] {
            const json st = call(s, "GET", "/v1/admin/reshard");
            if (watch_ && !st["split"].is_null()) return watch_split(s, st["split"]["version"].get<std::uint64_t>(), 0);
            if (s.json_out) {
                print_json(st);
            } else {
                print_status(st);
            }
            return exit_ok;
        };
    });

    auto* verify = reshard->add_subcommand(
        "verify",
        "Compare the moved half now, table by table (row counts and checksums): while the split runs\n"
        "(from catching_up) the old and the new shard must hold the same rows of it (counter sums\n"
        "aside: not compared); after cleaning the old shard must hold none. A table whose shards\n"
        "had not applied the same ops when read is compared again chunk by chunk ('by chunks'), and\n"
        "shows as 'applying' if its chunks still differ so. Exit code 7 when a table differs. Waits\n"
        "up to 600 s for the scan's answer unless\n"
        "--timeout is given.\n\n"
        "Examples:\n"
        "  cairn reshard verify\n"
        "  cairn reshard verify --json | jq .tables");
    verify->callback([&s, &run] {
        run = [&s] {
            const json v = call(scanning(s), "POST", "/v1/admin/reshard/verify");
            if (s.json_out) {
                print_json(v);
            } else {
                std::cout << fmt::format("map version {} ({}): {}\n", str(v["version"]), str(v["state"]), str(v["compared"]));
                std::vector<std::vector<std::string>> rows;
                for (const auto& t : v["tables"]) {
                    const bool chunks = t.value("by_chunks", false);
                    rows.push_back({str(t["table"]), str(t["rows_on_shard"]), str(t["rows_on_new_shard"]),
                                    str(t["verdict"]) + (chunks ? " (by chunks)" : "")});
                }
                print_table({"TABLE", fmt::format("ON SHARD {}", str(v["shard"])), fmt::format("ON SHARD {}", str(v["new_shard"])),
                             "VERDICT"},
                            rows);
                std::cout << (v["clean"].get<bool>() ? "clean\n" : "DIFFERS\n");
            }
            return v["clean"].get<bool>() ? exit_ok : exit_index_differs;  // the same code as an index that differs
        };
    });

    auto* cancel = reshard->add_subcommand("cancel",
                                           "Fail the split under way, before reads have moved to the new shard (from\n"
                                           "switched on it can only go forward). Every gateway routes by the map in force\n"
                                           "again; the new shard keeps what was copied to it (empty its database before\n"
                                           "another split uses it).\n\n"
                                           "Examples:\n"
                                           "  cairn reshard cancel --yes");
    cancel->add_flag("-y,--yes", yes_, "do not ask");
    cancel->callback([this, &s, &run] {
        run = [this, &s] {
            confirm(yes_, "cancelling", "Fail the split under way?", "not cancelled");
            const json c = call(s, "POST", "/v1/admin/reshard/cancel");
            if (s.json_out) {
                print_json(c);
            } else {
                std::cout << fmt::format("map version {}: {} -> failed\n", str(c["version"]), str(c["was"]));
            }
            return exit_ok;
        };
    });
}

}  // namespace cairn::cli
