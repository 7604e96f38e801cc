"""The change feed: pages read with ``feed()`` (filters, types, long polls, 400 and 410) on both clients, and
subscriptions: the AsyncClient's (pushed on its WebSocket, long-polled over its HTTP fallback) and the sync
Client's (long-polled). Every op acknowledged while one runs arrives once and in seq order; a slow consumer
pauses and resumes it; ``aclose()`` ends it on the wire; it survives connections cut while pages were in
transit and a gateway restart (its ``end`` frame 503). The 410 and the restart use a cairnd of their own
(support.Gateway) on the same shards."""

from __future__ import annotations

import asyncio
import time
import unittest
import urllib.parse
import uuid
from typing import Any, Dict, List, Sequence

import support
from cairn_client import (
    Ack, AsyncClient, CairnError, Client, FeedOp, FeedPage, FeedRangeGone, FeedSubscription, ProblemError,
)


def assert_exactly(tc: unittest.TestCase, ops: Sequence[FeedOp], acks: Sequence[Ack], what: str) -> None:
    """Seqs strictly increasing, and exactly those of the acknowledgements (op ids too)."""
    seqs = [o.seq for o in ops]
    for a, b in zip(seqs, seqs[1:]):
        tc.assertLess(a, b, f"{what}: seq {b} after {a}")
    tc.assertEqual(seqs, sorted(a.seq for a in acks), f"{what}: each acknowledged op once")
    ids = {a.seq: a.op_id for a in acks}
    for o in ops:
        tc.assertEqual(o.op_id, ids[o.seq], f"{what}: op id of seq {o.seq}")


async def read_until(c: Any, until: int, from_: int, **filters: Any) -> List[FeedOp]:
    """The ops after ``from_`` until one has seq ``until`` (long polls of 2 s each, 30 s in all)."""
    ops: List[FeedOp] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not ops or ops[-1].seq < until:
        assert loop.time() < deadline, f"the feed reached seq {until} within 30 s (at {from_})"
        page = await c.feed(from_, wait_ms=2000, **filters)
        ops += page.ops
        from_ = page.next_from
    return ops


def spy_frames(c: Any) -> List[Dict[str, Any]]:
    """Every WebSocket frame the client receives from now on, decoded, in order (the client still gets them)."""
    import json
    frames: List[Dict[str, Any]] = []
    on_frame = c._on_frame

    def spy(message: Any) -> None:
        frames.append(json.loads(message))
        on_frame(message)
    c._on_frame = spy
    return frames


class Consumer:
    """Consumes a subscription in a task: its ops, and its error if it ended with one."""

    def __init__(self, sub: FeedSubscription) -> None:
        self.sub = sub
        self.ops: List[FeedOp] = []
        self.pages = 0
        self.error: Any = None
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async for page in self.sub:
                self.pages += 1
                self.ops += page.ops
        except Exception as e:  # the test looks at it
            self.error = e

    async def wait_for(self, n: int, what: str) -> None:
        await support.until(lambda: len(self.ops) >= n or self.error is not None, 60, what)
        if self.error is not None:
            raise AssertionError(f"{what}: the subscription ended with {self.error!r}")


