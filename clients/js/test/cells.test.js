// Cells: immutable versions, the latest of a column and of a row, versions paged, 409 on a rewrite.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { collect, newClient, randomHex16, uuidText } from './support.js';

let client;
before(() => {
  client = newClient();
});
after(() => client?.close());

test('cell versions, latest, rows and pages', async () => {
  const users = client.cells('users');
  const row = randomHex16();
  const ack = await users.write([
    { row_key: row, column: 'BASE', ref_key: 1, body: { username: 'alice', email: 'a@example.com' } },
    { row_key: row, column: 'BASE', ref_key: 2, body: { username: 'alice', email: 'alice@acme.example' } },
    { row_key: row, column: 'PREFS', ref_key: 7, body: { theme: 'dark' } },
  ]);
  assert.equal(ack.count, 3);

  const latest = await users.latest(row, 'BASE', { after: ack });
  assert.equal(latest.row_key, uuidText(row));
  assert.equal(latest.ref_key, 2);
  assert.deepEqual(latest.body, { username: 'alice', email: 'alice@acme.example' });
  const v1 = await users.get(row, 'BASE', 1);
  assert.equal(v1.body.email, 'a@example.com');
  assert.equal(await users.get(row, 'BASE', 3), null, 'a version never written is null');
  assert.equal(await users.latest(row, 'NOPE'), null);

  const versions = await users.versions(row, 'BASE', { limit: 1 });
  assert.deepEqual(versions.versions.map((c) => c.ref_key), [2]);
  assert.notEqual(versions.next_cursor, null);
  assert.deepEqual((await collect(users.allVersions(row, 'BASE', { limit: 1 }))).map((c) => c.ref_key), [2, 1]);

  const r = await users.row(row);
  assert.deepEqual(r.columns.map((c) => [c.column, c.ref_key]).sort(), [['BASE', 2], ['PREFS', 7]]);

  // The same cell with the same body changes nothing; with another body it is refused.
  const same = await users.write({ row_key: row, column: 'PREFS', ref_key: 7, body: { theme: 'dark' } });
  assert.equal(typeof same.seq, 'number');
  await assert.rejects(users.write({ row_key: row, column: 'PREFS', ref_key: 7, body: { theme: 'light' } }), (e) => {
    assert.equal(e.status, 409);
    assert.equal(e.slug, 'cell-exists');
    return true;
  });
  assert.deepEqual((await users.get(row, 'PREFS', 7, { after: same })).body, { theme: 'dark' });
});
