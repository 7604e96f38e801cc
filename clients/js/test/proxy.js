// A TCP proxy between a client and cairnd that the tests use to break connections on purpose
// (not a test itself). swallow() stops passing cairnd's bytes to the client (they are counted:
// the answers of requests cairnd has done, which the client never sees); cut() destroys every
// connection, both sides. New connections pass bytes both ways until the next swallow().
import { EventEmitter } from 'node:events';
import net from 'node:net';

export class CutProxy extends EventEmitter {
  constructor(targetPort, targetHost = '127.0.0.1') {
    super();
    this.targetPort = targetPort;
    this.targetHost = targetHost;
    this.conns = new Set();
    this.swallowing = false;
    this.swallowedBytes = 0;
    this.accepted = 0;
    this.cuts = 0;
    this.server = net.createServer((client) => this.accept_(client));
  }

  /** Listens on a free loopback port; resolves with it. */
  listen() {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.port = this.server.address().port;
        resolve(this.port);
      });
    });
  }

  accept_(client) {
    this.accepted++;
    const upstream = net.connect(this.targetPort, this.targetHost);
    const conn = { client, upstream };
    this.conns.add(conn);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (this.swallowing) {
        this.swallowedBytes += d.length;
        this.emit('swallowed', this.swallowedBytes);
      } else {
        client.write(d);
      }
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      if (this.conns.delete(conn)) this.emit('closed');
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    this.emit('accepted', this.accepted);
  }

  /** From now on, cairnd's bytes on the open connections are dropped (and counted). */
  swallow() {
    this.swallowing = true;
    this.swallowedBytes = 0;
  }

  /** Destroys every open connection and passes bytes again on the next ones. */
  cut() {
    this.cuts++;
    for (const { client, upstream } of this.conns) {
      client.destroy();
      upstream.destroy();
    }
    this.conns.clear();
    this.swallowing = false;
  }

  close() {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
