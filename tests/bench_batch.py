"""Benchmark: --batch-export and --batch-import at scale, through the real command line.

    python tests/bench_batch.py                  # 100,000 and 1,000,000 records
    python tests/bench_batch.py --records 20000  # a quick look

For each size it writes N rating records, exports them (``--batch-export``, files of
50,000 lines), writes a batch output line for each request as an engine would (the reply
"Rating: [[4]]"), and imports them (``--batch-import`` of every part, ``-o /dev/null``).
It prints records/s and the peak resident memory (ru_maxrss) of each minijudge process:
both keep their index of keys on disk (SQLite), so memory should not grow with N, but for
the 16 bytes an import keeps a judged record for the summary's length figures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def minijudge(*argv):
    """(seconds, peak MiB) of one ``python -m minijudge`` process, run by a fresh parent
    whose ru_maxrss of children is that process's alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
    command = [sys.executable, "-m", "minijudge", "--judge-model", "judge-model", "-q"] + list(
        argv)
    parent = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
              "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
              "print(time.perf_counter() - t, "
              "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", parent] + command, cwd=REPO, env=env,
                         check=True, stdout=subprocess.PIPE).stdout.split()
    return float(out[0]), int(out[1]) / 1024


def bench(n, folder):
    data = os.path.join(folder, "data.jsonl")
    with open(data, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "question": "What is %d + %d?" % (i, i), "answer":
                                str(2 * i), "response": "It is %d." % (2 * i)}) + "\n")
    seconds, mib = minijudge("--batch-export", os.path.join(folder, "requests"), data,
                             "-o", os.devnull)
    print("{:>9,} records  export {:>8,.0f} records/s  {:6.1f} s  peak {:6.1f} MiB".format(
        n, n / seconds, seconds, mib))
    parts = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                   if p.startswith("requests."))
    outputs = []
    for number, part in enumerate(parts):
        outputs.append(os.path.join(folder, "results.%03d.jsonl" % number))
        with open(part) as f, open(outputs[-1], "w") as out:
            for line in f:
                key = json.loads(line)["custom_id"]
                out.write(json.dumps({"id": "batch_req_%s" % key[:24], "custom_id": key,
                                      "response": {"status_code": 200, "request_id": key[:32],
                                                   "body": {"object": "chat.completion",
                                                            "model": "judge-model", "choices": [
                                                                {"index": 0, "message": {
                                                                    "role": "assistant",
                                                                    "content": "Rating: [[4]]"},
                                                                 "finish_reason": "stop"}],
                                                            "usage": {"prompt_tokens": 120,
                                                                      "completion_tokens": 6,
                                                                      "total_tokens": 126}}},
                                      "error": None}) + "\n")
    imports = [x for path in outputs for x in ("--batch-import", path)]
    seconds, mib = minijudge(*imports, data, "-o", os.devnull)
    print("{:>9,} records  import {:>8,.0f} records/s  {:6.1f} s  peak {:6.1f} MiB  "
          "({} files)".format(n, n / seconds, seconds, mib, len(parts)))
    for path in parts + outputs + [data]:
        os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100000, 1000000])
    args = parser.parse_args()
    print("python", sys.version.split()[0], "on", os.cpu_count(), "cores")
    with tempfile.TemporaryDirectory() as folder:
        for n in sorted(args.records):
            bench(n, folder)


if __name__ == "__main__":
    main()
