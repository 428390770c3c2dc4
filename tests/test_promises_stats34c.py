"""Issue 34, items 3 and 4: the interval as the user wants it (--bootstrap-samples,
--confidence: every interval says its level and method), and self-judging (--model-field;
systems named like the judge): a warning, and the self-preference gap under trust.

Each test judges small files through the real command line against the loopback stub;
`report` over shards must give the same figures as one run, and the printed summary, the
--summary JSON and the page must say the same thing.
"""
import json
import os
import random
import re
import sys
from statistics import NormalDist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402

# the stub rates each response by the digit after "ans-": a judge whose scores we know
RATED = [{"question": "q{}".format(k), "response": "ans-{}".format(1 + k * 3 % 5)}
         for k in range(12)]


def rate_by_answer(request):
    found = re.findall(r"ans-(\d)", request.json["messages"][-1]["content"])
    return "Rating: " + (found or ["3"])[-1]  # the preflight's request has no answer


def prefer_self(request):
    """Systems: the answer marked SELF wins; else a tie."""
    text = request.json["messages"][-1]["content"]
    where, b = text.find("SELF"), text.find("Start of Assistant B")
    if where < 0:
        return "[[C]]"
    if where < b:
        return "[[A]]"
    return "[[B]]"


def bootstrap(scores, samples, seed, level):
    """The README's method, written again: the means of ``samples`` resamples of the sorted
    scores by random.Random(seed).choices, cut at the (1 -+ level) / 2 quantiles."""
    rng, scores, n = random.Random(seed), sorted(scores), len(scores)
    means = sorted(sum(rng.choices(scores, k=n)) / n for _ in range(samples))
    tail = (1 - level) / 2
    low, high = round(tail * samples), round((1 - tail) * samples)
    return [round(means[low], 4), round(means[min(high, samples - 1)], 4)]


