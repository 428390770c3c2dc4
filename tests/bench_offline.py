"""Benchmark: the offline paths beside their floor, a plain loop doing the same work.

    python tests/bench_offline.py                    # 100,000 records
    python tests/bench_offline.py --records 100000 1000000
    python tests/bench_offline.py --records 20000    # a quick look
    python tests/bench_offline.py --records 100000 --repeat 3   # steadier figures

Each record holds about 1 KB of prompt (a question and a response of ~500 characters each).
For each size it times three stages of `python -m minijudge`, each beside a plain loop
(in this file, run as its own process) that reads the same lines, fills the same template
with ``render()`` and writes the same lines with ``json.dumps``, byte for byte (the loop's
files are compared with minijudge's: "same bytes" is printed, or which differ):

  export  --batch-export REQ data.jsonl -o out: the batch input parts (50,000 lines each)
          and the records; the loop: json.loads, render("rating"), the request's sha256
          custom_id, the batch line and the record with the run's stamp (read from
          minijudge's first record) by json.dumps, two writes a record.
  import  --batch-import of every part's output, -o scored.jsonl; the loop: a dict of the
          replies by custom_id, then per record json.loads, render, sha256, the rating read
          from the reply, json.dumps of the scored record (its fields, the stamp).
  report  `minijudge report scored.jsonl`; the loop: json.loads of every line.

It prints each one's seconds, the ratio loop / minijudge (1.0: as fast as the loop; the
issue asks for 0.5 or more) and the peak resident memory (ru_maxrss) of each process,
measured by a fresh parent whose RUSAGE_CHILDREN is that process's alone. On a shared
host, wall time follows the neighbours' load; the CPU time (user + system) and its ratio,
printed beside, move far less, but still by a third from one run to the next on a busy
2-core VM: ``--repeat N`` runs each stage N times, the two sides alternated, and shows
each side's least CPU time (with that run's seconds) and largest memory. A benchmark,
not a test: it asserts nothing and is not collected by unittest.

Until 2026-11-27 the loops wrote less than minijudge: the records with three of its fields
and no stamp (1,161 bytes a scored record where minijudge writes 1,910), one batch file.

Earlier readings (docs/performance.md has the current ones). Ratio loop / minijudge, with
the CPU seconds (minijudge's; the loop's) and peak RSS where measured; the commit each
was measured on, in the order they were kept (roughly newest first):

| records | export | import | report |
|---|---|---|---|
| 1,000,000 report, 3 rounds alternated by hand (777a459) | | | 0.75, 0.83, 0.79 (12.3-13.2 s; 9.2-10.9 s) |
| 100,000 / 1,000,000 (d6a3488: the export's readings, before report's rows; least of 3 / one round) | 0.85 / 0.93 | 0.75 / 0.88 | 0.66 / 0.65 (4 more rounds at 1,000,000 by hand: 0.60-0.65) |
| 1,000,000 (e7dd746, least of 2 rounds) | 0.95 (53.7 s; 50.8 s) | 0.86 (51.3 s; 44.0 s) | 0.64 (14.1 s; 9.1 s) |
| 100,000 / 1,000,000 at that session's start (5fd0d5c; least of 2 / one round) | 0.61 / 0.65 | 0.77 / 0.73 | 0.84 / 0.59 |
| 100,000 (c50945f, 2026-11-27, least of 3 rounds, the test suite running beside) | 0.59 (19.2 s CPU; the loop 11.3 s), 30 MiB | 0.68 (13.5 s; 9.2 s), 35 MiB (108) | 0.57 (3.1 s; 1.7 s), 21 MiB |
| 1,000,000 (c50945f, least of 2 rounds) | 0.48 (194.7 s; 94.3 s), 31 MiB | 0.65 (150.8 s; 97.6 s), 35 MiB (880) | 0.53 (35.0 s; 18.5 s), 30 MiB |
| 100,000 (0e7351f, least of 3 rounds) | 0.55 (17.1 s CPU; the loop 9.5 s), 30 MiB | 0.60 (12.2 s; 7.4 s), 35 MiB (the loop's dict of replies: 108) | 0.52 (2.4 s; 1.3 s), 21 MiB |
| 1,000,000 (0e7351f, one round) | 0.69 (171.7 s; 119.0 s), 31 MiB | 0.66 (143.8 s; 95.0 s), 35 MiB (880) | 0.42 (39.4 s; 16.6 s), 30 MiB |
| 1,000,000 report, 3 rounds alternated by hand (d7922c5) | | | 0.55 (28.6 s; 15.8 s), 30 MiB; the rounds alone 0.47, 0.70, 0.43 |
| 100,000 (b9a57e2, one round) | 0.59 (17.7 s) | 0.90 (15.0 s) | 0.44 (4.1 s) |
| 1,000,000 (b9a57e2, one round) | 0.67 (177.4 s) | 0.62 (157.4 s) | 0.50 (34.9 s) |
| 100,000 before that round (f3d8cdb, one round; the old loops, which wrote less) | 0.70 (17.2 s) | 0.29 (23.0 s) | 0.57 (4.4 s) |
| 100,000 / 1,000,000 earlier (f2aad00; the old loops) | 0.47 / 0.45 | 0.26 / 0.34 | 0.38 / 0.42 |

Until 9cc4756 the loops wrote less than minijudge (above), and one batch file; the issue
asks for "the same reading, templating and writing", so now they write the same files
(measured side by side at 100,000: the import loop's floor went from about 5.0 to 7.0 s of
CPU). Before the export's readings and report's rows landed (d6a3488, 777a459), export and
report sat at the line (0.42-0.70 a round on the slower VM of the day before). The VM itself
changes speed: in the session of 443397c the loops took 1.5 to 1.8 times less CPU than in
c50945f's (the export loop at 1,000,000: 51-68 s against 94-119 s), so compare ratios, not
seconds, across rows. On that slower VM (c50945f) a record took 0.17-0.19 ms of CPU to
export, 0.14-0.15 ms to import and 0.029-0.039 ms to report: ten million records, ~30, ~25
and ~6 minutes, where docs/performance.md's current figures give ~10, ~9 and ~2.
"""
import argparse
import filecmp
import hashlib
import json
import os
import py_compile
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "judge-model"
PARENT = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
          "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
          "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
          "print(time.perf_counter() - t, r.ru_maxrss, r.ru_utime + r.ru_stime)")


