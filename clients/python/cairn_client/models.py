"""Typed answers and request items of cairn's four data models.

Answers are frozen dataclasses built from cairnd's JSON: ids and positions are Python ints (64-bit,
exact), ``ts`` values (64-bit hybrid-logical-clock timestamps, which cairnd sends as decimal strings)
are parsed to ints, ``ts_ms`` are Unix milliseconds. Each answer keeps cairnd's JSON in ``raw``
(left out of comparisons), so members added later are not lost.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
import datetime as _dt
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

STATES = ("normal", "removed", "archived", "negative")
DIRECTIONS = ("forward", "backward")


def _ts(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _raw() -> Any:
    return field(default=None, repr=False, compare=False)


def time_text(t: Any) -> str:
    """A time for cairnd: an int is Unix milliseconds, an aware datetime becomes RFC 3339 UTC text, a date
    its UTC midnight, and a str is sent as it is. A naive datetime is refused (its zone is unknown)."""
    if isinstance(t, bool):
        raise TypeError("a time must be Unix milliseconds, a datetime, a date or a str")
    if isinstance(t, int):
        return str(t)
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError("a naive datetime has no time zone: give an aware one (e.g. tzinfo=timezone.utc)")
        u = t.astimezone(_dt.timezone.utc)
        return u.strftime("%Y-%m-%dT%H:%M:%S") + f".{u.microsecond // 1000:03d}Z"
    if isinstance(t, _dt.date):
        return t.strftime("%Y-%m-%dT00:00:00Z")
    if isinstance(t, str):
        return t
    raise TypeError(f"a time must be Unix milliseconds, a datetime, a date or a str, not {t!r}")


# --- read-your-writes -------------------------------------------------------------------------


NODE_ID_MAX = 1023  # a gateway's node id: 0 to 1023
SEQ_MAX = (1 << 64) - 1  # journal seqs are unsigned 64-bit
_TOKEN = re.compile(r"(?:([0-9]{1,4}):)?([0-9]{1,20})")


@dataclass(frozen=True)
class Token:
    """A read-your-writes token: the journal ``seq`` of a write and the ``node`` id of the gateway that
    acknowledged it (``None``: unknown, a bare seq, which names a write of the gateway that reads).

    Pass it (or the Ack itself) as ``after=`` to a read, and the read waits until the shards it needs
    have applied that write and every earlier write of the same gateway. With a node id it works on
    every gateway of the same shards (it is sent as ``"<node>:<seq>"``, the ack's ``after``); a bare
    seq only on the gateway that issued it.

    Tokens of one node are ordered by seq. Tokens of different nodes are not (each gateway numbers
    its own journal): comparing them, or ``Token.latest`` over them, raises ValueError.
    """

    seq: int
    node: Optional[int] = None

    def __post_init__(self) -> None:
        if isinstance(self.seq, bool) or not isinstance(self.seq, int):
            raise TypeError(f"a token's seq must be an int, not {self.seq!r}")
        if not 0 <= self.seq <= SEQ_MAX:
            raise ValueError(f"a token's seq must be between 0 and 2^64-1, not {self.seq}")
        if self.node is not None:
            if isinstance(self.node, bool) or not isinstance(self.node, int):
                raise TypeError(f"a token's node must be an int or None, not {self.node!r}")
            if not 0 <= self.node <= NODE_ID_MAX:
                raise ValueError(f"a token's node must be between 0 and {NODE_ID_MAX}, not {self.node}")

    @classmethod
    def parse(cls, text: str) -> "Token":
        """The token of ``"<node>:<seq>"`` (an ack's ``after``) or of a bare ``"<seq>"``; ValueError for
        anything else (a node id above 1023, a negative or non-integer seq, other text)."""
        if not isinstance(text, str):
            raise TypeError(f"Token.parse takes a str, not {text!r}")
        m = _TOKEN.fullmatch(text)
        if m is None:
            raise ValueError(f'a token is "<node id>:<seq>" or a seq, not {text!r}')
        node, seq = m.group(1), int(m.group(2))
        if (node is not None and int(node) > NODE_ID_MAX) or seq > SEQ_MAX:
            raise ValueError(f'a token is "<node id>:<seq>" (node id 0 to {NODE_ID_MAX}, seq below 2^64), '
                             f"not {text!r}")
        return cls(seq, None if node is None else int(node))

    @property
    def after(self) -> str:
        """What a read sends as ``?after=``: ``"<node>:<seq>"``, or the bare seq when the node is unknown."""
        return str(self.seq) if self.node is None else f"{self.node}:{self.seq}"

    def _seq_against(self, other: Any) -> Optional[int]:
        if not isinstance(other, Token):
            return None
        if other.node != self.node:
            raise ValueError(f"tokens of different gateways are not ordered: {self.after} and {other.after} "
                             "(a read can name one; read after each to see both)")
        return other.seq

    def __lt__(self, other: Any) -> bool:
        o = self._seq_against(other)
        return NotImplemented if o is None else self.seq < o

    def __le__(self, other: Any) -> bool:
        o = self._seq_against(other)
        return NotImplemented if o is None else self.seq <= o

    def __gt__(self, other: Any) -> bool:
        o = self._seq_against(other)
        return NotImplemented if o is None else self.seq > o

    def __ge__(self, other: Any) -> bool:
        o = self._seq_against(other)
        return NotImplemented if o is None else self.seq >= o

    @staticmethod
    def latest(*tokens: Optional["Token"]) -> Optional["Token"]:
        """The latest of tokens of one gateway (``None`` members are left out; ``None`` if none is
        left): a read after it sees all their writes. ValueError for tokens of different nodes."""
        present = [t for t in tokens if t is not None]
        return max(present) if present else None

    @staticmethod
    def latest_per_node(*tokens: Optional["Token"]) -> Dict[Optional[int], "Token"]:
        """The latest token of each node among tokens (``None`` members left out), by node id."""
        out: Dict[Optional[int], Token] = {}
        for t in tokens:
            if t is not None and (t.node not in out or t.seq > out[t.node].seq):
                out[t.node] = t
        return out


@dataclass(frozen=True)
class Ack:
    """The acknowledgement of a write: durable in cairnd's journal, applied to the shards shortly after.

    ``seq`` is the journal sequence of the (last) op, ``first_seq`` that of the first (equal for one
    op), ``count`` the number of ops, ``ts`` their timestamps, ``op_id`` the op id of a single op
    (``None`` for a batch). ``deduplicated`` is true when cairnd answered an earlier attempt's
    acknowledgement for the same ``idempotency_key`` (the write was not applied again). ``after`` is
    ``"<node id>:<seq>"`` of the (last) op, which a read on any gateway of the same shards takes
    (``None`` from a gateway older than it; ``token`` then falls back to the bare seq).
    """

    seq: int
    first_seq: int
    count: int
    ts: Tuple[int, ...]
    op_id: Optional[int]
    deduplicated: bool
    idempotency_key: Optional[str] = None
    after: Optional[str] = None
    raw: Any = _raw()

    @property
    def token(self) -> Token:
        """``Token(seq, node)`` of ``after`` (ValueError if cairnd sent a malformed one), else ``Token(seq)``."""
        if self.after is None:
            return Token(self.seq)
        t = Token.parse(self.after)
        if t.node is None:
            raise ValueError(f'an acknowledgement\'s after is "<node id>:<seq>", not {self.after!r}')
        return t

    @classmethod
    def from_json(cls, j: Mapping[str, Any], idempotency_key: Optional[str] = None) -> "Ack":
        ts = j.get("ts")
        ts_list = tuple(int(t) for t in ts) if isinstance(ts, list) else ((int(ts),) if ts is not None else ())
        seq = int(j["seq"])
        after = j.get("after")
        return cls(seq=seq, first_seq=int(j.get("first_seq", seq)), count=int(j.get("count", 1)), ts=ts_list,
                   op_id=_ts(j.get("op_id")), deduplicated=bool(j.get("deduplicated", False)),
                   idempotency_key=idempotency_key, after=after if isinstance(after, str) else None, raw=dict(j))


After = Union[Token, Ack, int, str, None]


def after_param(after: After) -> Optional[str]:
    """The ``?after=`` value an ``after=`` argument names: a Token's or an Ack's token (``"<node>:<seq>"``,
    or the bare seq when its node is unknown), an int seq, or a ``"<node>:<seq>"`` str (checked: ValueError
    when malformed). TypeError for any other type, or a negative int."""
    if after is None:
        return None
    if isinstance(after, Token):
        return after.after
    if isinstance(after, Ack):
        return after.token.after
    if isinstance(after, str):
        return Token.parse(after).after
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise TypeError(f'after must be a Token, an Ack, a non-negative int seq or a "<node id>:<seq>" str, '
                        f"not {after!r}")
    return str(after)


# --- edges ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EdgeWrite:
    """One edge of a write (``POST /v1/graphs/{graph}/edges``). ``None`` members take cairnd's defaults."""

    source_id: int
    destination_id: int
    state: str = "normal"
    position: Optional[int] = None
    keep_position: Optional[bool] = None
    ts: Optional[int] = None  # Unix milliseconds

    def to_json(self) -> Dict[str, Any]:
        j: Dict[str, Any] = {"source_id": self.source_id, "destination_id": self.destination_id}
        if self.state != "normal":
            j["state"] = self.state
        for k in ("position", "keep_position", "ts"):
            v = getattr(self, k)
            if v is not None:
                j[k] = v
        return j


@dataclass(frozen=True)
class Edge:
    """An edge ``source_id -> destination_id`` of a graph, in its (effective) state."""

    graph: str
    source_id: int
    destination_id: int
    state: str
    position: int
    ts: int
    ts_ms: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any], graph: Optional[str] = None, node_id: Optional[int] = None,
                  direction: str = "forward") -> "Edge":
        src = j.get("source_id")
        dst = j.get("destination_id")
        if node_id is not None:  # a page element names only the other end
            if direction == "forward":
                src = node_id
            else:
                dst = node_id
        return cls(graph=str(j.get("graph", graph)), source_id=int(src), destination_id=int(dst),
                   state=str(j["state"]), position=int(j["position"]), ts=int(j["ts"]), ts_ms=int(j["ts_ms"]),
                   raw=dict(j))


