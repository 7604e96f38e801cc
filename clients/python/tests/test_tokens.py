"""Read-your-writes tokens: Token and Ack.after parsing and validation, what ``after=`` accepts (checked
before any request), the latest token kept per gateway, and what cairnd makes of what the client sends
(one gateway; tests/gateways_across.py reads one gateway's writes through another)."""

from __future__ import annotations

import asyncio
import unittest

import support
from cairn_client import NODE_ID_MAX, Ack, AsyncClient, Client, ProblemError, Token, TransportError


class TokenParsing(unittest.TestCase):
    def test_parse_takes_node_and_seq_or_a_bare_seq(self) -> None:
        self.assertEqual(Token.parse("1:41"), Token(41, 1))
        self.assertEqual(Token.parse("0:0"), Token(0, 0))
        self.assertEqual(Token.parse(f"{NODE_ID_MAX}:18446744073709551615"), Token(2**64 - 1, 1023))
        self.assertEqual(Token.parse("41"), Token(41))
        self.assertEqual(Token.parse("1:41").after, "1:41")
        self.assertEqual(Token(41).after, "41")

    def test_parse_refuses_anything_else(self) -> None:
        for bad in ("1024:1", "1:18446744073709551616", "1:-1", "-1:5", "1:4.5", "1:", ":5", "1:2:3", "a:1",
                    "1:x", " 1:2", "1:2 ", "1:2\n", "", "gateway", "0x10:1", "1:1e3", "12345:1", "١:٢"):
            with self.assertRaises(ValueError, msg=bad):
                Token.parse(bad)
        with self.assertRaises(TypeError):
            Token.parse(41)  # type: ignore[arg-type]

    def test_the_constructor_checks_its_members(self) -> None:
        for seq, node, err in ((-1, None, ValueError), (2**64, 1, ValueError), (1, 1024, ValueError),
                               (1, -1, ValueError), ("1", None, TypeError), (1, "1", TypeError),
                               (True, None, TypeError), (1, False, TypeError)):
            with self.assertRaises(err, msg=(seq, node)):
                Token(seq, node)

    def test_tokens_of_one_node_are_ordered_and_of_two_are_not(self) -> None:
        self.assertLess(Token(3, 1), Token(5, 1))
        self.assertGreaterEqual(Token(5, 1), Token(5, 1))
        self.assertEqual(Token.latest(Token(3, 1), None, Token(5, 1), Token(4, 1)), Token(5, 1))
        self.assertEqual(Token.latest(Token(3), Token(9)), Token(9))
        self.assertIsNone(Token.latest(None, None))
        self.assertEqual(Token.latest(Token(7, 2)), Token(7, 2))
        for a, b in ((Token(3, 1), Token(5, 2)), (Token(3), Token(5, 1))):
            with self.assertRaises(ValueError):
                Token.latest(a, b)
            with self.assertRaises(ValueError):
                _ = a < b
        self.assertNotEqual(Token(5, 1), Token(5, 2))
        self.assertEqual(Token.latest_per_node(Token(41, 1), Token(7, 2), Token(40, 1), None, Token(8, 2)),
                         {1: Token(41, 1), 2: Token(8, 2)})

    def test_an_ack_carries_after_and_its_token_names_the_node(self) -> None:
        ack = Ack.from_json({"seq": 41, "after": "3:41", "ts": "7", "op_id": "9", "deduplicated": False})
        self.assertEqual((ack.after, ack.token), ("3:41", Token(41, 3)))
        batch = Ack.from_json({"first_seq": 5, "seq": 7, "count": 3, "after": "3:7", "ts": ["1", "2", "3"]})
        self.assertEqual(batch.token, Token(7, 3))
        old = Ack.from_json({"seq": 41, "ts": "7"})  # a gateway older than tokens: no after
        self.assertIsNone(old.after)
        self.assertEqual(old.token, Token(41))
        with self.assertRaises(ValueError):
            _ = Ack.from_json({"seq": 41, "after": "41"}).token  # an ack's after names its node


