// Graphs over the WebSocket: edge writes of every state, one edge, contains, multi-get, pages with
// cursors (and the async iterator), among, counts, node records, node actions and set operations.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sets } from '../index.js';
import { collect, newClient, randomId, uniqueName } from './support.js';

let client;
before(() => {
  client = newClient({ transport: 'ws' });
});
after(() => client?.close());

test('edge writes of each state read back as written', async () => {
  const g = client.graph(uniqueName('g_states'));
  const s = randomId();
  const a1 = await g.add(s, s + 1, { position: 10 });
  assert.equal(typeof a1.seq, 'number');
  assert.equal(a1.deduplicated, false);
  assert.equal(typeof a1.idempotencyKey, 'string');
  await g.add(s, s + 2, { position: 20 });
  await g.add(s, s + 3, { position: 30 });
  await g.remove(s, s + 2);
  await g.archive(s, s + 3);
  const t0 = Date.now();
  const last = await g.negate(s, s + 1);
  const t1 = Date.now();
  assert.ok(last.seq > a1.seq);
  assert.equal(client.lastSeq, last.seq);

  const e1 = await g.get(s, s + 1, { after: last });
  assert.deepEqual({ ...e1, position: undefined, ts: undefined, ts_ms: undefined }, {
    graph: g.name, source_id: String(s), destination_id: String(s + 1), state: 'negative',
    position: undefined, ts: undefined, ts_ms: undefined,
  });
  // A negate moves the edge to the write's time, as an add without a position does.
  assert.ok(Number(e1.position) >= t0 - 5000 && Number(e1.position) <= t1 + 5000, `position ${e1.position} is the write's time`);
  assert.ok(e1.ts_ms >= t0 - 5000 && e1.ts_ms <= t1 + 5000);
  assert.equal((await g.get(s, s + 2, { after: last })).state, 'removed');
  const e3 = await g.get(s, s + 3, { after: last });
  assert.equal(e3.state, 'archived');
  assert.equal(e3.position, '30', 'archiving keeps the position');
  assert.equal(await g.get(s, s + 99, { after: last }), null, 'an edge never written is null');

  const un = await g.unarchive(s, s + 3);
  const e3b = await g.get(s, s + 3, { after: un });
  assert.equal(e3b.state, 'normal');
  assert.equal(e3b.position, '30', 'unarchiving keeps the position');

  assert.deepEqual(await g.contains(s, s + 1, { after: un }),
    { graph: g.name, source_id: String(s), destination_id: String(s + 1), contains: true, state: 'negative' });
  assert.equal((await g.contains(s, s + 2)).contains, false);
  assert.equal((await g.contains(s, s + 99)).state, null);

  const many = await g.getMany([[s, s + 1], { source_id: s, destination_id: s + 99 }, [String(s), BigInt(s + 3)]], { after: un });
  assert.equal(many.length, 3);
  assert.equal(many[0].destination_id, String(s + 1));
  assert.equal(many[1], null);
  assert.equal(many[2].state, 'normal');
});

test('a batch write, pages with cursors both ways, the async iterator and among', async () => {
  const g = client.graph(uniqueName('g_pages'));
  const s = randomId();
  const edges = [];
  for (let i = 1; i <= 7; i++) edges.push({ source_id: s, destination_id: s + i, position: i });
  const ack = await g.write(edges);
  assert.equal(ack.count, 7);
  assert.equal(ack.seq - ack.first_seq, 6);
  assert.equal(ack.ts.length, 7);

  const p1 = await g.page(s, { limit: 3, after: ack });
  assert.deepEqual(p1.edges.map((e) => e.destination_id), [s + 7, s + 6, s + 5].map(String));
  assert.equal(p1.prev_cursor, null);
  const p2 = await g.page(s, { limit: 3, cursor: p1.next_cursor });
  assert.deepEqual(p2.edges.map((e) => e.destination_id), [s + 4, s + 3, s + 2].map(String));
  const back = await g.page(s, { limit: 3, cursor: p2.prev_cursor });
  assert.deepEqual(back.edges.map((e) => e.destination_id), p1.edges.map((e) => e.destination_id));

  const all = await collect(g.edges(s, { limit: 2 }));
  assert.deepEqual(all.map((e) => e.destination_id), [7, 6, 5, 4, 3, 2, 1].map((i) => String(s + i)));
  const pages = await collect(g.pages(s, { limit: 2 }));
  assert.equal(pages.length, 4);
  assert.equal(pages[3].next_cursor, null);

  // Backward rows live on the destination's shard, which page(s, { after }) above did not wait for.
  const backward = await g.page(s + 4, { direction: 'backward', after: ack });
  assert.deepEqual(backward.edges.map((e) => e.source_id), [String(s)]);

  const among = await g.among(s, [s + 2, s + 5, s + 100, s + 5]);
  assert.deepEqual(among.edges.map((e) => e.destination_id), [s + 5, s + 2].map(String));

  const rm = await g.write([{ source_id: s, destination_id: s + 1, state: 'removed' },
    { source_id: s, destination_id: s + 2, state: 'archived' }]);
  const mixed = await g.page(s, { state: ['archived', 'removed'], after: rm });
  assert.deepEqual(mixed.edges.map((e) => `${e.destination_id}:${e.state}`).sort(),
    [`${s + 1}:removed`, `${s + 2}:archived`].sort());
});

