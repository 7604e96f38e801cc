"""The sync Client's transport: HTTP/1.1 keep-alive through one connection, shared by threads, a
keep-alive connection that the server closed replaced transparently, clear errors and timeouts."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
import urllib.parse

import support
from cairn_client import Client, RequestTimeout, TransportError


class SyncTransport(unittest.TestCase):
    def setUp(self) -> None:
        self.url, _ = support.cairn_urls()
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port
        # The proxy runs on its own event loop in a thread; the blocking client talks to it.
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = support.Proxy(self.host, self.port)
        self.on_loop(self.proxy.start())

    def tearDown(self) -> None:
        self.on_loop(self.proxy.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def on_loop(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def cut(self) -> int:
        async def cut() -> int:
            return self.proxy.cut()
        return self.on_loop(cut())

    def test_keep_alive_one_connection_for_many_requests(self) -> None:
        g = support.graph_name("ka")
        a = support.node_id()
        with Client(self.proxy.url()) as c:
            for _ in range(30):
                ack = c.add_edge(g, a, support.node_id())
            self.assertEqual(c.count(g, a, after=ack), 30)
        self.assertEqual(self.proxy.accepted, 1)

    def test_threads_share_one_client(self) -> None:
        g = support.graph_name("thr")
        a = support.node_id()
        acks = []
        lock = threading.Lock()
        with Client(self.proxy.url(), pool_size=8) as c:
            def work() -> None:
                for _ in range(25):
                    ack = c.add_edge(g, a, support.node_id())
                    with lock:
                        acks.append(ack)
            threads = [threading.Thread(target=work) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            self.assertEqual(len(acks), 200)
            self.assertEqual(c.last_token.seq, max(x.seq for x in acks))
            self.assertEqual(c.count(g, a, after=c.last_token), 200)
        self.assertLessEqual(self.proxy.accepted, 8)  # one keep-alive connection per thread at most

    def test_a_keep_alive_connection_closed_by_the_server_is_replaced(self) -> None:
        g = support.graph_name("stale")
        a = support.node_id()
        with Client(self.proxy.url()) as c:
            c.add_edge(g, a, support.node_id())
            self.assertEqual(self.cut(), 1)  # as cairnd closes an idle keep-alive connection
            ack = c.add_edge(g, a, support.node_id())  # sent again on a new connection, same key
            self.assertFalse(ack.deduplicated)
            self.assertEqual(c.count(g, a, after=ack), 2)
        self.assertEqual(self.proxy.accepted, 2)

    def test_timeout_is_an_error_with_the_write_key(self) -> None:
        self.proxy.mode = "hold"
        g = support.graph_name("hold")
        with Client(self.proxy.url(), timeout=0.3) as c:
            began = time.monotonic()
            with self.assertRaises(RequestTimeout) as cm:
                c.add_edge(g, 1, 2)
            self.assertLess(time.monotonic() - began, 5)
            self.assertTrue(cm.exception.idempotency_key.startswith("py-"))

    def test_refused_is_a_clear_error_at_once(self) -> None:
        sock, closed = support.closed_port()
        try:
            began = time.monotonic()
            with Client(f"http://127.0.0.1:{closed}") as c, self.assertRaises(TransportError) as cm:
                c.livez()
            self.assertLess(time.monotonic() - began, 5)
            self.assertIn("refused", str(cm.exception).lower())
        finally:
            sock.close()


if __name__ == "__main__":
    unittest.main()
