"""Panels and repeats (the section "Panels and repeats: one judgement from several"):
juries of judges and one judge asked again, the combined judgement's every field, length
bias, and the hostile campaigns' panels.

Issue 14: juries of judges, repeated asking, and length bias, each in the summary's trust
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
from stub import (PYTHON, JUDGE_ENV, StubTestCase, chat, error, rating_logprobs,
                  read_summary, run_main)

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


CRITERION = {"name": "quality", "description": "how good",
             "options": {"Excellent": 1.0, "Fair": 0.5, "Poor": 0.0}}


def prefers(answer):
    """A pairwise judge that always prefers ``answer`` (so it is consistent in both orders)."""
    other = {"ans-one": "ans-two", "ans-two": "ans-one"}[answer]

    def respond(request):
        prompt = request.prompt or ""
        return chat("[[A]]" if prompt.find(answer) < prompt.find(other) else "[[B]]")
    return respond


def seeded(*answers):
    """One judge asked with --repeats: the answer for the request's seed (0, 1, ...)."""
    return lambda request: chat(answers[request.json.get("seed", 0) % len(answers)])


def failing(request):
    return error(500, "scripted failure")


class Combined(StubTestCase):
    """Issue 28, item 3: a combined judgement (a panel's, or one judge's repeats) says one
    thing in every field. When the members disagree, the verdict, option, value and pass
    describe the combined score (a split is a tie, and has no single option), a field only
    some members share is null, and each member's own values are under ``judge_members``.
    Through the real command line, a stub server a judge, each answering as scripted by what
    its request holds."""

    def setUp(self):
        super().setUp()
        self.criteria = self.write("criteria.json", json.dumps(CRITERION))
        self.source = self.write_jsonl("in.jsonl", [{
            "question": "q", "answer": "x", "response": "resp", "response_a": "ans-one",
            "response_b": "ans-two", "responses": {"one": "ans-one", "two": "ans-two"}}])

    def run_cli(self, flags, code=0):
        summary = self.path("s.json")
        got, out, err = run_main(["--judge-model", "m", "--no-preflight", "--summary", summary,
                                  *flags, self.source])
        self.assertEqual(got, code, err)
        if "-o" in flags:
            with open(flags[flags.index("-o") + 1], encoding="utf-8") as f:
                out = f.read()
        return json.loads(out.splitlines()[0]), read_summary(summary)

    def panel(self, mode, responders, *flags, code=0, **options):
        judges = []
        for n, respond in enumerate(responders):
            srv = self.srv if n == 0 else self.start_stub()
            srv.responder = respond
            judges.append({"name": "j%d" % n, "url": srv.url, "mode": mode,
                           "options": dict(options, max_retries=0)})
            if mode == "criterion":
                judges[-1]["criteria"] = self.criteria
        config = self.write("judges.json", json.dumps(judges))
        return self.run_cli(["--judges", config, *flags], code)

    def repeats(self, mode, respond, k, *flags):
        self.srv.responder = respond
        criteria = ["--criteria", self.criteria] if mode == "criterion" else []
        return self.run_cli(["--judge-url", self.srv.url, "--mode", mode, "--max-retries", "0",
                             "--repeats", str(k), *criteria, *flags])

    def fields(self, record, *names):
        return {name: record["judge_" + name] for name in names}


