// cairn's operator dashboard: polls the documented API every 2 s (pausable) and draws the
// gateway's state; every acting control asks for confirmation in an in-page dialog and is
// disabled, with a tooltip, when the session's token is not admin. No framework, no build step:
// the browser loads these modules as they are from cairnd's /ui/.
import { api, ApiError, getToken, setToken, toJson, parseJson, query } from "./api.js";
import { parseMetrics, familyOf, sumOf, labelText } from "./metrics.js";
import { drawLineChart, drawBarChart, seriesColor } from "./charts.js";

const POLL_MS = 2000;
const WINDOW_MS = 10 * 60 * 1000;
const GAP_MS = 3 * POLL_MS + 1000; // a longer silence between two points is drawn as a gap
const METRIC_ROWS_MAX = 500;

const $ = (id) => document.getElementById(id);

// ---- small DOM helpers (text only: nothing from the API is ever parsed as HTML) --------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = dv;
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function fmtNum(v, digits = 0) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "bigint") return v.toLocaleString("en-US");
  if (typeof v !== "number" || !Number.isFinite(v)) return String(v);
  return v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function fmtBytes(b) {
  if (typeof b !== "number") return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) {
    b /= 1024;
    i++;
  }
  return `${b.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function fmtDuration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "–";
  const s = ms / 1000;
  if (s < 1) return `${Math.round(ms)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.round((s % 86400) / 3600)} h`;
}

function fmtClock(ms) {
  if (typeof ms !== "number") return "–";
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

const isoSeconds = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

// ---- problems: shown, never swallowed ------------------------------------------------------

// One line per source in the banner, replaced by the source's next failure and removed by its
// next success, so a gateway that keeps failing shows one current line, not a growing list.
const bannerItems = new Map();

function problemNodes(err) {
  const where = err.method ? `${err.method} ${err.path}` : "";
  const status = err.status ? ` · ${err.status}` : "";
  return [
    h("strong", { class: "problem-title", text: err.title ?? "Error" }),
    err.detail ? h("span", { class: "problem-detail", text: ` ${err.detail}` }) : null,
    err.field ? h("span", { class: "problem-field", text: ` (field: ${err.field})` }) : null,
    where || status ? h("span", { class: "muted problem-where", text: ` — ${where}${status}` }) : null,
  ];
}

function showProblem(source, err) {
  let li = bannerItems.get(source);
  if (!li) {
    li = h("li", { class: "problem", data: { source } });
    bannerItems.set(source, li);
    $("problems").append(li);
  }
  const dismiss = h("button", {
    type: "button",
    class: "quiet dismiss",
    title: "dismiss",
    text: "×",
    on: { click: () => clearProblem(source) },
  });
  li.replaceChildren(...problemNodes(err).filter(Boolean), dismiss);
}

function clearProblem(source) {
  const li = bannerItems.get(source);
  if (li) li.remove();
  bannerItems.delete(source);
}

// An action's outcome next to the control that caused it: a problem, or a success message.
function showResult(el, content, ok = true) {
  el.replaceChildren(h("div", { class: ok ? "ok" : "problem" }, content));
}

function showInlineProblem(el, err) {
  showResult(el, problemNodes(err), false);
}

// Runs a refresh; its failure goes to the banner under `source`, its success clears that line.
async function guarded(source, fn) {
  try {
    await fn();
    clearProblem(source);
  } catch (e) {
    if (!(e instanceof ApiError)) {
      console.error(e); // a bug of the page, not an answer of the gateway: loud, and in the banner
      showProblem(source, { title: "Dashboard error", detail: String(e?.message ?? e) });
      return;
    }
    showProblem(source, e);
  }
}

// ---- state -----------------------------------------------------------------------------------

const state = {
  role: null,
  authenticated: false,
  tokensRequired: false,
  live: true,
  timer: null,
  tickCount: 0,
  status: null,
  shardCount: 0,
  history: new Map(), // shard -> [{t, lag, rate}]
  lastOps: new Map(), // shard -> {t, ops}: the counter the rate is derived from
  metrics: null,
  lastTotals: null, // {t, writes, requests, commitSum, commitCount, rates}
  dead: { cursor: null, cursors: [], open: null, sig: "" },
  errorsSig: "",
  trace: { seq: null, auto: false },
  counters: { catalog: null, shown: null },
  indexesSig: "",
  shardsSig: "",
};

const isAdmin = () => state.role === "admin";
const canRead = () => ["read", "write", "admin"].includes(state.role);

// ---- confirmation dialog -------------------------------------------------------------------

function confirmAction({ title, body, ok = "Confirm", danger = false }) {
  const dlg = $("confirm-dialog");
  const okBtn = $("confirm-ok");
  const cancelBtn = $("confirm-cancel");
  $("confirm-title").textContent = title;
  const parts = [body].flat().filter(Boolean).map((b) => (b instanceof Node ? b : h("p", { text: b })));
  $("confirm-body").replaceChildren(...parts);
  okBtn.textContent = ok;
  okBtn.classList.toggle("danger", danger);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer) => {
      if (settled) return;
      settled = true;
      okBtn.removeEventListener("click", onOk);
      cancelBtn.removeEventListener("click", onCancel);
      dlg.removeEventListener("close", onClose);
      if (dlg.open) dlg.close();
      resolve(answer);
    };
    const onOk = () => finish(true);
    const onCancel = () => finish(false);
    const onClose = () => finish(false); // Escape
    okBtn.addEventListener("click", onOk);
    cancelBtn.addEventListener("click", onCancel);
    dlg.addEventListener("close", onClose);
    dlg.showModal();
    cancelBtn.focus();
  });
}

// ---- roles -----------------------------------------------------------------------------------

function roleReason() {
  return `needs the admin role (this session's role is ${state.role ?? "unknown"})`;
}

// Every acting control carries data-act: enabled for admin, otherwise disabled with a tooltip
// that says why. Controls made later (table rows) call gate() themselves.
function gate(el) {
  if (el.dataset.title === undefined) el.dataset.title = el.title ?? "";
  if (isAdmin()) {
    el.disabled = false;
    el.title = el.dataset.title;
    el.classList.remove("gated");
  } else {
    el.disabled = true;
    el.title = roleReason();
    el.classList.add("gated");
  }
  return el;
}

