"""Issue 46 item 2, hostile pass on --rubric by a tester who did not write it: replies a
judge really sends (pretty-printed JSON under --explain, an object cut off by max_tokens,
duplicate keys, booleans, NaN, 1e400, -0.0), a panel whose judges scale one criterion
differently, and the summary's words for a scale below zero. Through the command
line (main() in this process, as ``python -m minijudge`` runs it) and the Python API
against the loopback stub."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import CommandLineTestCase, chat, run_main  # noqa: E402
from test_cli import response_of  # noqa: E402

RUBRIC = [{"name": "a"}, {"name": "b", "scale": [-2, 2]}, {"name": "c", "scale": [0, 1]}]
# a: 4 on 1-5 is 0.75, b: 1 on -2 to 2 is 0.75, c: 0.5 on 0-1 is 0.5: (0.75 + 0.75 + 0.5) / 3
REPLY = {"reasoning": "Mostly right, one slip.", "a": 4, "b": 1, "c": 0.5}
VALUE, SCORE = {"a": 4, "b": 1, "c": 0.5}, 2 / 3


class Hostile(CommandLineTestCase):
    def setUp(self):
        super().setUp()
        self.replies = {}
        self.srv.responder = lambda request: self.replies.get(response_of(request), chat("{}"))
        self.rubric = self.write("rubric.json", json.dumps(RUBRIC))

    def run_cli(self, replies, *argv, code=0):
        """The records of a real ``python -m minijudge --rubric`` over one record a reply,
        each record's response the key of its reply; and its stderr."""
        self.replies = {key: chat(value) if isinstance(value, str) else value
                        for key, value in replies.items()}
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": key}
                                               for key in replies])
        got, out, err = self.in_process(
            "--judge-url", self.srv.url, "--judge-model", "judge-model", "--no-preflight",
            "--max-retries", "0", "--max-error-rate", "1", "--rubric", self.rubric,
            "-o", "out.jsonl", *argv, source)
        self.assertEqual(got, code, err)
        return {r["response"]: r for r in self.records()}, err

    def test_explain_reads_the_rubric_s_json_whole_its_reasoning_the_explanation(self):
        # the docs: with --explain a rubric's explanation is its JSON's reasoning; a judge
        # pretty-printing the object has no verdict on its last line ("}") to read
        replies = {"pretty": json.dumps(REPLY, indent=2),
                   "prose": "I looked at it closely.\n" + json.dumps(REPLY),
                   "fenced": "```json\n" + json.dumps(REPLY) + "\n```"}
        out, err = self.run_cli(replies, "--explain")
        for key in replies:
            with self.subTest(reply=key):
                self.assertEqual((out[key]["judge_status"], out[key]["judge_value"]),
                                 ("ok", VALUE), out[key].get("judge_error"))
                self.assertAlmostEqual(out[key]["judge_score"], SCORE)
                self.assertEqual(out[key]["judge_explanation"], "Mostly right, one slip.")

    def test_a_reply_cut_off_before_its_object_closed_is_truncated(self):
        # max_tokens cut "c": 0.5 after its 0: read by the "key: number" lines, c was 0
        cut = '{"reasoning": "Mostly right", "a": 4, "b": 1, "c": 0'
        out, err = self.run_cli({"cut": chat(cut, finish_reason="length"),
                                 "whole": chat(json.dumps(REPLY), finish_reason="length")})
        self.assertEqual(out["cut"]["judge_status"], "truncated", out["cut"])
        self.assertIsNone(out["cut"].get("judge_criteria"))
        # the object closed: every number is whole, and it is read
        self.assertEqual((out["whole"]["judge_status"], out["whole"]["judge_value"]),
                         ("ok", VALUE))

    def test_the_summary_says_a_scale_below_zero_as_the_errors_do(self):
        out, err = self.run_cli({"r": json.dumps(REPLY)})
        self.assertIn("    b: 1.0 on the -2 to 2 scale (CI [1.0, 1.0]), score 0.75", err)
        self.assertNotIn("-2-2", err)

    def test_hostile_replies_each_read_or_failed_naming_the_criterion(self):
        def reply(**over):
            return json.dumps(dict(REPLY, **over))
        replies = {
            "extra": reply(zz=9, score=1, explanation="x"),  # keys beside the criteria
            "dup": '{"a": 1, "a": 4, "b": 1, "c": 0.5}',  # JSON keeps the last
            "strings": reply(a="4.0", b="+1", c=" 0.5 "),
            "object": reply(a={"score": 4, "why": "one slip"}),
            "two": reply(a=1, b=-2, c=0) + " On reflection: " + json.dumps(REPLY),
            "think": "<think>" + reply(a=1) + "</think>" + json.dumps(REPLY),
            "upper": '{"A": 4, "B": 1, "C": 0.5}',
            "fraction": reply(a="4/5"), "bool": reply(c=True), "nan": reply(a=float("nan")),
            "inf": reply(a=1e400).replace("Infinity", "1e400"), "list": reply(a=[4]),
            "nested": reply(a={"value": {"score": 4}}), "off": reply(b=-3),
            "none": "I'm sorry, I can't judge this.",
        }
        out, err = self.run_cli(replies)
        for key in ("extra", "dup", "strings", "object", "two", "think", "upper"):
            with self.subTest(reply=key):
                self.assertEqual((out[key]["judge_status"], out[key]["judge_value"]),
                                 ("ok", VALUE), out[key].get("judge_error"))
                self.assertAlmostEqual(out[key]["judge_score"], SCORE)
        failed = {"fraction": ("parse_error", "criterion 'a' \"4/5\", not a number"),
                  "bool": ("parse_error", "criterion 'c' true, not a number"),
                  "nan": ("parse_error", "criterion 'a' NaN, not a number"),
                  "inf": ("parse_error", "criterion 'a' Infinity, not a number"),
                  "list": ("parse_error", "criterion 'a' [4], not a number"),
                  "nested": ("parse_error", "criterion 'a' {\"value\": {\"score\": 4}}"),
                  "off": ("out_of_range", "-3 for criterion 'b' but the scale is -2 to 2"),
                  "none": ("parse_error", "no JSON object with a and b and c found")}
        for key, (status, why) in failed.items():
            with self.subTest(reply=key):
                self.assertEqual(out[key]["judge_status"], status)
                self.assertIn(why, out[key]["judge_error"])
                self.assertIsNone(out[key].get("judge_criteria"))

    def test_negative_zero_is_written_as_zero(self):
        out, err = self.run_cli({"r": json.dumps(dict(REPLY, b=-0.0, c=-0.0))})
        self.assertEqual(out["r"]["judge_criteria"]["c"], {"value": 0, "score": 0})
        self.assertNotIn("-0.0", json.dumps(out["r"]["judge_criteria"]))


