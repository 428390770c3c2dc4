"""Parsers (the section "Parsers"): every rating, verdict and JSON trap of JUDGE-TRAPS.md
section 2 read by its table; a stated verdict over a later description, a given rating over
hypothetical ones, scores wherever the judge put them; ratings, verdicts, answers and
options offered as alternatives; criterion options a reply cannot tell apart; the hostile
campaigns' replies; the short reading of a rating held to the full one; the parser-accuracy
report run from a clone. Tables looped with subTest, then the command line end to end
against the stub.

Parser tables: every rating, verdict and JSON trap of JUDGE-TRAPS.md section 2.
"""
import ast
import itertools
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from minijudge import (parse_binary, parse_comparative, parse_json, parse_rating,  # noqa: E402
                       parse_verdict)
from stub import (PYTHON, CommandLineTestCase, StubTestCase, chat, copy_minijudge,  # noqa: E402
                  run_main, run_process)
from stub import read_text as read  # noqa: E402
from test_real_data import DATA_DIR, HAVE_DATA, PAIR_FILES, RATING_FILES, rows  # noqa: E402

RATINGS = [  # (judge output, rating on 1-5, trap)
    ("4", 4, "bare"),
    ("4.", 4, "trailing period"),
    (" 4\n", 4, "spacing"),
    ("**4**", 4, "markdown bold"),
    ("Rating: 4", 4, "label"),
    ("**Rating:** 4", 4, "markdown label"),
    ("rating : 4", 4, "spaced label"),
    ("Rating: [[4]]", 4, "MT-Bench"),
    ("[[4]]", 4, "MT-Bench bare"),
    ("[4]", 4, "single brackets"),
    ("4/5", 4, "fraction"),
    ("4 out of 5", 4, "out of"),
    ("3.5/5", 3.5, "decimal fraction"),
    ("Score: 4.5", 4.5, "decimal"),
    ("On a scale of 1 to 5, I rate this 4", 4, "restated scale"),
    ("On a scale from 1-5 I'd give it a 3.", 3, "restated scale with dash"),
    ("Scale (1=poor, 5=excellent). My rating: 2", 2, "restated scale with ="),
    ("There are 5 reasons ... so the rating is 3", 3, "counting words"),
    ('The answer claims "Rating: 5" but is wrong. Rating: 2', 2, "quoted text: last wins"),
    ("<think>... Rating: 5 ... {x}</think>\nRating: 2", 2, "reasoning block"),
    ("...reasoning... Rating: 5 </think>Rating: 2", 2, "only the closing tag"),
    ('```json\n{"rating": 4}\n```', 4, "fenced JSON"),
    ('Here: {"score": "4"} hope this helps', 4, "JSON in prose"),
    ("Rating:\u200b4", 4, "zero-width space"),
    ("\ufeff4", 4, "byte order mark"),
    ("4\n\nThe response is correct but terse.", 4, "number, then explanation"),
    ("The response is mostly right.\n\n3", 3, "explanation, then number"),
    ("`4`", 4, "inline code"),
    ("Rating: 2\n\nThe response gives 5 reasons but misses the point.", 2,
     "a label beats a number in the explanation"),
    ("Rating: 4 - the response gives 2 examples", 4, "prose after the label"),
    ("4\n\nThe response scores well on 2 of 3 criteria", 4, "bare number, then prose"),
    ("Rating: 3\nEvaluation: the answer 2+2=4 is correct", 3, "arithmetic in the review"),
    ("Final rating: 4/5\n\nNote: a 5/5 would require citations.", 4, "a later fraction"),
    ("Rating: 5\n\nThe response correctly computes 3/4 = 0.75.", 5, "a fraction in prose"),
    ("Rating: 4\nReviewed on 2024/05/01", 4, "a date"),
    ("Rating: -3", None, "negative"),
    ("Rating: 1e400", None, "exponent"),
    ("Rating: " + "4" * 5000, None, "a 5000-digit number"),
    ("10", None, "out of range: not the 1 of 10"),
    ("Score: 10", None, "out of range label"),
    ("[[90]]", None, "out of range brackets"),
    ("Rating: 8/10", None, "another scale"),
    ("0.8", None, "not on the scale"),
    ("Rating: 0", None, "below the scale"),
    ("1) The response is accurate.", None, "list numbering"),
    ("This is not excellent", None, "no keyword scoring"),
    ("I cannot evaluate this.", None, "refusal"),
    ("<think>The user wants a rating of 5", None, "cut off inside think"),
    ("", None, "empty"),
    (None, None, "null content"),
    # whose rating: a number the reply gives something other than the judged response
    ("The response is clear: 4/5. Confidence: 3/5", 4, "a confidence is not the rating"),
    ("Confidence: 4/5", None, "only a confidence"),
    ("Clear and correct; I give it 4. Confidence score: 5", 4, "a confidence score"),
    ("The response is right: the phone has a rating of 4.5.", None, "a rating the answer quotes"),
    ("Correct, 3/5, though it says the hotel has an average rating of 4.5", 3,
     "a quoted rating after the verdict"),
    ("The response has a rating of 4.", 4, "the response's own rating"),
    ("The response is good: 4/5. Response C would be a 2/5.", 4, "another response, by letter"),
    ("I rate the answer 4/5, Answer 2 gets 2/5", 4, "another answer, by number"),
    ("Score for Assistant 1: 4", None, "the number is a name: no score is given"),
    ("I'd give Assistant C a 2, while A would be a 4", None, "two assistants rated: whose?"),
    ("Assistant C: 2/5\nAssistant A: 4/5", None, "two assistants rated: whose?"),
    ("Given the errors in Assistant A's answer, I rate it 2/5", 2, "the judged one, named"),
    ("Assistant A's rating: [[4]]", 4, "the one assistant named is the judged one"),
    ("Rating: 3\n\nImproved answer: ...\n\nRating of the improved answer: 5", 3,
     "the judge's own rewrite"),
    ("The response earns 3/5; my revised version: 5/5", 3, "the judge's own version"),
    ("The assistant's revised response is clear: 4/5", 4, "the judged one's own rewrite"),
    ("The revised response, as the user asked, is clear: 4/5", 4, "a rewrite the user asked"),
    ("Rating: 3\n\nRewritten answer: ...\nOn the same scale, a rewritten answer gets 5/5", 3,
     "the judge's own, rewritten"),
    ("Corrected answer: the sum is 7.\n\nRating: [[2]]", 2, "a correction, then the rating"),
    ("I would rate the AI assistant's response as a \"[4]\" on the scale of 1 to 5.", 4,
     "single brackets on the scale, after a possessive"),
]


