"""Issue 30, the first hour: two summary lines a new user met with nothing in them.

An input with no records printed ``statuses: `` (nothing after it; now ``statuses: none``), and a run whose judge
model was neither given nor listed by the server printed ``judge None at URL``.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402


class EmptyLinesTest(StubTestCase):
    def test_no_records_says_so_on_the_statuses_line(self):
        source = self.write("empty.jsonl", "")
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", source])
        self.assertEqual(code, 0, err)
        self.assertIn("\n  statuses: none\n", err)
        self.assertIn("warning: no records in " + source, err)

    def test_a_model_not_known_is_not_printed_as_none(self):
        source = self.write("in.jsonl", '{"question": "q", "response": "r"}\n')
        port = self.srv.port
        self.srv.stop()  # the model list cannot be read: no model to name
        url = "http://127.0.0.1:{}".format(port)
        code, out, err = run_main(["--judge-url", url, "--no-preflight", "--max-retries", "0",
                                   "--max-error-rate", "1", source])
        self.assertEqual(code, 0, err)
        self.assertIn("; judge (model not known) at {}/v1/chat/completions\n".format(url), err)
        self.assertNotIn("judge None", err)


if __name__ == "__main__":
    unittest.main()
