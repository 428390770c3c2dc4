"""Issue 31, item 1: report's lean path (_Report.add_lean) counts alike records by the one
tally entry (_Tally.add): their status, scores and kinds added as the general path adds them.
It must say exactly what the general path says (the same command with the lean path turned
off), over rows that change kind in every way a count can tell apart (4 and 4.0, 1
and 1.0, 0.0 and -0.0, a model of "" or none, a fingerprint, a score source), rows broken by
records the general path counts, and a row that crosses the bootstrap's 2,000 scores.
"""
import json
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402

# (how many records in a row, the judge fields they are given): kinds that differ in a way
# a count can tell, and kinds alike but for what each record counts of its own
ROWS = [(3, {}), (1, {"judge_status": "parse_error", "judge_score": 0.0, "judge_value": None,
                      "judge_error": "no rating"}), (1, {"judge_value": 4.0}), (2, {"judge_value": 4}), (5, {"judge_model": ""}),
        (2, {"judge_model": None}), (1, {"judge_model": "other-model"}),
        (4, {"judge_score": 1, "judge_value": 5}), (3, {"judge_score": 1.0, "judge_value": 5}),
        (2, {"judge_score": 0.0, "judge_value": 1}), (2, {"judge_score": -0.0, "judge_value": 1}),
        (3, {"judge_fingerprint": "fp_a"}), (1, {"judge_fingerprint": "fp_b"}),
        (2, {"judge_score_source": "logprobs", "judge_expected_rating": 4.2}),
        (2, {"judge_score_source": None}),
        (2, {"judge_status": "parse_error", "judge_score": 0.0, "judge_value": None,
             "judge_error": "no rating"}),
        (1, {"judge_value": 3.5, "judge_score": 0.625}),
        (2100, {}),  # crosses the 2,000 scores the bootstrap keeps
        (1, {"judge_usage": {"prompt_tokens": 7}}), (400, {"judge_value": 2, "judge_score": 0.25}),
        (1, {"judge_details_extra": 1}), (50, {})]
JUDGED = 40  # items the run judges: every response length (1 to 37) and label (0 to 5)


class ReportCountsARowOfAlikeRecordsAsOneAtATime(StubTestCase):

    def scored(self):
        """A real run's records, each given its row's fields, lines numbered anew. The run
        judges the first JUDGED items: the others' records are the first's with their own
        item's fields and line, which is all a record of this run differs by (checked on
        the JUDGED), where judging all 2,589 took 1.2 s of the test's 1.7."""
        total = sum(n for n, _ in ROWS)
        items = [{"id": i, "question": "q%d" % i, "response": "r" * (1 + i % 37), "label": i % 6}
                 for i in range(total)]
        data = self.write_jsonl("in.jsonl", items[:JUDGED])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q", data,
                                 "-o", self.path("run.jsonl")])
        self.assertEqual(code, 0, err)
        with open(self.path("run.jsonl"), encoding="utf-8") as f:
            judged = [json.loads(line) for line in f]
        records = [dict(judged[0], judge_line=i + 1, **item) for i, item in enumerate(items)]
        self.assertEqual(list(map(json.dumps, records[:JUDGED])), list(map(json.dumps, judged)))
        out, number = [], 0
        for count, fields in ROWS:
            for _ in range(count):
                record = dict(records[number])
                run = record.pop("judge_run")
                record.update(fields, judge_usage=fields.get(
                    "judge_usage", {"prompt_tokens": 30 + number % 9, "completion_tokens": 3}))
                record["judge_run"] = run
                out.append(record)
                number += 1
        return self.write_jsonl("scored.jsonl", out)

    def report(self, scored, lean):
        """(exit code, stderr, --summary) of report, its lean path on or off; the rows it
        counted at once."""
        rows, add_lean = [], minijudge._Report.add_lean

        def counted(report, *args):
            rows.append(add_lean(report, *args))
            return rows[-1]
        summary = self.path("summary.%s.json" % lean)
        argv = ["report", scored, "--summary", summary, "--human-field", "label"]
        with mock.patch.object(minijudge._Report, "add_lean", counted):
            if lean:
                code, _, err = run_main(argv)
            else:
                with mock.patch.object(minijudge._Report, "add_lean", lambda *a: False):
                    code, _, err = run_main(argv)
        with open(summary) as f:
            figures = json.load(f)
        figures.pop("wall_seconds")
        return (code, err, json.dumps(figures)), rows  # the order of each count's keys too

    def test_rows_of_every_kind_say_what_the_general_path_says(self):
        scored = self.scored()
        lean, rows = self.report(scored, True)
        general, ones = self.report(scored, False)
        self.assertEqual(ones, [])  # the general path counts each record whole
        self.assertGreater(sum(rows), 2000)  # the long row was counted by the lean path
        self.assertEqual(lean[0], general[0])
        self.assertEqual(lean[1], general[1])
        self.assertEqual(lean[2], general[2])
        self.assertEqual(json.loads(lean[2])["statuses"]["ok"], sum(n for n, _ in ROWS) - 3)


class AddAlikeIsAddPlainKTimes(unittest.TestCase):
    """_Tally.add of a report's lean records (_Plain) leaves the tally as the general path's
    Judgements do, to the bit: non-dyadic scores (1/3 and 1/10, which round on each
    addition), a row that crosses the bootstrap's 2,000 scores, rows of kinds that follow
    each other."""

    def test_the_same_sums_counts_and_scores_as_one_at_a_time(self):
        rows = [(7, 1 / 3, 4), (1990, 0.1, 2), (25, 1 / 3, 4), (3000, 0.7, 3.5), (1, 0.0, 1)]
        alike, one_by_one = minijudge._Tally(), minijudge._Tally()
        for count, score, value in rows:
            fields = dict(status="ok", score=score, value=value, error=None, model="m",
                          fingerprint="fp", source="text", raw="Rating", finish_reason="stop")
            plain = minijudge._Plain(**{name: fields.get(name) for name in
                                        minijudge._Plain._fields})
            for _ in range(count):
                alike.add(plain)
                one_by_one.add(minijudge.Judgement(**fields))
        for name in ("statuses", "tenths", "all", "judged", "ratings", "models", "sources",
                     "fingerprints"):
            self.assertEqual(repr(getattr(alike, name)), repr(getattr(one_by_one, name)), name)
        total = total_sq = 0.0  # the sums as a record at a time makes them, by hand
        scores = []
        for count, score, _ in rows:
            for _ in range(count):
                total += score
                total_sq += score * score
                scores.append(score)
        self.assertEqual(alike.all["n"], len(scores))
        self.assertEqual(alike.all["total"].hex(), total.hex())
        self.assertEqual(alike.all["total_sq"].hex(), total_sq.hex())
        self.assertEqual(alike.all["scores"], scores[:minijudge._BOOTSTRAP_MAX])
        self.assertNotEqual(total, sum(c * s for c, s, _ in rows))  # the rounding shows


if __name__ == "__main__":
    unittest.main()
