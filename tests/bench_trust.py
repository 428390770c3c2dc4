"""Trust-block benchmark: what the summary's panel and length figures cost at scale.

    python tests/bench_trust.py [--records 10000 100000 ...]

Builds a tally of N synthetic records the way a run does (_Tally.add): ratings with their
response lengths, pairwise verdicts with their length differences, a three-judge panel,
three repeats each, then times the figures the summary computes from them at the end of
a run, and the memory the tally holds. A benchmark, not a test: it asserts nothing.
"""

import argparse
import os
import random
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402


def tally(n, kind, rng):
    t = minijudge._Tally()
    for _ in range(n):
        if kind == "pairwise":
            d = rng.randint(-500, 500)
            won = rng.random() < (0.7 if d > 0 else 0.4)
            t.add(minijudge.Judgement(score=float(won), value="A" if won else "B"), None, d)
        else:
            scores = {name: rng.randint(0, 4) / 4 for name in ("a", "b", "c")}
            mean = sum(scores.values()) / 3
            t.add(minijudge.Judgement(score=mean, details={"panel": scores, "repeats": [
                mean, mean, rng.randint(0, 4) / 4]}), None, rng.randint(10, 3000))
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10000, 100000])
    args = parser.parse_args()
    rng = random.Random(0)
    for n in args.records:
        for kind, figures in (("rating", ("length", "panel")), ("pairwise", ("length",))):
            tracemalloc.start()
            t = tally(n, kind, rng)
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            times = []
            for figure in figures:
                started = time.perf_counter()
                if figure == "length":
                    minijudge._length_figures(t, kind)
                else:
                    minijudge._panel_figures(t, {"mode": kind, "jury": "mean"})
                times.append("{} {:.2f} s".format(figure, time.perf_counter() - started))
            print("{:>9,} {:8} records: tally holds {:.1f} MiB; {}".format(
                n, kind, held / 2 ** 20, ", ".join(times)))


if __name__ == "__main__":
    main()
