"""Shared pieces of the client's tests: the cairnd under test, unique names, a TCP proxy that a test can
cut, and a facade that gives the sync Client the AsyncClient's awaitable face so that one scenario
checks both.

The tests run against a real cairnd (scripts/with-cairnd exports CAIRN_URL and CAIRN_WS_URL); without
one they fail, never skip.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import random
import ssl
import sys
import time
import uuid
from typing import Any, Awaitable, Callable, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # clients/python
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


# The per-request timeout of the tests that put hundreds of requests in flight at once: a call's timeout
# counts its time waiting for a slot, and on a loaded 2-core machine cairnd journals ~50 writes/s.
BULK_TIMEOUT = 300.0


def cairn_urls() -> Tuple[str, str]:
    """CAIRN_URL and CAIRN_WS_URL of the cairnd under test; an AssertionError (a failure) without them."""
    url = os.environ.get("CAIRN_URL")
    ws = os.environ.get("CAIRN_WS_URL")
    if not url or not ws:
        raise AssertionError("CAIRN_URL and CAIRN_WS_URL are not set: run the tests under scripts/with-cairnd "
                             "(see clients/python/README.md)")
    return url, ws


def require_websockets() -> None:
    try:
        importlib.import_module("websockets")
    except ImportError as e:
        raise AssertionError("the websockets package is missing (Debian: apt-get install python3-websockets); "
                             "run the tests with /usr/bin/python3") from e


def graph_name(prefix: str = "g") -> str:
    """A graph name no other test uses (1 to 32 of A-Z a-z 0-9 _)."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def node_id() -> int:
    """A random 64-bit id above 2^53, which a double could not hold: ids must stay exact ints."""
    return random.getrandbits(62) | (1 << 62)


def plays(track_id: int, country: str, owner_id: int = 7, app: str = "py-test") -> dict:
    """The dimensions of an increment of the metric ``plays`` (tests/cairn.toml)."""
    return {"owner_id": owner_id, "track_id": track_id, "country": country, "app": app}


def hour_ms(t_ms: int) -> int:
    return t_ms - t_ms % 3_600_000


def day_ms(t_ms: int) -> int:
    return t_ms - t_ms % 86_400_000


def now_ms() -> int:
    return int(time.time() * 1000)


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    """Waits (polling the event loop) until cond() holds; an AssertionError naming ``what`` past timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.01)


async def until_async(cond: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.02)


def tls_context() -> ssl.SSLContext:
    """Trusts the throwaway certificate of tests/tls (secure_*.py)."""
    return ssl.create_default_context(cafile=os.path.join(HERE, "tls", "server.pem"))


class Proxy:
    """An asyncio TCP proxy between a client and cairnd that a test can cut.

    ``mode``: ``forward`` (both ways), ``hold`` (requests reach cairnd, its answers are dropped: writes
    get journaled without their acknowledgement reaching the client) or ``reject`` (new connections are
    closed at once, so a WebSocket cannot connect). ``cut()`` aborts every open connection.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.mode = "forward"
        self.accepted = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self._server: Optional[asyncio.AbstractServer] = None
        self._transports: Set[asyncio.BaseTransport] = set()
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self.listen_port = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]
        return self.listen_port

    def url(self) -> str:
        return f"http://127.0.0.1:{self.listen_port}"

    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.listen_port}/v1/ws"

    @property
    def open_connections(self) -> int:
        return len(self._transports) // 2

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.mode == "reject":
            cwriter.transport.abort()
            return
        try:
            sreader, swriter = await asyncio.open_connection(self.host, self.port)
        except OSError:
            cwriter.transport.abort()
            return
        pair = [cwriter.transport, swriter.transport]
        self._transports.update(pair)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool) -> None:
            try:
                while True:
                    data = await src.read(65536)
                    if not data:
                        break
                    if up:
                        self.bytes_up += len(data)
                    else:
                        self.bytes_down += len(data)
                        if self.mode == "hold":
                            continue
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass
            finally:
                for t in pair:
                    t.abort()
                    self._transports.discard(t)

        for coro in (pump(creader, swriter, True), pump(sreader, cwriter, False)):
            task = asyncio.get_running_loop().create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def cut(self) -> int:
        """Aborts every open connection (both sides); returns how many client connections it cut."""
        n = self.open_connections
        for t in list(self._transports):
            t.abort()
        self._transports.clear()
        return n

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


