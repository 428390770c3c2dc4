"""A second independent campaign on issue 28's classes with other inputs (host2C): each test
here failed on main before its fix.

CLI tests run ``minijudge.main`` on real files against the loopback stub (tests/stub.py).
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_promises_host2C` finds stub
import minijudge  # noqa: E402
from stub import StubTestCase  # noqa: E402
from test_promises_hostC import CRITERION, Cli  # noqa: E402


class NegatedVerdict(Cli):
    """A [[verdict]] the judge rules out ("not [[A]]") is no verdict: "Final verdict: [[B]]
    - not [[A]]." was A (status ok, exit 0)."""

    def test_a_verdict_ruled_out_after_the_stated_one(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response_a": "x",
                                                "response_b": "y"}])
        for reply, verdict in (("Final verdict: [[B]] \u2014 not [[A]].", "B"),
                               ("[[A]], not [[B]]: B misses the units.", "A"),
                               ("The verdict is [[B]], and it isn't [[C]].", "B")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--mode", "pairwise", "--single-order",
                                                    source)
                self.assertEqual((code, record["judge_status"], record["judge_verdict"]),
                                 (0, "ok", verdict))


class AlternativesAfterAComma(Cli):
    """Ratings offered as alternatives after a comma ("4, or perhaps 5", "3, maybe 4") are no
    rating: the first was read (status ok, exit 0), as "4 or 5" is not."""

    def test_a_comma_before_the_alternative(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply, value in (("Rating: 4, or perhaps 5", None), ("I would give it 3, maybe 4.",
                                                                  None),
                             ("Rating: [[4]], or [[5]] with sources", None),
                             ("Rating: 4, and 2 minor issues", 4),
                             ("Rating: 4, maybe lacking detail", 4)):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli(source)
                self.assertEqual(record.get("judge_value"), value)
                self.assertEqual(code, 1 if value is None else 0)


class AnotherLabelAfterTheRatingWord(Cli):
    """"Rating explanation: the answer is 2 lines long." after "Rating: 5" was read as the
    rating 2 (status ok, exit 0): a label such as "Rating explanation:" is another label, and
    the number in its sentence no rating."""

    def test_a_number_in_the_explanation_is_not_the_rating(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply, value in (("Rating: 5\n\nRating explanation: the answer is 2 lines long.", 5),
                             ("Score: 4\nScore rationale: it misses 1 unit.", 4),
                             ("Score for the response: 4", 4), ("**Rating:** [[3]]", 3)):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli(source)
                self.assertEqual((code, record["judge_value"]), (0, value))


class RevisedRating(Cli):
    """A rating the judge names as its initial one and then revises ("My initial rating was
    [[2]], but after reflection: [[4]]") was read as the revised-away 2 (status ok, exit 0)."""

    def test_the_revised_rating_wins(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply, value in (("My initial rating was [[2]], but after reflection: [[4]]", 4),
                             ("Original score: [[2]]. After checking the reference, [[4]].", 4),
                             ("Initial rating: 3", 3)):  # nothing else stated: it stands
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli(source)
                self.assertEqual((code, record["judge_value"]), (0, value))


class BinaryLabelAsAQuestion(Cli):
    """A label asked as a question, then answered ("Correct? No."), was read by its first
    word: True, score 1.0, status ok, exit 0."""

    def test_the_answer_after_the_question_mark_is_the_verdict(self):
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "answer": "4",
                                                "response": "5"}])
        for reply, score in (("Correct? No.", 0.0), ("Correct?\nNo, it says 5.", 0.0),
                             ("Answer? Yes.", 1.0)):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--mode", "binary", source)
                self.assertEqual((code, record["judge_status"], record["judge_score"]),
                                 (0, "ok", score))


class OptionRevisedAtTheEnd(Cli):
    """A reply that names an option on its first line and another, revised, on its last
    ("Excellent ... On reflection: Poor") was read by its first line: Excellent, 1.0, ok."""

    def test_a_revision_on_the_last_line_is_not_overruled_by_the_first(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "5"}])
        for reply in ("Excellent\n\nWait: the response says 5, not 4. On reflection: Poor",
                      "Good\n\nActually it is wrong, so Poor."):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertNotIn(record.get("judge_option"), ("Excellent", "Good"))

    def test_a_first_line_with_its_reason_after_is_still_read(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
        for reply in ("Good\n\nThe response is right but terse; it is not Excellent.",
                      "Good\n\nThe response is right but terse."):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_option"]), (0, "Good"))


class OptionNegatedWithAnIntensifier(Cli):
    """"The response is not very good." named Good (0.5, status ok, exit 0): only "not good"
    itself was a negation; "no good", "hardly excellent", "isn't really good" neither."""

    def test_a_negated_option_is_not_picked(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "5"}])
        for reply, option in (("The response is not very good.", None),
                              ("It isn't really good.", None), ("No good.", None),
                              ("Hardly excellent; it is poor.", "Poor"),
                              ("Not excellent, but good.", "Good"),
                              ("Good, not excellent.", "Good")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual(record.get("judge_option"), option)


class EquallyCloseOptions(Cli):
    """A reply as close to two options as a typo of either ("Faiz": Fair or Fail) was read
    as the one that sorts last (Fair, 0.5, status ok, exit 0)."""

    def test_a_typo_of_two_options_picks_none(self):
        options = {"Pass": 1.0, "Fair": 0.5, "Fail": 0.0}
        criteria = self.write("c.json", json.dumps(dict(CRITERION, options=options)))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "5"}])
        for reply, option in (("Faiz", None), ("Fial", "Fail"), ("Fa1l", "Fail")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual(record.get("judge_option"), option)


if __name__ == "__main__":
    unittest.main()