@dataclass(frozen=True)
class EdgePage:
    """A page of a node's edges, newest first; ``next_cursor`` continues to older edges."""

    graph: str
    node_id: int
    direction: str
    state: str
    edges: List[Edge]
    next_cursor: Optional[str]
    prev_cursor: Optional[str]
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "EdgePage":
        node_id = int(j["node_id"])
        direction = str(j["direction"])
        graph = str(j["graph"])
        edges = [Edge.from_json(e, graph, node_id, direction) for e in j["edges"]]
        return cls(graph=graph, node_id=node_id, direction=direction, state=str(j["state"]), edges=edges,
                   next_cursor=j.get("next_cursor"), prev_cursor=j.get("prev_cursor"), raw=dict(j))


@dataclass(frozen=True)
class NodeDirection:
    """A node's state in one direction, the ts of the node action that set it, its edge counts by state."""

    state: str
    ts: Optional[int]
    ts_ms: Optional[int]
    counts: Dict[str, int]

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "NodeDirection":
        return cls(state=str(j["state"]), ts=_ts(j.get("ts")), ts_ms=_ts(j.get("ts_ms")),
                   counts={str(k): int(v) for k, v in j["counts"].items()})


@dataclass(frozen=True)
class NodeRecord:
    """What a node's shard knows of it: ``known``, and its ``forward`` and ``backward`` directions."""

    graph: str
    node_id: int
    known: bool
    forward: NodeDirection
    backward: NodeDirection
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any], graph: Optional[str] = None) -> "NodeRecord":
        return cls(graph=str(j.get("graph", graph)), node_id=int(j["node_id"]), known=bool(j["known"]),
                   forward=NodeDirection.from_json(j["forward"]), backward=NodeDirection.from_json(j["backward"]),
                   raw=dict(j))


