// The live check of docs/openapi.json and docs/asyncapi.json: against a real cairnd (CAIRN_URL, as
// scripts/with-cairnd starts it with tests/spec/cairn-spec.toml), it sends every operation's
// named example request, in an order that makes each meaningful (writes before the reads that find
// them; dead letters made on purpose by a shard trigger before the admin routes that handle them),
// and checks the real answer: its status is the one the example is filed under, its body is valid
// against that response's schema, and it has the same members as the example (so an example cannot
// show a member cairnd never sends, nor miss one it always sends). Then each operation's
// x-cairn-role: without a token it must answer 401 (unless public), with a token of the role below
// 403, and every example above already ran with a token of exactly its role. Then the WebSocket
// API: JSON and msgpack requests, answers matched by id and valid against the AsyncAPI messages
// (and their bodies against the OpenAPI route's answer), refusals of the upgrade as documented.
//
// Usage: scripts/with-cairnd --database cairn_spec --toml tests/spec/cairn-spec.toml -- node tests/spec/examples.mjs
// Needs CAIRN_URL, CAIRN_WS_URL, CAIRN_CONFIG (for the tokens and the shards) and the mariadb client
// (it adds a trigger to the shards). Never reads stdin; every wait has a deadline. Prints a line per
// failure and "examples: N passed, M failed"; exits non-zero on any failure.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { decode as msgpackDecode, encode as msgpackEncode } from '@msgpack/msgpack';
import WebSocket from 'ws';

import { makeAjv, resolvePointer } from './spec_lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const openapi = JSON.parse(readFileSync(resolve(here, '../../docs/openapi.json'), 'utf8'));
const asyncapi = JSON.parse(readFileSync(resolve(here, '../../docs/asyncapi.json'), 'utf8'));
const URL_BASE = process.env.CAIRN_URL;
const WS_URL = process.env.CAIRN_WS_URL;
const CONFIG = process.env.CAIRN_CONFIG;
if (!URL_BASE || !WS_URL || !CONFIG) {
  console.error('examples: CAIRN_URL, CAIRN_WS_URL and CAIRN_CONFIG must be set (run it through scripts/with-cairnd)');
  process.exit(2);
}

// ---- what the config says: tokens by role, shards -------------------------------------------

