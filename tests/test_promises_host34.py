"""The hostile pass on issue 34 (per-group figures, Bradley-Terry ranking, interval options,
self-judging), each through the real command line against the loopback stub: combined
options whose results must still agree between the printed summary, --summary, report
(over shards too) and the page.
"""
import html
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402
from test_promises_stats34c import prefer_self  # noqa: E402

KEY = "sk-host34-secret-0123456789"


class Host34Test(StubTestCase):
    def run_code(self, *argv, env=None):
        return run_main(["--judge-url", self.srv.url] + list(argv), env=env)

    def run_ok(self, *argv, env=None):
        code, out, err = self.run_code(*argv, env=env)
        self.assertEqual(code, 0, err)
        return err

    def report_ok(self, *argv, env=None):
        code, out, err = run_main(["report"] + list(argv), env=env)
        self.assertEqual(code, 0, err)
        return err

    def summary(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def page(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()


def named_pair(k, a, b):
    """A pairwise record naming its two systems; the judge's own model's answer says SELF."""
    texts = {"Org/Judge-8B": "SELF", "x": "plain x", "z": "plain z"}
    return {"question": "q%d" % k, "model_a": a, "model_b": b, "response_a": texts[a],
            "response_b": texts[b]}


class SelfJudgingInPairwiseTest(Host34Test):
    """A pairwise record naming its systems (model_a, model_b) ranks them as systems mode
    does; a judge that is one of them was warned of in systems mode but not here: the
    ranking put the judge's own model first with no word of it."""

    def records(self):
        pairs = [("Org/Judge-8B", "x"), ("z", "Org/Judge-8B"), ("x", "z"), ("z", "x")]
        return self.write_jsonl("p.jsonl", [named_pair(k, a, b)
                                            for k, (a, b) in enumerate(pairs)])

    def test_a_judge_named_like_a_system_is_warned_of_with_its_win_rate_gap(self):
        self.srv.responder = prefer_self
        data = self.records()
        args = ["--judge-model", "judge-8b:latest", data, "--mode", "pairwise"]
        err = self.run_ok(*args, "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"))
        s = self.summary("s.json")["self_judging"]
        # own: 2 comparisons, both won; others: x and z's 6 sides (2 lost to SELF, 4 ties)
        self.assertEqual(s, {"field": None, "unnamed": 0, "judges": [{
            "judge": None, "model": "judge-8b:latest", "answers": ["Org/Judge-8B"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.3333, "n": 6},
            "gap": 0.6667}]})
        warning = ("  warning: the judge judge-8b:latest is also a system judged "
                   "(Org/Judge-8B): its verdicts on its own answers may be biased; see "
                   "self-preference under trust\n")
        trust = ("    self-preference: judge-8b:latest's win rate for its own answers 1.0 "
                 "(n=2), the others' 0.3333 (n=6): gap +0.6667\n")
        self.assertIn(warning, err)
        self.assertIn(trust, err)
        page = self.page("p.html")
        self.assertIn(html.escape(warning.strip()), page)
        self.assertIn(html.escape(trust.strip()), page)
        with open(self.path("o.jsonl"), encoding="utf-8") as f:
            lines = f.readlines()
        for k, part in enumerate((lines[3:], lines[:3])):  # shards, the last first
            with open(self.path("s%d.jsonl" % k), "w", encoding="utf-8") as f:
                f.writelines(part)
        rerr = self.report_ok(self.path("s0.jsonl"), self.path("s1.jsonl"), "--summary",
                              self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)
        self.assertIn(warning, rerr)
        self.assertIn(trust, rerr)

    def test_no_warning_when_no_system_is_the_judges_model(self):
        self.srv.responder = prefer_self
        err = self.run_ok("--judge-model", "gpt-4o", self.records(), "--mode", "pairwise",
                          "-o", self.path("o.jsonl"), "--summary", self.path("s.json"))
        self.assertIsNone(self.summary("s.json")["self_judging"])
        self.assertNotIn("self-preference", err)


class KeyInAGroupTest(Host34Test):
    """--group-by a field holding the API key (a record carrying its request's headers):
    the key was printed as a group's name in the summary, --summary and the page."""

    def test_a_group_named_by_the_key_is_hidden_everywhere(self):
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % k, "response": "r", "auth": [KEY, "plain"][k % 2]}
            for k in range(4)])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--group-by", "auth", "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"), "--html-rows", "0",
                          env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", "auth", "--summary",
                              self.path("r.json"), "--html", self.path("r.html"),
                              "--html-rows", "0", env=env)  # the records hold it, as -o does
        for text in (err, rerr, self.page("p.html"), self.page("r.html"),
                     json.dumps(self.summary("s.json")), json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn('    "<hidden>"  2        0       0.75  0.75         4.0', err)
        self.assertIn("<td>&quot;&lt;hidden&gt;&quot;</td>", self.page("p.html"))
        shown = self.summary("s.json")["groups"]["auth"]["shown"]
        self.assertEqual([(g["label"], g["value"]) for g in shown],
                         [('"<hidden>"', None), ('"plain"', "plain")])
        self.assertEqual(self.summary("r.json")["groups"], self.summary("s.json")["groups"])

    def test_a_key_pasted_as_the_group_by_field_is_hidden(self):
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--group-by", KEY, "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"), "--html-rows",
                          "0", env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", KEY, "--summary",
                              self.path("r.json"), env=env)
        for text in (err, rerr, self.page("p.html"), json.dumps(self.summary("s.json")),
                     json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn("  by <hidden> (--group-by): 1 value\n", err)
        self.assertEqual(list(self.summary("r.json")["groups"]), ["<hidden>"])

    def test_a_key_pasted_as_the_model_field_is_hidden(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r",
                                              KEY: "judge-model"}])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--judge-model", "judge-model", "--model-field", KEY, "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"), "--html",
                          self.path("p.html"), "--html-rows", "0", env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--model-field", KEY, "--summary",
                              self.path("r.json"), env=env)
        for text in (err, rerr, self.page("p.html"), json.dumps(self.summary("s.json")),
                     json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn("  warning: the judge judge-model also answered 1 of the records (field "
                      "'<hidden>': judge-model): ", err)
        self.assertEqual(self.summary("r.json")["self_judging"]["field"], "<hidden>")


class LevelPrintedAsItIsTest(Host34Test):
    """--confidence 1e-300 was taken and printed '0% CI'; 0.999999999 printed '100% CI'."""

    def test_a_level_that_would_print_as_0_or_100_percent_is_refused(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        expected = ("minijudge: error: --confidence must be a share between 0 and 1, at least "
                    "0.00000001 from either (0.95 for a 95% interval); got {!r}\n")
        for value in ("1e-300", "0.999999999", "4e-9"):
            with self.subTest(value=value):
                code, out, err = self.run_code(data, "--confidence", value)
                self.assertEqual((code, err), (2, expected.format(float(value))))
                code, out, err = run_main(["report", data, "--confidence", value])
                self.assertEqual((code, err), (2, expected.format(float(value))))
        self.srv.content = "Rating: 4"
        err = self.run_ok(data, "--confidence", "1e-8", "-o", self.path("o.jsonl"))
        self.assertIn(" 1e-06% CI [0.75, 0.75] (bootstrap, 1000 resamples, seed 0)", err)


class OneComparisonTest(Host34Test):
    """One comparison only: the ranking said 'ranked over 1 comparisons' and '1 comparisons'."""

    def test_one_comparison_is_counted_in_the_singular(self):
        self.srv.content = "[[A]]"
        data = self.write_jsonl("p.jsonl", [
            {"question": "q", "model_a": "A", "model_b": "B", "response_a": "x",
             "response_b": "y"}])
        err = self.run_ok(data, "--mode", "pairwise", "--single-order", "-o",
                          self.path("o.jsonl"), "--html", self.path("p.html"))
        self.assertIn("  ranked over 1 comparison, baseline A at 1000 (", err)
        self.assertIn("    A 1000.0 (CI [1000.0, 1000.0]), win rate against the baseline 0.5 "
                      "(CI [0.5, 0.5]), length-controlled 1000.0, 1 comparison\n", err)
        self.assertNotIn("1 comparisons", err)
        self.assertNotIn("1 comparisons", self.page("p.html"))
        rerr = self.report_ok(self.path("o.jsonl"))
        self.assertIn("  ranked over 1 comparison, baseline A at 1000 (", rerr)


class GroupAgreementKindTest(Host34Test):
    """A group whose 1-5 labels were all 1 read them as yes/no: 'accuracy 1.0' for a judge
    rating 3 where each label said 1, beside the other groups' kappas."""

    def test_a_group_reads_its_labels_as_the_run_does(self):
        self.srv.content = "Rating: 3"
        data = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % k, "response": "r", "cat": "ones" if k < 3 else "mixed",
             "label": 1 if k < 3 else 1 + k % 5} for k in range(8)])
        err = self.run_ok(data, "--group-by", "cat", "--human-field", "label", "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"), "--html",
                          self.path("p.html"))
        shown = self.summary("s.json")["groups"]["cat"]["shown"]
        ones = [g for g in shown if g["value"] == "ones"][0]["agreement"]
        self.assertEqual((ones["kind"], ones["exact"], ones["within_one"], ones["n"]),
                         ("ratings", 0.0, 0.0, 3))
        self.assertIn('    "ones"   3        0       0.5   0.5          3.0           '
                      '[0.5, 0.5]  quadratic kappa ', err)
        self.assertNotIn("accuracy", err)
        self.assertNotIn("accuracy", self.page("p.html"))
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", "cat", "--human-field",
                              "label", "--summary", self.path("r.json"))
        self.assertEqual(self.summary("r.json")["groups"], self.summary("s.json")["groups"])
        self.assertNotIn("accuracy", rerr)


class NoLengthGapTest(Host34Test):
    """Answers all of one length: the trust block's length-controlled win rate said 0.5
    against a raw 0.75 (its fit had no length spread to stand on), while the ranking's
    length-controlled scores were the plain ones."""

    def test_the_length_controlled_win_rate_is_the_raw_one(self):
        self.srv.content = "[[A]]"
        data = self.write_jsonl("p.jsonl", [
            {"question": "q%d" % k, "model_a": "A", "model_b": "B", "response_a": "xy",
             "response_b": "zw"} for k in range(4)])
        self.srv.push(*["[[B]]"] * 1)
        err = self.run_ok(data, "--mode", "pairwise", "--single-order", "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"))
        length = self.summary("s.json")["length_bias"]
        self.assertEqual((length["win_rate"], length["lc_win_rate"]), (0.75, 0.75))
        self.assertIn("length-controlled win rate 0.75, raw 0.75 (n=4)", err)