function applyRole() {
  for (const el of document.querySelectorAll("[data-act]")) gate(el);
  $("dead-op").readOnly = !isAdmin();
  const badge = $("role-badge");
  const role = state.role ?? "?";
  badge.textContent = state.tokensRequired ? `role: ${role}` : `role: ${role} (no tokens configured)`;
  badge.dataset.role = role;
  const locked = state.role !== null && !canRead();
  $("locked").hidden = !locked;
  $("content").hidden = locked;
  $("token-input").placeholder = getToken() ? "a token is set for this tab; enter another to change it" : "bearer token (kept for this tab only)";
  $("token-forget").disabled = !getToken();
}

function actButton(label, title, onClick, extraClass = "") {
  return gate(h("button", { type: "button", class: extraClass, title, data: { act: "" }, text: label, on: { click: onClick } }));
}

// ---- whoami ----------------------------------------------------------------------------------

async function refreshWhoami() {
  try {
    const who = await api("GET", "/v1/whoami");
    state.role = who.role;
    state.authenticated = !!who.authenticated;
    state.tokensRequired = who.tokens_required ?? who.authenticated;
    if (getToken() && state.tokensRequired && !state.authenticated) {
      showProblem("whoami", {
        title: "Token not accepted",
        detail: "this gateway does not know the token of this tab (GET /v1/whoami answers role none); enter another or Forget it",
      });
    } else {
      clearProblem("whoami");
    }
  } catch (e) {
    if (e.status === 404) {
      // A cairnd without /v1/whoami predates roles on the dashboard: it is every caller's admin.
      state.role = "admin";
      state.tokensRequired = false;
      clearProblem("whoami");
    } else if (e.status === 0) {
      // Unreachable: keep what the page knew and showed; the banner says why it is not updating.
      showProblem("whoami", e);
      return false;
    } else {
      state.role = "none";
      showProblem("whoami", e);
    }
  }
  applyRole();
  return true;
}

// ---- status, shards, charts ---------------------------------------------------------------

function badge(text, kind) {
  return h("span", { class: `badge ${kind}`, text });
}

function card(label, value, note, kind = "") {
  return h("div", { class: `card ${kind}` }, h("span", { class: "label", text: label }), h("span", { class: "value", text: value }),
    note ? h("span", { class: "note", text: note }) : null);
}

function renderOverview() {
  const s = state.status;
  if (!s) return;
  const j = s.journal ?? {};
  const ready = $("ready-badge");
  ready.textContent = s.ready ? "ready" : "not ready";
  ready.className = `badge ${s.ready ? "good" : "bad"}`;
  const jb = $("journal-badge");
  jb.textContent = j.healthy ? "journal healthy" : "journal failed";
  jb.className = `badge ${j.healthy ? "good" : "bad"}`;

  const oldest = j.oldest_unapplied;
  const t = state.lastTotals?.rates ?? {};
  const cards = [
    card("last seq", fmtNum(j.last_seq), `${fmtNum(j.ops_kept)} ops kept`),
    card("journal map", `${((j.map_use ?? 0) * 100).toFixed(2)} %`, `${fmtBytes(j.map_bytes_used)} of ${fmtBytes(j.map_bytes_max)}`,
      (j.map_use ?? 0) > 0.8 ? "warn" : ""),
    card("oldest unapplied", oldest ? fmtDuration(oldest.age_ms) : "none", oldest ? `seq ${fmtNum(oldest.seq)}` : "every shard caught up",
      oldest && oldest.age_ms > 60000 ? "warn" : ""),
    card("dead letters", fmtNum(j.dead_letters), "kept until re-injected or dropped", j.dead_letters ? "bad" : ""),
    card("error queue", fmtNum(j.error_queue), "ops waiting for a retry", j.error_queue ? "warn" : ""),
    card("writes", t.writes === undefined ? "–" : `${fmtNum(t.writes, 1)}/s`, "acknowledged ops"),
    card("requests", t.requests === undefined ? "–" : `${fmtNum(t.requests, 1)}/s`, "HTTP"),
  ];
  $("overview-cards").replaceChildren(...cards);
  $("dead-count").textContent = j.dead_letters !== undefined ? `(${fmtNum(j.dead_letters)})` : "";
  $("errors-count").textContent = j.error_queue !== undefined ? `(${fmtNum(j.error_queue)})` : "";
}

function healthOf(sh) {
  if (!sh.up) return badge("down", "bad");
  if (sh.paused) return badge("paused", "warn");
  return badge("up", "good");
}

function renderShards() {
  const shards = state.status?.shards ?? [];
  const sig = toJson([shards, state.role]);
  if (sig === state.shardsSig) return;
  state.shardsSig = sig;
  const rows = shards.map((sh) =>
    h("tr", { data: { shard: String(sh.shard) } },
      h("td", { text: `shard ${sh.shard}` }),
      h("td", { class: "health" }, healthOf(sh)),
      h("td", { class: "num", text: fmtNum(sh.applied_seq) }),
      h("td", { class: "num lag", text: fmtNum(sh.lag_ops) }),
      h("td", { class: "num", text: fmtNum(sh.applied_last_minute) }),
      h("td", { class: "num", text: fmtNum(sh.failed_last_minute) }),
      h("td", { class: "num", text: sh.error_rate === undefined ? "–" : `${(sh.error_rate * 100).toFixed(1)} %` }),
      h("td", { class: "num", text: sh.error_queue === null ? "?" : fmtNum(sh.error_queue) }),
      h("td", { class: "row-actions" },
        sh.paused
          ? actButton("Resume", `restart applying on shard ${sh.shard}`, () => setPaused(false, sh.shard))
          : actButton("Pause", `stop applying on shard ${sh.shard}`, () => setPaused(true, sh.shard)))));
  $("shards-table").tBodies[0].replaceChildren(...rows);
}

