// The change feed (docs/api.md, "Change feed" and "Subscribing to the feed"): the ops a gateway's
// shards have applied, in seq order. CairnClient.feed reads one page (GET /v1/feed);
// CairnClient.subscribe returns a FeedSubscription, an async iterator over the pages cairnd pushes on
// the client's WebSocket (SUBSCRIBE), or that it long-polls with GET /v1/feed over HTTP.
//
// A subscription keeps its position, the next_from of the last page it received, and subscribes again
// from it after a reconnect or a gateway's stop (an `end` frame with 503), so the consumer gets every
// op once, in seq order, across them. It holds at most `bufferPages` pages the consumer has not taken:
// when they fill up it unsubscribes, and subscribes again from its position once the consumer has
// taken half of them, so a slow consumer slows cairnd down rather than growing the client's memory.

import { clientError, problemError } from './errors.js';

/** Subscriptions one connection may hold (cairnd's limit); the client holds at most this many. */
export const SUBSCRIPTIONS_MAX = 16;
const MODELS = ['edge', 'node', 'entity', 'cell', 'counter', 'index'];
const SEQ_TEXT = /^(0|[1-9][0-9]{0,19})$/;

/** A seq (`from`) as decimal text: a non-negative safe integer, a bigint or a decimal string. */
function seqText(v, what) {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v === 'bigint' && v >= 0n && v < (1n << 64n)) return v.toString();
  if (typeof v === 'string' && SEQ_TEXT.test(v) && BigInt(v) < (1n << 64n)) return v;
  throw new TypeError(`${what} must be a seq (a non-negative integer: a number, a bigint or decimal text), got ${String(v)}`);
}

/**
 * The query of GET /v1/feed (without wait_ms) from the client's options: from, limit, model, name,
 * keyPrefix. `from` and `model` are checked here (a TypeError before any request); cairnd checks the
 * rest and answers 400 invalid-field naming it.
 */
export function feedQuery(o = {}) {
  if (o === null || typeof o !== 'object') throw new TypeError('feed options must be an object');
  if (o.model !== undefined && !MODELS.includes(o.model)) {
    throw new TypeError(`model must be one of ${MODELS.join(', ')}, got ${String(o.model)}`);
  }
  return {
    from: seqText(o.from ?? 0, 'from'), limit: o.limit, model: o.model, name: o.name, key_prefix: o.keyPrefix,
  };
}

function positiveInt(v, name) {
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  return v;
}

