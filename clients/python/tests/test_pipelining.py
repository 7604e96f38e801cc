"""Pipelining on one WebSocket: 1,000 writes in flight at once, answers matched by id, then reads with
after= that see every one of them."""

from __future__ import annotations

import asyncio
import unittest

import support
from cairn_client import AsyncClient, Token


class Pipelining(unittest.TestCase):
    def setUp(self) -> None:
        support.require_websockets()
        self.url, self.ws = support.cairn_urls()

    def test_1000_writes_in_flight_on_one_connection_then_reads_after_them(self) -> None:
        n = 1000

        async def go() -> None:
            g = support.graph_name("pipe")
            src = support.node_id()
            dsts = [support.node_id() for _ in range(n)]
            async with AsyncClient(self.url, ws_url=self.ws, max_in_flight=200, timeout=support.BULK_TIMEOUT) as c:
                acks = await asyncio.gather(*(c.add_edge(g, src, d, position=i + 1) for i, d in enumerate(dsts)))
                # Each write was answered once, with its own journal seq (answers matched by id).
                self.assertEqual(len({a.seq for a in acks}), n)
                self.assertEqual(len({a.idempotency_key for a in acks}), n)
                self.assertFalse(any(a.deduplicated for a in acks))
                self.assertEqual(c.stats.connects, 1)
                self.assertEqual(c.stats.ws_sends, n)
                self.assertGreater(c.stats.peak_in_flight, 1)  # really pipelined
                self.assertLessEqual(c.stats.peak_in_flight, 200)  # and within max_in_flight
                last = Token.latest(*(a.token for a in acks))
                self.assertEqual(c.last_token, last)
                # Reads pipelined too: each sees every write because it waits for the latest seq.
                counts = await asyncio.gather(*(c.count(g, src, after=last) for _ in range(50)))
                self.assertEqual(counts, [n] * 50)
                edges = [e async for e in c.iter_edges(g, src, page_size=300, after=last)]
                self.assertEqual([e.destination_id for e in edges], list(reversed(dsts)))  # by position, newest first
                backs = await asyncio.gather(*(c.count(g, d, direction="backward", after=a)
                                               for d, a in zip(dsts, acks)))
                self.assertEqual(backs, [1] * n)
        asyncio.run(go())

    def test_1000_counter_increments_in_flight_count_exactly(self) -> None:
        n = 1000

        async def go() -> None:
            track = support.node_id()
            start = support.hour_ms(support.now_ms()) - 3_600_000
            async with AsyncClient(self.url, ws_url=self.ws, timeout=support.BULK_TIMEOUT) as c:
                acks = await asyncio.gather(*(c.increment("plays", support.plays(track, "NO"), delta=i % 7,
                                                          time=start + i) for i in range(n)))
                total = await c.counter_total("plays", start, start + 3_600_000, where={"track_id": track},
                                              after=c.last_token)
                self.assertEqual(total.total, sum(i % 7 for i in range(n)))
                self.assertEqual(len({a.seq for a in acks}), n)
        asyncio.run(go())

    def test_read_your_writes_session(self) -> None:
        """With read_your_writes=True a read without after= waits for the client's latest write."""

        async def go() -> None:
            g = support.graph_name("ryw")
            a = support.node_id()
            async with AsyncClient(self.url, ws_url=self.ws, read_your_writes=True) as c:
                for round_ in range(1, 6):
                    await asyncio.gather(*(c.add_edge(g, a, support.node_id()) for _ in range(20)))
                    self.assertEqual(await c.count(g, a), 20 * round_)
        asyncio.run(go())


if __name__ == "__main__":
    unittest.main()
