"""An offline run by its kind's recipe (the sections "Batch files" and "The run"): an
export or an import makes a record's request by its kind's recipe (minijudge._Recipes,
_Recipes) instead of the judge's steps, and writes and tallies what it judged; these tests
hold each to the general path (<Feature>AsTheGeneralPathTest) over hostile records,
replies and flags, through the real command line.

Issue 31, item 1: an import makes each record's request by its kind's recipe
(_Recipes); every record, reply and flag that this does not cover takes the general path.
These tests hold the shared path to the general one over hostile records and replies,
through the real command line.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from batch_engine import run_batch  # noqa: E402
from stub import StubServer, StubTestCase, run_main, without_judge  # noqa: E402
from stub import read_records as lines  # noqa: E402

REPO = os.path.dirname(HERE)

# records of every kind an import meets: plain, a request asked twice (the same record
# again), one with nothing to judge (no request), one the batch errs on, one it never ran
RECORDS = [{"question": "Q%d" % (n % 40), "response": "R%d" % (n % 40)} for n in range(60)]
RECORDS += [{"question": "Q", "response": ""}, {"question": "Qe", "response": "Re"},
            {"question": "Qf", "response": "Rf"}, {"question": "Qm", "response": "Rm"}]


TIMING = ("wall_seconds", "requests_per_second", "latency_mean", "latency_max")


class ImportOrderAsTheGeneralPathTest(StubTestCase):
    """An import reads the next line of the file the last reply was on when it holds the
    record's reply (a batch answers in order: no query of the index), the index otherwise.
    Whatever the order of the lines, and whatever else the files hold, an import gives the
    same records and the same figures (replies imported, not asked for, malformed)."""

    def exported(self, records, lines_a_part=50000):
        data = self.write_jsonl("data.jsonl", records)
        code, _, err = run_main(["--judge-model", "judge-model", "-q", "--batch-export",
                                 self.path("req"), "--batch-max-lines", lines_a_part, data,
                                 "-o", self.path("exported.jsonl")])
        self.assertEqual(code, 0, err)
        parts = sorted(self.path(n) for n in os.listdir(self.tmp) if n.startswith("req."))
        keys = {}
        for record, line in zip(records, lines(self.path("exported.jsonl"))):
            if line["judge_status"] == "exported":
                keys[record["question"]] = line["judge_error"].split("custom_id ")[1][:64]
        return data, parts, keys

    def answered(self, parts, name, keys, **faults):
        """The parts answered by the stub through the batch engine: one file a part."""
        outputs = []
        with StubServer("Rating: [[4]]") as srv:
            for number, part in enumerate(parts):
                outputs.append(self.path("%s.%d.jsonl" % (name, number)))
                run_batch([part], outputs[-1], srv.url + "/v1/chat/completions",
                          errors={keys["Qe"]}, failures={keys["Qf"]}, missing={keys["Qm"]},
                          **faults)
        return outputs

    def imported(self, data, outputs, name):
        imports = [x for path in outputs for x in ("--batch-import", path)]
        code, out, err = run_main(["--judge-model", "judge-model", "-q"] + imports +
                                  [data, "-o", self.path(name + ".jsonl"), "--summary",
                                   self.path(name + ".json")])
        figures = {k: v for k, v in self.summary(name + ".json").items() if k not in TIMING}
        figures = json.loads(re.sub(r"/[^ ]*[.]jsonl", "FILE", json.dumps(figures)))
        files = [os.path.basename(path) for path in figures["batch"].pop("files") or []]
        return self.records(name + ".jsonl"), figures, files, code

    def the_same(self, first, second):
        records, figures, _, code = first
        self.assertEqual(second[3], code)
        self.assertEqual(second[1], figures)
        self.assertEqual(len(second[0]), len(records))
        for one, two in zip(records, second[0]):
            for line in (one, two):  # the file a failure names: each import its own
                line["judge_error"] = re.sub(r"/[^ ]*[.]jsonl", "FILE", str(line["judge_error"]))
            self.assertEqual(two, one)

    def test_shuffled_lines_give_what_ordered_ones_give(self):
        data, parts, keys = self.exported(RECORDS)
        ordered = self.imported(data, self.answered(parts, "ordered", keys), "a")
        shuffled = self.imported(data, self.answered(parts, "shuffled", keys,
                                                     shuffle_seed=3), "b")
        self.the_same(ordered, shuffled)
        batch = ordered[1]["batch"]
        self.assertEqual((batch["imported"], batch["unasked"]), (42, 0), batch)
        self.assertEqual(ordered[1]["statuses"]["ok"], 60)

    def test_several_parts_in_order_and_in_reverse_give_the_same(self):
        data, parts, keys = self.exported(RECORDS, lines_a_part=7)
        self.assertEqual(len(parts), 7)  # 43 requests
        outputs = self.answered(parts, "part", keys)
        self.the_same(self.imported(data, outputs, "a"),
                      self.imported(data, outputs[::-1], "b"))

    def test_lines_that_are_no_replies_and_replies_not_asked_for_are_counted_alike(self):
        data, parts, keys = self.exported(RECORDS)
        outputs = self.answered(parts, "ordered", keys)
        with open(outputs[0]) as f:
            got = f.readlines()
        other = dict(json.loads(got[0]), custom_id="f" * 64)  # a reply no record asks for
        hostile = ["not json\n", "\n", json.dumps({"custom_id": "short"}) + "\n",
                   json.dumps(other) + "\n"]
        mixed = [got[0]] + hostile + got[1:5] + hostile + got[5:]
        mixed[-1] = mixed[-1].rstrip("\n")  # a last line without its newline
        reference = list(mixed)
        reference.insert(3, reference.pop(0))  # the first reply behind the hostile lines
        one = self.write("mixed.jsonl", "".join(mixed))
        two = self.write("reference.jsonl", "".join(reference))
        first, second = self.imported(data, [one], "a"), self.imported(data, [two], "b")
        self.the_same(first, second)
        batch = first[1]["batch"]
        self.assertEqual(batch["unasked"], 1, batch)  # the reply no record asked for
        self.assertEqual(batch["malformed"], {"not JSON": 2, "without a minijudge custom_id":
                                              2}, batch)

    def test_a_request_answered_twice_takes_its_first_success_in_order_too(self):
        data, parts, keys = self.exported(RECORDS)
        outputs = self.answered(parts, "ordered", keys)
        with open(outputs[0]) as f:
            got = f.readlines()
        failed = dict(json.loads(got[0]), response={"status_code": 500, "body": {
            "error": {"message": "overloaded", "type": "server_error"}}})
        doubled = self.write("doubled.jsonl", json.dumps(failed) + "\n" + "".join(got))
        records, figures, _, _ = self.imported(data, [doubled], "a")
        self.assertEqual(records[0]["judge_status"], "ok", records[0])
        self.assertEqual(figures["batch"]["conflicting"], 1, figures)
        self.assertEqual(figures["batch"]["imported"], 42, figures)


# reply bodies of every kind: read ok in some mode or not, refused, cut, reasoned, odd usage
CONTENTS = ["Rating: 4", "4", "[[2]]", "Yes", "No", '{"score": 5}', '{"score": 9}', "",
            '{"correctness": 8, "relevance": 6}', '{"correctness": 11, "relevance": 2}',
            "   ", "Rating: 7", "<think>long", "<think>ok</think> 3", 5, None,
            [{"type": "text", "text": "Rating: 1"}], {"text": "4"}, "Verdict: yes\u2028",
            "\ud83d Rating: 4"]
EXTRAS = [{}, {"finish_reason": "length"}, {"finish_reason": "content_filter"},
          {"refusal": "I cannot"}, {"reasoning_content": "thought"}, {"reasoning": 7},
          {"usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11,
                     "prompt_tokens_details": {"cached_tokens": 0}}},
          {"usage": {"prompt_tokens": -1, "completion_tokens": 1e30, "cost": float("nan")}},
          {"usage": "many"}, {"model": ["m"]}, {"model": None}, {"system_fingerprint": "fp_1"},
          {"system_fingerprint": 3}, {"logprobs": {"content": []}}, {"finish_reason": True},
          {"finish_reason": 1}]
HOSTILE_RECORDS = [
    {"question": "Q", "response": "R", "judge_score": 1.0},  # an earlier run's field
    {"question": "Q", "response": "R", "judge_run": "x", "judge_line": 3},
    {"question": "Q", "response": "R", "n": float("nan")},
    {"question": "Q", "response": "R", "label": 4}, {"question": "Q", "response": "R",
                                                      "label": "yes"},
    {"question": "Q", "response": ""}, {"question": "Q", "response": 5},
    {"question": "Q", "response": "R", "model_a": "x", "model_b": "y"},
    {"question": "Q", "output": "R", "answer": "A"}, [1, 2], "text", None]


def reply_line(key, number):
    """The batch output line of request ``key``: the ``number``th mix of the kinds above."""
    message = {"role": "assistant", "content": CONTENTS[number % len(CONTENTS)]}
    extra = dict(EXTRAS[number // len(CONTENTS) % len(EXTRAS)])
    for name in ("refusal", "reasoning_content", "reasoning"):
        if name in extra:
            message[name] = extra.pop(name)
    choice = {"index": 0, "message": message, "finish_reason": extra.pop("finish_reason",
                                                                          "stop")}
    if "logprobs" in extra:
        choice["logprobs"] = extra.pop("logprobs")
    body = dict({"object": "chat.completion", "model": "judge-model", "choices": [choice],
                 "usage": {"prompt_tokens": 30 + number, "completion_tokens": 3,
                           "total_tokens": 33 + number}}, **extra)
    response = {"status_code": 200, "body": body}
    if number % 37 == 5:
        response = {"status_code": 500, "body": {"error": {"message": "overloaded"}}}
    return json.dumps({"id": "r%d" % number, "custom_id": key, "response": response,
                       "error": None}) + "\n"


class ImportAsTheGeneralPathTest(StubTestCase):
    """An import of one plain judge judges a record of a recipe from its reply without the
    general path's steps (minijudge._Recipes): the same records, summary and exit code as
    the general path (taken by the same command with _Run.go_offline doing nothing),
    over replies and records of every kind, in every mode that has recipes."""

    def imported(self, name, argv, general):
        calls, call = [], minijudge._Recipes.__call__

        def counted(way, *args):
            calls.append(1)
            return call(way, *args)
        out, summary = self.path(name + ".jsonl"), self.path(name + ".json")
        offline = minijudge._Run.go_offline
        if general:  # every record judged by the steps judge.judge takes
            offline = lambda run: None  # noqa: E731
        with mock.patch.object(minijudge._Recipes, "__call__", counted), \
                mock.patch.object(minijudge._Run, "go_offline", offline):
            code, _, err = run_main(argv + ["-o", out, "--summary", summary])
        with open(out) as f:
            written = f.read()
        err = re.sub(r"in [0-9.]+ s \(", "in T s (", re.sub(r"[0-9.]+ requests/s", "", err))
        with open(summary) as f:
            figures = {k: v for k, v in json.load(f).items() if k not in TIMING}
        return (code, err, written, figures), len(calls)

    def test_records_summary_and_exit_code_are_the_general_paths(self):
        records = [{"question": "Q%d" % n, "response": "R%d" % n, "answer": "A", "label": n % 5 + 1}
                   for n in range(len(CONTENTS) * len(EXTRAS))]
        for number, record in enumerate(HOSTILE_RECORDS * 3):  # each with a reply read ok
            if isinstance(record, dict) and "question" in record:
                record = dict({"answer": "A"}, **dict(record, question="Q%d" % number))
            records.insert(1 + number * 7, record)
        data = self.write("data.jsonl", "".join(json.dumps(r) + "\n" for r in records))
        for mode in ("rating", "binary", "math", "rubric"):
            common = ["--judge-model", "judge-model", "--mode", mode, "--human-field",
                      "label", "--max-error-rate", "1"]
            req = self.path(mode + ".req")
            code, _, err = run_main(common + ["-q", "--batch-export", req, data, "-o",
                                              self.path(mode + ".exported.jsonl")])
            self.assertEqual(code, 0, err)
            with open(req + ".000.jsonl") as f:
                keys = [json.loads(line)["custom_id"] for line in f]
            results = self.write(mode + ".results.jsonl", "".join(
                reply_line(key, number) for number, key in enumerate(keys) if number % 41))
            argv = common + ["--batch-import", results, data]
            lean, taken = self.imported(mode + ".lean", argv, False)
            general, none = self.imported(mode + ".general", argv, True)
            self.assertEqual(none, 0)
            self.assertGreater(taken, 10, mode)  # the lean path read many replies
            self.assertEqual(lean[0], general[0], mode)
            self.assertEqual(lean[1], general[1], mode)
            self.assertEqual(lean[2].splitlines(), general[2].splitlines(), mode)
            self.assertEqual(lean[3], general[3], mode)


class RecordsNamingTwoModelsTest(StubTestCase):
    def test_a_rating_record_with_model_a_and_model_b_is_judged_and_reported(self):
        # a rating has one response: the tally took a record naming model_a and model_b for
        # a pairwise verdict and read a second length it has not (IndexError: the run died)
        data = self.write_jsonl("data.jsonl", [
            {"question": "q", "response": "r", "model_a": "x", "model_b": "y"}])
        out = self.path("out.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 data, "-o", out])
        self.assertEqual(code, 0, err)
        with open(out) as f:
            self.assertEqual(json.loads(f.readline())["judge_status"], "ok")
        code, _, err = run_main(["report", "-q", out])
        self.assertEqual(code, 0, err)


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


class ExportAsTheGeneralPathTest(StubTestCase):
    """Issue 31, item 1: an export makes each record's request by its kind's recipe
    (minijudge._Recipes), without the steps judge.judge takes. Every record, flag and
    outcome this does not cover takes the general path. These tests hold the lean path to
    the general one (the same command with _Run.go_offline doing nothing) through the real
    command line: the records, the batch files byte for byte, the summary, stderr and the
    exit code, over hostile records, in every mode that has recipes, alone and beside an
    import."""


    def run_twice(self, argv, name):
        """(lean, general): each run's (exit code, stderr, records text, summary figures,
        batch files' bytes), its own folder's paths read as DIR; and how many records the
        lean run exported by a recipe."""
        runs, taken = [], []
        call = minijudge._Recipes.__call__

        def counted(way, judge, spec, item, mode):
            judgement = call(way, judge, spec, item, mode)
            made = way.messages(item[1]) is not None  # by its kind's recipe
            taken.append(made and judgement.status == "exported")
            return judgement
        for way, offline in (("lean", minijudge._Run.go_offline), ("general", lambda run: None)):
            folder = self.path("%s.%s" % (name, way))
            os.mkdir(folder)
            here = [a.replace("DIR", folder) for a in argv]
            out, summary = os.path.join(folder, "out.jsonl"), os.path.join(folder, "s.json")
            with mock.patch.object(minijudge._Recipes, "__call__", counted), \
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
        self.assertEqual(code, 1, err)  # the hostile records not exported fail, as online
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
    """The messages judge.judge's steps make of a record; None where _Recipes takes
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