test('counts, many counts and node records', async () => {
  const g = client.graph(uniqueName('g_counts'));
  const s = randomId();
  const ack = await g.write([
    { source_id: s, destination_id: s + 1 }, { source_id: s, destination_id: s + 2 },
    { source_id: s, destination_id: s + 3, state: 'archived' }, { source_id: s + 1, destination_id: s },
  ]);
  assert.equal(await g.count(s, { after: ack }), 2);
  assert.equal(await g.count(s, { state: 'archived' }), 1);
  assert.equal(await g.count(s, { direction: 'backward' }), 1);
  assert.deepEqual(await g.counts([{ node_id: s }, { node_id: s, direction: 'backward' }, { node_id: s + 50 }], { after: ack }), [2, 1, 0]);

  const rec = await g.node(s, { after: ack });
  assert.equal(rec.node_id, String(s));
  assert.equal(rec.known, true);
  assert.deepEqual(rec.forward.counts, { normal: 2, removed: 0, archived: 1, negative: 0 });
  assert.equal(rec.backward.counts.normal, 1);
  const recs = await g.nodes([s, s + 777]);
  assert.deepEqual(recs.map((r) => [r.node_id, r.known]), [[String(s), true], [String(s + 777), false]]);
});

test('node actions hide and restore every edge of a node', async () => {
  const g = client.graph(uniqueName('g_nodes'));
  const s = randomId();
  const w = await g.write([1, 2, 3].map((i) => ({ source_id: s, destination_id: s + i })));
  assert.equal(await g.count(s, { after: w }), 3);

  const ar = await g.archiveNode(s, { direction: 'forward' });
  assert.equal(await g.count(s, { after: ar }), 0);
  assert.equal(await g.count(s, { state: 'archived' }), 3);
  const rec = await g.node(s);
  assert.equal(rec.forward.state, 'archived');
  assert.equal(rec.backward.state, 'normal');

  const re = await g.restoreNode(s);
  assert.equal(await g.count(s, { after: re }), 3);
  const ng = await g.nodeAction(s, 'negate', { waitApplied: true });
  assert.equal(ng.deduplicated, false);
  assert.equal(await g.count(s, { state: 'negative' }), 3, 'waitApplied: visible without after');
  const rm = await g.removeNode(s);
  assert.equal(await g.count(s, { state: 'removed', after: rm }), 3);
});

test('set operations: pages, every id and counts', async () => {
  const g = client.graph(uniqueName('g_sets'));
  const a = randomId();
  const b = a + 100;
  const ids = (xs) => xs.map((x) => String(a + x));
  const edges = [];
  for (const x of [1, 2, 3, 4, 5]) edges.push({ source_id: a, destination_id: a + x });
  for (const x of [4, 5, 6]) edges.push({ source_id: b, destination_id: a + x });
  edges.push({ source_id: a + 5, destination_id: a });
  const ack = await g.write(edges);

  const both = await g.set(sets.intersect(sets.node(a), sets.node(b)), { after: ack });
  assert.deepEqual(both.ids, ids([4, 5]));
  assert.equal(both.next_cursor, null);
  const notBack = await g.set(sets.difference({ node_id: a }, { node_id: a, direction: 'backward' }), { order: 'desc' });
  assert.deepEqual(notBack.ids, ids([4, 3, 2, 1]));
  const u1 = await g.set(sets.union(sets.node(a), sets.node(b)), { limit: 4 });
  assert.deepEqual(u1.ids, ids([1, 2, 3, 4]));
  assert.notEqual(u1.next_cursor, null);
  assert.deepEqual(await collect(g.setIds(sets.union(sets.node(a), sets.node(b)), { limit: 2 })), ids([1, 2, 3, 4, 5, 6]));
  assert.equal(await g.setCount(sets.union(sets.node(a), sets.node(b))), 6);
  const nested = sets.difference(sets.union(sets.node(a), sets.node(b)), sets.node(a, { direction: 'backward', state: ['normal', 'archived'] }));
  assert.equal(await g.setCount(nested), 5);
});