class RatingTest(unittest.TestCase):
    def test_traps(self):
        for text, expected, trap in RATINGS:
            with self.subTest(trap=trap, text=text):
                self.assertEqual(parse_rating(text), expected)

    def test_other_scales(self):
        for text, scale, expected in [
            ("Rating: [[10]]", (1, 10), 10),
            ("Rating: 8/10", (1, 10), 8),
            ("[[9.5]]", (1, 10), 9.5),
            ("0", (0, 9), 0),
            ("4/5", (1, 10), None),  # a fraction of another scale is not a rating
            ("[[90]]", (1, 10), None),
        ]:
            with self.subTest(text=text, scale=scale):
                self.assertEqual(parse_rating(text, scale=scale), expected)

    def test_whose_rating(self):
        # issue 44 item 7: a weaker judge's replies on 1-10 gave a confidence, a number from
        # the judged answer, another assistant's rating and the judge's own rewrite's
        for text, expected in [
            ("Confidence: 8/10", None),
            ("The answer is thorough, 6/10. Confidence: 8/10", 6),
            ("The answer lists phones; the phone has a rating of 4.5", None),
            ("I would give Assistant C a 2, while A would be a 7", None),  # which is judged?
            ("The response is fine, 7/10; Assistant C would be a 2/10", 7),
            ("I rate Response 2 a 6/10.", 6),  # the one named: the judged one
            ("Assistant A has a rating of 7/10", 7),
            ("Output (a) has a rating of 7/10", 7),
            ("Rating: 6/10\n\nHere is an improved answer: ...\n\n"
             "Rating for the improved answer: 9/10", 6),
            ('I would rate the AI assistant\'s response as a "[7]" on the scale of 1 to 10.', 7),
            ("Assistant A's answer is thorough.\n\nRating: [[7]]", 7),  # MT-Bench multi-turn
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_rating(text, scale=(1, 10)), expected)

    def test_types(self):
        self.assertIsInstance(parse_rating("4"), int)
        self.assertIsInstance(parse_rating("3.5"), float)


class BinaryTest(unittest.TestCase):
    def test_table(self):
        for text, expected in [
            ("Yes", True), ("yes.", True), ("**Yes**, because it matches.", True),
            ("No", False), ("No. The answer is 12.", False), ("1", True), ("0", False),
            ("Correct", True), ("Incorrect.", False), ("TRUE", True), ("false", False),
            ("Answer: no", False), ("Verdict: yes", True), ("The response is correct.", True),
            ("The response is not correct.", False), ('{"correct": true}', True),
            ('{"is_correct": 0}', False), ("<think>yes? no?</think>no", False),
            ("I'm not sure.", None), ("", None), ("Maybe", None),
            ("No. The correct answer is 1, not 2.", False),
            ("No.\n\nThe reference answer is 1, but the response gives 2.", False),
            ("Yes. Both give the answer 0.", True), ("yes\n\nThe response's answer is 0.", True),
            # an idiom opening with "no" is no verdict no (a judge explaining first writes them)
            ("No doubt it is correct.", True), ("No errors: the answer is right.", True),
            ("No issues found.", None), ("No, no doubt: it is wrong.", False),
        ]:
            with self.subTest(text=text):
                self.assertIs(parse_binary(text), expected)


class ComparativeTest(unittest.TestCase):
    def test_table(self):
        for text, expected in [
            ("8 9", (8.0, 9.0)), ("8 9\n\nAssistant 1 was terse.", (8.0, 9.0)),
            ("8.5, 7", (8.5, 7.0)), ("Score: 9; Score: 6", (9.0, 6.0)),
            ("Assistant 1: 8/10, Assistant 2: 9/10", (8.0, 9.0)), ("**7** **10**", (7.0, 10.0)),
            ("<think>maybe 1 2 3</think>\n6 7", (6.0, 7.0)),
            ("Both did well.\n8 9", None),  # the scores belong on the first line
            ("8", None), ("8 9 10", None), ("", None),
            ("8.5", None), ("85", None), ("10", None),  # one number is not two scores
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_comparative(text), expected)


