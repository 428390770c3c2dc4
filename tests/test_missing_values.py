"""A missing value is not an answer: NaN as well as null.
A NaN (json's literal NaN, pandas' missing value) in the question or the reference reached the
prompt as the text "nan" with status ok and exit 0: "[Reference Answer] nan" graded every
response against a gold answer of "nan", while the record written said ``"answer": null``.
A NaN is missing, as null is: a default field is judged without it, a named one is the
record's bad_record.

And "a combined judgement says one thing": a rating panel split under --jury majority scores
0.5 (3 on a 1-5 scale, as the summary's mean says), but --human-field's agreement compared
that 0.5 with the 1-5 human labels as if it were a rating (confusion {"3": {"0.5": 1}},
exact 0.0, within one 0.0), exit 0. 

And a --logprobs rating panel under --jury majority: two judges that both rated 4 (scores 0.85
and 0.75, each weighted by its probabilities) were a "split", judge_score 0.5 (3 on the
scale) and judge_pass false beside judge_value 4 and judge_raw "4", exit 0. The majority of
ratings is of the ratings; its score, the mean of the scores of the judges that gave it.
Through the real command line against the stub, and LLMJudge."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, chat, rating_logprobs, run_main  # noqa: E402


class CompareKeywords(unittest.TestCase):
    """compare(both_orders="no") asked both orders (a truthy text), both_orders=None one."""

    def test_both_orders_is_true_or_false(self):
        asked = []
        judge = minijudge.LLMJudge("http://127.0.0.1:9", model="m", template="pairwise",
                                   judge_fn=lambda messages: (asked.append(1), "[[A]]")[1])
        for value in ("no", "false", None, 0, 1.0):
            with self.subTest(both_orders=value):
                for call in (lambda: judge.compare({"question": "q"}, "x", "y",
                                                   both_orders=value),
                             lambda: judge.compare_systems({"question": "q"}, {"a": "x",
                                                                               "b": "y"},
                                                           both_orders=value)):
                    with self.assertRaises(minijudge.JudgeError) as caught:
                        call()
                    self.assertEqual(str(caught.exception),
                                     "both_orders must be true or false; got {!r}".format(value))
        self.assertEqual(asked, [])
        self.assertEqual(judge.compare({"question": "q"}, "x", "y", both_orders=False).value,
                         "A")


class JudgeFnReplies(unittest.TestCase):
    """A judge_fn returning bytes was "judge_fn raised TypeError: ...": it raised nothing."""

    def test_a_reply_that_is_no_json_is_an_invalid_response(self):
        for reply in (b"Rating: 4", {"choices": [{"message": {"content": b"4"}}]}):
            with self.subTest(reply=reply):
                judge = minijudge.LLMJudge("http://127.0.0.1:9", model="m",
                                           judge_fn=lambda messages: reply)
                result = judge.judge({"question": "q"}, "r")
                self.assertEqual((result.status, result.score, result.error), (
                    "invalid_response", 0.0, "judge_fn's reply is not JSON (Object of type "
                    "bytes is not JSON serializable): expected text or a chat completion "
                    "(a dict)"))

    def test_what_judge_fn_raises_is_still_said_so(self):
        def broken(messages):
            raise KeyError("x")
        result = minijudge.LLMJudge("http://127.0.0.1:9", model="m", judge_fn=broken).judge(
            {"question": "q"}, "r")
        self.assertEqual((result.status, result.error), ("internal_error",
                                                         "judge_fn raised KeyError: 'x'"))


class AgreementKeywords(unittest.TestCase):
    """agreement() zipped 3 judge values with 2 labels into n=2 (a dropped row shifts every
    pair after it: wrong figures, no error), and took kind="binary" or "bogus" as None."""

    def test_values_and_labels_must_pair_up(self):
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.agreement([1, 2, 3], [1, 2])
        self.assertEqual(str(caught.exception), "agreement needs one human value for each "
                                                "judge value; got 3 judge values and 2 human")

    def test_kind_is_none_or_ratings(self):
        for kind in ("binary", "bogus", 1, True):
            with self.subTest(kind=kind):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.agreement([1, 2], [1, 2], kind=kind)
                self.assertEqual(str(caught.exception),
                                 "kind must be None or 'ratings'; got {!r}".format(kind))
        self.assertEqual(minijudge.agreement(iter([1, 0]), (x for x in [1, 1]),
                                             kind="ratings")["exact"], 0.5)


if __name__ == "__main__":
    unittest.main()
