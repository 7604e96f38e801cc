// Pipelining on one WebSocket: 1,000 writes in flight at once, answered out of order and matched by
// id, then reads with after= that see every one of them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { collect, newClient, randomId, uniqueName } from './support.js';

let client;
before(() => {
  client = newClient({ transport: 'ws', timeoutMs: 60_000 });
});
after(() => client?.close());

test('1,000 pipelined writes, then reads after their seqs', async () => {
  const n = 1000;
  const g = client.graph(uniqueName('g_pipe'));
  const s = randomId();
  let maxInFlight = 0;
  const writes = [];
  for (let i = 0; i < n; i++) {
    writes.push(g.add(s, s + 1 + i, { position: i + 1 }).then((ack) => {
      maxInFlight = Math.max(maxInFlight, client.inFlight);
      return ack;
    }));
  }
  assert.equal(client.pending, n, 'every write is accepted at once');
  const acks = await Promise.all(writes);
  assert.equal(client.stats.connects, 1, 'one connection');
  assert.ok(maxInFlight > 100, `many requests were on the wire at once (saw ${maxInFlight})`);
  assert.ok(maxInFlight <= client.maxInFlight);
  assert.equal(new Set(acks.map((a) => a.seq)).size, n, 'each write has its own seq');
  assert.ok(acks.every((a) => a.deduplicated === false));
  assert.equal(client.lastSeq, Math.max(...acks.map((a) => a.seq)));

  // 1,000 pipelined reads, each after its own write.
  const edges = await Promise.all(acks.map((ack, i) => g.get(s, s + 1 + i, { after: ack })));
  edges.forEach((e, i) => {
    assert.equal(e.destination_id, String(s + 1 + i));
    assert.equal(e.position, String(i + 1));
  });
  assert.equal(await g.count(s, { after: client.lastSeq }), n);
  const all = await collect(g.edges(s, { limit: 300 }));
  assert.deepEqual(all.map((e) => e.destination_id), Array.from({ length: n }, (_, i) => String(s + n - i)));
});

test('more requests than maxInFlight wait in order and all complete', async () => {
  const small = newClient({ transport: 'ws', maxInFlight: 4 });
  try {
    const g = small.graph(uniqueName('g_pipe_small'));
    const s = randomId();
    let seen = 0;
    const acks = await Promise.all(Array.from({ length: 50 }, (_, i) => g.add(s, s + i).then((a) => {
      seen = Math.max(seen, small.inFlight);
      return a;
    })));
    assert.ok(seen <= 4, `at most 4 on the wire (saw ${seen})`);
    assert.equal(await g.count(s, { after: small.lastSeq }), 50);
    // Sent in order, so journaled in order: seqs increase with submission.
    for (let i = 1; i < acks.length; i++) assert.ok(acks[i].seq > acks[i - 1].seq);
  } finally {
    await small.close();
  }
});
