"""Ranking benchmark: what the Bradley-Terry scores and their bootstrap cost at the end of
a run, for three layouts of comparisons.

    python tests/bench_ranking.py

5 systems in a round robin (100 comparisons a pair), 21 systems each against one
baseline (50 each), 22 systems in a round robin (10 a pair), 60 systems in 10,000
comparisons of pairs drawn at random (a leaderboard's report); outcomes drawn from known
strengths. Times the fit, the 1,000 bootstrap refits and the length-controlled fit. A
benchmark, not a test: it asserts nothing.

Earlier readings (docs/performance.md has the current ones): 100 refits of 60 systems in
10,000 comparisons took 15.9 s before the refits summed the comparisons by pair (7.8 s
after).
"""
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402


def comparisons(pairs, each, truth, rng):
    drawn = []
    for a, b in pairs:
        for _ in range(each):
            won = float(rng.random() < 1 / (1 + math.exp(truth[b] - truth[a])))
            drawn.append((a, b, won, rng.randint(-500, 500), 1))
    return drawn


def main():
    rng = random.Random(0)
    names = ["s%02d" % i for i in range(60)]
    truth = {name: i * 0.1 for i, name in enumerate(names)}
    layouts = (
        ("5 systems, round robin", [(a, b) for i, a in enumerate(names[:5])
                                    for b in names[i + 1:5]], 100),
        ("21 systems against one", [(name, names[0]) for name in names[1:21]], 50),
        ("22 systems, round robin", [(a, b) for i, a in enumerate(names[:22])
                                     for b in names[i + 1:22]], 10),
        ("60 systems, random pairs", [tuple(random.Random(k).sample(names, 2))
                                      for k in range(10000)], 1))
    for label, pairs, each in layouts:
        compared = comparisons(pairs, each, truth, rng)
        started = time.perf_counter()
        strengths, _ = minijudge._bradley_terry(compared)
        fitted = time.perf_counter()
        minijudge._bt_intervals(compared, names[0], 0, start=strengths)
        booted = time.perf_counter()
        minijudge._lc_scores(compared, names[0], strengths)
        done = time.perf_counter()
        print("{}: {} comparisons; fit {:.2f} s, 1000 bootstrap refits {:.2f} s, "
              "length-controlled {:.2f} s".format(label, len(compared), fitted - started,
                                                   booted - fitted, done - booted))


if __name__ == "__main__":
    main()