def _state_text(state: Union[str, Sequence[str]]) -> str:
    return state if isinstance(state, str) else ",".join(state)


@dataclass(frozen=True)
class Query:
    """A single-node query: the node's edges in one direction and one state (several for sets)."""

    node_id: int
    direction: str = "forward"
    state: Union[str, Tuple[str, ...]] = "normal"

    def to_json(self) -> Dict[str, Any]:
        return {"node_id": self.node_id, "direction": self.direction, "state": _state_text(self.state)}


@dataclass(frozen=True)
class SetOp:
    """An intersection, union or difference of queries (``Query``, nested ``SetOp`` or plain dicts)."""

    op: str
    queries: Tuple[Any, ...]

    def to_json(self) -> Dict[str, Any]:
        return {"op": self.op, "queries": [q.to_json() if hasattr(q, "to_json") else dict(q) for q in self.queries]}


def intersect(*queries: Any) -> SetOp:
    """The node ids in every operand."""
    return SetOp("intersect", tuple(queries))


def union(*queries: Any) -> SetOp:
    """The node ids in any operand."""
    return SetOp("union", tuple(queries))


def difference(first: Any, *others: Any) -> SetOp:
    """The node ids of the first operand that are in none of the others."""
    return SetOp("difference", (first,) + tuple(others))


