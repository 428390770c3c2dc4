"""Issue 46, items 4 and 5, a hostile pass on the ranking's fit (conjugate-gradient Newton
steps over the compared pairs, warm-started resamples): the same games give the same
figures however each comparison is written, and hostile layouts (separation, disconnected
groups, chains, stars, all ties, duplicates, fractions, strong weights, odd length gaps,
names like our keys, sparse and dense arenas) end at the likelihood's maximum, with
intervals holding the score, through `report` over written records and `rank_systems`.
"""
import html
import json
import math
import os
import random
import statistics
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from minijudge import rank_systems  # noqa: E402
from stub import CommandLineTestCase  # noqa: E402
from test_statistics_api import ARENA_JUDGMENTS  # noqa: E402

FLIPPED = {"A": "B", "B": "A", "tie": "tie", "A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B",
           "B>A": "A>B", "B>>A": "A>>B"}


def flipped(comparison):
    """The same comparison written the other way round: b first, the outcome from b's side."""
    a, b, outcome = comparison[:3]
    outcome = 1 - outcome if isinstance(outcome, (int, float)) else FLIPPED[outcome]
    return (b, a, outcome) + tuple(-gap for gap in comparison[3:])


def arena_hard_games(baseline):
    """The games of examples/arena_hard's judgment files as arena-hard-auto plays them:
    game 1 (baseline, model, its label), game 2 (model, baseline, its label)."""
    games = []
    for name in sorted(os.listdir(ARENA_JUDGMENTS)):
        with open(os.path.join(ARENA_JUDGMENTS, name), encoding="utf-8") as f:
            for row in map(json.loads, f):
                for number, game in enumerate(row["games"]):
                    pair = (baseline, row["model"])[::-1 if number else 1]
                    if game["score"] is not None:
                        games.append(pair + (game["score"],))
    return games


# a custom --layout over records holding a comparison each: "a", "b" and a verdict "v"
PAIR_LAYOUT = json.dumps({"model_a": "a", "model_b": "b", "verdict": "v"})


class WrittenEitherWay(CommandLineTestCase):
    """("base", "m", "A>B") and ("m", "base", "B>A") say the same: the same figures."""

    def layout_report(self, records, *argv):
        source = self.write_jsonl("games.jsonl", records)
        code, out, err = self.subprocess("report", "--summary", self.path("r.json"),
                                         "--max-error-rate", "1", "--layout", PAIR_LAYOUT,
                                         source, *argv)
        self.assertEqual(code, 0, err)
        return err, self.summary("r.json")["bradley_terry"]

    def test_rank_systems_gives_one_ranking_however_each_is_written(self):
        rng = random.Random(5)
        names = ["base", "m1", "m2", "m3"]
        games = [tuple(rng.sample(names, 2)) + (rng.choice(["A>B", "B>A", "A=B", "A>>B"]),)
                 for _ in range(60)]
        each_way = [flipped(c) if k % 3 == 0 else c for k, c in enumerate(games)]
        ordered = [c if c[0] < c[1] else flipped(c) for c in games]
        reference = rank_systems(games, baseline="base", strong_weight=3)
        for other in (each_way, [flipped(c) for c in games], ordered):
            self.assertEqual(rank_systems(other, baseline="base", strong_weight=3), reference)

    def test_fractional_outcomes_written_either_way(self):  # 1 - 0.7 is 0.30000000000000004
        games = [("a", "b", 0.3), ("a", "b", 0.3), ("b", "a", 0.7), ("a", "c", 1 / 3),
                 ("c", "a", 2 / 3), ("b", "c", 0.9), ("c", "b", 0.1), ("b", "c", 0.1)] * 3
        reference = rank_systems(games)
        self.assertEqual(rank_systems([c if c[0] < c[1] else flipped(c) for c in games]),
                         reference)
        self.assertEqual(rank_systems([flipped(c) for c in games]), reference)

    def test_report_of_arena_hards_files_gives_rank_systems_intervals(self):
        code, out, err = self.subprocess(
            "report", "--summary", self.path("r.json"), "--max-error-rate", "1",
            "--layout", "arena-hard", "--baseline", "base-model",
            os.path.join(ARENA_JUDGMENTS, "large-model.jsonl"),
            os.path.join(ARENA_JUDGMENTS, "small-model.jsonl"))
        self.assertEqual(code, 0, err)
        systems = self.summary("r.json")["bradley_terry"]["systems"]
        # as arena-hard-auto plays them: game 1 written (base, model, label), game 2
        # (model, base, label); a strong label counted 3 times
        games = arena_hard_games("base-model")
        for written in (games, [flipped(c) if c[0] == "base-model" else c for c in games]):
            ranking = rank_systems(written, baseline="base-model", strong_weight=3)["systems"]
            for name, figures in systems.items():
                for key in ("score", "ci", "win_rate", "win_rate_ci", "comparisons"):
                    self.assertEqual(figures[key], ranking[name][key], (name, key))

    def test_report_over_records_written_either_way(self):
        rng = random.Random(9)
        games = [(a, b, rng.choice("AB") if k % 5 else "tie")
                 for k, (a, b) in enumerate([("base", "m"), ("base", "n"), ("m", "n")] * 12)]
        records = [{"a": a, "b": b, "v": v} for a, b, v in games]
        swapped = [{"a": a, "b": b, "v": v} for a, b, v in map(flipped, games)]
        _, first = self.layout_report(records, "--baseline", "base")
        _, second = self.layout_report(swapped, "--baseline", "base")
        self.assertEqual(first["systems"], second["systems"])
        api = rank_systems(games, baseline="base")["systems"]
        for name, figures in first["systems"].items():
            for key in ("score", "ci", "win_rate", "win_rate_ci", "lc_score"):
                self.assertEqual(figures[key], api[name][key], (name, key))