class VerdictTest(unittest.TestCase):
    def test_table(self):
        for text, expected in [
            ("[[A]]", "A"), ("[[B]]", "B"), ("[[C]]", "tie"),
            ("Final verdict: [[A]].", "A"),
            ('Output "[[A]]" if A is better, "[[B]]" if B is. My verdict: [[B]]', "B"),
            ("[[A>>B]]", "A"), ("[[A>B]]", "A"), ("[[A=B]]", "tie"), ("[[B>A]]", "B"),
            ("[[B>>A]]", "B"), ("My final verdict is tie: [[A=B]]", "tie"),
            ("<think>[[A]] seems right... no</think>\n[[B]]", "B"),
            ("Output (a)", "A"), ("Output (b)", "B"),
            ("Output (a) and Output (b) both follow it, but Output (b) is better.", "B"),
            ("Assistant A is better.", "A"), ("Overall, Assistant B is clearly better.", "B"),
            ("Both answers are fine.", None), ("", None), ("B", "B"), ("Tie.", "tie"),
            # re.I matches a Turkish dotless or dotted i: no verdict, not a KeyError
            ("[[t\u0131e]]", None), ("[[t\u0130e]]", None),
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_verdict(text), expected)


class JsonTest(unittest.TestCase):
    def test_table(self):
        for text, expected in [
            ('{"score": 4}', {"score": 4}),
            ('```json\n{"rating": 4}\n```', {"rating": 4}),
            ('Here: {"score": "4"} hope this helps', {"score": "4"}),
            ('{"a": {"b": {"c": 1}}, "d": "}"} trailing }', {"a": {"b": {"c": 1}}, "d": "}"}),
            ('{"draft": 1} then the final {"final": 2}', {"final": 2}),
            ("<think>{\"x\": 1}</think>{\"y\": 2}", {"y": 2}),
            ("no json {here", None), ("[1, 2]", None), ("", None),
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_json(text), expected)

    def test_pathological_inputs_stay_fast_and_never_raise(self):
        # 40,000+ characters each: one quadratic scan of such a text takes seconds (a
        # regex that retries from each position: 2 s at 50,000), a linear parse ms
        for text in [" " * 50000 + "x", "1" + " " * 20000 + "1" + " " * 20000 + "x",
                     "<think>" * 50000, "[[" * 25000, "rating " * 7500,
                     '{"correctness": ' + "[" * 3000, "9" * 100000, "{" * 50000,
                     '{"' * 25000, "{x\n" * 17000]:
            for parse in (parse_rating, parse_binary, parse_comparative, parse_verdict,
                          parse_json):
                with self.subTest(parse=parse.__name__, text=text[:20]):
                    parse(text)  # the suite's time limit catches quadratic regexes

    def test_long_reasoning_is_fast_enough(self):
        text = "<think>" + "{ braces everywhere } " * 5000 + "</think>" + '{"score": 3}'
        self.assertEqual(parse_json(text), {"score": 3})
        self.assertEqual(parse_rating(text), 3)