class RecipesAsTheGeneralPathTest(unittest.TestCase):
    """Issue 31, item 1: an offline run (an export, an import) makes a record's prompt from its
    kind's recipe (minijudge._Recipes), made once from a probe, instead of the dozen steps
    the judge takes a record. The recipe holds only where those steps copy each text they
    read whole and treat it by whether it is blank: these tests hold it to the steps' own
    prompts over hostile records (blank texts of every kind of space, numbers, NaN, lists,
    null, braces, markers, surrogates, aliases, a question missing beside a context), under
    the flags that change what the steps read, in every mode that has recipes; and through
    the real command line, an export's batch lines are the requests an online run sends."""

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


class ExportRequestsTest(StubTestCase):
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


class PanelExportRequestsTest(StubTestCase):
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


ENV = without_judge(every=True)


JUDGE = ["--judge-model", "judge-model"]


LINES = [  # the corpus: each line as it is in the input file
    json.dumps({"id": 1, "question": "What is 2 + 2?", "response": "4"}),
    json.dumps({"id": 2, "question": "Qu'est-ce que l'été ? 夏", "response": "Une saison ☀ 🌞",
                "answer": "a season"}, ensure_ascii=False),
    json.dumps({"id": 3, "question": "What is 2 + 2?", "response": "4"}),  # a duplicate
    json.dumps({"id": 4, "question": "q", "response": "r", "score": float("nan")}),
    json.dumps({"id": 5, "question": "no response here"}),
    json.dumps({"id": 6, "question": "q", "response": ""}),
    json.dumps({"id": 7, "question": "q", "response": "   "}),
    "{not json",
    "[1, 2, 3]",
    "",
    json.dumps({"id": 10, "context": "only a context", "response": "an answer"}),
    json.dumps({"id": 11, "question": "q", "response": "r", "judge_score": 5,
                "judge_status": "ok", "judge_extra": "an earlier run's"}),
    json.dumps({"id": 12, "question": "q", "response": 42}),
    json.dumps({"id": 13, "question": "q", "response": "lone \ud83d surrogate"}),
    json.dumps({"id": 14, "question": "q {braces} {0}", "response": "{response}"}),
    json.dumps({"id": 15, "question": "q", "response": "r", "answer": None}),
    json.dumps({"id": 16, "question": ["a", "list"], "response": {"a": "dict"}}),
]


