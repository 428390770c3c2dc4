"""Issue 13's parser items: a stated verdict over a later description, a given rating over
hypothetical ones (and a single-bracketed one), comparative scores wherever the judge
put them. Tables looped with subTest, then the command line end to end against the stub."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from minijudge import parse_comparative, parse_rating, parse_verdict  # noqa: E402
from stub import PYTHON, StubTestCase, chat, run_main  # noqa: E402
from test_real_data import HAVE_DATA, rows  # noqa: E402

VERDICTS = [  # (judge output, verdict)
    ("Output (b) is better. Output (a) is more concise but misses the point.", "B"),
    ("Output (a) is superior; Output (b) is more detailed, yet wrong.", "A"),
    ("Assistant B is preferred. Assistant A is more polite but inaccurate.", "B"),
    ("The better output is Output (b). Output (a) is more fluent, nothing else.", "B"),
    ("Output (b) is clearly better, even though Output (a) is more creative.", "B"),
    # a real verdict stated last still wins over an earlier one
    ("Output (a) is better at first sight, but Output (b) is better overall.", "B"),
    ("Output (a) is more concise. Output (b) is more accurate.", "B"),  # no verdict word: last
    ("Output (a) is more helpful.", "A"),
    ("Output (a) is more concise, Output (b) is more detailed.", "B"),
    ("Both outputs are fine; Output (a) is more concise.", "A"),
    ("Assistant A argues that Output (b) is better. Output (a) is more honest.", "A"),
    ("Neither output is better.", None),
]

RATINGS = [  # (judge output, scale, rating)
    ("The answer is good. Rating: [[8]]. With more detail it would earn [[9]] or [[10]].",
     (1, 10), 8),
    ("Rating: [[6]]\n\nA [[9]] would need sources.", (1, 10), 6),
    ("I rate it [[3]]; fixing the bug could lift it to [[5]].", (1, 5), 3),
    ("[[rating]]: [[2]]. A perfect answer gets [[5]].", (1, 5), 2),
    # among ratings of equal standing, the final one still wins
    ("Rating: [[4]]. On reflection, my rating is [[7]].", (1, 10), 7),
    ("[[4]] at first, then [[7]]", (1, 10), 7),
    ("Rating: [[8]]. It could not earn [[90]].", (1, 10), 8),
    ('"[7]" on a scale of 1 to 10', (1, 10), 7),
    ("I give it [7].", (1, 10), 7),
    ("Overall [4] on a scale of 1 to 5.", (1, 5), 4),
    ("Rating: 3. See reference [4].", (1, 5), 3),  # a label beats a single bracket
    ("[[6]] (see [2])", (1, 10), 6),  # double brackets beat single ones
    ("dp = [0] * (n + 1)", (0, 10), None),  # code, not a rating
    ("array[7] holds the answer", (1, 10), None),
    ("[7] on a scale of 1 to 5", (1, 5), None),  # out of scale: never clamped
    ("[1, 2]", (1, 5), None),
]

PAIRS = [  # (judge output, scores)
    ("Here is my evaluation.\n\nAssistant 1: 8/10\nAssistant 2: 7/10", (8.0, 7.0)),
    ("Both answered.\nAssistant 1: 8\nSome detail.\nAssistant 2: 7\n", (8.0, 7.0)),
    ("I would give Assistant 1 a score of 4 out of 10 and Assistant 2 a score of 8.",
     (4.0, 8.0)),
    ("Review first.\nAssistant 2: 9/10\nAssistant 1: 6/10", (6.0, 9.0)),  # by label, not order
    ("Scores:\n**Assistant 1**: 7\n**Assistant 2**: 5.5", (7.0, 5.5)),
    ("Assistant 1 scores 7/10. Assistant 2 scores 9/10.", (7.0, 9.0)),
    ("Assistant 1: 3/10\nAssistant 2: 6/10\n\nAfter a second look, Assistant 1: 4/10", (4.0, 6.0)),
    ("Review:\n\nAssistant 1:\nScore: 7/10\nGood.\n\nAssistant 2:\nScore: 9/10", (7.0, 9.0)),
    ("So Assistant 1's score is 3 out of 10, and Assistant 2's score is 10.", (3.0, 10.0)),
    ("8 9\n\nAssistant 1: 3\nAssistant 2: 2", (8.0, 9.0)),  # the first line still comes first
    ("Both did well.\n8 9", None),  # unlabelled scores belong on the first line
    ("We solve it.\n2x + 3 = 7\nx = 2", None),
    ("Steps:\n1. read\n2. plug 2 in for f(2)", None),
    ("Let me check.\nWe plug 2 in for f(2) and get 4.", None),
    ("Assistant A:\n1. Offers four options.\nAssistant B:\n1. Offers two.", None),  # headings
    ("Assistant 1 gave 2 examples.\nAssistant 2 gave 3 examples.", None),
    ("Assistant 1: 8/10\nAssistant 2 did not answer.", None),  # one score is not two
    ("Answers:\nAnswer 1: 4\nAnswer 2: 5\nAnswer 3: 6", None),  # a list, not two scores
    ("Assistant 1: 8\nAssistant 2: 7\nAssistant C: 9", None),
    ("Assistant 1's score is higher than Assistant 2's: 8", None),
    ("Assistant 1:\nStrengths: 2 examples\nAssistant 2:\nStrengths: 3 examples", None),
    ("Assistant 1: 2 + 2 = 4\nAssistant 2: 5", None),  # arithmetic, not a score
    ("Assistant 1: 40%\nAssistant 2: 60%", None),
    ("Notes.\nAssistant 1: 1 to 10\nAssistant 2: 7", None),
    ("Assistant c: 5\nAssistant a: 6", None),  # a third label, not A and B: was a KeyError
    ('{"score_a": 1%s, "score_b": 2}' % ("0" * 400), None),  # too large: was OverflowError
]


class VerdictTest(unittest.TestCase):
    def test_a_stated_verdict_wins_over_a_later_description(self):
        for text, expected in VERDICTS:
            with self.subTest(text=text):
                self.assertEqual(parse_verdict(text), expected)


class RatingTest(unittest.TestCase):
    def test_the_given_rating_wins_over_hypothetical_ones_and_single_brackets_count(self):
        for text, scale, expected in RATINGS:
            with self.subTest(text=text, scale=scale):
                self.assertEqual(parse_rating(text, scale=scale), expected)


class ComparativeTest(unittest.TestCase):
    def test_labelled_scores_anywhere_unlabelled_ones_on_the_first_line(self):
        for text, expected in PAIRS:
            with self.subTest(text=text):
                self.assertEqual(parse_comparative(text), expected)


@unittest.skipUnless(HAVE_DATA, "judge outputs not found")
class RealReviewTest(unittest.TestCase):
    # vicuna_review_scorepair rows whose first line holds no scores (the original rule got
    # nothing) where FastChat's maintainers stored a pair by hand: we read that pair or
    # nothing, but in two rows whose text says otherwise ("Assistant 1: 9/10", "... 2: 4")
    TEXT_DISAGREES = {"vic-36cd8077416c": (9.0, 9.0), "vic-794d3349907a": (10.0, 4.0)}

    def test_labelled_scores_after_a_preamble_match_the_stored_pairs(self):
        fixed = [r for r in rows("vicuna_review_scorepair")
                 if r["expected"] is None and r.get("stored")]
        found = {r["id"]: parse_comparative(r["raw"]) for r in fixed}
        for row in fixed:
            with self.subTest(row["id"]):
                want = self.TEXT_DISAGREES.get(row["id"], tuple(map(float, row["stored"])))
                self.assertIn(found[row["id"]], (None, want))
        # of 60 rows, 8 word it as prose ("we can assign a score of 5 to Assistant 1")
        self.assertEqual((len(fixed), sum(got is not None for got in found.values())), (60, 52))


class CommandLineTest(StubTestCase):
    """The command line against a stub judge replying such text: ``python -m minijudge`` in
    a real process, or main() in this one (the same output, ~0.2 s quicker)."""

    def run_cli(self, reply, *argv, items, subprocess_=False):
        self.srv.content = reply
        argv = [self.write_jsonl("in.jsonl", items), "--judge-url", self.srv.url,
                "--max-retries", "0", "--timeout", "5"] + list(argv)
        if subprocess_:
            proc = subprocess.run(
                [*PYTHON, "-m", "minijudge"] + argv, cwd=REPO, env=dict(os.environ),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                timeout=60)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            code, out, err = run_main(argv)
        self.assertEqual(code, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def test_comparative_scores_after_a_preamble(self):
        out = self.run_cli(
            "Let me compare the two answers.\n\nAssistant 1: 8/10\nAssistant 2: 7/10\n",
            "--mode", "comparative",
            items=[{"question": "q", "response_a": "one", "response_b": "two"}],
            subprocess_=True)  # end to end, in a real process
        self.assertEqual((out[0]["judge_status"], out[0]["judge_value"]), ("ok", [8.0, 7.0]))
        self.assertEqual(self.srv.chat_count, 1)

    def test_verdict_and_rating_through_the_command_line(self):
        self.srv.push(chat("Output (b) is better. Output (a) is more concise but misses it."))
        out = self.run_cli("", "--mode", "pairwise", "--single-order", items=[
            {"question": "q", "response_a": "one", "response_b": "two"}])
        self.assertEqual((out[0]["judge_status"], out[0]["judge_value"]), ("ok", "B"))
        out = self.run_cli("Rating: [[4]]. With more detail it would earn [[5]].",
                           items=[{"question": "q", "response": "r"}])
        self.assertEqual((out[0]["judge_status"], out[0]["judge_value"]), ("ok", 4))


if __name__ == "__main__":
    unittest.main()