class Stats34cTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = rate_by_answer

    def run_ok(self, *argv):
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m"]
                                  + list(argv))
        self.assertEqual(code, 0, err)
        return err

    def summary(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def report_ok(self, *argv):
        code, out, err = run_main(["report"] + list(argv))
        self.assertEqual(code, 0, err)
        return err


class IntervalTest(Stats34cTest):
    def test_samples_and_level_name_the_interval_in_the_summary_json_report_and_page(self):
        data = self.write_jsonl("data.jsonl", RATED)
        flags = ["--bootstrap-samples", "200", "--confidence", "0.9"]
        err = self.run_ok(data, "-o", self.path("out.jsonl"), "--summary", self.path("s.json"),
                          "--html", self.path("page.html"), *flags)
        s = self.summary("s.json")
        scores = [(int(r["response"][-1]) - 1) / 4 for r in RATED]
        self.assertEqual(s["ci"], bootstrap(scores, 200, 0, 0.9))
        self.assertEqual(s["ci95"], bootstrap(scores, 200, 0, 0.95))  # kept: always 95%
        self.assertEqual(s["ci_method"], "bootstrap, 200 resamples, seed 0")
        self.assertEqual(s["interval"], {"confidence": 0.9, "bootstrap_samples": 200,
                                         "bootstrap_seed": 0})
        line = "90% CI {} (bootstrap, 200 resamples, seed 0)".format(s["ci"])
        self.assertIn(line + "\n", err)
        with open(self.path("page.html"), encoding="utf-8") as f:
            self.assertIn(line, f.read())
        # shards, reported with the same flags: the same interval
        for k in range(2):
            self.run_ok(data, "-o", self.path("s%d.jsonl" % k), "--shard", "%d/2" % k, "-q")
        self.report_ok(self.path("s0.jsonl"), self.path("s1.jsonl"), "--summary",
                       self.path("r.json"), *flags)
        r = self.summary("r.json")
        for key in ("ci", "ci95", "ci_method", "interval", "mean_score"):
            self.assertEqual(r[key], s[key], key)

    def test_the_defaults_give_todays_interval_and_say_95_percent(self):
        data = self.write_jsonl("data.jsonl", RATED)
        err = self.run_ok(data, "-o", self.path("out.jsonl"), "--summary", self.path("s.json"))
        s = self.summary("s.json")
        scores = [(int(r["response"][-1]) - 1) / 4 for r in RATED]
        self.assertEqual(s["ci"], bootstrap(scores, 1000, 0, 0.95))
        self.assertEqual(s["ci95"], s["ci"])
        self.assertIn("; 95% CI {} (bootstrap, 1000 resamples, seed 0)\n".format(s["ci"]), err)

    def test_past_2000_scores_the_normal_interval_takes_the_level(self):
        self.run_ok(self.write_jsonl("one.jsonl", RATED[:1]), "-o", self.path("one.out"), "-q")
        with open(self.path("one.out"), encoding="utf-8") as f:
            record = json.loads(f.readline())
        big = []
        for k in range(2001):  # one run's records of 2,001 input lines
            big.append(dict(record, question="q%d" % k, judge_line=k + 1,
                            judge_score=k % 2, judge_value=1 + 4 * (k % 2)))
        self.write_jsonl("big.jsonl", big)
        err = self.report_ok(self.path("big.jsonl"), "--confidence", "0.8",
                             "--summary", self.path("r.json"))
        r = self.summary("r.json")
        mean = 1000 / 2001
        se = (sum((k % 2 - mean) ** 2 for k in range(2001)) / 2000 / 2001) ** 0.5
        z80, z95 = NormalDist().inv_cdf(0.9), NormalDist().inv_cdf(0.975)
        self.assertEqual(r["ci"], [round(mean - z80 * se, 4), round(mean + z80 * se, 4)])
        self.assertEqual(r["ci95"], [round(mean - z95 * se, 4), round(mean + z95 * se, 4)])
        self.assertIn("; 80% CI {} (normal approximation)\n".format(r["ci"]), err)

    def test_out_of_range_values_are_refused_on_a_run_and_on_report(self):
        data = self.write_jsonl("data.jsonl", RATED[:2])
        self.run_ok(data, "-o", self.path("out.jsonl"), "-q")
        cases = [
            (["--confidence", "95"], "--confidence must be a share between 0 and 1, at "
                                     "least 0.00000001 from either (0.95 for a 95% "
                                     "interval); got 95.0"),
            (["--confidence", "0"], None), (["--confidence", "1"], None),
            (["--confidence", "nan"], None), (["--confidence", "-0.5"], None),
            (["--bootstrap-samples", "99"], "--bootstrap-samples must be a whole number "
                                            "from 100 to 100000; got 99"),
            (["--bootstrap-samples", "100001"], None), (["--bootstrap-samples", "0"], None)]
        for flags, message in cases:
            for argv in (["--judge-url", self.srv.url, data] + flags,
                         ["report", self.path("out.jsonl")] + flags):
                with self.subTest(argv=argv):
                    code, out, err = run_main(argv)
                    self.assertEqual((code, out), (2, ""))
                    self.assertTrue(err.startswith("minijudge: error: " + flags[0] + " must be"),
                                    err)
                    if message:
                        self.assertEqual(err, "minijudge: error: " + message + "\n")
        before = self.srv.chat_count
        code, _, err = run_main(["--judge-url", self.srv.url, data, "--bootstrap-samples", "abc"])
        self.assertEqual(code, 2)
        self.assertIn("argument --bootstrap-samples: invalid int value: 'abc'", err)
        self.assertEqual(self.srv.chat_count, before)  # refused before anything was sent

    def test_a_judges_file_takes_no_interval_setting(self):
        judges = self.write("judges.json", json.dumps(
            [{"name": "a", "url": self.srv.url, "model": "m", "confidence": 0.9}]))
        code, out, err = run_main(["--judges", judges, self.write_jsonl("d.jsonl", RATED)])
        self.assertEqual(code, 2)
        self.assertIn("confidence", err)

    def test_win_rates_on_the_page_say_their_level_and_method(self):
        self.srv.responder = prefer_self
        data = self.write_jsonl("sys.jsonl", [
            {"question": "q%d" % k, "responses": {"x": "plain", "y": "SELF here", "z": "p"}}
            for k in range(3)])
        self.run_ok(data, "--mode", "systems", "-o", self.path("o.jsonl"), "-q",
                    "--html", self.path("page.html"), "--confidence", "0.8")
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("<h3>Win rates (80% interval: normal approximation), ranked</h3>", page)
        self.assertNotIn("95%", page)


class SelfJudgingTest(Stats34cTest):
    MODELS = ["Meta-Llama/Judge-8B:q4_K_M", "other-7b", "judge-8b-2024-08-06", None, 7,
              float("nan"), ["judge-8b"], "<b>all</b>", "none judged", "x" * 100000, "\u00e9t\u00e9"]

    def rated(self):
        records = []
        for k, model in enumerate(self.MODELS):
            rating = 5 if model in self.MODELS[:3:2] else 2
            records.append({"question": "q%d" % k, "response": "ans-%d" % rating,
                            "model": model})
        return self.write_jsonl("data.jsonl", records)

    def test_the_judges_own_answers_are_named_with_the_gap_in_summary_json_report_page(self):
        data = self.rated()
        args = ["--judge-url", self.srv.url, "--judge-model", "judge-8B", data,
                "--model-field", "model"]
        code, _, err = run_main(args + ["-o", self.path("o.jsonl"), "--summary",
                                        self.path("s.json"), "--html", self.path("p.html")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s, {"field": "model", "unnamed": 5, "judges": [{
            "judge": None, "model": "judge-8B",
            "answers": ["Meta-Llama/Judge-8B:q4_K_M", "judge-8b-2024-08-06"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.25, "n": 4}, "gap": 0.75}]})
        warning = ("  warning: the judge judge-8B also answered 2 of the records (field "
                   "'model': Meta-Llama/Judge-8B:q4_K_M, judge-8b-2024-08-06): its scores of "
                   "its own answers may be biased; see self-preference under trust\n")
        trust = ("    self-preference: judge-8B's mean score for its own model's answers 1.0 "
                 "(n=2), for the others' 0.25 (n=4): gap +0.75 (5 judged records name no "
                 "model)\n")
        self.assertIn(warning, err)
        self.assertIn(trust, err)
        with open(self.path("p.html"), encoding="utf-8") as f:
            page = f.read()
        import html
        self.assertIn(html.escape(warning.strip()), page)
        self.assertIn(html.escape(trust.strip()), page)
        self.assertNotIn("<b>all</b>", page)
        # shards, reported: the same figures
        for k in range(3):
            code, _, e = run_main(args + ["-o", self.path("s%d.jsonl" % k), "--shard",
                                          "%d/3" % k, "-q"])
            self.assertEqual(code, 0, e)
        rerr = self.report_ok(*[self.path("s%d.jsonl" % k) for k in range(3)], "--model-field",
                              "model", "--summary", self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)
        self.assertIn(warning, rerr)
        self.assertIn(trust, rerr)

    def test_no_warning_when_no_record_names_the_judges_model(self):
        data = self.rated()
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "gpt-4o", data,
                                 "--model-field", "model", "-o", self.path("o.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        self.assertIsNone(self.summary("s.json")["self_judging"])
        self.assertNotIn("self-preference", err)
        self.assertNotIn("  warning:", err)

    def test_a_system_named_like_the_judge_is_warned_of_with_its_win_rate_gap(self):
        self.srv.responder = prefer_self
        data = self.write_jsonl("sys.jsonl", [
            {"question": "q%d" % k, "responses": {"x": "plain", "Org/Judge-8B": "SELF",
                                                  "z": "p"}} for k in range(2)])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-8b:latest",
                                 data, "--mode", "systems", "-o", self.path("o.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s, {"field": None, "unnamed": 0, "judges": [{
            "judge": None, "model": "judge-8b:latest", "answers": ["Org/Judge-8B"],
            "own": {"mean": 1.0, "n": 4}, "others": {"mean": 0.25, "n": 8}, "gap": 0.75}]})
        self.assertIn("  warning: the judge judge-8b:latest is also a system judged "
                      "(Org/Judge-8B): its verdicts on its own answers may be biased; see "
                      "self-preference under trust\n", err)
        self.assertIn("    self-preference: judge-8b:latest's win rate for its own answers 1.0 "
                      "(n=4), the others' 0.25 (n=8): gap +0.75\n", err)

    def test_a_jury_shows_each_members_gap(self):
        data = self.rated()
        judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "judge-8b"},
            {"name": "b", "url": self.srv.url, "model": "gpt-4o"}]))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", data, "--model-field",
                                 "model", "-o", self.path("o.jsonl"), "--summary",
                                 self.path("s.json")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s["judges"], [{
            "judge": "a", "model": "judge-8b",
            "answers": ["Meta-Llama/Judge-8B:q4_K_M", "judge-8b-2024-08-06"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.25, "n": 4}, "gap": 0.75}])
        self.assertIn("    self-preference: a (judge-8b)'s mean score for its own model's "
                      "answers 1.0 (n=2)", err)
        self.report_ok(self.path("o.jsonl"), "--model-field", "model", "--summary",
                       self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)

    def test_model_field_in_a_mode_judging_two_responses_is_refused(self):
        data = self.write_jsonl("p.jsonl", [{"question": "q", "response_a": "a",
                                             "response_b": "b", "model": "m"}])
        code, out, err = run_main(["--judge-url", self.srv.url, data, "--mode", "pairwise",
                                   "--model-field", "model"])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --model-field names the model of a record's "
                              "one response; --mode pairwise judges two\n")
        self.assertEqual(self.srv.chat_count, 0)
