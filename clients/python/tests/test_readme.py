"""The examples of clients/python/README.md run as written (against the cairnd under test instead of
127.0.0.1:8080, on a graph of their own instead of "follows") and print what the README says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
import uuid

import support

README = os.path.join(support.ROOT, "README.md")
EXAMPLE = re.compile(r"```python\n(.*?)```\s*\nprints\s*\n\s*```text\n(.*?)```", re.S)


class Readme(unittest.TestCase):
    def test_examples_print_what_the_readme_says(self) -> None:
        url, _ = support.cairn_urls()
        support.require_websockets()
        with open(README, encoding="utf-8") as f:
            text = f.read()
        examples = EXAMPLE.findall(text)
        self.assertEqual(len(examples), 2, "the README's two examples and their outputs")
        first_code = text.split("```python\n", 1)[1].split("```", 1)[0]
        self.assertLessEqual(len(first_code.strip().splitlines()), 5, "the example at the top has five lines")
        env = dict(os.environ, PYTHONPATH=support.ROOT)
        graph = "follows_" + uuid.uuid4().hex[:12]
        for code, expected in examples:
            self.assertIn("http://127.0.0.1:8080", code)
            code = code.replace("http://127.0.0.1:8080", url).replace('"follows"', f'"{graph}"')
            run = subprocess.run([sys.executable, "-c", code],
                                 cwd=support.ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout, expected, code)


if __name__ == "__main__":
    unittest.main()
