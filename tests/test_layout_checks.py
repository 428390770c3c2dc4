"""report --layout's inputs checked against each other: a --baseline that no answer file
names (arena-hard), a judgment whose question_id --questions lacks.

Issue 46's hostile pass: `report --layout arena-hard --baseline TYPO --answers DIR` ranked
a system TYPO that no answer file holds (each of its answers empty), and a judgment whose
question_id is missing from --questions fell silently into the "(no field)" group of the
question's fields. Now the first is exit 2 naming the systems the answers hold, and the
second is counted: a warning in the printed summary and "questions_unmatched" in
--summary's JSON.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from stub import CommandLineTestCase  # noqa: E402

ARENA = os.path.join(REPO, "examples", "arena_hard")
JUDGMENTS = os.path.join(ARENA, "model_judgment", "gpt-4-1106-preview")
MT = os.path.join(REPO, "examples", "mt_bench")


class LayoutBaselineTest(CommandLineTestCase):
    def test_a_baseline_with_no_answers_is_refused_naming_the_systems(self):
        code, out, err = self.subprocess(
            "report", "--layout", "arena-hard", "--baseline", "base-modle",
            "--answers", os.path.join(ARENA, "model_answer"),
            os.path.join(JUDGMENTS, "small-model.jsonl"))
        self.assertEqual((code, out), (2, ""), err)
        self.assertEqual(err, "minijudge: error: --baseline 'base-modle' has no answers in "
                              "--answers; they are of base-model, large-model, "
                              "small-model\n")

    def test_the_baseline_the_answers_hold_still_ranks(self):
        code, out, err = self.subprocess(
            "report", "--layout", "arena-hard", "--baseline", "base-model",
            "--answers", os.path.join(ARENA, "model_answer"), "--max-error-rate", "1",
            "--summary", self.path("r.json"), os.path.join(JUDGMENTS, "small-model.jsonl"))
        self.assertEqual(code, 0, err)
        self.assertIn("base-model", self.summary("r.json")["bradley_terry"]["systems"])


class LayoutQuestionsTest(CommandLineTestCase):
    def run_report(self, judgments):
        code, out, err = self.subprocess(
            "report", "--layout", "fastchat-single", judgments, "--questions",
            os.path.join(MT, "question.jsonl"), "--group-by", "category",
            "--max-error-rate", "1", "--summary", self.path("r.json"))
        self.assertEqual(code, 0, err)
        return err, self.summary("r.json")

    def test_judgments_the_questions_lack_are_counted_and_said(self):
        with open(os.path.join(MT, "model_judgment", "gpt-4_single.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        rows[0]["question_id"] = 99999
        rows[1]["question_id"] = "no-such-question"
        del rows[2]["question_id"]
        err, s = self.run_report(self.write_jsonl("j.jsonl", rows))
        self.assertEqual(s["questions_unmatched"], 3)
        self.assertIn("  warning: 3 judgments name a question_id that --questions lacks (or "
                      "none): they group as (no field)\n", err)
        self.assertIn(None, [row["value"] for row in s["groups"]["category"]["shown"]])

    def test_none_unmatched_says_nothing(self):
        err, s = self.run_report(os.path.join(MT, "model_judgment", "gpt-4_single.jsonl"))
        self.assertEqual(s["questions_unmatched"], 0)
        self.assertNotIn("--questions lacks", err)


if __name__ == "__main__":
    unittest.main()
