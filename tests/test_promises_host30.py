"""Issue 30's hostile pass (host30): what the first-hour fixes (field hints, key and model
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
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_promises_host30` finds stub
from stub import PYTHON, SideBySide, default_sigint  # noqa: E402

KEY = "sk-host30-SECRET-0123456789"  # ASCII: a key with an accent is refused up front
KEY_HINT = ("minijudge takes no API key on the command line (other users can read it in the "
            "process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the environment")


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


class KeyOnTheCommandLine(Cli):
    """Spellings of a key on the command line that first30b's hints did not catch."""

    def test_the_value_after_an_unknown_option_is_not_echoed(self):
        # argparse said "unrecognized arguments: -k sk-..." on stderr
        source = self.source()
        for argv, shown in (([source, "-k", KEY], "-k"),
                            ([source, "--foo=" + KEY], "--foo"),
                            ([source, "--foo", KEY, "-x", KEY], "--foo -x")):
            with self.subTest(argv=argv):
                code, out, err = self.cli("--judge-url", self.srv.url, *argv)
                self.assertEqual(code, 2)
                self.assertEqual(err.splitlines()[-1], "minijudge: error: unrecognized "
                                 "arguments: {} (the values given them not shown: one may be "
                                 "a key)".format(shown))
                self.assertNotIn(KEY, out + err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_stray_file_name_is_still_named(self):
        source = self.source()
        code, out, err = self.cli("--judge-url", self.srv.url, source, "--dry-run",
                                  "other.jsonl")
        self.assertEqual(code, 2)
        self.assertEqual(err.splitlines()[-1],
                         "minijudge: error: unrecognized arguments: other.jsonl")

    def test_k_and_ke_are_answered_like_key(self):
        # argparse took --k and --ke for --key-header: the run went ahead and sent the key
        # typed on the command line as a header's name
        source = self.source()
        for flag in ("--k", "--ke", "--KE"):
            with self.subTest(flag=flag):
                code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                          "--no-preflight", flag, KEY, source)
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, "minijudge: error: {}: {}; --key-header NAME names the "
                                 "header it is sent in\n".format(flag, KEY_HINT))
        self.assertEqual(self.srv.requests, [])

    def test_the_key_given_as_a_file_name_is_not_echoed(self):
        # the key pasted where the input (or --judges) goes came back in "No such file"
        for argv in ([KEY], ["--judges", KEY, "in.jsonl"]):
            with self.subTest(argv=argv[0]):
                code, out, err = self.cli("--judge-url", self.srv.url, *argv)
                self.assertEqual((code, out), (2, ""))
                self.assertIn("No such file or directory: '<hidden>'", err)
                self.assertNotIn(KEY, err)

    def test_a_value_with_spaces_that_starts_like_a_flag_is_a_value(self):
        # argparse reads "--- ... token ..." as --system's value, but the key check refused
        # it as "an option named for a key or token"
        source = self.source()
        system = "--- Judge strictly; the token budget is not your concern."
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--dry-run", "--system", system, source)
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("--- line 1 ---\n[system]\n{}\n".format(system)), out)

    def test_key_header_abbreviated_past_key_still_works(self):
        source = self.source()
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "--key-h", "x-api-key", source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.requests[-1].headers["x-api-key"], KEY)


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