def solve(matrix, vector):
    """x with matrix x = vector, by Gaussian elimination with partial pivoting."""
    n = len(vector)
    rows = [list(row) + [v] for row, v in zip(matrix, vector)]
    for k in range(n):
        pivot = max(range(k, n), key=lambda r: abs(rows[r][k]))
        rows[k], rows[pivot] = rows[pivot], rows[k]
        for r in range(k + 1, n):
            factor = rows[r][k] / rows[k][k]
            for c in range(k, n + 1):
                rows[r][c] -= factor * rows[k][c]
    x = [0.0] * n
    for k in reversed(range(n)):
        x[k] = (rows[k][n] - sum(rows[k][c] * x[c] for c in range(k + 1, n))) / rows[k][k]
    return x


def dense_fit(games, baseline, length=False, steps=200):
    """The reference: Newton's method over a dense Hessian, step halved until the
    likelihood rises, on games (a, b, a's share, x, weight); the parameters are each system's
    log strength over the baseline's (and gamma last, if ``length``). {name: score} (and
    gamma), or None if it does not settle (separation: it runs off)."""
    names = sorted({n for g in games for n in g[:2]} - {baseline})
    index = {name: k for k, name in enumerate(names)}
    size = len(names) + length

    def terms(g):
        t = [0.0] * size
        if g[0] in index:
            t[index[g[0]]] += 1
        if g[1] in index:
            t[index[g[1]]] -= 1
        if length:
            t[-1] = g[3]
        return t

    rows = [(terms(g), g[2], g[4]) for g in games]

    def loglik(theta):
        total = 0.0
        for t, won, n in rows:
            z = sum(a * b for a, b in zip(t, theta))
            total += n * (won * -math.log1p(math.exp(-z)) + (1 - won) * -math.log1p(math.exp(z)))
        return total

    theta = [0.0] * size
    for _ in range(steps):
        gradient, hessian = [0.0] * size, [[0.0] * size for _ in range(size)]
        for t, won, n in rows:
            p = 1 / (1 + math.exp(-sum(a * b for a, b in zip(t, theta))))
            for i in range(size):
                gradient[i] += n * (won - p) * t[i]
                if t[i]:
                    for j in range(size):
                        hessian[i][j] += n * p * (1 - p) * t[i] * t[j]
        try:
            step = solve([[h + 1e-12 * (i == j) for j, h in enumerate(row)]
                          for i, row in enumerate(hessian)], gradient)
        except ZeroDivisionError:
            return None
        if max(map(abs, theta)) > 50:
            return None
        before, scale = loglik(theta), 1.0
        while scale > 1e-6 and loglik([a + scale * b for a, b in zip(theta, step)]) < before:
            scale /= 2
        theta = [a + scale * b for a, b in zip(theta, step)]
        if max(map(abs, step)) < 1e-10:
            scores = {name: 1000 + 400 * theta[index[name]] / math.log(10) for name in names}
            scores[baseline] = 1000.0
            return (scores, theta[-1]) if length else scores
    return None