// The gateways on these shards (GET /v1/admin/status's `gateways`), with the states `cairn status`
// shows: running (lease renewed), stopped (released at a clean stop), silent (lease lapsed). A
// silent gateway with unapplied ops holds acknowledged writes that only its journal has: at risk.
const GATEWAY_STATES = {
  running: { kind: "good", title: "it renews its node id's lease on shard 0" },
  stopped: { kind: "", title: "it released its lease when it stopped cleanly" },
  silent: { kind: "warn", title: "its lease lapsed without a release: it crashed, or it cannot reach shard 0" },
};

function gatewayState(g) {
  if (g.active) return "running";
  return g.released ? "stopped" : "silent";
}

function renderGateways() {
  const s = state.status;
  if (!s) return;
  const list = s.gateways;
  const empty = $("gateways-empty");
  empty.classList.toggle("warn-text", list === null);
  if (!Array.isArray(list)) {
    $("gateways-table").tBodies[0].replaceChildren();
    $("gateways-count").textContent = "";
    empty.textContent = list === null
      ? `Gateways unknown: ${s.gateways_error ?? "the gateway did not say why"}.`
      : "This gateway does not report the gateways on its shards.";
    empty.hidden = false;
    return;
  }
  let atRisk = 0;
  const rows = list.map((g) => {
    const st = gatewayState(g);
    const risky = st === "silent" && Number(g.unapplied_ops) > 0;
    if (risky) atRisk++;
    return h("tr", { class: risky ? "at-risk" : "", data: { node: String(g.node_id), state: st, risk: risky ? "yes" : "no" } },
      h("td", { class: "node" }, String(g.node_id), g.self ? [" ", h("span", { class: "badge self", title: "the gateway serving this page", text: "this" })] : null),
      h("td", { class: "holder", text: g.holder }),
      h("td", { class: "state" }, h("span", { class: `badge ${GATEWAY_STATES[st].kind}`, title: GATEWAY_STATES[st].title, text: st })),
      h("td", { class: "num renewed", text: `${fmtDuration(g.renewed_ms_ago)} ago` }),
      h("td", { class: "num last-seq", text: fmtNum(g.last_seq) }),
      h("td", { class: "num applied-through", text: fmtNum(g.applied_through) }),
      h("td", { class: "num unapplied" }, fmtNum(g.unapplied_ops),
        risky ? [" ", h("span", { class: "badge bad", title: "acknowledged writes only this silent gateway's journal holds: lost if its disk is", text: "at risk" })] : null));
  });
  $("gateways-table").tBodies[0].replaceChildren(...rows);
  $("gateways-count").textContent = `(${list.length}${atRisk ? `, ${atRisk} at risk` : ""})`;
  empty.textContent = list.length ? "" : "No gateway holds a node id lease on shard 0 yet.";
  empty.hidden = list.length > 0;
}

function ensureShardOptions(n) {
  if (n === state.shardCount) return;
  state.shardCount = n;
  for (const id of ["dead-f-shard", "errors-f-shard"]) {
    const sel = $(id);
    const keep = sel.value;
    sel.replaceChildren(h("option", { value: "", text: "any" }), ...Array.from({ length: n }, (_, i) => h("option", { value: String(i), text: String(i) })));
    sel.value = keep;
  }
}

async function setPaused(pause, shard) {
  const which = shard === undefined ? "every shard" : `shard ${shard}`;
  const ok = await confirmAction({
    title: `${pause ? "Pause" : "Resume"} applying on ${which}?`,
    body: pause
      ? "Writes keep being acknowledged and wait in the journal, within its limits, until applying resumes. Pausing is not persisted: a restarted cairnd starts as its config says."
      : "The shard's worker applies the journal's waiting ops and retries its error queue again.",
    ok: pause ? "Pause" : "Resume",
    danger: pause,
  });
  if (!ok) return;
  try {
    await api("POST", `/v1/admin/apply/${pause ? "pause" : "resume"}`, shard === undefined ? { all: true } : { shard });
    clearProblem("apply");
  } catch (e) {
    showProblem("apply", e);
  }
  await tick();
}

// One point per shard per poll: its lag from the status, its apply rate from the change of
// cairn_apply_ops_total (ops applied on that shard) since the previous poll.
function recordHistory(t) {
  const shards = state.status?.shards ?? [];
  for (const sh of shards) {
    const id = sh.shard;
    let ops = state.metrics ? sumOf(state.metrics, "cairn_apply_ops_total", { shard: id }) : null;
    if (ops === null) ops = Number(sh.applied_seq); // a cairnd without the counter: the cursor's pace
    const prev = state.lastOps.get(id);
    let rate = NaN;
    if (prev && t - prev.t <= GAP_MS && ops >= prev.ops && t > prev.t) rate = (ops - prev.ops) / ((t - prev.t) / 1000);
    state.lastOps.set(id, { t, ops });
    const points = state.history.get(id) ?? [];
    points.push({ t, lag: Number(sh.lag_ops), rate });
    while (points.length && points[0].t < t - WINDOW_MS - 60000) points.shift();
    state.history.set(id, points);
  }
}

function renderCharts() {
  const now = Date.now();
  const ids = [...state.history.keys()].sort((a, b) => a - b);
  // The last 10 minutes; while the page has watched for less, the span it has (at least a minute),
  // so that a new page's lines use the chart's width.
  const first = Math.min(now, ...ids.map((id) => state.history.get(id)[0]?.t ?? now));
  const from = Math.max(now - WINDOW_MS, Math.min(first, now - 60000));
  const series = (key) => ids.map((id, i) => ({ label: `shard ${id}`, color: seriesColor(i), points: state.history.get(id).map((p) => ({ t: p.t, v: p[key] })) }));
  // How many polls the window holds, for a reader (or a test) that waits for the charts to fill.
  $("lag-chart").dataset.points = String(Math.max(0, ...ids.map((id) => state.history.get(id).filter((p) => p.t >= from).length)));
  drawLineChart($("lag-chart"), { series: series("lag"), from, to: now, gapMs: GAP_MS, formatY: (v) => fmtNum(v), integer: true });
  drawLineChart($("rate-chart"), { series: series("rate"), from, to: now, gapMs: GAP_MS, formatY: (v) => fmtNum(v, 2) });
  const legend = ids.map((id, i) => {
    const pts = state.history.get(id);
    const last = pts[pts.length - 1];
    const swatch = h("span", { class: "swatch" });
    swatch.style.backgroundColor = seriesColor(i);
    return h("li", {}, swatch, `shard ${id}: lag ${fmtNum(last?.lag)} ops, ${Number.isFinite(last?.rate) ? fmtNum(last.rate, 1) : "–"} ops/s`);
  });
  $("chart-legend").replaceChildren(...legend);
}

