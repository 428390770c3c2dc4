"""Issue 14: juries of judges, repeated asking, and length bias, each in the summary's trust
block. Three stub judges answer scripted ratings; the figures are checked against values
computed by hand (or by a slow, literal implementation of the textbook definition)."""

import collections
import itertools
import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, error, run_main

import minijudge

REPO = os.path.dirname(HERE)

# the ratings each judge gives each response (None: that judge's server fails on it)
RATINGS = {"a": {"resp-0": 5, "resp-1": 3, "resp-2": 1, "resp-3": 4, "resp-4": 2},
           "b": {"resp-0": 4, "resp-1": 3, "resp-2": 2, "resp-3": 4, "resp-4": 1},
           "c": {"resp-0": 5, "resp-1": 2, "resp-2": None, "resp-3": 4, "resp-4": 3}}


def scripted(table, word="Rating: {}"):
    """A responder answering each response in ``table`` (found in the prompt) as scripted."""
    def respond(request):
        for response, answer in table.items():
            if response in (request.prompt or ""):
                return chat(word.format(answer)) if answer is not None else error(
                    500, "scripted failure")
        return chat("Rating: 3")
    return respond


def literal_alpha(units, delta):
    """Krippendorff's alpha from the coincidence matrix, as the textbook defines it."""
    units = [[v for v in u if v is not None] for u in units]
    coincidences = collections.Counter()
    for u in (u for u in units if len(u) > 1):
        for i, j in itertools.permutations(range(len(u)), 2):
            coincidences[u[i], u[j]] += 1 / (len(u) - 1)
    n_c = collections.Counter()
    for (c, _), count in coincidences.items():
        n_c[c] += count
    n = sum(n_c.values())
    observed = sum(count * delta(c, k) for (c, k), count in coincidences.items()) / n
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in n_c for k in n_c) / (n * (n - 1))
    return 1 - observed / expected


INTERVAL, NOMINAL = (lambda c, k: (c - k) ** 2), (lambda c, k: float(c != k))
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units,
# with missing values; the paper gives alpha 0.743 nominal and 0.849 interval.
TEXTBOOK = list(zip([1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
                    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
                    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
                    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]))


