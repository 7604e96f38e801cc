// Compiled, never run (`tsc --noEmit -p test`): uses the declarations of index.d.ts the way an
// application does, and each `@ts-expect-error` line is misuse the types must refuse (tsc fails if
// such a line compiles cleanly).
import {
  CairnClient, CairnError, FeedRangeGoneError, FeedSubscription, parseAfter, parseJson, sets,
  type AfterToken, type Edge, type EdgePage, type FeedOp, type FeedPage, type IdString, type WriteAck,
} from '@cairn/client';

export async function typed(): Promise<void> {
  const cairn = new CairnClient({ url: 'http://127.0.0.1:8080', token: 'secret', transport: 'auto', timeoutMs: 5000 });
  cairn.addEventListener('disconnect', (ev) => {
    const resending: number = ev.detail.resending;
    void resending;
  });

  // Graphs: ids in as bigint, number or string; out as strings.
  const g = cairn.graph('follows');
  const ack: WriteAck = await g.add(12, 34n, { position: 2n ** 62n });
  await g.write([{ source_id: '12', destination_id: 56, state: 'archived' }], { idempotencyKey: 'k', waitApplied: true });
  const edge: Edge | null = await g.get(12, 34, { after: ack });
  if (edge) {
    const id: IdString = edge.destination_id;
    void id;
  }
  const page: EdgePage = await g.page(12, { direction: 'backward', state: ['normal', 'archived'], limit: 10, after: ack.seq });
  for await (const e of g.edges(12, { cursor: page.next_cursor ?? undefined })) void e.position;
  const n: number = await g.count(12, { state: 'removed', after: cairn.lastSeq });
  // Read-your-writes tokens across gateways: the ack's after, "<node id>:<seq>", per gateway.
  const token: string = ack.after;
  const literal: AfterToken = '1:41';
  await g.contains(12, 34, { after: token });
  await g.count(12, { after: literal, afterTimeoutMs: 2000 });
  const latest: string | null = cairn.lastAfter;
  await g.count(12, { after: latest ?? undefined });
  const perNode: string | undefined = cairn.lastAfters.get(1);
  const parts = parseAfter(ack.after);
  const node: number | null = parts.node;
  const tokenSeq: bigint = parts.seq;
  void perNode; void node; void tokenSeq;
  const counts: number[] = await g.counts([{ node_id: 1n, direction: 'forward' }]);
  void n; void counts;
  await g.removeNode(12, { direction: 'both' });
  const ids: IdString[] = (await g.set(sets.difference(sets.node(12), sets.node(12, { direction: 'backward' })), { order: 'desc' })).ids;
  void ids;
  await g.setCount({ op: 'union', queries: [{ node_id: 1 }, { op: 'intersect', queries: [{ node_id: 2 }, { node_id: 3 }] }] });

  // Entities with a typed body.
  type User = { name: string; age: number };
  const users = cairn.entities<User>('user');
  await users.put('00000000000000000000000000000001', { name: 'Ada', age: 36 }, { ts: new Date() });
  const u = await users.get('00000000000000000000000000000001');
  const name: string | undefined = u?.body.name;
  void name;
  await users.by('users_by_age', { age: { gte: 18, lt: 65 } }, { limit: 10 });

  // Cells and counters.
  const cells = cairn.cells('users');
  await cells.write({ row_key: '00000000000000000000000000000001', column: 'BASE', ref_key: 1, body: { a: 1 } });
  const plays = cairn.counter<{ track_id: number | bigint; country: string }>('plays');
  await plays.add({ dimensions: { track_id: 5n, country: 'DE' }, delta: 2, time: new Date() });
  const top = await plays.top({ from: '2026-11-16', to: '2026-11-23', by: 'country', where: { track_id: 5 } });
  void top.rows;
  await cairn.indexes.create({ name: 'by_x', kind: 'user', properties: [{ name: 'x', type: 'string', length: 10 }] });
  const metrics = await cairn.counters();
  const granularity: 'hour' | 'day' | undefined = metrics.metrics[0]?.tables[0]?.granularity;
  void granularity;

  // Errors.
  try {
    await g.get(1, 2);
  } catch (e) {
    if (e instanceof CairnError) {
      const slug: string = e.slug;
      const status: number = e.status;
      const key: string | undefined = e.idempotencyKey;
      void slug; void status; void key;
    }
  }
  void parseJson('1');

  // The change feed: a page, then a subscription from where it ended.
  const feedPage: FeedPage = await cairn.feed({ from: 0, limit: 100, waitMs: 5000, model: 'edge', name: 'follows', keyPrefix: '12' });
  const firstOp: FeedOp | undefined = feedPage.ops[0];
  const opId: string | undefined = firstOp?.op_id;
  void opId;
  if (firstOp?.op.model === 'edge') {
    const state: string = firstOp.op.state;
    void state;
  }
  const sub: FeedSubscription = cairn.subscribe({ from: feedPage.next_from, model: 'entity', bufferPages: 4 });
  try {
    for await (const p of sub) {
      const next: number = p.next_from;
      for (const o of p.ops) if (o.op.model === 'entity' && !o.op.deleted) void o.op.body;
      if (next > 100) break;
    }
  } catch (err) {
    if (err instanceof FeedRangeGoneError) {
      const oldest: number | undefined = err.oldestSeq;
      void oldest;
    }
  }
  await sub.return();
  const subscribes: number = cairn.stats.subscribes;
  void subscribes;
  await cairn.close();
}