const configText = readFileSync(CONFIG, 'utf8');
const tokens = {};
for (const m of configText.matchAll(/\[\[tokens\]\][^[]*?token\s*=\s*"([^"]+)"[^[]*?role\s*=\s*"(\w+)"/g)) tokens[m[2]] = m[1];
for (const role of ['read', 'write', 'admin']) {
  if (!tokens[role]) {
    console.error(`examples: the config has no token of role ${role} (append tests/spec/cairn-spec.toml with --toml)`);
    process.exit(2);
  }
}
const shards = [...configText.matchAll(/\[\[shards\]\][^[]*?host\s*=\s*"([^"]+)"[^[]*?port\s*=\s*(\d+)[^[]*?user\s*=\s*"([^"]+)"[^[]*?password\s*=\s*"([^"]*)"[^[]*?database\s*=\s*"([^"]+)"/g)]
  .map((m) => ({ host: m[1], port: m[2], user: m[3], password: m[4], database: m[5] }));
const ROLES = ['none', 'read', 'write', 'admin'];

// ---- results ----------------------------------------------------------------------------------

let passed = 0;
const failures = [];
function pass() { ++passed; }
function fail(what, why) {
  failures.push(`${what}: ${why}`);
  console.log(`FAIL ${what}: ${why}`);
}
function expect(cond, what, why) {
  if (cond) pass();
  else fail(what, why);
  return cond;
}

// ---- the spec's operations and examples -------------------------------------------------------

const METHODS = ['get', 'put', 'post', 'delete'];
const deref = (x) => (x && x.$ref ? resolvePointer(openapi, x.$ref) : x);
const ops = new Map();  // operationId -> {method, path, op}
for (const [path, item] of Object.entries(openapi.paths)) {
  for (const method of METHODS) if (item[method]) ops.set(item[method].operationId, { method, path, op: item[method] });
}
const ajvOpenApi = makeAjv(openapi, 'openapi.json');
const ajvAsyncApi = makeAjv(asyncapi, 'asyncapi.json');
const compiled = new Map();
function validatorOf(ajv, schema) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) compiled.set(key, ajv.compile(ajv.schemaOf(schema)));
  return compiled.get(key);
}

// The request of example `name` of operation `id`: path, query, headers and body from the spec.
function exampleRequest(id, name) {
  const { method, path, op } = ops.get(id);
  const req = { method: method.toUpperCase(), path, query: {}, headers: {}, body: undefined, mediaType: undefined };
  for (const p of (op.parameters ?? []).map(deref)) {
    const ex = p.examples?.[name];
    if (!ex) continue;
    if (p.in === 'path') req.path = req.path.replace(`{${p.name}}`, encodeURIComponent(String(ex.value)));
    else if (p.in === 'query') req.query[p.name] = String(ex.value);
    else if (p.in === 'header') req.headers[p.name] = String(ex.value);
  }
  for (const [mt, media] of Object.entries(deref(op.requestBody)?.content ?? {})) {
    if (media.examples?.[name]) {
      req.body = media.examples[name].value;
      req.mediaType = mt;
    }
  }
  return req;
}

// The answer example `name` is filed under: {status, mediaType, schema, value}.
function exampleAnswer(id, name) {
  const { op } = ops.get(id);
  for (const [status, r] of Object.entries(op.responses)) {
    for (const [mt, media] of Object.entries(deref(r).content ?? {})) {
      if (media.examples?.[name]) return { status: Number(status), mediaType: mt, schema: media.schema, value: media.examples[name].value };
    }
  }
  return null;
}

function exampleNames(id) {
  const { op } = ops.get(id);
  const names = new Set();
  for (const r of Object.values(op.responses)) for (const media of Object.values(deref(r).content ?? {})) Object.keys(media.examples ?? {}).forEach((n) => names.add(n));
  return [...names];
}

// ---- HTTP ---------------------------------------------------------------------------------------

async function send({ method, path, query = {}, headers = {}, body, mediaType, token }) {
  const qs = new URLSearchParams(query).toString();
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  let payload;
  if (body instanceof Uint8Array) {
    payload = body;
    h['Content-Type'] = mediaType ?? 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    h['Content-Type'] = 'application/json';
  }
  const res = await fetch(`${URL_BASE}${path}${qs ? `?${qs}` : ''}`, { method, headers: h, body: payload, redirect: 'manual', signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  let json;
  if (type.startsWith('application/json') || type.startsWith('application/problem+json')) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, type, text, json, headers: res.headers };
}

const tokenFor = (role) => (role === 'none' ? undefined : tokens[role]);

// Sends example `name` of operation `id` (with `override` applied to its request) with a token of
// exactly the operation's role, and checks the answer against the example's response.
async function runExample(id, name, override = (r) => r) {
  const what = `${id} example ${name}`;
  const entry = ops.get(id);
  if (!entry) return fail(what, 'no such operation in openapi.json');
  const answer = exampleAnswer(id, name);
  if (!answer) return fail(what, 'no answer example of this name');
  const req = override(exampleRequest(id, name));
  const res = await send({ ...req, token: tokenFor(entry.op['x-cairn-role']) });
  return checkAnswer(what, entry, answer.status, res, answer);
}

function checkAnswer(what, entry, expectedStatus, res, answer) {
  if (!expect(res.status === expectedStatus, what, `status ${res.status}, the spec says ${expectedStatus}: ${res.text.slice(0, 300)}`)) return res;
  const r = deref(entry.op.responses[String(res.status)]);
  if (!r?.content) {
    pass();  // documented without a body (101, 308)
    return res;
  }
  const mediaType = res.type.split(';')[0].trim();
  const listed = r.content[mediaType] ? mediaType : r.content['*/*'] ? '*/*' : undefined;
  if (!listed) {
    fail(what, `answered ${res.type}, which response ${res.status} does not list (${Object.keys(r.content).join(', ')})`);
    return res;
  }
  const isJson = listed === 'application/json' || listed === 'application/problem+json';
  const body = isJson ? res.json : res.text;
  if (body === undefined) {
    fail(what, `the body is not JSON: ${res.text.slice(0, 200)}`);
    return res;
  }
  const validate = validatorOf(ajvOpenApi, r.content[listed].schema);
  expect(validate(body), what, `the answer does not match the schema: ${ajvOpenApi.errorsText(validate.errors)}; answer: ${res.text.slice(0, 400)}`);
  if (answer && isObject(answer.value) && isObject(body)) {
    const want = Object.keys(answer.value).sort().join(',');
    const got = Object.keys(body).sort().join(',');
    expect(want === got, what, `members {${got}}, the example shows {${want}}`);
    if (typeof answer.value.type === 'string') expect(body.type === answer.value.type, what, `problem ${body.type}, the example shows ${answer.value.type}`);
  }
  return res;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Waits until cond() is true (checked every 50 ms), at most `seconds`.
async function until(what, seconds, cond) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > deadline) {
      fail(what, `not reached within ${seconds} s`);
      return false;
    }
    await delay(50);
  }
}
const status = async () => (await send({ method: 'GET', path: '/v1/admin/status', token: tokens.read })).json;
const caughtUp = () => until('every shard applied every write', 60, async () => (await status()).shards.every((s) => s.lag_ops === 0));