async function refreshStatus() {
  state.status = await api("GET", "/v1/admin/status");
  ensureShardOptions(state.status.shards?.length ?? 0);
}

// ---- metrics -----------------------------------------------------------------------------

async function refreshMetrics() {
  const text = await api("GET", "/metrics", undefined, { accept: "text/plain" });
  state.metrics = parseMetrics(text);
}

function recordTotals(t) {
  const m = state.metrics;
  if (!m) return;
  const now = {
    t,
    writes: sumOf(m, "cairn_writes_accepted_total"),
    requests: sumOf(m, "cairn_http_requests_total"),
    commitSum: sumOf(m, "cairn_journal_commit_seconds_sum"),
    commitCount: sumOf(m, "cairn_journal_commit_seconds_count"),
  };
  const prev = state.lastTotals;
  const rates = {};
  if (prev && t > prev.t && t - prev.t <= GAP_MS) {
    const dt = (t - prev.t) / 1000;
    if (now.writes !== null && prev.writes !== null) rates.writes = Math.max(0, now.writes - prev.writes) / dt;
    if (now.requests !== null && prev.requests !== null) rates.requests = Math.max(0, now.requests - prev.requests) / dt;
    if (now.commitCount !== null && prev.commitCount !== null && now.commitCount > prev.commitCount) {
      rates.commitMs = ((now.commitSum - prev.commitSum) / (now.commitCount - prev.commitCount)) * 1000;
    }
  }
  now.rates = rates;
  state.lastTotals = now;
}

function renderMetrics() {
  const m = state.metrics;
  if (!m) return;
  const r = state.lastTotals?.rates ?? {};
  const v = (name, where) => sumOf(m, name, where);
  $("metrics-cards").replaceChildren(
    card("writes acknowledged", fmtNum(v("cairn_writes_accepted_total")), r.writes === undefined ? "" : `${fmtNum(r.writes, 1)}/s now`),
    card("HTTP requests", fmtNum(v("cairn_http_requests_total")), r.requests === undefined ? "" : `${fmtNum(r.requests, 1)}/s now`),
    card("connections", `${fmtNum(v("cairn_http_connections"))} HTTP`, `${fmtNum(v("cairn_ws_connections"))} WebSocket`),
    card("journal commit", r.commitMs === undefined ? "–" : `${fmtNum(r.commitMs, 2)} ms`, "mean over the last poll"),
    card("ops applied", fmtNum(v("cairn_apply_ops_total")), "on every shard"),
    card("dead-lettered", fmtNum(v("cairn_apply_dead_lettered_total")), `${fmtNum(v("cairn_apply_error_queued_total"))} error-queued`),
  );
  const filter = $("metrics-filter").value.trim().toLowerCase();
  const rows = [];
  for (const s of m.samples) {
    const labels = labelText(s.labels);
    if (filter && !`${s.name}${labels}`.toLowerCase().includes(filter)) continue;
    if (rows.length >= METRIC_ROWS_MAX) break;
    const fam = m.families.get(familyOf(s.name, m.families));
    rows.push(h("tr", {}, h("td", { title: fam?.help ?? "", text: s.name }), h("td", { class: "labels", text: labels }),
      h("td", { class: "num", text: fmtNum(s.value, 6) })));
  }
  $("metrics-table").tBodies[0].replaceChildren(...rows);
  $("metrics-count").textContent = `(${rows.length}${rows.length >= METRIC_ROWS_MAX ? "+" : ""} of ${m.samples.length}${m.bad ? `, ${m.bad} unreadable lines` : ""})`;
}

// ---- ops, shown briefly ----------------------------------------------------------------------

function opSummary(op) {
  if (!op || typeof op !== "object") return "–";
  switch (op.model) {
    case "edge":
      return `${op.graph} ${op.source_id}→${op.destination_id} ${op.state ?? ""} pos ${op.position}`;
    case "node":
      return `${op.graph} node ${op.node_id} ${op.action}${op.direction ? ` (${op.direction})` : ""}`;
    case "entity":
      return `${op.kind}/${op.id}${op.deleted ? " deleted" : ""}`;
    case "cell":
      return `${op.table}/${op.row_key}/${op.column}/${op.ref_key}`;
    case "counter":
      return `${op.metric} ${op.delta >= 0 ? "+" : ""}${op.delta} ${toJson(op.dimensions ?? {})}`;
    default:
      return `${op.model ?? "?"} ${toJson(op).slice(0, 80)}`;
  }
}

// ---- dead letters -----------------------------------------------------------------------------

function deadFilters() {
  const num = (id) => {
    const v = $(id).value.trim();
    return v === "" ? undefined : Number(v);
  };
  const f = {
    shard: $("dead-f-shard").value === "" ? undefined : Number($("dead-f-shard").value),
    model: $("dead-f-model").value || undefined,
    error: $("dead-f-error").value.trim() || undefined,
    older_than_s: num("dead-f-older"),
    newer_than_s: num("dead-f-newer"),
  };
  for (const k of Object.keys(f)) if (f[k] === undefined) delete f[k];
  return f;
}

async function refreshDead() {
  const f = deadFilters();
  const limit = $("dead-f-limit").value.trim() || "100";
  const page = await api("GET", `/v1/admin/dead${query({ ...f, limit, cursor: state.dead.cursor })}`);
  renderDead(page);
}

