// cairn's WebSocket API over TLS (wss://) with an off-the-shelf client: Debian's node-ws over
// node's own TLS. Usage: node node_wss_client.js PORT CA_FILE [CERT_FILE KEY_FILE]. Verifies the
// server's certificate against CA_FILE (host name "localhost"), presents the client certificate
// when given, writes one edge, reads it back with after= its seq, and prints "ok" (exit 0), or
// prints why (exit 1).
'use strict';
const fs = require('fs');
let WebSocket;
try { WebSocket = require('ws'); } catch (e) { WebSocket = require('/usr/share/nodejs/ws'); }

const [port, caFile, certFile, keyFile] = process.argv.slice(2);
const fail = (why) => { console.log('FAIL: ' + why); process.exit(1); };
setTimeout(() => fail('timed out'), 30000).unref();

const options = { ca: fs.readFileSync(caFile), minVersion: 'TLSv1.2' };
if (certFile) {
  options.cert = fs.readFileSync(certFile);
  options.key = fs.readFileSync(keyFile);
}
const ws = new WebSocket(`wss://localhost:${port}/v1/ws`, options);
ws.on('error', (e) => fail('connection: ' + e.message));
ws.on('open', () => {
  ws.send(JSON.stringify({ id: 'w', method: 'POST', path: '/v1/graphs/wss/edges',
                           body: { source_id: 5, destination_id: 6 } }));
});
ws.on('message', (data) => {
  const a = JSON.parse(data.toString());
  if (a.id === 'w') {
    if (a.status !== 202) fail('write answered ' + JSON.stringify(a));
    ws.send(JSON.stringify({ id: 'r', method: 'GET', path: `/v1/graphs/wss/edges/5/6?after=${a.body.seq}` }));
  } else if (a.id === 'r') {
    if (a.status !== 200 || a.body.state !== 'normal') fail('read answered ' + JSON.stringify(a));
    console.log(`ok: a write and its read over wss (${ws._socket.getProtocol()})`);
    ws.close();
    process.exit(0);
  } else {
    fail('unexpected answer ' + JSON.stringify(a));
  }
});
