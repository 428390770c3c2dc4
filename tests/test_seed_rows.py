"""The seeds' remaining rows (issue 46, item 6 a-c): ``{response1}``/``{response2}`` as the
names of a pair's two answers, a binary reply written ``Score: 1``, and scales that go
below 0 (``--scale -2,2``, ``scale=(-5, 5)``, a ``--judges`` entry's).

Each row runs through ``python -m minijudge`` in a subprocess and through Python, side by
side, against a stub that answers as a real judge would: its reasons, then the verdict
in the form the template asks for. The parser rows are also tables of replies, hostile
ones included (a dash that is a bullet or a separator, never a sign by accident).
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, chat, run_main  # noqa: E402


class SeedRowsTest(StubTestCase):

    def setUp(self):
        super().setUp()
        self.twin = self.start_stub()  # Python's stub: the same replies, its own requests

    def cli(self, *argv):
        """(exit code, stderr) of main() in this process: the parser and checks of python
        -m minijudge, without a process's 0.1 s of CPU each."""
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                 "--no-preflight", "-o", self.path("out.jsonl"), "--summary",
                                 self.path("s.json"), "--max-error-rate", "1", *argv])
        return code, err

    def python_judge(self, **options):
        judge = minijudge.LLMJudge(self.twin.url, model="m", **options)
        self.addCleanup(judge.close)
        return judge

    def both(self, responder):
        self.srv.responder = self.twin.responder = responder

    def prompts(self, srv):
        return sorted(request.prompt for request in srv.requests if request.json)

    # -- (a) {response1} and {response2}
    def test_response1_and_response2_name_the_two_answers(self):
        template = self.write("pair.txt", "Question: {question}\n\nResponse 1:\n{response1}\n\n"
                                          "Response 2:\n{response2}\n\nWhich is better? End "
                                          "with [[A]] for response 1, [[B]] for response 2.")

        def responder(request):  # the one that says "Paris" wins, wherever it stands
            first = re.search(r"Response 1:\n(.*)\n\nResponse 2", request.prompt or "", re.S)
            if not first:
                return None
            better = "A" if "Paris" in first.group(1) else "B"
            return chat("Only one names the capital.\n[[{}]]".format(better))
        self.both(responder)
        source = self.write_jsonl("in.jsonl", [
            {"question": "Capital of France?", "response_a": "Lyon.", "response_b": "Paris."}])
        code, err = self.cli("--mode", "pairwise", "--template", template, source)
        self.assertEqual(code, 0, err)
        record = self.records()[0]
        self.assertEqual((record["judge_verdict"], record["judge_consistent"]), ("B", True))
        prompts = self.prompts(self.srv)
        self.assertIn("Response 1:\nLyon.\n\nResponse 2:\nParis.", prompts[0] + prompts[1])
        with open(template, encoding="utf-8") as f:
            judge = self.python_judge(template=f.read(), parser="verdict")
        j = judge.compare({"question": "Capital of France?"}, "Lyon.", "Paris.")
        self.assertEqual((j.value, j.details["consistent"]), ("B", True))
        self.assertEqual(self.prompts(self.twin), prompts)
        # render: a record's own response1 wins over the alias, as {prediction} does
        self.assertEqual(minijudge.render("{response1}|{response2}", {"response_a": "a",
                                                                      "response_b": "b"}),
                         "a|b")
        self.assertEqual(minijudge.render("{response1}", {"response_a": "a",
                                                          "response1": "own"}), "own")

    def test_records_holding_response1_and_response2_are_pointed_to_their_flags(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response1": "a",
                                                "response2": "b", "notes": "x"}])
        code, err = self.cli("--mode", "pairwise", source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.records()[0]["judge_error"],
                         "line 1: no 'response_a' field (choose one with --response-a-field; "
                         "the record has notes, question, response1, response2); pass "
                         "--response-a-field response1?")
        self.assertEqual(self.srv.requests, [])

    # -- (b) a binary reply written "Score: 1"
    def test_a_binary_score_of_1_or_0_is_yes_or_no(self):
        template = self.write("correct.txt", "Is the response correct?\nQuestion: {question}\n"
                                             "Reference: {reference}\nResponse: {response}\n"
                                             "Explain briefly, then write Score: 1 if it is "
                                             "correct, Score: 0 if not.")
        replies = {"a": "It matches the reference.\nScore: 1",
                   "b": "It names the wrong city.\n\n**Score:** 0",
                   "c": "Close, but not exact.\nScore: 10",
                   "d": "Score: 1/5",
                   "e": "Score: -1",
                   "f": "Score: 1.5"}

        def responder(request):
            match = re.search(r"Response: (\w)", request.prompt or "")
            return chat(replies[match.group(1)]) if match else None
        self.both(responder)
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "answer": "Paris", "response": key} for key in replies])
        code, err = self.cli("--mode", "binary", "--template", template, source)
        self.assertEqual(code, 0, err)
        got = [(r["judge_status"], r["judge_value"]) for r in self.records()]
        expected = [("ok", True), ("ok", False)] + [("parse_error", None)] * 4
        self.assertEqual(got, expected)
        with open(template, encoding="utf-8") as f:
            judge = self.python_judge(template=f.read(), parser="binary")
        self.assertEqual([(j.status, j.value) for j in (
            judge.judge({"question": "q", "answer": "Paris"}, key) for key in replies)],
            expected)

    def test_parse_binary_reads_a_score_of_1_or_0_and_nothing_like_it(self):
        cases = [("Score: 1", True), ("Score: 0", False), ("score:1", True),
                 ("**Score:** 1", True), ('{"score": 1}', True), ('{"score": 0}', False),
                 ("Reasons.\nScore: 0 (incorrect)", False), ("Score: 1.", True),
                 ("Score: 10", None), ('{"score": 10}', None), ("Score: 1/5", None),
                 ("Score: 1 / 5", None), ("Score: 1 out of 5", None), ("Score: -1", None),
                 ("Score: \u22121", None), ("Score: 1.5", None), ("Score: 0.0", None),
                 ("Score: 01", None), ("Score: 1 or 0", None),
                 ("Answer: 1", True), ("Answer: 0", False)]
        for text, expected in cases:
            with self.subTest(text=text):
                self.assertIs(minijudge.parse_binary(text), expected)

    # -- (c) scales below 0
    def test_a_scale_below_zero_from_the_flag_python_and_a_judges_entry(self):
        template = self.write("signed.txt", "Rate the response from -2 (harmful) to 2 "
                                            "(helpful).\n{question}\n{response}\nGive reasons, "
                                            "then end with Rating: N.")
        replies = {"a": "Mostly unhelpful.\nRating: -1",
                   "b": "Neither helps nor harms.\nRating: 0",
                   "c": "- clear\n- correct\nRating: 2",
                   "d": "Harmful advice.\n\nRating: \u22122",
                   "e": "Rating: -3",
                   "f": "Rating: - 1"}  # a dash between words: 1, not -1

        def responder(request):
            match = re.search(r"\n(\w)\nGive reasons", request.prompt or "")
            return chat(replies[match.group(1)]) if match else None
        self.both(responder)
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": key}
                                               for key in replies])
        expected = [("ok", -1, 0.25), ("ok", 0, 0.5), ("ok", 2, 1.0), ("ok", -2, 0.0),
                    ("out_of_range", None, 0.0), ("ok", 1, 0.75)]
        for how in (["--scale", "-2,2"], ["--scale=-2,2"]):
            with self.subTest(how=how):
                code, err = self.cli("--template", template, *how, source)
                self.assertEqual(code, 0, err)
                got = [(r["judge_status"], r["judge_value"], r["judge_score"])
                       for r in self.records()]
                self.assertEqual(got, expected)
                summary = self.summary()
                self.assertEqual(summary["parameters"]["scale"], [-2, 2])
                self.assertEqual(summary["ratings"], {"-2": 1, "-1": 1, "0": 1, "1": 1, "2": 1})
                self.assertEqual(summary["mean_value"], 0.0)  # (-1 + 0 + 2 - 2 + 1) / 5
                self.assertIn("(0 on the -2 to 2 scale", err)
                self.assertIn("first out_of_range: the judge answered -3 but the scale is -2 "
                              "to 2: 'Rating: -3'", err)
        with open(template, encoding="utf-8") as f:
            text = f.read()
        judge = self.python_judge(template=text, scale=(-2, 2))
        got = [judge.judge({"question": "q"}, key) for key in replies]
        self.assertEqual([(j.status, j.value, j.score) for j in got], expected)

        judges = self.write("judges.json", json.dumps([
            {"name": "signed", "template": "signed.txt", "options": {"scale": [-5, 5]}}]))
        code, err = self.cli("--judges", judges, source)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["signed_score"] for r in self.records()],
                         [0.4, 0.5, 0.7, 0.3, 0.2, 0.6])
        self.assertEqual(self.records()[4]["signed_value"], -3)
        judge = self.python_judge(template=text, scale=(-5, 5))
        self.assertEqual(judge.judge({"question": "q"}, "e").score, 0.2)

    def test_a_scale_below_zero_refused_when_it_is_no_scale(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        template = self.write("t.txt", "{question} {response}")
        for scale in ("-2,-3", "-2", "2,-2", "-2,2,3", "-inf,2", "-nan,2"):
            with self.subTest(scale=scale):
                given = ["--scale", scale]  # a value, though it starts with "-"
                if scale.startswith(("-i", "-n")):  # a word, to argparse: a flag unknown
                    given = ["--scale=" + scale]
                code, err = self.cli("--template", template, *given, source)
                self.assertEqual((code, err), (2, "minijudge: error: --scale must be LO,HI "
                                                  "with LO < HI; got {!r}\n".format(scale)))
        with self.assertRaises(minijudge.JudgeError):
            minijudge.LLMJudge(judge_fn=lambda m: "0", scale=(2, -2))

    def test_parse_rating_on_a_scale_below_zero(self):
        # (reply, on -2..2, on 1..5): a sign counts joined to its digits, after no word,
        # digit or dash; never on a scale that has no negatives
        cases = [
            ("Rating: -1", -1, None), ("-1", -1, None), ("[[-2]]", -2, None),
            ("Rating: [[-1]]", -1, None), ("Rating:-1", -1, None), ("Rating: \u22121", -1, None),
            ("Rating: -1.5", -1.5, None), ("Rating: -0", 0, None), ("I'd give it a -2.", -2, None),
            ("**Rating:** -1", -1, None), ('{"rating": -1}', -1, None),
            ("Rating: 1", 1, 1), ("Rating: 3", None, 3),
            ("- 1", None, None),                              # a bullet, not a sign
            ("- Clarity: poor\n- Accuracy: poor\nRating: 0", 0, None),
            ("Rating: - 1", 1, 1),                            # a dash between words
            ("The rating is 1 - quite good", 1, 1),
            ("Rating: 2-1", None, None), ("Rating: --1", None, None),
            ("Rating: -3", None, None),                       # off the scale
            ("On a scale of -2 to 2, I rate this -1", -1, None),
            ("Scale (-2=awful, 2=great). My rating: -2", -2, None),
            ("Rating: -1 to 1", None, None),
            ("Rating: [[0]] or [[-1]]", None, None), ("Rating: -1 or 0", None, None),
        ]
        for text, signed, plain in cases:
            with self.subTest(text=text):
                self.assertEqual(minijudge.parse_rating(text, scale=(-2, 2)), signed)
                self.assertEqual(minijudge.parse_rating(text, scale=(1, 5)), plain)

    def test_a_json_reply_on_a_scale_below_zero(self):
        reader = minijudge._PARSERS["json"].read
        for text, expected in (('{"score": -1}', -1), ('{"score": "-1"}', -1.0),
                               ("Score: -1", -1), ('{"score": "- 1"}', None),
                               ("Score: - 1", None), ("Score: 2-1", None)):
            with self.subTest(text=text):
                value, _ = reader(text, (-2, 2))
                numbers = None
                if value:
                    numbers = minijudge._json_numbers(value)["score"]
                self.assertEqual(numbers, expected)


if __name__ == "__main__":
    unittest.main()