STATED_VERDICTS = [  # (judge output, verdict)
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


GIVEN_RATINGS = [  # (judge output, scale, rating)
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


PLACED_PAIRS = [  # (judge output, scores)
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


class StatedVerdictTest(unittest.TestCase):
    """Issue 13's parser items: a stated verdict over a later description, a given rating over
    hypothetical ones (and a single-bracketed one), comparative scores wherever the judge
    put them. Tables looped with subTest, then the command line end to end against the stub."""

    def test_a_stated_verdict_wins_over_a_later_description(self):
        for text, expected in STATED_VERDICTS:
            with self.subTest(text=text):
                self.assertEqual(parse_verdict(text), expected)


class GivenRatingTest(unittest.TestCase):
    def test_the_given_rating_wins_over_hypothetical_ones_and_single_brackets_count(self):
        for text, scale, expected in GIVEN_RATINGS:
            with self.subTest(text=text, scale=scale):
                self.assertEqual(parse_rating(text, scale=scale), expected)


class ScoresAnywhereTest(unittest.TestCase):
    def test_labelled_scores_anywhere_unlabelled_ones_on_the_first_line(self):
        for text, expected in PLACED_PAIRS:
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


class ParsersCommandLineTest(StubTestCase):
    """The command line against a stub judge replying such text: ``python -m minijudge`` in
    a real process, or main() in this one (the same output, ~0.2 s quicker)."""

    def run_cli(self, reply, *argv, items, subprocess_=False):
        self.srv.content = reply
        argv = [self.write_jsonl("in.jsonl", items), "--judge-url", self.srv.url,
                "--max-retries", "0", "--timeout", "5"] + list(argv)
        if subprocess_:
            proc = run_process(*argv, env=dict(os.environ), universal_newlines=True)
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


ALTERNATIVE_RATINGS = [  # (judge output, scale, rating)
    # the real reply of issue 28: its own rating, then a hypothetical one
    ("The response is clear and accurate.\n\nRating: [[8]]\n\nAdding examples would further "
     "enhance the response, resulting in a rating of [[9]] or [[10]].", (1, 10), 8),
    ("Rating: 8\n\nWith sources it would earn a rating of [[9]] or [[10]].", (1, 10), 8),
    ("I rate it 7. With more detail I would rate it 8 or 9.", (1, 10), 7),
    ("I would rate it 7 or 8. Overall, I rate it 8.", (1, 10), 8),
    ("8\n\nWith sources, [[9]] or [[10]].", (1, 10), 8),
    ("Rating: [[8]]\n\nNote: citations would make it [[9]]-[[10]].", (1, 10), 8),
    ("Rating: [[8]] (or [[9]] with examples)", (1, 10), 8),
    # a hypothetical after the stated rating ("if", "could", "it would") does not win
    ("Rating: [[7]]\n\nWith sources it would get a rating of [[9]].", (1, 10), 7),
    ("Rating: [[7]]\n\nIf it cited sources, I would give it a rating of [[9]].", (1, 10), 7),
    ("Rating: [[7]]. A version with sources could earn a rating of [[9]].", (1, 10), 7),
    ("I would rate this response [[8]].", (1, 10), 8),  # "I would" states the verdict
    ("If I had to choose, I would rate it [[6]].", (1, 10), 6),  # a hypothetical alone stands
    # alternatives alone are no verdict
    ("I'd say [[8]] or maybe [[9]]", (1, 10), None),
    ("Good answer. A rating of [[9]] or [[10]] would fit.", (1, 10), None),
    ("Rating: [[7]] or [[8]]", (1, 10), None),
    ("Rating: [[7]]/[[8]]", (1, 10), None),
    ("Rating: [[7]] to [[8]]", (1, 10), None),
    ("Rating: 7 or 8", (1, 10), None),
    ("Rating: 4/5 or 5/5", (1, 5), None),
    ("Score: 3 or 4 out of 5", (1, 5), None),
    ("I would rate it 7 to 8.", (1, 10), None),
    ("Rating: between 7 and 8", (1, 10), None),
    ("Rating: between [[7]] and [[8]] out of 10", (1, 10), None),
    # an alternative stated as the rating outranks a number in prose after it
    ("Overall rating: 8 or 9. The response gives 3 examples.", (1, 10), None),
    # a dash or a list after the rating is no alternative
    ("Rating: [[8]] - a solid answer.", (1, 10), 8),
    ("Rating: [[8]]\n- 2 issues remain", (1, 10), 8),
    ("Rating: 4\n\nOn a scale of 1 to 5.", (1, 5), 4),
    ("Rating: 8 and 2 minor issues", (1, 10), 8),
]


ALTERNATIVE_VERDICTS = [  # (judge output, verdict)
    ("Assistant A is more accurate.\n\n[[A]]\n\nIf B cited sources it would be [[B]] or [[C]].",
     "A"),
    ("My final verdict is [[A>B]]. Were B shorter it could be [[A=B]] or [[B>A]].", "A"),
    ('Output "[[A]]" if A is better, "[[B]]" if B is better, "[[C]]" for a tie.\n\n[[B]]', "B"),
    ("Reply [[A]], [[B]] or [[C]].\n\nAssistant B follows the question.\n\n[[B]]", "B"),
    ("[[A]] (or [[C]] if ties are allowed)", "A"),
    ("[[A]] vs [[B]]: [[A]]", "A"),
    ("Verdict: [[B]]\n\nIf A had cited sources, the verdict would be [[A]].", "B"),
    ("If forced to pick: [[A]]", "A"),
    ("It is close: [[A]] or [[C]].", None),
    ("[[A]] or perhaps [[C]]", None),
    ("[[A>B]] or [[A=B]]", None),
    ("[[A]]/[[B]]", None),
    ("Assistant A is better. My verdict: [[A]] or [[C]].", None),
    ("Either Output (a) or Output (b) is better; both are fine.", None),
    ("Output (a) or Output (b)? Hard to say. Output (b) is better.", "B"),
]


ALTERNATIVE_ANSWERS = [  # (judge output, verdict)
    ("Verdict: yes or no is hard to say here.", None),
    ("Correct: true/false", None),
    ("Answer: yes and no, it depends.", None),
    ("The response is correct or incorrect depending on rounding.", None),
    ("Answer: yes or no?\nThe response is wrong.\nAnswer: no", False),
    ("Yes or no: the response is correct.", True),
    ("Yes, the response is correct.", True),
    ("Answer: no. The reference says 1 or 2.", False),
]


ALTERNATIVE_PAIRS = [  # (judge output, scores)
    ("Assistant 1: 7 or 8\nAssistant 2: 9", None),
    ("Assistant 1: 8\nAssistant 2: 6\n\nWith fixes, Assistant 2 deserves 8 or 9.", (8.0, 6.0)),
    ("Assistant 1: 8/10\nAssistant 2: 6/10 or 7/10", None),
    ("Assistant 1: 8\nAssistant 2: 6 - it misses the point.", (8.0, 6.0)),
]


QUALITY = {"name": "quality", "description": "How good is it?",
           "options": {"Excellent": 1.0, "Good": 0.5, "Poor": 0.0}}


ALTERNATIVE_OPTIONS = [  # (judge output, option)
    ("Good", "Good"),
    ("**good**", "Good"),
    ("The answer is fine but thin.\n\nFinal answer: Excellent", "Excellent"),
    ("Good is fine; Excellent fits better.\n\nExcelent", "Excellent"),  # a typo, still read
    ('{"option": "good"}', "Good"),  # a structured reply, loosely as a line is
    ('{"option": "Good or Excellent"}', None),
    ("Excellent/Good", None),
    ("Good or Excellent", None),
    ("It is either Good or Excellent.", None),
]


class AlternativesTest(unittest.TestCase):
    """Issue 28's parser items: criterion options that only differ in case are refused wherever
    a criterion is loaded; ratings, verdicts, yes/no answers, score pairs and options
    offered as alternatives ("[[9]] or [[10]]") are no verdict, and the one stated as the
    verdict wins over them; the --html page shows at most a capped part of each field.
    Parser cases are tables looped with subTest; the rest runs the real command line against
    the loopback stub."""

    def test_a_rating_offered_as_an_alternative_is_not_the_rating(self):
        for text, scale, expected in ALTERNATIVE_RATINGS:
            with self.subTest(text=text, scale=scale):
                self.assertEqual(parse_rating(text, scale=scale), expected)

    def test_a_verdict_offered_as_an_alternative_is_not_the_verdict(self):
        for text, expected in ALTERNATIVE_VERDICTS:
            with self.subTest(text=text):
                self.assertEqual(parse_verdict(text), expected)

    def test_a_yes_or_no_offered_together_is_no_answer(self):
        for text, expected in ALTERNATIVE_ANSWERS:
            with self.subTest(text=text):
                self.assertEqual(parse_binary(text), expected)

    def test_scores_offered_as_alternatives_are_not_the_scores(self):
        for text, expected in ALTERNATIVE_PAIRS:
            with self.subTest(text=text):
                self.assertEqual(parse_comparative(text), expected)


    def test_offers_are_found_in_linear_time(self):
        # a quadratic regex took 2.4 s (rating) and 9.8 s (verdict) on 8,000 spaces: on
        # 20,000, 15 s and 60 s; linear, a few hundredths
        import time
        spaces = " " * 20000
        for text in ("Rating: 8 or" + spaces + "x", "[[A]] or" + spaces + "x",
                     "Answer: yes or" + spaces + "x", "Assistant 1: 7 or" + spaces + "x",
                     "Rating: [[8]] or " * 1000, "[[A]] (or " * 2000, "between 7 and " * 1500,
                     "if it would be [[A]]. " * 2000):
            with self.subTest(text=text[:20]):
                started = time.perf_counter()
                parse_rating(text, scale=(1, 10))
                parse_verdict(text)
                parse_binary(text)
                parse_comparative(text)
                self.assertLess(time.perf_counter() - started, 2.0)


class CriterionCommandLine(StubTestCase):
    def main(self, *argv, items, code=0):
        argv = ["--judge-url", self.srv.url, "--max-retries", "0", "--timeout", "5"] + list(
            argv) + [self.write_jsonl("in.jsonl", items)]
        got, out, err = run_main(argv)
        self.assertEqual(got, code, err)
        return [json.loads(line) for line in out.splitlines()], err


class AlternativeOptionsTest(CriterionCommandLine):
    def test_options_offered_as_alternatives_pick_none(self):
        replies = {"case-{}".format(i): text for i, (text, _) in enumerate(ALTERNATIVE_OPTIONS)}
        self.srv.responder = lambda request: next(
            text for case, text in replies.items() if case + "\n" in request.prompt)
        out, err = self.main("--criteria", self.write("q.json", json.dumps(QUALITY)),
                             "--max-error-rate", "1", items=[
                                 {"question": "q", "response": case} for case in replies])
        for (text, expected), record in zip(ALTERNATIVE_OPTIONS, out):
            with self.subTest(text=text):
                self.assertEqual(record.get("judge_option"), expected)
                status = "ok" if expected else "parse_error"
                self.assertEqual(record["judge_status"], status)


_CASE = {"name": "tone", "options": {"Good": 1.0, "good": 0.0, "Bad": 0.0}}


_CASE_ERROR = ("criterion 'tone': options 'Good' and 'good' differ only in case, spaces or "
               "punctuation: a reply naming one would match both")


class CriterionOptionsTest(CriterionCommandLine):
    """Options a reply cannot tell apart are refused wherever a criterion comes from."""

    def test_from_criteria(self):
        for options in ({"Good": 1.0, "good": 0.0}, {"Good": 1.0, " good.": 0.0}):
            with self.subTest(options=options):
                crit = self.write("c.json", json.dumps({"name": "tone", "options": options}))
                out, err = self.main("--criteria", crit, items=[{"question": "q",
                                                                 "response": "r"}], code=2)
                self.assertEqual(out, [])
                self.assertEqual(err, "minijudge: error: criterion 'tone': options {!r} and {!r} "
                                 "differ only in case, spaces or punctuation: a reply naming "
                                 "one would match both\n".format(*options))
        self.assertEqual(self.srv.chat_count, 0)

    def test_from_a_judges_file(self):
        crit = self.write("c.json", json.dumps(_CASE))
        judges = self.write("judges.json", json.dumps([{"name": "j1", "criteria": crit}]))
        out, err = self.main("--judges", judges, items=[{"question": "q", "response": "r"}],
                             code=2)
        self.assertEqual(err, "minijudge: error: " + _CASE_ERROR + "\n")

    def test_from_a_records_field_is_that_records_bad_record(self):
        self.srv.content = "Good"
        tone = dict(_CASE, options={"Good": 1.0, "Bad": 0.0})
        out, err = self.main("--criteria-field", "crit", "--max-error-rate", "1", items=[
            {"question": "q", "response": "r", "crit": _CASE},
            {"question": "q", "response": "r", "crit": tone}])
        self.assertEqual([(r["judge_status"], r["judge_score"]) for r in out],
                         [("bad_record", 0.0), ("ok", 1.0)])
        self.assertIn("line 1: field 'crit': " + _CASE_ERROR, out[0]["judge_error"])

    def test_from_python(self):
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url, criterion=_CASE)
        self.assertEqual(str(caught.exception), _CASE_ERROR)
        judge = minijudge.LLMJudge(self.srv.url, template="criterion")
        with self.assertRaises(minijudge.JudgeError) as caught:
            judge.judge({"question": "q"}, "r", criterion=_CASE)
        self.assertEqual(str(caught.exception), _CASE_ERROR)

    def test_an_option_with_no_letter_or_digit_is_refused(self):
        crit = self.write("c.json", json.dumps({"name": "tone", "options": {"Good": 1, "--": 0}}))
        out, err = self.main("--criteria", crit, items=[{"question": "q", "response": "r"}],
                             code=2)
        self.assertEqual(err, "minijudge: error: criterion 'tone': option '--' has no letter or "
                         "digit a reply could name\n")


class EchoedOptionListHostileTest(CommandLineTestCase):
    """Issue 28's independent hostile campaign (hostC).

    A reply that echoes the criterion's option list names no option: its last line is
    the list's last item, not a verdict (on main: 'Poor', score 0.0, status ok, exit 0)."""

    def test_an_echoed_list_is_no_verdict(self):
        criteria = self.write("c.json", json.dumps(QUALITY))
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
        criteria = self.write("c.json", json.dumps(QUALITY))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four"}])
        for reply in ("Options:\n- Excellent\n- Good\n- Poor\n\nGood", "Good\n\n- Excellent\n"
                      "- Good\n- Poor"):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_status"], record["judge_option"],
                                  record["judge_score"]), (0, "ok", "Good", 0.5))