@dataclass(frozen=True)
class SetPage:
    """A page of the node ids of a set expression, in ``order``; cursors continue it."""

    graph: str
    op: str
    order: str
    ids: List[int]
    next_cursor: Optional[str]
    prev_cursor: Optional[str]
    rows_read: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "SetPage":
        return cls(graph=str(j["graph"]), op=str(j["op"]), order=str(j["order"]), ids=[int(i) for i in j["ids"]],
                   next_cursor=j.get("next_cursor"), prev_cursor=j.get("prev_cursor"),
                   rows_read=int(j.get("rows_read", 0)), raw=dict(j))


# --- entities ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entity:
    """An entity: its kind, its 16-byte id (lowercase UUID text), its JSON body and the ts that wrote it."""

    kind: str
    id: str
    body: Dict[str, Any]
    ts: int
    ts_ms: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any], kind: Optional[str] = None) -> "Entity":
        return cls(kind=str(j.get("kind", kind)), id=str(j["id"]), body=j["body"], ts=int(j["ts"]),
                   ts_ms=int(j["ts_ms"]), raw=dict(j))


@dataclass(frozen=True)
class EntityPage:
    """A page of an index query's entities, in index key order; ``next_cursor`` continues it."""

    kind: str
    index: str
    entities: List[Entity]
    next_cursor: Optional[str]
    index_rows_read: int
    stale_rows_skipped: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "EntityPage":
        kind = str(j["kind"])
        return cls(kind=kind, index=str(j["index"]), entities=[Entity.from_json(e, kind) for e in j["entities"]],
                   next_cursor=j.get("next_cursor"), index_rows_read=int(j.get("index_rows_read", 0)),
                   stale_rows_skipped=int(j.get("stale_rows_skipped", 0)), raw=dict(j))


# --- cells ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellWrite:
    """One immutable cell to write: (row_key, column, ref_key) and its JSON object body."""

    row_key: str
    column: str
    ref_key: int
    body: Mapping[str, Any]

    def to_json(self) -> Dict[str, Any]:
        return {"row_key": str(self.row_key), "column": self.column, "ref_key": self.ref_key, "body": dict(self.body)}