class SyncFacade:
    """The sync Client behind the AsyncClient's face: each method is awaitable, each ``iter_*`` an async
    iterator. The calls still block (these tests need no concurrency from the sync client)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr
        if name.startswith("iter_"):
            def make_iter(*a: Any, **k: Any) -> Any:
                gen = attr(*a, **k)

                async def agen() -> Any:
                    for x in gen:
                        yield x
                return agen()
            return make_iter

        async def call(*a: Any, **k: Any) -> Any:
            return attr(*a, **k)
        return call


async def collect(ait: Any) -> List[Any]:
    return [x async for x in ait]


def closed_port() -> Tuple[Any, int]:
    """A loopback port that refuses connections: bound, never listening (keep the socket while in use)."""
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    return s, s.getsockname()[1]


class Gateway:
    """A second cairnd a test starts and stops itself: on the shards and database of the cairnd under test
    (scripts/with-cairnd's CAIRN_CONFIG), with a node id of its own, a journal in a temporary folder and
    extra ``[journal]`` lines (``retention_seconds = 0``, say). ``stop()`` sends SIGTERM and waits;
    ``start()`` again reuses the journal and the port, as a restart does. The binary is
    ``$CAIRN_BUILD_DIR/apps/cairnd`` (scripts/test exports it), else the repository's build/ci."""

    def __init__(self, node_id: int, journal: Tuple[str, ...] = ()) -> None:
        import tempfile

        self.node_id = node_id
        self.journal = journal
        self.port = 0
        self.proc: Any = None
        self.dir = tempfile.mkdtemp(prefix="cairn-py-gateway-")
        self.config = os.path.join(self.dir, "cairn.toml")
        self.log_path = os.path.join(self.dir, "cairnd.log")
        base = os.environ.get("CAIRN_CONFIG")
        if not base:
            raise AssertionError("CAIRN_CONFIG is not set: run the tests under scripts/with-cairnd")
        import re

        with open(base, encoding="utf-8") as f:
            text = f.read()
        if not re.search(r"^node_id = \d+$", text, re.M) or not re.search(r'^\[journal\]\npath = ".*"$', text, re.M):
            raise AssertionError(f"{base} does not look like scripts/with-cairnd's config (node_id, [journal] path)")
        text = re.sub(r"^node_id = \d+$", f"node_id = {node_id}", text, count=1, flags=re.M)
        journal_lines = "\n".join(["[journal]", f'path = "{os.path.join(self.dir, "journal")}"', *journal])
        text = re.sub(r'^\[journal\]\npath = ".*"$', lambda _: journal_lines, text, count=1, flags=re.M)
        with open(self.config, "w", encoding="utf-8") as f:
            f.write(text)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/ws"

    @staticmethod
    def binary() -> str:
        build = os.environ.get("CAIRN_BUILD_DIR") or os.path.join(ROOT, "..", "..", "build", "ci")
        path = os.path.join(build, "apps", "cairnd")
        if not os.access(path, os.X_OK):
            raise AssertionError(f"{path} not found: set CAIRN_BUILD_DIR to cairnd's build folder")
        return path

    def start(self) -> None:
        """Starts cairnd (the first time on a free port, then on the same one); returns once it listens."""
        import re
        import subprocess

        args = [self.binary(), "--config", self.config]
        if self.port:
            args += ["--port", str(self.port)]
        with open(self.log_path, "w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            m = re.search(r"cairnd listening on [^ ]*:(\d+) ", text)
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError(f"cairnd (node id {self.node_id}) did not listen:\n{text[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> Optional[int]:
        """SIGTERM; the exit code once it exited (SIGKILL after 30 s)."""
        import subprocess

        proc, self.proc = self.proc, None
        if proc is None:
            return None
        proc.terminate()
        try:
            return proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def close(self) -> None:
        import shutil

        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