class StatisticsTest(unittest.TestCase):
    def test_alpha_matches_the_textbook_example_with_missing_values(self):
        self.assertEqual(minijudge._alpha(TEXTBOOK, nominal=True), 0.7434)
        self.assertEqual(minijudge._alpha(TEXTBOOK), 0.8491)
        self.assertAlmostEqual(literal_alpha(TEXTBOOK, NOMINAL), 0.7434, places=4)
        self.assertAlmostEqual(literal_alpha(TEXTBOOK, INTERVAL), 0.8491, places=4)

    def test_alpha_by_hand(self):
        # units (1,1), (2,3), (3,3): pooled 1,1,2,3,3,3 (n=6). Within units only (2,3)
        # disagrees: 2 ordered pairs of (2-3)^2 = 1, over m-1 = 1: D_o = 2 / 6. Over all
        # ordered pairs: 2*6*33 - 2*13^2 = 58, so D_e = 58 / 30; alpha = 1 - 10/58.
        self.assertEqual(minijudge._alpha([(1, 1), (2, 3), (3, 3)]), round(1 - 10 / 58, 4))
        self.assertIsNone(minijudge._alpha([(1, 1), (1, None)]))  # no disagreement at all
        self.assertIsNone(minijudge._alpha([(1, None), (None, 2)]))  # nothing pairable

    def test_kappa_of_two_raters(self):
        # on 0/1, Cohen's: 3 of 4 agree, p_e = (2*1 + 2*3) / 16 = 0.5: (0.75 - 0.5) / 0.5
        self.assertEqual(minijudge._kappa([(1, 1), (0, 0), (1, 0), (0, 0)]), 0.5)
        pairs = [(1, 1), (2, 2), (3, 3), (1, 2), (3, 1)]
        self.assertEqual(minijudge._kappa(pairs),  # the same as the one against people
                         minijudge.agreement(*zip(*pairs), kind="ratings")["kappa_quadratic"])

    def test_length_controlled_win_rate_by_hand(self):
        # 15 pairs where A is 10 characters longer (A wins 12), 5 where it is shorter (A
        # wins 2). With x taking two values the fit is exact in each group: sigmoid(b0 +/-
        # b1 c) = 0.8 and 0.4, so b0 = (logit 0.8 + logit 0.4) / 2 = ln(4 * 2/3) / 2 and the
        # win rate at no difference is 1 / (1 + sqrt(3/8)) = 0.6202, below the raw 0.7.
        differences = [10] * 15 + [-10] * 5
        wins = [1] * 12 + [0] * 3 + [1] * 2 + [0] * 3
        self.assertEqual(minijudge._length_controlled(differences, wins),
                         round(1 / (1 + math.sqrt(3 / 8)), 4))
        with self.assertRaises(minijudge._NoFit):  # separable: no figure (issue 44)
            minijudge._length_controlled([5, -5, 3], [1, 1, 1])
        self.assertEqual(minijudge._length_controlled([0, 0], [1, 0]), 0.5)  # no difference

    def test_jury_of_judgements(self):
        ok = lambda score, value=None: minijudge.Judgement(score=score, value=value)
        bad = minijudge.Judgement(score=0.0, status="timeout", error="timed out")
        panel = {"a": ok(1.0, 5), "b": ok(0.5, 3), "c": ok(0.75, 4), "d": ok(1.0, 5)}
        self.assertEqual([minijudge.jury(panel, how).score for how in ("mean", "median")],
                         [0.8125, 0.875])
        self.assertEqual(minijudge.jury(panel, "mean").value, 4.25)  # ratings: as the scores
        self.assertEqual(minijudge.jury(panel, "majority").score, 1.0)
        verdicts = {"a": ok(1.0, "A"), "b": ok(0.0, "B")}
        self.assertEqual([minijudge.jury(dict(verdicts, c=ok(1.0, "A")), "majority").value,
                          minijudge.jury(verdicts, "majority").value,  # a split: 0.5, no verdict
                          minijudge.jury(verdicts, "majority").score], ["A", None, 0.5])
        failed = minijudge.jury({"a": ok(1.0), "b": bad}, "mean")
        self.assertEqual((failed.status, failed.score, failed.details["panel"]),
                         ("timeout", 0.0, {"a": 1.0, "b": None}))
        self.assertEqual(failed.error, "1 of 2 answered, 2 needed: judge b: timeout: timed out")
        enough = minijudge.jury({"a": ok(1.0), "b": bad}, "mean", quorum=1)
        self.assertEqual((enough.status, enough.score, enough.error),
                         ("ok", 1.0, "judge b: timeout: timed out"))
        repeats = minijudge.jury([ok(1.0), ok(0.5), ok(1.0)], "majority")
        self.assertEqual((repeats.score, repeats.details["repeats"]), (1.0, [1.0, 0.5, 1.0]))
        with self.assertRaisesRegex(minijudge.JudgeError, "mean, median or majority"):
            minijudge.jury(panel, "mode")
        for judgements, quorum in (({}, None), ({"b": bad}, 0), (panel, 5)):  # not a crash
            with self.assertRaisesRegex(minijudge.JudgeError, "quorum .* got 'mean' and "):
                minijudge.jury(judgements, "mean", quorum=quorum)


class PanelTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.servers = {}
        for name, table in RATINGS.items():
            srv = self.srv if name == "a" else self.start_stub()
            srv.responder = scripted(table)
            self.servers[name] = srv
        self.config = self.write("judges.json", json.dumps([
            {"name": name, "url": srv.url, "options": {"max_retries": 0}}
            for name, srv in self.servers.items()]))
        self.source = self.write_jsonl("in.jsonl", [
            {"id": i, "question": "q", "response": "resp-%d" % i} for i in range(5)])

    def run_jury(self, *flags):
        code, out, err = run_main(["--judge-model", "judge-model", "--no-preflight",
                                   "--judges", self.config, "--summary", self.path("s.json"),
                                   *flags, self.source])
        with open(self.path("s.json"), encoding="utf-8") as f:
            return code, [json.loads(line) for line in out.splitlines()], err, json.load(f)

    def test_the_panel_score_is_the_mean_and_a_missing_judge_fails_the_record(self):
        code, out, err, summary = self.run_jury("--jury", "mean")
        self.assertEqual([r["judge_panel"] for r in out][:2], [
            {"a": 1.0, "b": 0.75, "c": 1.0}, {"a": 0.5, "b": 0.5, "c": 0.25}])
        self.assertEqual([r["judge_score"] for r in out], [
            (1.0 + 0.75 + 1.0) / 3, (0.5 + 0.5 + 0.25) / 3, 0.0, 0.75, (0.25 + 0 + 0.5) / 3])
        self.assertNotIn("a_score", out[0])
        failed = out[2]  # c's server failed: all three were needed
        self.assertEqual((failed["judge_status"], failed["judge_panel"]),
                         ("http_error", {"a": 0.0, "b": 0.25, "c": None}))
        self.assertTrue(failed["judge_error"].startswith(
            "2 of 3 answered, 3 needed: judge c: http_error: "), failed["judge_error"])
        self.assertIn("scripted failure", failed["judge_error"])
        self.assertEqual(summary["statuses"], {"ok": 4, "http_error": 1})
        self.assertEqual(code, 1)  # 20% failed, over --max-error-rate 0.1
        panel = summary["panel"]
        self.assertEqual((panel["judges"], panel["jury"], panel["quorum"], panel["n"],
                          panel["alpha_metric"]), (["a", "b", "c"], "mean", 3, 5, "interval"))
        scores = [[None if RATINGS[j]["resp-%d" % i] is None else (
            RATINGS[j]["resp-%d" % i] - 1) / 4 for j in "abc"] for i in range(5)]
        self.assertAlmostEqual(panel["alpha"], literal_alpha(scores, INTERVAL), places=4)
        self.assertEqual(panel["kappa"]["a~b"], minijudge.agreement(
            [s[0] for s in scores], [s[1] for s in scores], kind="ratings")["kappa_quadratic"])
        self.assertEqual(list(panel["kappa"]), ["a~b", "a~c", "b~c"])
        self.assertEqual(panel["answered"], {"a": 5, "b": 5, "c": 4})  # c failed on resp-2
        self.assertIn("; records answered a 5, b 5, c 4\n", err)
        panel_scores = [r["judge_score"] for r in out]
        for k, name in enumerate("abc"):  # over the four records the panel scored
            offsets = [s[k] - p for s, p, r in zip(scores, panel_scores, out)
                       if r["judge_status"] == "ok"]
            self.assertAlmostEqual(panel["offsets"][name], sum(offsets) / 4, places=4)
        self.assertIn("; jury: the mean of a, b, c (quorum 3)\n", err)
        self.assertIn("\n  trust:\n    panel: Krippendorff's alpha {} (interval, n=5); Cohen's "
                      "kappa a~b {}, a~c ".format(panel["alpha"], panel["kappa"]["a~b"]), err)

    def test_a_quorum_keeps_the_record_and_names_the_judge_that_failed(self):
        code, out, err, summary = self.run_jury("--jury", "median", "--quorum", "2")
        self.assertEqual(code, 0, err)
        record = out[2]
        self.assertEqual((record["judge_status"], record["judge_score"], record["judge_panel"]),
                         ("ok", 0.125, {"a": 0.0, "b": 0.25, "c": None}))
        self.assertTrue(record["judge_error"].startswith("judge c: http_error: "))
        self.assertEqual(out[0]["judge_score"], 1.0)  # the median of 1.0, 0.75, 1.0
        self.assertIsNone(out[0]["judge_error"])
        self.assertEqual(summary["panel"]["quorum"], 2)

    def test_a_majority_of_verdicts_and_a_tie_when_it_is_split(self):
        for name, answers in (("a", "yes yes no"), ("b", "yes no yes"), ("c", "no no -")):
            self.servers[name].responder = scripted(dict(zip(
                ("resp-0", "resp-1", "resp-2"), [None if a == "-" else a
                                                 for a in answers.split()])), word="{}")
        config = self.write("binary.json", json.dumps([
            {"name": name, "url": srv.url, "mode": "binary", "options": {"max_retries": 0}}
            for name, srv in self.servers.items()]))
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "answer": "x", "response": "resp-%d" % i} for i in range(3)])
        code, out, err = run_main(["--judge-model", "m", "--no-preflight", "--judges", config,
                                   "--jury", "majority", "--quorum", "2", "--summary",
                                   self.path("s.json"), source])
        self.assertEqual(code, 0, err)
        records = [json.loads(line) for line in out.splitlines()]
        # yes yes no: 1.0; yes no no: 0.0; no yes (c failed): a tie, 0.5
        self.assertEqual([r["judge_score"] for r in records], [1.0, 0.0, 0.5])
        with open(self.path("s.json"), encoding="utf-8") as f:
            panel = json.load(f)["panel"]
        self.assertEqual(panel["alpha_metric"], "nominal")
        self.assertAlmostEqual(panel["alpha"], literal_alpha(
            [(1, 1, 0), (1, 0, 0), (0, 1, None)], NOMINAL), places=4)

    def test_jury_flags_that_cannot_work_are_refused(self):
        mixed = self.write("mixed.json", json.dumps([{"name": "x", "mode": "binary"},
                                                     {"name": "y", "mode": "rating"}]))
        for flags, message in (
                (["--jury", "mean"], "--jury needs --judges FILE of one mode, not systems; "
                 "got no --judges"),
                (["--judges", self.config, "--quorum", "2"],
                 "--quorum must be from 1 to the number of --judges, with --jury; got 2"),
                (["--judges", self.config, "--jury", "mean", "--quorum", "4"],
                 "--quorum must be from 1 to the number of --judges, with --jury; got 4"),
                (["--judges", mixed, "--jury", "mean"], "--jury needs --judges FILE of one "
                 "mode, not systems; got modes binary, rating"),
                (["--repeats", "0"], "--repeats must be a whole number from 1 to 100; got 0")):
            with self.subTest(flags=flags):
                code, out, err = run_main(["--judge-url", self.srv.url, *flags, self.source])
                self.assertEqual(code, 2, err)
                self.assertIn(message, err)

    def test_the_readme_jury_in_a_real_process(self):
        # examples/jury.json: three models behind one URL (or each its LLM_JUDGE_<NAME>_*)
        ratings = {"llama-3.1-8b-instruct": "4", "qwen2.5-7b-instruct": "5",
                   "mistral-7b-instruct-v0.3": "2"}
        self.srv.models = tuple(ratings)
        self.srv.responder = lambda request: chat("Rating: " + ratings[request.json["model"]])
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        proc = subprocess.run(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--judges",
             os.path.join("examples", "jury.json"), "--jury", "mean", "--quorum", "2",
             "examples/qa.jsonl"], cwd=REPO, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        records = [json.loads(line) for line in proc.stdout.decode().splitlines()]
        judged = [r for r in records if r["judge_status"] == "ok"]
        self.assertEqual(len(records), 24)  # one is an empty response: no request, 0.0
        self.assertEqual({json.dumps(r["judge_panel"]) for r in judged}, {json.dumps(
            {"llama": 0.75, "qwen": 1.0, "mistral": 0.25})})
        self.assertEqual({r["judge_score"] for r in judged}, {2 / 3})
        self.assertIn(b"; jury: the mean of llama, qwen, mistral (quorum 2)\n", proc.stderr)
        self.assertIn(b"offset from the panel llama 0.0833, qwen 0.3333, mistral -0.4167",
                      proc.stderr)


