"""Ranking benchmark: what the Bradley-Terry scores and their bootstrap cost, at arena scale
beside scikit-learn, and in the layouts of a run's end.

    python tests/bench_ranking.py [--systems 10 50 150 300] [--resamples 100] [--no-layouts]

At arena scale: N systems, 100 comparisons a system over pairs drawn at random (Chatbot
Arena's layout), outcomes drawn from known strengths, one in five a tie, a length gap each.
For each N, minijudge's full fit and length-controlled fit, and its time a bootstrap
resample (``_bt_intervals`` over --resamples, divided); beside it, scikit-learn's
LogisticRegression fitted as arena-hard-auto's and FastChat's ``compute_mle_elo`` do (wins
counted per ordered pair, a tie one each of two; a dense design of +ln 10 / -ln 10 rows, two
an ordered pair of systems, compared or not, weighted by the counts; no intercept, no
penalty, lbfgs, tol 1e-6; a resample is the comparisons drawn again with replacement,
counted and fitted), the design built with numpy rather than pandas' pivot tables and row
loops, which only makes it faster. Times are CPU time, the fastest of three runs (the
least disturbed on a busy machine), scikit-learn's BLAS held to one thread as minijudge
has one. The last two columns are the largest difference between the two full fits'
scores (Elo points, the first system 1000), scikit-learn at tol 1e-6 and converged (1e-10).
Where scikit-learn is not installed (it is dev-only, never needed by minijudge) each line
says so and minijudge's figures still print.

The layouts of a run's end: 5 systems in a round robin (100 comparisons a pair), 21 systems
each against one baseline (50 each), 22 systems in a round robin (10 a pair), 60 systems in
10,000 comparisons of pairs drawn at random; the fit, 1,000 bootstrap refits and the
length-controlled fit (wall time). A benchmark, not a test: it asserts nothing.

Earlier readings (docs/performance.md has the current ones): 100 refits of 60 systems in
10,000 comparisons took 15.9 s before the refits summed the comparisons by pair (7.8 s
after; 120 s for 1,000). Before each Newton step was solved by conjugate gradients over the
pairs (a dense system of every system before), a resample at arena scale took 1.1 ms at 10
systems, 17 ms at 50, 226 ms at 150 and 1,481 ms at 300 (CPU, 2026-11-29).
"""
import argparse
import contextlib
import math
import os
import random
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402


def comparisons(pairs, each, truth, rng):
    drawn = []
    for a, b in pairs:
        for _ in range(each):
            won = float(rng.random() < 1 / (1 + math.exp(truth[b] - truth[a])))
            drawn.append((a, b, won, rng.randint(-500, 500), 1))
    return drawn


def arena(systems, rng):
    """100 comparisons a system over random pairs: (names, comparisons)."""
    names = ["s%03d" % i for i in range(systems)]
    truth = {name: rng.gauss(0, 1) for name in names}
    compared = []
    for _ in range(100 * systems):
        a, b = rng.sample(names, 2)
        gap = rng.gauss(150 * (truth[a] - truth[b]), 300)
        if rng.random() < 0.2:
            won = 0.5
        else:
            z = truth[a] - truth[b] + 0.3 * math.tanh(gap / 300)
            won = float(rng.random() < 1 / (1 + math.exp(-z)))
        compared.append((a, b, won, gap, 1))
    return names, compared


class Reference:
    """scikit-learn's fit as arena-hard-auto's compute_mle_elo does it (see the docstring)."""

    def __init__(self, names, compared):
        import numpy as np
        self.np = np
        self.names = names
        index = {name: i for i, name in enumerate(names)}
        self.a = np.array([index[c[0]] for c in compared])
        self.b = np.array([index[c[1]] for c in compared])
        self.won = np.array([c[2] for c in compared])
        p = len(names)  # every ordered pair of systems, as arena-hard's pivot tables give
        self.first, self.second = np.nonzero(~np.eye(p, dtype=bool))

    def scores(self, rows=None, tol=1e-6):
        np = self.np
        from sklearn.linear_model import LogisticRegression
        if rows is None:
            rows = np.arange(len(self.a))
        p = len(self.names)
        wins = np.zeros((p, p))  # a's wins over b, twice (a tie: one each, as arena-hard)
        np.add.at(wins, (self.a[rows], self.b[rows]), 2 * self.won[rows])
        np.add.at(wins, (self.b[rows], self.a[rows]), 2 * (1 - self.won[rows]))
        first, second = self.first, self.second
        x = np.zeros((2 * len(first), p))
        ordered = np.arange(len(first))
        for half in (0, 1):  # two rows an ordered pair: a won (y 1), b won (y 0)
            x[2 * ordered + half, first] = math.log(10)
            x[2 * ordered + half, second] = -math.log(10)
        y = np.tile([1.0, 0.0], len(first))
        weights = np.column_stack((wins[first, second], wins[second, first])).ravel()
        with warnings.catch_warnings():  # penalty=None, deprecated in 1.8 for C=inf
            warnings.simplefilter("ignore", FutureWarning)
            fit = LogisticRegression(fit_intercept=False, penalty=None, tol=tol, max_iter=10000)
            fit.fit(x, y, sample_weight=weights)
        elo = 400 * fit.coef_[0] + 1000
        elo += 1000 - elo[0]  # the first system at 1000, as minijudge's baseline
        return dict(zip(self.names, elo))

    def per_resample(self, resamples, seed):
        """The fastest of three runs of ``resamples`` refits, divided (the comparisons drawn
        again with replacement, as arena-hard's bootstrap does)."""
        rng = self.np.random.default_rng(seed)
        runs = []
        for _ in range(3):
            started = time.process_time()
            for _ in range(resamples):
                self.scores(rng.integers(0, len(self.a), len(self.a)))
            runs.append((time.process_time() - started) / resamples)
        return min(runs)


