"""A hostile pass on --explain (issue 46 item 1, reasons first), through the real command
line and the public Python API against the loopback stub: replies cut by max_tokens in
their explanation, markdown around the verdict line, line breaks of every kind."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, chat, run_main, run_process  # noqa: E402

ITEM = {"question": "q", "response": "r"}
PAIR = {"question": "q", "response_a": "a", "response_b": "b"}


class HostileTest(StubTestCase):
    def run_code(self, rows, *argv, code=0):
        data = self.write_jsonl("in.jsonl", rows)
        got, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "-o", self.path("out.jsonl"),
                                  "--summary", self.path("s.json")] + list(argv) + [data])
        self.assertEqual(got, code, err)
        return self.records()

    def replies(self, text, finish_reason="stop"):
        self.srv.responder = lambda request: chat(text, finish_reason=finish_reason)


class CutTest(HostileTest):
    """A reply cut by max_tokens never reached its verdict line: its last line is a piece of
    the explanation, whatever it happens to hold."""

    def test_a_cut_explanation_whose_last_line_reads_as_a_verdict_is_truncated(self):
        for rows, argv, text in (
                ([ITEM], (), "It sits between Rating: [[3]] and"),
                ([ITEM], (), "Steps:\n1. right\n2"),
                ([dict(ITEM, answer="a")], ("--mode", "binary"), "Why.\nVerdict: yes if we"),
                ([PAIR], ("--mode", "pairwise", "--single-order"), "Why.\n[[A]] is tempting,")):
            with self.subTest(text=text):
                self.replies(text, finish_reason="length")
                record, = self.run_code(rows, "--explain", *argv, code=1)
                self.assertEqual((record["judge_status"], record["judge_value"]),
                                 ("truncated", None), record)
                self.assertNotIn("judge_explanation", record)
                self.assertTrue(record["judge_error"].startswith(
                    "the reply was cut off (finish_reason length) before a verdict"), record)

    def test_a_cut_reply_in_python_and_in_a_process_of_its_own(self):
        self.replies("It sits between Rating: [[3]] and", finish_reason="length")
        j = minijudge.LLMJudge(self.srv.url, model="m", explain=True).judge({"question": "q"},
                                                                          "r")
        self.assertEqual((j.status, j.value, j.explanation), ("truncated", None, None))
        data = self.write_jsonl("in.jsonl", [ITEM])
        done = run_process("--judge-url", self.srv.url, "--judge-model", "m", "--no-preflight",
                           "--explain", "-q", data, universal_newlines=True)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertEqual(json.loads(done.stdout)["judge_status"], "truncated")

    def test_without_explain_a_cut_reply_is_read_as_before(self):
        self.replies("4", finish_reason="length")
        record, = self.run_code([ITEM])
        self.assertEqual((record["judge_status"], record["judge_value"]), ("ok", 4))


class MarkdownTest(HostileTest):
    def test_fences_around_the_verdict_line_are_not_part_of_the_explanation(self):
        for text in ("Why.\n```\nRating: [[4]]\n```", "```\nWhy.\nRating: [[4]]\n```",
                     "Why.\n\n---\n**Rating: [[4]]**", "Why.\r\n```\r\nRating: [[4]]\r\n```\r\n"):
            with self.subTest(text=text):
                self.replies(text)
                record, = self.run_code([ITEM], "--explain")
                self.assertEqual((record["judge_value"], record["judge_explanation"]),
                                 (4, "Why."), record)

    def test_the_explanation_keeps_its_own_paragraphs_rules_and_fences(self):
        why = "First.\n\n---\n\n```\nx = 1\n```\n\nSecond."
        self.replies(why + "\n\nRating: [[4]]\n```")
        record, = self.run_code([ITEM], "--explain")
        self.assertEqual(record["judge_explanation"], why)

    def test_every_kind_of_line_break_ends_the_explanation(self):
        for brk in ("\n", "\r\n", "\r", "\u2028", "\u2029", "\x85"):
            with self.subTest(brk=brk):
                self.replies("It is right." + brk + "Rating: [[4]]" + brk)
                record, = self.run_code([ITEM], "--explain")
                self.assertEqual((record["judge_value"], record["judge_explanation"]),
                                 (4, "It is right."), record)


if __name__ == "__main__":
    import unittest
    unittest.main()