def by_seed(request):
    """resp-0 gets 4, 4, 5, 4, 4, 5, ... by the request's seed; resp-1 always 3."""
    if "resp-1" in (request.prompt or ""):
        return chat("Rating: 3")
    return chat("Rating: {}".format((4, 4, 5)[request.json.get("seed", 0) % 3]))


class RepeatsTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = by_seed
        self.source = self.write_jsonl("in.jsonl", [
            {"question": "q", "response": "resp-%d" % i} for i in range(2)])

    def run_cli(self, *flags):
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--no-preflight", "--summary", self.path("s.json"),
                                   "--concurrency", "1", *flags, self.source])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            return [json.loads(line) for line in out.splitlines()], err, json.load(f)

    def test_each_repeat_has_its_seed_and_the_score_is_their_mean(self):
        out, err, summary = self.run_cli("--repeats", "3", "--seed", "6")
        self.assertEqual([r.json["seed"] for r in self.srv.requests], [6, 7, 8] * 2)
        self.assertEqual(out[0]["judge_repeats"], [0.75, 0.75, 1.0])
        self.assertAlmostEqual(out[0]["judge_score"], 2.5 / 3)
        self.assertEqual((out[1]["judge_repeats"], out[1]["judge_score"]), ([0.5] * 3, 0.5))
        # resp-0's population SD: sqrt(((1/12)^2 * 2 + (1/6)^2) / 3) = sqrt(1/72); resp-1's 0
        self.assertEqual(summary["repeats"], {"k": 3, "all_alike": 0.5, "n": 2,
                                              "mean_sd": round(math.sqrt(1 / 72) / 2, 4)})
        self.assertIn("\n    repeats: all 3 alike on 50.0% of the items, mean within-item SD "
                      "0.0589 (n=2)\n", err)

    def test_a_resumed_run_asks_only_the_repeats_it_has_not_cached(self):
        cache = self.path("cache.jsonl")
        self.run_cli("--repeats", "2", "--cache", cache)
        self.assertEqual([r.json["seed"] for r in self.srv.requests], [0, 1] * 2)
        self.srv.clear()
        out, err, summary = self.run_cli("--repeats", "3", "--cache", cache)
        self.assertEqual([r.json["seed"] for r in self.srv.requests], [2, 2])
        self.assertEqual(summary["cached"], 0)  # a record counts as cached only if all were
        self.assertEqual(out[0]["judge_repeats"], [0.75, 0.75, 1.0])

    def test_a_failed_repeat_fails_the_item_with_its_reason(self):
        self.srv.responder = lambda request: error(500, "down") if request.json.get(
            "seed") == 1 else chat("Rating: 4")
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--no-preflight", "--max-retries", "0", "--repeats", "2",
                                   self.source])
        record = json.loads(out.splitlines()[0])
        self.assertEqual((record["judge_status"], record["judge_repeats"]),
                         ("http_error", [0.75, None]))
        self.assertTrue(record["judge_error"].startswith(
            "1 of 2 answered, 2 needed: repeat 2: http_error: "), record["judge_error"])

    def test_verdicts_repeat_by_majority(self):
        answers = iter(["[[A]]", "[[B]]", "[[A]]"])
        judge = minijudge.LLMJudge(self.srv.url, model="m", template="pairwise", repeats=3,
                                   judge_fn=lambda messages: next(answers))
        judgement = judge.compare({"question": "q"}, "x", "y", both_orders=False)
        self.assertEqual((judgement.score, judgement.value, judgement.details["repeats"]),
                         (1.0, "A", [1.0, 0.0, 1.0]))


