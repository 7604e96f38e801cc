// The operator dashboard (cairnd's /ui) end to end: Debian's headless Chromium, driven by
// playwright-core, against a real cairnd on real MariaDB shards. Run under scripts/with-cairnd with
// --toml tests/ui/cairn.toml (tokens, a quick dead-letter budget, an entity kind, a counter metric):
//   cd tests/ui && npm ci && node --test dashboard.test.mjs
// Every expected value comes from the gateway's own API answers, never from this file. With
// CAIRN_UI_SCREENSHOT=<path> the admin run also writes a screenshot of the page there.
// The page's files are built into cairnd: the test first checks that cairnd serves the work tree's
// ui/ (else: rebuild). With CAIRN_UI_DIR=<repo>/ui it serves the work tree's files itself instead,
// through a proxy in front of cairnd (everything else goes to cairnd), to try ui/ without a rebuild.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const CI = process.env.CI === "true";
const URL_BASE = process.env.CAIRN_URL;
const CONFIG = process.env.CAIRN_CONFIG;
const SHARDS = process.env.CAIRN_TEST_SHARDS;
const CHROMIUM = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOT = process.env.CAIRN_UI_SCREENSHOT;
const REPO_UI = resolve(dirname(fileURLToPath(import.meta.url)), "../../ui");
const UI_DIR = process.env.CAIRN_UI_DIR ? resolve(process.env.CAIRN_UI_DIR) : null;
const WAIT_MS = 30000;

// What the run needs, and why it cannot run without it. Under CI a missing piece fails the run.
function missing() {
  if (!URL_BASE || !CONFIG) return "CAIRN_URL and CAIRN_CONFIG are not set: run under scripts/with-cairnd";
  if (!SHARDS) return "CAIRN_TEST_SHARDS is not set (the shards the test adds a refusing trigger to)";
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install -y chromium)`;
  if (spawnSync("mariadb", ["--version"]).status !== 0) return "the mariadb client is missing (scripts/setup installs it)";
  return null;
}
const why = missing();
if (why && CI) throw new Error(`dashboard test cannot run: ${why}`);
const skip = why ? `skipped: ${why}` : false;

// ---- the run's config: tokens and database -----------------------------------------------------

function readConfig() {
  const text = readFileSync(CONFIG, "utf8");
  const tokens = {};
  for (const block of text.split(/^\s*\[\[tokens\]\]\s*$/m).slice(1)) {
    const body = block.split(/^\s*\[/m)[0];
    const token = /^\s*token\s*=\s*"([^"]+)"/m.exec(body)?.[1];
    const role = /^\s*role\s*=\s*"([^"]+)"/m.exec(body)?.[1];
    if (token && role) tokens[role] = token;
  }
  const database = /^\s*database\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  // A top-level key: before the first table.
  const nodeId = /^\s*node_id\s*=\s*(\d+)/m.exec(text.split(/^\s*\[/m)[0])?.[1];
  assert.ok(tokens.admin && tokens.read, `the config ${CONFIG} needs an admin and a read token: run with --toml tests/ui/cairn.toml`);
  assert.ok(database, `no shard database in ${CONFIG}`);
  assert.ok(nodeId !== undefined, `no node_id in ${CONFIG}`);
  return { tokens, database, nodeId: Number(nodeId) };
}

// ---- the gateway, from node ---------------------------------------------------------------------

async function call(method, path, { body, token, raw = false } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(`${URL_BASE}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: raw ? null : text ? JSON.parse(text) : null };
}

