"""Hostile system names and first-hour hints: what the field hints (field hints, key and model
flag hints, the progress line's retry reasons, stop notes, the page's score row) let
through when the input, the flags or the server are hostile. Each test failed on main
before its fix. CLI tests run a real ``python -m minijudge`` on real files against the
stub (tests/stub.py).
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_system_names` finds stub
from stub import PYTHON, SideBySide, default_sigint  # noqa: E402

KEY = "sk-host30-SECRET-0123456789"  # ASCII: a key with an accent is refused up front


class Cli(SideBySide):
    # every test here is real subprocesses against its own stub: each class's tests run
    # side by side (three at a time, for the two cores)
    side_by_side = 3

    def cli(self, *argv, env=None):
        """A real ``python -m minijudge``: (exit code, stdout, stderr); the key is in the
        environment, as the README tells a user to set it."""
        environ = dict(os.environ, PYTHONPATH=os.path.dirname(HERE), LLM_JUDGE_API_KEY=KEY,
                       **(env or {}))
        done = subprocess.run([*PYTHON, "-m", "minijudge"] + list(argv), cwd=self.tmp,
                              env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, encoding="utf-8", timeout=60)
        return done.returncode, done.stdout, done.stderr

    def source(self, records=({"question": "q", "response": "r"},)):
        return self.write_jsonl("in.jsonl", records)


if __name__ == "__main__":
    unittest.main()


class HostileSystemNames(Cli):
    """The ranking line (the printed summary, and the page's score row, which shows it)
    with system names a data file can hold."""

    def test_names_that_break_or_turn_the_line_are_escaped_in_summary_and_page(self):
        # a newline split the summary's ranking line in two; U+202E (right-to-left
        # override) turned the rest of the line around on a terminal and the page, scores too
        names = ["a\nb", "\u202eevil", "<i>x</i>", "n" * 150]
        records = [{"question": "q", "responses": {n: "r{}".format(i) for i, n in
                                                   enumerate(names)}}]
        source = self.source(records)
        self.srv.content = "[[A]]"  # both orders disagree: every pair a tie
        page = os.path.join(self.tmp, "page.html")
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "--mode", "systems", "--html", page,
                                  source)
        line = ("ranking over the 1 judged (win rates, ties count half): 'a\\nb' 0.5 (3 "
                "comparisons), '\\u202eevil' 0.5 (3 comparisons), <i>x</i> 0.5 (3 "
                "comparisons), {}... 0.5 (3 comparisons)".format("n" * 100))
        self.assertEqual(code, 0, err)
        self.assertIn("\n  {}\n".format(line), err)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        import html
        self.assertIn("<tr><th>score</th><td>{}</td></tr>".format(html.escape(line)), text)
        self.assertNotIn("\u202e", err)