class CombinedPanelTest(Combined):
    def test_a_pairwise_panel_split_one_to_one_is_a_tie(self):
        for how in ("majority", "mean", "median"):
            with self.subTest(jury=how):
                record, summary = self.panel("pairwise", [prefers("ans-one"), prefers("ans-two")],
                                             "--jury", how)
                self.assertEqual(self.fields(
                    record, "score", "status", "value", "verdict", "consistent", "verdicts",
                    "raw", "raw_swapped", "error"), {
                    "score": 0.5, "status": "ok", "value": "tie", "verdict": "tie",
                    "consistent": True, "verdicts": None, "raw": None, "raw_swapped": None,
                    "error": None})  # each judge agreed with itself in both orders
                self.assertEqual(record["judge_panel"], {"j0": 1.0, "j1": 0.0})
                self.assertEqual(record["judge_members"]["j0"], {
                    "status": "ok", "score": 1.0, "value": "A", "error": None, "raw": "[[A]]",
                    "verdict": "A", "raw_swapped": "[[B]]", "verdicts": ["A", "A"],
                    "consistent": True})
                self.assertEqual(record["judge_members"]["j1"]["verdicts"], ["B", "B"])
                # each judge's two orders count: two pairs, both consistent
                self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                                 (1.0, 2))

    def test_a_pairwise_panel_whose_judges_differ_in_consistency_says_neither(self):
        always_a = lambda request: chat("[[A]]")  # inconsistent: a tie of its own
        record, summary = self.panel("pairwise", [prefers("ans-one"), always_a, prefers(
            "ans-one")], "--jury", "mean")
        self.assertEqual(self.fields(record, "score", "value", "verdict", "consistent"), {
            "score": 2.5 / 3, "value": None, "verdict": None, "consistent": None})
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                         (0.6667, 3))

    def test_a_quorum_with_a_failed_judge_keeps_what_the_others_said(self):
        record, summary = self.panel("pairwise", [prefers("ans-one"), prefers("ans-two"),
                                                  failing], "--jury", "majority", "--quorum", "2")
        self.assertEqual(self.fields(record, "score", "status", "value", "verdict"), {
            "score": 0.5, "status": "ok", "value": "tie", "verdict": "tie"})
        self.assertTrue(record["judge_error"].startswith("judge j2: http_error: "))
        self.assertEqual(record["judge_panel"], {"j0": 1.0, "j1": 0.0, "j2": None})
        failed = record["judge_members"]["j2"]
        self.assertEqual((failed["status"], failed["score"], failed["value"]),
                         ("http_error", 0.0, None))
        self.assertIn("scripted failure", failed["error"])
        self.assertEqual((summary["statuses"], summary["position_pairs"]), ({"ok": 1}, 2))

    def test_a_criterion_panel_split_has_no_option(self):
        record, summary = self.panel("criterion", [lambda r: chat("Excellent"),
                                                   lambda r: chat("Poor")], "--jury", "majority")
        self.assertEqual(self.fields(record, "score", "value", "option", "raw"), {
            "score": 0.5, "value": None, "option": None, "raw": None})  # not Fair: no one said it
        self.assertEqual({name: member["option"] for name, member in record[
            "judge_members"].items()}, {"j0": "Excellent", "j1": "Poor"})

    def test_a_criterion_panel_that_agrees_keeps_the_option_and_what_it_shares(self):
        record, _ = self.panel("criterion", [lambda r: chat("Fair"), lambda r: chat("Fair")],
                               "--jury", "mean")
        self.assertEqual(self.fields(record, "score", "value", "option", "raw", "model"), {
            "score": 0.5, "value": "Fair", "option": "Fair", "raw": "Fair", "model": "m"})

    def test_check_position_in_a_panel_counts_each_judge(self):
        def reversed_choice(request):  # the option listed first wins: biased
            prompt = request.prompt or ""
            return chat("Excellent" if prompt.find("- Excellent") < prompt.find("- Poor")
                        else "Poor")
        record, summary = self.panel("criterion", [lambda r: chat("Excellent"), reversed_choice],
                                     "--jury", "mean", "--check-position")
        self.assertEqual(self.fields(record, "score", "option", "positional_bias",
                                     "option_reversed"), {
            "score": 1.0, "option": "Excellent", "positional_bias": None,
            "option_reversed": None})
        self.assertEqual([(m["positional_bias"], m["option_reversed"]) for m in record[
            "judge_members"].values()], [(False, "Excellent"), (True, "Poor")])
        self.assertEqual((summary["positional_bias_rate"], summary["positional_bias_n"]),
                         (0.5, 2))

    def test_a_binary_panel_split_has_no_verdict(self):
        record, summary = self.panel("binary", [lambda r: chat("yes"), lambda r: chat("no")],
                                     "--jury", "majority")
        self.assertEqual(self.fields(record, "score", "value", "raw"), {
            "score": 0.5, "value": None, "raw": None})

    def test_pass_is_the_panels_score_against_the_threshold(self):
        record, summary = self.panel("rating", [lambda r: chat("Rating: 5"),
                                                lambda r: chat("Rating: 2")], "--jury", "mean",
                                     "--pass-threshold", "0.7")
        self.assertEqual(self.fields(record, "score", "value", "pass"), {
            "score": 0.625, "value": 3.5, "pass": False})
        self.assertEqual([m["pass"] for m in record["judge_members"].values()], [True, False])
        self.assertEqual((summary["pass_rate"], summary["ratings"]), (0.0, {"3.5": 1}))

    def test_a_failed_panel_is_its_failure_in_every_field(self):
        record, summary = self.panel("pairwise", [prefers("ans-one"), failing], "--jury",
                                     "majority", code=1)
        self.assertEqual(self.fields(record, "status", "score", "value"), {
            "status": "http_error", "score": 0.0, "value": None})
        self.assertNotIn("judge_verdict", record)  # as a single judge's failure
        self.assertEqual(record["judge_members"]["j0"]["verdict"], "A")
        self.assertEqual((summary["statuses"], summary["position_pairs"]), ({"http_error": 1}, 1))


    def test_a_failed_panel_fails_the_threshold_as_one_judge_does(self):
        record, summary = self.panel("rating", [lambda r: chat("Rating: 5"), failing],
                                     "--jury", "mean", "--pass-threshold", "0.5", code=1)
        self.assertEqual(self.fields(record, "status", "score", "pass"), {
            "status": "http_error", "score": 0.0, "pass": False})
        self.assertEqual(summary["pass_rate"], 0.0)  # as a single judge's failure counts

    def test_an_empty_response_says_why_for_the_panel(self):
        self.source = self.write_jsonl("empty.jsonl", [{"question": "q", "response": " "}])
        record, summary = self.panel("rating", [failing, failing], "--jury", "mean")
        self.assertEqual(self.fields(record, "status", "score", "error"), {
            "status": "empty_response", "score": 0.0,
            "error": "the response is empty: scored 0.0 without calling the judge"})
        self.assertEqual(summary["statuses"], {"empty_response": 1})

    def test_each_judges_repeats_count_in_the_summary(self):
        record, summary = self.panel("binary", [seeded("yes", "no"), seeded("yes")],
                                     "--jury", "majority", "--repeats", "2")
        self.assertEqual(self.fields(record, "score", "value", "panel"), {
            "score": 0.5, "value": None, "panel": {"j0": 0.5, "j1": 1.0}})
        self.assertEqual([m["repeats"] for m in record["judge_members"].values()],
                         [[1.0, 0.0], [1.0, 1.0]])
        self.assertEqual(summary["repeats"], {"k": 2, "all_alike": 0.5, "n": 2,
                                              "mean_sd": 0.25})

    def test_report_counts_a_panel_as_the_run_did(self):
        always_a = lambda request: chat("[[A]]")
        self.source = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % n, "response_a": "ans-one", "response_b": "ans-two"}
            for n in range(3)])
        judges = [prefers("ans-one"), always_a, prefers("ans-two")]
        _, summary = self.panel("pairwise", judges, "--jury", "median", "--pass-threshold",
                                "0.6", "-o", self.path("out.jsonl"))
        code, out, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                   self.path("r.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("r.json"), encoding="utf-8") as f:
            report = json.load(f)
        for name in ("statuses", "mean_score", "position_consistency", "position_pairs",
                     "pass_rate", "panel"):
            self.assertEqual(report[name], summary[name], name)
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                         (0.6667, 9))

    def test_judges_that_would_combine_unlike_numbers_are_refused(self):
        # a 1-5 judge's 5 and a 1-10 judge's 10 were judge_value 7.5 beside judge_score 1.0
        for options, message in (
                ({"scale": [1, 10]}, "--jury needs one scale for every judge; got j0 (1, 5), "
                 "j1 (1, 10)"),
                ({"pass_threshold": 0.9}, "--jury needs one pass_threshold for every judge; "
                 "got j0 0.5, j1 0.9"),
                # on_failure is refused in any judges file (options28): failures are 0.0
                ({"on_failure": None}, "judge j1: on_failure is for Python: on the command "
                 "line a failure scores 0.0 (the summary's \"failures as 0.0\") and "
                 "judge_status says why")):
            with self.subTest(options=options):
                template = self.write("t.txt", "{question} {response}: a rating")  # any scale
                config = self.write("judges.json", json.dumps([
                    {"name": "j0", "url": self.srv.url, "template": template,
                     "options": {"pass_threshold": 0.5}},
                    {"name": "j1", "url": self.srv.url, "template": template, "options": dict(
                        {"pass_threshold": 0.5}, **options)}]))
                code, out, err = run_main(["--judge-model", "m", "--no-preflight", "--judges",
                                           config, "--jury", "mean", self.source])
                self.assertEqual((code, out, err), (2, "", "minijudge: error: " + message + "\n"))
        self.assertEqual(self.srv.chat_count, 0)


