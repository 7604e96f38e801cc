"""TLS and bearer tokens against a cairnd started with tests/secure.toml (a TLS listener with the test
certificate of tests/tls, an admin and a read token): https and wss through an ssl context, 401 without a
token, 403 for a write with the read token, and a clear error for a certificate the client does not trust.
Run as its own suite (README: Tests), since every request of that cairnd needs a token."""

from __future__ import annotations

import asyncio
import ssl
import unittest

import support
from cairn_client import AsyncClient, Client, ProblemError, TransportError

ADMIN = "py-test-admin-token-0123456789"
READ = "py-test-read-token-0123456789"


class TlsAndTokens(unittest.TestCase):
    def setUp(self) -> None:
        support.require_websockets()
        url, ws = support.cairn_urls()
        # scripts/with-cairnd names the port; this cairnd speaks TLS on it.
        self.url = url.replace("http://", "https://")
        self.ws = ws.replace("ws://", "wss://")
        self.ssl = support.tls_context()

    def test_sync_over_https_with_tokens(self) -> None:
        g = support.graph_name("tls")
        a, b = support.node_id(), support.node_id()
        with Client(self.url, token=ADMIN, ssl=self.ssl) as c:
            ack = c.add_edge(g, a, b)
            self.assertEqual(c.count(g, a, after=ack), 1)
        with Client(self.url, token=READ, ssl=self.ssl) as reader:
            self.assertEqual(reader.count(g, a, after=ack), 1)
            with self.assertRaises(ProblemError) as cm:
                reader.add_edge(g, a, support.node_id())
            self.assertEqual((cm.exception.status, cm.exception.slug), (403, "forbidden"))
        with Client(self.url, ssl=self.ssl) as anonymous:
            with self.assertRaises(ProblemError) as cm:
                anonymous.count(g, a)
            self.assertEqual((cm.exception.status, cm.exception.slug), (401, "unauthorized"))
            self.assertTrue(anonymous.livez())  # the probes are public

    def test_async_over_wss_with_tokens(self) -> None:
        async def go() -> None:
            g = support.graph_name("wss")
            a = support.node_id()
            async with AsyncClient(self.url, token=ADMIN, ssl=self.ssl) as c:
                self.assertEqual(c.ws_url, self.ws)
                self.assertEqual(c.transport, "ws")
                acks = await asyncio.gather(*(c.add_edge(g, a, support.node_id()) for _ in range(50)))
                self.assertEqual(await c.count(g, a, after=max(x.seq for x in acks)), 50)
                self.assertEqual(c.stats.http_sends, 0)
            async with AsyncClient(self.url, token=READ, ssl=self.ssl) as reader:
                self.assertEqual(reader.transport, "ws")
                with self.assertRaises(ProblemError) as cm:
                    await reader.add_edge(g, a, 1)
                self.assertEqual(cm.exception.status, 403)
            # Without a token the upgrade itself is refused (401): the fallback gets the same 401 over HTTP.
            async with AsyncClient(self.url, ssl=self.ssl) as anonymous:
                self.assertEqual(anonymous.transport, "http")
                self.assertIn("401", anonymous.last_error)
                with self.assertRaises(ProblemError) as cm:
                    await anonymous.count(g, a)
                self.assertEqual(cm.exception.status, 401)
        asyncio.run(go())

    def test_an_untrusted_certificate_is_a_clear_error(self) -> None:
        untrusting = ssl.create_default_context()  # the system's CAs do not know the test certificate
        with Client(self.url, token=ADMIN, ssl=untrusting) as c, self.assertRaises(TransportError) as cm:
            c.livez()
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))

        async def go() -> None:
            with self.assertRaises(TransportError) as cm:
                await AsyncClient(self.url, token=ADMIN, ssl=untrusting).connect()
            self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))
        asyncio.run(go())

    def test_plain_http_to_the_tls_listener_fails_clearly(self) -> None:
        with Client(self.url.replace("https://", "http://"), token=ADMIN, timeout=5) as c:
            with self.assertRaises((TransportError, ProblemError)):
                c.livez()


if __name__ == "__main__":
    unittest.main()
