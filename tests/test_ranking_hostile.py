"""Issue 46, items 4 and 5, a hostile pass on the ranking's fit (conjugate-gradient Newton
steps over the compared pairs, warm-started resamples): the same games give the same
figures however each comparison is written, and hostile layouts (separation, disconnected
groups, chains, stars, all ties, duplicates, fractions, strong weights, odd length gaps,
names like our keys, sparse and dense arenas) end at the likelihood's maximum, with
intervals holding the score, through `report` over written records and `rank_systems`.
"""
import json
import math
import os
import random
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


if __name__ == "__main__":
    unittest.main()