@dataclass(frozen=True)
class Cell:
    """A cell as stored: its key, its body and the ts of the write that won (the first writer)."""

    table: str
    row_key: str
    column: str
    ref_key: int
    body: Dict[str, Any]
    ts: int
    ts_ms: int
    added_id: Optional[int] = None
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any], table: Optional[str] = None) -> "Cell":
        return cls(table=str(j.get("table", table)), row_key=str(j["row_key"]), column=str(j["column"]),
                   ref_key=int(j["ref_key"]), body=j["body"], ts=int(j["ts"]), ts_ms=int(j["ts_ms"]),
                   added_id=_ts(j.get("added_id")), raw=dict(j))


@dataclass(frozen=True)
class CellPage:
    """A page of cells (a column's versions, a row's columns, an index query's rows)."""

    cells: List[Cell]
    next_cursor: Optional[str]
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any], member: str, table: Optional[str] = None) -> "CellPage":
        return cls(cells=[Cell.from_json(c, j.get("table", table)) for c in j[member]],
                   next_cursor=j.get("next_cursor"), raw=dict(j))


# --- counters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Increment:
    """One counter increment: every dimension of the metric, a time (default now) and a delta."""

    dimensions: Mapping[str, Any]
    delta: int = 1
    time: Any = None  # Unix ms, an aware datetime, or RFC 3339 UTC text

    def to_json(self) -> Dict[str, Any]:
        j: Dict[str, Any] = {"dimensions": dict(self.dimensions), "delta": self.delta}
        if self.time is not None:
            t = time_text(self.time)
            j["time"] = int(t) if t.isdigit() else t
        return j


@dataclass(frozen=True)
class CounterTotal:
    """The sum of a metric's counts over ``[start, end)`` with the given dimension filters."""

    metric: str
    table: str
    granularity: str
    start: str
    end: str
    filters: Dict[str, Any]
    total: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "CounterTotal":
        return cls(metric=str(j["metric"]), table=str(j["table"]), granularity=str(j["granularity"]),
                   start=str(j["from"]), end=str(j["to"]), filters=dict(j.get("filters", {})), total=int(j["total"]),
                   raw=dict(j))


@dataclass(frozen=True)
class SeriesPoint:
    time: str
    time_ms: int
    count: int


@dataclass(frozen=True)
class Series:
    """Every bucket of ``[start, end)`` at the granularity, zeros included, and their total."""

    metric: str
    table: str
    granularity: str
    start: str
    end: str
    points: List[SeriesPoint]
    total: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Series":
        points = [SeriesPoint(str(p["time"]), int(p["time_ms"]), int(p["count"])) for p in j["points"]]
        return cls(metric=str(j["metric"]), table=str(j["table"]), granularity=str(j["granularity"]),
                   start=str(j["from"]), end=str(j["to"]), points=points, total=int(j["total"]), raw=dict(j))


@dataclass(frozen=True)
class TopRow:
    value: Any
    count: int
    previous_count: Optional[int]
    change_percent: Optional[float]


@dataclass(frozen=True)
class Top:
    """The top-N values of dimension ``by`` over ``[start, end)``, with an earlier period's counts."""

    metric: str
    table: str
    by: str
    start: str
    end: str
    rows: List[TopRow]
    total: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Top":
        rows = [TopRow(r["value"], int(r["count"]), _ts(r.get("previous_count")), r.get("change_percent"))
                for r in j["rows"]]
        return cls(metric=str(j["metric"]), table=str(j["table"]), by=str(j["by"]), start=str(j["from"]),
                   end=str(j["to"]), rows=rows, total=int(j["total"]), raw=dict(j))


