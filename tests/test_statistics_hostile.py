"""Issue 46, item 4, hostile pass: `report --layout` and the statistics API given files
named twice, answers that are missing, groups that only a dict thinks equal, and names
that are no names. Through the real command line and the public Python API."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from minijudge import JudgeError, group_table, rank_systems  # noqa: E402
from stub import CommandLineTestCase  # noqa: E402

ARENA = ["--layout", "arena-hard", "--baseline", "base"]


def game(model, first, second, question=1):
    """A line of arena-hard-auto's: two games against the baseline, the second swapped."""
    return {"question_id": question, "model": model,
            "games": [{"score": first}, {"score": second}]}


def answer(model, question, text):
    return {"model_id": model, "question_id": question,
            "choices": [{"turns": [{"content": text}]}]}


class LayoutFilesHostile(CommandLineTestCase):

    def layout(self, *argv):
        code, out, err = self.subprocess("report", "--summary", self.path("r.json"),
                                         "--max-error-rate", "1", *argv)
        return code, err

    def test_a_file_named_twice_is_refused_not_counted_twice(self):
        # a glob and the file again, or a link to it: every game would count twice and the
        # intervals narrow as if there were twice the data (report without --layout refuses)
        path = self.write_jsonl("m.jsonl", [game("m", "A>B", "B>A", q) for q in range(3)])
        os.symlink(path, self.path("link.jsonl"))
        for second in (path, self.path("link.jsonl")):
            code, err = self.layout(*ARENA, path, second)
            self.assertEqual(code, 2, err)
            self.assertIn("are the same file; name each file once", err)

    def test_a_missing_answer_is_no_length_not_an_empty_answer(self):
        # the baseline's answers to these questions not given: its answers are unknown, not
        # 0 characters long, so no figure says "the longer answer won" from them (an answers
        # file naming no answer of the baseline at all is refused: test_layout_checks)
        lines = [game("m", "B>A", "A>B", q) for q in range(4)] + [
            game("n", "A>B", "B>A", q) for q in range(4)]
        answers = [answer("m", q, "x" * (10 + q)) for q in range(4)] + [
            answer("n", q, "y" * (50 + q)) for q in range(4)] + [answer("base", 99, "z")]
        judged = self.write_jsonl("j.jsonl", lines)
        given = self.write_jsonl("answers.jsonl", answers)
        code, err = self.layout(*ARENA, judged, "--answers", given)
        self.assertEqual(code, 0, err)
        s = self.summary("r.json")
        self.assertIsNone(s.get("length_bias"), s.get("length_bias"))
        self.assertNotIn("the longer answer won", err)

    def test_an_empty_system_name_is_a_failure(self):
        path = self.write_jsonl("m.jsonl", [game("", "A>B", "B>A"), game("m", "A>B", "B>A")])
        code, err = self.layout(*ARENA, path)
        s = self.summary("r.json")
        self.assertEqual(s["statuses"].get("bad_record"), 1, err)
        self.assertNotIn("", s["bradley_terry"]["systems"])


class StatisticsHostile(CommandLineTestCase):

    def test_true_and_1_are_two_groups_as_report_keeps_them(self):
        # a dict holds True and 1 as one key; --group-by (JSON) keeps true and 1 apart
        records = [{"x": 1, "g": True}, {"x": 1, "g": 1}, {"x": 1, "g": 1.0}]
        with self.assertRaises(JudgeError) as caught:
            group_table([1, 0, 0.5], [r["g"] for r in records])
        self.assertIn("groups[1]", str(caught.exception))
        self.assertEqual(list(group_table([1, 0.5], [1, 1.0])), [1])  # one JSON number

    def test_an_empty_name_is_no_system(self):
        for name in ("", "   "):
            with self.assertRaises(JudgeError) as caught:
                rank_systems([(name, "x", "A")])
            self.assertIn("comparisons[0]", str(caught.exception))


if __name__ == "__main__":
    import unittest
    unittest.main()
