"""Parser benchmark: time per reply of each parser over the real judge outputs.

    python tests/bench_parsers.py [--repo DIR ...]

Reads ../shared/data/judge-outputs (or MINIJUDGE_JUDGE_OUTPUTS): 3,675 rating replies
and 3,542 pairwise ones, many of them long chains of thought. Each repository given
(default: this one) is timed in turn, twice, in this process, so two versions of
minijudge.py can be compared on the same rows. A benchmark, not a test: it asserts nothing.

Earlier readings (docs/performance.md has the current ones, 2026-11-27: 0.09, 0.05 and
0.07 ms a reply): parse_rating took 0.18-0.19 ms on 24dbf1a, whose search tried every
place in a reply; parse_verdict 0.09 ms, its looks behind run at every place, not only
before a `[[`; on a slower day before, 0.38, 0.17 and 0.14 ms for parse_rating,
parse_verdict and parse_comparative.
"""

import argparse
import glob
import importlib.util
import json
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.environ.get("MINIJUDGE_JUDGE_OUTPUTS") or os.path.join(
    HERE, "..", "..", "shared", "data", "judge-outputs")


def load(repo, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(repo, "minijudge.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", nargs="+", default=[os.path.dirname(HERE)])
    args = parser.parse_args()
    rows = [json.loads(line) for path in sorted(glob.glob(os.path.join(DATA_DIR, "*.jsonl")))
            for line in open(path, encoding="utf-8") if line.strip()]
    if not rows:
        raise SystemExit("no judge outputs in " + DATA_DIR)
    ratings = [(r["raw"], tuple(r.get("scale") or (1, 10))) for r in rows if r["kind"] == "rating"]
    pairs = [r["raw"] for r in rows if r["kind"] == "pair"]
    modules = [load(repo, "minijudge_{}".format(n)) for n, repo in enumerate(args.repo)]
    for name, run, count in (
            ("parse_rating", lambda m: [m.parse_rating(t, scale=s) for t, s in ratings],
             len(ratings)),
            ("parse_verdict", lambda m: [m.parse_verdict(t) for t in pairs], len(pairs)),
            ("parse_comparative", lambda m: [m.parse_comparative(t) for t in pairs],
             len(pairs))):
        for _ in range(2):
            for repo, module in zip(args.repo, modules):
                started = time.perf_counter()
                run(module)
                spent = time.perf_counter() - started
                print("{:18} {:8.3f} ms a reply ({} replies, {:.2f} s)  {}".format(
                    name, spent * 1000 / count, count, spent, repo))


if __name__ == "__main__":
    main()
