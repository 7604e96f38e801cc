// The typed models over CairnClient.request: graphs (edges, pages, counts, sets, node actions),
// entities, cells, counters and indexes. Graph reads ask cairn for string ids (`?ids=string`), so
// 64-bit ids and positions arrive as decimal strings, exact; every other answer is parsed with
// parseJson, which reads integers above 2^53 as bigint.

import { afterParam } from './after.js';

const ID_MAX = (1n << 63n) - 1n;  // cairn's ids: 0 to 2^63 - 1
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

/** An id (bigint, number or decimal string) as cairn's canonical decimal text; throws on anything else. */
export function idText(v, what = 'id') {
  if (typeof v === 'bigint') {
    if (v < 0n || v > ID_MAX) throw new RangeError(`${what} must be between 0 and 2^63-1, got ${v}`);
    return v.toString();
  }
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`${what} must be a non-negative integer of at most 2^53-1 as a number ` +
        `(got ${v}); pass a bigint or a decimal string for larger ids`);
    }
    return String(v);
  }
  if (typeof v === 'string') {
    if (!/^(0|[1-9][0-9]{0,19})$/.test(v) || BigInt(v) > ID_MAX) {
      throw new RangeError(`${what} must be a canonical decimal between 0 and 2^63-1, got "${v}"`);
    }
    return v;
  }
  throw new TypeError(`${what} must be a bigint, a number or a decimal string, got ${typeof v}`);
}

/** A signed 64-bit integer for a body: a number when exact, else a bigint (written as a JSON number). */
function int64(v, what) {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new RangeError(`${what} must be an integer of at most 2^53-1 as a number (got ${v}); pass a bigint`);
    return v;
  }
  let b;
  if (typeof v === 'bigint') b = v;
  else if (typeof v === 'string' && /^-?(0|[1-9][0-9]*)$/.test(v)) b = BigInt(v);
  else throw new TypeError(`${what} must be an integer (number, bigint or decimal string), got ${v}`);
  if (b < I64_MIN || b > I64_MAX) throw new RangeError(`${what} must fit in 64 signed bits, got ${b}`);
  return Number.isSafeInteger(Number(b)) ? Number(b) : b;
}

function timeMs(v) {
  if (v instanceof Date) return v.getTime();
  return v;
}

/** A UTC instant as cairn's range ends take it: RFC 3339 text (a Date without its .000), text as given, or ms. */
function timeText(v) {
  if (v instanceof Date) return v.toISOString().replace('.000Z', 'Z');
  return v;
}

function states(s) {
  return Array.isArray(s) ? s.join(',') : s;
}

function seg(s, what) {
  if (typeof s !== 'string' || s.length === 0) throw new TypeError(`${what} must be a non-empty string`);
  return encodeURIComponent(s);
}

function readQuery(o = {}, extra = {}) {
  return { ...extra, after: afterParam(o.after), timeout_ms: o.afterTimeoutMs };
}

function readOpts(client, o = {}, query) {
  const serverWait = o.afterTimeoutMs ?? 5000;
  return { query, timeoutMs: o.timeoutMs ?? Math.max(client.timeoutMs, serverWait + 1000) };
}

function writeOpts(client, o = {}, query = {}, body) {
  const q = { ...query };
  if (o.waitApplied) {
    q.wait = 'applied';
    if (o.waitTimeoutMs !== undefined) q.timeout_ms = o.waitTimeoutMs;
  }
  const serverWait = o.waitApplied ? (o.waitTimeoutMs ?? 5000) : 0;
  return {
    write: true, idempotencyKey: o.idempotencyKey, body, query: q,
    timeoutMs: o.timeoutMs ?? Math.max(client.timeoutMs, serverWait + 1000),
  };
}

async function orNull(promise) {
  try {
    return await promise;
  } catch (e) {
    if (e && e.name === 'CairnError' && e.status === 404 && e.slug === 'not-found') return null;
    throw e;
  }
}