class NearOptionIsNoTypoHostileTest(CommandLineTestCase):
    """Issue 28's independent hostile campaign (hostC).

    The typo rule read a reply that is part of an option's name as that option: "Correct"
    was "Incorrect" (score 0.0, status ok, exit 0). A reply inside an option's name, or
    holding it, is another word, not a typo of it."""

    def test_a_word_inside_an_option_is_not_that_option(self):
        for options, reply in (({"Fully correct": 1.0, "Partially correct": 0.5,
                                 "Incorrect": 0.0}, "Correct"),
                               ({"Fully correct": 1.0, "Incorrect": 0.0}, "correct."),
                               ({"Fine": 1.0, "Unacceptable": 0.0}, "Acceptable"),
                               ({"On topic": 1.0, "Irrelevant": 0.0}, "relevant")):
            with self.subTest(reply=reply):
                criteria = self.write("c.json", json.dumps(dict(QUALITY, options=options)))
                source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_status"], record.get("judge_option")),
                                 (1, "parse_error", None))

    def test_a_typo_is_still_read(self):
        options = {"Relevant": 1.0, "Irrelevant": 0.0}
        criteria = self.write("c.json", json.dumps(dict(QUALITY, options=options)))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
        for reply, option in (("Relevent", "Relevant"), ("Irrelevent", "Irrelevant")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_option"]), (0, option))


class HypotheticalAfterTheRatingHostileTest(CommandLineTestCase):
    """Issue 28's independent hostile campaign (hostC).

    A hypothetical rating loses to any rating stated, not only to one of its own kind:
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


class HypotheticalNamedFirstHostileTest(CommandLineTestCase):
    """Issue 28's independent hostile campaign (hostC).

    A verdict followed by "would", "could" or "might" is a hypothetical too: "[[A]] (though
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


class NegatedVerdictHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    A [[verdict]] the judge rules out ("not [[A]]") is no verdict: "Final verdict: [[B]]
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


class AlternativesAfterACommaHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    Ratings offered as alternatives after a comma ("4, or perhaps 5", "3, maybe 4") are no
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


class AnotherLabelAfterTheRatingWordHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    "Rating explanation: the answer is 2 lines long." after "Rating: 5" was read as the
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


class RevisedRatingHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    A rating the judge names as its initial one and then revises ("My initial rating was
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


class BinaryLabelAsAQuestionHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    A label asked as a question, then answered ("Correct? No."), was read by its first
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


class OptionRevisedAtTheEndHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    A reply that names an option on its first line and another, revised, on its last
    ("Excellent ... On reflection: Poor") was read by its first line: Excellent, 1.0, ok."""

    def test_a_revision_on_the_last_line_is_not_overruled_by_the_first(self):
        criteria = self.write("c.json", json.dumps(QUALITY))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "5"}])
        for reply in ("Excellent\n\nWait: the response says 5, not 4. On reflection: Poor",
                      "Good\n\nActually it is wrong, so Poor."):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertNotIn(record.get("judge_option"), ("Excellent", "Good"))

    def test_a_first_line_with_its_reason_after_is_still_read(self):
        criteria = self.write("c.json", json.dumps(QUALITY))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "4"}])
        for reply in ("Good\n\nThe response is right but terse; it is not Excellent.",
                      "Good\n\nThe response is right but terse."):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual((code, record["judge_option"]), (0, "Good"))


class OptionNegatedWithAnIntensifierHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    "The response is not very good." named Good (0.5, status ok, exit 0): only "not good"
    itself was a negation; "no good", "hardly excellent", "isn't really good" neither."""

    def test_a_negated_option_is_not_picked(self):
        criteria = self.write("c.json", json.dumps(QUALITY))
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


class EquallyCloseOptionsHostileTest(CommandLineTestCase):
    """Issue 28's second hostile campaign (host2C).

    A reply as close to two options as a typo of either ("Faiz": Fair or Fail) was read
    as the one that sorts last (Fair, 0.5, status ok, exit 0)."""

    def test_a_typo_of_two_options_picks_none(self):
        options = {"Pass": 1.0, "Fair": 0.5, "Fail": 0.0}
        criteria = self.write("c.json", json.dumps(dict(QUALITY, options=options)))
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "5"}])
        for reply, option in (("Faiz", None), ("Fial", "Fail"), ("Fa1l", "Fail")):
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, (record,), err = self.run_cli("--criteria", criteria, source)
                self.assertEqual(record.get("judge_option"), option)