class LengthBiasTest(StubTestCase):
    def test_a_judge_that_prefers_longer_responses_shows_a_positive_correlation(self):
        self.srv.responder = lambda request: chat("Rating: {}".format(min(5, 1 + len(
            request.prompt.split("LENGTHY:")[1].split("|")[0]) // 10)))
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "response": "LENGTHY:" + "x" * n + "|"} for n in
            (5, 12, 25, 31, 44, 8, 50)])
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--no-preflight", "--summary", self.path("s.json"), source])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            length = json.load(f)["length_bias"]
        self.assertEqual(length["n"], 7)
        self.assertGreater(length["spearman"], 0.9)
        self.assertIn("\n    length: Spearman {} between a response's length and its score "
                      "(n=7)\n".format(length["spearman"]), err)

    def test_pairs_where_the_longer_wins_get_a_lower_length_controlled_win_rate(self):
        # the hand-computed example of StatisticsTest, through the command line: 15 pairs
        # with A longer by 10 characters (A wins 12), 5 with A shorter (A wins 2)
        items, verdicts = [], {}
        for i in range(20):
            a_longer = i < 15
            a = "A%02d" % i + ("x" * 10 if a_longer else "")
            b = "B%02d" % i + ("" if a_longer else "x" * 10)
            items.append({"question": "q", "response_a": a, "response_b": b})
            verdicts[a] = "A" if (i < 12 or 15 <= i < 17) else "B"

        def respond(request):
            for a, verdict in verdicts.items():
                if a in request.prompt:
                    return chat("[[{}]]".format(verdict))
        self.srv.responder = respond
        source = self.write_jsonl("pairs.jsonl", items)
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--no-preflight", "--mode", "pairwise", "--single-order",
                                   "--summary", self.path("s.json"), source])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            length = json.load(f)["length_bias"]
        self.assertEqual(length, {"longer_wins": 0.75, "decisive": 20, "win_rate": 0.7,
                                  "lc_win_rate": 0.6202, "n": 20})
        self.assertIn("\n    length: the longer answer won 0.75 of the decisive verdicts "
                      "(n=20); length-controlled win rate 0.6202, raw 0.7 (n=20)\n", err)


if __name__ == "__main__":
    unittest.main()
