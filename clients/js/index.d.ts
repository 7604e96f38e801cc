// Hand-written declarations of @cairn/client (the library is plain JavaScript, index.js).
// test/types-check.ts uses them and shows, with @ts-expect-error, what they refuse.

// ---------------------------------------------------------------------------------------------
// Values

/** A 64-bit id (0 to 2^63 - 1) as the client takes it: a bigint, a number up to 2^53 - 1, or a canonical decimal string. */
export type IdInput = bigint | number | string;
/** A 64-bit id or position in a graph answer: always a canonical decimal string (exact above 2^53). */
export type IdString = string;
/** A 64-bit integer the client writes: a number up to 2^53 - 1 or a bigint. */
export type Int64Input = number | bigint;
/** A 64-bit integer of an answer outside graphs: a number when exact, else a bigint. */
export type Int64 = number | bigint;
/**
 * A write's acknowledgement `after`, "<node id>:<seq>", which a read on any gateway of the same shards
 * understands (node id 0 to 1023, seq a non-negative integer).
 */
export type AfterToken = `${number}:${number}`;
/**
 * What a read waits for: a write's acknowledgement (its `after`; its `seq` when it has none), an
 * AfterToken, or a bare seq (a non-negative integer, or its decimal text), which names a write of the
 * gateway that serves the read. Anything else is a TypeError before any request.
 */
export type After = WriteAck | { readonly seq: number | bigint; readonly after?: string } | AfterToken | number | bigint | string;
/** An HLC timestamp, always a decimal string. */
export type Hlc = string;
/** Milliseconds since the Unix epoch, or a Date. */
export type TimeMsInput = number | Date;