class Feed(unittest.TestCase):
    def setUp(self) -> None:
        support.require_websockets()
        self.url, self.ws = support.cairn_urls()
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port

    # --- feed() -------------------------------------------------------------------------------

    def test_feed_pages_typed_filtered_long_polled_on_every_transport(self) -> None:
        sock, closed = support.closed_port()

        async def scenario(c: Any, tag: str) -> None:
            g = support.graph_name(f"feed_{tag}")
            s = support.node_id()
            start = (await c.feed(limit=1)).last_seq
            acks = [await c.add_edge(g, s, s + 1), await c.node_action(g, s, "archive"), await c.add_edge(g, s + 1, s)]
            entity = uuid.uuid4().hex
            entity_ack = await c.put_entity("entry", entity, {"n": 1})

            page = await c.feed(start, name=g, wait_ms=2000)
            self.assertIsInstance(page, FeedPage)
            self.assertEqual(set(page.raw), {"ops", "next_from", "applied_through", "last_seq", "node_id"})
            ops = await read_until(c, acks[2].seq, start, name=g)
            assert_exactly(self, ops, acks, f"{tag}: name filter")
            edge, node = ops[0], ops[1]
            self.assertIsInstance(edge.op_id, int)
            self.assertEqual(edge.hlc, acks[0].ts[0], "the op's HLC is its acknowledgement's ts")
            self.assertEqual({**edge.op, "position": 0, "ts": 0}, {
                "model": "edge", "graph": g, "source_id": s, "destination_id": s + 1, "state": "normal",
                "keep_position": False, "position": 0, "ts": 0})
            self.assertEqual((node.model, node.op["action"]), ("node", "archive"))
            assert_exactly(self, await read_until(c, acks[1].seq, start, name=g, model="node"), acks[1:2],
                           f"{tag}: model filter")
            # An edge's key is its source id: s's edge and s's node op, not the edge from s + 1.
            assert_exactly(self, await read_until(c, acks[1].seq, start, name=g, key_prefix=str(s)), acks[:2],
                           f"{tag}: key prefix filter")
            entities = await read_until(c, entity_ack.seq, start, model="entity", name="entry", key_prefix=entity[:8])
            assert_exactly(self, [o for o in entities if o.op["id"].replace("-", "") == entity], [entity_ack],
                           f"{tag}: entity filter")
            self.assertLessEqual(len((await c.feed(start, name=g, limit=1)).ops), 1)
            # A long poll answers once the next op is applied: started before the write.
            tail = (await c.feed(limit=1)).last_seq
            if isinstance(c, support.SyncFacade):
                late = await c.add_edge(g, s, s + 2)
                got = await read_until(c, late.seq, tail, name=g)
            else:
                polled = asyncio.ensure_future(read_until(c, tail + 1, tail, name=g))
                late = await c.add_edge(g, s, s + 2)
                got = await polled
                if got[-1].seq < late.seq:
                    got += await read_until(c, late.seq, got[-1].seq, name=g)
            self.assertIn(late.seq, [o.seq for o in got])

            with self.assertRaises(ProblemError) as bad:
                await c.feed(limit=0)
            self.assertEqual((bad.exception.status, bad.exception.field), (400, "limit"))
            with self.assertRaises(ProblemError) as beyond:
                await c.feed(page.last_seq + 1_000_000)
            self.assertEqual((beyond.exception.status, beyond.exception.field), (400, "from"))
            with self.assertRaises(ValueError):
                await c.feed(-1)
            with self.assertRaises(TypeError):
                await c.feed(True)
            with self.assertRaises(ValueError):
                await c.feed(model="edges")

        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws) as over_ws:
                await scenario(over_ws, "ws")
            async with AsyncClient(self.url, ws_url=f"ws://127.0.0.1:{closed}/v1/ws") as over_http:
                await scenario(over_http, "http")
                self.assertEqual((over_http.transport, over_http.stats.ws_sends), ("http", 0))
            with Client(self.url) as sync:
                await scenario(support.SyncFacade(sync), "sync")
        try:
            asyncio.run(go())
        finally:
            sock.close()

    # --- subscriptions ----------------------------------------------------------------------

    def test_a_subscription_delivers_every_op_once_in_seq_order_over_ws_and_the_http_fallback(self) -> None:
        sock, closed = support.closed_port()

        async def scenario(c: AsyncClient, transport: str) -> None:
            g = support.graph_name(f"sub_{transport}")
            s = support.node_id()
            start = (await c.feed(limit=1)).last_seq
            async with c.subscribe(start, name=g, limit=50) as sub:
                got = Consumer(sub)
                acks = await asyncio.gather(*(c.node_action(g, s, "remove") if i % 50 == 49 else c.add_edge(g, s, s + 1 + i)
                                              for i in range(400)))
                await got.wait_for(400, f"400 ops over {transport}")
                assert_exactly(self, got.ops, acks, transport)
            self.assertEqual(c.transport, transport)
            if transport == "ws":
                self.assertEqual(c.stats.subscribes, 1)
            await got.task
            self.assertIsNone(got.error)
            self.assertEqual((c._feeds, c._feed_wire), (set(), {}))

        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws, timeout=support.BULK_TIMEOUT) as over_ws:
                await scenario(over_ws, "ws")
            async with AsyncClient(self.url, ws_url=f"ws://127.0.0.1:{closed}/v1/ws",
                                   timeout=support.BULK_TIMEOUT) as over_http:
                await scenario(over_http, "http")
        try:
            asyncio.run(go())
        finally:
            sock.close()

    def test_the_sync_subscription_long_polls_every_op_once_in_seq_order(self) -> None:
        with Client(self.url) as c:
            g = support.graph_name("sub_sync")
            s = support.node_id()
            start = c.feed(limit=1).last_seq
            acks = c.write_edges(g, [(s, s + 1 + i) for i in range(30)]), c.node_action(g, s, "archive")
            want = [a.seq for a in acks]
            pages = c.subscribe(start, name=g, limit=7, wait_ms=2000)
            ops: List[FeedOp] = []
            deadline = time.monotonic() + 60
            for page in pages:
                ops += page.ops
                if ops[-1].seq >= want[-1] or time.monotonic() > deadline:
                    break
            seqs = [o.seq for o in ops]
            self.assertEqual(seqs, list(range(acks[0].first_seq, acks[0].seq + 1)) + [acks[1].seq])
            self.assertEqual(ops[-1].op_id, acks[1].op_id)
            with self.assertRaises(ValueError):
                c.subscribe(-1)
            with self.assertRaises(ProblemError) as bad:
                next(c.subscribe(start, limit=0))
            self.assertEqual(bad.exception.field, "limit")

    def test_a_slow_consumer_pauses_the_subscription_which_resumes_where_it_stood(self) -> None:
        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws) as c:
                g = support.graph_name("slow")
                s = support.node_id()
                sub = c.subscribe((await c.feed(limit=1)).last_seq, name=g, limit=5, buffer_pages=2)
                async with sub:
                    first = asyncio.ensure_future(sub.__anext__())  # subscribes
                    acks = await asyncio.gather(*(c.add_edge(g, s, s + 1 + i) for i in range(100)))
                    top = max(a.seq for a in acks)
                    # Every op is applied before the consumer takes more than one page: 20 pages, 2 buffered.
                    await read_until(c, top, top - 1, name=g)
                    ops = list((await asyncio.wait_for(first, 30)).ops)
                    # The pages are pushed after the ops are applied, not with them: the consumer waits
                    # until its buffer is full and the subscription paused (else a fast consumer could
                    # take every page before the buffer ever filled, and nothing would pause).
                    await support.until(lambda: sub._state == "paused", 30, "the subscription to pause with 2 pages buffered")

                    async def rest() -> None:
                        nonlocal ops
                        async for page in sub:
                            ops += page.ops
                            if len(ops) >= 100:
                                return
                    await asyncio.wait_for(rest(), 60)
                assert_exactly(self, ops, acks, "slow consumer")
                self.assertGreaterEqual(c.stats.subscribes, 2, "paused and resumed")
        asyncio.run(go())

    def test_filters_model_name_and_key_prefix(self) -> None:
        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws) as c:
                g = support.graph_name("subf")
                s = support.node_id()
                start = (await c.feed(limit=1)).last_seq
                async with c.subscribe(start, name=g, model="node") as nodes, \
                        c.subscribe(start, name=g, key_prefix=str(s + 1)) as keyed:
                    got_nodes, got_keyed = Consumer(nodes), Consumer(keyed)
                    acks = [await c.add_edge(g, s + i % 3, s + 10 + i) for i in range(6)]
                    acks.append(await c.node_action(g, s + 1, "archive"))
                    acks.append(await c.node_action(g, s + 2, "restore"))
                    # Each subscription's last matching op comes last: what came before it is all it gets.
                    await support.until(lambda: acks[7].seq in [o.seq for o in got_nodes.ops] or got_nodes.error, 30,
                                        "the node ops")
                    await support.until(lambda: acks[6].seq in [o.seq for o in got_keyed.ops] or got_keyed.error, 30,
                                        "the ops of s + 1")
                assert_exactly(self, got_nodes.ops, acks[6:], "model=node")
                assert_exactly(self, got_keyed.ops, [acks[1], acks[4], acks[6]], "key_prefix")
        asyncio.run(go())

    def test_a_refused_subscription_raises_cairnds_problem_and_bad_arguments_raise_at_once(self) -> None:
        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws) as c:
                with self.assertRaises(ProblemError) as bad:
                    async for _ in c.subscribe(limit=0):
                        pass
                self.assertEqual((bad.exception.status, bad.exception.field), (400, "limit"))
                sub = c.subscribe((await c.feed(limit=1)).last_seq + 1_000_000)
                with self.assertRaises(ProblemError) as beyond:
                    await sub.__anext__()
                self.assertEqual((beyond.exception.status, beyond.exception.field), (400, "from"))
                with self.assertRaises(StopAsyncIteration):
                    await sub.__anext__()
                with self.assertRaises(ValueError):
                    c.subscribe(-1)
                with self.assertRaises(TypeError):
                    c.subscribe(1.5)  # type: ignore[arg-type]
                with self.assertRaises(ValueError):
                    c.subscribe(model="edges")
        asyncio.run(go())

    def test_aclose_ends_it_on_the_wire_and_nothing_with_its_id_follows(self) -> None:
        async def go() -> None:
            async with AsyncClient(self.url, ws_url=self.ws) as c:
                frames = spy_frames(c)
                g = support.graph_name("aclose")
                s = support.node_id()
                start = (await c.feed(limit=1)).last_seq
                sub = c.subscribe(start, name=g)
                control = c.subscribe(start, name=g)
                got_control = Consumer(control)
                first = await c.add_edge(g, s, s + 1)
                page = await asyncio.wait_for(sub.__anext__(), 30)
                wire_id = sub.wire_id
                await sub.aclose()
                assert_exactly(self, page.ops, [first], "before aclose")
                ends = [f for f in frames if f.get("id") == wire_id and f.get("event") == "end"]
                self.assertEqual([(f["status"], f["body"]["reason"]) for f in ends], [(200, "unsubscribed")])
                self.assertGreaterEqual(ends[0]["body"]["next_from"], first.seq)
                end_at = frames.index(ends[0])
                with self.assertRaises(StopAsyncIteration):
                    await sub.__anext__()
                # More writes: the control subscription on the same connection gets them; the ended one nothing.
                more = [await c.add_edge(g, s, s + 2 + i) for i in range(5)]
                await got_control.wait_for(6, "the control subscription")
                assert_exactly(self, got_control.ops, [first, *more], "control")
                # cairnd no longer knows the id: an UNSUBSCRIBE of it is answered 404, after all it sent before.
                await c._ws.send('{"id":"%s","method":"UNSUBSCRIBE"}' % wire_id)
                await support.until(lambda: any(f.get("id") == wire_id for f in frames[end_at + 1:]), 10,
                                    "the answer to the second UNSUBSCRIBE")
                after = [f for f in frames[end_at + 1:] if f.get("id") == wire_id]
                self.assertEqual([(f["status"], f.get("event"), f["body"]["type"].rsplit("/", 1)[-1]) for f in after],
                                 [(404, None, "not-found")])
                await control.aclose()
                self.assertEqual(c._feed_wire, {})
        asyncio.run(go())

    def test_close_ends_subscriptions_quietly_and_sixteen_at_most(self) -> None:
        async def go() -> None:
            loop = asyncio.get_running_loop()
            c = AsyncClient(self.url, ws_url=self.ws)
            await c.connect()
            start = (await c.feed(limit=1)).last_seq
            subs = [c.subscribe(start, name=support.graph_name("many")) for _ in range(16)]
            for sub in subs:
                await sub.__aenter__()
            self.assertEqual(len(c._feeds), 16)
            with self.assertRaises(CairnError) as many:
                await c.subscribe(start).__anext__()
            self.assertIn("16 subscriptions", str(many.exception))
            pending = asyncio.ensure_future(subs[0].__anext__())
            await c.close()
            with self.assertRaises(StopAsyncIteration):
                await asyncio.wait_for(pending, 10)
            self.assertEqual(c._feeds, set())
            # Over the HTTP fallback a subscription long-polls: close() ends the poll, it does not wait for it.
            async with AsyncClient(self.url, ws_url=f"ws://127.0.0.1:{closed}/v1/ws") as over_http:
                sub = over_http.subscribe(start, name=support.graph_name("close"), poll_wait_ms=20_000)
                pending = asyncio.ensure_future(sub.__anext__())
                await support.until(lambda: over_http.stats.http_sends >= 1, 10, "the long poll")
                began = loop.time()
                await over_http.close()
                self.assertLess(loop.time() - began, 5, "close() did not wait for the long poll")
                with self.assertRaises(StopAsyncIteration):
                    await asyncio.wait_for(pending, 10)
        sock, closed = support.closed_port()
        try:
            asyncio.run(go())
        finally:
            sock.close()

    # --- reconnects ---------------------------------------------------------------------------

    def test_a_subscription_survives_cut_connections_with_pages_lost_in_transit(self) -> None:
        async def go() -> None:
            proxy = support.Proxy(self.host, self.port)
            await proxy.start()
            try:
                async with AsyncClient(self.url, ws_url=self.ws, timeout=support.BULK_TIMEOUT) as writer, \
                        AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False,
                                    reconnect_delay_max=0.2) as c:
                    g = support.graph_name("cut")
                    s = support.node_id()
                    acks: List[Ack] = []

                    async def batch(n: int) -> None:
                        acks.extend(await asyncio.gather(*(writer.add_edge(g, s, support.node_id()) for _ in range(n))))
                    async with c.subscribe((await writer.feed(limit=1)).last_seq, name=g, limit=20) as sub:
                        got = Consumer(sub)
                        await batch(200)
                        await got.wait_for(100, "the first pages")
                        # Drop what cairnd pushes while more is written, then cut: those pages never arrive.
                        proxy.mode = "hold"
                        down = proxy.bytes_down
                        await batch(200)
                        await support.until(lambda: proxy.bytes_down - down >= 4096, 30, "pages pushed while held")
                        proxy.mode = "forward"
                        self.assertEqual(proxy.cut(), 1)
                        await got.wait_for(400, "the held-back ops, read again")
                        # A plain cut, and writes while the client is away.
                        proxy.cut()
                        await batch(200)
                        await got.wait_for(600, "every op")
                        assert_exactly(self, got.ops, acks, "across cuts")
                    self.assertEqual(c.stats.disconnects, 2)
                    self.assertGreaterEqual(c.stats.subscribes, 3)
            finally:
                await proxy.stop()
        asyncio.run(go())

    def test_a_subscription_survives_a_gateway_restart_after_its_end_frame_503(self) -> None:
        gw = support.Gateway(911)
        try:
            gw.start()

            async def go() -> None:
                loop = asyncio.get_running_loop()
                async with AsyncClient(gw.url, ws_url=gw.ws_url, http_fallback=False, reconnect_delay_max=0.2,
                                       timeout=60) as c:
                    frames = spy_frames(c)
                    g = support.graph_name("restart")
                    s = support.node_id()
                    async with c.subscribe(0) as sub:
                        got = Consumer(sub)
                        acks = list(await asyncio.gather(*(c.add_edge(g, s, s + 1 + i) for i in range(50))))
                        await got.wait_for(50, "the ops before the stop")
                        self.assertEqual(await loop.run_in_executor(None, gw.stop), 0, "cairnd stopped cleanly")
                        await support.until(lambda: any(f.get("event") == "end" for f in frames), 10, "the end frame")
                        ends = [(f["status"], f["body"]["type"].rsplit("/", 1)[-1], f["body"]["next_from"])
                                for f in frames if f.get("event") == "end"]
                        self.assertEqual(ends, [(503, "shutting-down", max(a.seq for a in acks))])
                        await loop.run_in_executor(None, gw.start)
                        with Client(gw.url) as writer:
                            acks += [writer.add_edge(g, s, s + 100 + i) for i in range(50)]
                        await got.wait_for(100, "the ops after the restart")
                        assert_exactly(self, got.ops, acks, "across the restart")
                    self.assertGreaterEqual(c.stats.subscribes, 2)
            asyncio.run(go())
        finally:
            gw.close()

    # --- retention ----------------------------------------------------------------------------

    def test_a_from_behind_the_retention_raises_feed_range_gone_with_oldest_seq(self) -> None:
        gw = support.Gateway(912, ("retention_seconds = 0",))
        try:
            gw.start()
            with Client(gw.url) as sync:
                g = support.graph_name("gone")
                gone = None
                for _ in range(300):  # retention retires applied ops as writes come
                    sync.add_edge(g, 1, support.node_id(), wait_applied=True)
                    try:
                        sync.feed(0)
                    except FeedRangeGone as e:
                        gone = e
                        break
                self.assertIsNotNone(gone, "retention retired the first ops")
                assert gone is not None
                self.assertIsInstance(gone, ProblemError)
                self.assertEqual((gone.status, gone.slug, gone.field), (410, "feed-range-gone", "from"))
                self.assertIsInstance(gone.oldest_seq, int)
                self.assertGreater(gone.oldest_seq, 1)
                # Readable from there. The feed ends at the op every shard has applied, which may not yet
                # include the oldest one (wait_ms); and with retention_seconds = 0 the writer may retire
                # that op meanwhile (a 410 again): then one more write, and its oldest op.
                oldest = gone.oldest_seq
                for tries in range(1, 6):
                    try:
                        page = sync.feed(oldest - 1, wait_ms=5000)
                    except FeedRangeGone:
                        self.assertLess(tries, 5, "the oldest op stayed readable once in five tries")
                        sync.add_edge(g, 1, support.node_id(), wait_applied=True)
                        with self.assertRaises(FeedRangeGone) as again:
                            sync.feed(0)
                        oldest = again.exception.oldest_seq
                        continue
                    self.assertTrue(page.ops and page.ops[0].seq == oldest, "readable from there")
                    break
                with self.assertRaises(FeedRangeGone):
                    next(sync.subscribe(0))
            sock, closed = support.closed_port()

            async def go() -> None:
                for ws_url in (gw.ws_url, f"ws://127.0.0.1:{closed}/v1/ws"):
                    async with AsyncClient(gw.url, ws_url=ws_url) as c:
                        with self.assertRaises(FeedRangeGone) as sub_gone:
                            async for _ in c.subscribe(0):
                                pass
                        assert gone is not None and gone.oldest_seq is not None
                        self.assertGreaterEqual(sub_gone.exception.oldest_seq or 0, gone.oldest_seq, c.transport)
            try:
                asyncio.run(go())
            finally:
                sock.close()
        finally:
            gw.close()


if __name__ == "__main__":
    unittest.main()
