#!/usr/bin/python3
"""The checks of deploy/check that need a parser: lints of the alert rules, their tests and the
Grafana dashboard; the metric names (and label names) their PromQL uses; the drift check of those
against a live cairnd's /metrics. Run by deploy/check with Debian's /usr/bin/python3 (python3-yaml).

Usage:
  kit.py lint-rules RULES TESTS            each alert: for, severity, summary, a description that names
                                           what to run; each tested firing and not firing
  kit.py lint-dashboard DASHBOARD          valid JSON, a datasource variable, every panel with targets
  kit.py dashboard-rules DASHBOARD OUT     every dashboard expression as a recording rule in OUT, for
                                           `promtool check rules` to parse
  kit.py names RULES DASHBOARD             the metrics and labels used, one `name label,label` a line
  kit.py drift RULES DASHBOARD METRICS     fail naming each metric (or label) used that METRICS (the
                                           text of GET /metrics) does not have
  kit.py lib-packages BIN...               each shared library `ldd BIN...` lists: `soname path package`
                                           a line (path `not-found`, package `-` when none ships it)
  kit.py closure PKG...                    PKG and everything it depends on (Depends, Pre-Depends) as
                                           installed here: what `apt-get install PKG...` brings
  kit.py cli-tree CAIRN                    every command path of the cairn binary CAIRN, from its --help
                                           and each command's: `path|subcommands|options` a line
Exit code 0 when the check passes, 1 when it finds problems (each printed), 2 for bad usage.
"""
import concurrent.futures
import json
import re
import subprocess
import sys

import yaml

# Series that Prometheus itself makes for every target (not in cairnd's /metrics), and the labels
# it adds to every scraped series.
PROMETHEUS_NAMES = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added",
                    "scrape_samples_post_metric_relabeling", "ALERTS", "ALERTS_FOR_STATE"}
TARGET_LABELS = {"instance", "job"}
SEVERITIES = {"critical", "warning", "info"}
# What a description may name for the operator to run: a command in backticks, or an admin route.
ACTION = re.compile(r"`(cairn|curl|systemctl|journalctl) [^`]+`|/v1/admin/")

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "atan2", "inf", "nan", "start", "end"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}


class PromqlError(Exception):
    pass


def tokenize(expr):
    """PromQL tokens as (kind, text): ident, string, number, punct."""
    tokens = []
    i = 0
    n = len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":
            while i < n and expr[i] != "\n":
                i += 1
        elif c in "\"'`":
            j = i + 1
            while j < n and expr[j] != c:
                j += 2 if (expr[j] == "\\" and c != "`") else 1
            if j >= n:
                raise PromqlError(f"unterminated string at {i}")
            tokens.append(("string", expr[i + 1:j]))
            i = j + 1
        elif c.isdigit() or (c == "." and i + 1 < n and expr[i + 1].isdigit()):
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "._"):
                j += 1
            tokens.append(("number", expr[i:j]))
            i = j
        elif c.isalpha() or c in "_:":
            j = i
            while j < n and (expr[j].isalnum() or expr[j] in "_:"):
                j += 1
            tokens.append(("ident", expr[i:j]))
            i = j
        else:
            two = expr[i:i + 2]
            if two in ("=~", "!~", "!=", "==", ">=", "<="):
                tokens.append(("punct", two))
                i += 2
            else:
                tokens.append(("punct", c))
                i += 1
    return tokens


def used_names(expr):
    """{metric name: set of label names in its matchers}, and the grouping label names of expr."""
    tokens = tokenize(expr)
    names = {}
    grouping = set()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if kind == "ident" and text in GROUPING and nxt == ("punct", "("):
            j = i + 2
            while j < len(tokens) and tokens[j] != ("punct", ")"):
                if tokens[j][0] == "ident":
                    grouping.add(tokens[j][1])
                j += 1
            i = j + 1
            continue
        if kind == "ident":
            is_call = nxt == ("punct", "(") or (text in AGGREGATIONS and nxt[0] == "ident" and nxt[1] in ("by", "without"))
            if not is_call and text not in KEYWORDS:
                labels = names.setdefault(text, set())
                if nxt == ("punct", "{"):
                    j = i + 2
                    while j < len(tokens) and tokens[j] != ("punct", "}"):
                        if tokens[j][0] == "ident" and j + 1 < len(tokens) and tokens[j + 1][1] in ("=", "!=", "=~", "!~"):
                            labels.add(tokens[j][1])
                        j += 1
                    i = j + 1
                    continue
        elif (kind, text) == ("punct", "{"):
            raise PromqlError("a selector without a metric name ({...}): name the metric so that it can be checked")
        i += 1
    return names, grouping


