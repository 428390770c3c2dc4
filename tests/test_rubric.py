"""Issue 46 item 2, several criteria in one call: a rubric (--rubric FILE, rubric= in
Python, "rubric" in a --judges entry's options) names criteria, each with its description,
scale and weight; the judge replies with one JSON object; each criterion's number and
score land in judge_criteria, the record's score is their weighted mean, and a reply
missing a criterion, off its scale or not a number is a failure naming it. The summary,
--group-by's table, the page and report give each criterion's mean and interval;
--structured sends a schema requiring every criterion. The rubric is checked hostilely,
alike from the flag, a judges file and Python.

Through the command line (main() in this process, in the test's folder; ``python -m
minijudge`` in a process of its own for a rubric read from a pipe) against the loopback
stub, which answers as a judge does: reasoning, then the JSON (plain, fenced in ```json,
inside prose, or short of a criterion). Expected figures are worked out by hand in the comments."""
import json
import os
import re
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import (CommandLineTestCase, chat, read_records, read_summary, run_main,  # noqa: E402
                  run_process)
from test_cli import response_of  # noqa: E402

RUBRIC = [
    {"name": "accuracy", "description": "Is every claim in the response correct?", "weight": 2},
    {"name": "clarity", "description": "Is it easy to follow?", "scale": [0, 10]},
    {"name": "completeness"},  # scale 1-5, weight 1: the defaults
]


def reply(accuracy, clarity, completeness=None, reasoning="Right, and clear enough."):
    answer = {"reasoning": reasoning, "accuracy": accuracy, "clarity": clarity}
    if completeness is not None:
        answer["completeness"] = completeness
    return json.dumps(answer)


# each response's reply, as a judge writes it
REPLIES = {
    "r0": reply(4, 8, 5),                                          # 0.75, 0.8, 1: 0.825
    "r1": "```json\n" + reply(2, 6, 3) + "\n```",                  # 0.25, 0.6, 0.5: 0.4
    "r2": "I weighed it up.\n" + reply(5, 10, 4) + "\nHope this helps!",  # 1, 1, .75: 0.9375
    "r3": reply(3, 7),                                             # no completeness
    "r4": reply(7, 7, 3),                                          # accuracy off 1-5
    "r5": reply(3, "very clear", 3),                               # clarity no number
}
SCORES = [0.825, 0.4, 0.9375]  # (2 * accuracy + clarity + completeness) / 4, each 0-1


def judge_replies(request):
    return chat(REPLIES.get(response_of(request), "{}"))


