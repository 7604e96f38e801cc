// CairnClient: one pipelined WebSocket connection to cairnd's /v1/ws (or HTTP requests with fetch
// when a WebSocket cannot be used), with a per-request timeout, a bound on requests in flight, and a
// bounded buffer of unanswered requests that are resent after a reconnect. Every write carries an
// idempotency key, so a resent write that cairnd had journaled is answered with its original
// acknowledgement ("deduplicated": true) instead of being applied twice. Change feed subscriptions
// (lib/feed.js) share the connection, and subscribe again after a reconnect.

import { parseJson, stringifyJson } from './json.js';
import { CairnError, clientError, problemError } from './errors.js';
import { parseAfter } from './after.js';
import { Cells, Counter, Entities, Graph, Indexes } from './models.js';
import { FeedSubscription, feedQuery } from './feed.js';

const DEFAULTS = Object.freeze({
  transport: 'auto',
  timeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  maxInFlight: 256,          // cairnd's limits.ws_in_flight_max
  resendBufferMax: 10_000,
  maxMessageBytes: 1_048_576 + 4_096,  // limits.body_bytes_max + 4 KiB: a larger message closes the connection
  reconnect: Object.freeze({ initialDelayMs: 50, maxDelayMs: 5_000, factor: 2 }),
});

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();
const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

/** A random idempotency key: a UUID (1 to 200 bytes, no control characters, as cairn requires). */
export function newIdempotencyKey() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === 'function') return c.randomUUID();
  const b = new Uint8Array(16);
  if (c && typeof c.getRandomValues === 'function') c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** `?a=1&b=2` of the members that are neither undefined nor null ('' when none). */
