"""Systems ranked by Bradley-Terry scores, with bootstrap intervals, win
rates against a baseline, a length-controlled variant, ties as half a win and strong
verdicts counted as --strong-weight says.

The hand-computed example (docs/ranking-and-statistics.md, "Ranking systems"): A beats B in 2 of 3, B beats C in
2 of 3, A beats C in 4 of 5. Strengths 4 : 2 : 1 satisfy the Bradley-Terry equations
(each system's wins = sum over its games of p_i / (p_i + p_j)): A 2 + 4 = 3*4/6 + 5*4/5,
B 1 + 2 = 3*2/6 + 3*2/3, C 1 + 1 = 3*1/3 + 5*1/5. On the scale 1000 + 400 log10(p / p_base)
with A the baseline: A 1000, B 1000 - 400 log10 2 = 879.59, C 759.18; B's predicted win
rate against A is 2 / (2 + 4) = 0.3333, C's 1 / 5 = 0.2.
"""
import json
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import chat, ranking_block  # noqa: E402
from test_modes import ModeTest, answers, preferring  # noqa: E402

METHOD = ("Bradley-Terry (minorise-maximise), ties half, strong verdicts x1; 95% bootstrap "
          "intervals, 1000 resamples of the comparisons, seed 0")


def named(a, b, winner, **extra):
    """A pairwise record naming its systems: the winner's answer is "good", the other's
    "poor" (as long: no length gap for the length-controlled fit)."""
    texts = {a: "poor", b: "poor"}
    if winner:
        texts[winner] = "good"
    return dict({"question": "q", "model_a": a, "model_b": b, "response_a": texts[a],
                 "response_b": texts[b]}, **extra)


def hand_example():
    return ([named("A", "B", "A")] * 2 + [named("A", "B", "B")] + [named("B", "C", "B")] * 2
            + [named("C", "B", "C")] + [named("A", "C", "A")] * 4 + [named("C", "A", "C")])