class RubricRun(CommandLineTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = judge_replies
        self.rubric = self.write("rubric.json", json.dumps(RUBRIC))
        items = [{"question": "q%d" % i, "response": "r%d" % i, "topic": "xy"[i > 1]}
                 for i in range(6)]
        self.source = self.write_jsonl("in.jsonl", items)

    def cli(self, *argv):
        return self.in_process("--judge-url", self.srv.url, "--judge-model", "judge-model",
                               "--no-preflight", "--max-retries", "0", *argv)

    def run_rubric(self, *argv):
        code, out, err = self.cli("--rubric", self.rubric, "--max-error-rate", "1",
                                  "-o", "out.jsonl", "--summary", "s.json", *argv, self.source)
        self.assertEqual(code, 0, err)
        return self.records(), err, self.summary("s.json")

    def test_each_criterion_in_its_field_and_the_score_their_weighted_mean(self):
        out, err, summary = self.run_rubric()
        self.assertEqual([r["judge_score"] for r in out[:3]], SCORES)
        self.assertEqual(out[0]["judge_criteria"], {
            "accuracy": {"value": 4, "score": 0.75}, "clarity": {"value": 8, "score": 0.8},
            "completeness": {"value": 5, "score": 1.0}})
        self.assertEqual(out[1]["judge_value"], {"accuracy": 2, "clarity": 6, "completeness": 3})
        self.assertEqual(summary["mode"], "rubric")
        self.assertEqual({r.json["max_tokens"] for r in self.srv.requests if r.json}, {512})

    def test_a_reply_short_of_a_criterion_off_its_scale_or_not_a_number_names_it(self):
        out, err, summary = self.run_rubric()
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in out[3:]], [
            ("parse_error", "the judge's reply gives no criterion 'completeness' (its keys: "
                            "reasoning, accuracy, clarity): {!r}".format(REPLIES["r3"])),
            ("out_of_range", "the judge answered 7 for criterion 'accuracy' but the scale is "
                             "1-5: {!r}".format(REPLIES["r4"])),
            ("parse_error", "the judge gave criterion 'clarity' \"very clear\", not a number: "
                            "{!r}".format(REPLIES["r5"]))])
        self.assertTrue(all("judge_criteria" not in r and r["judge_score"] == 0.0
                            for r in out[3:]))
        self.assertEqual(summary["statuses"], {"ok": 3, "parse_error": 2, "out_of_range": 1})

    def test_the_prompt_lists_each_criterion_and_the_form_of_the_reply(self):
        self.run_rubric()
        prompt = [r.prompt for r in self.srv.requests if response_of(r) == "r0"][0]
        self.assertIn("Criteria:\n- accuracy (1 to 5): Is every claim in the response correct?\n"
                      "- clarity (0 to 10): Is it easy to follow?\n- completeness (1 to 5)\n",
                      prompt)
        self.assertIn('{"reasoning": "<two or three sentences>", "accuracy": <1 to 5>, '
                      '"clarity": <0 to 10>, "completeness": <1 to 5>}', prompt)
        self.assertIn("[Question]\nq0\n\n[The Start of the Response]\nr0\n", prompt)
        self.assertNotIn("correctness", prompt)  # not the built-in rubric's criteria

    def test_the_summary_gives_each_criterion_its_mean_and_interval(self):
        out, err, summary = self.run_rubric()
        criteria = summary["criteria"]
        self.assertEqual(list(criteria), ["accuracy", "clarity", "completeness"])
        # over the 3 judged: accuracy 4, 2, 5; clarity 8, 6, 10; completeness 5, 3, 4
        self.assertEqual([(c["n"], c["mean_value"], c["mean_score"], c["scale"], c["weight"])
                          for c in criteria.values()],
                         [(3, 3.6667, 0.6667, [1, 5], 2), (3, 8.0, 0.8, [0, 10], 1),
                          (3, 4.0, 0.75, [1, 5], 1)])
        for name, c in criteria.items():
            with self.subTest(criterion=name):
                low, high = c["ci"]
                self.assertTrue(low <= c["mean_score"] <= high)
                self.assertLess(low, high)  # three different scores each
                scale = c["scale"]
                self.assertEqual(c["mean_value_ci"], [round(scale[0] + end * (scale[1] - scale[0]),
                                                            4) for end in c["ci"]])
        # (0.825 + 0.4 + 0.9375) / 6 with the three failures as 0.0
        self.assertEqual((summary["mean_score"], summary["mean_score_judged"]), (0.3604, 0.7208))
        lines = ["  criteria, over the records judged (95% CIs):"] + [
            "    {}: {} on the {}-{} scale (CI {}), score {} (CI {}); weight {} (n=3)".format(
                name, c["mean_value"], *c["scale"], c["mean_value_ci"], c["mean_score"],
                c["ci"], c["weight"]) for name, c in criteria.items()]
        self.assertIn("\n".join(lines) + "\n", err)

    def test_groups_the_page_and_report_give_each_criterion_too(self):
        out, err, summary = self.run_rubric("--group-by", "topic", "--html", "page.html")
        shown = summary["groups"]["topic"]["shown"]
        self.assertEqual([(g["label"], {name: c["mean_value"] for name, c in g["criteria"].items()})
                          for g in shown],
                         [('"y"', {"accuracy": 5.0, "clarity": 10.0, "completeness": 4.0}),
                          ('"x"', {"accuracy": 3.0, "clarity": 7.0, "completeness": 4.0})])
        self.assertEqual(shown[0]["criteria"]["accuracy"]["mean_value_ci"], [5.0, 5.0])
        table = re.search(r"  by topic \(--group-by\): 2 values\n((?:    .*\n)+)", err).group(1)
        head, row_y = table.splitlines()[:2]
        self.assertIn("criteria (95% CI)", head)
        self.assertIn("accuracy 5.0 [5.0, 5.0], clarity 10.0 [10.0, 10.0], completeness 4.0 "
                      "[4.0, 4.0]", row_y)
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("<h3>Criteria (scores 0-1, over the records judged)</h3>", page)
        self.assertIn("<tr><td>accuracy</td><td>2</td><td>3</td><td>3.6667</td>", page)
        # report reads the records back to the same figures
        code, _, report_err = self.in_process("report", "out.jsonl", "--summary", "r.json",
                                              "--max-error-rate", "1")
        self.assertEqual(code, 0, report_err)
        self.assertEqual(self.summary("r.json")["criteria"], summary["criteria"])
        self.assertIn("  criteria, over the records judged (95% CIs):\n    accuracy: 3.6667 on "
                      "the 1-5 scale", report_err)

    def test_structured_sends_a_schema_requiring_every_criterion(self):
        self.run_rubric("--structured")
        schema = [r for r in self.srv.requests if r.json][0].json["response_format"]
        self.assertEqual(schema["json_schema"]["schema"], {
            "type": "object", "additionalProperties": False,
            "required": ["reasoning", "accuracy", "clarity", "completeness"],
            "properties": {"reasoning": {"type": "string"},
                           "accuracy": {"type": "integer", "minimum": 1, "maximum": 5},
                           "clarity": {"type": "integer", "minimum": 0, "maximum": 10},
                           "completeness": {"type": "integer", "minimum": 1, "maximum": 5}}})

    def test_a_rubric_from_a_pipe_is_read_once(self):
        # --rubric <(...) or a named pipe: a second read would wait for ever
        pipe = self.path("rubric.pipe")
        os.mkfifo(pipe)

        def write():
            with open(pipe, "w") as f:
                json.dump(RUBRIC, f)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        done = run_process("--judge-url", self.srv.url, "--judge-model", "judge-model",
                           "--no-preflight", "--rubric", pipe, "-o", self.path("out.jsonl"),
                           "--max-error-rate", "1", self.source, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([r["judge_score"] for r in self.records()[:3]], SCORES)

    def test_dry_run_shows_the_rubric_prompt_and_sends_nothing(self):
        code, out, err = self.in_process("--rubric", self.rubric, "--dry-run", self.source)
        self.assertEqual(code, 0, err)
        self.assertIn("- clarity (0 to 10): Is it easy to follow?", out + err)
        self.assertEqual(self.srv.chat_count, 0)


class CriterionIntervalOnItsScale(CommandLineTestCase):
    """A criterion's interval was its 0-1 interval's ends, rounded to 4 places, rescaled:
    style 7 on 1-10 on every record gave mean_value 7.0 and mean_value_ci [7.0003, 7.0003],
    an interval without its own mean; on 0 to 1e9, 123456789 gave [123500000.0, ...]. Now
    the bootstrap's own means are on the scale and rounded once, in every place shown."""

    def run_rubric(self, rubric, replies, *argv):
        """The --summary, stderr and page of a --rubric run over one record a reply (its
        response its key, topic "x" or "y" in turn), and report's --summary of its records."""
        self.srv.responder = lambda request: chat(replies[response_of(request)])
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": key,
                                                "topic": "xy"[i % 2]}
                                               for i, key in enumerate(replies)])
        code, out, err = self.in_process(
            "--judge-url", self.srv.url, "--judge-model", "judge-model", "--no-preflight",
            "--max-retries", "0", "--max-error-rate", "1", "--rubric",
            self.write("rubric.json", json.dumps(rubric)), "-o", "out.jsonl", "--summary",
            "s.json", "--group-by", "topic", "--html", "page.html", *argv, source)
        self.assertEqual(code, 0, err)
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        return self.summary(), err, page, self.report(self.path("out.jsonl"), "--group-by",
                                                      "topic")[1]

    def check_every_place(self, values, summary, err, page, reported):
        """Each criterion's figures over its judged ``values`` (all, and the records of topic
        x, the even ones): the mean and the bootstrap of the values themselves, rounded
        once; the interval holds the mean; printed, --summary, page, report alike."""
        from test_summary import bootstrap
        groups = {g["label"]: g["criteria"] for g in summary["groups"]["topic"]["shown"]}
        for name, judged in values.items():
            for label, criteria, some in (("all", summary["criteria"], judged),
                                          ('"x"', groups['"x"'], judged[::2])):
                with self.subTest(criterion=name, records=label):
                    c = criteria[name]
                    mean = round(sum(some) / len(some), 4)
                    self.assertEqual((c["n"], c["mean_value"], c["mean_value_ci"]),
                                     (len(some), mean, bootstrap(some, 1000, 0, 0.95)))
                    low, high = c["mean_value_ci"]
                    self.assertTrue(low <= c["mean_value"] <= high, c)
                    self.assertNotIn("-0.0", json.dumps(c))
            c = summary["criteria"][name]
            self.assertIn("    {}: {} on the {} scale (CI {}), score {} (CI {}); weight {} "
                          "(n={})\n".format(name, c["mean_value"], minijudge._span(
                              *c["scale"], "{:g}"), c["mean_value_ci"], c["mean_score"],
                              c["ci"], c["weight"], c["n"]), err)
            self.assertIn("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>".format(
                name, c["weight"], c["n"], c["mean_value"], c["mean_value_ci"]), page)
        self.assertEqual(reported["criteria"], summary["criteria"])
        self.assertEqual(reported["groups"], summary["groups"])

    def test_no_spread_gives_the_mean_as_its_interval(self):
        rubric = [{"name": "accuracy"}, {"name": "style", "scale": [1, 10]}]
        reply_all = json.dumps({"accuracy": 4, "style": 7})
        summary, err, page, reported = self.run_rubric(
            rubric, {"r%d" % i: reply_all for i in range(4)})
        self.assertEqual(summary["criteria"]["style"]["mean_value_ci"], [7.0, 7.0])
        self.assertIn("    style: 7.0 on the 1-10 scale (CI [7.0, 7.0]), score 0.6667 (CI "
                      "[0.6667, 0.6667]); weight 1 (n=4)\n", err)
        self.assertIn("style 7.0 [7.0, 7.0]", err)  # --group-by's table
        self.check_every_place({"accuracy": [4] * 4, "style": [7] * 4}, summary, err, page,
                               reported)

    def test_a_spread_on_wide_scales_weighted_one_criterion_failing_on_a_record(self):
        rubric = [{"name": "style", "scale": [1, 10], "weight": 3},
                  {"name": "reach", "scale": [0, 1e9]},
                  {"name": "lean", "scale": [-1e9, 1e9], "weight": 0.5}]
        values = {"style": [2, 3, 7, 8, 10, 1], "reach": [123456789, 987654321, 5, 0, 1e9, 7],
                  "lean": [18, -20, 8, -3, -3, 0]}  # lean's mean 0: came out -0.0
        replies = {"r%d" % i: json.dumps({name: values[name][i] for name in values})
                   for i in range(6)}
        replies["bad"] = json.dumps({"style": "seven", "reach": 1, "lean": 1})  # not judged
        summary, err, page, reported = self.run_rubric(rubric, replies)
        self.assertEqual(summary["statuses"], {"ok": 6, "parse_error": 1})
        self.assertEqual(summary["criteria"]["reach"]["mean_value"], 351851853.6667)
        self.check_every_place(values, summary, err, page, reported)

    def test_an_end_at_zero_on_a_scale_below_zero_is_written_as_zero(self):
        # -1e9 + 0.5 * 2e9 computed from 0-1 scores is -1e-7 at times: rounded, -0.0
        rubric = [{"name": "lean", "scale": [-1e9, 1e9]}]
        replies = {"r%d" % i: json.dumps({"lean": value})
                   for i, value in enumerate([2, -20, 16, -27])}
        summary, err, page, reported = self.run_rubric(rubric, replies, "--confidence", "0.5")
        self.assertEqual(summary["criteria"]["lean"]["mean_value_ci"], [-12.75, 0.0])
        self.assertIn("lean: -7.25 on the -1e+09 to 1e+09 scale (CI [-12.75, 0.0])", err)
        self.assertNotIn("-0.0", json.dumps(summary) + json.dumps(reported) + page + err)