/** Index query conditions: `{a: 1, b: {gte: 3, lt: 7}}` -> `a=1&b.gte=3&b.lt=7`. */
function conditions(where = {}) {
  const q = {};
  for (const [k, v] of Object.entries(where)) {
    if (v !== null && typeof v === 'object' && !(v instanceof Date)) {
      for (const op of ['gte', 'gt', 'lte', 'lt']) if (v[op] !== undefined) q[`${k}.${op}`] = String(v[op]);
    } else if (v !== undefined) {
      q[k] = String(v);
    }
  }
  return q;
}

// ---------------------------------------------------------------------------------------------
// Graphs

function edgeWrite(e) {
  if (e === null || typeof e !== 'object') throw new TypeError('an edge write must be an object');
  const out = {
    source_id: idText(e.source_id, 'source_id'),
    destination_id: idText(e.destination_id, 'destination_id'),
  };
  if (e.state !== undefined) out.state = e.state;
  if (e.position !== undefined) out.position = int64(e.position, 'position');
  if (e.keep_position !== undefined) out.keep_position = e.keep_position;
  if (e.ts !== undefined) out.ts = timeMs(e.ts);
  return out;
}

function setExpr(x, depth = 0) {
  if (x === null || typeof x !== 'object') throw new TypeError('a set operand must be an object');
  if (x.op !== undefined) {
    if (!Array.isArray(x.queries)) throw new TypeError('a set operation needs queries');
    return { op: x.op, queries: x.queries.map((q) => setExpr(q, depth + 1)) };
  }
  const out = { node_id: idText(x.node_id, 'node_id') };
  if (x.direction !== undefined) out.direction = x.direction;
  if (x.state !== undefined) out.state = states(x.state);
  return out;
}

/** Set-expression builders: intersect(a, b), union(a, b, ...), difference(a, b, ...), node(12, {...}). */
export const sets = Object.freeze({
  intersect: (...queries) => ({ op: 'intersect', queries }),
  union: (...queries) => ({ op: 'union', queries }),
  difference: (...queries) => ({ op: 'difference', queries }),
  node: (nodeId, o = {}) => ({ node_id: nodeId, ...o }),
});

export class Graph {
  constructor(client, name) {
    this.client = client;
    this.name = name;
    this.base = `/v1/graphs/${seg(name, 'graph')}`;
  }

  /** Writes one edge, or several (1 to limits.batch_ops_max) in one request. */
  async write(edges, o) {
    const body = Array.isArray(edges) ? { edges: edges.map(edgeWrite) } : edgeWrite(edges);
    return this.client.request('POST', `${this.base}/edges`, writeOpts(this.client, o, {}, body));
  }

  async add(source, destination, o = {}) {
    return this.write({ source_id: source, destination_id: destination, state: 'normal', position: o.position, ts: o.ts }, o);
  }

  async remove(source, destination, o = {}) {
    return this.write({ source_id: source, destination_id: destination, state: 'removed', ts: o.ts }, o);
  }

  async archive(source, destination, o = {}) {
    return this.write({ source_id: source, destination_id: destination, state: 'archived', ts: o.ts }, o);
  }

  async negate(source, destination, o = {}) {
    return this.write({ source_id: source, destination_id: destination, state: 'negative', ts: o.ts }, o);
  }

  /** Back to normal at the edge's current position (FlockDB's unarchive). */
  async unarchive(source, destination, o = {}) {
    return this.write({ source_id: source, destination_id: destination, state: 'normal', keep_position: true, ts: o.ts }, o);
  }

  /** One edge in whatever state it is, or null if it was never written. */
  async get(source, destination, o = {}) {
    const path = `${this.base}/edges/${idText(source, 'source')}/${idText(destination, 'destination')}`;
    return orNull(this.client.request('GET', path, readOpts(this.client, o, readQuery(o, { ids: 'string' }))));
  }

  /** Many edges by key, in request order; null where there is none. */
  async getMany(keys, o = {}) {
    const edges = keys.map((k) => Array.isArray(k)
      ? { source_id: idText(k[0], 'source_id'), destination_id: idText(k[1], 'destination_id') }
      : { source_id: idText(k.source_id, 'source_id'), destination_id: idText(k.destination_id, 'destination_id') });
    const a = await this.client.request('POST', `${this.base}/edges/get`,
      { ...readOpts(this.client, o, readQuery(o, { ids: 'string' })), body: { edges } });
    return a.edges;
  }