def normalised(games, strong_weight=1):
    """rank_systems' (a, b, outcome[, gap]) as (a, b, share, gap, weight)."""
    shares = {"A": 1.0, "B": 0.0, "tie": 0.5, "A>>B": 1.0, "A>B": 1.0, "A=B": 0.5,
              "B>A": 0.0, "B>>A": 0.0}
    out = []
    for g in games:
        outcome = g[2]
        share = shares[outcome] if isinstance(outcome, str) else float(outcome)
        weight = strong_weight if isinstance(outcome, str) and ">>" in outcome else 1
        out.append((g[0], g[1], share, g[3] if len(g) > 3 else 0, weight))
    return out


def with_ties(games, ranking):
    """``games`` with the tie a pair the ranking added where its group's ties_added says."""
    added = {s for c in ranking["components"] if c["ties_added"] for s in c["systems"]}
    pairs = sorted({tuple(sorted(g[:2])) for g in games if g[0] in added})
    return list(games) + [(a, b, 0.5, 0, 1) for a, b in pairs]


class AtTheMaximum(unittest.TestCase):
    """Hostile layouts: each group's scores where the likelihood's gradient is 0 (expected
    wins equal the wins), the dense reference's to 0.01 where it is small enough, each
    interval holding its score, and the length-controlled fit the reference's or none."""

    def check(self, games, strong_weight=1, dense=True, **options):
        ranking = rank_systems(games, strong_weight=strong_weight, **options)
        systems = ranking["systems"]
        fitted = with_ties(normalised(games, strong_weight), ranking)
        for component in ranking["components"]:
            names = set(component["systems"])
            part = [g for g in fitted if g[0] in names]
            self.assert_gradient_zero(part, systems)
            if dense:
                reference = dense_fit(part, component["baseline"])
                for name in names:
                    self.assertAlmostEqual(systems[name]["score"], reference[name], delta=0.011)
            for name in names:
                ci = systems[name]["ci"]
                if ci is not None:
                    self.assertLessEqual(ci[0], systems[name]["score"], name)
                    self.assertLessEqual(systems[name]["score"], ci[1], name)
            if dense:
                self.check_length(part, component, systems)
        return ranking

    def assert_gradient_zero(self, part, systems):
        won, expected, played = {}, {}, {}
        for a, b, share, _, n in part:
            p = 1 / (1 + 10 ** ((systems[b]["score"] - systems[a]["score"]) / 400))
            for name, w, e in ((a, share * n, p * n), (b, (1 - share) * n, (1 - p) * n)):
                won[name] = won.get(name, 0) + w
                expected[name] = expected.get(name, 0) + e
                played[name] = played.get(name, 0) + n
        for name in won:  # a score rounded to 0.01 moves each p by at most 1.5e-5
            self.assertAlmostEqual(won[name], expected[name], delta=3e-5 * played[name] + 1e-9,
                                   msg=name)

    def check_length(self, part, component, systems):
        gaps = [float(g[3]) for g in part]  # over the largest (1e300 too); one gap: itself
        top = max(map(abs, gaps)) or 1.0  # Python 3.8's pstdev overflows on 1e300
        sd = statistics.pstdev([gap / top for gap in gaps]) * top or top
        xs = [(a, b, s, math.tanh(gap / sd), w) for a, b, s, gap, w in part]
        if not any(x[3] for x in xs):
            for name in component["systems"]:
                self.assertEqual(systems[name]["lc_score"], systems[name]["score"])
            return
        reference = dense_fit(xs, component["baseline"], length=True)
        if component["length_coefficient"] is None:
            self.assertIn("lc_unfitted", component)
            self.assertIsNone(reference, component["lc_unfitted"])
            return
        self.assertIsNotNone(reference, component)
        scores, gamma = reference
        self.assertAlmostEqual(component["length_coefficient"], gamma, delta=1e-4)
        for name in component["systems"]:
            self.assertAlmostEqual(systems[name]["lc_score"], scores[name], delta=0.011)

    def test_separation_one_always_wins_one_always_loses(self):
        games = ([("top", "m", "A")] * 5 + [("m", "top", "B")] * 3 + [("m", "n", "A"),
                 ("n", "m", "A"), ("m", "n", "tie"), ("bottom", "n", "B"), ("n", "bottom", "A")])
        ranking = self.check(games)
        self.assertTrue(ranking["ties_added"])

    def test_disconnected_groups(self):
        games = [("a", "b", "A"), ("b", "a", "A"), ("a", "b", "B"), ("c", "d", "A"),
                 ("d", "c", "tie"), ("c", "d", "B"), ("e", "f", "A")]
        ranking = self.check(games)
        self.assertEqual(len(ranking["components"]), 3)

    def test_a_chain_of_80(self):  # conjugate gradients' slowest shape; 200 holds too
        rng = random.Random(1)
        games = []
        for k in range(79):
            a, b = "s%03d" % k, "s%03d" % (k + 1)
            games += [(a, b, rng.choice(["A", "A", "B", "tie"])) for _ in range(4)]
        self.check(games, dense=False, resamples=100)

    def test_a_star_of_300(self):
        rng = random.Random(2)
        games = [(("hub", "s%03d" % k)[::rng.choice([1, -1])] + (rng.choice("AB"),))
                 for k in range(300) for _ in range(3)]
        self.check(games, dense=False, resamples=100)

    def test_all_ties(self):
        games = [("a", "b", "tie"), ("b", "c", "tie"), ("c", "a", "A=B")] * 2
        ranking = self.check(games)
        self.assertEqual({s["score"] for s in ranking["systems"].values()}, {1000.0})

    def test_one_comparison(self):
        for outcome in ("A", "B", "tie", "A>>B"):
            self.check([("x", "y", outcome)], strong_weight=3)

    def test_duplicates_and_fractions(self):
        games = [("a", "b", 0.3)] * 7 + [("b", "c", 0.9), ("c", "a", 0.25), ("a", "c", 1),
                                          ("c", "b", 0.5), ("b", "a", 0.01)] * 3
        self.check(games)

    def test_strong_weight_at_the_max(self):
        games = [("a", "b", "A>>B"), ("b", "a", "A>B"), ("a", "c", "B>>A"), ("c", "b", "A=B"),
                 ("b", "c", "B>A"), ("a", "b", "B>A"), ("c", "a", "A>>B")]
        self.check(games, strong_weight=1000)

    def test_length_gaps(self):
        rng = random.Random(4)
        names = ["a", "b", "c", "d"]
        base = [tuple(rng.sample(names, 2)) + (rng.choice(["A", "B", "tie"]),)
                for _ in range(40)]
        for gap in (lambda: rng.uniform(-1e300, 1e300), lambda: rng.uniform(-50, 50),
                    lambda: -rng.randrange(1, 5), lambda: 0, lambda: 1e-300):
            self.check([g + (gap(),) for g in base], resamples=100)

    def test_length_separates_the_wins(self):  # the longer always wins: gamma runs off
        rng = random.Random(12)
        games = []
        for _ in range(30):
            a, b = rng.sample(["a", "b", "c", "d"], 2)
            gap = rng.choice([-1, 1]) * rng.randrange(1, 400)
            games.append((a, b, "A" if gap > 0 else "B", gap))
        ranking = self.check(games, resamples=100)
        self.assertIn("separation", ranking["components"][0]["lc_unfitted"])

    def test_length_nearly_separates_the_wins(self):  # one upset: a finite fit
        rng = random.Random(13)
        games = []
        for k in range(40):
            a, b = rng.sample(["a", "b", "c", "d"], 2)
            gap = rng.choice([-1, 1]) * rng.randrange(1, 400)
            games.append((a, b, "A" if (gap > 0) != (k % 9 == 0) else "B", gap))
        ranking = self.check(games, resamples=100)
        self.assertIsNotNone(ranking["length_coefficient"])

    def test_gaps_of_each_systems_own_length(self):  # collinear: no fit, said so
        lengths = {"a": 100, "b": 250, "c": 40, "d": 1e6}
        rng = random.Random(14)
        games = [(a, b, rng.choice("AB"), lengths[a] - lengths[b])
                 for a, b in (rng.sample(sorted(lengths), 2) for _ in range(30))]
        ranking = rank_systems(games, resamples=100)
        self.assertIn("collinear", ranking["components"][0]["lc_unfitted"])
        self.assertIsNone(ranking["systems"]["a"]["lc_score"])

    def test_names_like_our_keys(self):
        names = ["baseline", "systems", "ci", "__proto__", "score", "component", ""]
        rng = random.Random(6)
        games = [tuple(rng.sample(names[:-1], 2)) + (rng.choice("AB"),) for _ in range(60)]
        self.check(games, baseline="systems")

    def test_a_sparse_arena_of_150(self):  # 1,000 holds too: bench_ranking's to time
        rng = random.Random(7)
        names = ["m%04d" % k for k in range(150)]
        games = [(names[k], names[(k + rng.randrange(1, 150)) % 150], rng.choice("AB"))
                 for k in range(150) for _ in range(3)]
        self.check(games, dense=False, resamples=100)

    def test_a_dense_round_robin_of_60(self):
        rng = random.Random(8)
        names = ["r%02d" % k for k in range(60)]
        games = [(a, b, "A" if rng.random() < 1 / (1 + math.exp((i - j) / 20)) else "B")
                 for i, a in enumerate(names) for j, b in enumerate(names) if i < j]
        self.check(games, dense=False, resamples=100)


