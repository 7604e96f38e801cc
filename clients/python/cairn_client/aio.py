"""AsyncClient: the asyncio client of cairnd over one pipelined WebSocket (/v1/ws).

Runs on one event loop (the one that first uses it). It owns a connection task (connect, read answers,
reconnect with backoff), a sender task per connection, and while the WebSocket cannot connect, worker
threads of the HTTP fallback (http.client keep-alive). Every request waits in one bounded buffer until
it is answered; a request whose connection is lost before its answer is sent again on the next one when
that is safe (reads, and writes, which all carry an idempotency key, so that cairnd answers a write it
had journaled with its original acknowledgement instead of applying it twice). Change feed
subscriptions (feed.py) share the connection and subscribe again on the next one.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
import random
import ssl as _ssl
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Deque, Dict, Optional, Sequence, Set, Union

from ._api import Api, Call
from ._http import HttpTransport, parse_retry_after, split_url
from .errors import ClientClosed, RequestTimeout, TransportError
from .feed import FeedSubscription, control_frame
from .models import After, Cell, Edge, Entity, Token

try:  # Debian 12: python3-websockets 10.4 (the asyncio API; websockets.sync came in 11)
    import websockets.client as _ws_client
    import websockets.exceptions as _ws_exceptions
except ImportError:  # pragma: no cover - reported when an AsyncClient is made
    _ws_client = None
    _ws_exceptions = None


@dataclass
class Stats:
    """What the AsyncClient's transport did: for monitoring and for tests."""

    connects: int = 0  # WebSocket connections opened
    disconnects: int = 0  # WebSocket connections lost (not closed by close())
    connect_failures: int = 0  # WebSocket connection attempts that failed
    ws_sends: int = 0  # request frames sent over WebSocket
    http_sends: int = 0  # requests sent over the HTTP fallback
    resent: int = 0  # sends of a request that had been sent before (after a lost connection)
    retried: int = 0  # requests sent again after a 429 too-many-in-flight or 503 shutting-down
    deduplicated: int = 0  # write acknowledgements that cairnd answered as deduplicated
    peak_in_flight: int = 0  # most requests unanswered on one WebSocket connection at once
    subscribes: int = 0  # SUBSCRIBE messages sent (a subscription sends one more after a reconnect or a pause)


class _Req:
    """One request from the call until its answer; ``state`` says where it is."""

    __slots__ = ("call", "body_json", "future", "deadline", "order", "state", "sends")

    def __init__(self, call: Call, body_json: Optional[str], future: "asyncio.Future[Any]", deadline: float,
                 order: int) -> None:
        self.call = call
        self.body_json = body_json
        self.future = future
        self.deadline = deadline
        self.order = order
        self.state = "queued"  # queued, ws, http, delayed, done, abandoned
        self.sends = 0

    def frame(self, rid: int) -> str:
        c = self.call
        out = '{"id":%d,"method":"%s","path":%s' % (rid, c.method, json.dumps(c.path))
        if self.body_json is not None:
            out += ',"body":' + self.body_json
        if c.idempotency_key is not None:
            out += ',"idempotency_key":' + json.dumps(c.idempotency_key)
        return out + "}"

    def resolve(self, result: Any = None, error: Optional[BaseException] = None) -> None:
        self.state = "done"
        if not self.future.done():
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)


def _describe(e: BaseException) -> str:
    status = getattr(e, "status_code", None)
    if status is not None:
        return f"the server refused the WebSocket upgrade with HTTP {status}"
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