export async function misuse(): Promise<void> {
  // @ts-expect-error the url is required
  new CairnClient({ token: 'x' });
  // @ts-expect-error there is no such transport
  new CairnClient({ url: 'http://h', transport: 'tcp' });
  const cairn = new CairnClient({ url: 'http://h' });
  const g = cairn.graph('g');
  // @ts-expect-error an id is a bigint, a number or a string, not an object
  await g.add({ id: 1 }, 2);
  // @ts-expect-error no such edge state
  await g.write({ source_id: 1, destination_id: 2, state: 'deleted' });
  // @ts-expect-error no such direction
  await g.page(1, { direction: 'sideways' });
  // @ts-expect-error counts take one state
  await g.count(1, { state: ['normal', 'archived'] });
  // @ts-expect-error after is a seq or an acknowledgement, not a boolean
  await g.get(1, 2, { after: true });
  const e = await g.get(1, 2);
  // @ts-expect-error a read edge may be null
  void e.state;
  if (e) {
    // @ts-expect-error ids in answers are strings: not bigints
    const big: bigint = e.source_id;
    void big;
  }
  // @ts-expect-error a set expression needs an operation at the top
  await g.set({ node_id: 1 });
  // @ts-expect-error no such set operation
  await g.set({ op: 'xor', queries: [] });
  // @ts-expect-error no such node action
  await g.nodeAction(1, 'delete');
  // @ts-expect-error the ack's seq is a number, not a string
  const s: string = (await g.add(1, 2)).seq;
  void s;
  // @ts-expect-error the ack's after is a "<node id>:<seq>" string, not a number
  const t: number = (await g.add(1, 2)).after;
  void t;
  // @ts-expect-error an AfterToken is "<node id>:<seq>"
  const badToken: AfterToken = 'gateway-1';
  void badToken;
  // @ts-expect-error lastAfters is read-only: the client keeps it
  cairn.lastAfters.set(1, '1:2');
  const users = cairn.entities<{ name: string }>('user');
  // @ts-expect-error the body does not match the entity type
  await users.put('00000000000000000000000000000001', { name: 5 });
  // @ts-expect-error a cell needs a ref_key
  await cairn.cells('t').write({ row_key: 'r', column: 'c', body: {} });
  const plays = cairn.counter<{ track_id: number; country: string }>('plays');
  // @ts-expect-error top breaks down by a dimension of the metric
  await plays.top({ from: '2026-11-16', to: '2026-11-23', by: 'city' });
  // @ts-expect-error a counter read needs from and to
  await plays.total({ where: { track_id: 5 } });
  // @ts-expect-error an index definition has a kind or a table and column
  await cairn.indexes.create({ name: 'x', properties: [{ name: 'x', type: 'id' }] });
  // @ts-expect-error a string property needs a length
  await cairn.indexes.create({ name: 'x', kind: 'user', properties: [{ name: 'x', type: 'string' }] });
  // @ts-expect-error request paths start with a slash
  await cairn.request('GET', 'v1/counters');
  // @ts-expect-error no such feed model
  await cairn.feed({ model: 'edges' });
  // @ts-expect-error a subscription chooses its own wait
  cairn.subscribe({ waitMs: 1000 });
  // @ts-expect-error a feed op's seq is a number
  const opSeq: string = (await cairn.feed()).ops[0]!.seq;
  void opSeq;
  // @ts-expect-error a node op has no destination_id
  for await (const p of cairn.subscribe()) if (p.ops[0]?.op.model === 'node') void p.ops[0].op.destination_id;
  try {
    await g.count(1);
  } catch (err) {
    if (err instanceof CairnError) {
      // @ts-expect-error status is a number
      const st: string = err.status;
      void st;
    }
  }
}
