"""Rankings at arena scale, through the real command line against the loopback stub:
comparisons spread over random pairs of many systems (Chatbot Arena's layout) are ranked
at the likelihood's maximum, with intervals that hold their scores.

A run judges 2,400 pairs of 120 systems (the stub's responder reads which answer wins),
then `report` ranks its output again with 100 bootstrap resamples. How long that takes is
tests/bench_ranking.py's to measure (the fit and each resample grow with the pairs
compared, not the cube of the systems), not a test's: a timed test fails on a busy machine.
"""
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402
from test_ranking import pair, prefer_marked  # noqa: E402

SYSTEMS, RECORDS = 120, 2400


def arena_records(seed=46):
    """Random pairs of SYSTEMS systems, each won as hidden strengths say (logistic)."""
    rng = random.Random(seed)
    names = ["m%03d" % i for i in range(SYSTEMS)]
    strength = {name: rng.gauss(0, 1) for name in names}
    records = []
    for k in range(RECORDS):
        a, b = rng.sample(names, 2)
        p = 1 / (1 + math.exp(strength[b] - strength[a]))
        records.append(pair(k, a, b, a if rng.random() < p else b))
    return records


class ArenaScaleTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = prefer_marked

    def test_random_pairs_of_many_systems_rank_at_the_maximum(self):
        records = arena_records()
        data = self.write_jsonl("in.jsonl", records)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                 "--mode", "pairwise", data, "-o", self.path("out.jsonl"),
                                 "--bootstrap-samples", "100"])
        self.assertEqual(code, 0, err)
        code, _, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                 self.path("r.json"), "--bootstrap-samples", "100"])
        self.assertEqual(code, 0, err)
        with open(self.path("r.json"), encoding="utf-8") as f:
            ranking = json.load(f)["bradley_terry"]
        systems = ranking["systems"]
        self.assertEqual(len(systems), SYSTEMS)
        self.assertEqual(ranking["comparisons"], RECORDS)
        # the maximum: each system's expected points at the scores are the points it won
        # (a tie more in each pair compared, had any system never lost or never won)
        expected, won = dict.fromkeys(systems, 0.0), dict.fromkeys(systems, 0.0)
        compared = [(r["model_a"], r["model_b"], r["response_a"].startswith("win"))
                    for r in records]
        if ranking["ties_added"]:
            compared += [(a, b, 0.5) for a, b in {tuple(sorted(c[:2])) for c in compared}]
        for a, b, a_won in compared:
            p = 1 / (1 + 10 ** ((systems[b]["score"] - systems[a]["score"]) / 400))
            expected[a], expected[b] = expected[a] + p, expected[b] + 1 - p
            won[a], won[b] = won[a] + float(a_won), won[b] + 1 - float(a_won)
        for name in systems:  # scores to 0.01: at most ~1e-3 of a win off, summed
            self.assertAlmostEqual(expected[name], won[name], delta=0.02, msg=name)
        with_interval = [s for s in systems.values() if s["ci"]]
        self.assertGreater(len(with_interval), SYSTEMS * 0.9)
        for figures in with_interval:
            low, high = figures["ci"]
            self.assertTrue(low <= figures["score"] <= high, figures)


if __name__ == "__main__":
    import unittest
    unittest.main()