function renderDead(page) {
  const open = state.dead.open;
  const sig = toJson([page.dead, page.next_cursor, open && [open.shard, open.seq]]);
  $("dead-next").disabled = !page.next_cursor;
  $("dead-next").dataset.cursor = page.next_cursor ?? "";
  $("dead-first").disabled = state.dead.cursor === null;
  $("dead-scanned").textContent = `${page.dead.length} shown, ${fmtNum(page.scanned)} scanned`;
  $("dead-empty").hidden = page.dead.length > 0;
  if (sig === state.dead.sig) return;
  state.dead.sig = sig;
  const rows = page.dead.map((d) => {
    const key = `${d.shard}/${d.seq}`;
    const isOpen = open && `${open.shard}/${open.seq}` === key;
    return h("tr", { class: isOpen ? "selected" : "", data: { key } },
      h("td", { text: String(d.shard) }),
      h("td", { class: "num" }, h("button", { type: "button", class: "link open", title: "show its op and error history", text: String(d.seq),
        on: { click: () => openDead(d.shard, d.seq) } })),
      h("td", { class: "op", text: opSummary(d.op) }),
      h("td", { class: "num", text: fmtNum(d.attempts) }),
      h("td", { title: fmtClock(d.died_ms), text: `${fmtDuration((d.age_s ?? 0) * 1000)} ago` }),
      h("td", { class: "error", text: d.last_error ?? "" }));
  });
  $("dead-table").tBodies[0].replaceChildren(...rows);
}

async function openDead(shard, seq) {
  const result = $("dead-result");
  result.replaceChildren();
  try {
    const d = await api("GET", `/v1/admin/dead/${shard}/${seq}`);
    state.dead.open = { shard, seq, letter: d };
    renderDeadDetail(d);
    state.dead.sig = ""; // re-mark the selected row
    await guarded("dead", refreshDead);
  } catch (e) {
    showProblem("dead-open", e);
  }
}

function renderDeadDetail(d) {
  $("dead-detail").hidden = false;
  $("dead-detail-title").textContent = `Dead letter: shard ${d.shard}, seq ${d.seq}`;
  const fact = (k, v) => [h("dt", { text: k }), h("dd", { text: v })];
  $("dead-facts").replaceChildren(
    ...fact("model", d.op?.model ?? "?"),
    ...fact("op id", String(d.op_id)),
    ...fact("ts (HLC)", d.ts ?? "–"),
    ...fact("attempts", fmtNum(d.attempts)),
    ...fact("first failed", fmtClock(d.first_failed_ms)),
    ...fact("died", `${fmtClock(d.died_ms)} (${fmtDuration((d.age_s ?? 0) * 1000)} ago)`),
  );
  $("dead-history").replaceChildren(...(d.errors ?? []).map((e) => h("li", { text: typeof e === "string" ? e : toJson(e) })));
  $("dead-op").value = toJson(d.op, 2);
  $("dead-detail").scrollIntoView({ block: "nearest" });
}

function closeDead() {
  state.dead.open = null;
  state.dead.sig = "";
  $("dead-detail").hidden = true;
}

async function saveDeadOp() {
  const open = state.dead.open;
  if (!open) return;
  const text = $("dead-op").value;
  const result = $("dead-result");
  let edited;
  try {
    edited = parseJson(text);
  } catch (e) {
    showInlineProblem(result, { title: "The op is not valid JSON", detail: e.message });
    return;
  }
  const ok = await confirmAction({
    title: `Replace the op of dead letter ${open.shard}/${open.seq}?`,
    body: [
      "The new op is validated like a client write. If all its rows live on this shard it is edited in place (re-inject it next); if it has rows on other shards it is journaled again as a new write and the dead letter goes.",
      h("pre", { class: "json", text: toJson(edited, 2) }),
    ],
    ok: "Save op",
  });
  if (!ok) return;
  try {
    const r = await api("PUT", `/v1/admin/dead/${open.shard}/${open.seq}/op`, text);
    if (r.routed === "new_write") {
      closeDead();
      showResult($("dead-list-result"), [
        `Journaled again as a new write, seq ${r.seq} on shards ${toJson(r.shards)}; dead letter ${open.shard}/${open.seq} was removed. `,
        traceLink(r.seq),
      ]);
      traceSeq(r.seq);
    } else {
      const letter = { ...open.letter, ...r };
      open.letter = letter;
      renderDeadDetail(letter);
      showResult(result, "Edited in place (same seq and op id). Re-inject it to apply the edited op.");
    }
  } catch (e) {
    showInlineProblem(result, e);
  }
  await tick();
}

async function reinjectOpen() {
  const open = state.dead.open;
  if (!open) return;
  const reset = $("dead-reset").checked;
  const ok = await confirmAction({
    title: `Re-inject dead letter ${open.shard}/${open.seq}?`,
    body: [
      "It goes back into the shard's error queue, due now, and is applied through the normal apply path.",
      reset ? "Its attempt count restarts at 0 (the full retry budget)." : "Its attempt count is kept: one more failure makes it dead again.",
      h("pre", { class: "json", text: opSummary(open.letter?.op) }),
    ],
    ok: "Re-inject",
  });
  if (!ok) return;
  try {
    const r = await api("POST", "/v1/admin/dead/reinject", { shard: open.shard, seq: open.seq, reset_attempts: reset });
    const again = r.journaled_again?.[0];
    closeDead();
    showResult($("dead-list-result"), [
      `Re-injected ${open.shard}/${open.seq}${again ? ` (journaled again as seq ${again.new_seq})` : ""}. `,
      traceLink(again ? again.new_seq : open.seq),
    ]);
    traceSeq(again ? again.new_seq : open.seq);
  } catch (e) {
    showInlineProblem($("dead-result"), e);
  }
  await tick();
}

async function dropOpen() {
  const open = state.dead.open;
  if (!open) return;
  const ok = await confirmAction({
    title: `Drop dead letter ${open.shard}/${open.seq}?`,
    body: ["A dropped op is never applied on this shard. This cannot be undone.", h("pre", { class: "json", text: opSummary(open.letter?.op) })],
    ok: "Drop",
    danger: true,
  });
  if (!ok) return;
  try {
    const r = await api("DELETE", `/v1/admin/dead/${open.shard}/${open.seq}`);
    closeDead();
    showResult($("dead-list-result"), `Dropped ${fmtNum(r.dropped)} dead letter (${open.shard}/${open.seq}).`);
  } catch (e) {
    showInlineProblem($("dead-result"), e);
  }
  await tick();
}