// ---- overrides: values only known at run time -------------------------------------------------

// Counter examples are dated around 2026-11-23; an increment older than counters.op_ids_keep_hours
// is refused, so every date is moved by whole days to put that day on today (UTC).
const EXAMPLE_DAY = Date.UTC(2026, 10, 23);
const shiftDays = Math.floor((Date.now() - EXAMPLE_DAY) / 86_400_000);
function shiftDates(v) {
  if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v)) {
    const day = new Date(Date.parse(`${v.slice(0, 10)}T00:00:00Z`) + shiftDays * 86_400_000).toISOString().slice(0, 10);
    return day + v.slice(10);
  }
  if (Array.isArray(v)) return v.map(shiftDates);
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shiftDates(x)]));
  return v;
}
const shifted = (r) => ({ ...r, query: shiftDates(r.query), body: shiftDates(r.body) });

// ---- the plan ---------------------------------------------------------------------------------

const ran = new Set();  // "id/name" of every example sent
async function ex(id, name, override) {
  ran.add(`${id}/${name}`);
  return runExample(id, name, override);
}

async function graphs() {
  for (const n of ['one', 'batch', 'archive', 'bad-state']) await ex('writeEdges', n);
  for (const n of ['negate-followers', 'restore-at', 'bad-action']) await ex('writeNodeAction', n);
  // A retry with the same Idempotency-Key answers the original acknowledgement.
  const again = await send({ ...exampleRequest('writeEdges', 'batch'), token: tokens.write });
  expect(again.json?.deduplicated === true, 'writeEdges Idempotency-Key', `a retry answered ${again.text}`);
  await caughtUp();
  for (const n of ['found', 'ids-as-strings', 'missing', 'bad-id']) await ex('getEdge', n);
  for (const n of ['present', 'absent']) await ex('edgeContains', n);
  for (const n of ['known', 'unknown']) await ex('getNode', n);
  await ex('getNodes', 'two');
  const first = await ex('getNodeEdges', 'first-page');
  for (const n of ['followers', 'two-states', 'bad-limit']) await ex('getNodeEdges', n);
  // The next page through the first page's cursor answers as the schema says too.
  if (first.json?.next_cursor) {
    const next = await send({ method: 'GET', path: '/v1/graphs/follows/nodes/12/edges', query: { limit: '2', cursor: first.json.next_cursor }, token: tokens.read });
    checkAnswer('getNodeEdges next page', ops.get('getNodeEdges'), 200, next, null);
  }
  await ex('getNodeEdgesAmong', 'which-of-these');
  for (const n of ['following', 'followers']) await ex('getNodeCount', n);
  await ex('getEdges', 'two-keys');
  await ex('getCounts', 'three');
  for (const n of ['intersect', 'nested-count', 'union-page']) await ex('setOperation', n);
}

