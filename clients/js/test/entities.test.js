// Entities: put, get, delete with read-your-writes, and index queries (equality, range, pages).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CairnError } from '../index.js';
import { collect, newClient, randomHex16, uniqueName, uuidText } from './support.js';

let client;
before(() => {
  client = newClient();
});
after(() => client?.close());

test('put, get, replace and delete an entity', async () => {
  const users = client.entities('user');
  const id = randomHex16();
  const a = await users.put(id, { name: 'Ada', age: 36, big: 2n ** 62n + 1n });
  const got = await users.get(id, { after: a });
  assert.equal(got.id, uuidText(id));
  assert.deepEqual(got.body, { name: 'Ada', age: 36, big: 2n ** 62n + 1n });
  assert.equal(typeof got.ts, 'string');

  const b = await users.put(id, { name: 'Ada Lovelace' });
  assert.deepEqual((await users.get(id, { after: b })).body, { name: 'Ada Lovelace' }, 'a put replaces the whole body');
  const d = await users.delete(id);
  assert.equal(await users.get(id, { after: d }), null, 'a deleted entity reads as null');
  assert.equal(await users.get(randomHex16()), null, 'a missing entity reads as null');

  // A client ts older than the delete loses to it (last writer wins by ts).
  const old = await users.put(id, { name: 'late' }, { ts: Date.now() - 60_000 });
  assert.equal(await users.get(id, { after: old }), null);

  await assert.rejects(client.entities('nosuchkind').get(id), (e) => {
    assert.ok(e instanceof CairnError);
    assert.equal(e.status, 404);
    assert.equal(e.slug, 'unknown-kind');
    return true;
  });
});

test('index queries: equality, a range and pages', async () => {
  const entries = client.entities('entry');
  const index = uniqueName('js_entries_by_feed');
  const def = await client.indexes.create({
    name: index, kind: 'entry', shard_on: 'feed_id',
    properties: [{ name: 'feed_id', type: 'id' }, { name: 'rank', type: 'int' }],
  });
  assert.equal(def.name, index);
  assert.ok((await client.indexes.list()).indexes.some((x) => x.name === index));

  const feed = randomHex16();
  const ids = [];
  for (let rank = 1; rank <= 6; rank++) {
    const id = randomHex16();
    ids.push(uuidText(id));
    await entries.put(id, { feed_id: feed, rank, title: `entry ${rank}` }, { waitApplied: true });
  }
  const page = await entries.by(index, { feed_id: feed, rank: { gte: 2, lt: 5 } });
  assert.deepEqual(page.entities.map((e) => e.body.rank), [2, 3, 4]);
  assert.deepEqual(page.entities.map((e) => e.id), ids.slice(1, 4));

  const first = await entries.by(index, { feed_id: feed }, { limit: 4 });
  assert.equal(first.entities.length, 4);
  assert.notEqual(first.next_cursor, null);
  const every = await collect(entries.all(index, { feed_id: feed }, { limit: 4 }));
  assert.deepEqual(every.map((e) => e.body.rank), [1, 2, 3, 4, 5, 6]);

  await assert.rejects(entries.put(randomHex16(), { feed_id: 'not-an-id', rank: 1 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.slug, 'invalid-field');
    assert.equal(e.field, 'body.feed_id');
    return true;
  });
  await client.indexes.drop(index);
  assert.ok(!(await client.indexes.list()).indexes.some((x) => x.name === index));
});