# -- the rubric checked: one refusal, said alike from the flag, a judges file and Python --

# (the rubric, what is wrong after "WHERE: ")
BAD_RUBRICS = [
    ([], 'expected a list of criteria, each {"name", "description", "scale", "weight"}, not '
         "empty; got []"),
    ({"name": "accuracy"}, 'expected a list of criteria, each {"name", "description", '
                           '"scale", "weight"}, not empty; got {"name": "accuracy"}'),
    ([{"name": "accuracy"}, {"name": "Accuracy "}],
     "criteria 1 and 2 are both named 'Accuracy ' (names are told apart by more than case "
     "and spaces)"),
    ([{"name": "a", "weight": 0}], "criterion 'a': weight must be a number from 1e-9 to "
                                   "1e9; got 0"),
    ([{"name": "a", "weight": 1e-320}], "criterion 'a': weight must be a number from 1e-9 to "
                                        "1e9; got 1e-320"),
    ([{"name": "a", "weight": -1}], "criterion 'a': weight must be a number from 1e-9 to "
                                    "1e9; got -1"),
    ([{"name": "a", "weight": True}], "criterion 'a': weight must be a number from 1e-9 to "
                                      "1e9; got True"),
    ([{"name": "a", "weight": "2"}], "criterion 'a': weight must be a number from 1e-9 to "
                                     "1e9; got '2'"),
    ([{"name": "a", "scale": [5, 1]}], "criterion 'a': scale must be a pair [LO, HI] of numbers "
                                       "from -1e9 to 1e9 with LO < HI; got [5, 1]"),
    ([{"name": "a", "scale": "1-5"}], "criterion 'a': scale must be a pair [LO, HI] of numbers "
                                      "from -1e9 to 1e9 with LO < HI; got '1-5'"),
    ([{"name": "a", "scale": [1, 5, 10]}], "criterion 'a': scale must be a pair [LO, HI] of "
                                           "numbers from -1e9 to 1e9 with LO < HI; got [1, 5, 10]"),
    ([{"name": "a", "scale": [0, 1e300]}],
     "criterion 'a': scale must be a pair [LO, HI] of numbers from -1e9 to 1e9 with LO < HI; "
     "got [0, 1e+300]"),
    ([{"name": "a", "description": 5}], "criterion 'a': description must be text; got 5"),
    ([{"name": "a", "wieght": 2}], "criterion 'a' has 'wieght', not a field of a criterion (did "
                                   "you mean weight?); the fields are name, description, scale, "
                                   "weight"),
    ([{"name": "Reasoning"}], "criterion 'Reasoning': 'Reasoning' is the reply's own key (the "
                              "judge's reasoning); name the criterion otherwise"),
    ([{"name": ""}], 'criterion 1 must be an object with a name (text of 1 to 100 printable '
                     'characters); got {"name": ""}'),
    ([{"name": "a\nb"}], 'criterion 1 must be an object with a name (text of 1 to 100 printable '
                         'characters); got {"name": "a\\nb"}'),
    ([{"name": "x" * 101}], "criterion 1 must be an object with a name (text of 1 to 100 "
                            'printable characters); got {"name": "' + "x" * 90),
    (["accuracy"], 'criterion 1 must be an object with a name (text of 1 to 100 printable '
                   'characters); got "accuracy"'),
]

