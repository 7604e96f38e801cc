// cairn's WebSocket API driven by an off-the-shelf client: Debian's node-ws (the `ws` npm
// package). Usage: node node_client.js PORT. Sends 1,000 pipelined JSON writes and 1,000
// pipelined msgpack reads on one connection and checks that every answer comes back once,
// matched by id, with the right status. Prints "ok" and exits 0, or prints why and exits 1.
'use strict';
let WebSocket;
try { WebSocket = require('ws'); } catch (e) { WebSocket = require('/usr/share/nodejs/ws'); }

const port = Number(process.argv[2]);
const n = 1000;
const fail = (why) => { console.log('FAIL: ' + why); process.exit(1); };
setTimeout(() => fail('timed out'), 60000).unref();

// A minimal msgpack encoder for the request maps (strings and non-negative integers) and a
// decoder for the answers; node has no msgpack in Debian 12.
function encode(value) {
  const parts = [];
  const put = (v) => {
    if (typeof v === 'number') {
      if (!Number.isInteger(v) || v < 0) throw new Error('only non-negative integers');
      if (v < 128) parts.push(Buffer.from([v]));
      else if (v < 65536) { const b = Buffer.alloc(3); b[0] = 0xcd; b.writeUInt16BE(v, 1); parts.push(b); }
      else { const b = Buffer.alloc(5); b[0] = 0xce; b.writeUInt32BE(v, 1); parts.push(b); }
    } else if (typeof v === 'string') {
      const s = Buffer.from(v, 'utf8');
      if (s.length < 32) parts.push(Buffer.from([0xa0 | s.length]));
      else if (s.length < 256) parts.push(Buffer.from([0xd9, s.length]));
      else { const b = Buffer.alloc(3); b[0] = 0xda; b.writeUInt16BE(s.length, 1); parts.push(b); }
      parts.push(s);
    } else if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v);
      if (keys.length > 15) throw new Error('fixmap only');
      parts.push(Buffer.from([0x80 | keys.length]));
      for (const k of keys) { put(k); put(v[k]); }
    } else throw new Error('unsupported ' + typeof v);
  };
  put(value);
  return Buffer.concat(parts);
}

function decode(buf) {
  let i = 0;
  const u8 = () => buf[i++];
  const take = (len) => { const s = buf.subarray(i, i + len); i += len; return s; };
  const str = (len) => take(len).toString('utf8');
  const arr = (len) => { const a = []; for (let k = 0; k < len; k++) a.push(next()); return a; };
  const map = (len) => { const m = {}; for (let k = 0; k < len; k++) { const key = next(); m[key] = next(); } return m; };
  function next() {
    const t = u8();
    if (t < 0x80) return t;
    if (t >= 0xe0) return t - 256;
    if ((t & 0xf0) === 0x80) return map(t & 0x0f);
    if ((t & 0xf0) === 0x90) return arr(t & 0x0f);
    if ((t & 0xe0) === 0xa0) return str(t & 0x1f);
    let v;
    switch (t) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return take(u8());
      case 0xc5: v = buf.readUInt16BE(i); i += 2; return take(v);
      case 0xc6: v = buf.readUInt32BE(i); i += 4; return take(v);
      case 0xca: v = buf.readFloatBE(i); i += 4; return v;
      case 0xcb: v = buf.readDoubleBE(i); i += 8; return v;
      case 0xcc: return u8();
      case 0xcd: v = buf.readUInt16BE(i); i += 2; return v;
      case 0xce: v = buf.readUInt32BE(i); i += 4; return v;
      case 0xcf: v = buf.readBigUInt64BE(i); i += 8; return Number(v);
      case 0xd0: v = buf.readInt8(i); i += 1; return v;
      case 0xd1: v = buf.readInt16BE(i); i += 2; return v;
      case 0xd2: v = buf.readInt32BE(i); i += 4; return v;
      case 0xd3: v = buf.readBigInt64BE(i); i += 8; return Number(v);
      case 0xd9: return str(u8());
      case 0xda: v = buf.readUInt16BE(i); i += 2; return str(v);
      case 0xdb: v = buf.readUInt32BE(i); i += 4; return str(v);
      case 0xdc: v = buf.readUInt16BE(i); i += 2; return arr(v);
      case 0xdd: v = buf.readUInt32BE(i); i += 4; return arr(v);
      case 0xde: v = buf.readUInt16BE(i); i += 2; return map(v);
      case 0xdf: v = buf.readUInt32BE(i); i += 4; return map(v);
      default: throw new Error('unsupported msgpack type 0x' + t.toString(16));
    }
  }
  const out = next();
  if (i !== buf.length) throw new Error('trailing bytes');
  return out;
}

const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
const writes = new Map();
const reads = new Map();
let lastSeq = 0;

ws.on('error', (e) => fail('socket error: ' + e.message));
ws.on('close', (code) => { if (reads.size < n) fail('closed early with ' + code); });
ws.on('open', () => {
  for (let i = 0; i < n; i++) {
    ws.send(JSON.stringify({ id: i, method: 'POST', path: '/v1/graphs/node_ws/edges',
                             body: { source_id: String(7), destination_id: String(100 + i) } }));
  }
});
ws.on('message', (data, isBinary) => {
  if (!isBinary) {
    const a = JSON.parse(data.toString());
    if (a.status !== 202) fail('write ' + a.id + ' answered ' + JSON.stringify(a));
    if (writes.has(a.id)) fail('write ' + a.id + ' answered twice');
    writes.set(a.id, a.body.seq);
    lastSeq = Math.max(lastSeq, a.body.seq);
    if (writes.size === n) {
      // Every write answered: 1,000 msgpack reads of what they wrote, read-your-writes.
      for (let i = 0; i < n; i++) {
        ws.send(encode({ id: 'r' + i, path: `/v1/graphs/node_ws/edges/7/${100 + i}?after=${lastSeq}` }));
      }
    }
    return;
  }
  const a = decode(data);
  if (a.status !== 200) fail('read ' + a.id + ' answered ' + JSON.stringify(a));
  const i = Number(String(a.id).slice(1));
  if (a.body.destination_id !== 100 + i || a.body.state !== 'normal') fail('read ' + a.id + ' got ' + JSON.stringify(a.body));
  if (reads.has(a.id)) fail('read ' + a.id + ' answered twice');
  reads.set(a.id, true);
  if (reads.size === n) {
    console.log(`ok: ${writes.size} JSON writes and ${reads.size} msgpack reads pipelined, last seq ${lastSeq}`);
    ws.close();
    process.exit(0);
  }
});
