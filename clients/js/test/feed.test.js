// The change feed: pages read with feed() (filters, types, long polls, 400 and 410), and subscriptions
// (the async iterator over the pages cairnd pushes, or long-polled over HTTP): every op acknowledged
// while one runs arrives once and in seq order, a slow consumer pauses and resumes it, break ends it
// on the wire, and it survives connections cut while pages were in transit and a gateway restart
// (its `end` frame 503). The 410 and the restart use a cairnd of their own (test/gateway.js). The
// example of docs/clients/js.md's "Change feed" runs as written and prints what it says.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { WebSocket as WsWebSocket } from 'ws';
import { CairnClient, CairnError, FeedRangeGoneError } from '../index.js';
import { Gateway } from './gateway.js';
import { CutProxy } from './proxy.js';
import { ADMIN_TOKEN, cairnUrl, newClient, randomHex16, randomId, uniqueName, whenTrue } from './support.js';

/** The gateway's last journaled seq: a subscription from it sees only writes made after. */
async function lastSeq(client) {
  return (await client.feed({ limit: 1 })).last_seq;
}

/** The ops of `name` after `from` until one has seq `until` (long polls of at most 2 s each). */
async function readUntil(client, query, until) {
  const ops = [];
  let from = query.from;
  const deadline = Date.now() + 30_000;
  while (ops.length === 0 || ops[ops.length - 1].seq < until) {
    assert.ok(Date.now() < deadline, `the feed reached seq ${until} within 30 s (at ${from})`);
    const page = await client.feed({ ...query, from, waitMs: 2000 });
    ops.push(...page.ops);
    from = page.next_from;
  }
  return ops;
}

/** Seqs strictly increasing, and exactly those of the acknowledgements (op ids too). */
function assertExactly(ops, acks, what) {
  const seqs = ops.map((o) => o.seq);
  for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i - 1] < seqs[i], `${what}: seq ${seqs[i]} after ${seqs[i - 1]}`);
  const want = acks.map((a) => a.seq).sort((a, b) => a - b);
  assert.deepEqual(seqs, want, `${what}: each acknowledged op once`);
  const ids = new Map(acks.map((a) => [a.seq, a.op_id]));
  for (const o of ops) assert.equal(o.op_id, ids.get(o.seq), `${what}: op id of seq ${o.seq}`);
}

/** A WebSocket class that records every frame the client receives (parsed), for wire-level checks. */
function spyWebSocket() {
  const frames = [];
  const events = new EventEmitter();
  class Spy extends WsWebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (ev) => {
        frames.push(JSON.parse(String(ev.data)));
        events.emit('frame');
      });
    }
  }
  return { Spy, frames, events };
}

/** Consumes a subscription in the background: its ops, and an emitter told of each page. */
function consume(sub) {
  const out = { ops: [], pages: 0, events: new EventEmitter(), error: null };
  out.done = (async () => {
    try {
      for await (const page of sub) {
        out.pages++;
        out.ops.push(...page.ops);
        out.events.emit('page');
      }
    } catch (e) {
      out.error = e;
    }
    out.events.emit('page');
  })();
  return out;
}