# NaN and infinity reach Python as floats (json reads NaN), the flag as a file's NaN
NAN_RUBRICS = [
    ('[{"name": "a", "weight": NaN}]', "criterion 'a': weight must be a number from 1e-9 to "
                                       "1e9; got nan"),
    ('[{"name": "a", "scale": [1, Infinity]}]', "criterion 'a': scale must be a pair [LO, HI] "
                                                "of numbers from -1e9 to 1e9 with LO < HI; got "
                                                "[1, inf]"),
]


class RubricChecked(CommandLineTestCase):
    def flag(self, text):
        path = self.write("bad.json", text)
        code, out, err = run_main(["--judge-url", self.srv.url, "--rubric", path,
                                   self.write_jsonl("in.jsonl", [{"question": "q",
                                                                 "response": "r"}])])
        self.assertEqual((code, out), (2, ""))
        return path, err

    def test_a_bad_rubric_file_is_exit_2_naming_the_file_and_the_criterion(self):
        cases = [(json.dumps(rubric), why) for rubric, why in BAD_RUBRICS] + NAN_RUBRICS
        for text, why in cases:
            with self.subTest(rubric=text[:60]):
                path, err = self.flag(text)
                self.assertEqual(err, "minijudge: error: --rubric {}: {}\n".format(path, why))
        self.assertEqual(self.srv.chat_count, 0)

    def test_python_says_the_same_naming_the_keyword(self):
        for rubric, why in BAD_RUBRICS:
            with self.subTest(rubric=str(rubric)[:60]):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(self.srv.url, rubric=rubric)
                self.assertEqual(str(caught.exception), "rubric: " + why)

    def test_a_judges_file_says_the_same_naming_the_judge_inline_or_from_its_file(self):
        os.mkdir(self.path("sub"))
        with open(self.path("sub/bad.json"), "w") as f:
            json.dump([{"name": "a", "weight": 0}], f)
        why = "criterion 'a': weight must be a number from 1e-9 to 1e9; got 0"
        for rubric, where in (([{"name": "a", "weight": 0}], "rubric"),
                              ("bad.json", "rubric " + self.path("sub/bad.json"))):
            with self.subTest(rubric=rubric):
                judges = self.write("sub/judges.json", json.dumps(
                    [{"name": "quality", "options": {"rubric": rubric}}]))
                code, out, err = run_main(["--judge-url", self.srv.url, "--judges", judges,
                                           self.write_jsonl("in.jsonl", [{"response": "r"}])])
                self.assertEqual((code, err), (2, "minijudge: error: judge quality: {}: {}\n"
                                               .format(where, why)))

    def test_a_missing_or_unreadable_file_is_exit_2_saying_why(self):
        for text, why in (("[{", "Expecting property name enclosed in double quotes: line 1 "
                                 "column 3 (char 2)"),
                          ("[" * 100000, "not JSON (nested too deeply)")):
            with self.subTest(why=why[:30]):
                path, err = self.flag(text)
                self.assertEqual(err, "minijudge: error: --rubric {}: {}\n".format(path, why))
        code, out, err = run_main(["--judge-url", self.srv.url, "--rubric", self.path("no.json"),
                                   self.write_jsonl("in.jsonl", [{"response": "r"}])])
        self.assertEqual((code, err), (2, "minijudge: error: --rubric {}: No such file or "
                                          "directory\n".format(self.path("no.json"))))

    def test_what_a_rubric_cannot_go_with_is_refused(self):
        rubric = self.write("rubric.json", json.dumps(RUBRIC))
        criteria = self.write("criteria.json", json.dumps(
            {"name": "help", "options": {"Good": 1, "Bad": 0}}))
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        cases = [
            (["--mode", "pairwise"], "--rubric is for --mode rubric (the default given a "
                                     "rubric); got mode pairwise"),
            (["--scale", "1,10"], "rubric (--rubric) and scale (--scale) do not go together: "
                                  "each criterion of a rubric has its own scale"),
            (["--criteria", criteria], "--rubric is for --mode rubric (the default given a "
                                       "rubric); got mode criterion"),
            (["--template", "rubric"], "a rubric is asked by template 'criteria' (the default "
                                       "given one) or your own, never the built-in 'rubric' (its "
                                       "own two criteria), and read by the rubric parser; got "
                                       "template 'rubric' and parser None"),
            (["--parser", "rating"], "a rubric is asked by template 'criteria' (the default given "
                                     "one) or your own, never the built-in 'rubric' (its own two "
                                     "criteria), and read by the rubric parser; got template "
                                     "'criteria' and parser 'rating'"),
        ]
        for flags, why in cases:
            with self.subTest(flags=flags):
                code, out, err = run_main(["--judge-url", self.srv.url, "--rubric", rubric]
                                          + flags + [source])
                self.assertEqual((code, err), (2, "minijudge: error: " + why + "\n"))
        code, out, err = run_main(["--judge-url", self.srv.url, "--template", "criteria", source])
        self.assertEqual((code, err), (2, "minijudge: error: the rubric parser (template "
                                          "'criteria') needs rubric=[{'name', 'description', "
                                          "'scale', 'weight'}, ...] (--rubric FILE)\n"))

    def test_output_on_a_judges_entry_s_rubric_file_is_refused(self):
        rubric = self.write("rubric.json", json.dumps(RUBRIC))
        judges = self.write("judges.json", json.dumps(
            [{"name": "quality", "options": {"rubric": "rubric.json"}}]))
        code, out, err = run_main(["--judge-url", self.srv.url, "--judges", judges, "-o", rubric,
                                   self.write_jsonl("in.jsonl", [{"response": "r"}])])
        self.assertEqual((code, err), (2, "minijudge: error: -o {} is judge quality's rubric "
                                          "file; write elsewhere\n".format(rubric)))
        with open(rubric, encoding="utf-8") as f:
            self.assertEqual(json.load(f), RUBRIC)  # not truncated

    def test_rubric_output_on_the_rubric_file_is_refused(self):
        rubric = self.write("rubric.json", json.dumps(RUBRIC))
        code, out, err = run_main(["--judge-url", self.srv.url, "--rubric", rubric, "-o", rubric,
                                   self.write_jsonl("in.jsonl", [{"response": "r"}])])
        self.assertEqual((code, err), (2, "minijudge: error: -o {} is the --rubric file; write "
                                          "elsewhere\n".format(rubric)))


