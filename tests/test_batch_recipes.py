"""Issue 31, item 1: an import makes each record's request by its kind's recipe
(_ByRecipe); every record, reply and flag that this does not cover takes the general path. These tests hold the shared path to the general one over
hostile records and replies, through the real command line.
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
from batch_engine import run_batch  # noqa: E402
from stub import StubServer, StubTestCase, run_main  # noqa: E402

# records of every kind an import meets: plain, a request asked twice (the same record
# again), one with nothing to judge (no request), one the batch errs on, one it never ran
RECORDS = [{"question": "Q%d" % (n % 40), "response": "R%d" % (n % 40)} for n in range(60)]
RECORDS += [{"question": "Q", "response": ""}, {"question": "Qe", "response": "Re"},
            {"question": "Qf", "response": "Rf"}, {"question": "Qm", "response": "Rm"}]


TIMING = ("wall_seconds", "requests_per_second", "latency_mean", "latency_max")


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class ImportsFindRepliesInOrderOrNot(StubTestCase):
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
        with open(self.path(name + ".json")) as f:
            summary = json.load(f)
        figures = {k: v for k, v in summary.items() if k not in TIMING}
        figures = json.loads(re.sub(r"/[^ ]*[.]jsonl", "FILE", json.dumps(figures)))
        files = [os.path.basename(path) for path in figures["batch"].pop("files") or []]
        return lines(self.path(name + ".jsonl")), figures, files, code

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


class AnImportReadsEachReplyAsTheGeneralPathDoes(StubTestCase):
    """An import of one plain judge judges a record of a recipe from its reply without the
    general path's steps (minijudge._ByRecipe): the same records, summary and exit code as
    the general path (taken by the same command with _Run.go_offline doing nothing),
    over replies and records of every kind, in every mode that has recipes."""

    def imported(self, name, argv, general):
        calls, call = [], minijudge._ByRecipe.__call__

        def counted(way, *args):
            calls.append(1)
            return call(way, *args)
        out, summary = self.path(name + ".jsonl"), self.path(name + ".json")
        offline = minijudge._Run.go_offline
        if general:  # every record judged by the steps judge.judge takes
            offline = lambda run: None  # noqa: E731
        with mock.patch.object(minijudge._ByRecipe, "__call__", counted), \
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


class RecordsNamingTwoModels(StubTestCase):
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


if __name__ == "__main__":
    unittest.main()