for (const transport of ['ws', 'http']) {
  test(`feed() over ${transport}: pages in seq order, typed, filtered, long-polled; 400 naming the field`, async () => {
    const client = newClient({ transport });
    try {
      const g = uniqueName(`g_feed_${transport}`);
      const s = randomId();
      const from = await lastSeq(client);
      const acks = [];
      acks.push(await client.graph(g).add(s, s + 1));
      acks.push(await client.graph(g).archiveNode(s));
      acks.push(await client.graph(g).add(s + 1, s));
      const entity = randomHex16();
      const entityAck = await client.entities('entry').put(entity, { n: 1 });

      const page = await client.feed({ from, name: g, waitMs: 2000 });
      assert.deepEqual(Object.keys(page).sort(), ['applied_through', 'last_seq', 'next_from', 'node_id', 'ops']);
      const ops = await readUntil(client, { from, name: g }, acks[2].seq);
      assertExactly(ops, acks, 'name filter');
      const [edge, node] = ops;
      assert.equal(typeof edge.seq, 'number');
      assert.equal(typeof edge.op_id, 'string');
      assert.equal(edge.hlc, acks[0].ts, "the op's HLC is its acknowledgement's ts");
      assert.deepEqual({ ...edge.op, position: 0, ts: 0 }, {
        model: 'edge', graph: g, source_id: s, destination_id: s + 1, state: 'normal', keep_position: false, position: 0, ts: 0,
      });
      assert.equal(node.op.model, 'node');
      assert.equal(node.op.action, 'archive');

      assertExactly(await readUntil(client, { from, name: g, model: 'node' }, acks[1].seq), [acks[1]], 'model filter');
      // An edge's key is its source id: s's edge and s's node op, not the edge from s + 1.
      const prefixed = await readUntil(client, { from, name: g, keyPrefix: String(s) }, acks[1].seq);
      assertExactly(prefixed, acks.slice(0, 2), 'key prefix filter');
      const entities = await readUntil(client, { from, model: 'entity', name: 'entry', keyPrefix: entity.slice(0, 8) }, entityAck.seq);
      assertExactly(entities.filter((o) => o.op.id.replaceAll('-', '') === entity), [entityAck], 'entity filter');
      // limit bounds a page; next_from resumes after it.
      const one = await client.feed({ from, name: g, limit: 1, waitMs: 2000 });
      assert.ok(one.ops.length <= 1);

      // A long poll answers once the next op is applied: started before the write.
      const tail = await lastSeq(client);
      const polled = readUntil(client, { from: tail, name: g }, tail + 1);
      const late = await client.graph(g).add(s, s + 2);
      const got = await polled;
      assert.ok(got.some((o) => o.seq === late.seq), 'the long poll saw the write made while it waited');

      await assert.rejects(client.feed({ limit: 0 }), (e) => e instanceof CairnError && e.status === 400 && e.field === 'limit');
      await assert.rejects(client.feed({ from: page.last_seq + 1_000_000 }), (e) => e.status === 400 && e.field === 'from');
      await assert.rejects(client.feed({ from: -1 }), TypeError);
      await assert.rejects(client.feed({ model: 'edges' }), TypeError);
    } finally {
      await client.close();
    }
  });

  test(`a subscription over ${transport} delivers every op acknowledged while it runs, once, in seq order`, async () => {
    const client = newClient({ transport });
    try {
      const g = client.graph(uniqueName(`g_sub_${transport}`));
      const s = randomId();
      const sub = client.subscribe({ from: await lastSeq(client), name: g.name, limit: 50 });
      const got = consume(sub);
      const n = 400;
      const acks = await Promise.all(Array.from({ length: n }, (_, i) => (i % 50 === 49 ? g.removeNode(s) : g.add(s, s + 1 + i))));
      await whenTrue(got.events, ['page'], () => got.ops.length >= n || got.error !== null, `${n} ops`);
      assert.equal(got.error, null);
      assertExactly(got.ops, acks, 'subscription');
      assert.equal(client.transportInUse, transport);
      if (transport === 'ws') assert.equal(client.stats.subscribes, 1);
      await sub.return();
      await got.done;
    } finally {
      await client.close();
    }
  });

  test(`a slow consumer over ${transport}: the buffer pauses the subscription, which resumes where it stood`, async () => {
    const client = newClient({ transport });
    try {
      const g = client.graph(uniqueName(`g_slow_${transport}`));
      const s = randomId();
      const sub = client.subscribe({ from: await lastSeq(client), name: g.name, limit: 5, bufferPages: 2 });
      const first = sub.next();  // subscribes
      const acks = await Promise.all(Array.from({ length: 100 }, (_, i) => g.add(s, s + 1 + i)));
      // Every op is applied before the consumer takes more than one page: 20 pages against a buffer of 2.
      const top = Math.max(...acks.map((a) => a.seq));
      await readUntil(client, { from: top - 1, name: g.name }, top);
      const head = (await first).value.ops;
      if (transport === 'ws') {
        // Pages are pushed after the ops are applied, not with them: wait until the buffer is full and the
        // subscription paused, else a fast consumer could take every page before anything paused.
        const deadline = Date.now() + 30_000;
        while (sub.state_ !== 'paused') {
          if (Date.now() > deadline) assert.fail('the subscription never paused with 2 pages buffered');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }
      const got = consume(sub);
      await whenTrue(got.events, ['page'], () => head.length + got.ops.length >= 100 || got.error, 'every op');
      await sub.return();
      assertExactly([...head, ...got.ops], acks, 'slow consumer');
      if (transport === 'ws') assert.ok(client.stats.subscribes >= 2, `paused and resumed (${client.stats.subscribes} SUBSCRIBEs)`);
    } finally {
      await client.close();
    }
  });

  test(`subscription filters over ${transport}: model, name and key prefix`, async () => {
    const client = newClient({ transport });
    try {
      const g = client.graph(uniqueName(`g_subf_${transport}`));
      const s = randomId();
      const from = await lastSeq(client);
      const nodes = client.subscribe({ from, name: g.name, model: 'node' });
      const keyed = client.subscribe({ from, name: g.name, keyPrefix: String(s + 1) });
      const gotNodes = consume(nodes);
      const gotKeyed = consume(keyed);
      const acks = [];
      for (let i = 0; i < 6; i++) acks.push(await g.add(s + (i % 3), s + 10 + i));
      acks.push(await g.archiveNode(s + 1));
      acks.push(await g.restoreNode(s + 2));
      // Each subscription's last matching op comes last; what came before it is all it will get.
      await whenTrue(gotNodes.events, ['page'], () => gotNodes.ops.some((o) => o.seq === acks[7].seq) || gotNodes.error, 'the node ops');
      await whenTrue(gotKeyed.events, ['page'], () => gotKeyed.ops.some((o) => o.seq === acks[6].seq) || gotKeyed.error, 'the ops of s + 1');
      await nodes.return();
      await keyed.return();
      assertExactly(gotNodes.ops, acks.slice(6), 'model=node');
      assertExactly(gotKeyed.ops, [acks[1], acks[4], acks[6]], 'key_prefix');
    } finally {
      await client.close();
    }
  });

  test(`a refused subscription over ${transport} ends with cairnd's problem; bad options throw at once`, async () => {
    const client = newClient({ transport });
    try {
      await assert.rejects(client.subscribe({ limit: 0 }).next(), (e) => e instanceof CairnError && e.status === 400 && e.field === 'limit');
      const beyond = (await lastSeq(client)) + 1_000_000;
      const sub = client.subscribe({ from: beyond });
      await assert.rejects(sub.next(), (e) => e.status === 400 && e.field === 'from');
      assert.deepEqual(await sub.next(), { value: undefined, done: true }, 'it stays ended');
      assert.throws(() => client.subscribe({ from: -1 }), TypeError);
      assert.throws(() => client.subscribe({ from: 1.5 }), TypeError);
      assert.throws(() => client.subscribe({ model: 'edges' }), TypeError);
    } finally {
      await client.close();
    }
  });
}

test('break ends a subscription on the wire: UNSUBSCRIBE, its end frame, nothing with its id after', async () => {
  const spy = spyWebSocket();
  const client = newClient({ transport: 'ws', WebSocket: spy.Spy });
  try {
    const g = client.graph(uniqueName('g_break'));
    const s = randomId();
    const from = await lastSeq(client);
    const sub = client.subscribe({ from, name: g.name });
    const control = client.subscribe({ from, name: g.name });
    const gotControl = consume(control);
    const first = await g.add(s, s + 1);
    let id = null;
    const seen = [];
    for await (const page of sub) {
      id = sub.wireId_;
      seen.push(...page.ops);
      break;
    }
    assertExactly(seen, [first], 'before break');
    // return() waited for cairnd's last frame.
    const ends = spy.frames.filter((f) => f.id === id && f.event === 'end');
    assert.deepEqual(ends.map((f) => [f.status, f.body.reason]), [[200, 'unsubscribed']]);
    assert.ok(ends[0].body.next_from >= first.seq, 'it stood after the op it delivered');
    const endAt = spy.frames.indexOf(ends[0]);
    assert.deepEqual(await sub.next(), { value: undefined, done: true });

    // More writes: the control subscription on the same connection gets them; the ended one nothing.
    const more = [];
    for (let i = 0; i < 5; i++) more.push(await g.add(s, s + 2 + i));
    await whenTrue(gotControl.events, ['page'], () => gotControl.ops.length >= 6, 'the control subscription');
    assertExactly(gotControl.ops, [first, ...more], 'control');
    // cairnd no longer knows the id: an UNSUBSCRIBE of it is answered 404, after anything it sent before.
    client.ws_.send(JSON.stringify({ id, method: 'UNSUBSCRIBE' }));
    await whenTrue(spy.events, ['frame'], () => spy.frames.some((f, i) => i > endAt && f.id === id), 'the answer to the second UNSUBSCRIBE');
    const after = spy.frames.filter((f, i) => i > endAt && f.id === id);
    assert.deepEqual(after.map((f) => [f.status, f.event, f.body.type?.split('/').pop()]), [[404, undefined, 'not-found']]);
    await control.return();
    assert.equal(client.feedWire_.size, 0);
  } finally {
    await client.close();
  }
});

test('close() ends running subscriptions quietly', async () => {
  for (const transport of ['ws', 'http']) {
    const client = newClient({ transport });
    const sub = client.subscribe({ from: await lastSeq(client), name: uniqueName('g_close') });
    const pending = sub.next();
    await client.close();
    assert.deepEqual(await pending, { value: undefined, done: true }, transport);
  }
});

test('at most 16 subscriptions run on one client', async () => {
  const client = newClient({ transport: 'ws' });
  try {
    const from = await lastSeq(client);
    const subs = Array.from({ length: 16 }, () => client.subscribe({ from, name: uniqueName('g_many') }));
    const nexts = subs.map((sub) => sub.next());
    await assert.rejects(client.subscribe({ from }).next(), (e) => e.slug === 'too-many-subscriptions' && e.isClientError);
    await Promise.all(subs.map((sub) => sub.return()));
    assert.deepEqual(await Promise.all(nexts), subs.map(() => ({ value: undefined, done: true })));
    const again = client.subscribe({ from, name: uniqueName('g_many') });
    const p = again.next();
    await again.return();
    assert.deepEqual(await p, { value: undefined, done: true }, 'one ended makes room');
  } finally {
    await client.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Reconnects: a proxy cuts the connection, after holding back the pages cairnd pushed.

let proxy;
before(async () => {
  proxy = new CutProxy(Number(new URL(cairnUrl()).port));
  await proxy.listen();
});
after(() => proxy?.close());

test('a subscription survives cut connections, pages lost in transit included: each op once, in order', async () => {
  const client = new CairnClient({
    url: `http://127.0.0.1:${proxy.port}`, token: ADMIN_TOKEN, transport: 'ws', timeoutMs: 60_000,
    reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
  });
  const writer = newClient();
  const disconnects = [];
  client.addEventListener('disconnect', (ev) => disconnects.push(ev.detail));
  try {
    const g = writer.graph(uniqueName('g_cut'));
    const s = randomId();
    const sub = client.subscribe({ from: await lastSeq(writer), name: g.name, limit: 20 });
    const got = consume(sub);
    const acks = [];
    const batch = async (n) => {
      acks.push(...await Promise.all(Array.from({ length: n }, () => g.add(s, randomId()))));
    };
    await batch(200);
    await whenTrue(got.events, ['page'], () => got.ops.length >= 100 || got.error, 'the first pages');
    // Hold back what cairnd pushes while more is written, then cut: those pages never reach the client.
    proxy.swallow();
    const before1 = proxy.accepted;
    await batch(200);
    await whenTrue(proxy, ['swallowed'], () => proxy.swallowedBytes >= 4096, 'pages pushed while held back');
    proxy.cut();
    await whenTrue(proxy, ['accepted'], () => proxy.accepted > before1, 'the client to reconnect');
    await whenTrue(got.events, ['page'], () => got.ops.length >= 400 || got.error, 'the held-back ops, read again');
    // A plain cut, and writes while the client is away.
    const before2 = proxy.accepted;
    proxy.cut();
    await batch(200);
    await whenTrue(proxy, ['accepted'], () => proxy.accepted > before2, 'the client to reconnect');
    await whenTrue(got.events, ['page'], () => got.ops.length >= 600 || got.error, 'every op');
    assert.equal(got.error, null);
    assertExactly(got.ops, acks, 'across cuts');
    assert.equal(disconnects.length, 2);
    assert.ok(client.stats.subscribes >= 3, `subscribed again after each cut (${client.stats.subscribes})`);
    await sub.return();
  } finally {
    await client.close();
    await writer.close();
  }
});

test('a subscription survives a gateway restart: its end frame 503, then it subscribes again from where it stood', async () => {
  const gw = new Gateway({ nodeId: 901 });
  const spy = spyWebSocket();
  let client;
  try {
    await gw.start();
    client = new CairnClient({
      url: gw.url, token: ADMIN_TOKEN, transport: 'ws', WebSocket: spy.Spy, timeoutMs: 60_000,
      reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
    });
    const g = client.graph(uniqueName('g_restart'));
    const s = randomId();
    const sub = client.subscribe({ from: 0 });
    const got = consume(sub);
    const acks = await Promise.all(Array.from({ length: 50 }, (_, i) => g.add(s, s + 1 + i)));
    await whenTrue(got.events, ['page'], () => got.ops.length >= 50 || got.error, 'the ops before the stop');
    const stopped = gw.stop();
    await whenTrue(spy.events, ['frame'], () => spy.frames.some((f) => f.event === 'end'), 'the end frame');
    assert.equal(await stopped, 0, 'cairnd stopped cleanly');
    const ends = spy.frames.filter((f) => f.event === 'end');
    assert.deepEqual(ends.map((f) => [f.status, f.body.type.split('/').pop(), f.body.next_from]),
      [[503, 'shutting-down', Math.max(...acks.map((a) => a.seq))]], 'the gateway ended the subscription where it stood');
    await gw.start();
    const writer = new CairnClient({ url: gw.url, token: ADMIN_TOKEN });
    try {
      acks.push(...await Promise.all(Array.from({ length: 50 }, (_, i) => writer.graph(g.name).add(s, s + 100 + i))));
    } finally {
      await writer.close();
    }
    await whenTrue(got.events, ['page'], () => got.ops.length >= 100 || got.error, 'the ops after the restart');
    assert.equal(got.error, null);
    assertExactly(got.ops, acks, 'across the restart');
    assert.ok(client.stats.subscribes >= 2);
    await sub.return();
  } finally {
    await client?.close();
    await gw.close();
  }
});

test('a from behind the retention: 410 FeedRangeGoneError with oldestSeq, from feed() and subscribe()', async () => {
  const gw = new Gateway({ nodeId: 902, journal: ['retention_seconds = 0'] });
  try {
    await gw.start();
    for (const transport of ['ws', 'http']) {
      const client = new CairnClient({ url: gw.url, token: ADMIN_TOKEN, transport });
      try {
        const g = client.graph(uniqueName('g_gone'));
        // Retention retires applied ops as writes come: write until seq 1 is gone.
        let gone = null;
        const deadline = Date.now() + 30_000;
        while (gone === null) {
          assert.ok(Date.now() < deadline, 'retention retired the first ops within 30 s');
          await g.add(1, randomId(), { waitApplied: true });
          try {
            await client.feed({ from: 0 });
          } catch (e) {
            if (!(e instanceof FeedRangeGoneError)) throw e;
            gone = e;
          }
        }
        assert.ok(gone instanceof CairnError);
        assert.equal(gone.status, 410);
        assert.equal(gone.slug, 'feed-range-gone');
        assert.equal(gone.field, 'from');
        assert.equal(typeof gone.oldestSeq, 'number');
        assert.ok(gone.oldestSeq > 1, `the oldest op held is past seq 1 (${gone.oldestSeq})`);
        const sub = client.subscribe({ from: 0 });
        await assert.rejects(sub.next(), (e) => e instanceof FeedRangeGoneError && e.oldestSeq >= gone.oldestSeq);
        // From oldest_seq - 1 it reads again. The feed ends at the op every shard has applied, which
        // may not yet include the oldest one (waitMs); and with retention_seconds = 0 the writer may
        // retire that op meanwhile (a 410 again): then one more write, and its oldest op.
        let oldest = gone.oldestSeq;
        for (let tries = 1; ; ++tries) {
          try {
            const page = await client.feed({ from: oldest - 1, waitMs: 5000 });
            assert.equal(page.ops[0]?.seq, oldest);
            break;
          } catch (e) {
            if (!(e instanceof FeedRangeGoneError) || tries >= 5) throw e;
            await g.add(1, randomId(), { waitApplied: true });
            oldest = await client.feed({ from: 0 }).then(
              () => assert.fail('seq 1 was retired'),
              (again) => { if (!(again instanceof FeedRangeGoneError)) throw again; return again.oldestSeq; });
          }
        }
      } finally {
        await client.close();
      }
    }
  } finally {
    await gw.close();
  }
});

test('the change feed example of docs/clients/js.md runs and prints what it says', async () => {
  const doc = await readFile(new URL('../../../docs/clients/js.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Change feed\n'));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(doc.includes('\n## Change feed\n') && block, 'docs/clients/js.md has a Change feed section with a js block');
  const graph = uniqueName('follows');
  const code = block[1].replaceAll("'http://127.0.0.1:8080'", JSON.stringify(cairnUrl())).replaceAll("'follows'", `'${graph}'`);
  const expected = [...code.matchAll(/^\/\/ -> (.*)$/gm)].map((m) => m[1]);
  assert.equal(expected.length, 1);
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', code], {
      cwd: fileURLToPath(new URL('..', import.meta.url)), timeout: 30_000, env: { ...process.env, CAIRN_TOKEN: ADMIN_TOKEN },
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  assert.deepEqual(out.trim().split('\n'), expected);
});