  /** Whether the edge is present (normal or negative), and its state (null if never written). */
  async contains(source, destination, o = {}) {
    const path = `${this.base}/edges/${idText(source, 'source')}/${idText(destination, 'destination')}/contains`;
    return this.client.request('GET', path, readOpts(this.client, o, readQuery(o, { ids: 'string' })));
  }

  /** One page of a node's edges, newest first. */
  async page(node, o = {}) {
    const q = readQuery(o, { direction: o.direction, state: states(o.state), limit: o.limit, cursor: o.cursor, ids: 'string' });
    return this.client.request('GET', `${this.base}/nodes/${idText(node, 'node')}/edges`, readOpts(this.client, o, q));
  }

  /** Every page of a node's edges, following next_cursor from o.cursor (or the first page). */
  async *pages(node, o = {}) {
    let cursor = o.cursor;
    for (;;) {
      const page = await this.page(node, { ...o, cursor });
      yield page;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** Every edge of a node, newest first, a page (o.limit) at a time. */
  async *edges(node, o = {}) {
    for await (const page of this.pages(node, o)) yield* page.edges;
  }

  /** A page of the node's edges whose other end is one of otherIds. */
  async among(node, otherIds, o = {}) {
    const q = readQuery(o, { direction: o.direction, state: states(o.state), limit: o.limit, cursor: o.cursor, ids: 'string' });
    return this.client.request('POST', `${this.base}/nodes/${idText(node, 'node')}/edges/among`,
      { ...readOpts(this.client, o, q), body: { other_ids: otherIds.map((x) => idText(x, 'other_ids[]')) } });
  }

  /** The number of a node's edges in one state (default normal) and direction (default forward). */
  async count(node, o = {}) {
    const q = readQuery(o, { direction: o.direction, state: o.state });
    const a = await this.client.request('GET', `${this.base}/nodes/${idText(node, 'node')}/count`, readOpts(this.client, o, q));
    return a.count;
  }

  /** Many counts in one request, in request order. */
  async counts(queries, o = {}) {
    const body = {
      queries: queries.map((x) => {
        const out = { node_id: idText(x.node_id, 'node_id') };
        if (x.direction !== undefined) out.direction = x.direction;
        if (x.state !== undefined) out.state = x.state;
        return out;
      }),
    };
    const a = await this.client.request('POST', `${this.base}/counts`, { ...readOpts(this.client, o, readQuery(o)), body });
    return a.counts;
  }

  /** A node's record: known or not, state and last node action per direction, counts by state. */
  async node(id, o = {}) {
    return this.client.request('GET', `${this.base}/nodes/${idText(id, 'node')}`, readOpts(this.client, o, readQuery(o, { ids: 'string' })));
  }

  /** Many node records, in request order. */
  async nodes(ids, o = {}) {
    const a = await this.client.request('POST', `${this.base}/nodes/get`,
      { ...readOpts(this.client, o, readQuery(o, { ids: 'string' })), body: { node_ids: ids.map((x) => idText(x, 'node_ids[]')) } });
    return a.nodes;
  }

  /** remove, archive, negate or restore every edge of a node (o.direction: forward, backward, both). */
  async nodeAction(id, action, o = {}) {
    if (!['remove', 'archive', 'negate', 'restore', 'unarchive'].includes(action)) {
      throw new RangeError(`action must be remove, archive, negate or restore, got ${action}`);
    }
    const body = o.ts !== undefined ? { ts: timeMs(o.ts) } : undefined;
    return this.client.request('POST', `${this.base}/nodes/${idText(id, 'node')}/${action}`,
      writeOpts(this.client, o, { direction: o.direction }, body));
  }

  async removeNode(id, o) { return this.nodeAction(id, 'remove', o); }
  async archiveNode(id, o) { return this.nodeAction(id, 'archive', o); }
  async negateNode(id, o) { return this.nodeAction(id, 'negate', o); }
  async restoreNode(id, o) { return this.nodeAction(id, 'restore', o); }

  /** One page of a set expression's ids. */
  async set(expr, o = {}) {
    const body = setExpr(expr);
    if (o.order !== undefined) body.order = o.order;
    if (o.limit !== undefined) body.limit = o.limit;
    if (o.cursor !== undefined) body.cursor = o.cursor;
    return this.client.request('POST', `${this.base}/sets`, { ...readOpts(this.client, o, readQuery(o, { ids: 'string' })), body });
  }

  /** Every id of a set expression, a page at a time. */
  async *setIds(expr, o = {}) {
    let cursor = o.cursor;
    for (;;) {
      const page = await this.set(expr, { ...o, cursor });
      yield* page.ids;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** The size of a whole set expression. */
  async setCount(expr, o = {}) {
    const body = { ...setExpr(expr), count: true };
    const a = await this.client.request('POST', `${this.base}/sets`, { ...readOpts(this.client, o, readQuery(o, { ids: 'string' })), body });
    return a.count;
  }
}

// ---------------------------------------------------------------------------------------------
// Entities

export class Entities {
  constructor(client, kind) {
    this.client = client;
    this.kind = kind;
    this.base = `/v1/entities/${seg(kind, 'kind')}`;
  }

  /** Replaces the entity's body (a JSON object). */
  async put(id, body, o = {}) {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new TypeError('an entity body must be a JSON object');
    return this.client.request('PUT', `${this.base}/${seg(id, 'id')}`, writeOpts(this.client, o, { ts: timeMs(o.ts) }, body));
  }

  /** Deletes the entity (a tombstone, last writer wins by ts). */
  async delete(id, o = {}) {
    return this.client.request('DELETE', `${this.base}/${seg(id, 'id')}`, writeOpts(this.client, o, { ts: timeMs(o.ts) }));
  }

  /** The entity, or null when it is missing or deleted. */
  async get(id, o = {}) {
    return orNull(this.client.request('GET', `${this.base}/${seg(id, 'id')}`, readOpts(this.client, o, readQuery(o))));
  }

  /** One page of the entities an index finds: where = {prop: value, next: {gte, gt, lte, lt}}. */
  async by(index, where, o = {}) {
    const q = { ...conditions(where), limit: o.limit, cursor: o.cursor };
    return this.client.request('GET', `${this.base}/by/${seg(index, 'index')}`, { query: q, timeoutMs: o.timeoutMs });
  }

  /** Every entity an index finds, a page at a time. */
  async *all(index, where, o = {}) {
    let cursor = o.cursor;
    for (;;) {
      const page = await this.by(index, where, { ...o, cursor });
      yield* page.entities;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Cells

function cellWrite(c) {
  if (c === null || typeof c !== 'object') throw new TypeError('a cell must be an object');
  return { row_key: c.row_key, column: c.column, ref_key: int64(c.ref_key, 'ref_key'), body: c.body };
}

export class Cells {
  constructor(client, table) {
    this.client = client;
    this.table = table;
    this.base = `/v1/cells/${seg(table, 'table')}`;
  }

  /** Writes one cell or several; a cell is immutable (409 cell-exists for another body). */
  async write(cells, o) {
    const body = Array.isArray(cells) ? { cells: cells.map(cellWrite) } : cellWrite(cells);
    return this.client.request('POST', this.base, writeOpts(this.client, o, {}, body));
  }

  /** The latest version of a column, or null. */
  async latest(rowKey, column, o = {}) {
    return orNull(this.client.request('GET', `${this.base}/${seg(rowKey, 'row_key')}/${seg(column, 'column')}`,
      readOpts(this.client, o, readQuery(o))));
  }

  /** One version of a column, or null. */
  async get(rowKey, column, refKey, o = {}) {
    const ref = String(int64(refKey, 'ref_key'));
    return orNull(this.client.request('GET', `${this.base}/${seg(rowKey, 'row_key')}/${seg(column, 'column')}/${ref}`,
      readOpts(this.client, o, readQuery(o))));
  }

  /** One page of a row: the latest version of each column. */
  async row(rowKey, o = {}) {
    return this.client.request('GET', `${this.base}/${seg(rowKey, 'row_key')}`,
      readOpts(this.client, o, readQuery(o, { limit: o.limit, cursor: o.cursor })));
  }

  /** One page of a column's versions, newest first. */
  async versions(rowKey, column, o = {}) {
    return this.client.request('GET', `${this.base}/${seg(rowKey, 'row_key')}/${seg(column, 'column')}/versions`,
      readOpts(this.client, o, readQuery(o, { limit: o.limit, cursor: o.cursor })));
  }

  /** Every version of a column, newest first, a page at a time. */
  async *allVersions(rowKey, column, o = {}) {
    let cursor = o.cursor;
    for (;;) {
      const page = await this.versions(rowKey, column, { ...o, cursor });
      yield* page.versions;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** One page of the rows a cell index finds (the latest cell of the index's column of each). */
  async by(index, where, o = {}) {
    const q = { ...conditions(where), limit: o.limit, cursor: o.cursor };
    return this.client.request('GET', `${this.base}/by/${seg(index, 'index')}`, { query: q, timeoutMs: o.timeoutMs });
  }
}

// ---------------------------------------------------------------------------------------------
// Counters

function increment(i) {
  if (i === null || typeof i !== 'object' || i.dimensions === null || typeof i.dimensions !== 'object') {
    throw new TypeError('an increment must be an object with dimensions');
  }
  const out = { dimensions: { ...i.dimensions } };
  for (const [k, v] of Object.entries(out.dimensions)) {
    if (typeof v === 'bigint' || typeof v === 'number') out.dimensions[k] = int64(v, `dimensions.${k}`);
  }
  if (i.time !== undefined) out.time = timeMs(i.time);
  if (i.delta !== undefined) out.delta = int64(i.delta, 'delta');
  return out;
}

function rangeQuery(o) {
  if (o === null || typeof o !== 'object' || o.from === undefined || o.to === undefined) {
    throw new TypeError('a counter read needs from and to');
  }
  return readQuery(o, { ...conditions(o.where), from: timeText(o.from), to: timeText(o.to), granularity: o.granularity });
}

export class Counter {
  constructor(client, metric) {
    this.client = client;
    this.metric = metric;
    this.base = `/v1/counters/${seg(metric, 'metric')}`;
  }

  /** Counts one increment or several; each is counted exactly once. */
  async add(increments, o) {
    const body = Array.isArray(increments) ? { increments: increments.map(increment) } : increment(increments);
    return this.client.request('POST', this.base, writeOpts(this.client, o, {}, body));
  }

  /** The sum over [from, to), with where as equality filters on dimensions. */
  async total(o) {
    return this.client.request('GET', `${this.base}/total`, readOpts(this.client, o, rangeQuery(o)));
  }

  /** A time series of hour or day buckets, zeros included. */
  async series(o) {
    return this.client.request('GET', `${this.base}/series`, readOpts(this.client, o, rangeQuery(o)));
  }

  /** The top n values of dimension `by`, with an earlier period beside them. */
  async top(o) {
    const q = { ...rangeQuery(o), by: o.by, n: o.n, compare_from: timeText(o.compareFrom), compare_to: timeText(o.compareTo) };
    return this.client.request('GET', `${this.base}/top`, readOpts(this.client, o, q));
  }
}

// ---------------------------------------------------------------------------------------------
// Indexes (entity and cell)

export class Indexes {
  constructor(client) {
    this.client = client;
  }

  /** Creates an index (admin): {name, kind, properties, shard_on} or {name, table, column, properties, shard_on}. */
  async create(definition, o = {}) {
    return this.client.request('POST', '/v1/indexes', { body: definition, timeoutMs: o.timeoutMs });
  }

  async list(o = {}) {
    return this.client.request('GET', '/v1/indexes', { timeoutMs: o.timeoutMs });
  }

  async drop(name, o = {}) {
    return this.client.request('DELETE', `/v1/indexes/${seg(name, 'name')}`, { timeoutMs: o.timeoutMs });
  }

  /** The cleaner's progress (back-fill and stale rows) of an index on this gateway. */
  async cleanStatus(name, o = {}) {
    return this.client.request('GET', `/v1/indexes/${seg(name, 'name')}/clean`, { timeoutMs: o.timeoutMs });
  }

  /** Starts a cleaner run (admin); rate in rows per second. */
  async clean(name, o = {}) {
    return this.client.request('POST', `/v1/indexes/${seg(name, 'name')}/clean`, { query: { rate: o.rate }, timeoutMs: o.timeoutMs });
  }
}