async function cleanerIdle(name) {
  return until(`the cleaner run of ${name}`, 60, async () => {
    const p = await send({ method: 'GET', path: `/v1/indexes/${name}/clean`, token: tokens.read });
    const v = await send({ method: 'GET', path: `/v1/indexes/${name}/verify`, token: tokens.read });
    return p.json?.state !== 'running' && v.json?.state !== 'running';
  });
}

async function entitiesAndIndexes() {
  for (const n of ['entry', 'second-entry', 'unknown-kind']) await ex('putEntity', n);
  for (const n of ['entity-index', 'string-index', 'cell-index', 'exists']) await ex('createIndex', n);
  await ex('deleteEntity', 'delete');
  for (const n of ['entry', 'deleted']) await ex('getEntity', n);
  await ex('listIndexes', 'all');
  await ex('getVerify', 'none-yet');
  await cleanerIdle('entries_by_user');
  await ex('getCleaner', 'done');
  for (const n of ['start', 'unknown']) await ex('startCleaner', n);
  await cleanerIdle('entries_by_user');
  await ex('startVerify', 'verify');
  await cleanerIdle('entries_by_user');
  await ex('getVerify', 'report');
  for (const n of ['by-user', 'unknown-index']) await ex('queryEntityIndex', n);
}

async function cells() {
  for (const n of ['one', 'batch', 'conflict', 'unknown-table']) await ex('writeCells', n);
  await ex('getCellRow', 'row');
  await ex('getCellLatest', 'latest');
  await ex('getCellVersions', 'one-per-page');
  for (const n of ['first', 'missing']) await ex('getCell', n);
  await ex('queryCellIndex', 'by-company');
}

async function counters() {
  await ex('listCounterMetrics', 'plays');
  for (const n of ['two-plays', 'unknown-dimension', 'unknown-metric']) await ex('incrementCounter', n, shifted);
  for (const n of ['track-day', 'no-table']) await ex('counterTotal', n, shifted);
  await ex('counterSeries', 'hours', shifted);
  await ex('counterTop', 'countries', shifted);
}

async function healthAndFiles() {
  await ex('livez', 'alive');
  for (const n of ['ready', 'verbose']) await ex('readyz', n);
  const m = await ex('metrics', 'text');
  expect(/^cairn_journal_last_seq \d+$/m.test(m.text ?? ''), 'metrics', 'no cairn_journal_last_seq sample');
  await ex('whoami', 'open');
  for (const [role, token] of [['none', undefined], ['read', tokens.read], ['write', tokens.write], ['admin', tokens.admin]]) {
    const w = await send({ method: 'GET', path: '/v1/whoami', token });
    expect(w.json?.role === role && w.json?.authenticated === (role !== 'none') && w.json?.tokens_required === true, `whoami as ${role}`, w.text);
  }
  // The served descriptions are these very files (a stale build would serve others).
  const o = await ex('getOpenApi', 'document');
  expect(JSON.stringify(o.json) === JSON.stringify(openapi), 'getOpenApi', 'cairnd serves another openapi.json than docs/openapi.json (rebuild cairnd)');
  const a = await ex('getAsyncApi', 'document');
  expect(JSON.stringify(a.json) === JSON.stringify(asyncapi), 'getAsyncApi', 'cairnd serves another asyncapi.json than docs/asyncapi.json (rebuild cairnd)');
  await ex('getDashboard', 'page');
  for (const n of ['script', 'missing']) await ex('getDashboardFile', n);
  // Operations without named examples: a plain request answers a documented status and schema.
  for (const id of ['getDashboardRedirect']) {
    const { method, path, op } = ops.get(id);
    const res = await send({ method: method.toUpperCase(), path });
    if (expect(String(res.status) in op.responses, id, `status ${res.status} is not documented`)) checkAnswer(id, ops.get(id), res.status, res, null);
  }
  const redirect = await send({ method: 'GET', path: '/ui' });
  expect(res308(redirect), 'getDashboardRedirect', `Location ${redirect.headers.get('location')}`);
}
const res308 = (r) => r.status === 308 && r.headers.get('location') === '/ui/';

