"""Every data model, over the three ways to reach cairnd: the sync Client (HTTP keep-alive), the
AsyncClient on its WebSocket, and the AsyncClient's HTTP fallback (its WebSocket URL refuses
connections). The scenarios are in scenarios.py; each runs on fresh names against the real cairnd."""

from __future__ import annotations

import asyncio
import unittest

import scenarios
import support
from cairn_client import AsyncClient, Client


def _add_scenarios(cls: type) -> type:
    for fn in scenarios.ALL:
        def test(self: unittest.TestCase, fn=fn) -> None:
            self.run_scenario(fn)  # type: ignore[attr-defined]
        test.__name__ = f"test_{fn.__name__}"
        test.__doc__ = fn.__doc__
        setattr(cls, test.__name__, test)
    return cls


@_add_scenarios
class SyncClientModels(unittest.TestCase):
    def run_scenario(self, fn) -> None:
        url, _ = support.cairn_urls()
        with Client(url) as c:
            asyncio.run(fn(self, support.SyncFacade(c)))


@_add_scenarios
class AsyncClientOverWebSocket(unittest.TestCase):
    def run_scenario(self, fn) -> None:
        support.require_websockets()
        url, ws = support.cairn_urls()

        async def go() -> None:
            async with AsyncClient(url, ws_url=ws) as c:
                self.assertEqual(c.transport, "ws")
                await fn(self, c)
                self.assertEqual((c.stats.connects, c.stats.http_sends), (1, 0))
                self.assertGreater(c.stats.ws_sends, 0)
        asyncio.run(go())


@_add_scenarios
class AsyncClientOverHttpFallback(unittest.TestCase):
    def run_scenario(self, fn) -> None:
        support.require_websockets()
        url, _ = support.cairn_urls()
        sock, port = support.closed_port()

        async def go() -> None:
            async with AsyncClient(url, ws_url=f"ws://127.0.0.1:{port}/v1/ws") as c:
                self.assertEqual(c.transport, "http")
                self.assertIn("refused", c.last_error.lower())
                await fn(self, c)
                self.assertEqual((c.stats.connects, c.stats.ws_sends), (0, 0))
                self.assertGreater(c.stats.http_sends, 0)
        try:
            asyncio.run(go())
        finally:
            sock.close()


if __name__ == "__main__":
    unittest.main()
