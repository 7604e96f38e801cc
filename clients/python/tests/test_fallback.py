"""The AsyncClient's HTTP fallback: when its WebSocket cannot connect (refused, or the upgrade is
refused), requests go over HTTP keep-alive with the same answers; when the WebSocket can connect
again, they go back to it."""

from __future__ import annotations

import asyncio
import time
import unittest
import urllib.parse

import support
from cairn_client import AsyncClient, Client, Query, TransportError, union


class HttpFallback(unittest.TestCase):
    def setUp(self) -> None:
        support.require_websockets()
        self.url, self.ws = support.cairn_urls()
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port

    def test_same_answers_over_websocket_fallback_and_sync(self) -> None:
        sock, closed = support.closed_port()

        async def go() -> None:
            g = support.graph_name("same")
            a = support.node_id()
            others = [support.node_id() for _ in range(5)]
            async with AsyncClient(self.url, ws_url=self.ws) as over_ws, \
                    AsyncClient(self.url, ws_url=f"ws://127.0.0.1:{closed}/v1/ws") as over_http:
                self.assertEqual((over_ws.transport, over_http.transport), ("ws", "http"))
                ack = await over_http.write_edges(g, [(a, o) for o in others])
                with Client(self.url) as sync:
                    for reads in (
                        lambda c: c.edges_page(g, a, limit=3, after=ack),
                        lambda c: c.node(g, a, after=ack),
                        lambda c: c.get_edge(g, a, others[2], after=ack),
                        lambda c: c.counts(g, [a, Query(a, "backward")], after=ack),
                        lambda c: c.set_page(g, union(Query(a), Query(others[0])), after=ack),
                    ):
                        one = await reads(over_ws)
                        two = await reads(over_http)
                        three = reads(sync)
                        self.assertEqual(one, two)
                        self.assertEqual(one, three)
                        raw = getattr(one, "raw", None)
                        if raw is not None:
                            self.assertEqual(raw, two.raw)
                self.assertEqual(over_http.stats.ws_sends, 0)
                self.assertEqual(over_ws.stats.http_sends, 0)
        try:
            asyncio.run(go())
        finally:
            sock.close()

    def test_a_refused_upgrade_falls_back_too(self) -> None:
        async def go() -> None:
            # cairnd answers an upgrade on a path that is not /v1/ws with an HTTP problem, not a WebSocket.
            async with AsyncClient(self.url, ws_url=self.url.replace("http", "ws") + "/v1/not-ws") as c:
                self.assertEqual(c.transport, "http")
                self.assertIn("HTTP 4", c.last_error)
                self.assertTrue(await c.livez())
                self.assertEqual(c.stats.http_sends, 1)
        asyncio.run(go())

    def test_back_to_websocket_when_it_can_connect_again(self) -> None:
        async def go() -> None:
            proxy = support.Proxy(self.host, self.port)
            await proxy.start()
            proxy.mode = "reject"
            g = support.graph_name("back")
            a = support.node_id()
            try:
                async with AsyncClient(self.url, ws_url=proxy.ws_url(), reconnect_delay_max=0.2) as c:
                    self.assertEqual(c.transport, "http")
                    ack = await c.add_edge(g, a, support.node_id())
                    self.assertEqual((c.stats.http_sends, c.stats.ws_sends), (1, 0))
                    proxy.mode = "forward"
                    await support.until(lambda: c.transport == "ws", 30, "the WebSocket to connect")
                    self.assertEqual(await c.count(g, a, after=ack), 1)
                    self.assertEqual((c.stats.http_sends, c.stats.ws_sends), (1, 1))
            finally:
                await proxy.stop()
        asyncio.run(go())

    def test_nothing_to_connect_to_is_a_clear_error_at_once(self) -> None:
        sock, closed = support.closed_port()

        async def go() -> None:
            began = time.monotonic()
            with self.assertRaises(TransportError) as cm:
                await AsyncClient(f"http://127.0.0.1:{closed}").connect()
            self.assertLess(time.monotonic() - began, 5)
            text = str(cm.exception)
            self.assertIn("WebSocket", text)
            self.assertIn("HTTP fallback", text)
            self.assertIn("refused", text.lower())
        try:
            asyncio.run(go())
        finally:
            sock.close()


if __name__ == "__main__":
    unittest.main()