class HandExampleTest(ModeTest):
    def run_pairs(self, records, *flags):
        self.srv.responder = preferring("good", "poor")
        return self.run_cli("--mode", "pairwise", *flags,
                            self.write_jsonl("in.jsonl", records), "-o", self.path("out.jsonl"))

    def test_scores_win_rates_and_the_printed_lines(self):
        code, out, err, summary = self.run_pairs(hand_example())
        self.assertEqual(code, 0, err)
        ranking = summary["bradley_terry"]
        self.assertEqual((ranking["baseline"], ranking["comparisons"], ranking["method"],
                          ranking["ties_added"]), ("A", 11, METHOD, False))
        self.assertEqual(list(ranking["systems"]), ["A", "B", "C"])
        got = {k: (v["score"], v["win_rate"], v["comparisons"])
               for k, v in ranking["systems"].items()}
        self.assertEqual(got, {"A": (1000.0, 0.5, 8), "B": (879.59, 0.3333, 6),
                               "C": (759.18, 0.2, 8)})
        self.assertEqual(ranking["systems"]["A"]["ci"], [1000.0, 1000.0])
        low, high = ranking["systems"]["B"]["ci"]
        self.assertTrue(low < 879.59 < high, ranking)
        self.assertIn("  ranked over 11 comparisons, baseline A at 1000 ({}):\n"
                      "    A 1000.0 (CI [1000.0, 1000.0]), win rate against the baseline 0.5 "
                      "(CI [0.5, 0.5]), length-controlled 1000.0, 8 comparisons\n"
                      "    B 879.59 (CI [{}, {}]),".format(METHOD, low, high), err)

    def test_the_docs_show_this_run(self):
        _, _, err, _ = self.run_pairs(hand_example())
        with open(os.path.join(os.path.dirname(HERE), "docs", "ranking-and-statistics.md"),
                  encoding="utf-8") as f:
            readme = f.read()
        shown = readme.split("C's 1/(1+4) = 0.2")[1].split("```")[1].strip("\n")
        self.assertIn(shown + "\n", err)

    def test_baseline_flag_anchors_the_scale(self):
        _, _, err, summary = self.run_pairs(hand_example(), "--baseline", "C")
        scores = {k: v["score"] for k, v in summary["bradley_terry"]["systems"].items()}
        self.assertEqual(scores, {"A": 1240.82, "B": 1120.41, "C": 1000.0})
        self.assertEqual(summary["bradley_terry"]["systems"]["A"]["win_rate"], 0.8)

    def test_the_interval_flags_reach_the_ranking(self):
        _, _, err, summary = self.run_pairs(hand_example(), "--confidence", "0.9",
                                            "--bootstrap-samples", "200")
        ranking = summary["bradley_terry"]
        self.assertIn("; 90% bootstrap intervals, 200 resamples of the comparisons, seed 0",
                      ranking["method"])
        self.assertIn(ranking["method"], err)
        _, _, _, wider = self.run_pairs(hand_example())
        low, high = ranking["systems"]["B"]["ci"]
        low95, high95 = wider["bradley_terry"]["systems"]["B"]["ci"]
        self.assertLess(high - low, high95 - low95)

    def test_unknown_baseline_is_said(self):
        _, _, err, summary = self.run_pairs(hand_example(), "--baseline", "Z")
        message = "--baseline 'Z' is none of the 3 systems compared"
        self.assertEqual(summary["bradley_terry"], {"error": message})
        self.assertIn("  bradley-terry: " + message + "\n", err)

    def test_report_over_shards_gives_the_same_ranking(self):
        _, _, run_err, summary = self.run_pairs(hand_example())
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            lines = f.readlines()
        shards = [self.write("shard%d.jsonl" % k, "".join(lines[k::3])) for k in range(3)]
        code, _, err = self.main("report", *shards[::-1], "--summary", self.path("r.json"))
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(self.read("r.json"))["bradley_terry"],
                         summary["bradley_terry"])
        self.assertEqual(ranking_block(err), ranking_block(run_err))
        self.assertEqual(len(ranking_block(err)), 4)

    def test_the_page_says_what_the_summary_says(self):
        records = hand_example() + [named("<b>all</b>", "none judged", "none judged"),
                                    named(7, "A", "A"), named(None, "A", "A")]
        code, _, err, summary = self.run_pairs(records, "--html", self.path("page.html"))
        ranking = summary["bradley_terry"]
        self.assertEqual(ranking["comparisons"], 12, err)  # a number or null names no system
        self.assertIn("none judged", ranking["systems"])
        page = self.read("page.html")
        self.assertIn("&lt;b&gt;all&lt;/b&gt; ", page)
        self.assertNotIn("<b>all</b>", page)
        printed = [line.strip() for line in err.splitlines() if line.startswith("    ")]
        for line in printed[:4]:
            self.assertIn(minijudge._esc(line), page)

    def test_many_systems_are_listed_twenty_at_most(self):
        names = ["s%02d" % i for i in range(22)]  # a cycle: each beats the next, all equal
        records = [named(a, b, a) for a, b in zip(names, names[1:] + names[:1])]
        # 100 resamples, the fewest allowed: the intervals are printed, their bounds not
        # checked here, and 1,000 resamples of 22 systems took 0.6 s of the test's 0.7
        _, _, err, summary = self.run_pairs(records, "--bootstrap-samples", "100")
        self.assertEqual(len(summary["bradley_terry"]["systems"]), 22, err)
        self.assertEqual({v["score"] for v in summary["bradley_terry"]["systems"].values()},
                         {1000.0})
        # each pair compared once: a resample joins s19 to the baseline s00 (3 pairs away
        # round the cycle) in a quarter of the draws, fewer than half: no interval (it had
        # one, from draws where nothing joined it to s00 and its score was the fit's start)
        self.assertIn("    s19 1000.0 (CI none), win rate against the baseline 0.5 (CI none), ",
                      err)
        self.assertNotIn("    s20 ", err)
        self.assertIn("    and 2 more systems (--summary lists all)\n", err)

    def test_a_tie_is_half_a_win_each(self):
        # x beats y once, and they tie once: x has 1.5 points, y 0.5: x is 3 times as strong
        _, _, _, summary = self.run_pairs([named("x", "y", "x"), named("x", "y", None)])
        self.assertEqual(summary["bradley_terry"]["systems"]["y"]["score"],
                         round(1000 - 400 * math.log10(3), 2))


class LengthControlTest(ModeTest):
    def test_a_longer_answer_s_wins_are_discounted(self):
        # y wins 3 of 5 (plain: 1000 + 400 log10 1.5 = 1070.44), but the longer answer won 3
        # of 5 and y's was longer in 3: its length-controlled score is lower
        self.srv.responder = preferring("long answer one", "s2", "long answer three", "s4")
        texts = [("s1", "long answer one"), ("s1", "long answer one"), ("s2", "long answer two"),
                 ("long answer three", "s3"), ("long answer four", "s4")]
        records = [{"question": "q", "model_a": "x", "model_b": "y", "response_a": a,
                    "response_b": b} for a, b in texts]
        _, _, err, summary = self.run_cli("--mode", "pairwise",
                                          self.write_jsonl("in.jsonl", records))
        ranking = summary["bradley_terry"]
        self.assertEqual(ranking["systems"]["y"]["score"], 1070.44, err)
        self.assertGreater(ranking["length_coefficient"], 0)
        self.assertLess(ranking["systems"]["y"]["lc_score"], 1070.44)


