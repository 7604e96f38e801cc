"""One scenario per data model, written once against the AsyncClient's face and run by test_models.py
over the sync Client (HTTP keep-alive), the AsyncClient (WebSocket) and the AsyncClient's HTTP fallback.
Every expected value follows from the writes the scenario itself makes, on names no other test uses.
"""

from __future__ import annotations

import unittest
import uuid
from typing import Any

import support
from cairn_client import (
    Ack, CellWrite, Edge, EdgeWrite, Increment, ProblemError, Query, Token, difference, intersect, union,
)


async def edges(t: unittest.TestCase, c: Any) -> None:
    g = support.graph_name()
    a, b, x, d = (support.node_id() for _ in range(4))

    ack1 = await c.add_edge(g, a, b, position=10)
    t.assertIsInstance(ack1, Ack)
    t.assertFalse(ack1.deduplicated)
    t.assertEqual((ack1.count, ack1.first_seq, len(ack1.ts)), (1, ack1.seq, 1))
    t.assertIsInstance(ack1.op_id, int)
    t.assertIsInstance(ack1.ts[0], int)
    ack2 = await c.write_edges(g, [EdgeWrite(a, x, position=20), (a, d),
                                   {"source_id": b, "destination_id": a, "position": 5}])
    t.assertEqual(ack2.count, 3)
    t.assertEqual(ack2.first_seq, ack2.seq - 2)
    t.assertGreater(ack2.seq, ack1.seq)
    t.assertEqual(c.last_token, ack2.token)

    e = await c.get_edge(g, a, b, after=ack2)
    t.assertIsInstance(e, Edge)
    t.assertEqual((e.graph, e.source_id, e.destination_id, e.state, e.position), (g, a, b, "normal", 10))
    t.assertEqual(e.ts, ack1.ts[0])  # the ts of the write that made it, exact (a 64-bit int)
    t.assertIsNone(await c.get_edge(g, b, d, after=ack2))
    got = await c.get_edges(g, [(a, x), (d, a), (b, a)], after=ack2)
    t.assertEqual([None if e is None else (e.source_id, e.destination_id, e.position) for e in got],
                  [(a, x, 20), None, (b, a, 5)])
    t.assertTrue(await c.contains(g, a, b, after=ack2))
    t.assertFalse(await c.contains(g, b, d, after=ack2))

    t.assertEqual(await c.count(g, a, after=ack2), 3)
    t.assertEqual(await c.count(g, a, direction="backward", after=ack2), 1)
    t.assertEqual(await c.counts(g, [Query(a), Query(a, "backward"), b, {"node_id": d, "direction": "backward"}],
                                 after=ack2), [3, 1, 1, 1])

    page = await c.edges_page(g, a, limit=2, after=ack2)
    # Newest first: d was written with the write's time (ms) as its position, above 20 and 10.
    t.assertEqual([e.destination_id for e in page.edges], [d, x])
    t.assertTrue(all(e.source_id == a and e.graph == g for e in page.edges))
    t.assertIsNotNone(page.next_cursor)
    t.assertIsNone(page.prev_cursor)
    page2 = await c.edges_page(g, a, limit=2, cursor=page.next_cursor)
    t.assertEqual([e.destination_id for e in page2.edges], [b])
    t.assertIsNone(page2.next_cursor)
    t.assertEqual([e.destination_id for e in await support.collect(c.iter_edges(g, a, page_size=1))], [d, x, b])
    back = await c.edges_page(g, a, direction="backward", after=ack2)
    t.assertEqual([(e.source_id, e.destination_id) for e in back.edges], [(b, a)])
    among = await c.edges_among(g, a, [b, d, support.node_id()], after=ack2)
    t.assertEqual(sorted(e.destination_id for e in among.edges), sorted([b, d]))

    ack3 = await c.archive_edge(g, a, d)
    t.assertEqual(await c.count(g, a, after=ack3), 2)
    t.assertEqual(await c.count(g, a, state="archived", after=ack3), 1)
    both = await c.edges_page(g, a, state=["normal", "archived"], after=ack3)
    t.assertEqual({(e.destination_id, e.state) for e in both.edges}, {(d, "archived"), (x, "normal"), (b, "normal")})
    await c.remove_edge(g, a, x)
    ack4 = await c.negate_edge(g, a, b)
    t.assertTrue(await c.contains(g, a, b, after=ack4))  # negative is present, as in FlockDB
    t.assertFalse(await c.contains(g, a, x, after=ack4))
    t.assertEqual((await c.get_edge(g, a, b, after=ack4)).state, "negative")
    rec = await c.node(g, a, after=ack4)
    t.assertTrue(rec.known)
    t.assertEqual((rec.graph, rec.node_id), (g, a))
    t.assertEqual(rec.forward.counts, {"normal": 0, "removed": 1, "archived": 1, "negative": 1})
    t.assertEqual(rec.backward.counts["normal"], 1)
    unknown = support.node_id()
    recs = await c.nodes(g, [a, unknown], after=ack4)
    t.assertEqual([(r.node_id, r.known) for r in recs], [(a, True), (unknown, False)])

    # Node actions: put b's outgoing edges on ice, then restore them.
    ack5 = await c.archive_node(g, b, direction="forward")
    t.assertEqual(await c.count(g, b, after=ack5), 0)
    t.assertEqual(await c.count(g, b, state="archived", after=ack5), 1)
    rec_b = await c.node(g, b, after=ack5)
    t.assertEqual((rec_b.forward.state, rec_b.backward.state), ("archived", "normal"))
    t.assertEqual(rec_b.forward.ts, ack5.ts[0])
    ack6 = await c.restore_node(g, b, wait_applied=True)
    t.assertEqual(await c.count(g, b), 1)  # wait_applied: visible without after=
    t.assertEqual((await c.node(g, b, after=ack6)).forward.state, "normal")


