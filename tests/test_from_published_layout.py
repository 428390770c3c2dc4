"""examples/from_published_layout.py: MT-Bench's and Arena-Hard's folders (questions, one
answer file a model) to minijudge's input records, every question and model accounted for.

Run as a user runs it (a subprocess), on the small layouts of examples/ and on copies of
them with an answer, an answer file or a line gone wrong; a record with no answer is
judged by minijudge (against the stub) as a failure, not dropped.

Python 3.8+, standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from stub import StubTestCase, chat, copy_minijudge  # noqa: E402

SCRIPT = os.path.join(REPO, "examples", "from_published_layout.py")
MT_BENCH = os.path.join(REPO, "examples", "mt_bench")
ARENA_HARD = os.path.join(REPO, "examples", "arena_hard")


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(text) for text in f if text.strip()]


def convert(*argv):
    """(exit status, records written, stderr) of the script run with argv."""
    proc = subprocess.run([sys.executable, SCRIPT] + list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    records = [json.loads(text) for text in proc.stdout.splitlines() if text.strip()]
    return proc.returncode, records, proc.stderr


class Layouts(StubTestCase):
    """A copy of a layout in the test's folder, to break."""

    def copy(self, source):
        target = self.path(os.path.basename(source))
        shutil.copytree(source, target)
        return target

    def edit(self, path, keep):
        """Rewrite a JSONL file with the lines keep(line) returns (None: dropped)."""
        kept = [keep(line) for line in lines(path)]
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in kept if line is not None)


class MTBench(Layouts):

    def test_one_conversation_record_a_model_and_question(self):
        code, records, err = convert("mt-bench", MT_BENCH)
        self.assertEqual((code, err), (0, ""))
        questions = lines(os.path.join(MT_BENCH, "question.jsonl"))
        models = ["big-70b", "mid-13b", "tiny-7b"]
        self.assertEqual(len(records), len(models) * len(questions))  # 12
        self.assertEqual(sorted({r["model"] for r in records}), models)
        for record in records:
            self.assertEqual(set(record), {"question_id", "category", "model", "turns",
                                           "answers"})
            question = [q for q in questions if q["question_id"] == record["question_id"]][0]
            self.assertEqual(record["turns"], question["turns"])
            self.assertEqual(record["category"], question["category"])
            answer = [a for a in lines(os.path.join(MT_BENCH, "model_answer",
                                                    record["model"] + ".jsonl"))
                      if a["question_id"] == record["question_id"]][0]
            self.assertEqual(record["answers"], answer["choices"][0]["turns"])
            self.assertEqual(len(record["answers"]), 2)

    def test_a_question_without_an_answer_is_said_and_judged_a_failure(self):
        folder = self.copy(MT_BENCH)
        self.edit(os.path.join(folder, "model_answer", "tiny-7b.jsonl"),
                  lambda line: None if line["question_id"] == 101 else line)
        code, records, err = convert("mt-bench", folder)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(records), 12)  # still one a model and question
        missing = [r for r in records if r["answers"] == [None, None]]
        self.assertEqual([(r["model"], r["question_id"]) for r in missing], [("tiny-7b", 101)])
        self.assertIn("tiny-7b has no answer to question 101", err)
        # minijudge judges it bad_record: in the output, counted, never a grade
        self.srv.responder = lambda request: chat("Fine.\nRating: [[6]]")
        data = self.write_jsonl("mt.jsonl", records)
        copy_minijudge(self.tmp)
        proc = subprocess.run(
            [sys.executable, "-m", "minijudge", "--judge-url", self.srv.url, "--explain",
             "--template", os.path.join(REPO, "examples", "grade_1_to_10.txt"),
             "--scale", "1,10", "--turn", "2", "--max-error-rate", "1", data,
             "-o", self.path("out.jsonl")],
            cwd=self.tmp, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        judged = self.records()
        self.assertEqual(len(judged), 12)
        statuses = [(r["model"], r["question_id"], r["judge_status"]) for r in judged
                    if r["judge_status"] != "ok"]
        self.assertEqual(statuses, [("tiny-7b", 101, "bad_record")])
        self.assertEqual({r["judge_value"] for r in judged if r["judge_status"] == "ok"}, {6})
        self.assertIn("statuses: ok 11, bad_record 1", proc.stderr)

    def test_answers_to_unknown_questions_and_answers_given_twice_are_said(self):
        folder = self.copy(MT_BENCH)
        path = os.path.join(folder, "model_answer", "mid-13b.jsonl")
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"question_id": 999, "model_id": "mid-13b",
                                "choices": [{"index": 0, "turns": ["x", "y"]}]}) + "\n")
            f.write(json.dumps({"question_id": 81, "model_id": "mid-13b",
                                "choices": [{"index": 0, "turns": ["new", "newer"]}]}) + "\n")
        code, records, err = convert("mt-bench", folder)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(records), 12)
        self.assertIn("an answer to question 999, which question.jsonl does not hold: "
                      "skipped", err)
        self.assertIn("question 81 answered again; the last answer is kept", err)
        again = [r for r in records if (r["model"], r["question_id"]) == ("mid-13b", 81)]
        self.assertEqual(again[0]["answers"], ["new", "newer"])

    def test_an_answer_of_fewer_turns_than_its_question_is_said(self):
        folder = self.copy(MT_BENCH)
        self.edit(os.path.join(folder, "model_answer", "big-70b.jsonl"),
                  lambda line: dict(line, choices=[{"index": 0, "turns": ["only one"]}])
                  if line["question_id"] == 111 else line)
        code, records, err = convert("mt-bench", folder)
        self.assertEqual(code, 0, err)
        short = [r for r in records if (r["model"], r["question_id"]) == ("big-70b", 111)]
        self.assertEqual(short[0]["answers"], ["only one", None])
        self.assertIn("big-70b's answer to question 111 has 1 turns, the question 2: the "
                      "turns it lacks are written with no answer", err)

    def test_what_cannot_be_read_stops_it_naming_the_file(self):
        folder = self.copy(MT_BENCH)
        os.remove(os.path.join(folder, "question.jsonl"))
        code, records, err = convert("mt-bench", folder)
        self.assertEqual((code, records), (1, []))
        self.assertIn("no file " + os.path.join(folder, "question.jsonl"), err)
        folder = self.copy(ARENA_HARD)
        shutil.rmtree(os.path.join(folder, "model_answer"))
        code, records, err = convert("mt-bench", folder)
        self.assertEqual(code, 1)
        self.assertIn("no answer files", err)
        shutil.copy(os.path.join(MT_BENCH, "question.jsonl"), self.path("mt_bench"))
        bad = self.write("mt_bench/model_answer/big-70b.jsonl", '{"question_id": 81}\n[1]\n')
        code, _, err = convert("mt-bench", self.path("mt_bench"))
        self.assertEqual(code, 1)
        self.assertIn(bad + ":2: a list, expected a JSON object", err)

    def test_an_answer_file_of_another_model_is_refused(self):
        folder = self.copy(MT_BENCH)
        self.edit(os.path.join(folder, "model_answer", "tiny-7b.jsonl"),
                  lambda line: dict(line, model_id="big-70b"))
        code, _, err = convert("mt-bench", folder)
        self.assertEqual(code, 1)
        self.assertIn("model_id 'big-70b' in the answer file of 'tiny-7b'", err)