function describeFilters(f) {
  const parts = Object.entries(f).map(([k, v]) => `${k} = ${v}`);
  return parts.length ? `matching ${parts.join(", ")}` : "— all of them, on every shard";
}

async function bulkDead(reinject) {
  const f = deadFilters();
  const all = Object.keys(f).length === 0;
  const ok = await confirmAction({
    title: `${reinject ? "Re-inject" : "Drop"} every dead letter ${describeFilters(f)}?`,
    body: reinject
      ? "They go back into their shards' error queues, due now, with their attempt counts reset."
      : "Dropped ops are never applied. This cannot be undone.",
    ok: reinject ? "Re-inject all" : "Drop all",
    danger: !reinject,
  });
  if (!ok) return;
  const result = $("dead-list-result");
  try {
    if (reinject) {
      const r = await api("POST", "/v1/admin/dead/reinject", all ? { all: true } : f);
      showResult(result, `Re-injected ${fmtNum(r.reinjected)} dead letters${r.journaled_again?.length ? ` (${r.journaled_again.length} journaled again)` : ""}.`);
    } else {
      const r = await api("DELETE", `/v1/admin/dead${query(all ? { all: true } : f)}`);
      showResult(result, `Dropped ${fmtNum(r.dropped)} dead letters.`);
    }
    closeDead();
  } catch (e) {
    showInlineProblem(result, e);
  }
  await tick();
}

// ---- error queue -------------------------------------------------------------------------------

async function refreshErrors() {
  const shard = $("errors-f-shard").value;
  const page = await api("GET", `/v1/admin/errors${query({ shard, limit: 100 })}`);
  const sig = toJson([page, state.role]);
  if (sig === state.errorsSig) return;
  state.errorsSig = sig;
  const rows = page.errors.map((t) =>
    h("tr", { data: { key: `${t.shard}/${t.seq}` } },
      h("td", { text: String(t.shard) }),
      h("td", { class: "num" }, h("button", { type: "button", class: "link", title: "trace this write", text: String(t.seq), on: { click: () => traceSeq(t.seq) } })),
      h("td", { class: "op", text: opSummary(t.op) }),
      h("td", { class: "num", text: fmtNum(t.attempts) }),
      h("td", { title: fmtClock(t.due_ms), text: t.due_in_ms > 0 ? `in ${fmtDuration(t.due_in_ms)}` : "now" }),
      h("td", { class: "error", text: t.last_error ?? "" }),
      h("td", { class: "row-actions" }, actButton("Retry now", "skip its backoff: make it due now", () => retryNow({ shard: t.shard, seq: t.seq })))));
  $("errors-table").tBodies[0].replaceChildren(...rows);
  $("errors-empty").hidden = page.errors.length > 0;
  if (page.truncated) $("errors-empty").hidden = true;
}

async function retryNow(body) {
  const what = body.all ? "every waiting task" : body.seq !== undefined ? `task ${body.shard}/${body.seq}` : `every waiting task of shard ${body.shard}`;
  const ok = await confirmAction({
    title: `Retry ${what} now?`,
    body: "Their backoff is skipped; their attempt counts do not change.",
    ok: "Retry now",
  });
  if (!ok) return;
  try {
    const r = await api("POST", "/v1/admin/errors/retry-now", body);
    showResult($("errors-result"), `${fmtNum(r.rescheduled)} made due now, ${fmtNum(r.due_already)} were due already.`);
  } catch (e) {
    showInlineProblem($("errors-result"), e);
  }
  await tick();
}

// ---- trace -------------------------------------------------------------------------------------

function traceLink(seq) {
  return h("button", { type: "button", class: "link", text: `trace seq ${seq}`, on: { click: () => traceSeq(seq) } });
}

function traceSeq(seq) {
  $("trace-seq").value = String(seq);
  state.trace = { seq: String(seq), auto: true };
  guarded("trace", refreshTrace);
}

const FINAL_TRACE_STATES = new Set(["applied", "replaced"]);

async function refreshTrace() {
  const { seq } = state.trace;
  if (seq === null) return;
  const el = $("trace-result");
  let t;
  try {
    t = await api("GET", `/v1/admin/trace/${encodeURIComponent(seq)}`);
  } catch (e) {
    state.trace.auto = false; // a seq that is not there stays not there: do not ask again each poll
    showInlineProblem(el, e);
    return;
  }
  if (state.trace.seq !== seq) return; // another lookup started meanwhile
  // Once every shard is done with it the answer stops changing: no need to poll it further.
  state.trace.auto = !FINAL_TRACE_STATES.has(t.state);
  const stateBadge = h("span", { class: `badge trace-state ${t.state === "applied" ? "good" : t.state === "dead" ? "bad" : "warn"}`,
    id: "trace-state", data: { state: t.state }, text: t.state });
  const facts = h("dl", { class: "facts" },
    h("dt", { text: "seq" }), h("dd", { text: String(t.seq) }),
    h("dt", { text: "op id" }), h("dd", { text: String(t.op_id ?? "–") }),
    h("dt", { text: "appended" }), h("dd", { text: fmtClock(t.appended_ms) }),
    h("dt", { text: "in journal" }), h("dd", { text: t.in_journal ? "yes" : "no (retention removed it)" }),
    t.replaced_by !== undefined ? [h("dt", { text: "replaced by" }), h("dd", {}, traceLink(t.replaced_by))] : null);
  const shardRows = (t.shards ?? []).map((s) =>
    h("tr", { data: { shard: String(s.shard), state: s.state } },
      h("td", { text: String(s.shard) }),
      h("td", { text: s.state }),
      h("td", { class: "num", text: fmtNum(s.cursor) }),
      h("td", { class: "num", text: s.attempts === undefined ? "" : fmtNum(s.attempts) }),
      h("td", {
        text: s.state === "error_queue" ? `due ${s.due_in_ms > 0 ? `in ${fmtDuration(s.due_in_ms)}` : "now"}`
          : s.state === "dead" ? `died ${fmtClock(s.died_ms)}`
            : s.state === "replaced" ? `by seq ${s.replaced_by}`
              : s.edited_ms ? `edited ${fmtClock(s.edited_ms)}` : "",
      }),
      h("td", { class: "error", text: s.last_error ?? "" })));
  const parts = [
    h("p", {}, "state: ", stateBadge, state.trace.auto ? h("span", { class: "muted", text: " (updating)" }) : null),
    facts,
    h("table", { class: "grid compact" },
      h("thead", {}, h("tr", {}, ...["shard", "state", "cursor", "attempts", "when", "last error"].map((c) => h("th", { text: c })))),
      h("tbody", {}, shardRows)),
    h("h4", { text: t.journaled_op ? "op (as a retry applies it, edited)" : "op" }),
    h("pre", { class: "json", text: t.op ? toJson(t.op, 2) : "null" }),
    t.journaled_op ? [h("h4", { text: "op as journaled" }), h("pre", { class: "json", text: toJson(t.journaled_op, 2) })] : null,
  ];
  el.replaceChildren(...parts.flat().filter(Boolean));
}

