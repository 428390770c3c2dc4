"""Issue 28, `report`: a record is counted once, every value it reads is checked, runs that
asked differently are not merged, and a re-judged file carries only the new run's fields.

Each test judges a small file through the real command line against the loopback stub,
then edits, copies or links the scored files the way a careless or hostile user would.
"""
import json
import os
import re
import shutil
import sys

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

    def read(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

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
        self.assertEqual([r["judge_line"] for r in self.read("s0.jsonl")], [1, 3])
        self.assertEqual([r["judge_line"] for r in self.read("s1.jsonl")], [2, 4])
        os.mkdir(self.path("other"))  # another data.jsonl: the same names, lines, options
        other = self.judge("other.jsonl", data=self.write(os.path.join("other", "data.jsonl"), [
            dict(r, response="wrong") for r in RECORDS]))
        code, _, err = self.report(*shards, other, "--summary", self.path("s.json"))
        self.assertEqual(code, 0, err)
        with open(self.path("s.json")) as f:
            self.assertEqual(json.load(f)["records"], 8)


class CheckedTest(ReportTest):
    def edited(self, line, **fields):
        records = self.read("a.jsonl")
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
             "(README, Statuses); got 'great'"),
            ({"judge_status": "parse_error", "judge_score": 0.5}, "judge_score of a failure "
             "(parse_error) must be the run's failure value, 0.0; got 0.5"),
            ({"judge_usage": "many"}, "judge_usage must be an object or null; got 'many'"),
            ({"judge_model": {"a": 1}}, "judge_model must be text or null; got {'a': 1}"),
            ({"judge_value": 7}, "judge_value must be a rating on the run's scale, 1 to 5; "
             "got 7"),
            ({"judge_line": "2"}, "judge_line must be a line number (1 or more); got '2'"),
            ({"judge_run": dict(self.read("a.jsonl")[1]["judge_run"], mode="nope")},
             "judge_run: mode must be one of rating, binary, math, rubric, criterion, "
             "comparative, pairwise, systems, trajectory; got 'nope'"),
            ({"judge_run": dict(self.read("a.jsonl")[1]["judge_run"], scale="1,5")},
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
        self.assertEqual(self.read("a.jsonl")[0]["eval_run"], {"mode": "rating", "x": [1]})
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
        first = self.read("a.jsonl")[0]
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
        stamp = dict(self.read("a.jsonl")[0]["judge_run"])
        del stamp["prefix"]
        self.refused("{} line 1: judge_run is not a stamp this minijudge ({}) writes (no prefix "
                     "'judge'): an earlier minijudge scored it; judge it again".format(
                         self.edited(1, judge_run=stamp), minijudge.__version__),
                     self.path("edited.jsonl"))

    def test_a_jury_panel_must_name_the_jury_s_judges(self):
        with open(self.path("jury.json"), "w") as f:
            json.dump([{"name": "x", "url": self.srv.url}, {"name": "y", "url": self.srv.url}], f)
        self.judge("a.jsonl", "--judges", self.path("jury.json"), "--jury", "mean")
        self.assertEqual(self.read("a.jsonl")[0]["judge_run"]["judges"], ["x", "y"])
        self.assertEqual(self.report(self.path("a.jsonl"))[0], 0)
        self.refused("{} line 2: judge_panel must map the jury's judges (x, y) to scores; got "
                     "y, x".format(self.edited(2, judge_panel={"y": 0.75, "x": 0.75})),
                     self.path("edited.jsonl"))
        self.refused("{} line 2: judge_panel must be an object of scores (0 to 1, or null); got "
                     "{{'x': 2, 'y': 0.75}}".format(self.edited(2, judge_panel={
                         "x": 2, "y": 0.75})), self.path("edited.jsonl"))
        members = self.read("a.jsonl")[1]["judge_members"]
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
        self.assertIn("judge_positional_bias", self.read("first.jsonl")[0])
        self.assertIn("judge_repeats", self.read("first.jsonl")[0])
        self.srv.content = "Rating: 2"
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", first, "-o",
                                 self.path("second.jsonl"), "--summary", self.path("run.json")])
        self.assertEqual(code, 0, err)
        self.assertIn("minijudge: warning: line 1 has judge_* fields of an earlier run: this "
                      "run replaces them, and drops judge_members, judge_option, "
                      "judge_option_reversed, judge_positional_bias, judge_repeats\n", err)
        for record in self.read("second.jsonl"):
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
        record = self.read("out.jsonl")[0]
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
