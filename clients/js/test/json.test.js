// parseJson and stringifyJson: 64-bit integers survive both ways (no cairnd needed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idText, parseJson, stringifyJson } from '../index.js';

test('integers above 2^53 are read as exact bigints, others as numbers', () => {
  const big = 2n ** 64n - 1n;
  const text = `{"id":${big},"neg":-9007199254740993,"safe":9007199254740991,"f":1.5,"e":1e3,` +
    `"s":"x\\"${big}","a":[${2n ** 63n + 5n},null,true]}`;
  const v = parseJson(text);
  assert.equal(v.id, big);
  assert.equal(v.neg, -9007199254740993n);
  assert.equal(v.safe, 9007199254740991);
  assert.equal(v.f, 1.5);
  assert.equal(v.e, 1000);
  assert.equal(v.s, `x"${big}`);
  assert.deepEqual(v.a, [2n ** 63n + 5n, null, true]);
  // JSON.parse would have rounded it: the point of parseJson.
  assert.notEqual(BigInt(JSON.parse(text).id), big);
});

test('text without large integers parses exactly as JSON.parse does', () => {
  const text = '{"seq":12,"ts":"7524017213652340737","op_id":"18014398509481985","nested":{"k":[1,2,{"z":"\\u00e9"}]}}';
  assert.deepEqual(parseJson(text), JSON.parse(text));
  assert.throws(() => parseJson('{"a":1'), SyntaxError);
  assert.throws(() => parseJson(`{"a":${2n ** 70n}`), SyntaxError);
  assert.throws(() => parseJson(`[${2n ** 70n}] x`), SyntaxError);
});

test('stringifyJson writes bigints as numbers with every digit and round-trips', () => {
  const value = { id: 2n ** 63n + 7n, list: [1, 2n ** 60n, 'a', null, undefined], skip: undefined, d: new Date(0) };
  const text = stringifyJson(value);
  assert.equal(text, `{"id":${2n ** 63n + 7n},"list":[1,${2n ** 60n},"a",null,null],"d":"1970-01-01T00:00:00.000Z"}`);
  assert.deepEqual(parseJson(text), { id: 2n ** 63n + 7n, list: [1, 2n ** 60n, 'a', null, null], d: '1970-01-01T00:00:00.000Z' });
});

test('idText takes bigint, safe number and canonical decimal, and refuses what would lose digits', () => {
  assert.equal(idText(2n ** 63n - 1n), '9223372036854775807');
  assert.equal(idText(12), '12');
  assert.equal(idText('9007199254740993'), '9007199254740993');
  assert.throws(() => idText(2 ** 53 + 2), RangeError);
  assert.throws(() => idText(-1), RangeError);
  assert.throws(() => idText('07'), RangeError);
  assert.throws(() => idText(2n ** 63n), RangeError);
  assert.throws(() => idText('9223372036854775808'), RangeError);
});