async def sets(t: unittest.TestCase, c: Any) -> None:
    g = support.graph_name("s")
    p, q = support.node_id(), support.node_id()
    common = sorted(support.node_id() for _ in range(3))
    only_p, only_q = support.node_id(), support.node_id()
    writes = [(p, n) for n in common + [only_p]] + [(q, n) for n in common + [only_q]]
    ack = await c.write_edges(g, writes)
    both = intersect(Query(p), Query(q))
    page = await c.set_page(g, both, after=ack)
    t.assertEqual(page.ids, common)
    t.assertEqual((page.op, page.order, page.next_cursor), ("intersect", "asc", None))
    t.assertEqual(await c.set_count(g, union(Query(p), Query(q)), after=ack), 5)
    t.assertEqual(await c.set_page(g, difference(Query(p), Query(q)), after=ack), await c.set_page(
        g, {"op": "difference", "queries": [{"node_id": p}, {"node_id": q}]}, after=ack))
    t.assertEqual((await c.set_page(g, difference(Query(p), Query(q)), after=ack)).ids, [only_p])
    t.assertEqual(await support.collect(c.iter_set(g, union(Query(p), Query(q)), order="desc", page_size=2, after=ack)),
                  sorted(common + [only_p, only_q], reverse=True))
    nested = difference(union(Query(p), Query(q)), intersect(Query(p), Query(q)))
    t.assertEqual((await c.set_page(g, nested, after=ack)).ids, sorted([only_p, only_q]))