# -- Python, panels and repeats, and report's checks ----------------------------------


class RubricInPython(CommandLineTestCase):
    def judge(self, **options):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", max_retries=0, **options)
        self.addCleanup(judge.close)
        return judge

    def test_a_judge_given_a_rubric_or_its_file_scores_as_the_command_line(self):
        self.srv.responder = judge_replies
        path = self.write("rubric.json", json.dumps(RUBRIC))
        for rubric in (RUBRIC, path):
            with self.subTest(rubric=type(rubric).__name__):
                j = self.judge(rubric=rubric).judge({"question": "q"}, "r2")
                self.assertEqual((j.status, j.score, j.value),
                                 ("ok", 0.9375, {"accuracy": 5, "clarity": 10,
                                                 "completeness": 4}))
                self.assertEqual(j.details["criteria"]["completeness"],
                                 {"value": 4, "score": 0.75})

    def test_a_criterion_s_key_is_matched_but_for_case_and_its_score_may_be_an_object(self):
        self.srv.content = ('{"Accuracy": {"score": 3, "why": "one slip"}, "CLARITY": "7", '
                            '"completeness": 4.5}')
        j = self.judge(rubric=RUBRIC).judge({"question": "q"}, "r")
        # (2 * 0.5 + 0.7 + 0.875) / 4
        self.assertEqual((j.status, j.value), ("ok", {"accuracy": 3, "clarity": 7,
                                                      "completeness": 4.5}))
        self.assertAlmostEqual(j.score, 0.64375)

    def test_repeats_combine_each_criterion_as_the_scores(self):
        self.srv.push(reply(4, 8, 5), reply(2, 6, 3), reply(3, 10, 4))
        j = self.judge(rubric=RUBRIC, repeats=3).judge({"question": "q"}, "r")
        self.assertEqual(j.details["criteria"]["accuracy"], {"value": 3, "score": 0.5})
        self.assertEqual(j.details["criteria"]["clarity"]["value"], 8)
        self.assertEqual(len(j.details["members"]), 3)

    def test_reask_names_the_criterion_off_its_scale(self):
        self.srv.push(reply(9, 8, 5), reply(4, 8, 5))
        j = self.judge(rubric=RUBRIC, reask=1).judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score), ("ok", 0.825))
        asked = [r for r in self.srv.requests if r.json][-1].json["messages"][-1]["content"]
        self.assertEqual(asked, "Your reply above gave 9 for criterion 'accuracy', which is not "
                                "on the scale. Reply again with a JSON object alone, with "
                                "accuracy and clarity and completeness, in the form asked for "
                                "above.")

    def test_a_custom_template_reads_the_rubric_fields(self):
        self.srv.content = reply(4, 8, 5)
        j = self.judge(rubric=RUBRIC, template="Q: {question}\nA: {response}\n{rubric_criteria}\n"
                                                "{rubric_form}")
        self.assertEqual(j.judge({"question": "q"}, "r").score, 0.825)
        prompt = [r for r in self.srv.requests if r.json][-1].prompt
        self.assertTrue(prompt.startswith("Q: q\nA: r\n- accuracy (1 to 5): Is every claim"))