class EveryViewAgrees(CommandLineTestCase):
    """`report` over written records (a custom --layout) with a hostile ranking: the
    summary's figures are rank_systems', and the printed block and the page show them."""

    def test_separation_groups_and_names_like_our_keys(self):
        rng = random.Random(11)
        games = ([("baseline", "systems", "A")] * 4 + [("systems", "ci", "tie")] * 2
                 + [("ci", "baseline", rng.choice("AB")) for _ in range(9)]
                 + [("<b>all</b>", "group 1", "B"), ("group 1", "<b>all</b>", "A")]
                 + [("never lost", "ci", "A")] * 3)
        source = self.write_jsonl("games.jsonl", [{"a": a, "b": b, "v": v}
                                                  for a, b, v in games])
        code, out, err = self.subprocess(
            "report", "--summary", self.path("r.json"), "--max-error-rate", "1",
            "--layout", PAIR_LAYOUT, source, "--baseline", "systems",
            "--html", self.path("page.html"))
        self.assertEqual(code, 0, err)
        ranking = self.summary("r.json")["bradley_terry"]
        api = rank_systems(games, baseline="systems")
        self.assertEqual(ranking["systems"], api["systems"])
        self.assertEqual(ranking["components"], api["components"])
        self.assertEqual([c["ties_added"] for c in ranking["components"]], [True, True])
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        for name, figures in ranking["systems"].items():
            ci = "CI [{}, {}]".format(*figures["ci"]) if figures["ci"] else "CI none"
            line = "{} {} ({}), win rate against the baseline {}".format(
                name, figures["score"], ci, figures["win_rate"])
            self.assertIn(line, err)
            self.assertIn(html.escape(line, quote=False), page.replace("&#x27;", "'"))
            if figures["ci"]:
                self.assertTrue(figures["ci"][0] <= figures["score"] <= figures["ci"][1])


if __name__ == "__main__":
    unittest.main()