// ---- admin: dead letters made on purpose ------------------------------------------------------

// One statement on a shard (it may hold ';': the client's delimiter is $$).
function sql(shard, statement) {
  execFileSync('mariadb', ['--protocol=TCP', '-h', shard.host, '-P', shard.port, '-u', shard.user, `-p${shard.password}`, shard.database,
    '--delimiter=$$', '-e', `${statement}$$`],
    { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
}

async function admin() {
  await ex('adminStatus', 'status');
  await ex('getFeed', 'feed');
  for (const n of ['applied', 'future']) await ex('traceWrite', n);
  // Every shard refuses the forward row of node 666: three writes become dead letters there.
  for (const s of shards) {
    sql(s, 'CREATE TRIGGER spec_poison BEFORE INSERT ON edges FOR EACH ROW IF NEW.node_id = 666 AND NEW.direction = 0 THEN ' +
      "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'node 666 is refused'; END IF");
  }
  const before = (await status()).journal.dead_letters;
  const seqs = [];
  for (const d of [3, 4, 5]) {
    const w = await send({ method: 'POST', path: '/v1/graphs/follows/edges', body: { source_id: 666, destination_id: d }, token: tokens.write });
    seqs.push(w.json?.seq);
  }
  if (!(await until('three dead letters', 60, async () => (await status()).journal.dead_letters >= before + 3))) return;
  const list = (await send({ method: 'GET', path: '/v1/admin/dead', query: { error: '666' }, token: tokens.read })).json?.dead ?? [];
  const letter = (seq) => list.find((d) => d.seq === seq);
  const [A, B, C] = seqs.map(letter);
  if (!expect(A && B && C, 'dead letters', `the list holds ${JSON.stringify(list).slice(0, 300)}`)) return;
  const key = (d) => (r) => ({ ...r, path: `/v1/admin/dead/${d.shard}/${d.seq}` + r.path.replace(/^\/v1\/admin\/dead\/\d+\/\d+/, '') });
  await ex('listDeadLetters', 'refused', (r) => ({ ...r, query: { ...r.query, shard: String(A.shard) } }));
  await ex('getDeadLetter', 'one', key(A));
  await ex('getDeadLetter', 'none');
  await ex('traceWrite', 'dead', (r) => ({ ...r, path: `/v1/admin/trace/${A.seq}` }));
  await ex('reinjectDeadLetters', 'one', (r) => ({ ...r, body: { shard: A.shard, seq: A.seq } }));
  await ex('reinjectDeadLetters', 'empty');
  await ex('listErrorQueue', 'first');
  await ex('retryErrorsNow', 'all');
  await ex('editDeadLetter', 'bad-field', key(B));
  await ex('editDeadLetter', 'move', key(B));
  await ex('dropDeadLetter', 'one', key(C));
  await ex('dropDeadLetters', 'no-filter');
  await until('the re-injected letter dead again', 60, async () => (await send({ method: 'GET', path: `/v1/admin/dead/${A.shard}/${A.seq}`, token: tokens.read })).status === 200);
  await ex('dropDeadLetters', 'all');
  for (const s of shards) sql(s, 'DROP TRIGGER IF EXISTS spec_poison');
  await ex('pauseApply', 'all');
  await ex('resumeApply', 'all');
  await caughtUp();
  for (const n of ['dry-run', 'node']) await ex('replayJournal', n);
  await ex('replayRecords', 'empty', (r) => ({ ...r, body: new Uint8Array([0x90]), mediaType: 'application/msgpack' }));
  for (const n of ['unknown', 'drop']) await ex('dropIndex', n);
  // Resharding: the deployment of two shards lists no third, so a split is refused before it starts.
  await ex('getReshard', 'none');
  for (const id of ['planSplit', 'startSplit']) await ex(id, 'not-listed');
  for (const id of ['verifySplit', 'cancelSplit']) await ex(id, 'none');
}

// ---- roles ------------------------------------------------------------------------------------

// The request of an operation's first example, or one built from the first example of each path
// parameter; the router checks the role before the handler runs, so a refused request changes nothing.
function anyRequest(id) {
  const { method, path, op } = ops.get(id);
  const names = exampleNames(id);
  if (names.length) return exampleRequest(id, names[0]);
  let p = path;
  for (const param of (op.parameters ?? []).map(deref).filter((x) => x.in === 'path')) p = p.replace(`{${param.name}}`, 'x');
  return { method: method.toUpperCase(), path: p, query: {}, headers: {} };
}

async function roles() {
  for (const [id, { op }] of ops) {
    if (op['x-cairn-upgrade']) continue;  // checked with the WebSocket API
    const role = op['x-cairn-role'];
    const req = anyRequest(id);
    const anonymous = await send(req);
    if (role === 'none') {
      expect(anonymous.status !== 401 && anonymous.status !== 403, `${id} x-cairn-role none`, `answered ${anonymous.status} without a token`);
      continue;
    }
    expect(anonymous.status === 401 && anonymous.json?.type === 'https://cairn.dev/problems/unauthorized', `${id} x-cairn-role ${role}`,
      `answered ${anonymous.status} without a token, not 401 unauthorized`);
    expect(anonymous.headers.get('www-authenticate') === 'Bearer', `${id} 401`, 'no WWW-Authenticate: Bearer');
    const below = ROLES[ROLES.indexOf(role) - 1];
    if (below !== 'none') {
      const refused = await send({ ...req, token: tokens[below] });
      expect(refused.status === 403 && refused.json?.type === 'https://cairn.dev/problems/forbidden', `${id} x-cairn-role ${role}`,
        `answered ${refused.status} to a ${below} token, not 403 forbidden`);
    }
  }
}

// ---- WebSocket --------------------------------------------------------------------------------

const asyncMessage = (name) => asyncapi.components.messages[name];

function openWs(token) {
  return new Promise((resolveOpen, reject) => {
    const ws = new WebSocket(WS_URL, { headers: token ? { Authorization: `Bearer ${token}` } : {}, handshakeTimeout: 10_000 });
    ws.once('open', () => resolveOpen(ws));
    ws.once('unexpected-response', (_, res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, text, type: res.headers['content-type'] })));
    });
    ws.once('error', reject);
  });
}

