"""Parser tables: every rating, verdict and JSON trap of JUDGE-TRAPS.md section 2."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from minijudge import (parse_binary, parse_comparative, parse_json, parse_rating,  # noqa: E402
                       parse_verdict)

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


if __name__ == "__main__":
    unittest.main()
