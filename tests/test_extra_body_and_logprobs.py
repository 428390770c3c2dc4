"""--extra-body and logprobs given hostile values: the classes "options from every
place are checked" and "a missing value is not an answer". Through the real command line
(``main([...])``) against the loopback stub, and through LLMJudge's keywords.

Seen on main, each with exit 0: an ``extra_body`` holding ``messages`` replaced the prompt
(the judge graded nothing; every record ``ok``), one holding ``model`` sent another model
than the summary names; a --judges entry with a misspelt top-level field (``"modle"``,
``"templat"``) or ``"options": []`` was used with the defaults without a word; a response
that is NaN (``json`` reads the literal ``NaN``; pandas' missing value) was judged as the
text "nan".
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, chat, run_main  # noqa: E402


class PythonPairs(StubTestCase):
    """compare() and compare_systems() took what the command line refuses: a dict, list or
    NaN response was judged (as JSON or "nan"), ok; a list of systems was an AttributeError."""

    def setUp(self):
        super().setUp()
        self.srv.content = "[[A]]"
        self.pairwise = minijudge.LLMJudge(base_url=self.srv.url, model="m",
                                           template="pairwise")

    def test_compare_refuses_a_response_that_is_not_text(self):
        for value, kind in ((float("nan"), "is NaN (a missing value)"), ({"x": 1}, "is a dict")):
            with self.subTest(value=value):
                result = self.pairwise.compare({"question": "q"}, "fine", value)
                self.assertEqual((result.status, result.score, result.error), (
                    "template_error", 0.0, "field 'response_b' {}, expected text".format(kind)))
        # a list is a conversation (issue 32): beside a text, no pair of them
        result = self.pairwise.compare({"question": "q"}, "fine", ["a"])
        self.assertEqual((result.status, result.score, result.error), (
            "bad_record", 0.0, "field 'response_a' is a str and field 'response_b' a list: a "
            "pair of conversations needs two lists"))
        self.assertEqual(self.srv.chat_count, 0)

    def test_compare_systems_refuses_a_system_whose_response_is_nan(self):
        result = self.pairwise.compare_systems({"question": "q"}, {"a": "x", "b": float("nan")})
        self.assertEqual((result.status, result.error), (
            "template_error", "field 'response_b' is NaN (a missing value), expected text"))
        self.assertEqual(self.srv.chat_count, 0)

    def test_compare_systems_needs_a_mapping(self):
        for responses in (["x", "y"], "xy", None):
            with self.subTest(responses=responses):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    self.pairwise.compare_systems({"question": "q"}, responses)
                self.assertEqual(str(caught.exception), "compare_systems needs a mapping of "
                                 "system names to responses; got {!r}".format(responses))

    def test_judge_records_checks_its_window_as_the_flag_does(self):
        judge = minijudge.LLMJudge(base_url=self.srv.url, model="m")
        for window in (0, -1, 1.5, True):
            with self.subTest(window=window):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    list(minijudge.judge_records(judge, [{"response": "r"}], window=window))
                self.assertEqual(str(caught.exception),
                                 "window must be 1 or more; got {!r}".format(window))
        self.assertEqual(self.srv.chat_count, 0)


class Logprobs(StubTestCase):
    """--logprobs trusted any number a server put in ``logprob``: NaN gave judge_score NaN,
    status ok, exit 0; 1e308 was an internal_error (OverflowError); a positive one (no log
    of a probability) was weighted in. Such alternatives are not read; none left, the
    rating is the text's."""

    def run_logprobs(self, values):
        top = [{"token": token, "logprob": value} for token, value in zip("45", values)]
        self.srv.push(chat("4", logprobs={"content": [dict(top[0], top_logprobs=top)]}))
        out = self.path("out.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                 "--no-preflight", "--logprobs", "-o", out,
                                 self.write_jsonl("in.jsonl", [{"question": "q",
                                                                "response": "r"}])])
        self.assertEqual(code, 0, err)
        with open(out, encoding="utf-8") as f:
            record = json.loads(f.read())
        return record["judge_status"], record["judge_score"], record["judge_score_source"]

    def test_a_logprob_that_is_no_log_of_a_probability_is_not_weighted(self):
        for values in ([float("nan"), float("nan")], [1e308, 1e308], [5.0, 3.0]):
            with self.subTest(values=values):
                self.assertEqual(self.run_logprobs(values), ("ok", 0.75, "text"))

    def test_the_valid_alternatives_still_weigh(self):
        self.assertEqual(self.run_logprobs([0.0, float("nan")]), ("ok", 0.75, "logprobs"))
        self.assertEqual(self.run_logprobs([-0.6931471805599453, -0.6931471805599453]),
                         ("ok", 0.875, "logprobs"))


if __name__ == "__main__":
    unittest.main()