function queryText(q) {
  const parts = [];
  for (const [k, v] of Object.entries(q)) {
    if (v !== undefined && v !== null) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * The pages of the change feed after `from`, pushed by cairnd (`for await (const page of sub)`). Pages
 * without ops are skipped unless `emptyPages` is set. `break` (or `return()`) ends it: it sends
 * UNSUBSCRIBE and waits (at most the client's timeoutMs) for cairnd's last frame, so nothing is
 * pushed after. It ends with an error for what retrying cannot mend: a FeedRangeGoneError (410: it fell
 * behind the journal's retention), a refused SUBSCRIBE (400: a bad filter), a page of another gateway
 * (`feed-gateway-changed`); and quietly when the client is closed.
 */
export class FeedSubscription {
  constructor(client, o = {}) {
    const q = feedQuery(o);
    this.client_ = client;
    this.from_ = q.from;            // where it resumes: the next_from of the last page it received
    this.filters_ = { limit: q.limit, model: q.model, name: q.name, key_prefix: q.key_prefix };
    this.emptyPages_ = o.emptyPages === true;
    this.bufferPages_ = positiveInt(o.bufferPages ?? 16, 'bufferPages');
    this.pollWaitMs_ = positiveInt(o.pollWaitMs ?? 10_000, 'pollWaitMs');
    /** The node id of the gateway whose feed this is (null before the first page). */
    this.nodeId = null;
    this.pages_ = [];        // received, not taken yet
    this.waiters_ = [];      // next() calls waiting for a page
    this.error_ = null;      // what ends it, handed out after the pages received before it
    this.state_ = 'new';     // new | active | paused (its buffer is full) | ended
    this.wireId_ = null;     // the id of its SUBSCRIBE on the current connection
    this.retryTimer_ = null;
    this.retryDelayMs_ = 0;
    this.polling_ = false;   // an HTTP long-poll loop runs
    this.pollAbort_ = null;
    this.ending_ = null;     // return() waiting for cairnd's last frame
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** The next page (with ops, unless emptyPages), waiting for one; done once ended. */
  next() {
    if (this.state_ === 'new') this.start_();
    if (this.pages_.length) {
      const page = this.pages_.shift();
      if (this.state_ === 'paused' && this.pages_.length <= this.bufferPages_ / 2) this.resume_();
      return Promise.resolve({ value: page, done: false });
    }
    if (this.error_ !== null) {
      const e = this.error_;
      this.error_ = null;
      return Promise.reject(e);
    }
    if (this.state_ === 'ended') return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters_.push({ resolve, reject }));
  }

  /** Ends the subscription (what `break` calls): UNSUBSCRIBE, then waits for cairnd's last frame. */
  async return(value) {
    const id = this.wireId_;
    this.wireId_ = null;  // unsubscribed below, waiting for the last frame
    this.end_(null);
    if (id !== null) {
      if (this.client_.feedSocketOpen_()) {
        await new Promise((resolve) => {
          const timer = setTimeout(() => this.endingDone_(), this.client_.timeoutMs);
          this.ending_ = { resolve, timer, id };
          this.client_.sendUnsubscribe_(id, true);
        });
      } else {
        this.client_.feedWire_.delete(id);
      }
    }
    return { value, done: true };
  }

  /** As return(). */
  throw(error) {
    return this.return(undefined).then(() => Promise.reject(error));
  }

  // --- driven by the client ---

  start_() {
    if (this.client_.closed_) {
      this.state_ = 'ended';
      return;
    }
    if (this.client_.feeds_.size >= SUBSCRIPTIONS_MAX) {
      this.state_ = 'active';
      this.fail_(clientError('too-many-subscriptions', 'Too many subscriptions',
        `this client already runs ${SUBSCRIPTIONS_MAX} subscriptions (cairnd's limit per connection); end one first`));
      return;
    }
    this.state_ = 'active';
    this.client_.feeds_.add(this);
    this.client_.feedResume_(this);
  }

  resume_() {
    this.state_ = 'active';
    this.client_.feedResume_(this);
  }

  /** Whether it waits for a connection to subscribe on. */
  wantsSocket_() {
    return this.state_ === 'active' && this.wireId_ === null && this.retryTimer_ === null;
  }

  /** The path of its SUBSCRIBE (and of its long polls, with wait_ms). */
  path_(extra = {}) {
    return `/v1/feed${queryText({ from: this.from_, ...this.filters_, ...extra })}`;
  }

  /** A frame with its SUBSCRIBE's id: a page, its last frame (`end`), or the SUBSCRIBE's refusal. */
  onFrame_(msg) {
    if (this.ending_ !== null) {
      if (msg.event !== 'feed') this.endingDone_();
      return;
    }
    if (msg.event === 'feed' && msg.status === 200) {
      this.retryDelayMs_ = 0;
      this.receive_(msg.body);
      return;
    }
    this.client_.feedWire_.delete(this.wireId_);
    this.wireId_ = null;
    if (this.state_ !== 'active') return;
    const status = msg.status;
    if (status === 200 || status === 429 || status === 503) {
      // Unsubscribed by someone else, too many requests in flight, or the gateway stops: subscribe
      // again from where it stands (after the reconnect, when the gateway closes the connection).
      this.retryLater_(msg.retry_after);
      return;
    }
    this.fail_(problemError(status, msg.body ?? null, { method: 'SUBSCRIBE', path: this.path_() }));
  }

  /** Its connection was lost: subscribe again as soon as the next one opens. */
  onConnectionLost_() {
    this.wireId_ = null;
    clearTimeout(this.retryTimer_);
    this.retryTimer_ = null;
    if (this.ending_ !== null) this.endingDone_();
  }

  receive_(page) {
    if (this.state_ !== 'active') return;  // paused or ended: it is read again from from_, or not at all
    if (page === null || typeof page !== 'object' || !Array.isArray(page.ops) || page.next_from === undefined) {
      this.fail_(clientError('internal', 'Bad feed page', 'cairnd sent a feed page without ops or next_from'));
      return;
    }
    if (this.nodeId === null) {
      this.nodeId = page.node_id;
    } else if (page.node_id !== this.nodeId) {
      // Another gateway's journal: its seqs are not this one's, so from_ means nothing there.
      this.fail_(clientError('feed-gateway-changed', 'Feed gateway changed',
        `the feed came from the gateway with node id ${this.nodeId} and now from node id ${page.node_id}: ` +
        'seqs are per gateway; subscribe to each gateway with a client of its own'));
      return;
    }
    this.from_ = String(page.next_from);
    if (page.ops.length === 0 && !this.emptyPages_) return;
    if (this.waiters_.length) {
      this.waiters_.shift().resolve({ value: page, done: false });
      return;
    }
    this.pages_.push(page);
    if (this.pages_.length >= this.bufferPages_) this.pause_();
  }

  /** The buffer is full: stop cairnd pushing (it resumes from from_ once the consumer took half). */
  pause_() {
    this.state_ = 'paused';
    this.stopServer_();
  }

  stopServer_() {
    if (this.wireId_ !== null) {
      this.client_.sendUnsubscribe_(this.wireId_, false);
      this.wireId_ = null;
    }
    clearTimeout(this.retryTimer_);
    this.retryTimer_ = null;
    if (this.pollAbort_) this.pollAbort_.abort();
  }

  retryLater_(retryAfterS) {
    const r = this.client_.reconnectOptions;
    this.retryDelayMs_ = this.retryDelayMs_ === 0 ? r.initialDelayMs : Math.min(r.maxDelayMs, this.retryDelayMs_ * r.factor);
    const asked = Number(retryAfterS) > 0 ? Math.min(1000, Number(retryAfterS) * 1000) : 0;
    const delayMs = Math.max(asked, this.retryDelayMs_) * (0.5 + Math.random() / 2);
    clearTimeout(this.retryTimer_);
    this.retryTimer_ = setTimeout(() => {
      this.retryTimer_ = null;
      if (this.state_ === 'active') this.client_.feedResume_(this);
    }, delayMs);
  }

  /** Over HTTP: long-polls GET /v1/feed from from_ while active. */
  async poll_() {
    if (this.polling_) return;
    this.polling_ = true;
    try {
      while (this.state_ === 'active') {
        const ac = new AbortController();
        this.pollAbort_ = ac;
        let page;
        try {
          page = await this.client_.feed({
            from: this.from_, limit: this.filters_.limit, model: this.filters_.model, name: this.filters_.name,
            keyPrefix: this.filters_.key_prefix, waitMs: this.pollWaitMs_, signal: ac.signal,
          });
        } catch (e) {
          if (this.state_ !== 'active') break;
          const transient = e?.name === 'CairnError' &&
            ((e.status === 0 && e.slug === 'timeout') || e.status === 429 || e.status === 503);
          if (e?.name === 'CairnError' && e.status === 0 && e.slug === 'closed') {
            this.end_(null);
          } else if (transient) {
            this.retryLater_(e.retryAfter);
          } else {
            this.fail_(e);
          }
          break;
        } finally {
          this.pollAbort_ = null;
        }
        this.retryDelayMs_ = 0;
        this.receive_(page);
      }
    } finally {
      this.polling_ = false;
    }
  }

  /** Ends it: with an error for the consumer (after the pages before it), or quietly (null). */
  fail_(error) {
    if (this.state_ === 'ended') return;
    this.end_(error);
  }

  end_(error) {
    const wasActive = this.state_ !== 'ended';
    this.state_ = 'ended';
    if (wasActive) this.stopServer_();
    this.client_.feeds_.delete(this);
    if (error === null) this.pages_ = [];
    const waiters = this.waiters_;
    this.waiters_ = [];
    let e = error;
    for (const w of waiters) {
      if (e !== null) {
        w.reject(e);
        e = null;
      } else {
        w.resolve({ value: undefined, done: true });
      }
    }
    this.error_ = e;
  }

  endingDone_() {
    const ending = this.ending_;
    if (ending === null) return;
    this.ending_ = null;
    clearTimeout(ending.timer);
    this.client_.feedWire_.delete(ending.id);
    ending.resolve();
  }
}
