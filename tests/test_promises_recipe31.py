"""Issue 31, item 1: an offline run (an export, an import) makes a record's prompt from its
kind's recipe (minijudge._Recipes), made once from a probe, instead of the dozen steps the
judge takes a record. The recipe holds only where those steps copy each text they read
whole and treat it by whether it is blank: these tests hold it to the steps' own prompts
over hostile records (blank texts of every kind of space, numbers, NaN, lists, null,
braces, markers, surrogates, aliases, a question missing beside a context), under the
flags that change what the steps read, in every mode that has recipes; and through the
real command line, an export's batch lines are the requests an online run sends.
"""
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402

TEXTS = ["a plain text", "[Own header] text", "", "   ", "\u3000", "\x1c", "\n\t", " padded both ", "{response}",
         "{0} and {{x}} and }", "\x00mjABCDEF0\x00", "\ud800 lone", "x" * 20000, 42, 4.5,
         float("nan"), True, None, [], {}, ["a"], {"a": 1}]
BASES = [{"id": 1, "question": "Why?", "response": "Because.", "answer": "A reference."},
         {"id": 2, "question": "Why?", "response": "Because."},
         {"question": "Why?", "output": "Because.", "answer": "Ref."},
         {"context": "A context only.", "response": "Because.", "reference": "Ref."},
         {"question": "", "context": "Fallback context.", "response": "Because."},
         {"prompt": "Q in prompt", "gold": "G", "completion": "C", "response": "R"},
         {"question": "Why?", "response": "Because.", "messages": "a text"},
         {"question": "Why?", "response": "Because.", "prediction": "P", "pred": "p"}]
FLAGS = [[], ["--question-field", "prompt"], ["--reference-field", "gold"],
         ["--response-field", "completion"], ["--context-field", "ctx=context"]]
MODES = ["rating", "binary", "math", "rubric"]


def hostile(base):
    """The base record, then each of its fields given each hostile value in turn."""
    yield base
    for name in base:
        for text in TEXTS:
            yield dict(base, **{name: text})


def outcome(call):
    try:
        return call()
    except Exception as exc:  # an error is an outcome to compare too
        return type(exc).__name__, str(exc)


def steps(judge, args, number, record, mode):
    """The messages judge.judge's steps make of a record; None where _ByRecipe takes
    _judge_item's way."""
    fields = minijudge._item_fields(args, number, record, mode)
    if isinstance(fields, minijudge._BadLine):
        return None
    try:
        values = judge._values(record, None, fields)
        messages = judge._messages(record, values, [])
    except (minijudge.TemplateError, minijudge._BadRecord):
        return None
    if values.get("images") or judge._unasked(values) is not None:
        return None
    return messages


class RecipesMakeTheStepsPrompts(unittest.TestCase):
    def specs(self, folder, mode, flags):
        path = os.path.join(folder, "data.jsonl")
        open(path, "w").close()
        argv = ["--judge-model", "m", "--mode", mode, "--batch-export",
                os.path.join(folder, "req")] + flags + [path]
        args = minijudge._parse_args(minijudge._arg_parser(), argv, False)
        args.input = args.input[0]
        specs, stream, _ = minijudge._setup(args)
        stream.close()
        return args, specs

    def test_a_recipes_prompt_is_the_steps_prompt_or_there_is_none(self):
        filled = compared = 0
        with tempfile.TemporaryDirectory() as folder:
            for mode in MODES:
                for flags in FLAGS:
                    args, specs = self.specs(folder, mode, flags)
                    _, judge, _ = specs[0]
                    recipes = minijudge._Recipes(judge, args, mode)
                    for base in BASES:
                        for record in hostile(base):
                            made = recipes.messages(record)
                            wanted = outcome(lambda: steps(judge, args, 1, record, mode))
                            compared += 1
                            if made is None:
                                continue
                            filled += 1
                            with self.subTest(mode=mode, flags=flags, record=record):
                                self.assertEqual(made, wanted)
        # most hostile values leave a record no recipe (a blank, a number, NaN, a list...);
        # those of filled texts (a marker's look-alike, braces, a lone surrogate) have one
        self.assertGreater(filled, 500)

    def test_records_of_ever_new_fields_keep_a_bounded_number_of_recipes(self):
        # a kind a record (a dataset's optional fields, an id as a field name) kept a recipe
        # each: memory that grew with the records
        with tempfile.TemporaryDirectory() as folder:
            args, specs = self.specs(folder, "rating", [])
            _, judge, _ = specs[0]
            recipes = minijudge._Recipes(judge, args, "rating")
            for n in range(1000):
                record = {"question": "Q%d" % n, "response": "R", "field_%d" % n: n}
                made = recipes.messages(record)
                if made is not None:
                    self.assertEqual(made, steps(judge, args, 1, record, "rating"))
            self.assertLessEqual(len(recipes.kinds), minijudge._RECIPE_KINDS)
            self.assertGreater(len(recipes.kinds), 0)

    def test_a_step_that_changes_a_text_has_no_recipe(self):
        with tempfile.TemporaryDirectory() as folder:
            args, specs = self.specs(folder, "rating", [])
            _, judge, _ = specs[0]
            recipes = minijudge._Recipes(judge, args, "rating")
            original = minijudge._text_fields

            def stripping(*a):  # a step that strips the response, as a future one might
                fields = original(*a)
                fields["response"] = fields["response"].strip()
                return fields
            minijudge._text_fields = stripping
            try:
                made = recipes.messages({"question": "Q", "response": " R "})
            finally:
                minijudge._text_fields = original
            self.assertIsNone(made)