async def entities(t: unittest.TestCase, c: Any) -> None:
    index = "py_" + uuid.uuid4().hex[:12]
    made = await c.create_index(index, [{"name": "user_id", "type": "id"}], kind="entry")
    t.assertEqual((made["name"], made["kind"]), (index, "entry"))
    t.assertIn(index, [i["name"] for i in await c.list_indexes()])
    user = uuid.uuid4().hex
    e1, e2 = uuid.uuid4(), uuid.uuid4().hex
    a1 = await c.put_entity("entry", e1, {"user_id": user, "title": "one", "n": 2 ** 62 + 1})
    a2 = await c.put_entity("entry", e2, {"user_id": user, "title": "two"})
    got = await c.get_entity("entry", e1, after=a2)
    t.assertEqual((got.kind, got.id, got.body["title"], got.body["n"]), ("entry", str(e1), "one", 2 ** 62 + 1))
    t.assertEqual(got.ts, a1.ts[0])
    page = await c.query_entities("entry", index, {"user_id": user}, after=a2)
    t.assertEqual(sorted(e.body["title"] for e in page.entities), ["one", "two"])
    t.assertEqual((page.kind, page.index, page.next_cursor), ("entry", index, None))
    t.assertEqual(sorted(e.body["title"] for e in await support.collect(
        c.iter_entities("entry", index, {"user_id": user}, page_size=1, after=a2))), ["one", "two"])
    d = await c.delete_entity("entry", e1)
    t.assertIsNone(await c.get_entity("entry", e1, after=d))
    page = await c.query_entities("entry", index, {"user_id": user}, after=d)
    t.assertEqual([e.body["title"] for e in page.entities], ["two"])
    progress = await c.index_progress(index)
    t.assertEqual(progress["index"], index)
    await c.drop_index(index)
    t.assertNotIn(index, [i["name"] for i in await c.list_indexes()])


async def cells(t: unittest.TestCase, c: Any) -> None:
    row = uuid.uuid4()
    company = uuid.uuid4().hex
    w1 = await c.write_cell("users", row, "BASE", 1, {"name": "alice"})
    w2 = await c.write_cells("users", [CellWrite(str(row), "BASE", 2, {"name": "alice", "company_id": company}),
                                       {"row_key": row.hex, "column": "EXTRA", "ref_key": 7, "body": {"k": [1, 2]}}])
    t.assertEqual(w2.count, 2)
    latest = await c.get_cell("users", row, "BASE", after=w2)
    t.assertEqual((latest.table, latest.row_key, latest.column, latest.ref_key), ("users", str(row), "BASE", 2))
    first = await c.get_cell("users", row, "BASE", 1, after=w2)
    t.assertEqual((first.body, first.ts), ({"name": "alice"}, w1.ts[0]))
    t.assertIsNone(await c.get_cell("users", row, "NOPE", after=w2))
    t.assertIsNone(await c.get_cell("users", row, "BASE", 3, after=w2))
    versions = await c.cell_versions("users", row, "BASE", after=w2)
    t.assertEqual([v.ref_key for v in versions.cells], [2, 1])
    t.assertEqual([v.ref_key for v in await support.collect(
        c.iter_cell_versions("users", row, "BASE", page_size=1, after=w2))], [2, 1])
    r = await c.get_row("users", row, after=w2)
    t.assertEqual(sorted((x.column, x.ref_key) for x in r.cells), [("BASE", 2), ("EXTRA", 7)])
    # The same cell again with the same body changes nothing; with another body it is refused.
    await c.write_cell("users", row, "BASE", 1, {"name": "alice"})
    with t.assertRaises(ProblemError) as cm:
        await c.write_cell("users", row, "BASE", 1, {"name": "mallory"})
    t.assertEqual((cm.exception.status, cm.exception.slug), (409, "cell-exists"))

    index = "py_" + uuid.uuid4().hex[:12]
    await c.create_index(index, [{"name": "company_id", "type": "id"}], table="users", column="BASE")
    w3 = await c.write_cell("users", row, "BASE", 3, {"name": "alice", "company_id": company})
    found = await c.query_cells("users", index, {"company_id": company}, after=w3)
    t.assertEqual([(x.row_key, x.ref_key) for x in found.cells], [(str(row), 3)])
    await c.drop_index(index)