class ParseRatingScaleHostileTest(unittest.TestCase):
    """Issue 28's second hostile campaign (host2B).

    parse_rating's scale was not checked: (nan, 5) read every reply as None, (True, 5) was
    taken as (1, 5), "1,5" was a TypeError from inside the comparison."""

    def test_the_scale_is_checked_as_the_judges_is(self):
        for scale in ((float("nan"), 5), (True, 5), "1,5", (5, 1), (1, float("inf")), None):
            with self.subTest(scale=scale):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.parse_rating("4", scale=scale)
                self.assertEqual(str(caught.exception), "scale must be a pair [LO, HI] of "
                                 "numbers with LO < HI; got {!r}".format(scale))
        self.assertEqual(minijudge.parse_rating("Rating: 8", scale=[1, 10]), 8)


class CriterionScoresHostileTest(StubTestCase):
    """Issue 28's independent hostile campaign (hostB): a criterion's option scores are
    numbers."""

    def test_an_option_score_that_is_not_a_number_is_refused(self):
        """On main true and "1" were read as 1.0, "0" as 0.0: exit 0, every record scored."""
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for options in ('{"A": true, "B": 0}', '{"A": "1", "B": 0}',
                        '{"A": {"score": "0.5"}, "B": 0}'):
            with self.subTest(options=options):
                criteria = self.write("c.json", '{"name": "c", "description": "d", "options": '
                                                + options + '}')
                code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                           "--criteria", criteria, source])
                got = json.loads(criteria_text(criteria))
                self.assertEqual((code, out, err.strip()), (
                    2, "", "minijudge: error: a criterion needs a name and options mapping each "
                           "option to a score; got {!r}".format(got)))
        self.assertEqual(self.srv.chat_count, 0)