class CombinedRepeatsTest(Combined):
    def test_criterion_repeats_split_have_no_option(self):
        record, summary = self.repeats("criterion", seeded("Excellent", "Poor"), 2)
        self.assertEqual(self.fields(record, "score", "value", "option", "raw", "repeats"), {
            "score": 0.5, "value": None, "option": None, "raw": None, "repeats": [1.0, 0.0]})
        self.assertEqual([m["option"] for m in record["judge_members"]], ["Excellent", "Poor"])

    def test_binary_repeats_split_have_no_verdict(self):
        record, _ = self.repeats("binary", seeded("yes", "no"), 2)
        self.assertEqual(self.fields(record, "score", "value", "raw"), {
            "score": 0.5, "value": None, "raw": None})
        self.assertEqual([m["value"] for m in record["judge_members"]], [True, False])

    def test_rating_repeats_combine_the_rating_and_keep_a_shared_raw(self):
        record, summary = self.repeats("rating", seeded("Rating: 4"), 3, "--pass-threshold", "0.7")
        self.assertEqual(self.fields(record, "score", "value", "raw", "pass", "repeats"), {
            "score": 0.75, "value": 4, "raw": "Rating: 4", "pass": True,
            "repeats": [0.75] * 3})

    def test_pairwise_repeats_split_in_one_order_are_a_tie(self):
        record, summary = self.repeats("pairwise", seeded("[[A]]", "[[B]]"), 2, "--single-order")
        self.assertEqual(self.fields(record, "score", "value", "verdict", "raw"), {
            "score": 0.5, "value": "tie", "verdict": "tie", "raw": None})

    def test_pairwise_repeats_in_both_orders_count_each_repeat(self):
        # seed 0: A in both orders (inconsistent, a tie); seed 1: a consistent preference
        def respond(request):
            if request.json.get("seed", 0) == 0:
                return chat("[[A]]")
            return prefers("ans-one")(request)
        record, summary = self.repeats("pairwise", respond, 2)
        self.assertEqual(self.fields(record, "score", "value", "verdict", "consistent"), {
            "score": 0.5, "value": "tie", "verdict": "tie", "consistent": None})
        self.assertEqual([m["consistent"] for m in record["judge_members"]], [False, True])
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]), (0.5, 2))

    def test_systems_repeats_split_are_a_tie_in_the_pairs_and_each_repeat_counts(self):
        def respond(request):  # seed 0: A in both orders (a tie); seed 1: prefers ans-one
            if request.json.get("seed", 0) == 0:
                return chat("[[A]]")
            return prefers("ans-one")(request)
        record, summary = self.repeats("systems", respond, 2)
        pair = record["judge_pairs"][0]
        self.assertEqual({k: pair[k] for k in ("a", "b", "verdict", "consistent")},
                         {"a": "one", "b": "two", "verdict": "tie", "consistent": None})
        self.assertEqual([(m["verdict"], m["consistent"]) for m in pair["members"]],
                         [("tie", False), ("A", True)])
        self.assertEqual(record["judge_value"], {"one": 0.5, "two": 0.5})
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]), (0.5, 2))


