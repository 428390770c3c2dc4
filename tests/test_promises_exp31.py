"""Issue 31, item 1: an export makes each record's request by its kind's recipe
(minijudge._ByRecipe), without the steps judge.judge takes. Every record, flag and outcome
this does not cover takes the general path. These tests hold the lean path to the general
one (the same command with _Run.go_offline doing nothing) through the real
command line: the records, the batch files byte for byte, the summary, stderr and the exit
code, over hostile records, in every mode that has recipes, alone and beside an import.
"""
import json
import os
import re
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402
from test_batch_recipes import HOSTILE_RECORDS, TIMING, reply_line  # noqa: E402


def hostile_records():
    """Plain records, each hostile kind among them, requests asked twice, records that
    carry the run's own fields (judge_score: a rerun of an output) and another run's."""
    records = [{"question": "Q%d" % n, "response": "R%d" % n, "answer": "A", "label": n % 5}
               for n in range(40)]
    for number, record in enumerate(HOSTILE_RECORDS * 2):
        if isinstance(record, dict) and "question" in record:
            record = dict({"answer": "A"}, **dict(record, question="Q%d" % (number % 9)))
        records.insert(1 + number * 3, record)
    records += [dict(records[0]), dict(records[2])]  # asked again: exported once
    records += [dict(records[4], judge_score=0.5, judge_status="ok"),
                dict(records[6], other_run={"a": 1}, judge_x=float("nan"))]
    records += [{"question": "Q\ud83d", "response": "R"}, {"question": "é" * 3000,
                                                           "response": "\u2028"}]
    return records


class AnExportWritesEachRecordAsTheGeneralPathDoes(StubTestCase):

    def run_twice(self, argv, name):
        """(lean, general): each run's (exit code, stderr, records text, summary figures,
        batch files' bytes), its own folder's paths read as DIR; and how many records the
        lean run exported by a recipe."""
        runs, taken = [], []
        call = minijudge._ByRecipe.__call__

        def counted(way, judge, spec, item, mode):
            judgement = call(way, judge, spec, item, mode)
            made = way.recipes.messages(item[1]) is not None  # by its kind's recipe
            taken.append(made and judgement.status == "exported")
            return judgement
        for way, offline in (("lean", minijudge._Run.go_offline), ("general", lambda run: None)):
            folder = self.path("%s.%s" % (name, way))
            os.mkdir(folder)
            here = [a.replace("DIR", folder) for a in argv]
            out, summary = os.path.join(folder, "out.jsonl"), os.path.join(folder, "s.json")
            with mock.patch.object(minijudge._ByRecipe, "__call__", counted), \
                    mock.patch.object(minijudge._Run, "go_offline", offline):
                code, _, err = run_main(here + ["-o", out, "--summary", summary])
            runs.append(self.read_run(folder, code, err))
        return runs, sum(taken)

    @staticmethod
    def read_run(folder, code, err):
        err = re.sub(r"in [0-9.]+ s \(", "in T s (", re.sub(r"[0-9.]+ requests/s", "", err))
        with open(os.path.join(folder, "out.jsonl"), "rb") as f:
            written = f.read().decode("utf-8", "surrogateescape")
        figures = {}
        if os.path.exists(os.path.join(folder, "s.json")):
            with open(os.path.join(folder, "s.json")) as f:
                figures = {k: v for k, v in json.load(f).items() if k not in TIMING}
        parts = {}
        for name in sorted(os.listdir(folder)):
            if name.startswith("req."):
                with open(os.path.join(folder, name), "rb") as f:
                    parts[name] = f.read()
        text = json.dumps([code, err, written, figures]).replace(folder, "DIR")
        return json.loads(text), parts

    def assert_alike(self, lean, general, where):
        (lean_text, lean_parts), (general_text, general_parts) = lean, general
        for number, what in enumerate(("exit code", "stderr", "records", "summary")):
            if what == "records":
                self.assertEqual(lean_text[2].split("\n"), general_text[2].split("\n"), where)
            self.assertEqual(lean_text[number], general_text[number], (where, what))
        self.assertEqual(lean_parts, general_parts, where)
        self.assertTrue(lean_parts, where)

    def test_an_export_alone_in_every_mode(self):
        data = self.write_jsonl("data.jsonl", hostile_records())
        for mode in ("rating", "binary", "math", "rubric"):
            argv = ["--judge-model", "judge-model", "--mode", mode, "--human-field", "label",
                    "--batch-export", "DIR/req", "--batch-max-lines", "7", data]
            (lean, general), taken = self.run_twice(argv, mode)
            self.assert_alike(lean, general, mode)
            self.assertGreater(taken, 40, mode)  # the lean path wrote most records
            self.assertGreater(len(lean[1]), 5, mode)  # several parts
            records = [json.loads(line) for line in lean[0][2].split("\n")[:-1]]
            self.assertEqual(len(records), len(hostile_records()))

    def test_an_export_beside_an_import_of_some_replies(self):
        records = hostile_records()
        data = self.write_jsonl("data.jsonl", records)
        common = ["--judge-model", "judge-model", "--human-field", "label"]
        code, _, err = run_main(common + ["-q", "--batch-export", self.path("first"), data,
                                          "-o", self.path("first.jsonl")])
        self.assertEqual(code, 0, err)
        with open(self.path("first.000.jsonl")) as f:
            keys = [json.loads(line)["custom_id"] for line in f]
        answered = self.write("results.jsonl", "".join(
            reply_line(key, number) for number, key in enumerate(keys) if number % 3))
        argv = common + ["--batch-import", answered, "--batch-export", "DIR/req", data]
        (lean, general), taken = self.run_twice(argv, "both")
        self.assert_alike(lean, general, "export and import")
        self.assertGreater(taken, 10)
        statuses = {json.loads(line)["judge_status"] for line in lean[0][2].split("\n")[:-1]}
        self.assertIn("exported", statuses)
        self.assertIn("ok", statuses)

    def test_flags_the_lean_path_leaves_to_the_general_one(self):
        data = self.write_jsonl("data.jsonl", hostile_records()[:30])
        for flags in (["--pass-threshold", "0.5"], ["--group-by", "label"],
                      ["--model-field", "label"], ["--price", "1,1"]):
            argv = ["--judge-model", "judge-model", "--batch-export", "DIR/req", data] + flags
            (lean, general), taken = self.run_twice(argv, flags[0].strip("-"))
            self.assertGreater(taken, 0, flags)  # one writer and one tally: these too
            self.assert_alike(lean, general, flags)

    def test_strict_stops_both_paths_at_the_first_bad_line(self):
        records = hostile_records()
        data = self.write_jsonl("data.jsonl", records[:12] + ["not a record"] + records[12:])
        argv = ["--judge-model", "judge-model", "--batch-export", "DIR/req", data, "--strict"]
        (lean, general), taken = self.run_twice(argv, "strict")
        self.assert_alike(lean, general, "--strict")
        self.assertGreater(taken, 3)


if __name__ == "__main__":
    unittest.main()