def measured(command):
    """(seconds, peak MiB, CPU seconds) of one process, run by a fresh parent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
    out = subprocess.run([sys.executable, "-c", PARENT] + command, cwd=REPO, env=env,
                         check=True, stdout=subprocess.PIPE).stdout.split()
    return float(out[0]), int(out[1]) / 1024, float(out[2])


def minijudge(*argv):
    return measured([sys.executable, "-m", "minijudge"] + list(argv))


def plain(*argv):
    return measured([sys.executable, os.path.abspath(__file__), "--plain"] + list(argv))


# -- The plain loops (run as `bench_offline.py --plain STAGE ...`) -----------------------


def request(render, record):
    """The batch request minijudge sends for a rating record, and its custom_id."""
    payload = {"model": MODEL, "messages": [{"role": "user", "content": render("rating",
                                                                             record)}],
               "temperature": 0.0, "max_tokens": 16, "stream": False}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return payload, hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def stamp_of(path):
    """The run's stamp on minijudge's first record (what the loop writes on each)."""
    with open(path) as f:
        return json.loads(f.readline())["judge_run"]


def plain_export(data, prefix, out_path, ours):
    """The batch parts (PREFIX.000.jsonl, ... of 50,000 lines) and the exported records."""
    from minijudge import render
    stamp = stamp_of(ours)
    parts, batch = [], None
    with open(data, "rb") as f, open(out_path, "w") as out:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            payload, key = request(render, record)
            if number % 50000 == 1:
                if batch:
                    batch.close()
                parts.append("%s.%03d.jsonl" % (prefix, len(parts)))
                batch = open(parts[-1], "w")
            batch.write(json.dumps({"custom_id": key, "method": "POST",
                                    "url": "/v1/chat/completions", "body": payload},
                                   ensure_ascii=False) + "\n")
            error = ("exported to %s as custom_id %s: run it in a batch, then import the "
                     "output with --batch-import" % (parts[-1], key))
            record.update(judge_score=0.0, judge_status="exported", judge_error=error,
                          judge_raw=None, judge_value=None, judge_finish_reason=None,
                          judge_usage=None, judge_model=None, judge_score_source=None,
                          judge_line=number, judge_run=stamp)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if batch:
        batch.close()


def plain_import(data, out_path, ours, *results):
    from minijudge import render
    stamp = stamp_of(ours)
    replies = {}
    for path in results:
        with open(path, "rb") as f:
            for line in f:
                entry = json.loads(line)
                body = entry["response"]["body"]
                choice = body["choices"][0]  # what a record's fields take of it, alone
                replies[entry["custom_id"]] = (choice["message"]["content"],
                                               choice["finish_reason"], body["usage"],
                                               body["model"])
    rating = re.compile(r"\[\[(\d)\]\]").search
    with open(data, "rb") as f, open(out_path, "w") as out:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            _, key = request(render, record)
            raw, finish_reason, usage, model = replies[key]
            value = int(rating(raw).group(1))
            record.update(judge_score=(value - 1) / 4, judge_status="ok", judge_error=None,
                          judge_raw=raw, judge_value=value, judge_finish_reason=finish_reason,
                          judge_usage=usage, judge_model=model, judge_score_source="text",
                          judge_line=number, judge_run=stamp)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def plain_report(scored):
    with open(scored, "rb") as f:
        for line in f:
            json.loads(line)


PLAIN = {"export": plain_export, "import": plain_import, "report": plain_report}


# -- The benchmark ---------------------------------------------------------------------


def write_data(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "question": "Question %d: " % i + "why? " * 100,
                                "response": "Answer %d: " % i + "because. " * 60}) + "\n")


def write_results(parts, folder):
    """A batch output line for each request of each part, as an engine would write it."""
    outputs = []
    for number, part in enumerate(parts):
        outputs.append(os.path.join(folder, "results.%03d.jsonl" % number))
        with open(part) as f, open(outputs[-1], "w") as out:
            for line in f:
                key = json.loads(line)["custom_id"]
                message = {"role": "assistant", "content": "Rating: [[4]]"}
                body = {"object": "chat.completion", "model": MODEL, "choices": [
                    {"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 6,
                              "total_tokens": 306}}
                out.write(json.dumps({"id": "batch_req_" + key[:24], "custom_id": key,
                                      "response": {"status_code": 200, "body": body},
                                      "error": None}) + "\n")
    return outputs


def show(n, stage, ours, floor, same):
    print("{:>9,}  {:<6}  minijudge {:6.1f} s ({:6.1f} CPU) {:5.0f} MiB   loop {:6.1f} s "
          "({:6.1f} CPU) {:5.0f} MiB   ratio {:.2f} (CPU {:.2f})  {}".format(
              n, stage, ours[0], ours[2], ours[1], floor[0], floor[2], floor[1],
              floor[0] / ours[0], floor[2] / ours[2], same).rstrip(), flush=True)


def same_bytes(pairs):
    """"same bytes" if each pair of files is alike, else which differ."""
    differ = [os.path.basename(a) for a, b in pairs if not filecmp.cmp(a, b, shallow=False)]
    if differ:
        return "DIFFER: " + ", ".join(differ)
    return "same bytes"


def aside(paths):
    """Move minijudge's files to ours.NAME, so the loop writes the same names."""
    moved = []
    for path in paths:
        moved.append(os.path.join(os.path.dirname(path), "ours." + os.path.basename(path)))
        os.replace(path, moved[-1])
    return moved


