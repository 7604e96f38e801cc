"""The Python examples of docs/clients/python.md run as written, in order, in one Python session against
the cairnd under test, and print what the page says after each ``# ->`` (``...`` matches anything).
The graph name of the examples is replaced by a fresh one, so that other tests' edges do not mix in. A block
right after ``<!-- doctest: skip (REASON) -->`` (scripts/doctest's marker) is not run: one that needs two
gateways, for instance (tests/gateways_across.py runs that exchange)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
import uuid

import support

DOC = os.path.join(support.ROOT, "..", "..", "docs", "clients", "python.md")
BLOCK = re.compile(r"(<!-- doctest: skip \([^)\n]+\) -->\n\s*)?```python\n(.*?)```", re.S)


class Docs(unittest.TestCase):
    def test_the_examples_print_what_the_page_says(self) -> None:
        url, _ = support.cairn_urls()
        support.require_websockets()
        with open(DOC, encoding="utf-8") as f:
            found = BLOCK.findall(f.read())
        blocks = [code for skip, code in found if not skip]
        self.assertGreaterEqual(len(blocks), 8)
        self.assertLessEqual(len(found) - len(blocks), 2, "most examples run")
        graph = "follows_" + uuid.uuid4().hex[:12]
        program, expected = [], []
        for i, code in enumerate(blocks):
            program.append(f"print('@@ block {i}')")
            program.append(code.replace("http://127.0.0.1:8080", url).replace('"follows"', f'"{graph}"'))
            expected.append(f"@@ block {i}")
            expected += [line[len("# -> "):].replace("'follows'", f"'{graph}'")
                         for line in code.splitlines() if line.startswith("# -> ")]
        run = subprocess.run([sys.executable, "-c", "\n".join(program)], cwd=support.ROOT,
                             env=dict(os.environ, PYTHONPATH=support.ROOT), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        printed = run.stdout.splitlines()
        self.assertEqual(len(printed), len(expected), run.stdout)
        for got, want in zip(printed, expected):
            pattern = ".*".join(re.escape(part) for part in want.split("..."))
            self.assertRegex(got, f"^{pattern}$")


if __name__ == "__main__":
    unittest.main()
