"""Issue 28's parser items and the HTML page's size: criterion options that only differ in
case are refused wherever a criterion is loaded; ratings, verdicts, yes/no answers, score
pairs and options offered as alternatives ("[[9]] or [[10]]") are no verdict, and the one
stated as the verdict wins over them; the --html page shows at most a capped part of each
field. Parser cases are tables looped with subTest; the rest runs the real command line
against the loopback stub."""
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from minijudge import parse_binary, parse_comparative, parse_rating, parse_verdict  # noqa: E402
from stub import PYTHON, StubTestCase, run_main  # noqa: E402

RATINGS = [  # (judge output, scale, rating)
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

VERDICTS = [  # (judge output, verdict)
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

BINARY = [  # (judge output, verdict)
    ("Verdict: yes or no is hard to say here.", None),
    ("Correct: true/false", None),
    ("Answer: yes and no, it depends.", None),
    ("The response is correct or incorrect depending on rounding.", None),
    ("Answer: yes or no?\nThe response is wrong.\nAnswer: no", False),
    ("Yes or no: the response is correct.", True),
    ("Yes, the response is correct.", True),
    ("Answer: no. The reference says 1 or 2.", False),
]

PAIRS = [  # (judge output, scores)
    ("Assistant 1: 7 or 8\nAssistant 2: 9", None),
    ("Assistant 1: 8\nAssistant 2: 6\n\nWith fixes, Assistant 2 deserves 8 or 9.", (8.0, 6.0)),
    ("Assistant 1: 8/10\nAssistant 2: 6/10 or 7/10", None),
    ("Assistant 1: 8\nAssistant 2: 6 - it misses the point.", (8.0, 6.0)),
]

QUALITY = {"name": "quality", "description": "How good is it?",
           "options": {"Excellent": 1.0, "Good": 0.5, "Poor": 0.0}}
OPTIONS = [  # (judge output, option)
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
    def test_a_rating_offered_as_an_alternative_is_not_the_rating(self):
        for text, scale, expected in RATINGS:
            with self.subTest(text=text, scale=scale):
                self.assertEqual(parse_rating(text, scale=scale), expected)

    def test_a_verdict_offered_as_an_alternative_is_not_the_verdict(self):
        for text, expected in VERDICTS:
            with self.subTest(text=text):
                self.assertEqual(parse_verdict(text), expected)

    def test_a_yes_or_no_offered_together_is_no_answer(self):
        for text, expected in BINARY:
            with self.subTest(text=text):
                self.assertEqual(parse_binary(text), expected)

    def test_scores_offered_as_alternatives_are_not_the_scores(self):
        for text, expected in PAIRS:
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


class CommandLine(StubTestCase):
    def main(self, *argv, items, code=0):
        argv = ["--judge-url", self.srv.url, "--max-retries", "0", "--timeout", "5"] + list(
            argv) + [self.write_jsonl("in.jsonl", items)]
        got, out, err = run_main(argv)
        self.assertEqual(got, code, err)
        return [json.loads(line) for line in out.splitlines()], err


class OptionsTest(CommandLine):
    def test_options_offered_as_alternatives_pick_none(self):
        replies = {"case-{}".format(i): text for i, (text, _) in enumerate(OPTIONS)}
        self.srv.responder = lambda request: next(
            text for case, text in replies.items() if case + "\n" in request.prompt)
        out, err = self.main("--criteria", self.write("q.json", json.dumps(QUALITY)),
                             "--max-error-rate", "1", items=[
                                 {"question": "q", "response": case} for case in replies])
        for (text, expected), record in zip(OPTIONS, out):
            with self.subTest(text=text):
                self.assertEqual(record.get("judge_option"), expected)
                status = "ok" if expected else "parse_error"
                self.assertEqual(record["judge_status"], status)


_CASE = {"name": "tone", "options": {"Good": 1.0, "good": 0.0, "Bad": 0.0}}
_CASE_ERROR = ("criterion 'tone': options 'Good' and 'good' differ only in case, spaces or "
               "punctuation: a reply naming one would match both")


class CriterionOptionsTest(CommandLine):
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


_MIB = 1024 * 1024
_FIELD_CHARS, _FIELDS = 2000, 100  # what docs/outputs.md's "The HTML page" promises


class HtmlPageTest(StubTestCase):
    def test_each_field_shows_at_most_its_cap_with_what_was_left_out(self):
        # records of 1 MiB (40 made the 42 MB page): a run in a real process, then
        # report over its output
        items = [{"question": "q{}".format(i), "response": "x" * _MIB, "notes": {"n": "y" * 9999}}
                 for i in range(4)]
        page, data = self.path("page.html"), self.write_jsonl("in.jsonl", items)
        self.srv.content = "Rating: 3"
        proc = subprocess.run(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--html", page,
             "-o", self.path("out.jsonl"), data], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        code, out, err = run_main(["report", self.path("out.jsonl"), "--html",
                                   self.path("report.html")])
        self.assertEqual(code, 0, err)
        cap = _FIELD_CHARS
        notes = json.dumps({"n": "y" * 9999})
        for name in (page, self.path("report.html")):
            with open(name, encoding="utf-8") as f:
                html = f.read()
            with self.subTest(page=os.path.basename(name)):
                self.assertLess(len(html.encode("utf-8")), 40000)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    "x" * cap, _MIB - cap)), 4)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    minijudge._esc(notes[:cap]), len(notes) - cap)), 4)
                self.assertIn("<pre>Rating: 3</pre>", html)  # short fields whole

    def test_a_record_with_many_fields_shows_the_first_and_the_last_ones(self):
        fields = {"f{:04d}".format(i): i for i in range(1000)}
        data = self.write_jsonl("in.jsonl", [dict(fields, question="q", response="r")])
        page = self.path("page.html")
        self.srv.content = "Rating: 3"
        code, out, err = run_main(["--judge-url", self.srv.url, "--html", page, data])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        half, record = _FIELDS // 2, json.loads(out)
        names = list(record)
        filled = {name for name in names if record[name] not in (None, "", {}, [])}
        shown = re.findall(r"<p><b>(.*?)</b></p>", html)
        self.assertEqual(shown, [n for n in names[:half] if n in filled] + ["…"] + [
            n for n in names[-half:] if n in filled])  # the judge's fields come last: shown
        self.assertIn("<pre>Rating: 3</pre>", html)
        self.assertIn("<p><b>…</b></p><pre>{} more fields</pre>".format(len(names) - 2 * half),
                      html)

if __name__ == "__main__":
    unittest.main()