class JuryApiTest(unittest.TestCase):
    def judged(self, answer, template="pairwise", **options):
        judge = minijudge.LLMJudge("http://127.0.0.1:9", model="m", template=template,
                                   judge_fn=lambda messages: answer, **options)
        if template == "pairwise":
            return judge.compare({"question": "q"}, "x", "y", both_orders=False)
        return judge.judge({"question": "q"}, "r")

    def test_a_split_of_verdicts_is_a_tie_in_every_field(self):
        combined = minijudge.jury({"a": self.judged("[[A]]"), "b": self.judged("[[B]]")},
                                  "majority")
        self.assertEqual((combined.score, combined.value, combined.details["verdict"],
                          combined.raw), (0.5, "tie", "tie", None))
        self.assertEqual(combined.details["members"]["a"]["raw"], "[[A]]")

    def test_a_split_of_options_has_no_option(self):
        options = dict(criterion=CRITERION)
        combined = minijudge.jury([self.judged("Excellent", "criterion", **options),
                                   self.judged("Poor", "criterion", **options)], "majority")
        self.assertEqual((combined.score, combined.value, combined.details["option"]),
                         (0.5, None, None))

    def test_pass_is_recomputed_from_the_combined_score(self):
        members = {"a": self.judged("Rating: 5", "rating", pass_threshold=0.7),
                   "b": self.judged("Rating: 2", "rating", pass_threshold=0.7)}
        self.assertNotIn("pass", minijudge.jury(members, "mean").details)
        combined = minijudge.jury(members, "mean", pass_threshold=0.7)
        self.assertEqual((combined.score, combined.details["pass"]), (0.625, False))


class SplitPanelAgreementHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2B): "a combined judgement says one thing": a
    rating panel split under --jury majority scores 0.5 (3 on a 1-5 scale, as the summary's
    mean says), but --human-field's agreement compared that 0.5 with the 1-5 human labels as
    if it were a rating (confusion {"3": {"0.5": 1}}, exact 0.0, within one 0.0), exit 0."""

    def test_a_split_rating_panel_is_compared_on_the_scale(self):
        judges = []
        for n, reply in enumerate(("Rating: 5", "Rating: 1")):
            srv = self.srv if n == 0 else self.start_stub()
            srv.content = reply
            judges.append({"name": "j%d" % n, "url": srv.url})
        config = self.write("judges.json", json.dumps(judges))
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % n, "response": "r", "human": h}
                                               for n, h in enumerate((3, 3, 4))])
        summary = self.path("s.json")
        code, out, err = run_main(["--no-preflight", "--judge-model", "m", "--judges", config,
                                   "--jury", "majority", "--human-field", "human", "--summary",
                                   summary, source])
        self.assertEqual(code, 0, err)
        record = json.loads(out.splitlines()[0])
        self.assertEqual((record["judge_score"], record["judge_value"]), (0.5, None))
        with open(summary, encoding="utf-8") as f:
            figures = json.load(f)
        self.assertEqual(figures["mean_value"], 3.0)
        self.assertEqual({k: figures["agreement"][k] for k in ("n", "exact", "within_one",
                                                              "confusion")},
                         {"n": 3, "exact": 0.6667, "within_one": 1.0,
                          "confusion": {"3": {"3": 2}, "4": {"3": 1}}})
        self.assertIn("agreement with human (n=3): exact 0.6667, within one 1.0", err)
        scored = self.write("out.jsonl", out)
        code, _, err = run_main(["report", scored, "--human-field", "human", "--summary",
                                 self.path("r.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("r.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["agreement"], figures["agreement"])


class LogprobsMajorityHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2B): a --logprobs rating panel under --jury
    majority: two judges that both rated 4 (scores 0.85 and 0.75, each weighted by its
    probabilities) were a "split", judge_score 0.5 (3 on the scale) and judge_pass false
    beside judge_value 4 and judge_raw "4", exit 0. The majority of ratings is of the
    ratings; its score, the mean of the scores of the judges that gave it. Through the real
    command line against the stub, and LLMJudge."""

    def test_judges_that_agree_on_the_rating_are_a_majority(self):
        judges = []
        for n, (text, probs) in enumerate((("4", {"4": 0.6, "5": 0.4}), ("4", {"4": 1.0}),
                                           ("2", {"2": 1.0}))):
            srv = self.srv if n == 0 else self.start_stub()
            srv.push(chat(text, logprobs=rating_logprobs(probs)))
            judges.append({"name": "j%d" % n, "url": srv.url})
        config = self.write("judges.json", json.dumps(judges))
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main(["--no-preflight", "--judge-model", "m", "--judges", config,
                                   "--jury", "majority", "--logprobs", "--pass-threshold", "0.7",
                                   source])
        self.assertEqual(code, 0, err)
        record = json.loads(out)
        self.assertEqual({k: round(v, 4) for k, v in record["judge_panel"].items()},
                         {"j0": 0.85, "j1": 0.75, "j2": 0.25})
        self.assertEqual({k: record["judge_" + k] for k in ("value", "pass")},
                         {"value": 4, "pass": True})
        self.assertAlmostEqual(record["judge_score"], 0.8)
        self.assertIn("mean score 0.8 ", err)

    def test_jury_in_python_votes_on_ratings(self):
        members = [minijudge.Judgement(score=0.85, value=4), minijudge.Judgement(score=0.75,
                                                                                  value=4)]
        combined = minijudge.jury(members, "majority")
        self.assertEqual((round(combined.score, 4), combined.value), (0.8, 4))
        split = minijudge.jury([members[0], minijudge.Judgement(score=0.25, value=2)],
                               "majority")
        self.assertEqual((split.score, split.value), (0.5, None))