export type JsonValue = string | number | bigint | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export type EdgeState = 'normal' | 'removed' | 'archived' | 'negative';
export type Direction = 'forward' | 'backward';
export type NodeDirection = Direction | 'both';
export type NodeAction = 'remove' | 'archive' | 'negate' | 'restore' | 'unarchive';
export type NodeState = EdgeState;

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * Every failure of a request. From cairn: the RFC 9457 problem (`type`, `title`, `status`, `detail`,
 * `field`). From the client itself: status 0 and type `urn:cairn:client:<slug>`, where slug is
 * `timeout`, `closed`, `buffer-full`, `message-too-large`, `websocket-unavailable`, `websocket-refused`
 * (status 401 or 403: the upgrade was refused), `aborted` (a request's signal), `too-many-subscriptions`,
 * `feed-gateway-changed` (a subscription's pages came from another gateway) or `internal`.
 */
export class CairnError extends Error {
  readonly name: 'CairnError';
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string | undefined;
  /** The input at fault (a query parameter, a path capture, or a body location such as `edges[3].source_id`). */
  readonly field: string | undefined;
  /** The whole problem object, with members such as `seq` and `shards` of `not-applied-yet`. */
  readonly problem: Readonly<Record<string, unknown>>;
  /** Seconds, when cairn said when to retry (503, 429). */
  readonly retryAfter: number | undefined;
  /** The write's idempotency key: resend the write with it to make it count once. */
  readonly idempotencyKey: string | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  /** The last segment of `type`: `invalid-field`, `not-found`, `not-applied-yet`, `timeout`, ... */
  readonly slug: string;
  /** True for problems the client made (status 0). */
  readonly isClientError: boolean;
  constructor(problem: { type?: string; title?: string; status?: number; detail?: string; [k: string]: unknown },
              extra?: { retryAfter?: number; idempotencyKey?: string; method?: string; path?: string; cause?: unknown });
}

/**
 * 410 feed-range-gone: the journal no longer holds the ops after the feed's `from` (retention retired
 * them). Rebuild what was missed from the shards' rows, then read the feed again from `oldestSeq - 1`.
 */
export class FeedRangeGoneError extends CairnError {
  /** The oldest seq the gateway's journal still holds. */
  readonly oldestSeq: number | undefined;
}

// ---------------------------------------------------------------------------------------------
// The client

/** A WebSocket class: the global one, or the `ws` package's (which takes `{ headers }`). */
export interface WebSocketClass {
  new (url: string, protocolsOrOptions?: unknown): unknown;
}

export interface ReconnectOptions {
  /** First delay after a lost connection (default 50 ms); each further attempt multiplies it by factor. */
  initialDelayMs?: number;
  /** Longest delay between attempts (default 5000 ms). */
  maxDelayMs?: number;
  /** Default 2. Delays are jittered to 50-100% of the computed value. */
  factor?: number;
}

export interface ClientOptions {
  /** cairnd's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Default: url with ws(s): and /v1/ws. */
  wsUrl?: string;
  /** A bearer token of [[tokens]] (sent on the WebSocket upgrade and on every HTTP request). */
  token?: string;
  /** `auto` (default): the WebSocket, or HTTP when it cannot be used; `ws` or `http`: only that. */
  transport?: 'auto' | 'ws' | 'http';
  /** Per-request timeout from the call to the answer, resends included (default 10000 ms). */
  timeoutMs?: number;
  /** How long one WebSocket connection attempt may take (default 5000 ms). */
  connectTimeoutMs?: number;
  /** Requests on the wire at once (default 256, cairnd's limits.ws_in_flight_max); more wait in order. */
  maxInFlight?: number;
  /** Requests accepted and not yet answered, kept to be resent after a reconnect (default 10000); beyond, `buffer-full`. */
  resendBufferMax?: number;
  /** Largest request message (default 1 MiB + 4 KiB, cairnd's limit); larger ones fail with `message-too-large`. */
  maxMessageBytes?: number;
  reconnect?: ReconnectOptions;
  /** The WebSocket class to use; null: never use a WebSocket. Default: global WebSocket, else `ws`. */
  WebSocket?: WebSocketClass | null;
  /** The fetch function for HTTP (default: globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
}

export interface RequestOptions {
  /** The JSON body; a bigint is written as a JSON number with all its digits. */
  body?: unknown;
  /** Query parameters; undefined and null members are left out. */
  query?: Record<string, string | number | bigint | boolean | null | undefined>;
  /** A write: it carries an idempotency key and is resent safely after a reconnect. */
  write?: boolean;
  /** The write's idempotency key (1 to 200 bytes); generated when a write has none. */
  idempotencyKey?: string;
  timeoutMs?: number;
  /** Aborting it fails the request with `aborted` (a request on the wire is answered, and the answer dropped). */
  signal?: AbortSignal;
}

export interface ClientStats {
  requests: number;
  wsSends: number;
  httpSends: number;
  /** Sends of a request after its first (after a reconnect, or a failed HTTP connection). */
  resent: number;
  connects: number;
  disconnects: number;
  /** Requests answered 429 too-many-in-flight and sent again. */
  retriedBusy: number;
  /** SUBSCRIBE messages sent (a subscription sends one more after each reconnect or pause). */
  subscribes: number;
}

export interface DisconnectDetail {
  code: number | undefined;
  reason: string | undefined;
  /** Requests that were on the wire and will be sent again. */
  resending: number;
}

export class CairnClient extends EventTarget {
  constructor(options: ClientOptions);
  readonly url: string;
  readonly wsUrl: string;
  readonly timeoutMs: number;
  readonly maxInFlight: number;
  readonly resendBufferMax: number;
  /**
   * The latest `after` of the gateway (node id) that acknowledged this client's most recent write, null
   * before any write: pass it as `after` to any gateway. With one gateway, the latest write of all.
   */
  readonly lastAfter: string | null;
  /**
   * The latest `after` of each gateway (node id) that acknowledged a write of this client. Tokens of
   * different gateways are not ordered, and a read names only one: it sees that gateway's writes.
   */
  readonly lastAfters: ReadonlyMap<number, string>;
  /**
   * The seq of lastAfter (0 before any write). As `after`, a bare seq names a write of the gateway that
   * serves the read: only right when every request reaches one gateway. Prefer lastAfter.
   */
  readonly lastSeq: number;
  readonly stats: Readonly<ClientStats>;
  /** 'ws' or 'http' once decided (auto decides at the first connection). */
  readonly transportInUse: 'ws' | 'http' | null;
  /** Requests accepted and not yet answered. */
  readonly pending: number;
  /** Requests on the wire now (sent, not yet answered; at most maxInFlight). */
  readonly inFlight: number;

  /** Any route: resolves with the answer's JSON body (2xx) or rejects with a CairnError. */
  request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: `/${string}`, options?: RequestOptions): Promise<T>;
  /** Rejects every unanswered request (`closed`) and closes the connection. */
  close(): Promise<void>;

  graph(name: string): Graph;
  entities<B extends JsonObject = JsonObject>(kind: string): Entities<B>;
  cells<B extends JsonObject = JsonObject>(table: string): Cells<B>;
  counter<D extends Dimensions = Dimensions>(metric: string): Counter<D>;
  counters(options?: { timeoutMs?: number }): Promise<{ metrics: CounterMetricInfo[] }>;
  readonly indexes: Indexes;

  /** One page of the change feed (GET /v1/feed); a 410 rejects with FeedRangeGoneError. */
  feed(options?: FeedOptions): Promise<FeedPage>;
  /**
   * The change feed's pages after `from` as the shards apply them: pushed on the WebSocket (subscribed
   * at the first next(), and again after every reconnect), long-polled over HTTP. At most 16 per client.
   */
  subscribe(options?: SubscribeOptions): FeedSubscription;

  addEventListener(type: 'open', listener: (ev: Event) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: 'disconnect', listener: (ev: CustomEvent<DisconnectDetail>) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: 'fallback', listener: (ev: CustomEvent<{ reason: string }>) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
}

/** A new random idempotency key (a UUID). */
export function newIdempotencyKey(): string;

// ---------------------------------------------------------------------------------------------
// Options of reads and writes

export interface ReadOptions {
  /**
   * Read your writes: wait until the shards the read needs have applied this write (an ack or its
   * `after` token: on any gateway; a bare seq: this gateway's) and every earlier write of its gateway.
   */
  after?: After;
  /** How long cairn waits for `after` (its timeout_ms; default 5000); past it, 504 not-applied-yet. */
  afterTimeoutMs?: number;
  /** The client's timeout of this request. */
  timeoutMs?: number;
}

export interface WriteOptions {
  /** Default: a new UUID. Sending a write again with the same key returns its original acknowledgement. */
  idempotencyKey?: string;
  /** Answer only once every shard the write touches has applied it (`?wait=applied`). */
  waitApplied?: boolean;
  /** cairn's bound on that wait (default 5000); past it, 504 not-applied-yet (the write is durable). */
  waitTimeoutMs?: number;
  timeoutMs?: number;
}

/** The acknowledgement of a write: durable in cairnd's journal. */
export interface WriteAck {
  /** The journal sequence of the (last) op in the journal of the gateway that took the write. */
  readonly seq: number;
  /**
   * "<node id>:<seq>" of the (last) op: what a read on any gateway of the same shards passes as `after`
   * (passing the ack itself sends this). Absent from gateways older than it: the ack's seq is used.
   */
  readonly after: string;
  /** The first op's seq, for a batch. */
  readonly first_seq?: number;
  /** The number of ops, for a batch. */
  readonly count?: number;
  /** The op's HLC timestamp; one per op for a batch. */
  readonly ts: Hlc | Hlc[];
  readonly op_id?: string;
  /** True when cairn had this idempotency key already: this is the original acknowledgement. */
  readonly deduplicated: boolean;
  /** The idempotency key the write was sent with (not part of cairn's JSON). */
  readonly idempotencyKey: string;
}

// ---------------------------------------------------------------------------------------------
// Graphs

export interface EdgeWrite {
  source_id: IdInput;
  destination_id: IdInput;
  state?: EdgeState;
  /** Sort key in both adjacency lists; default the write's time in ms. */
  position?: Int64Input;
  /** Keep the current position (default true for archived, else false). */
  keep_position?: boolean;
  /** The write's own time (Unix ms): last writer wins by it. */
  ts?: TimeMsInput;
}

export interface EdgeWriteOptions extends WriteOptions {
  position?: Int64Input;
  ts?: TimeMsInput;
}

export interface Edge {
  graph: string;
  source_id: IdString;
  destination_id: IdString;
  state: EdgeState;
  position: IdString;
  ts: Hlc;
  ts_ms: number;
}

/** An edge of a page: the other end is destination_id (forward pages) or source_id (backward pages). */
export interface PageEdge {
  source_id?: IdString;
  destination_id?: IdString;
  state: EdgeState;
  position: IdString;
  ts: Hlc;
  ts_ms: number;
}

export interface EdgePage {
  graph: string;
  node_id: IdString;
  direction: Direction;
  /** The page's states in code order, comma-separated. */
  state: string;
  edges: PageEdge[];
  /** The following (older) page, or null on the last. */
  next_cursor: string | null;
  /** The preceding (newer) page, or null on the first. */
  prev_cursor: string | null;
}

export interface PageOptions extends ReadOptions {
  direction?: Direction;
  /** One state or several (one page over all of them). Default normal. */
  state?: EdgeState | EdgeState[];
  /** Edges per page, 1 to limits.page_limit_max (default 100). */
  limit?: number;
  /** A next_cursor or prev_cursor of an earlier page, unchanged. */
  cursor?: string;
}

export interface CountOptions extends ReadOptions {
  direction?: Direction;
  state?: EdgeState;
}

export interface CountQuery {
  node_id: IdInput;
  direction?: Direction;
  state?: EdgeState;
}

export interface Containment {
  graph: string;
  source_id: IdString;
  destination_id: IdString;
  /** True for normal and negative edges. */
  contains: boolean;
  /** null if the edge was never written. */
  state: EdgeState | null;
}

export interface NodeDirectionRecord {
  state: NodeState;
  ts: Hlc | null;
  ts_ms: number | null;
  counts: Record<EdgeState, number>;
}

export interface NodeRecord {
  graph?: string;
  node_id: IdString;
  known: boolean;
  forward: NodeDirectionRecord;
  backward: NodeDirectionRecord;
}

export interface NodeActionOptions extends WriteOptions {
  direction?: NodeDirection;
  ts?: TimeMsInput;
}

/** A single-node operand of a set expression. */
export interface SetNodeQuery {
  node_id: IdInput;
  direction?: Direction;
  state?: EdgeState | EdgeState[] | string;
  op?: never;
}

/** Intersection, union or difference (the first operand minus the others) of operands. */
export interface SetOperation {
  op: 'intersect' | 'union' | 'difference';
  queries: SetExpr[];
}

export type SetExpr = SetNodeQuery | SetOperation;

export interface SetOptions extends ReadOptions {
  order?: 'asc' | 'desc';
  limit?: number;
  cursor?: string;
}

export interface SetPage {
  graph: string;
  op: SetOperation['op'];
  order: 'asc' | 'desc';
  ids: IdString[];
  next_cursor: string | null;
  prev_cursor: string | null;
  rows_read: number;
}

export declare const sets: {
  readonly intersect: (...queries: SetExpr[]) => SetOperation;
  readonly union: (...queries: SetExpr[]) => SetOperation;
  readonly difference: (first: SetExpr, ...rest: SetExpr[]) => SetOperation;
  readonly node: (nodeId: IdInput, options?: { direction?: Direction; state?: EdgeState | EdgeState[] }) => SetNodeQuery;
};

export type EdgeKey = readonly [IdInput, IdInput] | { source_id: IdInput; destination_id: IdInput };

export class Graph {
  constructor(client: CairnClient, name: string);
  readonly client: CairnClient;
  readonly name: string;

  /** One edge, or 1 to limits.batch_ops_max edges in one request. */
  write(edges: EdgeWrite | readonly EdgeWrite[], options?: WriteOptions): Promise<WriteAck>;
  add(source: IdInput, destination: IdInput, options?: EdgeWriteOptions): Promise<WriteAck>;
  remove(source: IdInput, destination: IdInput, options?: Omit<EdgeWriteOptions, 'position'>): Promise<WriteAck>;
  archive(source: IdInput, destination: IdInput, options?: Omit<EdgeWriteOptions, 'position'>): Promise<WriteAck>;
  negate(source: IdInput, destination: IdInput, options?: Omit<EdgeWriteOptions, 'position'>): Promise<WriteAck>;
  unarchive(source: IdInput, destination: IdInput, options?: Omit<EdgeWriteOptions, 'position'>): Promise<WriteAck>;

  /** The edge in whatever state it is, or null if it was never written. */
  get(source: IdInput, destination: IdInput, options?: ReadOptions): Promise<Edge | null>;
  getMany(keys: readonly EdgeKey[], options?: ReadOptions): Promise<(Edge | null)[]>;
  contains(source: IdInput, destination: IdInput, options?: ReadOptions): Promise<Containment>;

  page(node: IdInput, options?: PageOptions): Promise<EdgePage>;
  pages(node: IdInput, options?: PageOptions): AsyncGenerator<EdgePage, void, undefined>;
  edges(node: IdInput, options?: PageOptions): AsyncGenerator<PageEdge, void, undefined>;
  among(node: IdInput, otherIds: readonly IdInput[], options?: PageOptions): Promise<EdgePage>;

  count(node: IdInput, options?: CountOptions): Promise<number>;
  counts(queries: readonly CountQuery[], options?: ReadOptions): Promise<number[]>;

  node(id: IdInput, options?: ReadOptions): Promise<NodeRecord>;
  nodes(ids: readonly IdInput[], options?: ReadOptions): Promise<NodeRecord[]>;
  nodeAction(id: IdInput, action: NodeAction, options?: NodeActionOptions): Promise<WriteAck>;
  removeNode(id: IdInput, options?: NodeActionOptions): Promise<WriteAck>;
  archiveNode(id: IdInput, options?: NodeActionOptions): Promise<WriteAck>;
  negateNode(id: IdInput, options?: NodeActionOptions): Promise<WriteAck>;
  restoreNode(id: IdInput, options?: NodeActionOptions): Promise<WriteAck>;

  set(expr: SetOperation, options?: SetOptions): Promise<SetPage>;
  setIds(expr: SetOperation, options?: SetOptions): AsyncGenerator<IdString, void, undefined>;
  setCount(expr: SetOperation, options?: ReadOptions): Promise<number>;
}

// ---------------------------------------------------------------------------------------------
// Entities

/** Index conditions: equality on a prefix of the index's properties, then optionally a range. */
export type IndexValue = string | number | bigint | boolean;
export type IndexRange = { gte?: IndexValue; gt?: IndexValue; lte?: IndexValue; lt?: IndexValue };
export type IndexWhere = Record<string, IndexValue | IndexRange>;

export interface IndexQueryOptions {
  limit?: number;
  cursor?: string;
  timeoutMs?: number;
}

export interface EntityWriteOptions extends WriteOptions {
  /** The write's own time (ms; at most an hour ahead): last writer wins by it. */
  ts?: TimeMsInput;
}

export interface Entity<B extends JsonObject = JsonObject> {
  kind?: string;
  /** 16 bytes as UUID text. */
  id: string;
  body: B;
  ts: Hlc;
  ts_ms: number;
}

export interface EntityPage<B extends JsonObject = JsonObject> {
  kind: string;
  index: string;
  entities: Entity<B>[];
  next_cursor: string | null;
  index_rows_read: number;
  stale_rows_skipped: number;
  /** How many shards the query read. */
  shards_read: number;
}

export class Entities<B extends JsonObject = JsonObject> {
  constructor(client: CairnClient, kind: string);
  readonly kind: string;
  /** A full replace of the entity's body. `id`: 32 hex digits or UUID text. */
  put(id: string, body: B, options?: EntityWriteOptions): Promise<WriteAck>;
  /** A tombstone. */
  delete(id: string, options?: EntityWriteOptions): Promise<WriteAck>;
  /** The entity, or null when it is missing or deleted. */
  get(id: string, options?: ReadOptions): Promise<Entity<B> | null>;
  by(index: string, where: IndexWhere, options?: IndexQueryOptions): Promise<EntityPage<B>>;
  all(index: string, where: IndexWhere, options?: IndexQueryOptions): AsyncGenerator<Entity<B>, void, undefined>;
}

// ---------------------------------------------------------------------------------------------
// Cells

export interface CellWrite<B extends JsonObject = JsonObject> {
  /** 16 bytes: 32 hex digits or UUID text. */
  row_key: string;
  /** 1 to 64 characters of A-Z a-z 0-9 _ . - */
  column: string;
  ref_key: Int64Input;
  body: B;
}

export interface Cell<B extends JsonObject = JsonObject> {
  table: string;
  row_key: string;
  column: string;
  ref_key: Int64;
  body: B;
  ts: Hlc;
  ts_ms: number;
  added_id: Int64;
}

export interface CellPageOptions extends ReadOptions {
  limit?: number;
  cursor?: string;
}

export class Cells<B extends JsonObject = JsonObject> {
  constructor(client: CairnClient, table: string);
  readonly table: string;
  /** One cell or several; writing a cell again with another body is 409 cell-exists. */
  write(cells: CellWrite<B> | readonly CellWrite<B>[], options?: WriteOptions): Promise<WriteAck>;
  latest(rowKey: string, column: string, options?: ReadOptions): Promise<Cell<B> | null>;
  get(rowKey: string, column: string, refKey: Int64Input, options?: ReadOptions): Promise<Cell<B> | null>;
  row(rowKey: string, options?: CellPageOptions): Promise<{ columns: Cell<B>[]; next_cursor: string | null }>;
  versions(rowKey: string, column: string, options?: CellPageOptions): Promise<{ versions: Cell<B>[]; next_cursor: string | null }>;
  allVersions(rowKey: string, column: string, options?: CellPageOptions): AsyncGenerator<Cell<B>, void, undefined>;
  by(index: string, where: IndexWhere, options?: IndexQueryOptions): Promise<{
    table: string; column: string; index: string; cells: Cell<B>[]; next_cursor: string | null;
    index_rows_read: number; stale_rows_skipped: number;
  }>;
}

// ---------------------------------------------------------------------------------------------
// Counters

/** A metric's dimensions: integers (number up to 2^53 - 1, or bigint) and strings. */
export type Dimensions = Record<string, number | bigint | string>;

export interface Increment<D extends Dimensions = Dimensions> {
  /** Every dimension of the metric. */
  dimensions: D;
  /** Unix ms, a Date, or RFC 3339 UTC text; default now. */
  time?: TimeMsInput | string;
  /** Default 1. */
  delta?: Int64Input;
}

/** A UTC instant: a Date, RFC 3339 text or a day (`2026-11-23`). */
export type TimeInput = Date | string;

export interface CounterRange<D extends Dimensions = Dimensions> extends ReadOptions {
  /** The start of a UTC hour or day (inclusive). */
  from: TimeInput;
  /** The start of a UTC hour or day (exclusive). */
  to: TimeInput;
  granularity?: 'hour' | 'day';
  /** Equality filters on dimensions. */
  where?: Partial<D>;
}

export interface CounterTotal {
  metric: string;
  table: string;
  granularity: 'hour' | 'day';
  from: string;
  to: string;
  filters: Record<string, Int64 | string>;
  total: Int64;
}

export interface CounterSeries extends CounterTotal {
  points: { time: string; time_ms: number; count: Int64 }[];
}

export interface CounterTop extends CounterTotal {
  by: string;
  compare_from?: string;
  compare_to?: string;
  rows: { value: Int64 | string; count: Int64; previous_count: Int64; change_percent: number | null }[];
}

/** A declared metric, as GET /v1/counters lists it. */
export interface CounterMetricInfo {
  name: string;
  shard_on: string;
  dimensions: ({ name: string; type: 'int' } | { name: string; type: 'string'; length: number })[];
  tables: { name: string; granularity: 'hour' | 'day'; key: string[] }[];
}

export class Counter<D extends Dimensions = Dimensions> {
  constructor(client: CairnClient, metric: string);
  readonly metric: string;
  /** Each increment is counted exactly once, however often it is resent. */
  add(increments: Increment<D> | readonly Increment<D>[], options?: WriteOptions): Promise<WriteAck>;
  total(range: CounterRange<D>): Promise<CounterTotal>;
  series(range: CounterRange<D>): Promise<CounterSeries>;
  top(range: CounterRange<D> & { by: keyof D & string; n?: number; compareFrom?: TimeInput; compareTo?: TimeInput }): Promise<CounterTop>;
}

// ---------------------------------------------------------------------------------------------
// Indexes

export type IndexProperty =
  | { name: string; type: 'id' | 'int' | 'bool' }
  | { name: string; type: 'string'; length: number };

export type IndexDefinition =
  | { name: string; kind: string; properties: IndexProperty[]; shard_on?: string; table?: never; column?: never }
  | { name: string; table: string; column: string; properties: IndexProperty[]; shard_on?: string; kind?: never };

export class Indexes {
  constructor(client: CairnClient);
  create(definition: IndexDefinition, options?: { timeoutMs?: number }): Promise<IndexDefinition>;
  list(options?: { timeoutMs?: number }): Promise<{ indexes: IndexDefinition[] }>;
  drop(name: string, options?: { timeoutMs?: number }): Promise<{ dropped: string }>;
  cleanStatus(name: string, options?: { timeoutMs?: number }): Promise<Record<string, unknown>>;
  clean(name: string, options?: { rate?: number; timeoutMs?: number }): Promise<Record<string, unknown>>;
}

// ---------------------------------------------------------------------------------------------
// The change feed

export type FeedModel = 'edge' | 'node' | 'entity' | 'cell' | 'counter' | 'index';
/** A seq of one gateway's journal: a number, a bigint or decimal text. */
export type SeqInput = number | bigint | string;

export interface FeedFilters {
  /** Only ops of this model. */
  model?: FeedModel;
  /** Only ops of this graph, entity kind, cell table, counter metric or index. */
  name?: string;
  /** Only ops whose key starts with it: an edge's source_id, a node's node_id (decimal), an entity's id, a cell's row_key (UUID text). */
  keyPrefix?: string;
  /** Ops per page, 1 to 1000 (default 100). */
  limit?: number;
}

export interface FeedOptions extends FeedFilters {
  /** The last seq the consumer has seen: a page's next_from (default 0). */
  from?: SeqInput;
  /** Long poll: when nothing after `from` is applied yet, wait up to this long (at most limits.applied_wait_max_ms). */
  waitMs?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface SubscribeOptions extends FeedFilters {
  /** The last seq the consumer has seen: the next_from of the last page it processed (default 0). */
  from?: SeqInput;
  /** Yield pages without ops too (default false: skipped; they only move next_from). */
  emptyPages?: boolean;
  /** Pages received and not yet taken, at most (default 16): then it pauses (UNSUBSCRIBE) until half are taken. */
  bufferPages?: number;
  /** Over HTTP: the long poll's wait_ms (default 10000; at most cairnd's limits.applied_wait_max_ms). */
  pollWaitMs?: number;
}

/** An op as the feed shows it: the fields of its model's write, `ts` in Unix ms. Ids are numbers (bigints above 2^53). */
export type FeedOpBody =
  | { model: 'edge'; graph: string; source_id: Int64; destination_id: Int64; state: EdgeState; position: Int64; keep_position: boolean; ts: number }
  | { model: 'node'; graph: string; node_id: Int64; action: NodeAction; direction: NodeDirection; ts: number }
  | { model: 'entity'; kind: string; id: string; deleted: boolean; body?: JsonObject; ts: number }
  | { model: 'cell'; table: string; row_key: string; column: string; ref_key: Int64; body: JsonObject; ts: number }
  | { model: 'counter'; metric: string; dimensions: Record<string, Int64 | string>; time: number; delta: Int64; ts: number }
  | { model: 'index'; name: string; dropped: boolean; ts: number; [field: string]: unknown };

export interface FeedOp {
  /** Its seq in the gateway's journal. */
  seq: number;
  /** Unique per write (a write's acknowledgement has the same): deduplicate by it. */
  op_id: string;
  /** Its HLC timestamp (the acknowledgement's ts). */
  hlc: Hlc;
  op: FeedOpBody;
}

export interface FeedPage {
  /** In seq order. */
  ops: FeedOp[];
  /** Where the next page starts: store it once the page is processed, and resume `from` it. */
  next_from: number;
  /** The greatest seq every shard has applied. */
  applied_through: number;
  /** The gateway's last journaled seq. */
  last_seq: number;
  /** The gateway's node id: seqs are per gateway. */
  node_id: number;
}

/**
 * The pages of a subscription (`for await (const page of cairn.subscribe({ from }))`), in seq order,
 * each op once: after a reconnect, a gateway's stop (503) or a pause it subscribes again from the
 * next_from of the last page it received. `break` (return()) sends UNSUBSCRIBE and waits for cairnd's
 * last frame. It ends with an error on a 410 (FeedRangeGoneError), a refused SUBSCRIBE (400) or pages
 * from another gateway (`feed-gateway-changed`); quietly when the client is closed.
 */
export class FeedSubscription implements AsyncIterator<FeedPage, undefined> {
  /** The node id of the gateway whose feed this is (null before the first page). */
  readonly nodeId: number | null;
  next(): Promise<IteratorResult<FeedPage, undefined>>;
  return(value?: undefined): Promise<IteratorResult<FeedPage, undefined>>;
  throw(error?: unknown): Promise<IteratorResult<FeedPage, undefined>>;
  [Symbol.asyncIterator](): FeedSubscription;
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** The largest node id of a gateway (1023). */
export declare const NODE_ID_MAX: 1023;
/**
 * The parts of an `after` token: "<node id>:<seq>" -> { node, seq }; a bare seq -> { node: null, seq }.
 * Throws a TypeError for anything else (node id above 1023, a negative or non-integer seq, other text).
 */
export function parseAfter(token: string): { readonly node: number | null; readonly seq: bigint };
/** An id as canonical decimal text; throws RangeError for numbers above 2^53 - 1 (pass a bigint or string). */
export function idText(id: IdInput, what?: string): string;
/** JSON.parse, except that integers outside ±(2^53 - 1) become bigints. */
export function parseJson(text: string): unknown;
/** JSON.stringify, except that a bigint is written as a JSON number with all its digits. */
export function stringifyJson(value: unknown): string;
