// 64-bit values above 2^53 keep every digit, over the WebSocket and over HTTP: graph ids and
// positions (bigint or string in, decimal strings out), cell ref_keys and integer counter
// dimensions (bigint in, bigint out).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sets } from '../index.js';
import { newClient, randomHex16, uniqueName } from './support.js';

const DAY = 86_400_000;

for (const transport of ['ws', 'http']) {
  test(`ids above 2^53 over ${transport}`, async () => {
    const client = newClient({ transport });
    try {
      const g = client.graph(uniqueName(`g_big_${transport}`));
      // Neighbours that a double cannot tell apart: 2^62 + 16m + k rounds alike for small k.
      const base = 2n ** 62n + BigInt(Math.floor(Math.random() * 1e6)) * 16n;
      const s = base;
      const d = [base + 1n, base + 2n, base + 3n];
      assert.equal(Number(d[0]), Number(d[1]), 'as numbers these ids would collide');
      const ack = await g.write([
        { source_id: s, destination_id: d[0], position: 2n ** 62n + 1n },
        { source_id: s.toString(), destination_id: d[1].toString(), position: 2n ** 62n + 2n },
        { source_id: s, destination_id: d[2], position: 2n ** 62n + 3n },
        { source_id: d[1], destination_id: s },
      ]);
      const e = await g.get(s, d[1], { after: ack });
      assert.equal(e.source_id, s.toString());
      assert.equal(e.destination_id, d[1].toString());
      assert.equal(e.position, (2n ** 62n + 2n).toString());
      const page = await g.page(s, { after: ack });
      assert.deepEqual(page.edges.map((x) => x.destination_id), [d[2], d[1], d[0]].map(String));
      assert.equal(page.node_id, s.toString());
      assert.equal(await g.count(s.toString()), 3);
      const rec = await g.node(s);
      assert.equal(rec.node_id, s.toString());
      const both = await g.set(sets.intersect(sets.node(s), sets.node(d[1], { direction: 'backward' })));
      assert.deepEqual(both.ids, []);
      const mutual = await g.set(sets.intersect(sets.node(s), sets.node(s, { direction: 'backward' })));
      assert.deepEqual(mutual.ids, [d[1].toString()]);
      const among = await g.among(s, [d[0], d[2].toString()]);
      assert.deepEqual(among.edges.map((x) => x.destination_id), [d[2], d[0]].map(String));
      const max = 2n ** 63n - 1n;  // the largest id cairn takes
      const top = await g.add(max, max - 1n);
      assert.equal((await g.get(max, max - 1n, { after: top })).destination_id, (max - 1n).toString());

      // A number that has already lost digits is refused, not sent rounded.
      await assert.rejects(g.add(2 ** 60, 1), RangeError);

      const users = client.cells('users');
      const row = randomHex16();
      const ref = 2n ** 62n + 12345n;
      const c = await users.write({ row_key: row, column: 'BIG', ref_key: ref, body: { n: 2n ** 60n + 1n } });
      const cell = await users.latest(row, 'BIG', { after: c });
      assert.equal(cell.ref_key, ref);
      assert.equal(cell.body.n, 2n ** 60n + 1n);
      assert.equal((await users.get(row, 'BIG', ref)).ref_key, ref);

      const plays = client.counter('plays');
      const track = 2n ** 62n + BigInt(Math.floor(Math.random() * 1e9));
      const y = Math.floor(Date.now() / DAY) * DAY - DAY;
      const inc = await plays.add({ dimensions: { owner_id: 2n ** 61n, track_id: track, country: 'SE', app: 'js' }, time: y + 1, delta: 4 });
      const total = await plays.total({ from: new Date(y), to: new Date(y + DAY), where: { track_id: track }, after: inc });
      assert.equal(total.filters.track_id, track);
      assert.equal(total.total, 4);
    } finally {
      await client.close();
    }
  });
}
