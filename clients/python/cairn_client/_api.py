"""The methods Client and AsyncClient share: each builds a Call (method, path, body, idempotency key,
how to read the answer) and hands it to the client's ``_call``, which sends it over HTTP (Client) or the
WebSocket (AsyncClient) and returns the parsed answer (AsyncClient: an awaitable of it).

Every write gets an idempotency key here, once, so that every attempt to send it (a keep-alive retry,
a resend after a reconnect, the HTTP fallback) carries the same key and cairnd applies it at most once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlencode

from .errors import problem_error
from .models import (
    Ack, After, Cell, CellPage, CellWrite, CounterTotal, Edge, EdgePage, EdgeWrite, Entity, EntityPage, FeedPage,
    Increment, NodeRecord, Series, SetPage, Token, Top, after_param, as_json_item, as_query, feed_params, time_text,
)

NODE_ACTIONS = ("remove", "archive", "negate", "restore", "unarchive")


def new_idempotency_key() -> str:
    """A fresh key for one write: 'py-' and 32 random hex digits (cairnd takes 1 to 200 bytes)."""
    return "py-" + uuid.uuid4().hex


def _identity(j: Any) -> Any:
    return j


@dataclass
class Call:
    """One request: what to send, and how to turn a 2xx answer into the method's result."""

    method: str
    path: str  # with its query string
    body: Any = None
    idempotency_key: Optional[str] = None
    # Safe to send again when the outcome of an attempt is unknown (a read, or a write with a key).
    resend_safe: bool = True
    parse: Callable[[Any], Any] = _identity
    # A 404 not-found (no such edge, entity or cell) is the answer None rather than an error.
    none_on_not_found: bool = False
    timeout: Optional[float] = None  # seconds; None: the client's
    write: bool = False  # a journaled write: its answer is an Ack whose seq the client remembers
    accept_status: Tuple[int, ...] = ()  # non-2xx statuses whose body is the result (readyz's 503)


def seg(v: Any) -> str:
    """One path segment, percent-encoded."""
    if isinstance(v, bool):
        raise TypeError(f"a path segment cannot be a bool: {v!r}")
    return quote(str(v), safe="")


def query(**params: Any) -> str:
    """A query string of the parameters that are not None ('' when none), bools as true/false."""
    items = []
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        items.append((k, str(v)))
    return ("?" + urlencode(items)) if items else ""


def _states(state: Union[str, Sequence[str]]) -> str:
    return state if isinstance(state, str) else ",".join(state)


def problem_of(status: int, body: Any) -> Dict[str, Any]:
    if isinstance(body, Mapping):
        return dict(body)
    return {"type": "about:blank", "title": "Error", "status": status, "detail": f"HTTP {status}: {body!r}"}


