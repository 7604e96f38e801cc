// HTTP: a client that cannot use the WebSocket falls back to fetch (auto), or uses only HTTP when
// told; idempotency keys deduplicate there too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cairnUrl, newClient, randomId, uniqueName } from './support.js';

async function exercise(client, tag) {
  const g = client.graph(uniqueName(`g_http_${tag}`));
  const s = randomId();
  const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => g.add(s, s + 1 + i)));
  assert.equal(new Set(acks.map((a) => a.seq)).size, 200);
  assert.equal(await g.count(s, { after: client.lastSeq }), 200);
  const e = await g.get(s, s + 7, { after: client.lastSeq });
  assert.equal(e.destination_id, String(s + 7));
  assert.equal(await g.get(s, s + 1000), null);

  // The same key twice: one write, the original acknowledgement twice.
  const key = `js-http-${tag}-${s}`;
  const first = await g.write({ source_id: s, destination_id: s + 5000 }, { idempotencyKey: key });
  const again = await g.write({ source_id: s, destination_id: s + 5000 }, { idempotencyKey: key });
  assert.equal(first.deduplicated, false);
  assert.equal(again.deduplicated, true);
  assert.equal(again.seq, first.seq);
  assert.equal(again.idempotencyKey, key);

  await assert.rejects(g.page(s, { limit: 0 }), (err) => {
    assert.equal(err.status, 400);
    assert.equal(err.slug, 'invalid-field');
    assert.equal(err.field, 'limit');
    return true;
  });
}

test('no WebSocket implementation: auto falls back to HTTP', async () => {
  const client = newClient({ WebSocket: null });
  const reasons = [];
  client.addEventListener('fallback', (ev) => reasons.push(ev.detail.reason));
  try {
    await exercise(client, 'noimpl');
    assert.equal(client.transportInUse, 'http');
    assert.equal(client.stats.wsSends, 0);
    assert.ok(client.stats.httpSends >= 200);
    assert.equal(reasons.length, 1);
  } finally {
    await client.close();
  }
});

test('a WebSocket that cannot open while HTTP answers: auto falls back to HTTP', async () => {
  // cairnd refuses an upgrade on any path but /v1/ws.
  const client = newClient({ wsUrl: `${cairnUrl().replace(/^http/, 'ws')}/v1/not-a-websocket` });
  const reasons = [];
  client.addEventListener('fallback', (ev) => reasons.push(ev.detail.reason));
  try {
    await exercise(client, 'refused');
    assert.equal(client.transportInUse, 'http');
    assert.equal(client.stats.connects, 0);
    assert.equal(reasons.length, 1);
    assert.match(reasons[0], /did not open/);
  } finally {
    await client.close();
  }
});

test('transport http: every request over fetch', async () => {
  const client = newClient({ transport: 'http' });
  try {
    await exercise(client, 'only');
    assert.equal(client.transportInUse, 'http');
    assert.equal(client.stats.wsSends, 0);
  } finally {
    await client.close();
  }
});

test('auto uses the WebSocket when it opens', async () => {
  const client = newClient();
  try {
    await exercise(client, 'auto');
    assert.equal(client.transportInUse, 'ws');
    assert.equal(client.stats.httpSends, 0);
  } finally {
    await client.close();
  }
});