class StrongVerdictTest(ModeTest):
    def run_strong(self, *flags):
        # "good" over "bad" strongly ([[A>>B]] in both orders), "fine" over "bad" weakly
        def responder(request):
            a, b = answers(request)
            sign = ">>"
            if "fine" in (a, b):
                sign = ">"
            if a == "bad":
                return chat("[[B{}A]]".format(sign))
            return chat("[[A{}B]]".format(sign))
        self.srv.responder = responder
        records = [dict(named("x", "y", "x"), response_b="bad"),
                   dict(named("x", "y", None), response_a="bad", response_b="fine")]
        return self.run_cli("--mode", "pairwise", *flags, self.write_jsonl("in.jsonl", records))

    def test_strong_weight_counts_a_strong_verdict_as_several(self):
        code, out, err, summary = self.run_strong("--strong-weight", "3")
        self.assertEqual([r.get("judge_strong") for r in out], [True, None], err)
        # x: 3 strong points of 4 games, y 1: strengths 3 : 1
        self.assertEqual(summary["bradley_terry"]["systems"]["y"]["score"],
                         round(1000 - 400 * math.log10(3), 2))
        self.assertEqual(summary["bradley_terry"]["strong_weight"], 3)

    def test_by_default_a_strong_verdict_is_one_win(self):
        _, _, err, summary = self.run_strong()
        self.assertEqual(summary["bradley_terry"]["systems"]["y"]["score"], 1000.0, err)

    def test_strong_weight_must_be_a_whole_number(self):
        code, _, err = self.main("--strong-weight", "0", "in.jsonl")
        self.assertEqual(code, 2)
        self.assertIn("minijudge: error: argument --strong-weight: must be a whole number, 1 "
                      "or more; got '0'", err)


class SystemsModeTest(ModeTest):
    def test_systems_items_are_ranked(self):
        # x's answer wins 3 of 4 items; y wins the last: 3 : 1, y 190.85 below x
        self.srv.responder = preferring("good", "bad")
        items = [{"question": "q", "responses": {"x": "good", "y": "bad"}}] * 3
        items.append({"question": "q", "responses": {"x": "bad", "y": "good"}})
        code, _, err, summary = self.run_cli("--mode", "systems",
                                             self.write_jsonl("in.jsonl", items))
        systems = summary["bradley_terry"]["systems"]
        self.assertEqual((systems["x"]["score"], systems["y"]["score"]), (1000.0, 809.15), err)
        self.assertEqual(systems["y"]["win_rate"], 0.25)


def simulate(strengths, n, rng, length_effect=0.0):
    """n comparisons of random pairs drawn from known strengths (log scale); with a length
    effect, the longer answer wins more often, and strong systems write longer."""
    names = sorted(strengths)
    compared = []
    for _ in range(n):
        a, b = rng.sample(names, 2)
        gap = rng.gauss(100 * (strengths[a] - strengths[b]), 200)
        z = strengths[a] - strengths[b] + length_effect * math.tanh(gap / 250)
        won = float(rng.random() < 1 / (1 + math.exp(-z)))
        compared.append((a, b, won, gap, 1))
    return compared


class SimulationTest(unittest.TestCase):
    TRUTH = {"s0": 0.0, "s1": 0.4, "s2": 0.9, "s3": 1.5}  # log strengths

    def elo(self, name):
        return 1000 + 400 * (self.TRUTH[name] - self.TRUTH["s0"]) / math.log(10)

    def test_fitted_order_and_intervals_cover_the_truth(self):
        compared = simulate(self.TRUTH, 1500, random.Random(1))
        strengths, _ = minijudge._bradley_terry(compared)
        self.assertEqual(sorted(strengths, key=strengths.get), ["s0", "s1", "s2", "s3"])
        intervals = minijudge._bt_intervals(compared, "s0", 0, resamples=200, level=0.95)
        for name in ("s1", "s2", "s3"):
            low, high = intervals[name]
            self.assertTrue(low <= self.elo(name) <= high, (name, low, high, self.elo(name)))

    def test_length_control_removes_a_length_preference(self):
        compared = simulate(self.TRUTH, 3000, random.Random(2), length_effect=1.5)
        strengths, _ = minijudge._bradley_terry(compared)
        plain = minijudge._elo(strengths, "s0")
        controlled, gamma = minijudge._lc_scores(compared, "s0", strengths)
        self.assertGreater(gamma, 1.0)
        for name in ("s1", "s2", "s3"):
            self.assertLess(abs(controlled[name] - self.elo(name)), 25, name)
        self.assertGreater(plain["s3"] - self.elo("s3"), 60)  # inflated by length


if __name__ == "__main__":
    unittest.main()