class AsyncClient(Api):
    """An asyncio cairn client: requests pipelined on one WebSocket, answers matched by id.

    ``url`` is cairnd's base URL (``http://host:port``, ``https://...``; ``ws_url`` defaults to its
    ``/v1/ws``). ``token``: a bearer token; ``ssl``: an ssl.SSLContext for https/wss; ``timeout``: the
    per-request timeout in seconds (RequestTimeout past it, including the time spent waiting for room
    or for a connection); ``max_in_flight``: requests unanswered on the connection at once (cairnd
    allows 256); ``resend_buffer_max``: requests the client holds unanswered in all (queued, in flight,
    waiting to be sent again), a caller beyond it waits for room; ``http_fallback``: when the WebSocket
    cannot connect, send over HTTP keep-alive instead (``http_connections`` at once) until it can;
    ``reconnect_delay_min``/``_max``: the backoff between connection attempts, in seconds.

    Use it as ``async with AsyncClient(url) as c:``, or ``await c.connect()`` ... ``await c.close()``.
    """

    def __init__(self, url: str, *, ws_url: Optional[str] = None, token: Optional[str] = None,
                 ssl: Optional[_ssl.SSLContext] = None, timeout: float = 30.0, max_in_flight: int = 128,
                 resend_buffer_max: int = 10_000, http_fallback: bool = True, http_connections: int = 4,
                 connect_timeout: float = 5.0, reconnect_delay_min: float = 0.05, reconnect_delay_max: float = 5.0,
                 read_your_writes: bool = False, max_message_bytes: int = 16 << 20) -> None:
        if _ws_client is None:
            raise ImportError("AsyncClient needs the websockets package (Debian: apt-get install python3-websockets)")
        if max_in_flight < 1 or resend_buffer_max < 1 or http_connections < 1:
            raise ValueError("max_in_flight, resend_buffer_max and http_connections must be at least 1")
        base, default_ws = split_url(url)
        self.url = base
        self.ws_url = ws_url or default_ws
        self.timeout = float(timeout)
        self.max_in_flight = max_in_flight
        self.resend_buffer_max = resend_buffer_max
        self.http_fallback = http_fallback
        self.http_connections = http_connections
        self.connect_timeout = float(connect_timeout)
        self.reconnect_delay_min = float(reconnect_delay_min)
        self.reconnect_delay_max = float(reconnect_delay_max)
        self.read_your_writes = read_your_writes
        self.last_token: Optional[Token] = None
        self.last_tokens: Dict[Optional[int], Token] = {}
        self.stats = Stats()
        self._token = token
        self._ssl = ssl
        self._max_message_bytes = max_message_bytes
        self._http = HttpTransport(base, token, ssl, http_connections)
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._queue: Deque[_Req] = collections.deque()
        self._pending: Dict[int, _Req] = {}
        self._outstanding = 0
        self._room: Optional[asyncio.Semaphore] = None
        self._wake_sender: Optional[asyncio.Event] = None
        self._idle: Optional[asyncio.Event] = None
        self._outcome: Optional[asyncio.Event] = None  # set when a connection attempt ended either way
        self._manager: Optional["asyncio.Task[None]"] = None
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self._ws: Any = None
        self._mode = "connecting"  # connecting, ws, http (fallback), down (no transport until the next attempt)
        self._closed = False  # no new requests (close() began)
        self._stopping = False  # the connection task stops (close() has drained what it could)
        self._live: Set[_Req] = set()  # every request from its call to its answer
        self._next_id = 0
        self._next_order = 0
        self._http_busy = 0
        self._ws_error: Optional[str] = None  # why the latest WebSocket attempt or connection failed
        self._http_error: Optional[str] = None  # why the latest HTTP fallback request failed to get an answer
        self._feeds: Set[FeedSubscription] = set()  # running change feed subscriptions
        self._feed_wire: Dict[str, FeedSubscription] = {}  # SUBSCRIBE id on the current connection -> its subscription
        self._control: Deque[str] = collections.deque()  # SUBSCRIBE and UNSUBSCRIBE messages to send first
        self._feed_changed: Optional[asyncio.Event] = None  # set (and replaced) when a transport becomes usable

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def last_error(self) -> Optional[str]:
        """Why the latest connection attempt or connection failed (None before any failure)."""
        parts = [p for p in (self._ws_error, self._http_error and f"HTTP fallback: {self._http_error}") if p]
        return "; ".join(parts) if parts else None

    @property
    def transport(self) -> str:
        """``ws`` (connected), ``http`` (the fallback), ``connecting`` or ``down`` (retrying)."""
        return self._mode

    async def __aenter__(self) -> "AsyncClient":
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _start(self) -> None:
        if self._closed:
            raise ClientClosed("the client is closed")
        if self._manager is None:
            self._room = asyncio.Semaphore(self.resend_buffer_max)
            self._wake_sender = asyncio.Event()
            self._idle = asyncio.Event()
            self._idle.set()
            self._outcome = asyncio.Event()
            self._feed_changed = asyncio.Event()
            self._manager = asyncio.get_running_loop().create_task(self._manage(), name="cairn-ws")

    async def connect(self) -> "AsyncClient":
        """Starts connecting and waits for the first outcome: the WebSocket is open, or it cannot connect
        and HTTP answers (the fallback). Raises TransportError when cairnd cannot be reached either way."""
        self._start()
        assert self._outcome is not None
        try:
            await asyncio.wait_for(self._outcome.wait(), self.connect_timeout + 1.0)
        except asyncio.TimeoutError:
            pass
        if self._mode == "ws":
            return self
        if self._mode == "http":
            try:
                await self._in_thread(self._http.request, "GET", "/livez", None, None, self.connect_timeout, True)
                return self
            except (TransportError, RequestTimeout) as e:
                error = f"cannot reach cairnd: {self._ws_error}; HTTP fallback: {e}"
        else:
            error = f"cannot reach cairnd: {self.last_error or 'no connection within the connect timeout'}"
        await self.close(drain_timeout=0)
        raise TransportError(error)

    async def close(self, drain_timeout: Optional[float] = None) -> None:
        """Waits (at most ``drain_timeout`` s, default the request timeout) for the requests under way,
        then closes the connection; requests still unanswered fail with ClientClosed."""
        if self._closed:
            return
        self._closed = True
        for sub in list(self._feeds):
            sub._end(None)
            if sub._task is not None:
                sub._task.cancel()  # a long poll over HTTP is a request: close() would wait for it
        if self._manager is None:
            self._http.close()
            return
        assert self._idle is not None
        wait = self.timeout if drain_timeout is None else drain_timeout
        if wait > 0 and self._outstanding:
            try:
                await asyncio.wait_for(self._idle.wait(), wait)
            except asyncio.TimeoutError:
                pass
        self._stopping = True
        if self._ws is not None:
            try:
                await self._ws.close()  # the connection task sees the close and returns
            except Exception:
                pass
        self._manager.cancel()
        try:
            await self._manager
        except (asyncio.CancelledError, Exception):
            pass
        for req in list(self._live):
            req.resolve(error=ClientClosed("the client was closed before the answer"))
        self._queue.clear()
        self._pending.clear()
        for t in list(self._tasks):
            t.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    # --- requests ---------------------------------------------------------------------------

    def _call(self, call: Call) -> Any:
        return self._roundtrip(call)

    async def _roundtrip(self, call: Call) -> Any:
        self._start()
        assert self._room is not None and self._idle is not None
        body_json = None if call.body is None else json.dumps(call.body, separators=(",", ":"))
        loop = asyncio.get_running_loop()
        timeout = call.timeout if call.timeout is not None else self.timeout
        deadline = loop.time() + timeout
        try:
            if self._room.locked():  # full: wait for room, within the timeout
                await asyncio.wait_for(self._room.acquire(), timeout)
            else:
                await self._room.acquire()
        except asyncio.TimeoutError:
            raise RequestTimeout(f"{call.method} {call.path}: no room within {timeout:g} s: {self.resend_buffer_max} "
                                 f"requests are unanswered (resend_buffer_max)", call.idempotency_key) from None
        self._next_order += 1
        req = _Req(call, body_json, loop.create_future(), deadline, self._next_order)
        self._outstanding += 1
        self._live.add(req)
        self._idle.clear()
        try:
            self._queue.append(req)
            self._kick()
            try:
                status, body, retry_after = await asyncio.wait_for(req.future, max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                self._abandon(req)
                raise RequestTimeout(self._timeout_text(req, timeout), call.idempotency_key) from None
            except BaseException:
                self._abandon(req)
                raise
        finally:
            self._outstanding -= 1
            self._live.discard(req)
            self._room.release()
            if self._outstanding == 0:
                self._idle.set()
        return self._finish(call, status, body, retry_after)

    def _timeout_text(self, req: _Req, timeout: float) -> str:
        c = req.call
        text = f"{c.method} {c.path}: no answer within {timeout:g} s"
        if req.sends == 0:
            return text + f" (never sent: {self.last_error or 'no connection'})"
        if c.idempotency_key:
            text += (f" (sent {req.sends} time(s); the write may have been journaled: send it again with "
                     f"idempotency_key={c.idempotency_key!r} to find out, it is never applied twice)")
        else:
            text += f" (sent {req.sends} time(s))"
        return text + (f"; last connection error: {self.last_error}" if self.last_error else "")

    def _abandon(self, req: _Req) -> None:
        if req.state == "queued":
            try:
                self._queue.remove(req)
            except ValueError:
                pass
        # A request on the wire stays in _pending (it holds its slot) until its answer or the connection's end.
        req.state = "abandoned"

    def _kick(self) -> None:
        if self._mode == "ws" and self._wake_sender is not None:
            self._wake_sender.set()
        elif self._mode == "http":
            self._pump_http()

    def _on_answer(self, req: _Req, status: int, body: Any, retry_after: Optional[float]) -> None:
        if req.state == "abandoned":
            return
        loop = asyncio.get_running_loop()
        slug = str(body.get("type", "")).rsplit("/", 1)[-1] if isinstance(body, dict) else ""
        transient = status == 429 or (status == 503 and slug == "shutting-down" and req.call.resend_safe)
        if transient:
            delay = retry_after if retry_after is not None else 1.0
            delay = min(delay, 5.0) * (0.5 + random.random() / 2)
            if loop.time() + delay < req.deadline:
                req.state = "delayed"
                self.stats.retried += 1
                loop.call_later(delay, self._requeue_delayed, req)
                return
        if isinstance(body, dict) and body.get("deduplicated") is True:
            self.stats.deduplicated += 1
        req.resolve((status, body, retry_after))

    def _requeue_delayed(self, req: _Req) -> None:
        if req.state == "delayed" and not self._stopping:
            req.state = "queued"
            self._queue.append(req)
            self._kick()

    # --- the WebSocket ----------------------------------------------------------------------

    async def _manage(self) -> None:
        assert self._outcome is not None
        loop = asyncio.get_running_loop()
        delay = self.reconnect_delay_min
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
        ssl_arg: Any = self._ssl if self.ws_url.startswith("wss:") else None
        while not self._stopping:
            try:
                ws = await _ws_client.connect(  # type: ignore[union-attr]
                    self.ws_url, extra_headers=headers, ssl=ssl_arg, open_timeout=self.connect_timeout,
                    max_size=self._max_message_bytes, compression=None, ping_interval=20, ping_timeout=20,
                    close_timeout=2)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.stats.connect_failures += 1
                self._ws_error = f"WebSocket {self.ws_url}: {_describe(e)}"
                self._mode = "http" if self.http_fallback else "down"
                self._outcome.set()
                self._kick()
                self._feeds_notify()
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
                delay = min(delay * 2, self.reconnect_delay_max)
                continue
            self.stats.connects += 1
            self._ws = ws
            self._mode = "ws"
            self._ws_error = self._http_error = None
            self._outcome.set()
            self._control.clear()  # messages for the previous connection
            self._feeds_notify()  # subscriptions subscribe (again) on this one
            opened = loop.time()
            sender = loop.create_task(self._send_loop(ws), name="cairn-ws-send")
            try:
                async for message in ws:
                    self._on_frame(message)
            except _ws_exceptions.ConnectionClosed as e:  # type: ignore[union-attr]
                self._ws_error = f"WebSocket {self.ws_url}: connection lost ({_describe(e)})"
            else:
                self._ws_error = f"WebSocket {self.ws_url}: closed ({ws.close_code} {ws.close_reason})"
            finally:
                sender.cancel()
                try:
                    await sender
                except (asyncio.CancelledError, Exception):
                    pass
                self._ws = None
                if self._mode == "ws":
                    self._mode = "connecting"
            if self._stopping:
                return
            self.stats.disconnects += 1
            self._requeue_lost()
            lost = list(self._feed_wire.values())
            self._feed_wire.clear()
            for sub in lost:
                sub._lost()
            if loop.time() - opened > 1.0:
                delay = self.reconnect_delay_min  # a connection that lived: reconnect at once
            else:
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
                delay = min(delay * 2, self.reconnect_delay_max)

    def _requeue_lost(self) -> None:
        """The requests of a lost connection: sent again first, in their order, when that is safe."""
        lost = sorted(self._pending.values(), key=lambda r: r.order)
        self._pending.clear()
        for req in reversed(lost):
            if req.state != "ws":
                continue
            if req.call.resend_safe:
                req.state = "queued"
                self._queue.appendleft(req)
            else:
                req.resolve(error=TransportError(
                    f"{req.call.method} {req.call.path}: the connection was lost before the answer; not sent again "
                    f"(the route takes no idempotency key), so its outcome is unknown"))

    async def _send_loop(self, ws: Any) -> None:
        assert self._wake_sender is not None
        while True:
            self._wake_sender.clear()
            while self._control:
                await ws.send(self._control.popleft())
            # A subscription holds one of cairnd's in-flight slots of the connection, as a request does.
            while self._queue and len(self._pending) + len(self._feed_wire) < self.max_in_flight:
                req = self._queue.popleft()
                if req.state != "queued":
                    continue
                self._next_id += 1
                rid = self._next_id
                req.state = "ws"
                if req.sends:
                    self.stats.resent += 1
                req.sends += 1
                self._pending[rid] = req
                if len(self._pending) > self.stats.peak_in_flight:
                    self.stats.peak_in_flight = len(self._pending)
                self.stats.ws_sends += 1
                await ws.send(req.frame(rid))
            await self._wake_sender.wait()

    def _on_frame(self, message: Union[str, bytes]) -> None:
        try:
            j = json.loads(message)
        except ValueError:
            return
        if not isinstance(j, dict):
            return
        if isinstance(j.get("id"), str):  # a subscription's frame (requests have int ids)
            sub = self._feed_wire.get(j["id"])
            if sub is not None:
                sub._on_frame(j)
            return
        req = self._pending.pop(j.get("id"), None)  # type: ignore[arg-type]
        if req is None:
            return
        if self._wake_sender is not None:
            self._wake_sender.set()  # a slot is free
        try:
            status = int(j.get("status", 0))
        except (TypeError, ValueError):
            status = 0
        self._on_answer(req, status, j.get("body"), parse_retry_after(j.get("retry_after")))

    # --- the HTTP fallback ------------------------------------------------------------------

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(self.http_connections, "cairn-http")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _pump_http(self) -> None:
        loop = asyncio.get_running_loop()
        while self._mode == "http" and self._queue and self._http_busy < self.http_connections:
            req = self._queue.popleft()
            if req.state != "queued":
                continue
            req.state = "http"
            self._http_busy += 1
            task = loop.create_task(self._http_send(req))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _http_send(self, req: _Req) -> None:
        c = req.call
        try:
            remaining = req.deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return  # the caller's own wait has timed out, or is about to
            if req.sends:
                self.stats.resent += 1
            req.sends += 1
            self.stats.http_sends += 1
            a = await self._in_thread(self._http.request, c.method, c.path, req.body_json, c.idempotency_key,
                                      remaining, c.resend_safe)
        except (TransportError, RequestTimeout) as e:
            if req.state != "http":
                return
            self._http_error = str(e)
            if c.resend_safe and not isinstance(e, RequestTimeout):
                # cairnd cannot be reached either way: wait for the next connection attempt.
                req.state = "queued"
                self._queue.appendleft(req)
                if self._mode == "http":
                    self._mode = "down"
            else:
                req.resolve(error=e)
        else:
            self._http_error = None
            if req.state == "http":
                self._on_answer(req, a.status, a.body, a.retry_after)
        finally:
            self._http_busy -= 1
            self._kick()

    # --- change feed subscriptions (feed.py) -------------------------------------------------

    def subscribe(self, from_: int = 0, *, limit: Optional[int] = None, model: Optional[str] = None,
                  name: Optional[str] = None, key_prefix: Optional[str] = None, empty_pages: bool = False,
                  buffer_pages: int = 16, poll_wait_ms: int = 10_000) -> FeedSubscription:
        """The change feed's pages after ``from_`` (the ``next_from`` of the last page processed) as the shards
        apply them, filtered as ``feed()``: ``async with c.subscribe(from_=n) as sub: async for page in sub``.
        Pushed on the WebSocket (subscribed again from where it stood after a reconnect), long-polled
        (``poll_wait_ms``) over the HTTP fallback; every op once, in seq order. At most 16 per client."""
        return FeedSubscription(self, from_, limit=limit, model=model, name=name, key_prefix=key_prefix,
                                empty_pages=empty_pages, buffer_pages=buffer_pages, poll_wait_ms=poll_wait_ms)

    def _feed_subscribe(self, sub: FeedSubscription) -> None:
        self._next_id += 1
        wire_id = f"s{self._next_id}"
        sub.wire_id = wire_id
        self._feed_wire[wire_id] = sub
        self._control.append(control_frame(wire_id, "SUBSCRIBE", sub.path()))
        self.stats.subscribes += 1
        if self._wake_sender is not None:
            self._wake_sender.set()

    def _feed_unsubscribe(self, wire_id: str, keep: bool) -> None:
        """UNSUBSCRIBE; ``keep``: its last frame is still awaited (aclose), else frames with its id are dropped."""
        if not keep:
            self._feed_wire.pop(wire_id, None)
        if self._ws is not None:
            self._control.append(control_frame(wire_id, "UNSUBSCRIBE"))
            if self._wake_sender is not None:
                self._wake_sender.set()

    def _feeds_notify(self) -> None:
        if self._feed_changed is not None:
            ev, self._feed_changed = self._feed_changed, asyncio.Event()
            ev.set()

    async def _feed_changed_wait(self, timeout: float) -> None:
        if self._feed_changed is None:
            return
        try:
            await asyncio.wait_for(self._feed_changed.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    # --- iterators over pages ---------------------------------------------------------------

    @staticmethod
    async def _walk(fetch: Callable[[Optional[str]], Awaitable[Any]], items: str) -> AsyncIterator[Any]:
        """The items of every page, first to last: fetch(cursor) reads one page, the next cursor."""
        cursor = None
        while True:
            page = await fetch(cursor)
            for item in getattr(page, items):
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def iter_edges(self, graph: str, node_id: int, *, direction: str = "forward",
                   state: Union[str, Sequence[str]] = "normal", page_size: int = 100, after: After = None,
                   timeout_ms: Optional[int] = None) -> AsyncIterator[Edge]:
        """Every edge of a node, newest first, page after page (``async for``)."""
        return self._walk(lambda cursor: self.edges_page(graph, node_id, direction=direction, state=state,
                                                         limit=page_size, cursor=cursor, after=after,
                                                         timeout_ms=timeout_ms), "edges")

    def iter_set(self, graph: str, expr: Any, *, order: str = "asc", page_size: int = 100,
                 after: After = None, timeout_ms: Optional[int] = None) -> AsyncIterator[int]:
        """Every node id of a set expression, in ``order``, page after page."""
        return self._walk(lambda cursor: self.set_page(graph, expr, order=order, limit=page_size, cursor=cursor,
                                                       after=after, timeout_ms=timeout_ms), "ids")

    def iter_entities(self, kind: str, index: str, where: Any, *, page_size: int = 100, after: After = None,
                      timeout_ms: Optional[int] = None) -> AsyncIterator[Entity]:
        """Every entity of an index query, in key order, page after page."""
        return self._walk(lambda cursor: self.query_entities(kind, index, where, limit=page_size, cursor=cursor,
                                                             after=after, timeout_ms=timeout_ms), "entities")

    def iter_cell_versions(self, table: str, row_key: Any, column: str, *, page_size: int = 100,
                           after: After = None, timeout_ms: Optional[int] = None) -> AsyncIterator[Cell]:
        """Every version of a column, newest first, page after page."""
        return self._walk(lambda cursor: self.cell_versions(table, row_key, column, limit=page_size, cursor=cursor,
                                                            after=after, timeout_ms=timeout_ms), "cells")