// ---- indexes -----------------------------------------------------------------------------------

async function refreshIndexes() {
  const { indexes } = await api("GET", "/v1/indexes");
  const progress = await Promise.all(indexes.map(async (def) => {
    try {
      return await api("GET", `/v1/indexes/${encodeURIComponent(def.name)}/clean`);
    } catch (e) {
      if (e.status === 404) return null; // no cleaner run of it on this gateway yet
      throw e;
    }
  }));
  const sig = toJson([indexes, progress, state.role]);
  if (sig === state.indexesSig) return;
  state.indexesSig = sig;
  const rows = indexes.map((def, i) => {
    const p = progress[i];
    const of = def.kind !== undefined ? `entity ${def.kind}` : `cell ${def.table}.${def.column}`;
    const props = (def.properties ?? []).map((x) => x.name).join(", ");
    let run = h("span", { class: "muted", text: "no run on this gateway" });
    let bar = null;
    if (p) {
      run = h("span", {}, badge(p.state, p.state === "done" ? "good" : p.error ? "bad" : "warn"), ` ${p.phase ?? ""}`,
        p.error ? h("span", { class: "error", text: ` ${p.error}` }) : null);
      const total = Number(p.rows_total);
      bar = h("div", { class: "progress" },
        h("progress", { max: total > 0 ? total : 1, value: total > 0 ? Math.min(Number(p.rows_scanned), total) : p.state === "done" ? 1 : 0 }),
        h("span", { class: "muted", text: ` ${fmtNum(p.rows_scanned)} / ${fmtNum(p.rows_total)} rows · +${fmtNum(p.rows_added)} −${fmtNum(p.rows_removed)} · ${fmtNum(p.rate_rows_per_s, 1)} rows/s${p.eta_s !== null && p.state === "running" ? ` · ${fmtDuration(p.eta_s * 1000)} left` : ""}` }));
    }
    return h("tr", { data: { index: def.name } },
      h("td", { text: def.name }),
      h("td", { text: `${of} (${props}; shard on ${def.shard_on})` }),
      h("td", {}, run),
      h("td", {}, bar),
      h("td", { class: "row-actions" }, actButton("Run cleaner", "back-fill and remove stale rows", () => startCleaner(def.name))));
  });
  $("indexes-table").tBodies[0].replaceChildren(...rows);
  $("indexes-empty").hidden = indexes.length > 0;
}

async function startCleaner(name) {
  const ok = await confirmAction({
    title: `Run the cleaner of index ${name}?`,
    body: "It back-fills missing index rows and tombstones stale ones, at the default rate, on this gateway.",
    ok: "Run cleaner",
  });
  if (!ok) return;
  try {
    await api("POST", `/v1/indexes/${encodeURIComponent(name)}/clean`);
    showResult($("indexes-result"), `The cleaner of ${name} started.`);
  } catch (e) {
    showInlineProblem($("indexes-result"), e);
  }
  await tick();
}

// ---- counters ----------------------------------------------------------------------------------

async function refreshCounterCatalog() {
  const catalog = await api("GET", "/v1/counters");
  const sig = toJson(catalog);
  if (state.counters.catalog && toJson(state.counters.catalog) === sig) return;
  state.counters.catalog = catalog;
  const sel = $("counters-metric");
  const keep = sel.value;
  sel.replaceChildren(...catalog.metrics.map((m) => h("option", { value: m.name, text: m.name })));
  if (catalog.metrics.some((m) => m.name === keep)) sel.value = keep;
  $("counters-empty").hidden = catalog.metrics.length > 0;
  $("counters-form").hidden = catalog.metrics.length === 0;
  renderCounterDims();
}

function renderCounterDims() {
  const metric = state.counters.catalog?.metrics.find((m) => m.name === $("counters-metric").value);
  const dims = metric?.dimensions ?? [];
  const keys = new Set((metric?.tables ?? []).map((t) => t.key[0]));
  $("counters-dims").replaceChildren(...dims.map((d) =>
    h("label", { title: keys.has(d.name) ? "a table's key starts with it: a series usually needs it" : "" },
      `${d.name}${keys.has(d.name) ? " *" : ""} `,
      h("input", { type: "text", size: d.type === "int" ? 10 : 6, data: { dim: d.name }, placeholder: d.type }))));
}

// The UTC range that ends with the current bucket: 24 hours or 14 days.
function recentRange(granularity) {
  const hour = 3600000;
  const day = 24 * hour;
  const now = Date.now();
  const to = granularity === "hour" ? Math.floor(now / hour) * hour + hour : Math.floor(now / day) * day + day;
  const from = granularity === "hour" ? to - 24 * hour : to - 14 * day;
  return { from: isoSeconds(from), to: isoSeconds(to), granularity };
}

