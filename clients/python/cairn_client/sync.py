"""Client: the blocking client of cairnd, over HTTP/1.1 keep-alive (http.client).

Thread-safe: threads may share one Client; each request takes a pooled keep-alive connection.
Owns its connections until close() (or the end of a ``with`` block).
"""

from __future__ import annotations

import json
import random
import ssl as _ssl
import threading
import time
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Union

from ._api import Api, Call
from ._http import HttpTransport, split_url
from .errors import FeedGatewayChanged, ProblemError, RequestTimeout, TransportError
from .models import After, Cell, Edge, Entity, FeedPage, Token, feed_params


class Client(Api):
    """A blocking cairn client over HTTP/1.1 keep-alive.

    ``url`` is cairnd's base URL (``http://host:port`` or ``https://...``). ``token`` is a bearer token,
    ``ssl`` an ssl.SSLContext for https (default: the system's trust store), ``timeout`` the
    timeout in seconds of each socket operation of a request (connect, send, each read; a
    RequestTimeout past it), ``pool_size`` the keep-alive
    connections kept open for threads that share the client. With ``read_your_writes=True`` every
    read without ``after=`` waits for ``last_token``: the latest write this client was acknowledged by
    the gateway of its most recent write (``last_tokens``: the latest of each gateway).
    """

    def __init__(self, url: str, *, token: Optional[str] = None, ssl: Optional[_ssl.SSLContext] = None,
                 timeout: float = 30.0, pool_size: int = 8, read_your_writes: bool = False) -> None:
        base, _ = split_url(url)
        self.url = base
        self.timeout = float(timeout)
        self.read_your_writes = read_your_writes
        self.last_token: Optional[Token] = None
        self.last_tokens: Dict[Optional[int], Token] = {}
        self._http = HttpTransport(base, token, ssl, pool_size)
        self._token_lock = threading.Lock()  # threads' acknowledgements race to update last_token

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the keep-alive connections; later requests raise TransportError."""
        self._http.close()

    def _note_token(self, token: Token) -> None:
        with self._token_lock:
            super()._note_token(token)

    def _call(self, call: Call) -> Any:
        timeout = call.timeout if call.timeout is not None else self.timeout
        body = None if call.body is None else json.dumps(call.body, separators=(",", ":"))
        a = self._http.request(call.method, call.path, body, call.idempotency_key, timeout, call.resend_safe)
        return self._finish(call, a.status, a.body, a.retry_after)

    # --- iterators over pages ---------------------------------------------------------------

    @staticmethod
    def _walk(fetch: Callable[[Optional[str]], Any], items: str) -> Iterator[Any]:
        """The items of every page, first to last: fetch(cursor) reads one page, the next cursor."""
        cursor = None
        while True:
            page = fetch(cursor)
            yield from getattr(page, items)
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def iter_edges(self, graph: str, node_id: int, *, direction: str = "forward",
                   state: Union[str, Sequence[str]] = "normal", page_size: int = 100, after: After = None,
                   timeout_ms: Optional[int] = None) -> Iterator[Edge]:
        """Every edge of a node, newest first, page after page (one request per ``page_size`` edges)."""
        return self._walk(lambda cursor: self.edges_page(graph, node_id, direction=direction, state=state,
                                                         limit=page_size, cursor=cursor, after=after,
                                                         timeout_ms=timeout_ms), "edges")

    def iter_set(self, graph: str, expr: Any, *, order: str = "asc", page_size: int = 100,
                 after: After = None, timeout_ms: Optional[int] = None) -> Iterator[int]:
        """Every node id of a set expression, in ``order``, page after page."""
        return self._walk(lambda cursor: self.set_page(graph, expr, order=order, limit=page_size, cursor=cursor,
                                                       after=after, timeout_ms=timeout_ms), "ids")

    def iter_entities(self, kind: str, index: str, where: Any, *, page_size: int = 100, after: After = None,
                      timeout_ms: Optional[int] = None) -> Iterator[Entity]:
        """Every entity of an index query, in key order, page after page."""
        return self._walk(lambda cursor: self.query_entities(kind, index, where, limit=page_size, cursor=cursor,
                                                             after=after, timeout_ms=timeout_ms), "entities")

    def iter_cell_versions(self, table: str, row_key: Any, column: str, *, page_size: int = 100,
                           after: After = None, timeout_ms: Optional[int] = None) -> Iterator[Cell]:
        """Every version of a column, newest first, page after page."""
        return self._walk(lambda cursor: self.cell_versions(table, row_key, column, limit=page_size, cursor=cursor,
                                                            after=after, timeout_ms=timeout_ms), "cells")

    # --- the change feed, long-polled -------------------------------------------------------

    def subscribe(self, from_: int = 0, *, limit: Optional[int] = None, model: Optional[str] = None,
                  name: Optional[str] = None, key_prefix: Optional[str] = None, wait_ms: int = 10_000,
                  empty_pages: bool = False, retry_delay_max: float = 5.0) -> Iterator[FeedPage]:
        """The change feed's pages after ``from_`` (the ``next_from`` of the last page processed), long-polled
        with GET /v1/feed (``wait_ms`` each), filtered as ``feed()``: ``for page in c.subscribe(from_=n)``,
        every op once, in seq order; ``break`` ends it. Pages without ops are skipped unless
        ``empty_pages``. A lost connection, a RequestTimeout or a 503/429 is retried from where it stood
        (backoff up to ``retry_delay_max`` s); FeedRangeGone, other ProblemErrors, FeedGatewayChanged
        (another gateway answered) and TransportError once the client is closed end it."""
        feed_params(from_, limit, model, name, key_prefix)  # bad arguments raise here, not at the first page
        return self._subscribe(from_, limit, model, name, key_prefix, wait_ms, empty_pages, retry_delay_max)

    def _subscribe(self, position: int, limit: Optional[int], model: Optional[str], name: Optional[str],
                   key_prefix: Optional[str], wait_ms: int, empty_pages: bool,
                   retry_delay_max: float) -> Iterator[FeedPage]:
        node: Optional[int] = None
        delay = 0.05
        while True:
            try:
                page = self.feed(position, limit=limit, wait_ms=wait_ms, model=model, name=name, key_prefix=key_prefix)
            except ProblemError as e:
                if e.status not in (429, 503):
                    raise
                time.sleep(max(min(e.retry_after or 0.0, 1.0), delay) * (0.5 + random.random() / 2))
                delay = min(delay * 2, retry_delay_max)
                continue
            except (TransportError, RequestTimeout):
                if self._http.closed:
                    raise
                time.sleep(delay * (0.5 + random.random() / 2))
                delay = min(delay * 2, retry_delay_max)
                continue
            delay = 0.05
            if node is None:
                node = page.node_id
            elif page.node_id != node:
                raise FeedGatewayChanged(
                    f"the feed came from the gateway with node id {node} and now from node id {page.node_id}: seqs "
                    "are per gateway; subscribe to each gateway with a client of its own")
            position = page.next_from
            if page.ops or empty_pages:
                yield page