async def counters(t: unittest.TestCase, c: Any) -> None:
    track = support.node_id()
    start = support.hour_ms(support.now_ms()) - 2 * 3_600_000  # two whole hours ago
    ack = await c.increments("plays", [Increment(support.plays(track, "DE"), 3, start + 1_000),
                                       {"dimensions": support.plays(track, "FR"), "delta": 1,
                                        "time": start + 3_600_000 + 5}])
    ack_b = await c.increment("plays", support.plays(track, "DE"), delta=2, time=start + 2_000)
    after = Token.latest(ack.token, ack_b.token)
    total = await c.counter_total("plays", start, start + 2 * 3_600_000, where={"track_id": track},
                                  granularity="hour", after=after)
    t.assertEqual((total.metric, total.granularity, total.total), ("plays", "hour", 6))
    series = await c.counter_series("plays", start - 3_600_000, start + 2 * 3_600_000, where={"track_id": track},
                                    granularity="hour", after=after)
    t.assertEqual([(p.time_ms, p.count) for p in series.points],
                  [(start - 3_600_000, 0), (start, 5), (start + 3_600_000, 1)])
    t.assertEqual(series.total, 6)
    d0 = support.day_ms(start)
    d1 = support.day_ms(start + 3_600_000) + 86_400_000
    top = await c.counter_top("plays", "country", d0, d1, where={"track_id": track}, n=10,
                              compare_start=d0 - (d1 - d0), compare_end=d0, after=after)
    t.assertEqual([(r.value, r.count, r.previous_count) for r in top.rows], [("DE", 5, 0), ("FR", 1, 0)])
    t.assertEqual(top.total, 6)
    metrics = await c.counter_metrics()
    t.assertIn("plays", str(metrics))


async def errors(t: unittest.TestCase, c: Any) -> None:
    g = support.graph_name("e")
    with t.assertRaises(ProblemError) as cm:
        await c.edges_page(g, 12, limit=0)
    p = cm.exception
    t.assertEqual((p.status, p.slug, p.field, p.title), (400, "invalid-field", "limit", "Invalid request"))
    t.assertTrue(p.type.startswith("https://"))
    t.assertIn("limit", p.detail)
    t.assertEqual(p.problem["status"], 400)
    with t.assertRaises(ProblemError) as cm:
        await c.get_entity("no_such_kind", uuid.uuid4())  # an unknown kind is an error, not "missing"
    t.assertEqual((cm.exception.status, cm.exception.slug), (404, "unknown-kind"))
    with t.assertRaises(ProblemError) as cm:
        await c.write_edge(g, 1, 2, "sideways")
    t.assertEqual((cm.exception.status, cm.exception.field), (400, "state"))
    with t.assertRaises(ProblemError) as cm:
        await c.count(g, 1, after=(1 << 62))  # a seq this gateway has not issued
    t.assertEqual((cm.exception.status, cm.exception.field), (400, "after"))
    with t.assertRaises(ProblemError) as cm:
        await c.increment("plays", {"track_id": 1, "owner_id": 2, "app": "x"})  # country missing
    t.assertEqual((cm.exception.status, cm.exception.field), (400, "increments[0].dimensions.country"))


async def idempotency(t: unittest.TestCase, c: Any) -> None:
    """A write sent again with the same key is answered with the original acknowledgement."""
    track = support.node_id()
    start = support.hour_ms(support.now_ms()) - 3_600_000
    key = "py-test-" + uuid.uuid4().hex
    first = await c.increment("plays", support.plays(track, "SE"), time=start, idempotency_key=key)
    again = await c.increment("plays", support.plays(track, "SE"), time=start, idempotency_key=key)
    t.assertFalse(first.deduplicated)
    t.assertTrue(again.deduplicated)
    t.assertEqual((again.seq, again.ts, again.idempotency_key), (first.seq, first.ts, key))
    total = await c.counter_total("plays", start, start + 3_600_000, where={"track_id": track}, after=again)
    t.assertEqual(total.total, 1)


ALL = [edges, sets, entities, cells, counters, errors, idempotency]
