"""Change feed subscriptions of the AsyncClient (docs/api.md, "Subscribing to the feed").

A FeedSubscription runs on the AsyncClient's event loop: one task that subscribes on the client's
WebSocket (SUBSCRIBE /v1/feed?from=...) while it is connected, long-polls GET /v1/feed while the client
uses its HTTP fallback, and waits while the client has neither. cairnd pushes pages; the client's frame
reader hands each to the subscription, which keeps its position (the ``next_from`` of the last page it
received) and subscribes again from it after a lost connection or a gateway's stop (an ``end`` frame
with 503), so that the consumer gets every op once, in seq order. It holds at most ``buffer_pages``
pages the consumer has not taken: then it unsubscribes, and subscribes again from its position once the
consumer has taken half of them, so that a slow consumer slows cairnd down instead of filling memory.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
from typing import TYPE_CHECKING, Any, Deque, Dict, Optional, Tuple
from urllib.parse import urlencode

from .errors import CairnError, ClientClosed, FeedGatewayChanged, ProblemError, RequestTimeout, TransportError
from .errors import problem_error
from .models import FeedPage, feed_params

if TYPE_CHECKING:  # pragma: no cover
    from .aio import AsyncClient

SUBSCRIPTIONS_MAX = 16  # cairnd's limit per connection; a client holds at most this many


def _problem(status: int, body: Any) -> Dict[str, Any]:
    if isinstance(body, dict):
        return dict(body)
    return {"type": "about:blank", "title": "Error", "status": status, "detail": f"HTTP {status}: {body!r}"}


class FeedSubscription:
    """The pages of the change feed after ``from_``, as cairnd pushes them: ``async for page in sub``.

    Use it as ``async with client.subscribe(from_=n) as sub:`` (leaving the block, a ``break`` included,
    unsubscribes), or call ``await sub.aclose()``: it sends UNSUBSCRIBE and waits (at most the client's
    timeout) for cairnd's last frame, so nothing more is pushed. A ``break`` alone does not end it (Python
    calls nothing on an async iterator it leaves). Pages without ops are skipped unless ``empty_pages``.

    It ends with an exception for what subscribing again cannot mend: FeedRangeGone (410, it fell behind
    the journal's retention), a ProblemError (a refused SUBSCRIBE: a bad filter), FeedGatewayChanged (the
    pages came from another gateway); and quietly when the client is closed.
    """

    def __init__(self, client: "AsyncClient", from_: int = 0, *, limit: Optional[int] = None,
                 model: Optional[str] = None, name: Optional[str] = None, key_prefix: Optional[str] = None,
                 empty_pages: bool = False, buffer_pages: int = 16, poll_wait_ms: int = 10_000) -> None:
        params = feed_params(from_, limit, model, name, key_prefix)
        if buffer_pages < 1 or poll_wait_ms < 1:
            raise ValueError("buffer_pages and poll_wait_ms must be at least 1")
        self._client = client
        self._from = from_  # where it resumes: the next_from of the last page it received
        self._filters = {k: v for k, v in params.items() if k != "from"}
        self._empty_pages = empty_pages
        self._buffer_pages = buffer_pages
        self._poll_wait_ms = poll_wait_ms
        #: The node id of the gateway whose feed this is (None before the first page).
        self.node_id: Optional[int] = None
        self._pages: Deque[FeedPage] = collections.deque()
        self._error: Optional[BaseException] = None
        self._state = "new"  # new, active, paused (its buffer is full), ended
        self._readable: Optional[asyncio.Event] = None
        self._room: Optional[asyncio.Event] = None
        self._task: Optional["asyncio.Task[None]"] = None
        self.wire_id: Optional[str] = None  # its SUBSCRIBE's id on the current connection
        self._wire_done: Optional["asyncio.Future[Tuple[str, Any]]"] = None
        self._closing: Optional["asyncio.Future[None]"] = None
        self._retry_after: Optional[float] = None

    # --- the consumer's side ----------------------------------------------------------------

    def __aiter__(self) -> "FeedSubscription":
        return self

    async def __anext__(self) -> FeedPage:
        self._start()
        assert self._readable is not None
        while True:
            if self._pages:
                page = self._pages.popleft()
                if self._state == "paused" and len(self._pages) <= self._buffer_pages // 2:
                    self._state = "active"
                    assert self._room is not None
                    self._room.set()
                return page
            if self._error is not None:
                e, self._error = self._error, None
                raise e
            if self._state == "ended":
                raise StopAsyncIteration
            self._readable.clear()
            await self._readable.wait()

    async def __aenter__(self) -> "FeedSubscription":
        self._start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Ends it: UNSUBSCRIBE, and waits (at most the client's timeout) for cairnd's last frame."""
        wire, self.wire_id = self.wire_id, None
        self._end(None)
        client = self._client
        if wire is not None:
            if client._ws is not None:
                fut = asyncio.get_running_loop().create_future()
                self._closing = fut
                client._feed_unsubscribe(wire, keep=True)
                try:
                    await asyncio.wait_for(fut, client.timeout)
                except asyncio.TimeoutError:
                    pass
                finally:
                    self._closing = None
            client._feed_wire.pop(wire, None)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # --- driven by the client ---------------------------------------------------------------

    def _start(self) -> None:
        if self._state != "new":
            return
        client = self._client
        client._start()  # ClientClosed once the client is closed
        self._readable = asyncio.Event()
        self._room = asyncio.Event()
        if len(client._feeds) >= SUBSCRIPTIONS_MAX:
            self._state = "ended"
            self._error = CairnError(f"this client already runs {SUBSCRIPTIONS_MAX} subscriptions (cairnd's limit "
                                     "per connection); end one first")
            return
        self._state = "active"
        client._feeds.add(self)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="cairn-feed")

    def path(self) -> str:
        """The path of its SUBSCRIBE: /v1/feed with its position and filters."""
        params = {"from": self._from, **self._filters}
        return "/v1/feed?" + urlencode([(k, str(v)) for k, v in params.items() if v is not None])

    async def _run(self) -> None:
        client = self._client
        delay = client.reconnect_delay_min
        try:
            while self._state in ("active", "paused"):
                if self._state == "paused":
                    assert self._room is not None
                    self._room.clear()
                    await self._room.wait()
                    continue
                if client._mode == "ws" and client._ws is not None:
                    outcome = await self._over_ws()
                elif client._mode == "http":
                    outcome = await self._poll_once()
                else:
                    await client._feed_changed_wait(1.0)  # until a connection opens or the fallback is chosen
                    continue
                if outcome == "retry":
                    wait = max(min(self._retry_after or 0.0, 1.0), delay)
                    await asyncio.sleep(wait * (0.5 + random.random() / 2))
                    delay = min(delay * 2, client.reconnect_delay_max)
                elif outcome == "ok":
                    delay = client.reconnect_delay_min
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug here ends the subscription with it rather than silently
            self._fail(e)

    async def _over_ws(self) -> str:
        """Subscribes on the open WebSocket and waits for what ends that: its last frame or refusal, the
        connection's loss, a pause or the end."""
        fut: "asyncio.Future[Tuple[str, Any]]" = asyncio.get_running_loop().create_future()
        self._wire_done = fut
        self._client._feed_subscribe(self)
        kind, frame = await fut
        if kind != "frame":
            return "lost" if kind == "lost" else "ok"
        status = frame.get("status")
        if status in (200, 429, 503):
            # Unsubscribed by someone else, too many requests in flight, or the gateway stops: subscribe
            # again from where it stands (once the connection is back, when the gateway closes it).
            self._retry_after = frame.get("retry_after") if isinstance(frame.get("retry_after"), (int, float)) else None
            return "retry"
        status = int(status) if isinstance(status, int) else 0
        self._fail(problem_error(status, _problem(status, frame.get("body")), None, "SUBSCRIBE", self.path()))
        return "ended"

    async def _poll_once(self) -> str:
        """Over the HTTP fallback: one long poll of GET /v1/feed from where it stands."""
        try:
            page = await self._client.feed(self._from, wait_ms=self._poll_wait_ms, **self._filters)
        except ClientClosed:
            self._end(None)
            return "ended"
        except ProblemError as e:
            if e.status in (429, 503):
                self._retry_after = e.retry_after
                return "retry"
            self._fail(e)
            return "ended"
        except (RequestTimeout, TransportError):
            self._retry_after = None
            return "retry"
        self._receive(page)
        return "ok"

    def _on_frame(self, frame: Dict[str, Any]) -> None:
        """A frame with its SUBSCRIBE's id: a page, its last frame (``end``), or the SUBSCRIBE's refusal."""
        if self._closing is not None:
            if frame.get("event") != "feed" and not self._closing.done():
                self._closing.set_result(None)
            return
        if frame.get("event") == "feed" and frame.get("status") == 200:
            try:
                page = FeedPage.from_json(frame["body"])
            except (KeyError, TypeError, ValueError) as e:
                self._fail(CairnError(f"cairnd pushed a feed page that cannot be read: {e!r}"))
                return
            self._receive(page)
            return
        self._client._feed_wire.pop(self.wire_id or "", None)
        self.wire_id = None
        self._resolve_wire(("frame", frame))

    def _lost(self) -> None:
        """Its connection was lost: it subscribes again once the next one opens."""
        self.wire_id = None
        self._resolve_wire(("lost", None))
        if self._closing is not None and not self._closing.done():
            self._closing.set_result(None)

    def _receive(self, page: FeedPage) -> None:
        if self._state != "active":
            return  # paused or ended: read again from _from, or not at all
        if self.node_id is None:
            self.node_id = page.node_id
        elif page.node_id != self.node_id:
            self._fail(FeedGatewayChanged(
                f"the feed came from the gateway with node id {self.node_id} and now from node id {page.node_id}: "
                "seqs are per gateway; subscribe to each gateway with a client of its own"))
            return
        self._from = page.next_from
        if not page.ops and not self._empty_pages:
            return
        self._pages.append(page)
        assert self._readable is not None
        self._readable.set()
        if len(self._pages) >= self._buffer_pages:
            self._state = "paused"
            self._stop_server()
            self._resolve_wire(("paused", None))

    def _stop_server(self) -> None:
        if self.wire_id is not None:
            self._client._feed_unsubscribe(self.wire_id, keep=False)
            self.wire_id = None

    def _resolve_wire(self, outcome: Tuple[str, Any]) -> None:
        fut, self._wire_done = self._wire_done, None
        if fut is not None and not fut.done():
            fut.set_result(outcome)

    def _fail(self, error: BaseException) -> None:
        if self._state != "ended":
            self._end(error)

    def _end(self, error: Optional[BaseException]) -> None:
        """Ends it: with an error for the consumer (after the pages before it), or quietly (None)."""
        self._state = "ended"
        self._stop_server()
        self._client._feeds.discard(self)
        if error is None:
            self._pages.clear()
        self._error = error
        self._resolve_wire(("ended", None))
        for ev in (self._readable, self._room):
            if ev is not None:
                ev.set()


def control_frame(wire_id: str, method: str, path: Optional[str] = None) -> str:
    """A SUBSCRIBE or UNSUBSCRIBE message."""
    msg: Dict[str, Any] = {"id": wire_id, "method": method}
    if path is not None:
        msg["path"] = path
    return json.dumps(msg, separators=(",", ":"))
