// Read-your-writes tokens: parsing and validating `after` ("<node id>:<seq>", a bare seq, an ack),
// what the client sends for each (checked against the real cairnd's answers), and the latest token
// per gateway (lastAfter, lastAfters, lastSeq).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CairnClient, NODE_ID_MAX, parseAfter } from '../index.js';
import { newClient, randomId, uniqueName } from './support.js';

test('parseAfter takes "<node id>:<seq>" and a bare seq, and nothing else', () => {
  assert.deepEqual(parseAfter('1:41'), { node: 1, seq: 41n });
  assert.deepEqual(parseAfter('0:0'), { node: 0, seq: 0n });
  assert.deepEqual(parseAfter(`${NODE_ID_MAX}:18446744073709551615`), { node: 1023, seq: 2n ** 64n - 1n });
  assert.deepEqual(parseAfter('41'), { node: null, seq: 41n });
  for (const bad of ['1024:1', '1:18446744073709551616', '1:-1', '-1:5', '1:4.5', '1:', ':5', '1:2:3', 'a:1',
    '1:x', ' 1:2', '1:2 ', '', 'gateway', '0x10:1', '1:1e3', '12345:1']) {
    assert.throws(() => parseAfter(bad), TypeError, `"${bad}" is refused`);
  }
  assert.throws(() => parseAfter(41), TypeError, 'parseAfter parses text');
});

test('a bad after is a TypeError before any request', async () => {
  // Nothing listens on this port: a request would fail with a timeout, not a TypeError.
  const offline = new CairnClient({ url: 'http://127.0.0.1:9', transport: 'http', timeoutMs: 2000 });
  try {
    const g = offline.graph('g');
    const bad = ['1024:5', '1:-5', '1:', 'x', '3:4:5', -1, 1.5, true, {}, { seq: 'x' }, { seq: 1, after: '2000:1' },
      { seq: 1, after: '41' }, { seq: 1, after: 41 }];
    for (const a of bad) {
      await assert.rejects(g.get(1, 2, { after: a }), TypeError, `after ${JSON.stringify(a)} is refused`);
      await assert.rejects(g.count(1, { after: a }), TypeError);
      await assert.rejects(offline.entities('user').get('00000000000000000000000000000001', { after: a }), TypeError);
      await assert.rejects(offline.counter('plays').total({ from: '2026-11-16', to: '2026-11-17', after: a }), TypeError);
    }
    assert.equal(offline.stats.requests, 0, 'no request was made');
  } finally {
    await offline.close();
  }
});

test('the latest token is kept per gateway: seqs of different node ids are not compared', async () => {
  // A fetch that answers writes with the acknowledgements of two gateways, in this order.
  const acks = [
    { seq: 41, after: '1:41' },
    { seq: 7, after: '2:7' },
    { seq: 40, after: '1:40' },   // gateway 1 answers an earlier write late: not newer than 41
    { seq: 8, after: '2:8' },
    { seq: 3 },                   // a gateway older than tokens: no after
  ];
  let i = 0;
  const fetch = async () => new Response(JSON.stringify({ ...acks[i++], ts: '1', deduplicated: false }),
    { status: 200, headers: { 'Content-Type': 'application/json' } });
  const c = new CairnClient({ url: 'http://127.0.0.1:9', transport: 'http', fetch });
  try {
    const g = c.graph('g');
    assert.equal(c.lastAfter, null);
    assert.equal(c.lastSeq, 0);
    await g.add(1, 2);
    assert.deepEqual([c.lastAfter, c.lastSeq], ['1:41', 41]);
    await g.add(1, 3);
    assert.deepEqual([c.lastAfter, c.lastSeq], ['2:7', 7], 'gateway 2\'s write is the most recent: its token');
    await g.add(1, 4);
    assert.deepEqual([c.lastAfter, c.lastSeq], ['1:41', 41], 'gateway 1\'s latest stays 41');
    await g.add(1, 5);
    assert.deepEqual([...c.lastAfters], [[1, '1:41'], [2, '2:8']]);
    assert.deepEqual([c.lastAfter, c.lastSeq], ['2:8', 8]);
    const old = await g.add(1, 6);
    assert.equal(old.after, undefined);
    assert.deepEqual([c.lastAfter, c.lastSeq], [null, 3], 'an ack without after names no gateway');
    assert.deepEqual([...c.lastAfters], [[1, '1:41'], [2, '2:8']], 'lastAfters lists named gateways only');
  } finally {
    await c.close();
  }
});

let client;
before(() => {
  client = newClient();
});
after(() => client?.close());

test('a write\'s ack carries after, and a read sends it: cairnd reads it as "<node id>:<seq>"', async () => {
  const g = client.graph(uniqueName('g_after'));
  const s = randomId();
  const ack = await g.add(s, s + 1);
  const { node, seq } = parseAfter(ack.after);
  assert.ok(node !== null, `the ack names its gateway: ${ack.after}`);
  assert.equal(seq, BigInt(ack.seq), 'after\'s seq is the ack\'s');
  assert.equal(client.lastAfter, ack.after);
  const batch = await g.write([{ source_id: s, destination_id: s + 2 }, { source_id: s, destination_id: s + 3 }]);
  assert.equal(batch.after, `${node}:${batch.seq}`, 'a batch\'s after is its last op\'s');
  assert.equal(client.lastAfter, batch.after);
  assert.deepEqual([...client.lastAfters], [[node, batch.after]]);

  // The ack, its token, and the lastAfter helper all wait for the write.
  assert.equal((await g.get(s, s + 1, { after: ack })).state, 'normal');
  assert.equal(await g.count(s, { after: batch.after }), 3);
  assert.equal(await g.count(s, { after: client.lastAfter }), 3);
  assert.equal(await g.count(s, { after: batch.seq }), 3, 'a bare seq still names this gateway\'s write');
  // An ack without after (an older gateway's) falls back to its seq.
  assert.equal(await g.count(s, { after: { seq: batch.seq } }), 3);

  // This gateway's own node id with a seq it has not issued: refused (400) as its own seq would be.
  const ahead = `${node}:${BigInt(batch.seq) + 1_000_000_000n}`;
  await assert.rejects(g.count(s, { after: ahead }), (e) => e.status === 400 && e.field === 'after');
  // Another node id: cairnd waits on that gateway's applied marks, and says which gateway it waited for.
  const other = (node + 1) % (NODE_ID_MAX + 1);
  await assert.rejects(g.count(s, { after: `${other}:1`, afterTimeoutMs: 200 }), (e) => {
    assert.equal(e.status, 504);
    assert.equal(e.slug, 'not-applied-yet');
    assert.match(e.detail, new RegExp(`the gateway with node id ${other}\\b`));
    return true;
  });
});