def export_round(data, folder):
    """One export by each side, from a folder without the last round's files."""
    for name in os.listdir(folder):
        if name.startswith(("requests.", "ours.", "out.")):
            os.remove(os.path.join(folder, name))
    prefix = os.path.join(folder, "requests")
    out = os.path.join(folder, "out.jsonl")
    ours = minijudge("--judge-model", MODEL, "-q", "--batch-export", prefix, data, "-o", out)
    parts = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                   if p.startswith("requests."))
    written = aside(parts + [out])
    floor = plain("export", data, prefix, out, written[-1])
    return ours, floor, same_bytes(zip(written, parts + [out]))


def import_round(data, folder):
    parts = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                   if p.startswith("requests."))
    results = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                     if p.startswith("results."))
    results = results or write_results(parts, folder)
    scored = os.path.join(folder, "scored.jsonl")
    imports = [x for path in results for x in ("--batch-import", path)]
    ours = minijudge("--judge-model", MODEL, "-q", *imports, data, "-o", scored)
    theirs = os.path.join(folder, "plain.scored.jsonl")
    floor = plain("import", data, theirs, scored, *results)
    return ours, floor, same_bytes([(scored, theirs)])


def report_round(data, folder):
    scored = os.path.join(folder, "scored.jsonl")
    return minijudge("report", "-q", scored), plain("report", scored), ""


def best(rounds):
    """Of several rounds' (ours, loop, same): each side's least CPU (and its seconds) and
    largest peak memory; what the rounds said of the bytes."""
    sides = []
    for side in (0, 1):
        runs = [r[side] for r in rounds]
        least = min(runs, key=lambda run: run[2])
        sides.append((least[0], max(run[1] for run in runs), least[2]))
    return sides[0], sides[1], " / ".join(sorted({r[2] for r in rounds}))


def bench(n, folder, repeat):
    data = os.path.join(folder, "data.jsonl")
    write_data(data, n)
    for stage, one_round in (("export", export_round), ("import", import_round),
                             ("report", report_round)):
        show(n, stage, *best([one_round(data, folder) for _ in range(repeat)]))
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))


def main():
    if sys.argv[1:2] == ["--plain"]:
        sys.path.insert(0, REPO)
        return PLAIN[sys.argv[2]](*sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[100000])
    parser.add_argument("--dir", help="where the files go (default: a temporary folder)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of each stage, the "
                        "two sides alternated; each side's least CPU time is shown")
    args = parser.parse_args()
    print("python", sys.version.split()[0], "on", os.cpu_count(), "cores;", REPO)
    # both sides import minijudge: compiled once here, as an installed module is, not in
    # every process (PYTHONDONTWRITEBYTECODE=1 made each compile it: 0.26 s and ~25 MiB)
    py_compile.compile(os.path.join(REPO, "minijudge.py"), doraise=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for n in sorted(args.records):
            bench(n, folder, args.repeat)


if __name__ == "__main__":
    main()
