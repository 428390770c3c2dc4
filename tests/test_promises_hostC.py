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


class EchoedOptionList(Cli):
    """A reply that echoes the criterion's option list names no option: its last line is
    the list's last item, not a verdict (on main: 'Poor', score 0.0, status ok, exit 0)."""

    def test_an_echoed_list_is_no_verdict(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply in ("Options:\n- Excellent\n- Good\n- Poor", "Excellent\nGood\nPoor",
                      "The options are:\n1. Excellent\n2. Good\n3. Poor"):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((record["judge_status"], record.get("judge_option")),
                                 ("parse_error", None))
                self.assertEqual(code, 1)

    def test_a_verdict_after_the_echoed_list_is_read(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply in ("Options:\n- Excellent\n- Good\n- Poor\n\nGood", "Good\n\n- Excellent\n"
                      "- Good\n- Poor"):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_status"], record["judge_option"],
                                  record["judge_score"]), (0, "ok", "Good", 0.5))


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


class NearOptionIsNoTypo(Cli):
    """The typo rule read a reply that is part of an option's name as that option: "Correct"
    was "Incorrect" (score 0.0, status ok, exit 0). A reply inside an option's name, or
    holding it, is another word, not a typo of it."""

    def test_a_word_inside_an_option_is_not_that_option(self):
        for options, reply in (({"Fully correct": 1.0, "Partially correct": 0.5,
                                 "Incorrect": 0.0}, "Correct"),
                               ({"Fully correct": 1.0, "Incorrect": 0.0}, "correct."),
                               ({"Fine": 1.0, "Unacceptable": 0.0}, "Acceptable"),
                               ({"On topic": 1.0, "Irrelevant": 0.0}, "relevant")):
            with self.subTest(reply=reply):
                criteria = self.write("c.json", json.dumps(dict(CRITERION, options=options)))
                source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_status"], record.get("judge_option")),
                                 (1, "parse_error", None))

    def test_a_typo_is_still_read(self):
        options = {"Relevant": 1.0, "Irrelevant": 0.0}
        criteria = self.write("c.json", json.dumps(dict(CRITERION, options=options)))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
        for reply, option in (("Relevent", "Relevant"), ("Irrelevent", "Irrelevant")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_option"]), (0, option))


class HypotheticalAfterTheRating(Cli):
    """A hypothetical rating loses to any rating stated, not only to one of its own kind:
    "Rating: 4" then "it could get [[5]]" was 5 (ok, exit 0); and a label's hypothetical is
    judged where its number is ("Alternative rating if we ignore the typo: [[5]]" was 5)."""

    def test_the_stated_rating_wins(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply, value in (
                ("Rating: 4\nIf the response were improved it could get [[5]].", 4),
                ("I rate it 3. If it cited its sources, it would get [[5]].", 3),
                ("Rating: [[4]]\n\nAlternative rating if we ignore the typo: [[5]]", 4),
                ("If it cited its sources, it could get [[5]].", 5)):  # nothing else stated
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli(source)
                self.assertEqual((code, record["judge_status"], record["judge_value"]),
                                 (0, "ok", value))


class HypotheticalNamedFirst(Cli):
    """A verdict followed by "would", "could" or "might" is a hypothetical too: "[[A]] (though
    [[B]] would win if brevity mattered)" was B (ok, exit 0)."""

    def test_pairwise(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response_a": "x",
                                                "response_b": "y"}])
        for reply, verdict in (("[[A]] (though [[B]] would win if brevity mattered)", "A"),
                               ("[[B]]. [[A]] could be argued for a shorter answer.", "B")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--mode", "pairwise", "--single-order",
                                                    source)
                self.assertEqual((code, record["judge_status"], record["judge_verdict"]),
                                 (0, "ok", verdict))

    def test_rating(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        self.srv.content = "Rating: 4\n[[5]] would need sources."
        code, (record,), err = self.run_cli(source)
        self.assertEqual((code, record["judge_value"]), (0, 4))


if __name__ == "__main__":
    unittest.main()
