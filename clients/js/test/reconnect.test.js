// Reconnect with resend: a TCP proxy between the client and cairnd cuts the connection while
// writes are in flight — after holding back cairnd's answers, so that writes cairnd journaled are
// never acknowledged to the client — and the client reconnects and sends every unanswered write
// again with its idempotency key. Every write must take effect exactly once: the counter total is
// the exact sum of the deltas (a write applied twice would add its delta twice) and the edge count
// is exact (a lost write would be missing).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CairnClient } from '../index.js';
import { CutProxy } from './proxy.js';
import { ADMIN_TOKEN, cairnUrl, newClient, randomId, uniqueName, whenTrue } from './support.js';

const DAY = 86_400_000;
let proxy;
before(async () => {
  proxy = new CutProxy(Number(new URL(cairnUrl()).port));
  await proxy.listen();
});
after(() => proxy?.close());

test('writes in flight across cut connections take effect exactly once', async (t) => {
  const client = new CairnClient({
    url: `http://127.0.0.1:${proxy.port}`, token: ADMIN_TOKEN, transport: 'ws', timeoutMs: 120_000,
    reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
  });
  const disconnects = [];
  client.addEventListener('disconnect', (ev) => disconnects.push(ev.detail));
  const n = 2000;
  const plays = client.counter('plays');
  const g = client.graph(uniqueName('g_resend'));
  const track = randomId();
  const node = randomId();
  const time = Math.floor(Date.now() / DAY) * DAY - DAY + 1;  // yesterday, UTC: one day bucket
  let expected = 0;
  let acked = 0;
  const progress = new (await import('node:events')).EventEmitter();
  const writes = [];
  try {
    for (let i = 0; i < n; i++) {
      const delta = 1 + (i % 7);
      expected += delta;
      const count = plays.add({ dimensions: { owner_id: 1, track_id: track, country: 'DE', app: 'js' }, time, delta });
      const edge = g.add(node, node + 1 + i);
      writes.push(count, edge);
      for (const w of [count, edge]) w.then(() => { acked++; progress.emit('ack'); }, () => {});
    }
    // Three cuts while writes are in flight, each after cairnd's answers were held back (the
    // client never sees those acknowledgements), and one plain cut.
    for (const [at, hold] of [[400, true], [1300, true], [2400, false], [3200, true]]) {
      await whenTrue(progress, ['ack'], () => acked >= at, `${at} acknowledgements`);
      const before = proxy.accepted;
      if (hold) {
        proxy.swallow();
        await whenTrue(proxy, ['swallowed'], () => proxy.swallowedBytes >= 8192, 'answers cairnd sent while held back');
      }
      proxy.cut();
      await whenTrue(proxy, ['accepted'], () => proxy.accepted > before, 'the client to reconnect');
    }
    const acks = await Promise.all(writes);
    const countAcks = acks.filter((_, i) => i % 2 === 0);
    const edgeAcks = acks.filter((_, i) => i % 2 === 1);

    // Read through a direct client, after the last acknowledged seq.
    const direct = newClient();
    try {
      const total = await direct.counter('plays').total({
        from: new Date(time - 1), to: new Date(time - 1 + DAY), where: { track_id: track }, after: client.lastSeq,
      });
      assert.equal(total.total, expected, 'every increment counted exactly once');
      assert.equal(await direct.graph(g.name).count(node, { after: client.lastSeq }), n, 'every edge written');
      assert.equal(new Set(countAcks.map((a) => a.idempotencyKey)).size, n);
      assert.equal(edgeAcks.length, n);
    } finally {
      await direct.close();
    }

    assert.equal(disconnects.length, 4, 'the client saw every cut');
    assert.ok(disconnects.some((d) => d.resending > 0), 'writes were on the wire at a cut');
    assert.ok(client.stats.resent > 0, 'unanswered writes were sent again');
    const dedup = acks.filter((a) => a.deduplicated).length;
    t.diagnostic(`${2 * n} writes, ${disconnects.length} cuts, resent ${client.stats.resent}, deduplicated ${dedup}`);
    assert.ok(dedup > 0, `some resent writes had been journaled and came back deduplicated (${dedup})`);
    assert.equal(new Set(acks.map((a) => a.seq)).size, 2 * n, 'each write was journaled once: one seq each');
  } finally {
    await client.close();
  }
});

test('a write whose connection is cut before it is journaled is written after the reconnect', async () => {
  const client = new CairnClient({
    url: `http://127.0.0.1:${proxy.port}`, token: ADMIN_TOKEN, transport: 'ws', timeoutMs: 30_000,
    reconnect: { initialDelayMs: 10, maxDelayMs: 100 },
  });
  try {
    const g = client.graph(uniqueName('g_resend2'));
    const s = randomId();
    await g.add(s, s + 1);  // opens the connection
    const before = proxy.accepted;
    proxy.cut();
    const ack = await g.add(s, s + 2);  // sent on the next connection
    assert.ok(proxy.accepted > before);
    assert.equal(ack.deduplicated, false);
    assert.equal(await g.count(s, { after: ack }), 2);
  } finally {
    await client.close();
  }
});
