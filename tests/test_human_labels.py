"""Human labels a run cannot read: each test here failed on main before its fix.

CLI tests run ``minijudge.main`` on real files against the loopback stub (tests/stub.py).
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_human_labels` finds stub
from stub import StubTestCase, run_main  # noqa: E402

CRITERION = {"name": "quality", "description": "How good is it?",
             "options": {"Excellent": 1.0, "Good": 0.5, "Poor": 0.0}}


class Cli(StubTestCase):
    def run_cli(self, *argv):
        """(exit code, records, stderr)."""
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "--no-preflight", "--max-retries", "0"] + list(argv))
        return code, [json.loads(line) for line in out.splitlines()], err


class UnreadableHumanLabels(Cli):
    """A --human-field label that is there but is no label ("abc", a list, NaN) was left out
    of the agreement without a word, as an absent one is not (on main: no "fields" line)."""

    def run_labels(self, labels, *argv):
        summary = self.path("summary.json")
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "answer": "4",
                                                "response": "four", "response_a": "4",
                                                "response_b": "5", "label": label} for label in labels])
        code, records, err = self.run_cli("--human-field", "label", "--summary", summary,
                                          *argv, source)
        with open(summary, encoding="utf-8") as f:
            return code, json.load(f), err

    def test_labels_that_are_no_number(self):
        self.srv.content = "4"
        code, summary, err = self.run_labels([4, 3, "abc", [4], None])
        self.assertEqual(code, 0)
        self.assertEqual(summary["agreement"]["n"], 2)
        self.assertEqual(summary["fields"], ["records whose field 'label' (--human-field) is no "
                                             "label: 2 of 5, left out of the agreement"])
        self.assertIn("\n  fields: records whose field 'label' (--human-field) is no label: 2 "
                      "of 5, left out of the agreement\n", err)

    def test_pairwise_labels_that_are_no_verdict(self):
        self.srv.content = "[[A]]"
        code, summary, err = self.run_labels(["A", "tie", "X"], "--mode", "pairwise",
                                             "--single-order")
        self.assertEqual(summary["fields"], ["records whose field 'label' (--human-field) is no "
                                             "label: 1 of 3, left out of the agreement"])

    def test_readable_labels_say_nothing(self):
        self.srv.content = "4"
        code, summary, err = self.run_labels([4, "3", "yes", 2.5])
        self.assertIsNone(summary["fields"])


if __name__ == "__main__":
    unittest.main()
