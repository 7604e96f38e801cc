// Read-your-writes across gateways: two cairnd on the same shards, A (CAIRN_OUTER_URL, started with
// applying paused by test/gateways/paused.toml) and B (CAIRN_URL). A write acknowledged by A is read
// through B with A's ack as `after`: while A applies nothing, B's read times out with 504
// not-applied-yet naming A's node id; once A applies, B's read sees the write. Run it as
// clients/js/README.md says (two nested scripts/with-cairnd).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CairnClient, CairnError, parseAfter } from '../../index.js';
import { ADMIN_TOKEN, cairnUrl, newClient, randomHex16, randomId, uniqueName, uuidText } from '../support.js';

function outerUrl() {
  const url = process.env.CAIRN_OUTER_URL;
  if (!url) {
    throw new Error('CAIRN_OUTER_URL is not set: run these tests under two nested scripts/with-cairnd ' +
      '(the outer one with --toml clients/js/test/gateways/paused.toml; see clients/js/README.md)');
  }
  return url;
}

/** The node id of the gateway a client talks to, from its GET /v1/admin/status. */
async function selfNodeId(client) {
  const status = await client.request('GET', '/v1/admin/status');
  assert.ok(Array.isArray(status.gateways), `status lists the gateways (${status.gateways_error ?? ''})`);
  const self = status.gateways.filter((g) => g.self);
  assert.equal(self.length, 1, 'one gateway is the one that answered');
  return { node: self[0].node_id, status };
}

let a;  // gateway A (takes the writes)
let b;  // gateway B (reads them)
let nodeA;
let nodeB;
before(async () => {
  a = new CairnClient({ url: outerUrl(), token: ADMIN_TOKEN });
  b = newClient();
  const sa = await selfNodeId(a);
  nodeA = sa.node;
  nodeB = (await selfNodeId(b)).node;
  assert.notEqual(nodeA, nodeB, 'two gateways: two node ids');
  assert.deepEqual(sa.status.gateways.map((g) => g.node_id).sort((x, y) => x - y), [nodeA, nodeB].sort((x, y) => x - y));
  assert.ok(sa.status.shards.every((s) => s.paused),
    'gateway A starts with applying paused (the outer with-cairnd needs --toml clients/js/test/gateways/paused.toml)');
});
after(async () => {
  await a?.close();
  await b?.close();
});

const graph = uniqueName('g_gw');
const s = randomId();
let held;  // A's ack of a write A has not applied

test('while A applies nothing, B\'s read with A\'s ack times out with 504 naming A\'s node id', async () => {
  held = await a.graph(graph).add(s, s + 1);
  const { node, seq } = parseAfter(held.after);
  assert.equal(node, nodeA, 'the ack names the gateway that took it');
  assert.equal(seq, BigInt(held.seq));
  const gb = b.graph(graph);
  assert.equal(await gb.get(s, s + 1), null, 'without after, B reads what the shards hold: not the write');
  for (const transport of ['ws', 'http']) {
    const reader = newClient({ transport });
    try {
      for (const afterValue of [held, held.after]) {
        await assert.rejects(reader.graph(graph).get(s, s + 1, { after: afterValue, afterTimeoutMs: 300 }), (e) => {
          assert.ok(e instanceof CairnError);
          assert.equal(e.status, 504);
          assert.equal(e.slug, 'not-applied-yet');
          assert.match(e.detail, new RegExp(`by the gateway with node id ${nodeA}\\b`));
          assert.equal(e.problem.seq, held.seq);
          assert.ok(Array.isArray(e.problem.shards) && e.problem.shards.length === 1, 'the edge\'s shard is behind');
          return true;
        }, `${transport}, after ${typeof afterValue}`);
      }
    } finally {
      await reader.close();
    }
  }
  // A bare seq names a write of the gateway that reads: B has journaled nothing, so it refuses it.
  await assert.rejects(gb.count(s, { after: held.seq }), (e) => e.status === 400 && e.field === 'after');
});

test('once A applies, B\'s read with the same ack sees the write', async () => {
  const resumed = await a.request('POST', '/v1/admin/apply/resume', { body: { all: true } });
  assert.ok(resumed.shards.every((x) => !x.paused));
  const gb = b.graph(graph);
  const e = await gb.get(s, s + 1, { after: held, afterTimeoutMs: 10_000 });
  assert.equal(e?.state, 'normal');
  assert.equal(e.ts, held.ts);
  assert.equal(await gb.count(s, { after: held.after }), 1);
});

test('writes through A are read through B at once with A\'s latest token', async () => {
  const n = 50;
  const ga = a.graph(graph);
  const acks = await Promise.all(Array.from({ length: n }, (_, i) => ga.add(s + 100, s + 101 + i)));
  const last = Math.max(...acks.map((x) => x.seq));
  assert.equal(a.lastAfter, `${nodeA}:${last}`);
  assert.deepEqual([...a.lastAfters], [[nodeA, a.lastAfter]]);
  assert.equal(await b.graph(graph).count(s + 100, { after: a.lastAfter }), n);

  // Another model and route: an entity put through A, read through B.
  const id = randomHex16();
  const put = await a.entities('user').put(id, { name: 'Ada' });
  const got = await b.entities('user').get(id, { after: put });
  assert.equal(got?.id, uuidText(id));
  assert.deepEqual(got.body, { name: 'Ada' });
});

test('a client behind a balancer keeps the latest token of each gateway', async () => {
  // A round-robin "load balancer" in the client's fetch: requests alternate between B and A.
  const targets = [cairnUrl().replace(/\/+$/, ''), outerUrl().replace(/\/+$/, '')];
  let turn = 0;
  const lbUrl = 'http://cairn-lb.invalid';
  const fetch = (url, init) => globalThis.fetch(targets[turn++ % 2] + url.slice(lbUrl.length), init);
  const lb = new CairnClient({ url: lbUrl, token: ADMIN_TOKEN, transport: 'http', fetch });
  try {
    const g = lb.graph(graph);
    const node = s + 200;
    const acks = [];
    for (let i = 0; i < 6; i++) acks.push(await g.add(node, node + 1 + i));  // one at a time: they alternate
    const byNode = new Map();
    for (const x of acks) byNode.set(parseAfter(x.after).node, x.after);  // seqs of one journal increase
    assert.deepEqual([...byNode.keys()].sort(), [nodeA, nodeB].sort(), 'both gateways took writes');
    assert.deepEqual(new Map(lb.lastAfters), byNode, 'the latest of each gateway');
    assert.equal(lb.lastAfter, acks[5].after, 'lastAfter: the latest of the gateway of the most recent write');
    assert.equal(lb.lastSeq, acks[5].seq);
    // A read names one token and sees that gateway's writes; reading after each sees them all.
    const first = await g.count(node, { after: byNode.get(nodeA) });
    assert.ok(first >= 3, `the read after A's token sees A's 3 writes (saw ${first})`);
    assert.equal(await g.count(node, { after: byNode.get(nodeB) }), 6);
  } finally {
    await lb.close();
  }
});