export function queryString(params) {
  if (!params) return '';
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

let defaultImplPromise = null;

/** The WebSocket class to use: the global one (browsers, Node 22+), else the `ws` package, else Debian's node-ws. */
function defaultWebSocketImpl() {
  if (defaultImplPromise === null) {
    defaultImplPromise = (async () => {
      if (typeof globalThis.WebSocket === 'function') {
        return { ctor: globalThis.WebSocket, headers: isNode };  // Node's (undici's) takes { headers }
      }
      for (const spec of ['ws', '/usr/share/nodejs/ws/wrapper.mjs']) {
        try {
          const m = await import(/* webpackIgnore: true */ /* @vite-ignore */ spec);
          const ctor = m.WebSocket ?? m.default;
          if (typeof ctor === 'function') return { ctor, headers: true };
        } catch {
          // Not installed here: try the next one.
        }
      }
      return null;
    })();
  }
  return defaultImplPromise;
}

function byteLength(s) {
  return isNode ? Buffer.byteLength(s, 'utf8') : utf8.encode(s).length;
}

function positiveInt(v, name) {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

export class CairnClient extends EventTarget {
  /**
   * @param {object} options see index.d.ts (ClientOptions)
   */
  constructor(options) {
    super();
    if (!options || typeof options.url !== 'string') throw new TypeError('CairnClient: options.url is required');
    const o = { ...DEFAULTS, ...options, reconnect: { ...DEFAULTS.reconnect, ...(options.reconnect ?? {}) } };
    const base = new URL(o.url);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`CairnClient: url must be http(s), got ${o.url}`);
    this.url = base.href.replace(/\/+$/, '');
    if (o.wsUrl !== undefined) {
      this.wsUrl = o.wsUrl;
    } else {
      const w = new URL(this.url);
      w.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
      w.pathname = `${w.pathname.replace(/\/+$/, '')}/v1/ws`;
      this.wsUrl = w.href;
    }
    if (!['auto', 'ws', 'http'].includes(o.transport)) throw new TypeError(`CairnClient: transport must be auto, ws or http, got ${o.transport}`);
    this.token = o.token;
    this.timeoutMs = positiveInt(o.timeoutMs, 'timeoutMs');
    this.connectTimeoutMs = positiveInt(o.connectTimeoutMs, 'connectTimeoutMs');
    this.maxInFlight = positiveInt(o.maxInFlight, 'maxInFlight');
    this.resendBufferMax = positiveInt(o.resendBufferMax, 'resendBufferMax');
    this.maxMessageBytes = positiveInt(o.maxMessageBytes, 'maxMessageBytes');
    this.reconnectOptions = o.reconnect;
    this.transport = o.transport;
    this.fetch_ = o.fetch ?? globalThis.fetch?.bind(globalThis);
    // options.WebSocket: a class, or null to never use one; undefined picks the default.
    this.wsImplOption_ = o.WebSocket;

    // Read-your-writes tokens, the latest per gateway: tokens of different gateways are not ordered.
    // lastAfter and lastSeq are those of the gateway that acknowledged the most recent write (with
    // one gateway: the greatest this client was acknowledged); see noteAck_.
    this.latestByNode_ = new Map();  // node id (null: an acknowledgement without after) -> { seq, after }
    /** The `seq` of lastAfter's write (0 before any): as `after`, it names a write of the gateway that reads. */
    this.lastSeq = 0;
    /** "<node id>:<seq>" of the latest write acknowledged by the gateway of the most recent write (null before any). */
    this.lastAfter = null;
    /** Counters for monitoring and tests. */
    this.stats = { requests: 0, wsSends: 0, httpSends: 0, resent: 0, connects: 0, disconnects: 0, retriedBusy: 0, subscribes: 0 };

    this.mode_ = o.transport === 'auto' ? null : o.transport;  // null until auto has decided
    this.closed_ = false;
    this.order_ = 0;          // submission order of requests: resends keep it
    this.wireSeq_ = 0;        // ids of WebSocket messages
    this.queue_ = [];         // requests waiting to be sent, in submission order
    this.wire_ = new Map();   // WebSocket message id -> request in flight
    this.live_ = new Set();   // every request not yet answered (queued, in flight, waiting to retry)
    this.httpActive_ = 0;
    this.ws_ = null;
    this.wsState_ = 'idle';   // idle | connecting | open
    this.everOpened_ = false;
    this.reconnectAttempt_ = 0;
    this.reconnectTimer_ = null;
    this.closedPromise_ = null;
    this.feeds_ = new Set();      // running change feed subscriptions (lib/feed.js)
    this.feedWire_ = new Map();   // SUBSCRIBE id on the current connection -> its subscription
  }

  /** The edges, pages, counts, sets and node actions of one graph. */
  graph(name) {
    return new Graph(this, name);
  }

  /** The entities of one kind (declared in cairnd's [entities] kinds). */
  entities(kind) {
    return new Entities(this, kind);
  }

  /** One cell table (declared in cairnd's [cells] tables). */
  cells(table) {
    return new Cells(this, table);
  }

  /** One counter metric (declared in cairnd's [[counters.metrics]]). */
  counter(metric) {
    return new Counter(this, metric);
  }

  /** The declared counter metrics, their dimensions and tables. */
  counters(options = {}) {
    return this.request('GET', '/v1/counters', { timeoutMs: options.timeoutMs });
  }

  /**
   * One page of the change feed (GET /v1/feed): the ops after `from` that every shard has applied, in
   * seq order; `waitMs` long-polls when there are none yet. A 410 rejects with a FeedRangeGoneError.
   */
  async feed(o = {}) {
    const query = { ...feedQuery(o), wait_ms: o.waitMs };
    return this.request('GET', '/v1/feed', {
      query, timeoutMs: o.timeoutMs ?? Math.max(this.timeoutMs, (o.waitMs ?? 0) + 1000), signal: o.signal,
    });
  }

  /**
   * The change feed's pages after `from` as they are applied: an async iterator (lib/feed.js,
   * FeedSubscription) that subscribes on the WebSocket at its first next() and again after every
   * reconnect, or long-polls over HTTP.
   */
  subscribe(o = {}) {
    return new FeedSubscription(this, o);
  }

  /** Entity and cell indexes. */
  get indexes() {
    return new Indexes(this);
  }

  /** The latest `after` of each gateway (node id) that acknowledged a write of this client. */
  get lastAfters() {
    const m = new Map();
    for (const [node, t] of this.latestByNode_) if (node !== null) m.set(node, t.after);
    return m;
  }

  /** 'ws' or 'http' once decided; null while `auto` has not connected yet. */
  get transportInUse() {
    return this.mode_;
  }

  /** How many requests are on the wire now (sent, not yet answered; at most maxInFlight). */
  get inFlight() {
    return this.mode_ === 'http' ? this.httpActive_ : this.wire_.size;
  }

  /** How many requests are accepted and not yet answered (bounded by resendBufferMax). */
  get pending() {
    return this.live_.size;
  }

  /**
   * Sends one request and resolves with the answer's JSON body (2xx), or rejects with a CairnError.
   * `write: true` (or an idempotencyKey) makes it a write: it carries an idempotency key, generated
   * when none is given, and its acknowledgement updates lastAfter, lastAfters and lastSeq.
   */
  request(method, path, options = {}) {
    return new Promise((resolve, reject) => {
      const extra = { method, path };
      if (this.closed_) {
        reject(clientError('closed', 'Client closed', 'the client was closed', extra));
        return;
      }
      if (typeof path !== 'string' || !path.startsWith('/')) {
        reject(new TypeError(`path must start with "/", got ${path}`));
        return;
      }
      const write = options.write === true || options.idempotencyKey !== undefined;
      const key = write ? (options.idempotencyKey ?? newIdempotencyKey()) : undefined;
      extra.idempotencyKey = key;
      let bodyText;
      if (options.body !== undefined) bodyText = stringifyJson(options.body);
      const fullPath = path + queryString(options.query);
      // The WebSocket envelope around the body stays far below 4 KiB for any sane path.
      const size = (bodyText === undefined ? 0 : byteLength(bodyText)) + byteLength(fullPath) + 512;
      if (size > this.maxMessageBytes) {
        reject(clientError('message-too-large', 'Message too large',
          `${method} ${path}: about ${size} bytes, above maxMessageBytes ${this.maxMessageBytes}`, extra));
        return;
      }
      if (this.live_.size >= this.resendBufferMax) {
        reject(clientError('buffer-full', 'Resend buffer full',
          `${this.live_.size} requests are unanswered (resendBufferMax ${this.resendBufferMax}); wait for some answers`, extra));
        return;
      }
      const signal = options.signal;
      if (signal?.aborted) {
        reject(clientError('aborted', 'Request aborted', `${method} ${path}: aborted by its signal`, extra));
        return;
      }
      const timeoutMs = options.timeoutMs ?? this.timeoutMs;
      const p = {
        order: ++this.order_, method, path: fullPath, bodyText, key, write, timeoutMs,
        resolve, reject, settled: false, wireId: null, attempts: 0,
        timer: null, retryTimer: null, abort: null, wake: null, unlisten: null,
      };
      if (signal) {
        const onAbort = () => {
          const i = this.queue_.indexOf(p);
          if (i >= 0) this.queue_.splice(i, 1);
          this.fail_(p, clientError('aborted', 'Request aborted', `${method} ${path}: aborted by its signal`, extra));
          this.pump_();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        p.unlisten = () => signal.removeEventListener('abort', onAbort);
      }
      this.live_.add(p);
      this.stats.requests++;
      p.timer = setTimeout(() => this.expire_(p), timeoutMs);
      this.queue_.push(p);
      this.pump_();
    });
  }

  /**
   * Rejects every unanswered request with a `closed` CairnError and closes the connection. The
   * promise resolves once the WebSocket is closed (at once over HTTP).
   */
  close() {
    if (this.closedPromise_) return this.closedPromise_;
    this.closed_ = true;
    clearTimeout(this.reconnectTimer_);
    this.reconnectTimer_ = null;
    for (const p of [...this.live_]) {
      this.fail_(p, clientError('closed', 'Client closed',
        `${p.method} ${p.path}: the client was closed before an answer came` +
        (p.write ? '; the write may have been journaled: retry it with the same idempotency key' : ''),
        { method: p.method, path: p.path, idempotencyKey: p.key }));
    }
    this.queue_ = [];
    for (const sub of [...this.feeds_]) sub.end_(null);
    this.feedWire_.clear();
    const ws = this.ws_;
    this.ws_ = null;
    this.wsState_ = 'idle';
    if (!ws || ws.readyState === 3) {
      this.closedPromise_ = Promise.resolve();
    } else {
      this.closedPromise_ = new Promise((resolve) => {
        ws.onclose = () => resolve();
        ws.onerror = () => {};
        ws.onmessage = null;
        try {
          ws.close(1000);
        } catch {
          resolve();
        }
      });
    }
    return this.closedPromise_;
  }

  // --- bookkeeping ---

  settle_(p) {
    p.settled = true;
    clearTimeout(p.timer);
    clearTimeout(p.retryTimer);
    this.live_.delete(p);
    if (p.wireId !== null) this.wire_.delete(p.wireId);
    if (p.abort) p.abort();
    if (p.wake) p.wake();
    if (p.unlisten) p.unlisten();
  }

  fail_(p, error) {
    if (p.settled) return;
    this.settle_(p);
    p.reject(error);
  }

  expire_(p) {
    if (p.settled) return;
    const i = this.queue_.indexOf(p);
    if (i >= 0) this.queue_.splice(i, 1);
    this.fail_(p, clientError('timeout', 'Request timed out',
      `${p.method} ${p.path}: no answer within ${p.timeoutMs} ms` +
      (p.write ? '; the write may have been journaled: retry it with the same idempotency key' : ''),
      { method: p.method, path: p.path, idempotencyKey: p.key, cause: p.lastError }));
    this.pump_();
  }

  finish_(p, status, body, retryAfter) {
    if (p.settled) return;
    this.settle_(p);
    if (status >= 200 && status < 300) {
      if (p.write && body !== null && typeof body === 'object' && !Array.isArray(body)) {
        this.noteAck_(body);
        Object.defineProperty(body, 'idempotencyKey', { value: p.key, enumerable: false });
      }
      p.resolve(body);
    } else {
      p.reject(problemError(status, body, { retryAfter, idempotencyKey: p.key, method: p.method, path: p.path }));
    }
  }

  /**
   * Keeps the latest acknowledgement of each gateway. Seqs are compared within one node id only: a
   * seq is a position in the journal of the gateway that took the write, so 41 of gateway 1 and 7
   * of gateway 2 are not ordered. An acknowledgement without `after` (a gateway older than tokens)
   * counts as one unnamed gateway.
   */
  noteAck_(ack) {
    if (typeof ack.seq !== 'number' && typeof ack.seq !== 'bigint') return;
    let node = null;
    let seq = BigInt(ack.seq);
    if (typeof ack.after === 'string') {
      try {
        const parts = parseAfter(ack.after);
        if (parts.node !== null) {
          node = parts.node;
          seq = parts.seq;
        }
      } catch {
        // A malformed after: keep the bare seq (a read passing this ack would refuse it anyway).
      }
    }
    const prev = this.latestByNode_.get(node);
    if (prev === undefined || seq > prev.seq) {
      this.latestByNode_.set(node, { seq, after: node === null ? null : `${node}:${seq}` });
    }
    const cur = this.latestByNode_.get(node);
    this.lastSeq = Number.isSafeInteger(Number(cur.seq)) ? Number(cur.seq) : cur.seq;
    this.lastAfter = cur.after;
  }

  /** Puts a request answered 429 (too many in flight) back into the queue after retry_after. */
  retryBusy_(p, retryAfterS) {
    this.stats.retriedBusy++;
    const delayMs = Math.min(1000, Math.max(10, Math.round((Number(retryAfterS) || 0) * 1000)));
    p.retryTimer = setTimeout(() => {
      if (p.settled || this.closed_) return;
      this.insertByOrder_(p);
      this.pump_();
    }, delayMs);
  }

  insertByOrder_(p) {
    let i = this.queue_.length;
    while (i > 0 && this.queue_[i - 1].order > p.order) i--;
    this.queue_.splice(i, 0, p);
  }

  // --- sending ---

  pump_() {
    if (this.closed_) return;
    if (this.mode_ === 'http') {
      while (this.httpActive_ < this.maxInFlight && this.queue_.length) this.sendHttp_(this.queue_.shift());
      return;
    }
    if (this.wsState_ === 'open') {
      // A subscription holds one of cairnd's in-flight slots of the connection, as a request does.
      while (this.wire_.size + this.feedWire_.size < this.maxInFlight && this.queue_.length) this.sendWs_(this.queue_.shift());
      return;
    }
    const waiting = this.queue_.length > 0 || [...this.feeds_].some((sub) => sub.wantsSocket_());
    if (waiting && this.wsState_ === 'idle' && this.reconnectTimer_ === null) this.connect_();
  }

  // --- change feed subscriptions (lib/feed.js) ---

  /** Gets a subscription's pages coming: SUBSCRIBE on the open WebSocket, a long poll over HTTP, or a connection. */
  feedResume_(sub) {
    if (this.closed_) {
      sub.end_(null);
    } else if (this.mode_ === 'http') {
      sub.poll_();
    } else if (this.wsState_ === 'open') {
      this.sendSubscribe_(sub);
    } else {
      this.pump_();  // connects; the open WebSocket subscribes every subscription that waits
    }
  }

  feedSocketOpen_() {
    return this.wsState_ === 'open' && this.ws_ !== null;
  }

  sendSubscribe_(sub) {
    const id = `s${++this.wireSeq_}`;
    sub.wireId_ = id;
    this.feedWire_.set(id, sub);
    this.stats.subscribes++;
    try {
      this.ws_.send(`{"id":"${id}","method":"SUBSCRIBE","path":${JSON.stringify(sub.path_())}}`);
    } catch {
      // The socket is closing: its close handler subscribes again on the next connection.
    }
  }

  /** UNSUBSCRIBE; keepId: its last frame is still awaited (return()), else frames with its id are dropped. */
  sendUnsubscribe_(id, keepId) {
    if (!keepId) this.feedWire_.delete(id);
    if (!this.feedSocketOpen_()) return;
    try {
      this.ws_.send(`{"id":"${id}","method":"UNSUBSCRIBE"}`);
    } catch {
      // The socket is closing: the subscription ends with it.
    }
  }

  failFeeds_(makeError) {
    for (const sub of [...this.feeds_]) if (sub.wantsSocket_()) sub.fail_(makeError());
  }

  sendWs_(p) {
    p.attempts++;
    if (p.attempts > 1) this.stats.resent++;
    p.wireId = ++this.wireSeq_;
    this.wire_.set(p.wireId, p);
    let msg = `{"id":${p.wireId},"method":${JSON.stringify(p.method)},"path":${JSON.stringify(p.path)}`;
    if (p.bodyText !== undefined) msg += `,"body":${p.bodyText}`;
    if (p.key !== undefined) msg += `,"idempotency_key":${JSON.stringify(p.key)}`;
    msg += '}';
    this.stats.wsSends++;
    try {
      this.ws_.send(msg);
    } catch {
      // The socket is closing: its close handler puts this request back into the queue.
    }
  }

  sendHttp_(p) {
    this.httpActive_++;
    const run = async () => {
      const r = this.reconnectOptions;
      let backoffMs = r.initialDelayMs;
      while (!p.settled && !this.closed_) {
        p.attempts++;
        if (p.attempts > 1) this.stats.resent++;
        this.stats.httpSends++;
        const ac = new AbortController();
        p.abort = () => ac.abort();
        const headers = { Accept: 'application/json' };
        if (p.bodyText !== undefined) headers['Content-Type'] = 'application/json';
        if (this.token) headers.Authorization = `Bearer ${this.token}`;
        if (p.key !== undefined) headers['Idempotency-Key'] = p.key;
        let res;
        let text;
        try {
          res = await this.fetch_(this.url + p.path, { method: p.method, headers, body: p.bodyText, signal: ac.signal });
          text = await res.text();
        } catch (e) {
          if (p.settled || this.closed_) break;
          // The connection failed or was cut: send again after a backoff (a write's idempotency key
          // makes a copy that cairnd had journaled come back deduplicated).
          p.lastError = e;
          await new Promise((wake) => {
            p.wake = wake;
            setTimeout(wake, backoffMs * (0.5 + Math.random() / 2));
          });
          p.wake = null;
          backoffMs = Math.min(r.maxDelayMs, backoffMs * r.factor);
          continue;
        }
        let body = null;
        if (text.length) {
          try {
            body = parseJson(text);
          } catch {
            body = text;
          }
        }
        const ra = res.headers.get('retry-after');
        this.finish_(p, res.status, body, ra === null ? undefined : Number(ra));
      }
      this.httpActive_--;
      this.pump_();
    };
    run().catch((e) => {
      this.fail_(p, clientError('internal', 'Client bug', String(e), { method: p.method, path: p.path, idempotencyKey: p.key, cause: e }));
    });
  }

  // --- the WebSocket connection ---

  async wsImpl_() {
    if (this.wsImplOption_ === null) return null;
    if (this.wsImplOption_ !== undefined) {
      return { ctor: this.wsImplOption_, headers: this.wsImplOption_ !== globalThis.WebSocket || isNode };
    }
    return defaultWebSocketImpl();
  }

  async connect_() {
    this.wsState_ = 'connecting';
    const impl = await this.wsImpl_();
    if (this.closed_) return;
    if (impl === null || (this.token && !impl.headers)) {
      // No WebSocket here, or one that cannot send the bearer token (a browser's).
      const why = impl === null ? 'no WebSocket implementation' : 'this WebSocket cannot send an Authorization header';
      this.wsState_ = 'idle';
      if (this.transport === 'auto') {
        this.fallBack_(why);
      } else {
        for (const p of [...this.queue_]) {
          this.fail_(p, clientError('websocket-unavailable', 'WebSocket unavailable', why,
            { method: p.method, path: p.path, idempotencyKey: p.key }));
        }
        this.queue_ = [];
        this.failFeeds_(() => clientError('websocket-unavailable', 'WebSocket unavailable', why, { method: 'SUBSCRIBE', path: '/v1/feed' }));
      }
      return;
    }
    let sock;
    try {
      const init = impl.headers && this.token ? { headers: { Authorization: `Bearer ${this.token}` } } : undefined;
      sock = init ? new impl.ctor(this.wsUrl, init) : new impl.ctor(this.wsUrl);
    } catch (e) {
      this.wsState_ = 'idle';
      this.afterConnectFailure_(e);
      return;
    }
    this.ws_ = sock;
    const connectTimer = setTimeout(() => {
      if (this.ws_ === sock && this.wsState_ === 'connecting') {
        try {
          sock.close();
        } catch {
          // Closing a socket that never opened: its close event follows either way.
        }
      }
    }, this.connectTimeoutMs);
    let lastError;
    sock.onopen = () => {
      if (this.ws_ !== sock) return;
      clearTimeout(connectTimer);
      this.wsState_ = 'open';
      this.everOpened_ = true;
      this.mode_ = 'ws';
      this.reconnectAttempt_ = 0;
      this.stats.connects++;
      this.dispatchEvent(new Event('open'));
      for (const sub of [...this.feeds_]) if (sub.wantsSocket_()) this.sendSubscribe_(sub);
      this.pump_();
    };
    sock.onmessage = (ev) => {
      if (this.ws_ !== sock) return;
      this.onWsMessage_(ev.data);
    };
    sock.onerror = (ev) => {
      lastError = ev?.error ?? ev?.message ?? ev;
    };
    sock.onclose = (ev) => {
      clearTimeout(connectTimer);
      if (this.ws_ !== sock) return;
      this.ws_ = null;
      const wasOpen = this.wsState_ === 'open';
      this.wsState_ = 'idle';
      this.onWsClosed_(wasOpen, ev, lastError);
    };
  }

  onWsMessage_(data) {
    const text = typeof data === 'string' ? data : utf8Decoder.decode(data);
    let msg;
    try {
      msg = parseJson(text);
    } catch {
      return;  // Not JSON: cannot be matched to a request.
    }
    if (msg === null || typeof msg !== 'object') return;
    if (typeof msg.id === 'string') {
      this.feedWire_.get(msg.id)?.onFrame_(msg);  // a subscription's frame (requests have number ids)
      return;
    }
    const p = this.wire_.get(msg.id);
    if (!p) return;  // The answer of a request that timed out.
    this.wire_.delete(msg.id);
    p.wireId = null;
    if (msg.status === 429 && !p.settled) {
      this.retryBusy_(p, msg.retry_after);
    } else {
      this.finish_(p, msg.status, msg.body ?? null, msg.retry_after);
    }
    this.pump_();
  }

  onWsClosed_(wasOpen, ev, lastError) {
    // Every request on the wire goes back to the front of the queue, in submission order, and is
    // sent again on the next connection.
    const back = [...this.wire_.values()].sort((a, b) => a.order - b.order);
    this.wire_.clear();
    for (const p of back) p.wireId = null;
    this.queue_ = back.concat(this.queue_);
    const subs = [...this.feedWire_.values()];
    this.feedWire_.clear();
    for (const sub of subs) sub.onConnectionLost_();
    if (wasOpen) {
      this.stats.disconnects++;
      this.dispatchEvent(new CustomEvent('disconnect', {
        detail: { code: ev?.code, reason: ev?.reason, resending: back.length },
      }));
    }
    if (this.closed_) return;
    this.afterConnectFailure_(lastError, wasOpen);
  }

  afterConnectFailure_(error, wasOpen = false) {
    if (!wasOpen && !this.everOpened_ && this.transport === 'auto' && this.mode_ === null) {
      // The WebSocket never opened: if cairnd answers HTTP, the WebSocket is what cannot be used
      // (a proxy that does not upgrade, a path that refuses it). Otherwise cairnd is down: retry.
      this.wsState_ = 'connecting';
      this.probeHttp_().then((answered) => {
        this.wsState_ = 'idle';
        if (this.closed_) return;
        if (answered) this.fallBack_(`the WebSocket did not open (${error?.message ?? error ?? 'closed'}) but HTTP answers`);
        else this.scheduleReconnect_();
      });
      return;
    }
    // cairnd answered the upgrade with a status (the `ws` package says which): 401 or 403 will not
    // change by retrying, so the waiting requests fail with it.
    const refused = /Unexpected server response: (\d+)/.exec(String(error?.message ?? error ?? ''));
    if (!wasOpen && refused && (refused[1] === '401' || refused[1] === '403')) {
      const status = Number(refused[1]);
      for (const p of [...this.queue_]) {
        this.fail_(p, new CairnError({
          type: 'urn:cairn:client:websocket-refused', title: 'WebSocket refused', status,
          detail: `cairnd answered the WebSocket upgrade with ${status}: check the bearer token`,
        }, { method: p.method, path: p.path, idempotencyKey: p.key }));
      }
      this.queue_ = [];
      this.failFeeds_(() => new CairnError({
        type: 'urn:cairn:client:websocket-refused', title: 'WebSocket refused', status,
        detail: `cairnd answered the WebSocket upgrade with ${status}: check the bearer token`,
      }, { method: 'SUBSCRIBE', path: '/v1/feed' }));
      return;
    }
    this.scheduleReconnect_();
  }

  async probeHttp_() {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), this.connectTimeoutMs);
    try {
      const headers = this.token ? { Authorization: `Bearer ${this.token}` } : {};
      const res = await this.fetch_(`${this.url}/livez`, { headers, signal: ac.signal });
      await res.arrayBuffer();
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(t);
    }
  }

  fallBack_(reason) {
    this.mode_ = 'http';
    this.dispatchEvent(new CustomEvent('fallback', { detail: { reason } }));
    for (const sub of [...this.feeds_]) if (sub.wantsSocket_()) sub.poll_();
    this.pump_();
  }

  scheduleReconnect_() {
    if (this.closed_ || this.reconnectTimer_ !== null) return;
    const r = this.reconnectOptions;
    const delayMs = Math.min(r.maxDelayMs, r.initialDelayMs * r.factor ** this.reconnectAttempt_) * (0.5 + Math.random() / 2);
    this.reconnectAttempt_++;
    this.reconnectTimer_ = setTimeout(() => {
      this.reconnectTimer_ = null;
      this.pump_();  // Connects again if requests are waiting; an idle client reconnects on its next request.
    }, delayMs);
  }
}