class Api:
    """The request methods of both clients (the AsyncClient's return awaitables).

    ``after=`` on a read takes a Token, an Ack, a ``"<node id>:<seq>"`` str (an ack's ``after``) or a
    bare int seq: the read waits until that write is applied where the read looks, with every earlier
    write of the same gateway (``timeout_ms`` bounds that wait on the server: past it the read fails
    with a 504 ``not-applied-yet`` ProblemError). An Ack, its Token and its ``after`` work on every
    gateway of the same shards; a bare seq names a write of the gateway that serves the read. With
    ``read_your_writes=True`` on the client, reads without ``after=`` use the client's ``last_token``.

    Writes take ``wait_applied=True`` (answer once applied everywhere; ``wait_timeout_ms`` bounds it) and
    ``idempotency_key`` (generated when not given). ``timeout=`` on any call overrides the client's
    per-request timeout, in seconds.
    """

    last_token: Optional[Token] = None
    # The latest token of each gateway (node id; None: acks without after) that acknowledged a write.
    last_tokens: Dict[Optional[int], Token]
    read_your_writes: bool = False

    # --- plumbing ---------------------------------------------------------------------------

    def _call(self, call: Call) -> Any:  # pragma: no cover - each client implements it
        raise NotImplementedError

    def _note_token(self, token: Token) -> None:
        """Keeps the latest token of each gateway; ``last_token`` becomes that of the gateway of this
        acknowledgement. Seqs of different gateways are never compared: they number different journals."""
        prev = self.last_tokens.get(token.node)
        if prev is None or token.seq > prev.seq:
            self.last_tokens[token.node] = token
        self.last_token = self.last_tokens[token.node]

    def _finish(self, call: Call, status: int, body: Any, retry_after: Optional[float]) -> Any:
        """The result of a call from its answer, or the ProblemError of a refusal."""
        if 200 <= status < 300 or status in call.accept_status:
            result = call.parse(body)
            if call.write and isinstance(result, Ack):
                try:
                    token = result.token
                except ValueError:  # a malformed after: the write succeeded all the same; keep its seq
                    token = Token(result.seq)
                self._note_token(token)
            return result
        problem = problem_of(status, body)
        if status == 404 and call.none_on_not_found and str(problem.get("type", "")).endswith("/not-found"):
            return None
        raise problem_error(status, problem, retry_after, call.method, call.path.split("?", 1)[0])

    def _write(self, method: str, path: str, body: Any, idempotency_key: Optional[str], wait_applied: bool,
               wait_timeout_ms: Optional[int], timeout: Optional[float], extra: Optional[Dict[str, Any]] = None) -> Any:
        key = idempotency_key if idempotency_key is not None else new_idempotency_key()
        params = dict(extra or {})
        if wait_applied:
            params["wait"] = "applied"
            params["timeout_ms"] = wait_timeout_ms
        return self._call(Call(method, path + query(**params), body, key, True,
                               lambda j: Ack.from_json(j, key), timeout=timeout, write=True))

    def _read(self, path: str, parse: Callable[[Any], Any], after: After = None, timeout_ms: Optional[int] = None,
              timeout: Optional[float] = None, method: str = "GET", body: Any = None, none_on_not_found: bool = False,
              **params: Any) -> Any:
        after_text = after_param(after)
        if after_text is None and self.read_your_writes and self.last_token is not None:
            after_text = self.last_token.after
        q = query(**params, after=after_text, timeout_ms=timeout_ms)
        return self._call(Call(method, path + q, body, None, True, parse, none_on_not_found, timeout))

    # --- edges ------------------------------------------------------------------------------

    def write_edges(self, graph: str, edges: Iterable[Union[EdgeWrite, Mapping[str, Any], Tuple[int, int]]], *,
                    wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                    idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """Writes 1 to 1,000 edges in one journaled batch -> Ack (``seq`` of the last, ``first_seq``)."""
        items = [as_json_item(e, EdgeWrite) for e in edges]
        body: Any = items[0] if len(items) == 1 else {"edges": items}
        return self._write("POST", f"/v1/graphs/{seg(graph)}/edges", body, idempotency_key, wait_applied,
                           wait_timeout_ms, timeout)

    def write_edge(self, graph: str, source_id: int, destination_id: int, state: str = "normal", *,
                   position: Optional[int] = None, keep_position: Optional[bool] = None, ts: Optional[int] = None,
                   wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                   idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """Writes one edge in ``state`` (normal, removed, archived, negative) -> Ack."""
        e = EdgeWrite(source_id, destination_id, state, position, keep_position, ts)
        return self._write("POST", f"/v1/graphs/{seg(graph)}/edges", e.to_json(), idempotency_key, wait_applied,
                           wait_timeout_ms, timeout)

    def add_edge(self, graph: str, source_id: int, destination_id: int, **kw: Any) -> Any:
        """Adds (or moves, with a new position) the edge ``source_id -> destination_id`` -> Ack."""
        return self.write_edge(graph, source_id, destination_id, "normal", **kw)

    def remove_edge(self, graph: str, source_id: int, destination_id: int, **kw: Any) -> Any:
        return self.write_edge(graph, source_id, destination_id, "removed", **kw)

    def archive_edge(self, graph: str, source_id: int, destination_id: int, **kw: Any) -> Any:
        return self.write_edge(graph, source_id, destination_id, "archived", **kw)

    def negate_edge(self, graph: str, source_id: int, destination_id: int, **kw: Any) -> Any:
        return self.write_edge(graph, source_id, destination_id, "negative", **kw)

    def node_action(self, graph: str, node_id: int, action: str, *, direction: Optional[str] = None,
                    ts: Optional[int] = None, wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                    idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """remove, archive, negate or restore every edge of a node (``direction``: forward, backward,
        both; default both) -> Ack."""
        body = {"ts": ts} if ts is not None else None
        return self._write("POST", f"/v1/graphs/{seg(graph)}/nodes/{seg(node_id)}/{seg(action)}", body,
                           idempotency_key, wait_applied, wait_timeout_ms, timeout, {"direction": direction})

    def remove_node(self, graph: str, node_id: int, **kw: Any) -> Any:
        return self.node_action(graph, node_id, "remove", **kw)

    def archive_node(self, graph: str, node_id: int, **kw: Any) -> Any:
        return self.node_action(graph, node_id, "archive", **kw)

    def negate_node(self, graph: str, node_id: int, **kw: Any) -> Any:
        return self.node_action(graph, node_id, "negate", **kw)

    def restore_node(self, graph: str, node_id: int, **kw: Any) -> Any:
        return self.node_action(graph, node_id, "restore", **kw)

    def get_edge(self, graph: str, source_id: int, destination_id: int, *, after: After = None,
                 timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """The edge in whatever state it is -> Edge, or None if it was never written."""
        return self._read(f"/v1/graphs/{seg(graph)}/edges/{seg(source_id)}/{seg(destination_id)}",
                          lambda j: Edge.from_json(j), after, timeout_ms, timeout, none_on_not_found=True)

    def get_edges(self, graph: str, pairs: Iterable[Tuple[int, int]], *, after: After = None,
                  timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """Many edges by key, in request order -> list of Edge or None (never written)."""
        body = {"edges": [{"source_id": s, "destination_id": d} for s, d in pairs]}
        return self._read(f"/v1/graphs/{seg(graph)}/edges/get",
                          lambda j: [None if e is None else Edge.from_json(e, graph) for e in j["edges"]],
                          after, timeout_ms, timeout, method="POST", body=body)

    def contains(self, graph: str, source_id: int, destination_id: int, *, after: After = None,
                 timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """True when the edge exists in state normal or negative (FlockDB's contains) -> bool."""
        return self._read(f"/v1/graphs/{seg(graph)}/edges/{seg(source_id)}/{seg(destination_id)}/contains",
                          lambda j: bool(j["contains"]), after, timeout_ms, timeout)

    def node(self, graph: str, node_id: int, *, after: After = None, timeout_ms: Optional[int] = None,
             timeout: Optional[float] = None) -> Any:
        """A node's record -> NodeRecord."""
        return self._read(f"/v1/graphs/{seg(graph)}/nodes/{seg(node_id)}", lambda j: NodeRecord.from_json(j),
                          after, timeout_ms, timeout)

    def nodes(self, graph: str, node_ids: Iterable[int], *, after: After = None, timeout_ms: Optional[int] = None,
              timeout: Optional[float] = None) -> Any:
        """Many node records, in request order -> list of NodeRecord."""
        return self._read(f"/v1/graphs/{seg(graph)}/nodes/get",
                          lambda j: [NodeRecord.from_json(n, graph) for n in j["nodes"]], after, timeout_ms, timeout,
                          method="POST", body={"node_ids": list(node_ids)})

    def edges_page(self, graph: str, node_id: int, *, direction: str = "forward",
                   state: Union[str, Sequence[str]] = "normal", limit: Optional[int] = None,
                   cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                   timeout: Optional[float] = None) -> Any:
        """One page of a node's edges, newest first -> EdgePage (``next_cursor`` for the next page)."""
        return self._read(f"/v1/graphs/{seg(graph)}/nodes/{seg(node_id)}/edges", EdgePage.from_json, after,
                          timeout_ms, timeout, direction=direction, state=_states(state), limit=limit, cursor=cursor)

    def edges_among(self, graph: str, node_id: int, other_ids: Iterable[int], *, direction: str = "forward",
                    state: Union[str, Sequence[str]] = "normal", limit: Optional[int] = None,
                    cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                    timeout: Optional[float] = None) -> Any:
        """A page of the node's edges whose other end is one of ``other_ids`` -> EdgePage."""
        return self._read(f"/v1/graphs/{seg(graph)}/nodes/{seg(node_id)}/edges/among", EdgePage.from_json, after,
                          timeout_ms, timeout, method="POST", body={"other_ids": list(other_ids)},
                          direction=direction, state=_states(state), limit=limit, cursor=cursor)

    def count(self, graph: str, node_id: int, *, direction: str = "forward", state: str = "normal",
              after: After = None, timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """The number of a node's edges in one direction and state -> int."""
        return self._read(f"/v1/graphs/{seg(graph)}/nodes/{seg(node_id)}/count", lambda j: int(j["count"]), after,
                          timeout_ms, timeout, direction=direction, state=state)

    def counts(self, graph: str, queries: Iterable[Any], *, after: After = None, timeout_ms: Optional[int] = None,
               timeout: Optional[float] = None) -> Any:
        """Many counts in one request (each a Query, a mapping or a node id), in order -> list of int."""
        body = {"queries": [as_query(q) for q in queries]}
        return self._read(f"/v1/graphs/{seg(graph)}/counts", lambda j: [int(c) for c in j["counts"]], after,
                          timeout_ms, timeout, method="POST", body=body)

    def set_page(self, graph: str, expr: Any, *, order: str = "asc", limit: Optional[int] = None,
                 cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                 timeout: Optional[float] = None) -> Any:
        """A page of a set expression (``intersect``, ``union``, ``difference`` of Query) -> SetPage."""
        body = as_query(expr)
        body["order"] = order
        if limit is not None:
            body["limit"] = limit
        if cursor is not None:
            body["cursor"] = cursor
        return self._read(f"/v1/graphs/{seg(graph)}/sets", SetPage.from_json, after, timeout_ms, timeout,
                          method="POST", body=body)

    def set_count(self, graph: str, expr: Any, *, after: After = None, timeout_ms: Optional[int] = None,
                  timeout: Optional[float] = None) -> Any:
        """The size of a whole set expression -> int."""
        body = as_query(expr)
        body["count"] = True
        return self._read(f"/v1/graphs/{seg(graph)}/sets", lambda j: int(j["count"]), after, timeout_ms, timeout,
                          method="POST", body=body)

    # --- entities ---------------------------------------------------------------------------

    def put_entity(self, kind: str, entity_id: Any, body: Mapping[str, Any], *, ts: Optional[int] = None,
                   wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                   idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """Puts (replaces) an entity's JSON object body; ``entity_id`` is 32 hex digits, UUID text or a
        uuid.UUID -> Ack."""
        return self._write("PUT", f"/v1/entities/{seg(kind)}/{seg(entity_id)}", dict(body), idempotency_key,
                           wait_applied, wait_timeout_ms, timeout, {"ts": ts})

    def delete_entity(self, kind: str, entity_id: Any, *, ts: Optional[int] = None, wait_applied: bool = False,
                      wait_timeout_ms: Optional[int] = None, idempotency_key: Optional[str] = None,
                      timeout: Optional[float] = None) -> Any:
        """Deletes an entity (a tombstone: last writer wins by ts) -> Ack."""
        return self._write("DELETE", f"/v1/entities/{seg(kind)}/{seg(entity_id)}", None, idempotency_key,
                           wait_applied, wait_timeout_ms, timeout, {"ts": ts})

    def get_entity(self, kind: str, entity_id: Any, *, after: After = None, timeout_ms: Optional[int] = None,
                   timeout: Optional[float] = None) -> Any:
        """An entity -> Entity, or None if it is missing or deleted."""
        return self._read(f"/v1/entities/{seg(kind)}/{seg(entity_id)}", lambda j: Entity.from_json(j, kind), after,
                          timeout_ms, timeout, none_on_not_found=True)

    def query_entities(self, kind: str, index: str, where: Mapping[str, Any], *, limit: Optional[int] = None,
                       cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                       timeout: Optional[float] = None) -> Any:
        """The entities whose properties equal ``where`` (e.g. ``{"user_id": ..., "rank.gte": 3}``) -> EntityPage."""
        return self._read(f"/v1/entities/{seg(kind)}/by/{seg(index)}", EntityPage.from_json, after, timeout_ms,
                          timeout, **_where(where), limit=limit, cursor=cursor)

    def create_index(self, name: str, properties: Sequence[Mapping[str, Any]], *, kind: Optional[str] = None,
                     table: Optional[str] = None, column: Optional[str] = None, shard_on: Optional[str] = None,
                     timeout: Optional[float] = None) -> Any:
        """Creates an index of an entity kind, or of a cell table's column (admin) -> its definition (dict).
        Not sent again after a lost connection (a second create is a 409 index-exists)."""
        body: Dict[str, Any] = {"name": name, "properties": [dict(p) for p in properties]}
        for k, v in (("kind", kind), ("table", table), ("column", column), ("shard_on", shard_on)):
            if v is not None:
                body[k] = v
        return self._call(Call("POST", "/v1/indexes", body, None, False, timeout=timeout))

    def list_indexes(self, *, timeout: Optional[float] = None) -> Any:
        """The indexes (entity and cell) -> list of definitions (dicts)."""
        return self._call(Call("GET", "/v1/indexes", parse=lambda j: j["indexes"] if isinstance(j, dict) else j,
                               timeout=timeout))

    def drop_index(self, name: str, *, timeout: Optional[float] = None) -> Any:
        """Drops an index (admin) -> cairnd's answer (dict)."""
        return self._call(Call("DELETE", f"/v1/indexes/{seg(name)}", None, None, False, timeout=timeout))

    def index_progress(self, name: str, *, timeout: Optional[float] = None) -> Any:
        """The latest cleaner run of an index on this gateway (back-fill, stale rows) -> dict."""
        return self._call(Call("GET", f"/v1/indexes/{seg(name)}/clean", timeout=timeout))

    # --- cells ------------------------------------------------------------------------------

    def write_cells(self, table: str, cells: Iterable[Union[CellWrite, Mapping[str, Any]]], *,
                    wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                    idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """Writes immutable cells in one batch -> Ack (a cell that exists with another body: 409 cell-exists)."""
        items = [as_json_item(c, CellWrite) for c in cells]
        body: Any = items[0] if len(items) == 1 else {"cells": items}
        return self._write("POST", f"/v1/cells/{seg(table)}", body, idempotency_key, wait_applied, wait_timeout_ms,
                           timeout)

    def write_cell(self, table: str, row_key: Any, column: str, ref_key: int, body: Mapping[str, Any],
                   **kw: Any) -> Any:
        """Writes one immutable cell -> Ack."""
        return self.write_cells(table, [CellWrite(str(row_key), column, ref_key, body)], **kw)

    def get_cell(self, table: str, row_key: Any, column: str, ref_key: Optional[int] = None, *,
                 after: After = None, timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """One cell (``ref_key``), or the latest version of the column -> Cell, or None."""
        path = f"/v1/cells/{seg(table)}/{seg(row_key)}/{seg(column)}"
        if ref_key is not None:
            path += f"/{seg(ref_key)}"
        return self._read(path, lambda j: Cell.from_json(j, table), after, timeout_ms, timeout, none_on_not_found=True)

    def cell_versions(self, table: str, row_key: Any, column: str, *, limit: Optional[int] = None,
                      cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                      timeout: Optional[float] = None) -> Any:
        """The versions of a column, newest first -> CellPage."""
        return self._read(f"/v1/cells/{seg(table)}/{seg(row_key)}/{seg(column)}/versions",
                          lambda j: CellPage.from_json(j, "versions", table), after, timeout_ms, timeout,
                          limit=limit, cursor=cursor)

    def get_row(self, table: str, row_key: Any, *, limit: Optional[int] = None, cursor: Optional[str] = None,
                after: After = None, timeout_ms: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """The latest version of each column of a row, paged by column -> CellPage."""
        return self._read(f"/v1/cells/{seg(table)}/{seg(row_key)}", lambda j: CellPage.from_json(j, "columns", table),
                          after, timeout_ms, timeout, limit=limit, cursor=cursor)

    def query_cells(self, table: str, index: str, where: Mapping[str, Any], *, limit: Optional[int] = None,
                    cursor: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                    timeout: Optional[float] = None) -> Any:
        """The rows whose latest cell of the index's column has ``where``'s values -> CellPage."""
        return self._read(f"/v1/cells/{seg(table)}/by/{seg(index)}", lambda j: CellPage.from_json(j, "cells", table),
                          after, timeout_ms, timeout, **_where(where), limit=limit, cursor=cursor)

    # --- counters ---------------------------------------------------------------------------

    def increments(self, metric: str, items: Iterable[Union[Increment, Mapping[str, Any]]], *,
                   wait_applied: bool = False, wait_timeout_ms: Optional[int] = None,
                   idempotency_key: Optional[str] = None, timeout: Optional[float] = None) -> Any:
        """Counts a batch of increments, each exactly once -> Ack."""
        body = {"increments": [as_json_item(i, Increment) for i in items]}
        return self._write("POST", f"/v1/counters/{seg(metric)}", body, idempotency_key, wait_applied,
                           wait_timeout_ms, timeout)

    def increment(self, metric: str, dimensions: Mapping[str, Any], *, delta: int = 1, time: Any = None,
                  **kw: Any) -> Any:
        """Counts one increment (every dimension of the metric; ``time`` default now) -> Ack."""
        return self.increments(metric, [Increment(dimensions, delta, time)], **kw)

    def _counter_read(self, metric: str, what: str, parse: Callable[[Any], Any], start: Any, end: Any,
                      where: Optional[Mapping[str, Any]], granularity: Optional[str], after: After,
                      timeout_ms: Optional[int], timeout: Optional[float], **more: Any) -> Any:
        return self._read(f"/v1/counters/{seg(metric)}/{what}", parse, after, timeout_ms, timeout,
                          **_where(where or {}), **{"from": time_text(start), "to": time_text(end)},
                          granularity=granularity, **more)

    def counter_total(self, metric: str, start: Any, end: Any, *, where: Optional[Mapping[str, Any]] = None,
                      granularity: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                      timeout: Optional[float] = None) -> Any:
        """The sum over ``[start, end)`` (bucket starts: ms, aware datetimes, dates, RFC 3339 text) -> CounterTotal."""
        return self._counter_read(metric, "total", CounterTotal.from_json, start, end, where, granularity, after,
                                  timeout_ms, timeout)

    def counter_series(self, metric: str, start: Any, end: Any, *, where: Optional[Mapping[str, Any]] = None,
                       granularity: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                       timeout: Optional[float] = None) -> Any:
        """Every hour or day bucket of ``[start, end)``, zeros included -> Series."""
        return self._counter_read(metric, "series", Series.from_json, start, end, where, granularity, after,
                                  timeout_ms, timeout)

    def counter_top(self, metric: str, by: str, start: Any, end: Any, *, where: Optional[Mapping[str, Any]] = None,
                    n: Optional[int] = None, compare_start: Any = None, compare_end: Any = None,
                    granularity: Optional[str] = None, after: After = None, timeout_ms: Optional[int] = None,
                    timeout: Optional[float] = None) -> Any:
        """The top ``n`` values of dimension ``by``, with an earlier period's counts beside them -> Top."""
        return self._counter_read(metric, "top", Top.from_json, start, end, where, granularity, after, timeout_ms,
                                  timeout, by=by, n=n,
                                  compare_from=None if compare_start is None else time_text(compare_start),
                                  compare_to=None if compare_end is None else time_text(compare_end))

    def counter_metrics(self, *, timeout: Optional[float] = None) -> Any:
        """The declared counter metrics, their dimensions and tables (cairnd's JSON)."""
        return self._call(Call("GET", "/v1/counters", timeout=timeout))

    # --- the change feed --------------------------------------------------------------------

    def feed(self, from_: int = 0, *, limit: Optional[int] = None, wait_ms: Optional[int] = None,
             model: Optional[str] = None, name: Optional[str] = None, key_prefix: Optional[str] = None,
             timeout: Optional[float] = None) -> Any:
        """One page of the change feed (GET /v1/feed): the ops after ``from_`` (the ``next_from`` of the
        last page processed) that every shard has applied, in seq order, at most ``limit`` (1 to 1,000,
        default 100), only those of ``model``, ``name`` (graph, kind, table, metric or index) and whose key
        starts with ``key_prefix``; ``wait_ms`` long-polls when there are none yet -> FeedPage. A ``from_``
        behind the journal's retention raises FeedRangeGone (``oldest_seq``)."""
        params = feed_params(from_, limit, model, name, key_prefix)
        if timeout is None and wait_ms:
            timeout = max(float(getattr(self, "timeout", 30.0)), wait_ms / 1000.0 + 5.0)
        return self._call(Call("GET", "/v1/feed" + query(**params, wait_ms=wait_ms), parse=FeedPage.from_json,
                               timeout=timeout))

    # --- health and anything else -----------------------------------------------------------

    def livez(self, *, timeout: Optional[float] = None) -> Any:
        """Whether the process answers -> bool."""
        return self._call(Call("GET", "/livez", parse=lambda j: bool(j.get("alive")), timeout=timeout))

    def readyz(self, *, verbose: bool = False, timeout: Optional[float] = None) -> Any:
        """Whether the journal can take writes -> cairnd's JSON ({"ready": ..., "checks": ... if verbose}).
        A 503 (not ready) is answered as its body too, not raised."""
        path = "/readyz?verbose" if verbose else "/readyz"
        return self._call(Call("GET", path, timeout=timeout, accept_status=(503,)))

    def request(self, method: str, path: str, body: Any = None, *, idempotency_key: Optional[str] = None,
                timeout: Optional[float] = None) -> Any:
        """Any route (e.g. the admin API): its JSON answer, or a ProblemError. Sent again after a lost
        connection only if it is a GET or carries an ``idempotency_key``."""
        method = method.upper()
        safe = method == "GET" or idempotency_key is not None
        return self._call(Call(method, path, body, idempotency_key, safe, timeout=timeout))


def _where(where: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in where.items():
        if isinstance(v, uuid.UUID):
            v = v.hex
        out[k] = v
    return out