def criteria_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


SCALES = [(1, 5), (1, 10), (0, 9), (0, 100), (4, 4)]


PARSER_TESTS = ("test_parsers.py", "test_records.py", "test_html.py",
                "test_missing_values.py", "test_servers.py", "test_real_data.py")


def texts_in(path):
    """Every string constant of a test module."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def near_misses():
    """The short forms and what differs from them by a character."""
    numbers = [str(n) for n in range(101)] + ["00", "07", "4.5", "-1", "٤", "4 ", " 4"]
    forms = ["[[{}]]", "Rating: [[{}]]", "rating: [[{}]]", "Rating:  [[{}]]", "Rating:[[{}]]",
             "Rating: [[{}]]\n", "\nRating: [[{}]]", " [[{}]]", "[[{}]] ", "[[{}]]]",
             "[[[{}]]", "Rating: [[{}]] or [[5]]", "[[3]] or [[{}]]", "**Rating: [[{}]]**",
             "Rating: [{}]", "Rating: {}", "<think>[[2]]</think>Rating: [[{}]]",
             "Rating: [[\u200b{}]]", "Rating: [[{}]].", "Score: [[{}]]"]
    return [form.format(n) for form, n in itertools.product(forms, numbers)]


class ShortRatingAsTheGeneralPathTest(unittest.TestCase):
    """What the offline paths' shortcuts must keep: the same answers as the full readings.

    _read_rating reads a whole reply of only "Rating: [[4]]" or "[[4]]" with one regex, not
    mention by mention; here both readings agree on every real judge reply (7,217, where the
    data is: see test_real_data), on every text in the parser tests, and on the near misses."""

    def assert_same(self, texts):
        """Both readings agree on each text the pre-check reads (any other text goes to
        _read_rating_fully itself: read fully once per scale, a real reply takes 0.3 ms)."""
        short = [text for text in texts if minijudge._SHORT_RATING_RE.fullmatch(text)]
        for text, scale in itertools.product(short, SCALES):
            expected = minijudge._read_rating_fully(text, scale)
            got = minijudge._read_rating(text, scale)
            if got != expected or type(got[1]) is not type(expected[1]):
                self.fail("{!r} on {}: {} read at once, {} fully".format(
                    text[:200], scale, got, expected))
        return len(short)

    def test_near_misses(self):
        self.assert_same(near_misses())
        self.assertEqual(minijudge._read_rating("Rating: [[4]] or [[5]]", (1, 5)), (None, None))
        self.assertEqual(minijudge._read_rating("Rating: [[4]]", (1, 5)), (4, 4))
        self.assertEqual(minijudge._read_rating("[[50]]", (1, 10)), (None, 50))

    def test_parser_tests_texts(self):
        texts = set()
        for name in PARSER_TESTS:
            texts.update(texts_in(os.path.join(HERE, name)))
        self.assertGreater(len(texts), 500)
        self.assertGreaterEqual(self.assert_same(sorted(texts)), 4)

    @unittest.skipUnless(HAVE_DATA, "no real judge outputs in " + DATA_DIR)
    def test_real_replies(self):
        texts = []
        for name in RATING_FILES + PAIR_FILES:
            with open(os.path.join(DATA_DIR, name + ".jsonl"), encoding="utf-8") as f:
                texts.extend(json.loads(line)["raw"] for line in f if line.strip())
        self.assertEqual(len(texts), 7217)
        self.assertGreaterEqual(self.assert_same(texts), 2)  # "Rating: [[50]]", ...


class RealDataReportTest(unittest.TestCase):
    """Issue 30, the first hour (first30c): the parser-accuracy report run from a clone without
    its data.

    `python tests/test_real_data.py --report` where a fresh clone has no data."""

    def setUp(self):
        import tempfile
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.clone = os.path.join(tmp.name, "clone")
        os.makedirs(os.path.join(self.clone, "tests"))
        copy_minijudge(self.clone)  # with its .pyc, as after a first run
        shutil.copy(os.path.join(HERE, "test_real_data.py"), os.path.join(self.clone, "tests"))
        self.default = os.path.join(tmp.name, "shared", "data", "judge-outputs")

    def report(self, *args, env=None):
        environ = {k: v for k, v in os.environ.items() if k != "MINIJUDGE_JUDGE_OUTPUTS"}
        environ.update(env or {})
        return subprocess.run([*PYTHON, "tests/test_real_data.py", "--report", *args],
                              cwd=self.clone, env=environ, capture_output=True, text=True)

    def test_without_the_data_it_says_what_it_needs_and_exits_1(self):
        for env in (None, {"MINIJUDGE_JUDGE_OUTPUTS": ""}):
            with self.subTest(env=env):
                proc = self.report("--show", "5", env=env)
                self.assertEqual((proc.returncode, proc.stdout), (1, ""))
                self.assertEqual(proc.stderr, (
                    "test_real_data: error: --report needs the real judge outputs, which a "
                    "clone does not hold: none of the 7 files is in {}; put them in "
                    "../shared/data/judge-outputs beside the clone, or name their folder in "
                    "MINIJUDGE_JUDGE_OUTPUTS\n").format(self.default))

    def test_a_folder_with_some_files_names_those_missing(self):
        folder = os.path.join(self.clone, "outputs")
        os.makedirs(folder)
        with open(os.path.join(folder, "mtbench_pair.jsonl"), "w") as f:
            f.write("")
        proc = self.report(env={"MINIJUDGE_JUDGE_OUTPUTS": folder})
        self.assertEqual((proc.returncode, proc.stdout), (1, ""))
        self.assertIn(": {} lacks mtbench_single.jsonl, arena_bench_v1_single.jsonl, "
                      "llmbar_rating.jsonl, arena_hard_pair.jsonl, llmbar_pair.jsonl, "
                      "vicuna_review_scorepair.jsonl; put them".format(folder), proc.stderr)

    def test_show_without_a_number_is_a_usage_error_not_a_traceback(self):
        for args in (["--show"], ["--show", "many"]):
            with self.subTest(args=args):
                proc = self.report(*args)
                self.assertEqual(proc.returncode, 2)
                self.assertNotIn("Traceback", proc.stderr)
                self.assertIn("--show", proc.stderr)

    def test_the_docs_say_so_next_to_the_command(self):
        text = " ".join(read("docs", "templates-and-parsers.md").split())
        self.assertIn("`python tests/test_real_data.py --report --show 5` needs the real "
                      "judge outputs, which a clone does not hold: put them in "
                      "`../shared/data/judge-outputs` beside it, or name their folder in "
                      "`MINIJUDGE_JUDGE_OUTPUTS`; without them it says which files are "
                      "missing and exits 1", text)


if __name__ == "__main__":
    unittest.main()