// Polls `probe` (async, returns a value or undefined) until it returns something, within a deadline.
async function until(what, probe, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last !== undefined && last !== false && last !== null) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function sql(shard, database, statement) {
  const [host, port] = shard.split(":");
  return spawnSync("mariadb", ["--protocol=TCP", "-h", host, "-P", port, "-u", "cairn", "-pcairn", database, "-e", statement], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

// Every shard refuses the forward row of an edge at position 666 (as tests/integration/cli_test.cpp
// does): such a write is acknowledged, refused twice, and becomes a dead letter. The edges table
// appears when a shard's apply worker first connects, so creating the trigger is retried until then.
async function addPoisonTrigger(database) {
  for (const shard of SHARDS.split(",")) {
    let last;
    await until(`a poison trigger on ${shard}`, () => {
      // The trigger's body has a `;` of its own: the client must not end the statement there.
      last = sql(shard, database,
        "DELIMITER //\nCREATE TRIGGER IF NOT EXISTS poison BEFORE INSERT ON edges FOR EACH ROW " +
        "IF NEW.position = 666 AND NEW.direction = 0 THEN " +
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'position 666 is refused'; END IF //");
      return last.status === 0 || undefined;
    }).catch((e) => {
      throw new Error(`${e.message}: ${last?.stderr}`);
    });
  }
}

// A self-loop at position 666: both rows live on one shard, so its dead letter is edited in place.
async function writePoison(node, token) {
  const w = await call("POST", "/v1/graphs/follows/edges", { token, body: { source_id: node, destination_id: node, position: 666 } });
  assert.equal(w.status, 202, w.text);
  const seq = w.json.seq;
  const trace = await until(`seq ${seq} to be a dead letter`, async () => {
    const t = await call("GET", `/v1/admin/trace/${seq}`, { token });
    return t.json.state === "dead" ? t.json : undefined;
  });
  const shard = trace.shards.find((s) => s.state === "dead").shard;
  return { seq, shard, key: `${shard}/${seq}` };
}

// A gateway that crashed while holding acknowledged ops, as `kill -9` leaves it on the shards: its
// lease row on shard 0 lapsed without a release, and its applied marks are behind its last seq. The
// node id is one this gateway does not use; the tables exist once this gateway claimed its lease.
function silentGatewaySql(nodeId) {
  const [first, ...others] = SHARDS.split(",");
  const lease = `INSERT INTO gateway_leases (node_id, journal_id, holder, last_seq, renewed_at, expires_at, released) ` +
    `VALUES (${nodeId}, 4242, 'gw-crashed:8080 (pid 4242)', 57, NOW(6) - INTERVAL 90 SECOND, NOW(6) - INTERVAL 75 SECOND, 0)`;
  return [
    [first, `${lease}; INSERT INTO applied_marks (node_id, seq) VALUES (${nodeId}, 50)`],
    ...others.map((shard) => [shard, `INSERT INTO applied_marks (node_id, seq) VALUES (${nodeId}, 44)`]),
  ];
}

async function addSilentGateway(database, nodeId) {
  for (const [shard, statement] of silentGatewaySql(nodeId)) {
    const r = sql(shard, database, statement);
    assert.equal(r.status, 0, `a silent gateway's rows on ${shard}: ${r.stderr}`);
  }
}

function removeSilentGateway(database, nodeId) {
  for (const [shard] of silentGatewaySql(nodeId)) {
    const r = sql(shard, database, `DELETE FROM gateway_leases WHERE node_id = ${nodeId}; DELETE FROM applied_marks WHERE node_id = ${nodeId}`);
    assert.equal(r.status, 0, `removing the silent gateway's rows on ${shard}: ${r.stderr}`);
  }
}

// A gateway's state as `cairn status` names it (docs/cli.md).
const gatewayState = (g) => (g.active ? "running" : g.released ? "stopped" : "silent");

// ---- the page's files: cairnd's own, or the work tree's through a proxy ---------------------------

// Where the browser opens the page: cairnd, or the proxy of CAIRN_UI_DIR.
let pageBase = URL_BASE;
let proxy;

const CONTENT_TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml" };

// Serves /ui/<file> from `dir`, with the security headers of cairnd's own /ui/, and forwards every
// other request to cairnd as it came.
async function startUiProxy(dir) {
  const page = await fetch(`${URL_BASE}/ui/`);
  assert.equal(page.status, 200, "cairnd serves /ui/");
  const keep = ["content-security-policy", "x-content-type-options", "cache-control"];
  const pageHeaders = Object.fromEntries(keep.filter((k) => page.headers.has(k)).map((k) => [k, page.headers.get(k)]));
  const server = createServer(async (req, res) => {
    try {
      const path = new URL(req.url, URL_BASE).pathname;
      const name = path === "/ui/" ? "index.html" : path.startsWith("/ui/") ? path.slice(4) : null;
      if (name && !name.includes("/") && existsSync(join(dir, name))) {
        res.writeHead(200, { ...pageHeaders, "content-type": CONTENT_TYPES[extname(name)] ?? "application/octet-stream" });
        res.end(readFileSync(join(dir, name)));
        return;
      }
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const headers = { ...req.headers };
      for (const k of ["host", "connection", "content-length"]) delete headers[k];
      const up = await fetch(`${URL_BASE}${req.url}`, {
        method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined, redirect: "manual",
      });
      const out = {};
      up.headers.forEach((v, k) => {
        if (!["content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"].includes(k)) out[k] = v;
      });
      const body = Buffer.from(await up.arrayBuffer());
      res.writeHead(up.status, out);
      res.end(body);
    } catch (e) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`the test's proxy: ${e.message}`);
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return server;
}

// Without CAIRN_UI_DIR the page under test is the one built into cairnd: it must be the work tree's.
async function checkEmbeddedPage() {
  for (const name of readdirSync(REPO_UI)) {
    const served = await fetch(`${URL_BASE}/ui/${name}`);
    const same = served.status === 200 && Buffer.from(await served.arrayBuffer()).equals(readFileSync(join(REPO_UI, name)));
    assert.ok(same, `cairnd serves a different ui/${name} than the work tree (${served.status}): rebuild cairnd ` +
      "(scripts/build), or run with CAIRN_UI_DIR=<repo>/ui to serve the work tree's files through the test's proxy");
  }
}

// ---- the browser --------------------------------------------------------------------------------

let chromium;
let browser;
let config;

before(async () => {
  if (skip) return;
  ({ chromium } = await import("playwright-core"));
  config = readConfig();
  await until("cairnd to be ready", async () => (await call("GET", "/readyz")).status === 200 || undefined);
  // A shard is up once its apply worker has created the tables: the trigger goes on a finished schema.
  await until("every shard to be up", async () => {
    const st = await call("GET", "/v1/admin/status", { token: config.tokens.admin });
    return (st.status === 200 && st.json.shards.every((x) => x.up)) || undefined;
  });
  await addPoisonTrigger(config.database);
  if (UI_DIR) {
    proxy = await startUiProxy(UI_DIR);
    pageBase = `http://127.0.0.1:${proxy.address().port}`;
  } else {
    await checkEmbeddedPage();
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
});

after(async () => {
  await browser?.close();
  proxy?.close();
});

// Records what a page did wrong: console errors, uncaught exceptions, requests that failed and
// answers of 400 or more. A test declares the kinds of answer it provokes on purpose (allow), and
// clean() fails on any other, and on an allowed kind that never came. Chromium also logs each such
// answer as a console error ("Failed to load resource: ... status of 400"): those are counted
// against the answers; any other console error fails.
function watch(page) {
  const w = { errors: [], failed: [], bad: [], allowed: [] };
  page.on("console", (m) => {
    if (m.type() === "error") w.errors.push(m.text());
  });
  page.on("pageerror", (e) => w.errors.push(`uncaught: ${e.message}`));
  page.on("requestfailed", (r) => w.failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) w.bad.push({ method: r.request().method(), path: new URL(r.url()).pathname, status: r.status() });
  });
  w.allow = (method, path, status) => w.allowed.push({ method, path, status });
  w.clean = () => {
    assert.deepEqual(w.failed, [], "failed requests");
    const same = (a, b) => a.method === b.method && a.path === b.path && a.status === b.status;
    const unexpected = w.bad.filter((b) => !w.allowed.some((a) => same(a, b)));
    assert.deepEqual(unexpected, [], "answers of 400 or more that the test did not provoke");
    for (const a of w.allowed) assert.ok(w.bad.some((b) => same(a, b)), `the provoked answer ${a.method} ${a.path} ${a.status} came`);
    const loadErrors = w.errors.filter((e) => /^Failed to load resource: the server responded with a status of \d+/.test(e));
    const others = w.errors.filter((e) => !loadErrors.includes(e));
    assert.deepEqual(others, [], "console errors");
    assert.ok(loadErrors.length <= w.bad.length, `console errors of failed loads: ${loadErrors.join("; ")}`);
  };
  return w;
}

async function openDashboard(context) {
  const page = await context.newPage();
  const w = watch(page);
  const res = await page.goto(`${pageBase}/ui`);
  assert.equal(res.status(), 200);
  assert.equal(new URL(page.url()).pathname, "/ui/");
  assert.match(res.headers()["content-security-policy"] ?? "", /default-src 'self'/);
  return { page, w };
}

async function useToken(page, token, role) {
  await page.fill("#token-input", token);
  await page.click("#token-use");
  await page.locator("#role-badge", { hasText: `role: ${role}` }).waitFor({ timeout: WAIT_MS });
}

async function confirmDialog(page, { ok = true } = {}) {
  const dialog = page.locator("#confirm-dialog");
  await dialog.waitFor({ state: "visible", timeout: WAIT_MS });
  await page.click(ok ? "#confirm-ok" : "#confirm-cancel");
  await dialog.waitFor({ state: "hidden", timeout: WAIT_MS });
}

// The page's shard rows say what /v1/admin/status says of each shard.
async function checkShardHealth(page, token) {
  const status = (await call("GET", "/v1/admin/status", { token })).json;
  assert.ok(status.shards.length >= 1);
  await until("a row per shard", async () => (await page.locator("#shards-table tbody tr").count()) === status.shards.length || undefined);
  for (const sh of status.shards) {
    const want = !sh.up ? "down" : sh.paused ? "paused" : "up";
    const row = page.locator(`#shards-table tbody tr[data-shard="${sh.shard}"]`);
    assert.equal((await row.locator(".health").innerText()).trim(), want, `shard ${sh.shard}`);
  }
  return status;
}

// The picture for docs/dashboard.md: some traffic first, so that the charts have something to
// draw: a batch of edges per poll of the page, with one shard paused for a few polls so that its
// lag rises and falls, until the page has drawn 15 polls.
async function takeScreenshot(page, token, pausedShard) {
  const polls = () => page.evaluate(() => Number(document.getElementById("lag-chart").dataset.points));
  let paused = false;
  // A crashed gateway beside this one, so that the Gateways panel shows what it flags.
  const silent = (await selfGateway(token)).node_id === 1023 ? 1022 : 1023;
  await addSilentGateway(config.database, silent);
  try {
    for (let n = 0, p = await polls(); p < 15; n++) {
      const edges = Array.from({ length: 200 }, (_, i) => ({ source_id: 1000 + n, destination_id: 2000 + i }));
      assert.equal((await call("POST", "/v1/graphs/follows/edges", { token, body: { edges } })).status, 202);
      if (n === 3) paused = (await call("POST", "/v1/admin/apply/pause", { token, body: { shard: pausedShard } })).status === 200;
      if (n === 8 && paused) paused = (await call("POST", "/v1/admin/apply/resume", { token, body: { shard: pausedShard } })).status !== 200;
      const seen = p;
      p = await until("the page's next poll", async () => {
        const now = await polls();
        return now > seen ? now : undefined;
      });
    }
    await page.locator(`#gateways-table tbody tr[data-node="${silent}"]`).waitFor({ timeout: WAIT_MS });
    const path = resolve(SCREENSHOT);
    mkdirSync(dirname(path), { recursive: true });
    await page.screenshot({ path, fullPage: true });
  } finally {
    if (paused) await call("POST", "/v1/admin/apply/resume", { token, body: { shard: pausedShard } });
    removeSilentGateway(config.database, silent);
  }
}

test("without a valid token the page asks for one and reads nothing", { skip, timeout: 60000 }, async () => {
  const context = await browser.newContext();
  const { page, w } = await openDashboard(context);
  await page.locator("#locked").waitFor({ state: "visible", timeout: WAIT_MS });
  assert.equal(await page.locator("#content").isHidden(), true);
  const asked = [];
  page.on("request", (r) => asked.push(new URL(r.url()).pathname));

  // An unknown token: the page says so, with the gateway's own problem if it answers one.
  const wrong = "not-a-token-of-this-gateway";
  const who = await call("GET", "/v1/whoami", { token: wrong });
  await page.fill("#token-input", wrong);
  await page.click("#token-use");
  const banner = page.locator('#problems li[data-source="whoami"]');
  await banner.waitFor({ timeout: WAIT_MS });
  const text = await banner.innerText();
  if (who.status === 401) {
    w.allow("GET", "/v1/whoami", 401);
    assert.ok(text.includes(who.json.title) && text.includes(who.json.detail), text);
  } else {
    assert.equal(who.status, 200, who.text);
    assert.equal(who.json.authenticated, false, who.text);
    assert.match(text, /Token not accepted/);
  }
  assert.equal(await page.locator("#content").isHidden(), true);
  assert.deepEqual([...new Set(asked)].filter((p) => !p.startsWith("/ui/")), ["/v1/whoami"], "a page without a valid token asks nothing else");
  w.clean();
  await context.close();
});

// This gateway's row of the status's `gateways` (exactly one is `self`).
async function selfGateway(token) {
  const st = (await call("GET", "/v1/admin/status", { token })).json;
  assert.ok(Array.isArray(st.gateways), `gateways is ${st.gateways}: ${st.gateways_error}`);
  const mine = st.gateways.filter((g) => g.self);
  assert.equal(mine.length, 1, JSON.stringify(st.gateways));
  return mine[0];
}

// The page's row of one gateway, as text per column.
async function gatewayRow(page, nodeId) {
  const row = page.locator(`#gateways-table tbody tr[data-node="${nodeId}"]`);
  await row.waitFor({ timeout: WAIT_MS });
  const cell = async (c) => (await row.locator(`td.${c}`).innerText()).trim();
  return {
    row,
    node: await cell("node"), holder: await cell("holder"), state: await cell("state"), lastSeq: await cell("last-seq"),
    appliedThrough: await cell("applied-through"), unapplied: await cell("unapplied"),
    atRisk: await row.getAttribute("data-risk"), highlighted: await row.evaluate((tr) => tr.classList.contains("at-risk")),
  };
}

const num = (v) => Number(v).toLocaleString("en-US");

// Waits until the page's row of the gateway shows `want` (a gateway of the status): state, seqs and
// unapplied ops.
async function waitForGatewayRow(page, want) {
  return until(`the row of gateway ${want.node_id} to show ${JSON.stringify(want)}`, async () => {
    const r = await gatewayRow(page, want.node_id);
    const unapplied = r.unapplied.split(/\s/)[0];
    return r.state === gatewayState(want) && r.lastSeq === num(want.last_seq) && r.appliedThrough === num(want.applied_through) &&
      unapplied === num(want.unapplied_ops) ? r : undefined;
  });
}

test("gateways: this one with its node id, its unapplied ops while applying is paused, and a silent one at risk", { skip, timeout: 120000 }, async () => {
  const admin = config.tokens.admin;
  const context = await browser.newContext();
  const { page, w } = await openDashboard(context);
  await useToken(page, admin, "admin");

  // This gateway: the row marked "this" is the node id of its config, held by its own port.
  const self = await selfGateway(admin);
  assert.equal(self.node_id, config.nodeId, "the status's self row is the config's node id");
  if (process.env.CAIRN_PORT) assert.ok(self.holder.includes(`:${process.env.CAIRN_PORT} `), self.holder);
  const mine = await waitForGatewayRow(page, self);
  assert.match(mine.node, new RegExp(`^${self.node_id}\\s+this$`));
  assert.equal(mine.holder, self.holder);
  assert.equal(mine.state, "running");
  assert.equal(await page.locator("#gateways-table .badge.self").count(), 1, "one gateway is marked this");
  assert.equal(await page.locator("#gateways-table tbody tr").count(), (await call("GET", "/v1/admin/status", { token: admin })).json.gateways.length);

  // Applying paused on every shard (through the page's dialog): a write stays in this gateway's
  // journal only, and its row shows the unapplied ops the status reports. Not at risk: it runs.
  await page.click("#pause-all");
  await confirmDialog(page);
  await until("every shard to be paused", async () => (await call("GET", "/v1/admin/status", { token: admin })).json.shards.every((x) => x.paused) || undefined);
  try {
    const w1 = await call("POST", "/v1/graphs/follows/edges", { token: admin, body: { edges: [{ source_id: 31, destination_id: 32 }, { source_id: 33, destination_id: 34 }] } });
    assert.equal(w1.status, 202, w1.text);
    const behind = await until("this gateway's unapplied ops in the status", async () => {
      const g = await selfGateway(admin);
      return g.last_seq >= w1.json.seq && g.unapplied_ops > 0 ? g : undefined;
    });
    const paused = await waitForGatewayRow(page, behind);
    assert.equal(paused.atRisk, "no");
    assert.equal(paused.highlighted, false, "a running gateway with unapplied ops is not flagged");
  } finally {
    await page.click("#resume-all");
    await confirmDialog(page);
  }
  const caughtUp = await until("this gateway's ops to be applied everywhere", async () => {
    const g = await selfGateway(admin);
    return g.unapplied_ops === 0 ? g : undefined;
  });
  await waitForGatewayRow(page, caughtUp);

  // A crashed gateway that still holds acknowledged ops: silent, and flagged at risk.
  const silentId = self.node_id === 1023 ? 1022 : 1023;
  await addSilentGateway(config.database, silentId);
  try {
    const all = await until("the silent gateway in the status", async () => {
      const list = (await call("GET", "/v1/admin/status", { token: admin })).json.gateways;
      return list?.some((g) => g.node_id === silentId) ? list : undefined;
    });
    const gone = all.find((g) => g.node_id === silentId);
    assert.equal(gatewayState(gone), "silent", JSON.stringify(gone));
    assert.ok(gone.unapplied_ops > 0, JSON.stringify(gone));
    const risky = await waitForGatewayRow(page, gone);
    assert.equal(risky.atRisk, "yes");
    assert.equal(risky.highlighted, true, "the silent gateway's row is highlighted");
    assert.match(risky.unapplied, /at risk/);
    assert.equal(risky.holder, gone.holder);
    assert.ok(!/this/.test(risky.node), risky.node);
    const flagged = all.filter((g) => gatewayState(g) === "silent" && g.unapplied_ops > 0).length;
    await page.locator("#gateways-count", { hasText: `(${all.length}, ${flagged} at risk)` }).waitFor({ timeout: WAIT_MS });
    assert.equal((await gatewayRow(page, self.node_id)).atRisk, "no");
  } finally {
    removeSilentGateway(config.database, silentId);
  }
  await page.locator(`#gateways-table tbody tr[data-node="${silentId}"]`).waitFor({ state: "detached", timeout: WAIT_MS });
  w.clean();
  await context.close();
});

test("admin: shard health, indexes, counters, and a dead letter edited, re-injected and applied through the UI", { skip, timeout: 180000 }, async () => {
  const admin = config.tokens.admin;
  // Something for the indexes and counters panels to show.
  const created = await call("POST", "/v1/indexes", { token: admin, body: { name: "users_by_age", kind: "user", properties: [{ name: "age", type: "int" }] } });
  assert.equal(created.status, 201, created.text);
  const put = await call("PUT", `/v1/entities/user/${"0".repeat(31)}1?wait=applied`, { token: admin, body: { name: "ada", age: 36 } });
  assert.equal(put.status, 202, put.text);
  const inc = await call("POST", "/v1/counters/plays?wait=applied", {
    token: admin,
    body: { increments: [{ dimensions: { track_id: 5, country: "DE" }, delta: 3 }, { dimensions: { track_id: 5, country: "FR" } }] },
  });
  assert.equal(inc.status, 202, inc.text);

  const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } });
  const { page, w } = await openDashboard(context);
  await useToken(page, admin, "admin");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("cairn.token")), admin, "the token is kept in sessionStorage");
  const status = await checkShardHealth(page, admin);

  // The index and its back-fill run, as GET /v1/indexes/{name}/clean reports it.
  const run = await until("the back-fill of users_by_age to finish", async () => {
    const p = (await call("GET", "/v1/indexes/users_by_age/clean", { token: admin })).json;
    return p.state === "done" ? p : undefined;
  });
  const indexRow = page.locator('#indexes-table tbody tr[data-index="users_by_age"]');
  await indexRow.locator(".badge", { hasText: run.state }).waitFor({ timeout: WAIT_MS });
  assert.ok((await indexRow.innerText()).includes(`${run.rows_scanned} / ${run.rows_total} rows`), await indexRow.innerText());

  // The counter's recent values: the page's total is the API's.
  const hour = 3600000;
  const to = Math.floor(Date.now() / hour) * hour + hour;
  const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  const series = (await call("GET", `/v1/counters/plays/series?track_id=5&granularity=hour&from=${iso(to - 24 * hour)}&to=${iso(to)}`, { token: admin })).json;
  assert.ok(series.total > 0, JSON.stringify(series));
  await page.selectOption("#counters-metric", "plays");
  await page.fill('#counters-dims input[data-dim="track_id"]', "5");
  await page.click('#counters-form button[type="submit"]');
  await page.locator("#counters-summary", { hasText: `total ${series.total} over ${series.points.length} hour buckets` }).waitFor({ timeout: WAIT_MS });

  // Pause and resume one shard through its row's buttons and the confirmation dialog.
  const shard0 = page.locator('#shards-table tbody tr[data-shard="0"]');
  await shard0.locator("button", { hasText: "Pause" }).click();
  await confirmDialog(page);
  await until("shard 0 to be paused", async () => (await call("GET", "/v1/admin/status", { token: admin })).json.shards[0].paused || undefined);
  await shard0.locator(".health", { hasText: "paused" }).waitFor({ timeout: WAIT_MS });
  await shard0.locator("button", { hasText: "Resume" }).click();
  await confirmDialog(page);
  await until("shard 0 to be resumed", async () => !(await call("GET", "/v1/admin/status", { token: admin })).json.shards[0].paused || undefined);
  await shard0.locator(".health", { hasText: "up" }).waitFor({ timeout: WAIT_MS });

  // A dead letter appears in the list with the shard's error.
  const dead = await writePoison(5, admin);
  const row = page.locator(`#dead-table tbody tr[data-key="${dead.key}"]`);
  await row.waitFor({ timeout: WAIT_MS });
  const listed = (await call("GET", `/v1/admin/dead?shard=${dead.shard}`, { token: admin })).json.dead.find((d) => d.seq === dead.seq);
  assert.ok((await row.innerText()).includes(listed.last_error), await row.innerText());

  // Opened: its error history and its op, as the API shows them.
  const shown = (await call("GET", `/v1/admin/dead/${dead.shard}/${dead.seq}`, { token: admin })).json;
  await row.locator("button.open").click();
  await page.locator("#dead-detail-title", { hasText: `seq ${dead.seq}` }).waitFor({ timeout: WAIT_MS });
  assert.deepEqual(await page.locator("#dead-history li").allInnerTexts(), shown.errors);
  const op = JSON.parse(await page.inputValue("#dead-op"));
  assert.deepEqual(op, shown.op);
  // Its trace, from the letter's Trace button, is the API's.
  const deadTrace = (await call("GET", `/v1/admin/trace/${dead.seq}`, { token: admin })).json;
  await page.click("#dead-trace");
  await page.locator(`#trace-state[data-state="${deadTrace.state}"]`).waitFor({ timeout: WAIT_MS });
  const traceRow = page.locator(`#trace-result tr[data-shard="${dead.shard}"]`);
  assert.equal(await traceRow.getAttribute("data-state"), deadTrace.shards.find((x) => x.shard === dead.shard).state);

  // A misspelt field: the gateway refuses the edit, and the page shows the problem it answered.
  const bad = { ...op, positon: 667 };
  const refusal = (await call("PUT", `/v1/admin/dead/${dead.shard}/${dead.seq}/op`, { token: admin, body: bad })).json;
  assert.equal(refusal.status, 400);
  w.allow("PUT", `/v1/admin/dead/${dead.shard}/${dead.seq}/op`, 400);
  await page.fill("#dead-op", JSON.stringify(bad, null, 2));
  await page.click("#dead-save");
  await confirmDialog(page);
  const problem = page.locator("#dead-result .problem");
  await problem.waitFor({ timeout: WAIT_MS });
  const problemText = await problem.innerText();
  assert.ok(problemText.includes(refusal.title) && problemText.includes(refusal.detail), problemText);

  // The fixed op, first cancelled in the confirmation (nothing is sent), then confirmed.
  const fixed = { ...op, position: 667 };
  await page.fill("#dead-op", JSON.stringify(fixed, null, 2));
  await page.click("#dead-save");
  await confirmDialog(page, { ok: false });
  assert.equal((await call("GET", `/v1/admin/dead/${dead.shard}/${dead.seq}`, { token: admin })).json.op.position, 666, "a cancelled edit changes nothing");
  await page.click("#dead-save");
  await confirmDialog(page);
  await page.locator("#dead-result .ok", { hasText: "in place" }).waitFor({ timeout: WAIT_MS });
  assert.equal((await call("GET", `/v1/admin/dead/${dead.shard}/${dead.seq}`, { token: admin })).json.op.position, 667);

  if (SCREENSHOT) await takeScreenshot(page, admin, status.shards.length - 1);

  // Re-injected through the UI: applied, the list empties, and the trace (which the page opens
  // on the re-injected seq) says applied.
  await page.click("#dead-reinject");
  await confirmDialog(page);
  await page.locator(`#trace-state[data-state="applied"]`).waitFor({ timeout: WAIT_MS });
  assert.equal(await page.inputValue("#trace-seq"), String(dead.seq));
  await page.locator("#dead-empty").waitFor({ state: "visible", timeout: WAIT_MS });
  assert.equal(await page.locator("#dead-table tbody tr").count(), 0);
  const traced = (await call("GET", `/v1/admin/trace/${dead.seq}`, { token: admin })).json;
  assert.equal(traced.state, "applied", JSON.stringify(traced));
  const edge = (await call("GET", "/v1/graphs/follows/edges/5/5", { token: admin })).json;
  assert.equal(edge.position, 667);
  assert.equal((await call("GET", "/v1/admin/dead", { token: admin })).json.dead.length, 0);

  // The charts have a line per shard.
  assert.equal(await page.locator("#chart-legend li").count(), status.shards.length);
  w.clean();
  await context.close();
});