def at_scale(systems, resamples):
    names, compared = arena(systems, random.Random(systems))
    started = time.process_time()
    strengths, _ = minijudge._bradley_terry(compared)
    fitted = time.process_time()
    minijudge._lc_scores(compared, names[0], strengths)
    controlled = time.process_time()
    runs = []
    for seed in range(3):  # the fastest of three runs: the least disturbed by other work
        began = time.process_time()
        minijudge._bt_intervals(compared, names[0], seed, resamples, start=strengths)
        runs.append((time.process_time() - began) / resamples)
    ours = minijudge._elo(strengths, names[0])
    pairs = len({tuple(sorted(c[:2])) for c in compared})
    line = "{:>7} {:>11} {:>6} {:>7.2f} {:>7.2f} {:>9.1f}".format(
        systems, len(compared), pairs, fitted - started, controlled - fitted,
        1000 * min(runs))
    try:
        reference = Reference(names, compared)
    except ImportError:
        return line + "   scikit-learn is not installed (pip install scikit-learn): skipped"
    each = reference.per_resample(max(1, resamples // 10), 0)
    differ = [max(abs(ours[name] - theirs[name]) for name in names)
              for theirs in (reference.scores(), reference.scores(tol=1e-10))]
    return line + " {:>9.1f} {:>7.1f}x {:>9.4f} {:>9.4f}".format(
        1000 * each, each / min(runs), *differ)


def layouts():
    rng = random.Random(0)
    names = ["s%02d" % i for i in range(60)]
    truth = {name: i * 0.1 for i, name in enumerate(names)}
    shapes = (
        ("5 systems, round robin", [(a, b) for i, a in enumerate(names[:5])
                                    for b in names[i + 1:5]], 100),
        ("21 systems against one", [(name, names[0]) for name in names[1:21]], 50),
        ("22 systems, round robin", [(a, b) for i, a in enumerate(names[:22])
                                     for b in names[i + 1:22]], 10),
        ("60 systems, random pairs", [tuple(random.Random(k).sample(names, 2))
                                      for k in range(10000)], 1))
    for label, pairs, each in shapes:
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, nargs="+", default=[10, 50, 150, 300])
    parser.add_argument("--resamples", type=int, default=100,
                        help="minijudge's resamples timed at each size (scikit-learn's: "
                             "a tenth of them, at least 1)")
    parser.add_argument("--no-layouts", action="store_true",
                        help="only the arena-scale table")
    options = parser.parse_args()
    print("random pairs, 100 comparisons a system. CPU seconds: minijudge's fit and "
          "length-controlled fit; CPU ms a bootstrap resample: minijudge's and scikit-learn's "
          "(one BLAS thread); the full fits' largest score difference, in Elo points, from "
          "scikit-learn at arena-hard's tol 1e-6 and converged (tol 1e-10)")
    print("{:>7} {:>11} {:>6} {:>7} {:>7} {:>9} {:>9} {:>8} {:>9} {:>9}".format(
        "systems", "comparisons", "pairs", "fit", "lc fit", "resample", "sklearn", "speedup",
        "diff 1e-6", "diff conv"))
    limits = contextlib.nullcontext()
    try:  # one thread for scikit-learn's BLAS (loaded first), as minijudge has one
        import sklearn.linear_model  # noqa: F401
        from threadpoolctl import threadpool_limits
        limits = threadpool_limits(1)
    except ImportError:
        pass
    with limits:
        for systems in options.systems:
            print(at_scale(systems, options.resamples), flush=True)
    if not options.no_layouts:
        print()
        layouts()


if __name__ == "__main__":
    main()