def substitute_variables(expr):
    """A dashboard expression with Grafana's variables replaced, so that PromQL tools can parse it."""
    expr = re.sub(r"\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}", "5m", expr)
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", ".*", expr)


def load_rules(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [r for g in doc.get("groups", []) for r in g.get("rules", [])]


def load_dashboard(path):
    with open(path) as f:
        return json.load(f)


def dashboard_panels(dash):
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))  # panels of collapsed rows
    return out


def dashboard_exprs(dash):
    """[(where, expression with Grafana variables)] of every target and query variable."""
    out = []
    for p in dashboard_panels(dash):
        for t in p.get("targets", []):
            if "expr" in t:
                out.append((f"panel {p.get('id')} \"{p.get('title')}\" {t.get('refId')}", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else (q or "")
            m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", q)
            if m:
                out.append((f"variable ${v.get('name')}", m.group(1)))
            elif q:
                out.append((f"variable ${v.get('name')}", q))
    return out


def all_exprs(rules_path, dash_path):
    out = [(f"alert {r.get('alert') or r.get('record')}", r["expr"]) for r in load_rules(rules_path)]
    out += [(where, substitute_variables(e)) for where, e in dashboard_exprs(load_dashboard(dash_path))]
    return out


def cmd_lint_rules(rules_path, tests_path):
    problems = []
    rules = load_rules(rules_path)
    seen = set()
    for r in rules:
        name = r.get("alert")
        if not name:
            problems.append(f"{rules_path}: a rule that is not an alert: {r}")
            continue
        if name in seen:
            problems.append(f"{name}: defined twice")
        seen.add(name)
        if "for" not in r:
            problems.append(f"{name}: no `for:`")
        sev = (r.get("labels") or {}).get("severity")
        if sev not in SEVERITIES:
            problems.append(f"{name}: severity label {sev!r} is not one of {sorted(SEVERITIES)}")
        ann = r.get("annotations") or {}
        if not ann.get("summary"):
            problems.append(f"{name}: no summary annotation")
        if not ann.get("description"):
            problems.append(f"{name}: no description annotation")
        elif not ACTION.search(ann["description"]):
            problems.append(f"{name}: the description names no command to run (`cairn ...`) or admin route")
    with open(tests_path) as f:
        tests = yaml.safe_load(f)
    fires, quiet = set(), set()
    for t in tests.get("tests", []):
        for a in t.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else quiet).add(a.get("alertname"))
    for name in sorted(seen):
        if name not in fires:
            problems.append(f"{name}: {tests_path} has no test in which it fires")
        if name not in quiet:
            problems.append(f"{name}: {tests_path} has no test in which it does not fire")
    for name in sorted((fires | quiet) - seen):
        problems.append(f"{tests_path}: tests an alert that {rules_path} does not define: {name}")
    return report(problems, f"{len(seen)} alerts: each has for, severity, summary, an action, and tests firing and not")


def cmd_lint_dashboard(path):
    problems = []
    try:
        dash = load_dashboard(path)
    except (OSError, json.JSONDecodeError) as e:
        return report([f"{path}: not valid JSON: {e}"], "")
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        problems.append(f"schemaVersion is {dash.get('schemaVersion')!r}, expected 36 or later")
    for key in ("uid", "title"):
        if not dash.get(key):
            problems.append(f"no {key}")
    variables = dash.get("templating", {}).get("list", [])
    names = {v.get("name") for v in variables}
    ds_vars = [v for v in variables if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    if not ds_vars:
        problems.append("no template variable of type datasource (query prometheus)")
    ds_refs = {f"${v['name']}" for v in ds_vars} | {f"${{{v['name']}}}" for v in ds_vars}
    ids = set()
    count = 0
    for p in dashboard_panels(dash):
        pid = p.get("id")
        where = f"panel {pid} \"{p.get('title')}\""
        if pid in ids or not isinstance(pid, int):
            problems.append(f"{where}: id missing or not unique")
        ids.add(pid)
        gp = p.get("gridPos") or {}
        if not all(isinstance(gp.get(k), int) for k in ("h", "w", "x", "y")) or gp.get("x", 0) + gp.get("w", 0) > 24:
            problems.append(f"{where}: bad gridPos {gp}")
        if p.get("type") == "row":
            continue
        count += 1
        if not p.get("title"):
            problems.append(f"{where}: no title")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        for t in [p] + targets:
            uid = (t.get("datasource") or {}).get("uid")
            if uid not in ds_refs:
                problems.append(f"{where}: datasource uid {uid!r} is not the datasource variable ({sorted(ds_refs)})")
        for t in targets:
            if not (t.get("expr") or "").strip():
                problems.append(f"{where} {t.get('refId')}: no expr")
    for where, expr in dashboard_exprs(dash):
        for var in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", expr):
            if not var.startswith("__") and var not in names:
                problems.append(f"{where}: uses ${var}, which is not a template variable")
    return report(problems, f"{count} panels, {len(variables)} variables ({', '.join(sorted(n for n in names if n))})")


def cmd_dashboard_rules(path, out):
    rules = []
    for i, (where, expr) in enumerate(dashboard_exprs(load_dashboard(path))):
        # A comment names the panel in promtool's error; the record name is only a handle.
        rules.append({"record": f"dashboard:expr_{i}", "expr": substitute_variables(expr),
                      "labels": {"where": where}})
    with open(out, "w") as f:
        yaml.safe_dump({"groups": [{"name": "cairn-dashboard-expressions", "rules": rules}]}, f, sort_keys=False)
    print(f"{len(rules)} dashboard expressions written to {out}")
    return 0


def collect(rules_path, dash_path):
    """{name: {"labels": set, "where": [..]}} and [(where, grouping labels, names of the expr)]."""
    used = {}
    groupings = []
    problems = []
    for where, expr in all_exprs(rules_path, dash_path):
        try:
            names, grouping = used_names(expr)
        except PromqlError as e:
            problems.append(f"{where}: {e}")
            continue
        for name, labels in names.items():
            u = used.setdefault(name, {"labels": set(), "where": []})
            u["labels"] |= labels
            u["where"].append(where)
        groupings.append((where, grouping, set(names)))
    return used, groupings, problems


def cmd_names(rules_path, dash_path):
    used, _, problems = collect(rules_path, dash_path)
    for name in sorted(used):
        print(name, ",".join(sorted(used[name]["labels"])))
    return report(problems, None)


def parse_exposition(text):
    """{sample name: set of label names} from the Prometheus text format."""
    series = {}
    label_re = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s", line)
        if not m:
            continue
        labels = series.setdefault(m.group(1), set())
        if m.group(2):
            labels.update(label_re.findall(m.group(2)))
    return series


def cmd_drift(rules_path, dash_path, metrics_path):
    used, groupings, problems = collect(rules_path, dash_path)
    with open(metrics_path) as f:
        exposed = parse_exposition(f.read())
    if not exposed:
        return report([f"{metrics_path}: no samples (is it cairnd's GET /metrics?)"], "")
    for name in sorted(used):
        where = "; ".join(sorted(set(used[name]["where"]))[:3])
        if name in PROMETHEUS_NAMES:
            continue
        if name not in exposed:
            problems.append(f"unknown metric {name} (cairnd does not expose it), used in: {where}")
            continue
        extra = used[name]["labels"] - exposed[name] - TARGET_LABELS
        if extra:
            problems.append(f"{name}: label(s) {', '.join(sorted(extra))} not on cairnd's series "
                            f"(it has: {', '.join(sorted(exposed[name])) or 'none'}), used in: {where}")
    for where, grouping, names in groupings:
        have = set(TARGET_LABELS)
        for n in names:
            have |= exposed.get(n, set())
        missing = grouping - have
        if missing and all(n in exposed or n in PROMETHEUS_NAMES for n in names):
            problems.append(f"{where}: groups by label(s) {', '.join(sorted(missing))} that none of its metrics has")
    unused = sorted({re.sub(r"_(bucket|sum|count)$", "", n) for n in exposed if n.startswith("cairn_")} -
                    {re.sub(r"_(bucket|sum|count)$", "", n) for n in used})
    if unused:
        print(f"note: exposed but not used by the alerts or the dashboard: {', '.join(unused)}")
    names = sorted(n for n in used if n not in PROMETHEUS_NAMES)
    return report(problems, f"{len(names)} metric names used, all exposed by cairnd with the labels used")


def help_sections(text):
    """{section title: [entry names]} of a CLI11 (2.x) help text: an entry is a line indented by two
    spaces; its description's further lines are indented deeper; an empty line ends a section."""
    sections = {}
    current = None
    for line in text.splitlines():
        m = re.fullmatch(r"(Options|Subcommands|Positionals):", line)
        if m:
            current = sections.setdefault(m.group(1), [])
        elif not line:
            current = None
        elif current is not None:
            m = re.match(r"  (\S+)", line)
            if m:
                current.append(m.group(1))
    return sections


def cmd_cli_tree(cairn):
    problems = []
    lines = []

    def help_of(path):
        return path, subprocess.run([cairn, *path, "--help"], capture_output=True, text=True,
                                    stdin=subprocess.DEVNULL, timeout=60)

    level = [[]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        while level:
            next_level = []
            for path, run in pool.map(help_of, level):
                shown = " ".join(["cairn", *path, "--help"])
                if run.returncode != 0:
                    problems.append(f"`{shown}` exited with {run.returncode}: {run.stderr.strip()}")
                    continue
                sections = help_sections(run.stdout)
                if "Options" not in sections:
                    problems.append(f"`{shown}`: no Options section in:\n{run.stdout}")
                    continue
                options = [name for entry in sections["Options"] for name in entry.split(",") if name.startswith("-")]
                subs = sections.get("Subcommands", [])
                lines.append("|".join([" ".join(["cairn", *path]), " ".join(subs), " ".join(options)]))
                next_level.extend([*path, sub] for sub in subs)
            level = next_level
    print("\n".join(lines))
    return report(problems, None)


def cmd_lib_packages(*bins):
    ldd = subprocess.run(["ldd", *bins], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True).stdout
    libs = {}
    for line in ldd.splitlines():
        m = re.match(r"\s*(\S+) => (not found|\S+)", line) or re.match(r"\s*(/\S*ld-linux\S*) ", line)
        if not m or m.group(1).startswith("linux-vdso"):
            continue
        libs[m.group(1)] = m.group(2) if m.lastindex == 2 else m.group(1)

    # One dpkg-query for every path, each also under its other usrmerge spelling and resolved.
    def spellings(path):
        alt = path[4:] if path.startswith("/usr/") else "/usr" + path
        real = subprocess.run(["readlink", "-f", path], capture_output=True, text=True).stdout.strip()
        return [path, alt, real]
    wanted = sorted({p for path in libs.values() if path != "not found" for p in spellings(path) if p})
    owner = {}
    out = subprocess.run(["dpkg-query", "-S", *wanted], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pkgs, _, path = line.partition(": ")
        owner.setdefault(path.strip(), pkgs.split(",")[0].split(":")[0].strip())
    for soname, path in sorted(libs.items()):
        if path == "not found":
            print(soname, "not-found", "-")
            continue
        pkg = next((owner[p] for p in spellings(path) if p in owner), "-")
        print(soname, path, pkg)
    return 0


def cmd_closure(*packages):
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Depends}, ${Pre-Depends}\n"],
                         capture_output=True, text=True, check=True).stdout
    deps = {}
    for line in out.splitlines():
        name, _, d = line.partition("\t")
        names = [re.sub(r"\(.*?\)|:any", "", alt).strip() for dep in d.split(",") for alt in dep.split("|")]
        deps[name] = [n for n in names if n]
    seen = set()
    todo = list(packages)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(deps.get(p, []))
    print("\n".join(sorted(seen)))
    return 0


def report(problems, ok_message):
    for p in problems:
        print(f"FAIL: {p}")
    if not problems and ok_message:
        print(f"ok: {ok_message}")
    return 1 if problems else 0


def main(argv):
    commands = {"lint-rules": (cmd_lint_rules, 2), "lint-dashboard": (cmd_lint_dashboard, 1),
                "dashboard-rules": (cmd_dashboard_rules, 2), "names": (cmd_names, 2), "drift": (cmd_drift, 3),
                "cli-tree": (cmd_cli_tree, 1), "lib-packages": (cmd_lib_packages, -1), "closure": (cmd_closure, -1)}
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd = commands.get(argv[1])
    if not cmd or (len(argv) - 2 != cmd[1] if cmd[1] >= 0 else len(argv) < 3):
        print(__doc__, file=sys.stderr)
        return 2
    return cmd[0](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