test("read token: everything shows, every acting control is disabled and says it needs admin", { skip, timeout: 120000 }, async () => {
  const admin = config.tokens.admin;
  const context = await browser.newContext();
  const { page, w } = await openDashboard(context);
  await useToken(page, config.tokens.read, "read");
  await checkShardHealth(page, config.tokens.read);

  const dead = await writePoison(7, admin);
  const row = page.locator(`#dead-table tbody tr[data-key="${dead.key}"]`);
  await row.waitFor({ timeout: WAIT_MS });
  await row.locator("button.open").click();
  await page.locator("#dead-detail-title", { hasText: `seq ${dead.seq}` }).waitFor({ timeout: WAIT_MS });
  assert.equal(await page.locator("#dead-op").getAttribute("readonly"), "", "the op cannot be edited");

  const acting = await page.locator("[data-act]").evaluateAll((els) =>
    els.map((e) => ({ id: e.id || e.textContent.trim(), disabled: e.disabled, title: e.title, visible: e.offsetParent !== null })));
  const ids = acting.map((a) => a.id);
  for (const id of ["pause-all", "resume-all", "dead-save", "dead-reinject", "dead-drop", "dead-reinject-matching", "dead-drop-matching", "errors-retry-all"]) {
    assert.ok(ids.includes(id), `${id} is an acting control`);
  }
  const status = (await call("GET", "/v1/admin/status", { token: config.tokens.read })).json;
  assert.equal(acting.filter((a) => a.id === "Pause" || a.id === "Resume").length, status.shards.length, "a pause or resume button per shard");
  assert.ok(acting.some((a) => a.id === "Run cleaner"), "the index's cleaner button");
  for (const a of acting) {
    assert.equal(a.disabled, true, `${a.id} is disabled for a read token`);
    assert.match(a.title, /needs the admin role/, `${a.id}'s tooltip`);
  }
  // Looking is allowed: the dead letter's history is there.
  assert.ok((await page.locator("#dead-history li").count()) >= 1);
  w.clean();
  await context.close();

  const dropped = await call("DELETE", `/v1/admin/dead/${dead.shard}/${dead.seq}`, { token: admin });
  assert.equal(dropped.status, 200, dropped.text);
});