REPLIES = ["[[4]]", "Rating: 5", "no rating at all", "[[9]]", "[[2]]"]


def timeless(stderr):
    """The summary without the times it measured ("16 records in 0.1 s", "0.0 requests/s")."""
    return re.sub(r"[0-9.]+ (s|requests/s)\b", "T", stderr)


def run(folder, *argv):
    """(exit status, stderr) of main(ARGV) in this process, as ``python -m minijudge ARGV``
    in ``folder`` with ENV runs it: the files and words are main()'s."""
    with mock.patch.dict(os.environ, clear=True):
        os.environ.update(ENV)
        code, _, err = run_main(argv, cwd=folder)
    return code, timeless(err)


TIMED = re.compile(rb'"(wall_seconds|latency[a-z_]*)": [0-9.e-]+')  # the clock's, not ours


def files(folder, skip=("in.jsonl", "replies.jsonl", "page.html")):
    """{name: bytes} of a folder's files but the inputs and --html's page; the times a run
    measured as 0, the cache as its keys (its entries keep their latency)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if name not in skip:
            with open(os.path.join(folder, name), "rb") as f:
                found[name] = TIMED.sub(rb'"\1": 0', f.read())
    if "cache.jsonl" in found:
        found["cache.jsonl"] = [json.loads(line)["key"] for line in
                                found["cache.jsonl"].splitlines()]
    return found


def replies_for(parts):
    """Batch output lines for the requests in ``parts``: replies that parse and do not, an
    error line, a line that is no reply, and one request answered twice."""
    lines, keys = [], []
    for part in parts:
        with open(part, "rb") as f:
            keys.extend(json.loads(line)["custom_id"] for line in f)
    for n, key in enumerate(keys):
        body = {"object": "chat.completion", "model": "judge-model", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": REPLIES[n % 5]},
             "finish_reason": "stop"}], "usage": {"prompt_tokens": 30, "completion_tokens": 3}}
        response = {"status_code": 200, "body": body}
        if n == 3:
            response = {"status_code": 500, "body": {"error": {"message": "overloaded"}}}
        lines.append(json.dumps({"custom_id": key, "response": response, "error": None}))
    lines.append(json.dumps({"custom_id": keys[0], "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "[[1]]"}}]}}, "error": None}))
    lines.append("not a reply")
    return "\n".join(lines[1:] + lines[:1]) + "\n"  # the first one answered last


class OfflineWritesAsTheGeneralPathTest(unittest.TestCase):
    """Issue 31, item 1: --batch-export and --batch-import judge their records by a lean path.

    An offline run judges an item a judge asks once by its kind's recipe (_Recipes, chosen
    by _Run.go_offline), else by _judge_item; every run writes with _Run.write_record. The
    two ways must write the same bytes: each test runs one varied corpus (records that are
    judged, bad lines, missing and empty fields, unicode, NaN, duplicates, an earlier run's
    fields, a resume from a --cache) through main() in the run's folder twice, once plain
    and once with --html (which only adds its own file), or with the lean path turned off,
    and compares every file and stderr."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def folder(self, name, replies=None):
        path = os.path.join(self.root, name)
        os.mkdir(path)
        with open(os.path.join(path, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        if replies is not None:
            with open(os.path.join(path, "replies.jsonl"), "w") as f:
                f.write(replies)
        return path

    def both(self, argv, replies=None):
        """Run ``argv`` plain (lean) and with --html (general) in folders of their own; check
        they wrote the same files and stderr; the lean run's files."""
        lean, general = self.folder("lean", replies), self.folder("general", replies)
        lean_run = run(lean, *argv)
        general_run = run(general, *argv, "--html", "page.html")
        self.assertEqual(lean_run, general_run)
        self.assertTrue(os.path.exists(os.path.join(general, "page.html")))
        self.assertEqual(files(lean), files(general))
        return lean, files(lean)

    def test_an_export_writes_the_same_files(self):
        folder, written = self.both(JUDGE + ["--batch-export", "req", "--batch-max-lines", "4",
                                             "in.jsonl", "-o", "out.jsonl", "--summary",
                                             "summary.json"])
        self.assertEqual(sorted(written), ["out.jsonl", "req.000.jsonl", "req.001.jsonl",
                                           "summary.json"])
        out = [json.loads(line) for line in written["out.jsonl"].splitlines()]
        self.assertEqual(len(out), 16)  # every non-blank line, the bad ones too
        statuses = [record["judge_status"] for record in out]
        self.assertEqual(statuses.count("exported"), 10)
        self.assertIn("bad_record", statuses)
        self.assertIn("empty_response", statuses)
        self.assertIsNone(out[3]["score"])  # NaN written as null
        self.assertNotIn("judge_extra", out[10])  # an earlier run's field is dropped
        self.assertEqual(out[0]["judge_error"].split(" as ")[0], "exported to req.000.jsonl")
        self.assertEqual(out[0]["judge_error"], out[2]["judge_error"])  # asked once
        for record in out:
            self.assertEqual(list(record)[-2:], ["judge_line", "judge_run"])
            self.assertEqual(record["judge_run"], out[0]["judge_run"])
        requests = b"".join(written[name] for name in sorted(written) if name[:4] == "req.")
        self.assertEqual(len(requests.splitlines()), 7)  # each duplicate exported once
        self.assertTrue(requests.startswith(b'{"custom_id": "'))

    def test_an_import_and_its_resume_write_the_same_files(self):
        export = self.folder("export")
        self.assertEqual(run(export, *JUDGE, "--batch-export", "req", "in.jsonl", "-o",
                             "out.jsonl")[0], 1)  # the bad and empty records fail, as online
        replies = replies_for([os.path.join(export, "req.000.jsonl")])
        self.assertFalse(os.path.exists(os.path.join(export, "req.001.jsonl")))
        argv = JUDGE + ["--batch-import", "replies.jsonl", "in.jsonl", "-o", "scored.jsonl",
                        "--summary", "summary.json", "--cache", "cache.jsonl"]
        folder, written = self.both(argv, replies)
        out = [json.loads(line) for line in written["scored.jsonl"].splitlines()]
        statuses = [record["judge_status"] for record in out]
        self.assertEqual(statuses.count("ok"), 6)
        self.assertEqual(statuses.count("parse_error"), 3)
        self.assertEqual(statuses[9], "http_error")
        self.assertIn("bad_record", statuses)
        self.assertEqual([record["judge_score"] for record in out[:3]], [0.0, 1.0, 0.0])
        self.assertTrue(written["cache.jsonl"])
        for name in ("lean", "general"):  # the rerun answers from the cache
            os.remove(os.path.join(self.root, name, "scored.jsonl"))
        lean = run(os.path.join(self.root, "lean"), *argv)
        general = run(os.path.join(self.root, "general"), *argv, "--html", "page.html")
        self.assertEqual(lean, general)
        self.assertEqual(files(os.path.join(self.root, "lean")),
                         files(os.path.join(self.root, "general")))


class OfflineJudgingAsTheGeneralPathTest(unittest.TestCase):
    """_Recipes (the judging of the lean path) beside _judge_item: the same corpus run
    in-process by main() with go_offline as it is and doing nothing (every record
    judged and written the general way), in one folder so the paths in messages agree."""

    def run_twice(self, argv, outputs, replies=None):
        import io
        from contextlib import redirect_stderr
        from unittest import mock
        import minijudge
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        with open(os.path.join(folder, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        if replies is not None:
            with open(os.path.join(folder, "replies.jsonl"), "w") as f:
                f.write(replies)
        argv = [os.path.join(folder, arg) if arg.endswith(("jsonl", ".json")) or arg == "req" else arg
                for arg in argv]
        seen = []
        for lean in (True, False):
            stderr = io.StringIO()
            with redirect_stderr(stderr), mock.patch.object(
                    minijudge._Run, "go_offline", autospec=True,
                    side_effect=minijudge._Run.go_offline if lean else None):
                status = minijudge.main(argv)
            seen.append((status, timeless(stderr.getvalue()), files(folder)))
            for name in outputs:
                os.remove(os.path.join(folder, name))
        self.assertEqual(seen[0], seen[1])
        return seen[0]

    def test_an_export(self):
        status, _, written = self.run_twice(JUDGE + ["--batch-export", "req", "in.jsonl", "-o",
                                                     "out.jsonl", "--summary", "s.json"],
                                            ["req.000.jsonl", "out.jsonl", "s.json"])
        self.assertEqual(status, 1)  # the bad and empty records fail, as online
        self.assertEqual(len(written["req.000.jsonl"].splitlines()), 7)

    def test_an_import(self):
        export = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, export)
        with open(os.path.join(export, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        run(export, *JUDGE, "--batch-export", "req", "in.jsonl", "-o", "out.jsonl")
        replies = replies_for([os.path.join(export, "req.000.jsonl")])
        status, stderr, written = self.run_twice(
            JUDGE + ["--batch-import", "replies.jsonl", "in.jsonl", "-o", "scored.jsonl"],
            ["scored.jsonl"], replies)
        self.assertEqual(status, 1)  # over --max-error-rate: said on stderr
        self.assertIn("statuses: ok 6,", stderr)
        self.assertEqual(len(written["scored.jsonl"].splitlines()), 16)


class RecipePathTakenTest(unittest.TestCase):
    """Which runs judge by recipe (_Recipes): decided once a run (a test of the choice
    itself). One writer and one tally serve every run, so a page or a price no longer turn
    it off; a judge that asks an item more than once does."""

    def judged_by_recipe(self, *argv):
        import io
        from contextlib import redirect_stderr
        from unittest import mock
        import minijudge
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        data = os.path.join(folder, "in.jsonl")
        with open(data, "w") as f:
            f.write(LINES[0] + "\n")
        spy = mock.patch.object(minijudge._Recipes, "__call__", autospec=True,
                                side_effect=minijudge._Recipes.__call__)
        with spy as lean, redirect_stderr(io.StringIO()):
            minijudge.main(JUDGE + ["--batch-export", os.path.join(folder, "req"), data,
                                    "-o", os.path.join(folder, "out.jsonl")] + list(argv))
        return lean.call_count

    def test_a_plain_export_takes_it_and_html_or_a_price_does_not(self):
        self.assertEqual(self.judged_by_recipe(), 1)
        self.assertEqual(self.judged_by_recipe("--html", os.devnull), 1)
        self.assertEqual(self.judged_by_recipe("--price", "1,2"), 1)
        self.assertEqual(self.judged_by_recipe("--repeats", "2"), 0)


class ImportedRepliesTest(unittest.TestCase):
    """Issue 31, second round (perfx31): an imported reply is read the same whether its body is
    a plain completion (read as parsed) or not (read as before)."""

    def test_plain_and_other_replies_imported_as_before(self):
        with tempfile.TemporaryDirectory() as folder:
            data = os.path.join(folder, "in.jsonl")
            with open(data, "w") as f:
                for n in range(3):
                    f.write(json.dumps({"question": "q%d" % n, "response": "r%d" % n}) + "\n")
            prefix = os.path.join(folder, "req")
            self.cli(folder, "--batch-export", prefix, data, "-o", os.path.join(folder, "x"))
            with open(prefix + ".000.jsonl") as f:
                ids = [json.loads(line)["custom_id"] for line in f]
            bodies = [{"choices": [{"message": {"content": "Rating: [[4]]"}}], "model": "m",
                       "usage": {"prompt_tokens": 3}},  # a plain completion
                      {"choices": [], "model": "m"},  # no choice: the old path's message
                      {"error": {"message": "overloaded"}}]  # an error in a 200 body
            results = os.path.join(folder, "out.jsonl")
            with open(results, "w") as f:
                for custom_id, body in zip(ids, bodies):
                    f.write(json.dumps({"custom_id": custom_id, "response": {
                        "status_code": 200, "body": body}}) + "\n")
            scored = os.path.join(folder, "scored.jsonl")
            self.cli(folder, "--batch-import", results, data, "-o", scored)
            with open(scored) as f:
                got = [json.loads(line) for line in f]
        self.assertEqual([(r["judge_status"], r["judge_score"], r["judge_model"])
                          for r in got], [("ok", 0.75, "m"), ("invalid_response", 0.0, None),
                                          ("http_error", 0.0, None)])
        self.assertEqual(got[0]["judge_usage"], {"prompt_tokens": 3})
        self.assertIn("has no choices: b'{\"choices\": [], \"model\": \"m\"}'",
                      got[1]["judge_error"])
        self.assertIn("overloaded", got[2]["judge_error"])

    def cli(self, folder, *argv):
        return run(folder, "--judge-model", "m", "-q", *argv)


if __name__ == "__main__":
    unittest.main()