class JuryInputsHostileTest(unittest.TestCase):
    """Issue 28's independent hostile campaign (hostB).

    jury() took what it could not combine: an LLMJudge was an AttributeError, a NaN score
    an ok NaN, a score of 7 was averaged to 4.0, quorum=True was 1, pass_threshold NaN."""

    def refused(self, message, judgements, **keywords):
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.jury(judgements, **keywords)
        self.assertEqual(str(caught.exception), message)

    def test_jury_checks_its_members_and_keywords(self):
        good = minijudge.Judgement(score=1.0, status="ok")
        self.refused("jury needs Judgements; repeat 2 is None", [good, None])
        self.refused("jury: judge b's score must be from 0 to 1; got nan",
                     {"a": good, "b": minijudge.Judgement(score=float("nan"), status="ok")})
        self.refused("jury: repeat 1's score must be from 0 to 1; got 7.0",
                     [minijudge.Judgement(score=7.0, status="ok"), good])
        self.refused("how (--jury) is mean, median or majority, and quorum (--quorum) 1 to the 2 "
                     "judgements; got 'mean' and True", [good, good], quorum=True)
        self.refused("pass_threshold must be a number from 0 to 1 (scores are 0-1); got nan",
                     [good, good], pass_threshold=float("nan"))

    def test_a_failed_member_keeps_its_failure_value(self):
        failed = minijudge.Judgement(score=float("nan"), status="http_error", error="x")
        result = minijudge.jury([minijudge.Judgement(score=1.0, status="ok"), failed], quorum=1)
        self.assertEqual((result.status, result.score), ("ok", 1.0))


if __name__ == "__main__":
    unittest.main()
