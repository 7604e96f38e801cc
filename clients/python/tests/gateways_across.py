"""Read-your-writes across gateways: two cairnd on the same shards, A (CAIRN_OUTER_URL, started with
applying paused by tests/gateways_paused.toml) and B (CAIRN_URL). A write acknowledged by A is read through
B with A's Ack as ``after=``: while A applies nothing, B's read fails with a 504 ``not-applied-yet``
ProblemError naming A's node id; once A applies, B's read sees the write. Sync and async faces.

Not part of the default discovery (its name does not start with test_): run it under two nested
scripts/with-cairnd as clients/python/README.md says.
"""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid
from typing import Any, Dict, Tuple

import support
from cairn_client import AsyncClient, Client, ProblemError, Token


def outer_url() -> str:
    url = os.environ.get("CAIRN_OUTER_URL")
    if not url:
        raise AssertionError("CAIRN_OUTER_URL is not set: run this suite under two nested scripts/with-cairnd, the "
                             "outer one with --toml tests/gateways_paused.toml (see clients/python/README.md)")
    return url


def self_node(c: Client) -> Tuple[int, Dict[str, Any]]:
    """The node id of the gateway c talks to, from its GET /v1/admin/status, and that status."""
    status = c.request("GET", "/v1/admin/status")
    gateways = status.get("gateways")
    if not isinstance(gateways, list):
        raise AssertionError(f"status lists no gateways: {status.get('gateways_error')}")
    mine = [g["node_id"] for g in gateways if g.get("self")]
    if len(mine) != 1:
        raise AssertionError(f"not one gateway is self: {gateways}")
    return mine[0], status


class AcrossGateways(unittest.TestCase):
    """The tests run in name order (unittest sorts them): test_1 finds A paused, test_2 resumes it."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.url_a = outer_url()
        cls.url_b, cls.ws_b = support.cairn_urls()
        support.require_websockets()
        cls.a = Client(cls.url_a)
        cls.b = Client(cls.url_b)
        cls.node_a, status_a = self_node(cls.a)
        cls.node_b, _ = self_node(cls.b)
        if cls.node_a == cls.node_b:
            raise AssertionError("two gateways need two node ids")
        if sorted(g["node_id"] for g in status_a["gateways"]) != sorted((cls.node_a, cls.node_b)):
            raise AssertionError(f"status lists other gateways: {status_a['gateways']}")
        if not all(s["paused"] for s in status_a["shards"]):
            raise AssertionError("gateway A must start with applying paused (the outer with-cairnd needs "
                                 "--toml tests/gateways_paused.toml)")
        cls.graph = support.graph_name("gw")
        cls.src = support.node_id()
        cls.held = None

    @classmethod
    def tearDownClass(cls) -> None:
        cls.a.close()
        cls.b.close()

    def test_1_while_a_applies_nothing_b_times_out_naming_a(self) -> None:
        g, s = self.graph, self.src
        held = self.a.add_edge(g, s, s + 1)
        type(self).held = held
        self.assertEqual(held.token, Token(held.seq, self.node_a), "the ack names the gateway that took it")
        self.assertEqual(held.after, f"{self.node_a}:{held.seq}")
        self.assertIsNone(self.b.get_edge(g, s, s + 1), "without after, B reads what the shards hold")

        def check(e: ProblemError) -> None:
            self.assertEqual((e.status, e.slug), (504, "not-applied-yet"))
            self.assertRegex(e.detail, rf"by the gateway with node id {self.node_a}\b")
            self.assertEqual(e.problem["seq"], held.seq)
            self.assertEqual(len(e.problem["shards"]), 1, "the edge's shard is behind")

        for after in (held, held.token, held.after):
            with self.assertRaises(ProblemError) as e:
                self.b.get_edge(g, s, s + 1, after=after, timeout_ms=300)
            check(e.exception)

        async def over_websocket() -> None:
            async with AsyncClient(self.url_b, ws_url=self.ws_b) as c:
                with self.assertRaises(ProblemError) as e:
                    await c.count(g, s, after=held, timeout_ms=300)
                check(e.exception)
                self.assertEqual(c.transport, "ws")
        asyncio.run(over_websocket())

        # A bare seq names a write of the gateway that reads: B has journaled nothing, so it refuses it.
        with self.assertRaises(ProblemError) as e:
            self.b.count(g, s, after=held.seq)
        self.assertEqual((e.exception.status, e.exception.field), (400, "after"))

    def test_2_once_a_applies_b_sees_the_write(self) -> None:
        held = self.held
        if held is None:
            raise AssertionError("test_1 did not run first")
        resumed = self.a.request("POST", "/v1/admin/apply/resume", {"all": True})
        self.assertFalse(any(s["paused"] for s in resumed["shards"]))
        e = self.b.get_edge(self.graph, self.src, self.src + 1, after=held, timeout_ms=10_000)
        self.assertIsNotNone(e)
        self.assertEqual((e.state, e.ts), ("normal", held.ts[0]))
        self.assertEqual(self.b.count(self.graph, self.src, after=held.after), 1)

    def test_3_writes_through_a_read_through_b_at_once(self) -> None:
        g, s = self.graph, self.src + 100

        async def go() -> None:
            async with AsyncClient(self.url_a, timeout=support.BULK_TIMEOUT) as a, \
                    AsyncClient(self.url_b, ws_url=self.ws_b) as b:
                acks = await asyncio.gather(*(a.add_edge(g, s, s + 1 + i) for i in range(50)))
                last = Token.latest(*(x.token for x in acks))
                self.assertEqual(last, Token(max(x.seq for x in acks), self.node_a))
                self.assertEqual(a.last_token, last)
                self.assertEqual(a.last_tokens, {self.node_a: last})
                self.assertEqual(await b.count(g, s, after=a.last_token), 50)
                # Another model: an entity put through A, read through B.
                eid = uuid.uuid4()
                put = await a.put_entity("user", eid, {"name": "Ada"})
                got = await b.get_entity("user", eid, after=put)
                self.assertIsNotNone(got)
                self.assertEqual(got.body, {"name": "Ada"})
        asyncio.run(go())

    def test_4_tokens_of_two_gateways(self) -> None:
        """Writes through both gateways: the latest token of each; a read names one and sees its writes."""
        g, s = self.graph, self.src + 200
        acks = [(self.a if i % 2 else self.b).add_edge(g, s, s + 1 + i) for i in range(6)]
        by_node = Token.latest_per_node(*(x.token for x in acks))
        self.assertEqual(by_node, {self.node_a: acks[5].token, self.node_b: acks[4].token})
        with self.assertRaises(ValueError):
            Token.latest(by_node[self.node_a], by_node[self.node_b])
        # Through B after A's token: A's three writes at least; through A after B's: B's, and A's
        # were applied already.
        self.assertGreaterEqual(self.b.count(g, s, after=by_node[self.node_a]), 3)
        self.assertEqual(self.a.count(g, s, after=by_node[self.node_b]), 6)
        # Each client keeps its own gateway's latest.
        self.assertEqual(self.b.last_tokens[self.node_b], acks[4].token)
        self.assertEqual(self.a.last_token, acks[5].token)

if __name__ == "__main__":
    unittest.main()
