"""Dev-only (needs Ray; .ci/run runs it where `pip install ray` works): judge 10,000
records on a real local Ray cluster with 4 workers, as examples/ray_judge.py
(docs/batch-and-ray.md's example) does, against a stub server process, merge the
workers' shards with `python -m minijudge report`, and check the same records and
summary as a single-process `python -m minijudge` run of the same file.

    python tests/ray_check.py [--records 10000]

Exit 0 when they agree (or Ray cannot be imported: one line says so), 1 when not.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# the stub in its own process: replies read from the item (a rating, an unreadable reply
# now and then), so that the order requests arrive in does not change them
_STUB = """
import re, sys, time
sys.path.insert(0, sys.argv[1])
import stub

def reply(request):
    n = int(re.search(r"question number (\\d+)", str(request.json["messages"])).group(1))
    if n % 97 == 0:
        return "I cannot rate this."
    return "Rating: {}".format(n % 5 + 1)

srv = stub.StubServer(responder=reply).start()
print(srv.url, flush=True)
sys.stdin.read()  # until the check ends
"""

# figures a run knows that its records do not hold (the server, latency, requests, how
# its requests were held by rate limits), and the clock's: report gives them as unknown
_RUN_ONLY = ("fields", "judge_url", "latency_max", "latency_mean", "parameters", "requests",
             "requests_per_second", "servers", "wall_seconds", "records_per_second", "elapsed",
             "latency", "limits")


def write_input(path, count):
    with open(path, "w", encoding="utf-8") as f:
        for n in range(1, count + 1):
            response = "answer {}".format(n)
            if n % 89 == 0:
                response = ""  # empty_response: scored without a request
            f.write(json.dumps({"id": n, "question": "question number {}?".format(n),
                                "response": response}) + "\n")


def minijudge(*argv):
    """Seconds a ``python -m minijudge`` run took; its errors shown (exit 2: a usage error)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "minijudge"] + list(argv), cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        print(done.stderr.strip().splitlines()[-1])
    return time.monotonic() - started


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def records_of(paths):
    """Every record of the files, by its input line."""
    records = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for text in f:
                record = json.loads(text)
                records[record["judge_line"]] = record
    return records


def figures(summary):
    return {k: v for k, v in summary.items() if k not in _RUN_ONLY}


def check(folder, url, count):
    """What differs between the single-process run and the Ray run (empty: nothing)."""
    data = os.path.join(folder, "in.jsonl")
    write_input(data, count)
    single, shards = os.path.join(folder, "single.jsonl"), os.path.join(folder, "shards")
    took = minijudge("--judge-url", url, "--max-error-rate", "1", "-o", single,
                     "--summary", os.path.join(folder, "single.json"), data)
    print("single process: {} records in {:.1f} s".format(count, took))
    started = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ray_judge.py"), data,
                    shards, "--judge-url", url, "--workers", "4"], check=True)
    print("ray, 4 workers: {} records in {:.1f} s (the cluster's start included)".format(
        count, time.monotonic() - started))
    parts = sorted(glob.glob(os.path.join(shards, "*.jsonl")))
    minijudge("report", *parts, "--max-error-rate", "1",
              "--summary", os.path.join(folder, "ray.json"))
    problems = []
    if not os.path.exists(os.path.join(folder, "ray.json")):
        return ["report wrote no summary of the shards"]
    if records_of([single]) != records_of(parts):
        problems.append("the records differ")
    ran, merged = read_json(os.path.join(folder, "single.json")), read_json(
        os.path.join(folder, "ray.json"))
    for name in sorted(set(figures(ran)) | set(figures(merged))):
        if ran.get(name) != merged.get(name):
            problems.append("summary {}: {!r} single, {!r} ray".format(
                name, ran.get(name), merged.get(name)))
    print("{} shards; {} records; statuses {}".format(len(parts), merged["records"],
                                                      merged.get("statuses")))
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10000)
    args = parser.parse_args()
    try:
        import ray.data  # noqa: F401
    except ImportError as exc:
        print("ray_check: skipped: ray cannot be imported here ({})".format(exc))
        return 0
    started = time.monotonic()
    stub = subprocess.Popen([sys.executable, "-c", _STUB, HERE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        url = stub.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as folder:
            problems = check(folder, url, args.records)
    finally:
        stub.stdin.close()
        stub.wait(10)
    for problem in problems:
        print("ray_check: FAIL: " + problem)
    print("ray_check: {} in {:.1f} s".format("FAIL" if problems else "ok",
                                             time.monotonic() - started))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
