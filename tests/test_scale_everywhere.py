"""A custom template's scale, the same from every place: --scale LO,HI on the command line,
"scale" in a --judges entry's options and scale= in Python accept and refuse the same
values, the refusals with the same words.

Issue 46's hostile pass: the flag read its ends with int() or float() of whatever the
text held, so "--scale 0,1e3" was refused (int("1e3")) while Python and a judges file took
[0, 1000.0]; "--scale 1_0,20" was read as 10,20 (Python's int() reads underscores); and
"--scale -inf,2" was argparse's "expected one argument" while "--scale=-inf,2" was the
flag's own message. Now the flag reads plain decimal numbers, as --price does.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import CommandLineTestCase, run_main  # noqa: E402

REFUSED = "minijudge: error: --scale must be LO,HI with LO < HI; got {!r}\n"


class ScaleFromEveryPlaceTest(CommandLineTestCase):
    def setUp(self):
        super().setUp()
        self.template = self.write("t.txt", "{question} {response}")
        self.source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])

    def flag(self, *given):
        """(exit code, stderr, the summary's scale or None) of main() with ``given``, in
        this process: the flag is read by the same parser as in ``python -m minijudge``
        (0.05 s a run where a process took 0.25 s of CPU, 26 runs in one test)."""
        summary = self.path("s.json")
        if os.path.exists(summary):
            os.remove(summary)
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight",
                                 "--template", self.template, *given, "--summary",
                                 summary, "-o", self.path("out.jsonl"), self.source])
        scale = self.summary()["parameters"]["scale"] if code == 0 else None
        return code, err, scale

    def judges_file(self, scale):
        judges = self.write("judges.json", json.dumps(
            [{"name": "a", "template": "t.txt", "options": {"scale": scale}}]))
        code, _, err = self.in_process("--judge-url", self.srv.url, "--no-preflight",
                                       "--judges", judges, "-o", self.path("out.jsonl"),
                                       self.source)
        return code, err

    def test_an_exponent_is_read_as_python_and_a_judges_file_read_it(self):
        self.srv.content = "Rating: 500"
        code, err, scale = self.flag("--scale", "0,1e3")
        self.assertEqual((code, scale), (0, [0, 1000.0]), err)
        self.assertEqual(self.records()[0]["judge_score"], 0.5)
        code, err = self.judges_file([0, 1e3])
        self.assertEqual((code, self.records()[0]["a_score"]), (0, 0.5), err)
        judge = minijudge.LLMJudge(judge_fn=lambda messages: "Rating: 500", scale=(0, 1e3),
                                   template="{question} {response}")
        self.assertEqual(judge.judge({"question": "q"}, "r").score, 0.5)

    def test_plain_numbers_still_read_as_before(self):
        self.srv.content = "Rating: 1"
        for given, scale in ((["--scale", "-2,2"], [-2, 2]), (["--scale=-2,2"], [-2, 2]),
                             (["--scale", " -1.5 , 2.5 "], [-1.5, 2.5]),
                             (["--scale", ".5,5."], [0.5, 5.0])):
            with self.subTest(given=given):
                code, err, got = self.flag(*given)
                self.assertEqual((code, got), (0, scale), err)

    def test_what_is_no_plain_number_is_refused_however_it_is_given(self):
        for text in ("1_0,20", "-inf,2", "-nan,2", "inf,2", "0x1,5", "1,5e", "\u22122,2",
                     "1e400,2", "-1e308,1e308", "5,1", "1,1", "1,2,3", "1"):
            for given in (["--scale", text], ["--scale=" + text]):
                with self.subTest(given=given):
                    self.assertEqual(self.flag(*given)[:2], (2, REFUSED.format(text)))
        self.assertEqual(self.srv.chat_count, 0)

    def test_the_python_keyword_and_the_judges_file_refuse_the_same(self):
        words = "scale must be a pair [LO, HI] of numbers with LO < HI; got "
        for scale in ((float("-inf"), 2), (5, 1), (1, 1), (-1e308, 1e308)):
            with self.subTest(scale=scale):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(judge_fn=lambda m: "1", scale=scale)
                self.assertEqual(str(caught.exception), words + repr(scale))
                code, err = self.judges_file(list(scale))
                self.assertEqual((code, err), (2, "minijudge: error: judge a: " + words
                                               + repr(list(scale)) + "\n"))


    def test_the_built_in_rating_template_takes_no_other_scale(self):
        # its words ask for 1 to 5: a reply of 3 was scored on 1-10 as 0.22 ("3 on the
        # 1-10 scale"), a judge answering 1-5 read on another scale with exit 0
        said = ("the built-in rating template asks for a rating from 1 to 5; scale 1-10 "
                "needs a template of your own that asks for it (--template FILE, template=)")
        code, _, err = self.in_process("--judge-url", self.srv.url, "--no-preflight",
                                       "--scale", "1,10", "-o", self.path("out.jsonl"),
                                       self.source)
        self.assertEqual((code, err), (2, "minijudge: error: " + said + "\n"))
        judges = self.write("judges.json", json.dumps([{"name": "a", "options": {
            "scale": [1, 10]}}]))
        code, _, err = self.in_process("--judge-url", self.srv.url, "--no-preflight",
                                       "--judges", judges, "-o", self.path("out.jsonl"),
                                       self.source)
        self.assertEqual(code, 2, err)
        self.assertIn(said, err)
        with self.assertRaises(minijudge.JudgeError) as cm:
            minijudge.LLMJudge(judge_fn=lambda messages: "3", scale=(1, 10))
        self.assertEqual(str(cm.exception), said)
        self.assertEqual(self.srv.chat_count, 0)
        minijudge.LLMJudge(judge_fn=lambda messages: "3", scale=(1, 5)).close()  # its own

if __name__ == "__main__":
    unittest.main()