class ReportChecksCriteria(CommandLineTestCase):
    def setUp(self):
        super().setUp()
        self.srv.content = reply(4, 8, 5)
        code, out, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--rubric",
                                   self.write("rubric.json", json.dumps(RUBRIC)), "-o",
                                   self.path("out.jsonl"), self.write_jsonl(
                                       "in.jsonl", [{"question": "q", "response": "r"}])])
        self.assertEqual(code, 0, err)
        self.record = read_records(self.path("out.jsonl"))[0]

    def edited(self, **criteria):
        record = dict(self.record, judge_criteria=dict(self.record["judge_criteria"],
                                                       **criteria))
        path = self.write_jsonl("edited.jsonl", [record])
        return run_main(["report", path])

    def test_a_hand_edited_criterion_is_refused_naming_it(self):
        where = self.path("edited.jsonl") + " line 1: "
        cases = [({"accuracy": {"value": 4, "score": 7}}, where + "judge_criteria must be an "
                  "object of criteria, each {value: a number, score: 0 to 1}; got {'accuracy': "
                  "{'value': 4, 'score': 7}, 'clarity': {'value': 8, 'score': 0.8}, "
                  "'completeness': {'value': 5, 'score': 1.0}}"),
                 ({"style": {"value": 4, "score": 0.75}}, where + "judge_criteria must be the "
                  "run's rubric's (accuracy, clarity, completeness); got accuracy, clarity, "
                  "completeness, style")]
        for criteria, message in cases:
            with self.subTest(criteria=criteria):
                code, out, err = self.edited(**criteria)
                self.assertEqual((code, err), (2, "minijudge: error: " + message + "\n"))

    def test_the_records_as_written_report_their_criteria(self):
        code, out, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                   self.path("r.json")])
        self.assertEqual(code, 0, err)
        self.assertEqual(read_summary(self.path("r.json"))["criteria"]["accuracy"]["mean_value"],
                         4.0)


if __name__ == "__main__":
    unittest.main()
