"""Cache benchmark: memory and time to open a --cache of N replies, and to read one.

    python tests/bench_cache.py 1000000 3000000

Each size writes a cache file of N one-line replies in the system's temporary directory
(about 110 bytes a line; kept for the next run), opens it with minijudge's cache in a
fresh process, and prints the resident memory the open cache adds, the time to open it
and the time of one lookup. The index lives on disk (SQLite, under TMPDIR), so memory
should not grow with N: two sizes show it. A benchmark, not a test: it asserts nothing.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURE = """
import hashlib, resource, sys, time
sys.path.insert(0, {root!r})
import minijudge
n, path = {n}, {path!r}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
cache = minijudge._Cache(path)
opened = time.perf_counter() - started
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(0, n, max(1, n // 10000))]
started = time.perf_counter()
assert all(cache.get(key) for key in keys)
print(grown / 1024, opened, (time.perf_counter() - started) / len(keys))
"""


def cache_file(n):
    path = os.path.join(tempfile.gettempdir(), "minijudge-bench-cache-{}.jsonl".format(n))
    if not os.path.exists(path):
        with open(path + ".part", "w") as out:
            for i in range(n):
                key = hashlib.sha256(str(i).encode()).hexdigest()
                reply = {"content": "Rating: 4", "latency": 0.1, "attempts": 1}
                out.write(json.dumps({"key": key, "reply": reply}) + "\n")
        os.rename(path + ".part", path)
    return path


def main(sizes):
    figures = []
    for n in sizes:
        code = MEASURE.format(root=ROOT, n=n, path=cache_file(n))
        mb, opened, get = map(float, subprocess.check_output([sys.executable, "-c", code]).split())
        figures.append((n, mb))
        print("{:>10,} entries: +{:6.1f} MB resident, opened in {:5.1f} s, "
              "a lookup {:.0f} us".format(n, mb, opened, get * 1e6))
    if len(figures) >= 2:
        (n1, m1), (n2, m2) = figures[0], figures[-1]
        per = (m2 - m1) * 2**20 / (n2 - n1)
        fixed = m1 - per * n1 / 2**20
        print("about {:.0f} bytes per entry and {:.0f} MB fixed: 10,000,000 entries "
              "~ {:.0f} MB".format(per, fixed, fixed + per * 1e7 / 2**20))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000000, 3000000])
