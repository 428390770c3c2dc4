"""An independent campaign on issue 28's classes with other inputs (hostC): each test
here failed on main before its fix.

CLI tests run ``minijudge.main`` on real files against the loopback stub (tests/stub.py).
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_promises_hostC` finds stub
from stub import StubTestCase, run_main  # noqa: E402

CRITERION = {"name": "quality", "description": "How good is it?",
             "options": {"Excellent": 1.0, "Good": 0.5, "Poor": 0.0}}


class Cli(StubTestCase):
    def run_cli(self, *argv):
        """(exit code, records, stderr)."""
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "--no-preflight", "--max-retries", "0"] + list(argv))
        return code, [json.loads(line) for line in out.splitlines()], err


class PageKeepsEveryShownField(Cli):
    """The page cuts long field names and hides the middle of a long record; a name cut to
    the same text as another's, or a field named like the hidden-fields marker, was dropped
    from the page without a word (on main: one of the two values was not on the page)."""

    def test_two_long_names_alike_in_their_first_2000_characters(self):
        page = self.path("page.html")
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four",
                                                "A" * 2500 + "1": "value-one",
                                                "A" * 2500 + "2": "value-two"}])
        self.srv.content = "4"
        code, records, err = self.run_cli("--html", page, source)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual((code, "value-one" in text, "value-two" in text), (0, True, True))

    def test_a_field_named_like_the_marker_of_hidden_fields(self):
        page = self.path("page.html")
        record = {"question": "2+2?", "response": "four", "\u2026": "value-mine"}
        record.update(("f%d" % i, "v") for i in range(300))
        source = self.write_jsonl("in.jsonl", [record])
        self.srv.content = "4"
        code, records, err = self.run_cli("--html", page, source)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("value-mine", text)
        self.assertIn("<b>\u2026 (2)</b></p><pre>214 more fields</pre>", text)


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