async function refreshCounterSeries() {
  const q = state.counters.shown;
  if (!q) return;
  const params = { ...recentRange(q.granularity), ...q.dims };
  const s = await api("GET", `/v1/counters/${encodeURIComponent(q.name)}/series${query(params)}`);
  const canvas = $("counters-chart");
  canvas.hidden = false;
  const points = (s.points ?? []).map((p) => ({ t: p.time_ms, v: Number(p.count) }));
  const labelOf = (t) => {
    const d = new Date(t);
    return q.granularity === "hour" ? `${String(d.getUTCHours()).padStart(2, "0")}h` : `${d.getUTCMonth() + 1}-${String(d.getUTCDate()).padStart(2, "0")}`;
  };
  drawBarChart(canvas, { points, labelOf, formatY: (v) => fmtNum(v) });
  const last = points[points.length - 1];
  $("counters-summary").textContent = `${q.name}: total ${fmtNum(s.total)} over ${points.length} ${s.granularity} buckets (UTC) from table ${s.table}; current bucket ${fmtNum(last?.v)}.`;
}

// ---- the poll loop -----------------------------------------------------------------------------

function schedule() {
  clearTimeout(state.timer);
  state.timer = state.live ? setTimeout(tick, POLL_MS) : null;
}

// One round: who am I, then everything in parallel. Rounds never overlap: a click that asks for
// a refresh while one runs queues one more round after it (at most one waits).
let chain = Promise.resolve();
let queued = null;

function tick() {
  if (queued) return queued;
  queued = chain.then(() => {
    queued = null;
    return runRound();
  });
  chain = queued.catch(() => {});
  return queued;
}

async function runRound() {
  clearTimeout(state.timer);
  try {
    if (!(await refreshWhoami())) return; // the gateway did not answer: one problem, not one per panel
    if (!canRead()) return;
    const t = Date.now();
    await Promise.all([
      guarded("status", refreshStatus),
      guarded("metrics", refreshMetrics),
      guarded("dead", refreshDead),
      guarded("errors", refreshErrors),
      guarded("indexes", refreshIndexes),
      state.trace.auto ? guarded("trace", refreshTrace) : null,
      state.counters.catalog === null || state.tickCount % 15 === 0 ? guarded("counters", refreshCounterCatalog) : null,
      state.counters.shown ? guarded("counter-series", refreshCounterSeries) : null,
    ]);
    state.tickCount++;
    recordHistory(t);
    recordTotals(t);
    renderOverview();
    renderShards();
    renderGateways();
    renderCharts();
    renderMetrics();
    $("updated").textContent = `updated ${new Date().toLocaleTimeString(undefined, { hour12: false })}${state.live ? "" : " (paused)"}`;
  } finally {
    schedule();
  }
}

function setLive(live) {
  state.live = live;
  const b = $("live-toggle");
  b.setAttribute("aria-pressed", String(live));
  b.textContent = live ? "Pause updates" : "Resume updates";
  b.classList.toggle("paused", !live);
  if (live) tick();
  else {
    clearTimeout(state.timer);
    $("updated").textContent = `${$("updated").textContent.replace(/ \(paused\)$/, "")} (paused)`;
  }
}

// ---- wiring ------------------------------------------------------------------------------------

function wire() {
  $("gateway-origin").textContent = location.host;
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("token-input").value.trim();
    if (!v) return;
    setToken(v);
    $("token-input").value = "";
    closeDead();
    tick();
  });
  $("token-forget").addEventListener("click", () => {
    setToken("");
    closeDead();
    tick();
  });
  $("live-toggle").addEventListener("click", () => setLive(!state.live));
  $("refresh-now").addEventListener("click", () => tick());
  $("pause-all").addEventListener("click", () => setPaused(true));
  $("resume-all").addEventListener("click", () => setPaused(false));

  $("dead-filters").addEventListener("submit", (e) => {
    e.preventDefault();
    state.dead.cursor = null;
    state.dead.cursors = [];
    tick();
  });
  $("dead-f-clear").addEventListener("click", () => {
    $("dead-filters").reset();
    state.dead.cursor = null;
    state.dead.cursors = [];
    tick();
  });
  $("dead-next").addEventListener("click", () => {
    state.dead.cursors.push(state.dead.cursor);
    state.dead.cursor = $("dead-next").dataset.cursor || null;
    tick();
  });
  $("dead-first").addEventListener("click", () => {
    state.dead.cursor = null;
    state.dead.cursors = [];
    tick();
  });
  $("dead-reinject-matching").addEventListener("click", () => bulkDead(true));
  $("dead-drop-matching").addEventListener("click", () => bulkDead(false));
  $("dead-close").addEventListener("click", closeDead);
  $("dead-save").addEventListener("click", saveDeadOp);
  $("dead-reinject").addEventListener("click", reinjectOpen);
  $("dead-drop").addEventListener("click", dropOpen);
  $("dead-trace").addEventListener("click", () => state.dead.open && traceSeq(state.dead.open.seq));
  $("dead-reload").addEventListener("click", () => state.dead.open && openDead(state.dead.open.shard, state.dead.open.seq));

  $("errors-f-shard").addEventListener("change", () => tick());
  $("errors-retry-all").addEventListener("click", () => {
    const shard = $("errors-f-shard").value;
    retryNow(shard === "" ? { all: true } : { shard: Number(shard) });
  });

  $("trace-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("trace-seq").value.trim();
    if (!/^\d+$/.test(v)) {
      showInlineProblem($("trace-result"), { title: "Not a seq", detail: "a seq is the decimal number of a write's acknowledgement" });
      return;
    }
    traceSeq(v);
  });

  $("counters-metric").addEventListener("change", renderCounterDims);
  $("counters-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const dims = {};
    for (const input of $("counters-dims").querySelectorAll("input")) {
      if (input.value.trim()) dims[input.dataset.dim] = input.value.trim();
    }
    state.counters.shown = { name: $("counters-metric").value, granularity: $("counters-granularity").value, dims };
    guarded("counter-series", refreshCounterSeries);
  });

  $("metrics-filter").addEventListener("input", renderMetrics);
  window.addEventListener("resize", () => {
    renderCharts();
    if (state.counters.shown) guarded("counter-series", refreshCounterSeries);
  });
}

wire();
applyRole();
tick();