class AnExportWritesTheRequestsARunSends(StubTestCase):
    def test_batch_lines_are_the_online_requests(self):
        records = [r for base in BASES[:5] for r in hostile(base)]
        records = [dict(r, n=n) for n, r in enumerate(records)]  # distinct lines, same kinds
        data = self.write("data.jsonl", "".join(json.dumps(r) + "\n" for r in records))
        online = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                           "--concurrency", "1", "-q", data, "-o", self.path("online.jsonl")])
        sent = [r.messages for r in self.srv.requests if r.path.endswith("/chat/completions")]
        offline = run_main(["--judge-model", "judge-model", "-q", "--batch-export",
                            self.path("req"), data, "-o", self.path("offline.jsonl")])
        self.assertIn(online[0], (0, 1), online)
        self.assertIn(offline[0], (0, 1), offline)
        with open(self.path("req.000.jsonl")) as f:
            exported = [json.loads(line)["body"]["messages"] for line in f]
        unique = []
        for messages in sent:  # an export writes a request asked twice once
            if messages not in unique:
                unique.append(messages)
        self.assertEqual(exported, unique)
        with open(self.path("online.jsonl")) as a, open(self.path("offline.jsonl")) as b:
            for one, two in zip(map(json.loads, a), map(json.loads, b)):
                status = one["judge_status"]
                if status == "ok":
                    status = "exported"
                self.assertEqual((status, one["judge_status"] == "ok" or one["judge_error"]),
                                 (two["judge_status"], two["judge_status"] == "exported" or
                                  two["judge_error"]), one)


class EachJudgeOfAPanelAsksItsOwnRequests(StubTestCase):
    def test_a_judge_of_three_repeats_exports_three_after_a_plain_one(self):
        # the offline way was chosen by the first judge and used for all: a second judge of
        # three repeats exported one request, and an import would have judged it on one
        judges = self.write("judges.json", json.dumps({"judges": [
            {"name": "one", "model": "m1"},
            {"name": "three", "model": "m2", "options": {"repeats": 3}}]}))
        data = self.write_jsonl("data.jsonl", [{"question": "q", "response": "r"}])
        code, _, err = run_main(["--judges", judges, "-q", "--batch-export", self.path("req"),
                                 data, "-o", self.path("out.jsonl")])
        self.assertEqual(code, 0, err)
        parts = {}
        for name in sorted(os.listdir(self.tmp)):
            if name.startswith("req."):
                with open(self.path(name)) as f:
                    lines = [json.loads(line) for line in f]
                parts[lines[0]["body"]["model"]] = len(lines)
        self.assertEqual(parts, {"m1": 1, "m2": 3})


if __name__ == "__main__":
    unittest.main()