def as_json_item(item: Any, kind: type) -> Dict[str, Any]:
    """A request item given as its dataclass, a mapping, or (for edges) a ``(source, destination)`` pair."""
    if isinstance(item, kind):
        return item.to_json()
    if dataclasses.is_dataclass(item) and hasattr(item, "to_json"):
        return item.to_json()
    if isinstance(item, Mapping):
        return dict(item)
    if kind is EdgeWrite and isinstance(item, (tuple, list)) and len(item) == 2:
        return {"source_id": item[0], "destination_id": item[1]}
    raise TypeError(f"expected a {kind.__name__} or a mapping, not {item!r}")


def as_query(item: Any) -> Dict[str, Any]:
    """A count or set operand given as a Query, a SetOp, a mapping or a bare node id."""
    if hasattr(item, "to_json"):
        return item.to_json()
    if isinstance(item, Mapping):
        return dict(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return {"node_id": item}
    raise TypeError(f"expected a Query, a SetOp, a mapping or a node id, not {item!r}")


__all__ = [
    "Ack", "After", "Cell", "CellPage", "CellWrite", "CounterTotal", "Edge", "EdgePage", "EdgeWrite", "Entity",
    "EntityPage", "Increment", "NodeDirection", "NodeRecord", "Query", "Series", "SeriesPoint", "SetOp", "SetPage",
    "Token", "Top", "TopRow", "difference", "intersect", "union",
]


# --- the change feed ---------------------------------------------------------------------------


FEED_MODELS = ("edge", "node", "entity", "cell", "counter", "index")


@dataclass(frozen=True)
class FeedOp:
    """One op of the change feed: its ``seq`` in the gateway's journal, its ``op_id`` (unique per write:
    the ``op_id`` of the write's Ack; deduplicate by it), ``hlc`` (its timestamp: the Ack's ``ts``) and
    ``op``, cairnd's JSON of it: ``model``, the fields of that model's write, ``ts`` in Unix milliseconds."""

    seq: int
    op_id: int
    hlc: int
    op: Dict[str, Any]

    @property
    def model(self) -> str:
        """``edge``, ``node``, ``entity``, ``cell``, ``counter`` or ``index``."""
        return str(self.op.get("model"))

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "FeedOp":
        return cls(seq=int(j["seq"]), op_id=int(j["op_id"]), hlc=int(j["hlc"]), op=dict(j["op"]))


@dataclass(frozen=True)
class FeedPage:
    """A page of the change feed: ``ops`` in seq order; ``next_from``, where the next page starts (store
    it once the page is processed, and resume ``from_`` it); ``applied_through``, the greatest seq every
    shard has applied; ``last_seq``, the gateway's last journaled seq; ``node_id``, the gateway's (seqs
    are per gateway)."""

    ops: List[FeedOp]
    next_from: int
    applied_through: int
    last_seq: int
    node_id: int
    raw: Any = _raw()

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "FeedPage":
        return cls(ops=[FeedOp.from_json(o) for o in j["ops"]], next_from=int(j["next_from"]),
                   applied_through=int(j["applied_through"]), last_seq=int(j["last_seq"]),
                   node_id=int(j["node_id"]), raw=dict(j))


def feed_params(from_: int, limit: Optional[int], model: Optional[str], name: Optional[str],
                key_prefix: Optional[str]) -> Dict[str, Any]:
    """The query parameters of GET /v1/feed (and of a SUBSCRIBE). ``from_`` and ``model`` are checked
    here (TypeError, ValueError); cairnd checks the rest (a 400 naming the parameter)."""
    if isinstance(from_, bool) or not isinstance(from_, int):
        raise TypeError(f"from_ must be an int seq (the next_from of the last page processed), not {from_!r}")
    if not 0 <= from_ <= SEQ_MAX:
        raise ValueError(f"from_ must be a seq between 0 and 2^64-1, not {from_}")
    if model is not None and model not in FEED_MODELS:
        raise ValueError(f"model must be one of {', '.join(FEED_MODELS)}, not {model!r}")
    return {"from": from_, "limit": limit, "model": model, "name": name, "key_prefix": key_prefix}
