"""report (the section "report: scored files summarised again"): a record counted once,
every value it reads checked and refused by file and line, runs that asked differently kept
apart, a re-judged file's fields, a repeat named at a million records; and report's
shortcuts (the lean path for the commonest records, a stamp parsed once) held to the
general path, each through the real command line.

Issue 28, `report`: a record is counted once, every value it reads is checked, runs that
asked differently are not merged, and a re-judged file carries only the new run's fields.

Each test judges a small file through the real command line against the loopback stub,
then edits, copies or links the scored files the way a careless or hostile user would."""
import json
import os
import re
import shutil
import sys
import threading
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402

CRITERIA = os.path.join(os.path.dirname(HERE), "examples", "helpfulness.json")
RECORDS = [{"id": k, "question": "What is {} + {}?".format(k, k), "doc": "arithmetic",
            "answer": str(2 * k), "img": "data:image/png;base64,iVBORw0KGgo=",
            "response": str(2 * k)} for k in range(4)]


class ReportTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: 4"
        self.data = self.write("data.jsonl", RECORDS)

    def write(self, name, records):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        return self.path(name)

    def judge(self, out, *more, data=None):
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data or
                                 self.data, "-o", self.path(out), "-q"] + list(more))
        self.assertEqual(code, 0, err)
        return self.path(out)

    def report(self, *argv):
        return run_main(["report"] + list(argv))

    def refused(self, message, *argv):
        code, out, err = self.report(*argv)
        self.assertEqual((code, out, err), (2, "", "minijudge: error: " + message + "\n"))