class Tokens(CommandLineTestCase):
    def test_max_tokens_has_room_for_every_criterion_of_a_long_rubric(self):
        # 1,000 criteria cannot be answered in 512 tokens: every reply was cut, truncated
        for count, expected in ((3, 512), (21, 512), (1000, 256 + 1000 * 12)):
            with self.subTest(criteria=count):
                judge = minijudge.LLMJudge(self.srv.url, model="judge-model", rubric=[
                    {"name": "c%d" % i} for i in range(count)])
                self.addCleanup(judge.close)
                self.assertEqual(judge.params["max_tokens"], expected)


class Files(CommandLineTestCase):
    def cli(self, rubric, *argv):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        return self.in_process("--judge-url", self.srv.url, "--judge-model", "judge-model",
                               "--no-preflight", "--max-retries", "0", "--rubric", rubric,
                               *argv, source)

    def test_a_rubric_file_saved_with_a_bom_or_crlf_reads_as_the_input_does(self):
        # Windows' Notepad writes a BOM; the input's BOM is read (docs/guarantees.md)
        self.srv.content = json.dumps(REPLY)
        text = json.dumps(RUBRIC, indent=1).replace("\n", "\r\n")
        with open(self.path("bom.json"), "w", encoding="utf-8-sig", newline="") as f:
            f.write(text)
        code, out, err = self.cli("bom.json")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["judge_value"], VALUE)
        judges = self.write("judges.json", "")
        with open(judges, "w", encoding="utf-8-sig") as f:
            json.dump([{"name": "j", "options": {"rubric": "bom.json"}}], f)
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--judges",
                                   judges, source])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["j_value"], VALUE)

    def test_a_rubric_not_utf_8_or_a_directory_is_exit_2_naming_it(self):
        with open(self.path("latin.json"), "wb") as f:
            f.write('[{"name": "pr\u00e9cision"}]'.encode("latin-1"))
        os.mkdir(self.path("dir"))
        for path, why in (("latin.json", "'utf-8' codec can't decode byte 0xe9"),
                          ("dir", "Is a directory")):
            with self.subTest(path=path):
                code, out, err = self.cli(path)
                self.assertEqual((code, out), (2, ""))
                self.assertIn("minijudge: error: --rubric {}: {}".format(path, why), err)
        self.assertEqual(self.srv.chat_count, 0)


class Panels(CommandLineTestCase):
    def test_a_jury_whose_judges_scale_one_criterion_differently_is_refused(self):
        # j1 scores a 5 on 1-5, j2 10 on 0-10: the record's mean value 7.5 is on no scale,
        # and the summary said 5.0 "on the 1-5 scale" (the first judge's)
        self.write("a5.json", json.dumps([{"name": "a"}]))
        self.write("a10.json", json.dumps([{"name": "a", "scale": [0, 10]}]))
        judges = self.write("judges.json", json.dumps(
            [{"name": "j1", "options": {"rubric": "a5.json"}},
             {"name": "j2", "options": {"rubric": "a10.json"}}]))
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main(["--judge-url", self.srv.url, "--judges", judges,
                                   "--jury", "mean", source])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --jury needs one scale for each criterion "
                              "of every judge's rubric; got criterion 'a': j1 1-5, "
                              "j2 0-10\n")
        self.assertEqual(self.srv.chat_count, 0)
        # one scale, other weights: a panel as before
        self.write("a10.json", json.dumps([{"name": "a", "weight": 3}]))
        self.srv.content = '{"reasoning": "ok", "a": 4}'
        code, out, err = run_main(["--judge-url", self.srv.url, "--judges", judges,
                                   "--jury", "mean", "--no-preflight", source])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["judge_criteria"], {"a": {"value": 4, "score": 0.75}})


class InPython(CommandLineTestCase):
    def test_explain_reads_a_pretty_printed_reply_in_python_too(self):
        self.srv.content = json.dumps(REPLY, indent=2)
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", max_retries=0,
                                   rubric=RUBRIC, explain=True)
        self.addCleanup(judge.close)
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.explanation),
                         ("ok", VALUE, "Mostly right, one slip."))


if __name__ == "__main__":
    unittest.main()
