"""Reconnect and resend: an asyncio TCP proxy sits between the AsyncClient and cairnd, and the tests cut
its connections while writes are in flight. Every write must be acknowledged exactly once in effect:
counter totals (which a write applied twice would inflate) and edge counts come out exact, and a write
whose acknowledgement was lost is answered, when sent again with its idempotency key, as deduplicated."""

from __future__ import annotations

import asyncio
import time
import unittest
import urllib.parse

import support
from cairn_client import AsyncClient, ClientClosed, RequestTimeout, Token, TransportError


class Reconnect(unittest.TestCase):
    def setUp(self) -> None:
        support.require_websockets()
        self.url, self.ws = support.cairn_urls()
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port

    def run_with_proxy(self, body) -> None:
        async def go() -> None:
            proxy = support.Proxy(self.host, self.port)
            await proxy.start()
            direct = AsyncClient(self.url, ws_url=self.ws)
            await direct.connect()
            try:
                await body(proxy, direct)
            finally:
                await direct.close()
                await proxy.stop()
        asyncio.run(go())

    async def total(self, direct: AsyncClient, track: int, start: int, after=None) -> int:
        t = await direct.counter_total("plays", start, start + 3_600_000, where={"track_id": track}, after=after)
        return t.total

    def test_writes_whose_acks_were_lost_are_resent_and_deduplicated(self) -> None:
        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            track = support.node_id()
            start = support.hour_ms(support.now_ms()) - 3_600_000
            dims = support.plays(track, "DK")
            # max_in_flight above the 200 held writes: all of them go on the wire without an answer.
            async with AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False, max_in_flight=250,
                                   timeout=support.BULK_TIMEOUT) as c:
                first = await asyncio.gather(*(c.increment("plays", dims, time=start + i) for i in range(100)))
                self.assertFalse(any(a.deduplicated for a in first))
                # cairnd now journals every write but its acknowledgements never reach the client.
                proxy.mode = "hold"
                held = [asyncio.ensure_future(c.increment("plays", dims, time=start + i)) for i in range(200)]
                await support.until_async(lambda: self._total_is(direct, track, start, 300), support.BULK_TIMEOUT,
                                          "cairnd to apply all 300 increments")
                self.assertFalse(any(t.done() for t in held), "an acknowledgement passed the held proxy")
                proxy.mode = "forward"
                self.assertEqual(proxy.cut(), 1)
                acks = await asyncio.gather(*held)
                # Sent again on the new connection with their keys: each is the original acknowledgement.
                self.assertTrue(all(a.deduplicated for a in acks), [a.deduplicated for a in acks])
                self.assertEqual(len({a.seq for a in acks}), 200)
                self.assertEqual((c.stats.connects, c.stats.disconnects, c.stats.resent), (2, 1, 200))
                self.assertEqual(c.stats.deduplicated, 200)
                # A write after all of them, then a read after it: nothing was counted twice.
                marker = await c.increment("plays", support.plays(support.node_id(), "DK"))
                self.assertEqual(await self.total(direct, track, start, after=marker), 300)
        self.run_with_proxy(body)

    async def _total_is(self, direct: AsyncClient, track: int, start: int, want: int) -> bool:
        return await self.total(direct, track, start) >= want

    def test_cuts_in_the_middle_of_a_stream_of_writes_lose_nothing_and_double_nothing(self) -> None:
        n_counts, n_edges, cuts = 800, 300, 4

        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            track = support.node_id()
            start = support.hour_ms(support.now_ms()) - 3_600_000
            g = support.graph_name("cut")
            src = support.node_id()
            async with AsyncClient(proxy.url(), ws_url=proxy.ws_url(), max_in_flight=64, http_fallback=False,
                                   timeout=support.BULK_TIMEOUT) as c:
                tasks = [asyncio.ensure_future(c.increment("plays", support.plays(track, "IS"),
                                                           delta=1 + i % 3, time=start + i))
                         for i in range(n_counts)]
                tasks += [asyncio.ensure_future(c.add_edge(g, src, support.node_id())) for _ in range(n_edges)]
                total = len(tasks)
                for k in range(1, cuts + 1):
                    answered = k * total // (cuts + 2)
                    await support.until(lambda: sum(t.done() for t in tasks) >= answered and len(c._pending) > 0,
                                        support.BULK_TIMEOUT, f"{answered} answers and more requests in flight")
                    self.assertEqual(proxy.cut(), 1)
                acks = await asyncio.gather(*tasks)
                self.assertEqual(c.stats.disconnects, cuts)
                self.assertGreater(c.stats.resent, 0)
                self.assertLessEqual(c.stats.deduplicated, c.stats.resent)
                last = Token.latest(*(a.token for a in acks))
                self.assertEqual(await self.total(direct, track, start, after=last),
                                 sum(1 + i % 3 for i in range(n_counts)))
                self.assertEqual(await direct.count(g, src, after=last), n_edges)
                self.assertEqual(await direct.count(g, src, state="removed", after=last), 0)
        self.run_with_proxy(body)

    def test_a_lost_request_without_idempotency_key_fails_instead_of_being_resent(self) -> None:
        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            async with AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False) as c:
                proxy.mode = "hold"
                # A POST without a key: cairnd may have acted on it, so the client must not send it again.
                req = asyncio.ensure_future(c.request("POST", "/v1/indexes", {"name": "x", "kind": "no_such_kind",
                                                                               "properties": []}))
                await support.until(lambda: proxy.bytes_up > 0 and len(c._pending) == 1, 10, "the request on the wire")
                proxy.mode = "forward"
                proxy.cut()
                with self.assertRaises(TransportError) as cm:
                    await req
                self.assertIn("not sent again", str(cm.exception))
                self.assertTrue(await c.livez())  # and the client goes on, reconnected
        self.run_with_proxy(body)

    def test_timeout_then_resend_with_the_same_key_is_deduplicated(self) -> None:
        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            g = support.graph_name("to")
            a, b = support.node_id(), support.node_id()
            async with AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False) as c:
                proxy.mode = "hold"
                began = time.monotonic()
                with self.assertRaises(RequestTimeout) as cm:
                    await c.count(g, a, timeout=0.3)
                self.assertLess(time.monotonic() - began, 5)  # a clear error, never a hang
                with self.assertRaises(RequestTimeout) as cm:
                    await c.add_edge(g, a, b, timeout=0.5)
                key = cm.exception.idempotency_key
                self.assertTrue(key)
                self.assertIn(key, str(cm.exception))
                await support.until_async(lambda: self._edge_seen(direct, g, a, b), 120,
                                          "the held write to be applied")
                proxy.mode = "forward"
                proxy.cut()
                again = await c.add_edge(g, a, b, idempotency_key=key)
                self.assertTrue(again.deduplicated)
                self.assertEqual(await direct.count(g, a, after=again), 1)
        self.run_with_proxy(body)

    async def _edge_seen(self, direct: AsyncClient, g: str, a: int, b: int) -> bool:
        return await direct.get_edge(g, a, b) is not None

    def test_requests_made_while_disconnected_wait_in_a_bounded_buffer(self) -> None:
        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            proxy.mode = "reject"
            g = support.graph_name("buf")
            a = support.node_id()
            c = AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False, resend_buffer_max=5,
                            reconnect_delay_max=0.2)
            try:
                waiting = [asyncio.ensure_future(c.add_edge(g, a, support.node_id(), timeout=30)) for _ in range(5)]
                await support.until(lambda: c.stats.connect_failures >= 2, 10, "two refused connection attempts")
                with self.assertRaises(RequestTimeout) as cm:
                    await c.add_edge(g, a, support.node_id(), timeout=0.3)  # a sixth: no room
                self.assertIn("resend_buffer_max", str(cm.exception))
                self.assertLessEqual(len(c._queue), 5)
                self.assertFalse(any(t.done() for t in waiting))
                proxy.mode = "forward"  # the next attempt connects; the five are sent then
                acks = await asyncio.gather(*waiting)
                self.assertEqual(c.transport, "ws")
                self.assertEqual(c.stats.http_sends, 0)
                self.assertEqual(await direct.count(g, a, after=Token.latest(*(x.token for x in acks))), 5)
            finally:
                await c.close()
        self.run_with_proxy(body)

    def test_close_waits_for_the_requests_under_way_then_fails_the_rest(self) -> None:
        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            g = support.graph_name("close")
            a = support.node_id()
            c = AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False)
            await c.connect()
            writes = [asyncio.ensure_future(c.add_edge(g, a, support.node_id())) for _ in range(50)]
            # Every write made (under way or already answered: on a fast machine some are answered
            # before the last is made), then close.
            await support.until(lambda: c._outstanding + sum(w.done() for w in writes) == 50, 10,
                                "the 50 writes to be made")
            await c.close()  # drains: every write is answered first
            acks = await asyncio.gather(*writes)
            self.assertEqual(await direct.count(g, a, after=Token.latest(*(x.token for x in acks))), 50)
            with self.assertRaises(ClientClosed):
                await c.count(g, a)

            held = AsyncClient(proxy.url(), ws_url=proxy.ws_url(), http_fallback=False)
            await held.connect()
            proxy.mode = "hold"
            read = asyncio.ensure_future(held.count(g, a))
            await support.until(lambda: len(held._pending) == 1, 10, "the read on the wire")
            began = time.monotonic()
            await held.close(drain_timeout=0.2)
            self.assertLess(time.monotonic() - began, 10)
            with self.assertRaises(ClientClosed):
                await read
        self.run_with_proxy(body)

    def test_answers_429_beyond_cairnds_in_flight_limit_are_retried(self) -> None:
        """cairnd runs at most 256 requests of a connection at once; a client allowed more gets 429 for
        the rest and sends them again after Retry-After. Applying is paused so that 300 writes with
        wait=applied stay running until it resumes."""

        async def body(proxy: support.Proxy, direct: AsyncClient) -> None:
            g = support.graph_name("busy")
            a = support.node_id()
            await direct.request("POST", "/v1/admin/apply/pause", {"all": True})
            try:
                async with AsyncClient(self.url, ws_url=self.ws, max_in_flight=300, timeout=support.BULK_TIMEOUT) as c:
                    tasks = [asyncio.ensure_future(c.add_edge(g, a, support.node_id(), wait_applied=True,
                                                              wait_timeout_ms=30000)) for _ in range(300)]
                    await support.until(lambda: c.stats.retried >= 44, support.BULK_TIMEOUT,
                                        "429 answers for the 44 over the limit")
                    self.assertFalse(any(t.done() for t in tasks))
                    await direct.request("POST", "/v1/admin/apply/resume", {"all": True})
                    acks = await asyncio.gather(*tasks)
                    self.assertEqual(await direct.count(g, a), 300)  # wait_applied: no after= needed
                    self.assertEqual(len({x.seq for x in acks}), 300)
            finally:
                await direct.request("POST", "/v1/admin/apply/resume", {"all": True})
        self.run_with_proxy(body)


if __name__ == "__main__":
    unittest.main()