class ArenaHard(Layouts):

    def test_one_pair_a_model_and_question_the_baseline_as_a(self):
        code, records, err = convert("arena-hard", ARENA_HARD, "--baseline", "base-model")
        self.assertEqual((code, err), (0, ""))
        questions = lines(os.path.join(ARENA_HARD, "question.jsonl"))
        self.assertEqual(len(records), 2 * len(questions))  # the baseline is no model_b
        self.assertEqual({r["model_b"] for r in records}, {"large-model", "small-model"})
        answers = {model: {a["question_id"]: a["choices"][0]["turns"][0]["content"]
                           for a in lines(os.path.join(ARENA_HARD, "model_answer",
                                                       model + ".jsonl"))}
                   for model in ("base-model", "large-model", "small-model")}
        for record in records:
            self.assertEqual(set(record), {"question_id", "category", "cluster", "question",
                                           "response_a", "response_b", "model_a", "model_b"})
            self.assertEqual(record["model_a"], "base-model")
            key = record["question_id"]
            self.assertEqual(record["response_a"], answers["base-model"][key])
            self.assertEqual(record["response_b"], answers[record["model_b"]][key])
            question = [q for q in questions if q["question_id"] == key][0]
            self.assertEqual(record["question"], question["turns"][0]["content"])
            self.assertEqual(record["category"], "arena-hard-v0.1")

    def test_the_baseline_must_have_an_answer_file(self):
        code, records, err = convert("arena-hard", ARENA_HARD, "--baseline", "gpt-4-0314")
        self.assertEqual((code, records), (1, []))
        self.assertIn("no answer file of the baseline 'gpt-4-0314'", err)
        self.assertIn("holds base-model, large-model, small-model", err)
        code, _, err = convert("arena-hard", ARENA_HARD)
        self.assertEqual(code, 2)
        self.assertIn("arena-hard needs --baseline NAME", err)

    def test_a_baseline_answer_missing_is_said_for_each_pair(self):
        folder = self.copy(ARENA_HARD)
        self.edit(os.path.join(folder, "model_answer", "base-model.jsonl"),
                  lambda line: None if line["question_id"] == "q-03" else line)
        code, records, err = convert("arena-hard", folder, "--baseline", "base-model")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(records), 10)
        missing = [(r["model_b"], r["question_id"]) for r in records if r["response_a"] is None]
        self.assertEqual(missing, [("large-model", "q-03"), ("small-model", "q-03")])
        self.assertEqual(err.count("base-model has no answer to question 'q-03'"), 2)


if __name__ == "__main__":
    unittest.main()
