// Counters: increments (one and a batch), totals, hourly series and the top-N with a comparison.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newClient, randomId } from './support.js';

let client;
before(() => {
  client = newClient();
});
after(() => client?.close());

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

test('increments add up in totals, series and top', async () => {
  const plays = client.counter('plays');
  const track = randomId();
  // Two hours of yesterday (UTC) and one of the day before: every bucket is closed and known.
  const today = Math.floor(Date.now() / DAY) * DAY;
  const y = today - DAY;
  const before2 = y - DAY;
  const dims = (country, app = 'web') => ({ owner_id: 9, track_id: track, country, app });
  await plays.add({ dimensions: dims('DE'), time: y + 5 * HOUR + 1, delta: 3 });
  const ack = await plays.add([
    { dimensions: dims('DE'), time: new Date(y + 6 * HOUR) },
    { dimensions: dims('FR', 'ios'), time: y + 6 * HOUR + 59_000, delta: 2 },
    { dimensions: dims('FR'), time: before2 + HOUR, delta: 5 },
  ]);
  assert.equal(ack.count, 3);

  const total = await plays.total({ from: new Date(y), to: new Date(today), where: { track_id: track }, after: ack });
  assert.equal(total.total, 6);
  assert.equal(total.granularity, 'day');
  assert.deepEqual(total.filters, { track_id: track });

  const series = await plays.series({
    from: new Date(y + 4 * HOUR), to: new Date(y + 8 * HOUR), granularity: 'hour', where: { track_id: track },
  });
  assert.deepEqual(series.points.map((p) => [p.time_ms - y, p.count]),
    [[4 * HOUR, 0], [5 * HOUR, 3], [6 * HOUR, 3], [7 * HOUR, 0]]);
  assert.equal(series.total, 6);

  const top = await plays.top({
    from: new Date(y), to: new Date(today), compareFrom: new Date(before2), compareTo: new Date(y),
    where: { track_id: track }, by: 'country', n: 10,
  });
  assert.deepEqual(top.rows.map((r) => [r.value, r.count, r.previous_count]), [['DE', 4, 0], ['FR', 2, 5]]);
  assert.equal(top.rows[1].change_percent, -60);

  const metrics = await client.counters();
  assert.ok(JSON.stringify(metrics).includes('"plays"'));
});