class CountedOnceTest(ReportTest):
    def test_a_file_named_twice_or_linked_is_refused_up_front(self):
        a = self.judge("a.jsonl")
        os.symlink(a, self.path("sym.jsonl"))
        os.link(a, self.path("hard.jsonl"))
        for other in (a, self.path("sym.jsonl"), self.path("hard.jsonl")):
            with self.subTest(other=other):
                self.refused("{} and {} are the same file; name each file once".format(
                    a, other), a, other)

    def test_the_same_record_in_two_files_or_twice_in_one_is_refused(self):
        a = self.judge("a.jsonl")
        shutil.copy(a, self.path("copy.jsonl"))
        self.refused("{} line 1 and {} line 1 are the same record (input line 1 of one run); "
                     "report each record once".format(a, self.path("copy.jsonl")),
                     a, self.path("copy.jsonl"))
        with open(a, encoding="utf-8") as f:
            text = f.read()
        with open(self.path("twice.jsonl"), "w", encoding="utf-8") as f:
            f.write(text + text)
        self.refused("{0} line 1 and {0} line 5 are the same record (input line 1 of one run); "
                     "report each record once".format(self.path("twice.jsonl")),
                     self.path("twice.jsonl"))

    def test_records_carry_their_input_line_and_shards_and_other_inputs_still_add_up(self):
        shards = [self.judge("s%d.jsonl" % k, "--shard", "%d/2" % k) for k in range(2)]
        self.assertEqual([r["judge_line"] for r in self.records("s0.jsonl")], [1, 3])
        self.assertEqual([r["judge_line"] for r in self.records("s1.jsonl")], [2, 4])
        os.mkdir(self.path("other"))  # another data.jsonl: the same names, lines, options
        other = self.judge("other.jsonl", data=self.write(os.path.join("other", "data.jsonl"), [
            dict(r, response="wrong") for r in RECORDS]))
        code, _, err = self.report(*shards, other, "--summary", self.path("s.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("s.json")) as f:
            self.assertEqual(json.load(f)["records"], 8)


class CheckedTest(ReportTest):
    def edited(self, line, **fields):
        records = self.records("a.jsonl")
        records[line - 1].update(fields)
        return self.write("edited.jsonl", records)

    def test_every_value_report_reads_is_checked_and_its_file_and_line_named(self):
        self.judge("a.jsonl")
        cases = [
            ({"judge_score": 7}, "judge_score must be a number from 0 to 1; got 7"),
            ({"judge_score": "0.9"}, "judge_score must be a number from 0 to 1; got '0.9'"),
            ({"judge_score": True}, "judge_score must be a number from 0 to 1; got True"),
            ({"judge_score": None}, "judge_score must be a number from 0 to 1; got None"),
            ({"judge_status": "great"}, "judge_status must be a status minijudge writes "
             "(docs/python-api.md, Statuses); got 'great'"),
            ({"judge_status": "parse_error", "judge_score": 0.5}, "judge_score of a failure "
             "(parse_error) must be the run's failure value, 0.0; got 0.5"),
            ({"judge_usage": "many"}, "judge_usage must be an object or null; got 'many'"),
            ({"judge_model": {"a": 1}}, "judge_model must be text or null; got {'a': 1}"),
            ({"judge_value": 7}, "judge_value must be a rating on the run's scale, 1 to 5; "
             "got 7"),
            ({"judge_line": "2"}, "judge_line must be a line number (1 or more); got '2'"),
            ({"judge_run": dict(self.records("a.jsonl")[1]["judge_run"], mode="nope")},
             "judge_run: mode must be one of rating, binary, math, rubric, criterion, "
             "comparative, pairwise, systems, trajectory; got 'nope'"),
            ({"judge_run": dict(self.records("a.jsonl")[1]["judge_run"], scale="1,5")},
             "judge_run: scale must be [LO, HI], two numbers; got '1,5'"),
        ]
        for fields, message in cases:
            with self.subTest(fields=fields):
                self.refused("{} line 2: {}".format(self.edited(2, **fields), message),
                             self.path("edited.jsonl"))

    def test_a_score_of_1e999_is_refused_not_a_traceback(self):
        self.judge("a.jsonl")
        with open(self.path("a.jsonl"), encoding="utf-8") as f:
            text = re.sub(r'"judge_score": [0-9.]+', '"judge_score": 1e999', f.read(), count=1)
        with open(self.path("inf.jsonl"), "w", encoding="utf-8") as f:
            f.write(text)
        self.refused("{} line 1: judge_score must be a number from 0 to 1; got inf".format(
            self.path("inf.jsonl")), self.path("inf.jsonl"))

    def test_columns_named_like_minijudge_fields_are_not_read(self):
        self.write("data.jsonl", [dict(r, eval_run={"mode": "rating", "x": [1]}, judge_wins={
            "a": {}}, other_run={"prefix": "judge"}) for r in RECORDS])
        a = self.judge("a.jsonl")
        self.assertEqual(self.records("a.jsonl")[0]["eval_run"], {"mode": "rating", "x": [1]})
        code, _, err = self.report(a, "--summary", self.path("s.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("s.json")) as f:
            summary = json.load(f)
        self.assertEqual((summary["records"], summary["mean_score"], summary["systems"]),
                         (4, 0.75, None))
        # added by hand after the run: fields a run without systems, --pass-threshold,
        # --repeats, --check-position or --jury does not write are not read
        code, _, err = self.report(self.edited(1, judge_wins={"x": "y"}, judge_played=[],
                                               judge_pass="x", judge_repeats=[7],
                                               judge_positional_bias={}, judge_panel=3),
                                   "--summary", self.path("e.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("e.json")) as f:
            summary = json.load(f)
        self.assertEqual([summary[k] for k in ("pass_rate", "repeats", "positional_bias_rate",
                                               "panel", "systems")], [None] * 5)

    def test_a_systems_run_s_wins_are_checked_against_its_comparisons(self):
        self.srv.content = "[[A]]"
        self.judge("a.jsonl", "--mode", "systems", data=os.path.join(
            os.path.dirname(HERE), "examples", "systems.jsonl"))
        first = self.records("a.jsonl")[0]
        self.assertEqual(self.report(self.path("a.jsonl"))[0], 0)
        wins = dict(first["judge_wins"])
        name = next(iter(wins))
        cases = [
            ({"judge_wins": dict(wins, **{name: 99})}, "judge_wins must give each system of "
             "judge_played 0 to its comparisons; got {} and {}".format(json.dumps(dict(
                 wins, **{name: 99})), json.dumps(first["judge_played"]))),
            ({"judge_played": dict(first["judge_played"], **{name: 0})}, "judge_played must "
             "be an object of counts (1 or more); got {!r}".format(dict(
                 first["judge_played"], **{name: 0}))),
            ({"judge_pairs": ["x"]}, "judge_pairs must be an object or a list of objects, 4 "
             "deep at most; got [\"x\"]"),
            ({"judge_pairs": [dict(first["judge_pairs"][0], consistent={})]},
             "judge_pairs.0.consistent must be true, false or null; got {}"),
            ({"judge_score": 0.5}, "judge_score must be null (each system's is in value); got "
             "0.5"),
        ]
        for fields, message in cases:
            with self.subTest(fields=fields):
                self.refused("{} line 1: {}".format(self.edited(1, **fields), message),
                             self.path("edited.jsonl"))

    def test_a_stamp_of_an_earlier_minijudge_is_named(self):
        self.judge("a.jsonl")
        stamp = dict(self.records("a.jsonl")[0]["judge_run"])
        del stamp["prefix"]
        self.refused("{} line 1: judge_run is not a stamp this minijudge ({}) writes (no prefix "
                     "'judge'): an earlier minijudge scored it; judge it again".format(
                         self.edited(1, judge_run=stamp), minijudge.__version__),
                     self.path("edited.jsonl"))

    def test_a_jury_panel_must_name_the_jury_s_judges(self):
        with open(self.path("jury.json"), "w") as f:
            json.dump([{"name": "x", "url": self.srv.url}, {"name": "y", "url": self.srv.url}], f)
        self.judge("a.jsonl", "--judges", self.path("jury.json"), "--jury", "mean")
        self.assertEqual(self.records("a.jsonl")[0]["judge_run"]["judges"], ["x", "y"])
        self.assertEqual(self.report(self.path("a.jsonl"))[0], 0)
        self.refused("{} line 2: judge_panel must map the jury's judges (x, y) to scores; got "
                     "y, x".format(self.edited(2, judge_panel={"y": 0.75, "x": 0.75})),
                     self.path("edited.jsonl"))
        self.refused("{} line 2: judge_panel must be an object of scores (0 to 1, or null); got "
                     "{{'x': 2, 'y': 0.75}}".format(self.edited(2, judge_panel={
                         "x": 2, "y": 0.75})), self.path("edited.jsonl"))
        members = self.records("a.jsonl")[1]["judge_members"]
        cases = [
            (dict(members, x=dict(members["x"], positional_bias=[])),
             "judge_members.x.positional_bias must be true, false or null; got []"),
            (dict(members, y=dict(members["y"], repeats=["a"])),
             "judge_members.y.repeats must be a list of scores (0 to 1, or null); got ['a']"),
            (5, "judge_members must be an object or a list of objects, 4 deep at most; got 5"),
        ]
        for edited, message in cases:
            with self.subTest(members=edited):
                self.refused("{} line 2: {}".format(self.edited(2, judge_members=edited),
                                                    message), self.path("edited.jsonl"))


class EveryRunTest(ReportTest):
    def test_what_a_run_of_any_mode_writes_is_reported_as_the_run_summarised_it(self):
        examples = os.path.join(os.path.dirname(HERE), "examples")
        with open(self.path("jury.json"), "w") as f:
            json.dump([{"name": "x", "url": self.srv.url}, {"name": "y", "url": self.srv.url,
                                                           "options": {"repeats": 2}}], f)
        criterion = ["--mode", "criterion", "--criteria", CRITERIA]
        pairs, systems = (os.path.join(examples, name) for name in ("pairs.jsonl",
                                                                    "systems.jsonl"))
        cases = [  # flags, data, the replies (picked by the prompt)
            ([], None, ["Rating: [[2]]", "Rating: [[5]]", "no idea"]),
            (["--logprobs", "--pass-threshold", "0.5"], None, ["Rating: 4"]),
            (["--mode", "binary"], None, ["yes", "no", "maybe"]),
            (["--mode", "math", "--repeats", "3", "--temperature", "1"], None, ["no", "yes"]),
            (["--mode", "rubric"], None, ['{"correctness": 4, "relevance": 5}', "x"]),
            (criterion + ["--check-position"], None, ["Excellent", "Bad"]),
            (criterion + ["--assess"], None, ["It is good.", "Acceptable"]),
            (["--mode", "comparative"], pairs, ["8 6", "5 9", "?"]),
            (["--mode", "pairwise"], pairs, ["[[A]]", "[[B]]", "[[C]]"]),
            (["--mode", "systems"], systems, ["[[A]]", "[[B]]", "[[C]]", "?"]),
            (["--judges", self.path("jury.json"), "--jury", "mean", "--quorum", "1"], None,
             ["Rating: 3", "Rating: 4", "?"]),
        ]
        for flags, data, replies in cases:
            with self.subTest(flags=flags):
                self.srv.responder = lambda request: replies[
                    sum(map(ord, request.prompt)) % len(replies)]
                code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                         data or self.data, "-o", self.path("a.jsonl"), "-q",
                                         "--summary", self.path("run.json")] + flags)
                self.assertIn(code, (0, 1), err)
                code, _, err = self.report(self.path("a.jsonl"), "--summary",
                                           self.path("report.json"))
                self.assertIn(code, (0, 1), err)
                with open(self.path("run.json")) as f:
                    run = json.load(f)
                with open(self.path("report.json")) as f:
                    report = json.load(f)
                for name in ("records", "statuses", "mean_score", "ci95", "ratings", "mode",
                             "pass_rate", "repeats", "panel", "systems", "positional_bias_rate",
                             "position_consistency"):
                    self.assertEqual(report[name], run[name], name)


class DifferentRunsTest(ReportTest):
    def test_every_option_that_changes_the_request_is_in_the_stamp(self):
        criterion = ["--mode", "criterion", "--criteria", CRITERIA]
        cases = [  # the first run's flags, the second's, the first difference named
            ([], ["--system", "Be strict."], "request.system"),
            ([], ["--context-field", "topic=doc"], "fields.context"),
            (["--mode", "binary"], ["--mode", "binary", "--binary-format", "01"],
             "request.binary_format"),
            ([], ["--temperature", "0.7"], "request.params.temperature"),
            ([], ["--max-tokens", "64"], "request.params.max_tokens"),
            ([], ["--seed", "7"], "request.params.seed"),
            ([], ["--extra-body", '{"top_p": 0.5}'], "request.params.top_p"),
            ([], ["--logprobs"], "request.params.logprobs"),
            ([], ["--structured"], "request.params.response_format"),
            ([], ["--repeats", "2"], "request.repeats"),
            ([], ["--question-field", "doc"], "fields.question"),
            ([], ["--reference-field", "doc"], "fields.reference"),
            ([], ["--image-field", "img"], "fields.image"),
            ([], ["--pass-threshold", "0.5"], "pass_threshold"),
            (criterion, criterion + ["--check-position"], "request.check_position"),
            (criterion, criterion + ["--assess"], "request.assess"),
        ]
        firsts = {}  # each first run once: 13 cases share the same one
        for first, second, named in cases:
            with self.subTest(second=second):
                self.srv.content = {"criterion": "Excellent", "binary": "1"}.get(
                    (first + [None, None])[1], "Rating: 4")
                if tuple(first) not in firsts:
                    firsts[tuple(first)] = self.judge("a%d.jsonl" % len(firsts), *first)
                a, b = firsts[tuple(first)], self.judge("b.jsonl", *second)
                code, out, err = self.report(a, b)
                self.assertEqual(code, 2, err)
                self.assertRegex(err, r"^minijudge: error: {} line 1 and {} line 1 are records "
                                      r"of different runs: {} ".format(
                                          re.escape(a), re.escape(b), re.escape(named)))
                code, _, err = self.report(a, b, "--mixed")
                self.assertEqual(code, 0, err)
                self.assertIn(named, err)

    def test_every_option_that_picks_a_conversations_turn_is_in_the_stamp(self):
        # a run judging turn 1 and one judging the last turn are not one run, nor a run
        # reading another conversation or cutting its earlier turns shorter
        turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                 {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
        data = self.write("talks.jsonl", [{"id": i, "messages": turns, "dialog": turns}
                                          for i in range(3)])
        cases = [(["--turn", "1"], "turn"),
                 (["--conversation-field", "dialog"], "fields.conversation"),
                 (["--max-turn-chars", "10"], "request.max_turn_chars")]
        a = self.judge("a.jsonl", data=data)
        for flags, named in cases:
            with self.subTest(flags=flags):
                b = self.judge("b.jsonl", *flags, data=data)
                code, out, err = self.report(a, b)
                self.assertEqual(code, 2, err)
                self.assertRegex(err, r"^minijudge: error: {} line 1 and {} line 1 are records "
                                      r"of different runs: {} ".format(
                                          re.escape(a), re.escape(b), re.escape(named)))
        # the defaults named on the command line are the same run as the defaults unnamed:
        # its records are the same records, refused as such
        b = self.judge("b.jsonl", "--conversation-field", "messages", "--max-turn-chars",
                       "4000", data=data)
        code, _, err = self.report(a, b)
        self.assertEqual(code, 2, err)
        self.assertIn(" are the same record (input line 1 of one run)", err)

    def test_the_same_options_are_one_run(self):
        a, b = self.judge("a.jsonl", "--shard", "0/2"), self.judge("b.jsonl", "--shard", "1/2")
        code, _, err = self.report(a, b)
        self.assertEqual(code, 0, err)
        self.assertNotIn("mixed", err)


class RejudgedTest(ReportTest):
    def test_a_rerun_replaces_every_field_of_its_prefix(self):
        self.srv.content = "Excellent"
        first = self.judge("first.jsonl", "--mode", "criterion", "--criteria", CRITERIA,
                           "--check-position", "--repeats", "2")
        self.assertIn("judge_positional_bias", self.records("first.jsonl")[0])
        self.assertIn("judge_repeats", self.records("first.jsonl")[0])
        self.srv.content = "Rating: 2"
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", first, "-o",
                                 self.path("second.jsonl"), "--summary", self.path("run.json")])
        self.assertEqual(code, 0, err)
        self.assertIn("minijudge: warning: line 1 has judge_* fields of an earlier run: this "
                      "run replaces them, and drops judge_members, judge_option, "
                      "judge_option_reversed, judge_positional_bias, judge_repeats\n", err)
        for record in self.records("second.jsonl"):
            self.assertEqual(sorted(k for k in record if k.startswith("judge_")), [
                "judge_error", "judge_finish_reason", "judge_line", "judge_model", "judge_raw",
                "judge_run", "judge_score", "judge_score_source", "judge_status",
                "judge_usage", "judge_value"])
            self.assertEqual(record["judge_run"]["mode"], "rating")
        code, _, err = self.report(self.path("second.jsonl"), "--summary",
                                   self.path("report.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("run.json")) as f:
            run = json.load(f)
        with open(self.path("report.json")) as f:
            report = json.load(f)
        for name in ("records", "statuses", "mean_score", "positional_bias_rate", "repeats",
                     "ci95", "ratings", "mode"):
            self.assertEqual(report[name], run[name], name)

    def test_each_judge_of_a_judges_file_replaces_its_own_fields_and_is_reported(self):
        with open(self.path("judges.json"), "w") as f:
            json.dump([{"name": "a", "url": self.srv.url}, {"name": "b", "url": self.srv.url,
                                                           "options": {"temperature": 0.5}}], f)
        self.write("data.jsonl", [dict(r, a_repeats=[1, 0], b_note="x", judge_x=1)
                                  for r in RECORDS])
        out = self.judge("out.jsonl", "--judges", self.path("judges.json"))
        record = self.records("out.jsonl")[0]
        self.assertNotIn("a_repeats", record)
        self.assertNotIn("b_note", record)
        self.assertEqual((record["judge_x"], record["a_line"], record["b_line"]), (1, 1, 1))
        self.assertEqual(record["b_run"]["request"]["params"]["temperature"], 0.5)
        code, _, err = self.report(out, "--summary", self.path("s.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("s.json")) as f:
            summary = json.load(f)
        self.assertEqual({name: s["records"] for name, s in summary["judges"].items()},
                         {"a": 4, "b": 4})
        shutil.copy(out, self.path("copy.jsonl"))
        self.refused("{} line 1 and {} line 1 are the same record (input line 1 of one run); "
                     "report each record once".format(out, self.path("copy.jsonl")),
                     out, self.path("copy.jsonl"))


class RepeatNamedTest(ReportTest):
    """Issue 31, `report` at a million records: the duplicate check keeps a hash a record and
    reads the files again only to name a repeat. What a user sees stays as it was: the first
    repeat in reading order, a torn line's warning only up to it, an error before it said
    instead, and a FIFO (which cannot be read twice) checked the same way."""

    def setUp(self):
        super().setUp()
        with open(self.judge("a.jsonl")) as f:
            self.lines = f.readlines()

    def file(self, name, lines):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.writelines(lines)
        return self.path(name)

    def test_the_first_repeat_is_named_and_later_torn_lines_are_not_warned(self):
        torn = '{"torn\n'
        path = self.file("d.jsonl", [torn] + self.lines + self.lines[2:3] + [torn] +
                         self.lines[1:2])
        code, out, err = self.report(path)
        self.assertEqual((code, out), (2, ""))
        warning, error = err.splitlines()  # the torn line after the repeat: no warning
        self.assertRegex(warning, r"^minijudge: warning: .*d\.jsonl: line 1: not JSON .*; skipped")
        self.assertEqual(error, "minijudge: error: {0} line 4 and {0} line 6 are the same "
                         "record (input line 3 of one run); report each record once".format(path))

    def test_an_error_after_a_repeat_is_not_said_and_one_before_it_is(self):
        bad = json.loads(self.lines[3])
        bad["judge_status"] = "okk"
        bad = json.dumps(bad) + "\n"
        after = self.file("after.jsonl", self.lines + self.lines[:1] + [bad])
        self.refused("{0} line 1 and {0} line 5 are the same record (input line 1 of one run); "
                     "report each record once".format(after), after)
        before = self.file("before.jsonl", self.lines + [bad] + self.lines[:1])
        self.refused("{} line 5: judge_status must be a status minijudge writes "
                     "(docs/python-api.md, Statuses); got 'okk'".format(before), before)

    def test_a_repeat_read_from_a_fifo_is_named(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        writer = threading.Thread(target=self.file, args=("fifo", self.lines + self.lines[1:2]))
        writer.start()
        try:
            self.refused("{0} line 2 and {0} line 5 are the same record (input line 2 of one "
                         "run); report each record once".format(fifo), fifo)
        finally:
            writer.join()


THREE_RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class ReportValuesHostileTest(StubTestCase):
    """Issue 28's independent campaign, other inputs for each class: `report` refuses every
    hostile value it reads (a rating that is no number, token counts no server sends, a list
    where text belongs) naming file and line, never a traceback nor a wrong total with exit
    0. Through the real command line against the loopback stub, on real files."""

    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: 4"
        self.write_jsonl("data.jsonl", THREE_RECORDS)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 self.path("data.jsonl"), "-o", self.path("out.jsonl")])
        self.assertEqual(code, 0, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            self.records = [json.loads(line) for line in f]

    def edited(self, edit):
        """out.jsonl with its first record edited by ``edit``, as text (10**400 has no float)."""
        first = dict(self.records[0])
        edit(first)
        lines = [json.dumps(first)] + [json.dumps(r) for r in self.records[1:]]
        return self.write("edited.jsonl", "".join(line + "\n" for line in lines))

    def assert_refused(self, edit, message):
        path = self.edited(edit)
        code, out, err = run_main(["report", path])
        self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: {}\n".format(
            path, message)))

    def test_a_rating_that_is_no_number_is_refused(self):
        # "4" and true fell out of the ratings, NaN was a rating of its own, 10**400 a traceback
        for value in ("4", True, float("nan"), 10 ** 400):
            with self.subTest(value=value):
                self.assert_refused(lambda r: r.update(judge_value=value),
                                    "judge_value must be a rating on the run's scale, 1 to 5; "
                                    "got {!r}".format(value))

    def test_token_counts_no_server_sends_are_refused(self):
        # -5 prompt tokens or true were summed into the tokens line, exit 0 (what is no int,
        # the run and report both skip)
        for count in (-5, True, 10 ** 400):
            with self.subTest(count=count):
                usage = {"prompt_tokens": count, "completion_tokens": 2, "total_tokens": 102}
                self.assert_refused(lambda r: r.update(judge_usage=usage),
                                    "judge_usage must be an object of token counts (0 or more) "
                                    "or null; got {!r}".format(usage))

    def test_a_list_for_the_status_or_the_mode_names_file_and_line(self):
        # was "minijudge: error: unhashable type: 'list'", no file, no line
        self.assert_refused(lambda r: r.update(judge_status=["ok"]),
                            "judge_status must be a status minijudge writes "
                            "(docs/python-api.md, Statuses); "
                            "got ['ok']")
        self.assert_refused(lambda r: r.update(judge_run=dict(r["judge_run"], mode=["rating"])),
                            "judge_run: mode must be one of rating, binary, math, rubric, "
                            "criterion, comparative, pairwise, systems, trajectory; "
                            "got ['rating']")


class CountedOnceHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2A): a scored file copied with a column added,
    or its ids retyped, is the same record to report."""

    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("data.jsonl", THREE_RECORDS)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 data, "-o", self.path("a.jsonl")])
        self.assertEqual(code, 0, err)
        with open(self.path("a.jsonl"), encoding="utf-8") as f:
            self.records = [json.loads(line) for line in f]

    def test_a_copy_with_a_column_added_or_an_id_retyped_is_the_same_record(self):
        # a copy annotated after the run (a "note" column) or passed through a tool that
        # made the ids floats was counted beside the original: 6 records of 3, exit 0
        for name, edit in (("note", lambda r: dict(r, note="checked")),
                           ("float", lambda r: dict(r, id=float(r["id"])))):
            with self.subTest(copy=name):
                copy = self.write_jsonl(name + ".jsonl", [edit(r) for r in self.records])
                code, out, err = run_main(["report", self.path("a.jsonl"), copy])
                self.assertEqual((code, out, err), (2, "", (
                    "minijudge: error: {} line 1 and {} line 1 are the same record (input "
                    "line 1 of one run); report each record once\n").format(
                        self.path("a.jsonl"), copy)))

    def test_records_the_judge_saw_differently_still_add_up(self):
        # another response at the same line of a run with the same options is another record
        other = self.write_jsonl("other.jsonl", [dict(r, response="x") for r in self.records])
        code, _, err = run_main(["report", self.path("a.jsonl"), other, "--summary",
                                 self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["records"], 6)


def replies(request):
    """Ratings and failures by the question: a judged record, a parse error, a refusal."""
    prompt = json.dumps(request.json)
    if "QGARBLED" in prompt:
        return "no rating here"
    if "QLOW" in prompt:
        return "Rating: 2"
    return None  # the stub's content: Rating: 4


class ReportLeanPathAsTheGeneralPathTest(StubTestCase):
    """Issue 31, item 1: report's lean path (_Report.add_lean) for the commonest records says
    exactly what the general path says. A report of a regular file takes the lean path; the
    same bytes read from a FIFO (a record seen twice is found as it is read: each record's
    place is kept) are read by the general path alone, so each file is reported both ways
    and every output compared: the printed summary, stderr, the exit code, --summary and
    --html."""

    def setUp(self):
        super().setUp()
        self.srv.responder = replies
        self.srv.content = "Rating: 4"

    def scored(self, name, items, *flags):
        """The -o file of a real run over ``items``."""
        data = self.write_jsonl(name + ".in.jsonl", items)
        out = self.path(name)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q", data,
                                 "-o", out, *flags])
        self.assertIn(code, (0, 1), err)
        return out

    def corpus(self):
        """Two runs' records: judged, parse errors, a bad record, unicode, an odd line."""
        items = [{"id": i, "question": "q{} {}".format(i, ("QLOW", "QHIGH", "QGARBLED")[i % 3]),
                  "response": "r\u00e9ponse \u2603 {}".format(i)} for i in range(12)]
        items.append({"id": 99, "question": "no response"})
        first = self.scored("a.jsonl", items)
        ten = self.write("ten.txt", "Rate from 1 to 10. {question}\n{response}")
        second = self.scored("b.jsonl", items, "--scale", "1,10", "--template", ten)
        with open(first, "a", encoding="utf-8") as f:
            f.write("{torn line\n")
        return first, second

    def both_ways(self, names, *flags):
        """(outputs from the regular files, outputs from FIFOs of the same bytes), each
        (what report said, how many records its lean path took: add_lean's True returns)."""
        regular = self.report(names, "reg", flags)
        fifos = self.report(names, "fifo", flags)
        return regular, fifos

    def report(self, names, how, flags):
        folder = self.path(how + str(len(os.listdir(self.tmp))))
        os.mkdir(folder)
        paths = [os.path.join(folder, os.path.basename(name)) for name in names]
        writers = []
        for name, path in zip(names, paths):
            with open(name, "rb") as f:
                data = f.read()
            if how == "reg":
                with open(path, "wb") as f:
                    f.write(data)
                continue
            os.mkfifo(path)
            writers.append(threading.Thread(target=self.feed, args=(path, data), daemon=True))
            writers[-1].start()
        out = {"summary": os.path.join(folder, "s.json"), "html": os.path.join(folder, "p.html")}
        taken, add_lean = [], minijudge._Report.add_lean

        def counted(report, *args):  # the records the lean path took
            taken.append(add_lean(report, *args))
            return taken[-1]
        if how == "fifo":  # the general path alone

            def counted(report, *args):  # noqa: F811
                taken.append(False)
                return False
        with mock.patch.object(minijudge._Report, "add_lean", counted):
            code, stdout, stderr = run_main(["report", *paths, "--summary", out["summary"],
                                             "--html", out["html"], *flags])
        for writer in writers:
            writer.join(5)
        files = {}
        for key, path in out.items():
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    files[key] = f.read().replace(folder, "DIR")
        said = (code, stdout.replace(folder, "DIR"), stderr.replace(folder, "DIR"), files)
        return said, sum(taken)

    @staticmethod
    def feed(path, data):
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the report stopped reading at an error
            pass

    def assertSame(self, names, *flags, lean=True):
        (regular, calls), (fifo, fifo_calls) = self.both_ways(names, *flags)
        self.assertEqual(fifo_calls, 0)  # a FIFO: the general path alone
        if lean:
            self.assertGreater(calls, 0)  # the regular file: the lean path
        self.assertEqual(regular, fifo)
        return regular

    def test_one_run_judged_failed_and_torn(self):
        first, _ = self.corpus()
        code, stdout, stderr, files = self.assertSame([first])
        self.assertEqual(code, 1, stderr)  # a third of the records failed
        self.assertIn("a.jsonl: line 14: not JSON", stderr)
        summary = json.loads(files["summary"])
        self.assertEqual(summary["statuses"], {"ok": 8, "parse_error": 4, "bad_record": 1})
        self.assertEqual(summary["ratings"], {"2": 4, "4": 4})

    def test_several_runs_mixed(self):
        first, second = self.corpus()
        code, _, stderr, files = self.assertSame([first, second], "--mixed",
                                                 "--max-error-rate", "1")
        self.assertEqual(code, 0, stderr)
        self.assertEqual(json.loads(files["summary"])["records"], 26)
        said = self.assertSame([first, second], "--max-error-rate", "1", lean=False)
        self.assertIn("are records of different runs", said[2])

    def test_a_record_seen_twice(self):
        first, _ = self.corpus()
        copy = self.path("copy.jsonl")
        with open(first, "rb") as f, open(copy, "wb") as out:
            lines = f.readlines()
            out.writelines([lines[5], lines[0]])
        said = self.assertSame([first, copy])
        self.assertEqual(said[0], 2)
        self.assertIn("are the same record", said[2])

    def test_odd_fields_take_the_general_path(self):
        """Records the lean path leaves alone (a detail, a status no run writes, a bad line
        number, a label) among lean ones: the same summary either way."""
        first, _ = self.corpus()
        with open(first, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.startswith("{\"")]
        records[1]["judge_cost"] = 0.5
        records[3]["label"] = 3
        odd = self.write("odd.jsonl", "".join(json.dumps(r) + "\n" for r in records[:8]))
        said = self.assertSame([odd], "--human-field", "label", "--max-error-rate", "1")
        self.assertEqual(said[0], 0, said[2])
        self.assertIn("agreement with label: too few judged records with a label (n=1)", said[2])
        cases = (("judge_line", 0, 2, "bad0.jsonl line 2: judge_line must be"),
                 ("judge_usage", {"prompt_tokens": "300"}, 0, "tokens: 103 prompt, 2 "),
                 ("judge_status", "fine", 2, "bad2.jsonl line 2: judge_status must be"))
        for number, (field, value, code, said) in enumerate(cases):
            broken = dict(records[4], **{field: value})
            bad = self.write("bad{}.jsonl".format(number),
                             json.dumps(records[0]) + "\n" + json.dumps(broken) + "\n")
            out = self.assertSame([bad], lean=False)
            self.assertEqual(out[0], code, out[2])
            self.assertIn(said, out[1] + out[2])


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


class AlikeRowsAsTheGeneralPathTest(StubTestCase):
    """Issue 31, item 1: report's lean path (_Report.add_lean) counts alike records by the one
    tally entry (_Tally.add): their status, scores and kinds added as the general path adds
    them. It must say exactly what the general path says (the same command with the lean
    path turned off), over rows that change kind in every way a count can tell apart (4 and
    4.0, 1 and 1.0, 0.0 and -0.0, a model of "" or none, a fingerprint, a score source),
    rows broken by records the general path counts, and a row that crosses the bootstrap's
    2,000 scores."""


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
        judged = self.records("run.jsonl")
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


class TallyOfAlikeRowsAsTheGeneralPathTest(unittest.TestCase):
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


TIMING = ("wall_seconds", "requests_per_second", "latency_mean", "latency_max")


class ReportStampsAsTheGeneralPathTest(StubTestCase):
    """Issue 31, item 1 (lean31).

    report parses a line's stamp only when its text differs from the line before's
    (minijudge._Stamps): whatever the lines hold, it says what it says of the same records
    written in another layout (compact JSON, whose stamps it parses on every line)."""

    def scored(self):
        data = self.write_jsonl("data.jsonl", [{"question": "Q%d" % n, "response": "R"}
                                               for n in range(30)])
        out = self.path("out.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 data, "-o", out])
        self.assertEqual(code, 0, err)
        with open(out, "rb") as f:
            return f.read().splitlines(keepends=True)

    def report(self, name, lines):
        path = self.write(name, "")
        with open(path, "wb") as f:
            f.write(b"".join(lines))
        summary = self.path(name + ".json")
        code, out, err = run_main(["report", path, "--summary", summary, "--mixed"])
        said = []
        for text in (out, err):
            said.append(text.replace(path, "FILE"))
        figures = None
        if os.path.exists(summary):
            with open(summary) as f:
                figures = {k: v for k, v in json.load(f).items() if k not in TIMING}
        return code, said, figures

    def test_hostile_lines_read_as_their_compact_twins(self):
        lines = self.scored()
        stamp_at = lines[0].rindex(b', "judge_run": ')
        tail = lines[0][stamp_at:]

        def other(line):  # another run's stamp
            return line.replace(b'"version": "', b'"version": "9')
        hostile = [
            lines[2].rstrip(b"\n"),  # cut short: no newline, then the next line glued on
            b"{" + tail[2:],  # a record of its stamp alone
            b"{" + tail,  # not JSON: nothing before the comma
            b'{"q": "a", "judge_run": {"x": 1}' + tail,  # the stamp's field twice
            b'{"q": "a\\' + tail,  # the cut falls inside a text
            b'["q"' + tail,  # a list
            lines[3].replace(b"\n", b"\r\n"),  # CRLF
            other(lines[7]), other(lines[8]), lines[4], b"\n", b"not json\n",
            lines[5][:stamp_at] + b' , "judge_run": ' + tail[len(b', "judge_run": '):],
            lines[6][:-3] + b"}}\n",  # the stamp's text changed at its end
            lines[9].rstrip(b"\n")]  # the last line, without its newline
        summaries = 0
        for number, odd in enumerate(hostile):  # each beside good lines: the first error stops
            with self.subTest(odd=odd[:80]):
                mixed = b"".join(lines[10:20] + [odd] + lines[20:])
                if number == len(hostile) - 1:
                    mixed = b"".join(lines[10:] + [odd])
                fast = self.report("mixed%d.jsonl" % number, [mixed])
                slow = self.report("compact%d.jsonl" % number, self.compact(mixed))
                self.assertEqual(fast, slow)
                summaries += fast[2] is not None
        self.assertGreater(summaries, 5)  # most hostile lines leave a report to compare

    @staticmethod
    def compact(text):
        """The lines of ``text``, each JSON one written compact (its stamp too)."""
        lines = []
        for line in text.splitlines(keepends=True):
            try:
                record = json.loads(line)
            except ValueError:
                lines.append(line)
                continue
            lines.append(json.dumps(record, separators=(",", ":"),
                                    ensure_ascii=False).encode() + b"\n")
        return lines


if __name__ == "__main__":
    unittest.main()
