// Errors: cairn's problems as CairnError over both transports, bearer tokens (401, 403), and the
// client's own limits: per-request timeout, the resend buffer bound, the message size bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CairnClient, CairnError } from '../index.js';
import { CutProxy } from './proxy.js';
import { ADMIN_TOKEN, READ_TOKEN, cairnUrl, newClient, randomHex16, randomId, uniqueName, whenTrue } from './support.js';

for (const transport of ['ws', 'http']) {
  test(`problems are CairnErrors over ${transport}`, async () => {
    const client = newClient({ transport });
    try {
      const g = client.graph(uniqueName('g_err'));
      await assert.rejects(g.page(1, { cursor: 'abc' }), (e) => {
        assert.ok(e instanceof CairnError);
        assert.equal(e.name, 'CairnError');
        assert.equal(e.status, 400);
        assert.equal(e.type, 'https://cairn.dev/problems/invalid-field');
        assert.equal(e.slug, 'invalid-field');
        assert.equal(e.title, 'Invalid request');
        assert.equal(e.field, 'cursor');
        assert.match(e.detail, /cursor/);
        assert.equal(e.isClientError, false);
        assert.equal(e.problem.status, 400);
        return true;
      });
      await assert.rejects(client.request('GET', '/v1/no/such/route'), (e) => e.status === 404 && e.slug === 'not-found');
      await assert.rejects(g.write({ source_id: 1, destination_id: 2, state: 'gone' }), (e) => {
        assert.equal(e.field, 'state');
        assert.equal(typeof e.idempotencyKey, 'string', 'a failed write names its key');
        return true;
      });
      // A seq the gateway has not issued yet.
      await assert.rejects(g.count(1, { after: client.lastSeq + 1_000_000_000 }), (e) => e.status === 400 && e.field === 'after');
    } finally {
      await client.close();
    }
  });

  test(`bearer tokens over ${transport}`, async () => {
    const reader = newClient({ transport, token: READ_TOKEN });
    const nobody = newClient({ transport, token: undefined });
    const nobodyAuto = newClient({ token: undefined });
    try {
      const g = reader.graph(uniqueName('g_tok'));
      assert.equal(await g.count(5), 0, 'a read token reads');
      await assert.rejects(g.add(5, 6), (e) => e.status === 403 && e.slug === 'forbidden');
      // Without a token the upgrade (or the request) is refused: 401.
      const refused = transport === 'ws' ? 'websocket-refused' : 'unauthorized';
      await assert.rejects(nobody.graph(g.name).count(5), (e) => e.status === 401 && e.slug === refused);
      // auto: the upgrade is refused, HTTP answers (/livez is public), so the request goes there.
      await assert.rejects(nobodyAuto.graph(g.name).count(5), (e) => e.status === 401 && e.slug === 'unauthorized');
      assert.equal(nobodyAuto.transportInUse, 'http');
    } finally {
      await reader.close();
      await nobody.close();
      await nobodyAuto.close();
    }
  });
}

test('a request without an answer fails with a timeout that names the write key', async () => {
  const proxy = new CutProxy(Number(new URL(cairnUrl()).port));
  await proxy.listen();
  const client = new CairnClient({ url: `http://127.0.0.1:${proxy.port}`, token: ADMIN_TOKEN, transport: 'ws', timeoutMs: 400 });
  try {
    const g = client.graph(uniqueName('g_timeout'));
    await g.count(1);  // connected
    proxy.swallow();
    const started = Date.now();
    await assert.rejects(g.add(1, 2, { idempotencyKey: 'js-timeout-key' }), (e) => {
      assert.ok(e instanceof CairnError);
      assert.equal(e.status, 0);
      assert.equal(e.slug, 'timeout');
      assert.equal(e.type, 'urn:cairn:client:timeout');
      assert.equal(e.isClientError, true);
      assert.equal(e.idempotencyKey, 'js-timeout-key');
      return true;
    });
    assert.ok(Date.now() - started >= 390);
    assert.equal(client.pending, 0);
    // Resending with the same key: answered from the journal, deduplicated.
    proxy.cut();
    await whenTrue(proxy, ['closed'], () => proxy.conns.size === 0, 'the proxy to drop its connections');
    const again = await g.add(1, 2, { idempotencyKey: 'js-timeout-key', timeoutMs: 10_000 });
    assert.equal(again.deduplicated, true);
  } finally {
    await client.close();
    await proxy.close();
  }
});

test('the resend buffer is bounded, and so is a message', async () => {
  const client = newClient({ resendBufferMax: 5 });
  try {
    const g = client.graph(uniqueName('g_bound'));
    const s = randomId();
    const accepted = [1, 2, 3, 4, 5].map((i) => g.add(s, s + i));
    await assert.rejects(g.add(s, s + 6), (e) => e.slug === 'buffer-full' && e.status === 0);
    assert.equal((await Promise.all(accepted)).length, 5);
    assert.equal(await g.count(s, { after: client.lastSeq }), 5);

    const big = { blob: 'x'.repeat(1_200_000) };
    await assert.rejects(client.entities('user').put(randomHex16(), big), (e) => e.slug === 'message-too-large');
    // The connection is still fine.
    assert.equal(await g.count(s), 5);
  } finally {
    await client.close();
  }
});

test('a closed client rejects what is pending and what comes next', async () => {
  const client = newClient();
  const g = client.graph(uniqueName('g_closed'));
  const pending = g.count(1);
  await client.close();
  await assert.rejects(pending, (e) => e.slug === 'closed');
  await assert.rejects(g.count(1), (e) => e.slug === 'closed');
});
