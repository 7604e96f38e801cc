// CairnError: every failure of a request, from cairn (an RFC 9457 problem) or from the client itself
// (a timeout, a closed client, a full resend buffer), in one shape.

const CLIENT_TYPE_PREFIX = 'urn:cairn:client:';

export class CairnError extends Error {
  /**
   * @param {object} problem the problem+json body: type, title, status, detail, and any other members
   * @param {object} [extra] retryAfter (seconds), idempotencyKey, method, path, cause
   */
  constructor(problem, extra = {}) {
    const p = problem !== null && typeof problem === 'object' ? problem : {};
    const status = typeof p.status === 'number' ? p.status : 0;
    const title = typeof p.title === 'string' ? p.title : `HTTP ${status}`;
    const detail = typeof p.detail === 'string' ? p.detail : undefined;
    super(detail ? `${title}: ${detail}` : title, extra.cause !== undefined ? { cause: extra.cause } : undefined);
    this.name = 'CairnError';
    this.type = typeof p.type === 'string' ? p.type : 'about:blank';
    this.title = title;
    this.status = status;
    this.detail = detail;
    this.field = typeof p.field === 'string' ? p.field : undefined;
    this.problem = p;
    this.retryAfter = extra.retryAfter;
    this.idempotencyKey = extra.idempotencyKey;
    this.method = extra.method;
    this.path = extra.path;
  }

  /** The stable last segment of `type` (`invalid-field`, `not-found`, `timeout`, ...). */
  get slug() {
    const t = this.type;
    if (t.startsWith(CLIENT_TYPE_PREFIX)) return t.slice(CLIENT_TYPE_PREFIX.length);
    const cut = t.lastIndexOf('/');
    return cut >= 0 ? t.slice(cut + 1) : t;
  }

  /** True when the problem came from the client, not from cairn (status 0). */
  get isClientError() {
    return this.type.startsWith(CLIENT_TYPE_PREFIX);
  }
}

/**
 * 410 feed-range-gone: the journal no longer holds the ops after the feed's `from` (retention retired
 * them). `oldestSeq` is the oldest seq it still holds: rebuild what was missed from the shards' rows,
 * then read the feed again from `oldestSeq - 1`.
 */
export class FeedRangeGoneError extends CairnError {
  constructor(problem, extra) {
    super(problem, extra);
    const o = this.problem.oldest_seq;
    this.oldestSeq = typeof o === 'number' || typeof o === 'bigint' ? o : undefined;
  }
}

/** A problem the client makes itself: status 0, type `urn:cairn:client:<slug>`. */
export function clientError(slug, title, detail, extra) {
  return new CairnError({ type: CLIENT_TYPE_PREFIX + slug, title, status: 0, detail }, extra);
}

/** The CairnError for an HTTP status and answer body that is not a success. */
export function problemError(status, body, extra) {
  if (body !== null && typeof body === 'object' && !Array.isArray(body) && typeof body.type === 'string') {
    if (status === 410 && body.type.endsWith('/feed-range-gone')) return new FeedRangeGoneError({ ...body, status }, extra);
    return new CairnError({ ...body, status }, extra);
  }
  return new CairnError({ type: 'about:blank', title: `HTTP ${status}`, status,
                          detail: typeof body === 'string' ? body : undefined }, extra);
}
