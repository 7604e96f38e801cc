"""Client: the blocking client of cairnd, over HTTP/1.1 keep-alive (http.client).

Thread-safe: threads may share one Client; each request takes a pooled keep-alive connection.
Owns its connections until close() (or the end of a ``with`` block).
"""

from __future__ import annotations

import json
import ssl as _ssl
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Union

from ._api import Api, Call
from ._http import HttpTransport, split_url
from .models import After, Cell, Edge, Entity, Token


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