class AfterArguments(unittest.TestCase):
    """A bad ``after=`` is refused before any request: these clients point at a port nothing listens
    on, so a request would fail with a TransportError instead."""

    BAD = (("1024:5", ValueError), ("1:-5", ValueError), ("1:", ValueError), ("x", ValueError),
           ("3:4:5", ValueError), (-1, TypeError), (1.5, TypeError), (True, TypeError), ([1], TypeError))

    def test_sync_client(self) -> None:
        with Client("http://127.0.0.1:9", timeout=2) as c:
            for bad, err in self.BAD:
                with self.assertRaises(err, msg=repr(bad)):
                    c.count("g", 1, after=bad)
                with self.assertRaises(err, msg=repr(bad)):
                    c.get_entity("user", "00000000000000000000000000000001", after=bad)
            with self.assertRaises(TransportError):
                c.count("g", 1, after="1:5")  # a good one is sent (and finds nothing listening)

    def test_async_client(self) -> None:
        support.require_websockets()

        async def go() -> None:
            c = AsyncClient("http://127.0.0.1:9", timeout=2)
            try:
                for bad, err in self.BAD:
                    with self.assertRaises(err, msg=repr(bad)):
                        await c.count("g", 1, after=bad)
                self.assertEqual((c.stats.ws_sends, c.stats.http_sends, c.stats.connect_failures), (0, 0, 0))
            finally:
                await c.close()
        asyncio.run(go())

    def test_the_latest_token_is_kept_per_gateway(self) -> None:
        c = Client("http://127.0.0.1:9")
        for after, seq in (("1:41", 41), ("2:7", 7), ("1:40", 40), ("2:8", 8)):
            c._note_token(Ack.from_json({"seq": seq, "after": after}).token)
            if after == "2:7":
                self.assertEqual(c.last_token, Token(7, 2), "the most recent write's gateway")
            if after == "1:40":
                self.assertEqual(c.last_token, Token(41, 1), "gateway 1's latest stays 41")
        self.assertEqual(c.last_tokens, {1: Token(41, 1), 2: Token(8, 2)})
        self.assertEqual(c.last_token, Token(8, 2))
        c.close()


class AgainstCairnd(unittest.TestCase):
    def test_acks_carry_after_and_cairnd_reads_the_token(self) -> None:
        url, _ = support.cairn_urls()
        g = support.graph_name("tok")
        a = support.node_id()
        with Client(url) as c:
            ack = c.add_edge(g, a, a + 1)
            tok = ack.token
            self.assertIsNotNone(tok.node, f"the ack names its gateway: {ack.after}")
            self.assertEqual(ack.after, f"{tok.node}:{ack.seq}")
            self.assertEqual(c.last_token, tok)
            batch = c.write_edges(g, [(a, a + 2), (a, a + 3)])
            self.assertEqual(batch.after, f"{tok.node}:{batch.seq}", "a batch's after is its last op's")
            self.assertEqual(c.last_tokens, {tok.node: batch.token})

            # Every form waits for the write.
            self.assertEqual(c.get_edge(g, a, a + 1, after=ack).state, "normal")
            for after in (batch, batch.token, batch.after, batch.seq, Token(batch.seq)):
                self.assertEqual(c.count(g, a, after=after), 3, repr(after))

            # This gateway's node id with a seq it has not issued: refused as its own seq would be.
            with self.assertRaises(ProblemError) as e:
                c.count(g, a, after=f"{tok.node}:{batch.seq + 10**9}")
            self.assertEqual((e.exception.status, e.exception.field), (400, "after"))
            # Another node id: cairnd waits on that gateway's applied marks, and names it.
            other = (tok.node + 1) % (NODE_ID_MAX + 1)
            with self.assertRaises(ProblemError) as e:
                c.count(g, a, after=Token(1, other), timeout_ms=200)
            self.assertEqual((e.exception.status, e.exception.slug), (504, "not-applied-yet"))
            self.assertRegex(e.exception.detail, rf"the gateway with node id {other}\b")

    def test_read_your_writes_sessions_send_the_token(self) -> None:
        support.require_websockets()
        url, ws = support.cairn_urls()

        async def go() -> None:
            g = support.graph_name("tok")
            a = support.node_id()
            async with AsyncClient(url, ws_url=ws, read_your_writes=True) as c:
                acks = await asyncio.gather(*(c.add_edge(g, a, a + 1 + i) for i in range(20)))
                self.assertEqual(c.last_token, Token.latest(*(x.token for x in acks)))
                self.assertIsNotNone(c.last_token.node)
                self.assertEqual(await c.count(g, a), 20)  # after=last_token, sent as "<node>:<seq>"
        asyncio.run(go())


if __name__ == "__main__":
    unittest.main()