// Sends every request at once (pipelined) and collects the answers by id, within 30 s.
function exchange(ws, requests, binary) {
  return new Promise((resolveAll) => {
    const answers = new Map();
    const timer = setTimeout(() => resolveAll(answers), 30_000);
    ws.on('message', (data, isBinary) => {
      const a = isBinary ? msgpackDecode(data) : JSON.parse(data.toString());
      answers.set(a.id, { answer: a, binary: isBinary });
      if (answers.size === requests.length) {
        clearTimeout(timer);
        resolveAll(answers);
      }
    });
    for (const r of requests) ws.send(binary ? msgpackEncode(r) : JSON.stringify(r), { binary });
  });
}

// The OpenAPI operation a WebSocket request reaches (for the body's schema).
function operationOf(method, path) {
  const bare = path.split('?')[0];
  for (const [, e] of ops) {
    if (e.method !== method.toLowerCase()) continue;
    const re = new RegExp(`^${e.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (re.test(bare)) return e;
  }
  return null;
}

async function websocket() {
  const checkMessage = (what, name, answer) => {
    const validate = validatorOf(ajvAsyncApi, asyncMessage(name).payload);
    expect(validate(answer), what, `not a valid ${name} message: ${ajvAsyncApi.errorsText(validate.errors)}: ${JSON.stringify(answer).slice(0, 300)}`);
  };
  const checkBody = (what, req, answer) => {
    const e = operationOf(req.method ?? 'GET', req.path);
    if (!e) return fail(what, `no operation for ${req.method ?? 'GET'} ${req.path}`);
    const r = deref(e.op.responses[String(answer.status)]);
    if (!expect(r !== undefined, what, `status ${answer.status} is not documented for ${e.op.operationId}`)) return;
    const media = r.content?.['application/json'] ?? r.content?.['application/problem+json'];
    if (!media) return;
    const validate = validatorOf(ajvOpenApi, answer.status >= 400 ? r.content['application/problem+json'].schema : media.schema);
    expect(validate(answer.body), what, `the body does not match ${e.op.operationId} ${answer.status}: ${ajvOpenApi.errorsText(validate.errors)}`);
  };

  // The documented example requests, JSON and msgpack, pipelined on one connection.
  const ws = await openWs(tokens.admin).catch((e) => fail('WebSocket upgrade', e.message));
  if (!ws) return;
  const jsonRequests = asyncMessage('request').examples.map((x) => x.payload);
  jsonRequests.push({ id: 'bad-1', path: '/livez', verb: 'GET' }, { id: 'bad-2', method: 'PATCH', path: '/livez' }, { id: 'edge-1', path: '/v1/graphs/follows/edges/12/34' });
  const jsonAnswers = await exchange(ws, jsonRequests, false);
  for (const req of jsonRequests) {
    const got = jsonAnswers.get(req.id);
    if (!expect(got !== undefined, `WebSocket JSON ${req.id}`, 'no answer')) continue;
    expect(got.binary === false, `WebSocket JSON ${req.id}`, 'answered in a binary frame');
    checkMessage(`WebSocket JSON ${req.id}`, 'answer', got.answer);
    if (String(req.id).startsWith('bad')) {
      expect(got.answer.status === 400 && got.answer.body?.type === 'https://cairn.dev/problems/invalid-message', `WebSocket JSON ${req.id}`, JSON.stringify(got.answer));
    } else {
      checkBody(`WebSocket JSON ${req.id}`, req, got.answer);
    }
  }
  ws.removeAllListeners('message');
  const binRequests = asyncMessage('requestMsgpack').examples.map((x) => x.payload);
  binRequests.push({ id: 'count-m', method: 'GET', path: '/v1/graphs/follows/nodes/12/count' }, { id: 'write-m', method: 'POST', path: '/v1/graphs/follows/edges', body: { source_id: 12, destination_id: 35 }, idempotency_key: 'ws-m-1' });
  const binAnswers = await exchange(ws, binRequests, true);
  for (const req of binRequests) {
    const got = binAnswers.get(req.id);
    if (!expect(got !== undefined, `WebSocket msgpack ${req.id}`, 'no answer')) continue;
    expect(got.binary === true, `WebSocket msgpack ${req.id}`, 'answered in a text frame');
    checkMessage(`WebSocket msgpack ${req.id}`, 'answerMsgpack', got.answer);
    checkBody(`WebSocket msgpack ${req.id}`, req, got.answer);
  }

  // The documented SUBSCRIBE, then its UNSUBSCRIBE once the first page came: every frame of the
  // subscription is a feedEvent message, its pages are FeedPages, and the last one is its end.
  ws.removeAllListeners('message');
  const subscribe = asyncMessage('subscribe').examples[0].payload;
  const subFrames = await new Promise((resolveSub) => {
    const got = [];
    const timer = setTimeout(() => resolveSub(got), 30_000);
    ws.on('message', (data, isBinary) => {
      const a = isBinary ? msgpackDecode(data) : JSON.parse(data.toString());
      if (a.id !== subscribe.id) return;
      got.push(a);
      if (got.length === 1) ws.send(JSON.stringify(asyncMessage('unsubscribe').examples[0].payload));
      if (a.event === 'end') {
        clearTimeout(timer);
        resolveSub(got);
      }
    });
    ws.send(JSON.stringify(subscribe));
  });
  expect(subFrames.length >= 2 && subFrames.at(-1).event === 'end' && subFrames.at(-1).body?.reason === 'unsubscribed',
    'WebSocket subscribe', `the subscription's frames: ${JSON.stringify(subFrames).slice(0, 300)}`);
  for (const f of subFrames) {
    checkMessage('WebSocket subscribe', 'feedEvent', f);
    if (f.event === 'feed') checkBody('WebSocket subscribe page', { method: 'GET', path: '/v1/feed' }, f);
  }
  ws.close();

  // Roles apply per request: a read connection's write is a 403 answer.
  const reader = await openWs(tokens.read).catch((e) => fail('WebSocket upgrade with a read token', e.message));
  if (reader) {
    const req = { id: 9, method: 'POST', path: '/v1/graphs/follows/edges', body: { source_id: 1, destination_id: 2 } };
    const got = (await exchange(reader, [req], false)).get(9);
    expect(got?.answer.status === 403, 'WebSocket role', `a read connection's write answered ${JSON.stringify(got?.answer)}`);
    if (got) checkMessage('WebSocket role', 'answer', got.answer);
    reader.close();
  }

  // The upgrade's refusals, as openapi.json documents them for GET /v1/ws.
  const wsOp = ops.get('openWebSocket');
  const refused = await openWs(undefined).then((w) => { w.close(); return null; }, (e) => e);
  expect(refused?.status === 401, 'openWebSocket without a token', `answered ${refused?.status ?? 'an upgrade'}`);
  const raw = (headers) => new Promise((resolveRaw) => {
    const u = new URL(WS_URL);
    const r = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: { Connection: 'Upgrade', Upgrade: 'websocket', Authorization: `Bearer ${tokens.read}`, ...headers }, timeout: 10_000 });
    r.on('response', (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolveRaw({ status: res.statusCode, type: res.headers['content-type'] ?? '', text, json });
      });
    });
    r.on('upgrade', (res, socket) => { socket.destroy(); resolveRaw({ status: res.statusCode }); });
    r.on('error', (e) => resolveRaw({ status: 0, type: '', text: e.message }));
    r.end();
  });
  const v12 = await raw({ 'Sec-WebSocket-Version': '12', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' });
  checkAnswer('openWebSocket version 12', wsOp, 426, v12, null);
  expect(v12.json?.type === 'https://cairn.dev/problems/unsupported-websocket-version', 'openWebSocket version 12', v12.text);
  const badKey = await raw({ 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'short' });
  checkAnswer('openWebSocket bad key', wsOp, 400, badKey, null);
  const ok = await raw({ 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' });
  expect(ok.status === 101 && '101' in wsOp.op.responses, 'openWebSocket', `answered ${ok.status}`);
}

// ---- main -------------------------------------------------------------------------------------

const ready = await until('cairnd answers /livez', 30, async () => (await send({ method: 'GET', path: '/livez' }).catch(() => ({}))).status === 200);
if (ready) {
  try {
    await graphs();
    await entitiesAndIndexes();
    await cells();
    await counters();
    await healthAndFiles();
    await admin();
    await roles();
    await websocket();
  } catch (e) {
    fail('examples', `stopped by an error: ${e.stack ?? e}`);
  }
  // Every named example of the spec was sent: an example added to the spec joins the plan above.
  for (const [id] of ops) {
    for (const n of exampleNames(id)) if (!ran.has(`${id}/${n}`)) fail(`${id} example ${n}`, 'never sent: add it to the plan in examples.mjs');
  }
}
console.log(`examples: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
