"""Blocking HTTP/1.1 transport with keep-alive: a small pool of http.client connections.

Thread-safe: each request takes a connection from the pool (or opens one) and gives it back when the
answer has been read completely, so one HttpTransport serves the sync Client from many threads and the
AsyncClient's HTTP fallback from its worker threads. Owns its connections; close() closes them.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl as _ssl
import threading
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from .errors import RequestTimeout, TransportError

USER_AGENT = "cairn-python/0.1"

# Failures of a connection that had served a request before: the server may have closed it while it
# idled (cairnd closes idle keep-alive connections after limits.timeout_idle_ms). A request that is
# safe to send again is retried once on a fresh connection.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
          http.client.BadStatusLine)


class Answer:
    """An HTTP answer: status, parsed JSON body (None when empty) and Retry-After seconds, if any."""

    __slots__ = ("status", "body", "retry_after")

    def __init__(self, status: int, body: Any, retry_after: Optional[float]) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after


def parse_retry_after(v: Any) -> Optional[float]:
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except (TypeError, ValueError):
        return None


def decode_body(status: int, data: bytes, content_type: str) -> Any:
    """cairnd answers JSON (or problem+json); anything else becomes a problem-shaped dict."""
    if not data:
        return None
    if "json" in content_type or data[:1] in (b"{", b"["):
        try:
            return json.loads(data)
        except ValueError:
            pass
    text = data[:500].decode("utf-8", "replace")
    return {"type": "about:blank", "title": "Not JSON", "status": status,
            "detail": f"the answer is not JSON ({content_type or 'no content type'}): {text}"}


class HttpTransport:
    def __init__(self, base_url: str, token: Optional[str] = None, ssl_context: Optional[_ssl.SSLContext] = None,
                 pool_size: int = 8) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"url must be http:// or https://, not {base_url!r}")
        if not u.hostname:
            raise ValueError(f"url has no host: {base_url!r}")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.ssl_context = ssl_context
        if self.scheme == "https" and self.ssl_context is None:
            self.ssl_context = _ssl.create_default_context()
        self.headers: Dict[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._pool: List[http.client.HTTPConnection] = []
        self._pool_size = max(1, pool_size)
        self._lock = threading.Lock()
        self._closed = False

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _take(self) -> Optional[http.client.HTTPConnection]:
        with self._lock:
            if self._closed:
                raise TransportError("the client is closed")
            return self._pool.pop() if self._pool else None

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._pool) < self._pool_size:
                self._pool.append(conn)
                return
        conn.close()

    def request(self, method: str, path: str, body_json: Optional[str] = None,
                idempotency_key: Optional[str] = None, timeout: float = 30.0, resend_safe: bool = True) -> Answer:
        """Sends one request (its body already JSON text) and reads its answer.

        Raises TransportError when no complete answer arrived (refused, reset, TLS failure) and
        RequestTimeout when a socket operation took longer than ``timeout`` seconds. A request that is
        ``resend_safe`` and failed on a reused keep-alive connection is sent once more on a new one.
        """
        data = None if body_json is None else body_json.encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        target = self.prefix + path
        for attempt in (0, 1):
            conn = self._take()
            reused = conn is not None
            if conn is None:
                conn = self._open(timeout)
            else:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
            try:
                conn.request(method, target, body=data, headers=headers)
                res = conn.getresponse()
                raw = res.read()
            except _STALE as e:
                conn.close()
                if reused and resend_safe and attempt == 0:
                    continue
                raise TransportError(f"{method} {path}: connection to {self.host}:{self.port} lost: {e!r}",
                                     idempotency_key) from e
            except socket.timeout as e:
                conn.close()
                raise RequestTimeout(f"{method} {path}: no answer from {self.host}:{self.port} within {timeout:g} s",
                                     idempotency_key) from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise TransportError(f"{method} {path}: cannot reach {self.host}:{self.port}: {e!r}",
                                     idempotency_key) from e
            answer = Answer(res.status, decode_body(res.status, raw, res.getheader("Content-Type", "")),
                            parse_retry_after(res.getheader("Retry-After")))
            if res.will_close:
                conn.close()
            else:
                self._give(conn)
            return answer
        raise AssertionError("unreachable")  # the loop returns or raises

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, []
        for c in pool:
            c.close()


def split_url(url: str) -> Tuple[str, str]:
    """The base http(s) URL and the WebSocket URL of a cairnd given as either."""
    u = urllib.parse.urlsplit(url.rstrip("/"))
    scheme = {"ws": "http", "wss": "https"}.get(u.scheme, u.scheme)
    path = u.path
    if path.endswith("/v1/ws"):
        path = path[: -len("/v1/ws")]
    base = urllib.parse.urlunsplit((scheme, u.netloc, path, "", ""))
    ws_scheme = {"http": "ws", "https": "wss"}.get(scheme, scheme)
    ws = urllib.parse.urlunsplit((ws_scheme, u.netloc, path + "/v1/ws", "", ""))
    return base, ws
