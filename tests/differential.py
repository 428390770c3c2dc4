"""Compare what users see from two copies of minijudge.py: a refactoring's check.

    python tests/differential.py OLD/minijudge.py NEW/minijudge.py [-k NAME] [-v]

Each case runs the real command line (``python -m minijudge``, a subprocess with each
copy in turn) against the loopback stub, which answers from the prompt alone (the same
prompt gets the same reply, whichever copy asked). What is compared, case by case: the
exit code, stdout, stderr, every file the run wrote (records, --summary, --html, cache,
batch parts) and the requests on the wire (method, path, headers but Host, body), with
the run's own noise blanked first (timings, ports, the temporary folder, reply ids).
It prints one line a case and exits 1 if any differs; -v shows the first differences.
Not a unittest: it takes two files and runs for a while (about a minute).
"""
import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from stub import StubServer, chat, error  # noqa: E402

CRITERIA = {"name": "helpfulness", "description": "Does the response help the user?",
            "options": {"Bad": 0.0, "Acceptable": 0.5, "Excellent": 1.0}}
JUDGES = [{"name": "a", "mode": "rating"}, {"name": "b", "mode": "rating",
                                             "options": {"temperature": 0.5}}]
PAIR_JUDGES = [{"name": "a", "mode": "pairwise"}, {"name": "b", "mode": "pairwise",
                                                   "options": {"seed": 3}}]


def _records():
    rows = []
    for i in range(12):
        rows.append({"id": i, "question": "q{} what is {} + {}?".format(i, i, i),
                     "answer": str(2 * i), "response": "it is {}".format(2 * i + i % 3),
                     "response_a": "A says {}".format(i), "response_b": "B says {}".format(i % 4),
                     "responses": {"x": "x{}".format(i), "y": "y{}".format(i % 5),
                                   "z": "z"},
                     "human": [1, 2, 3, 4, 5][i % 5], "topic": "t{}".format(i % 3)})
    rows.insert(5, "not a record")
    return rows


def _reply_for(prompt, body):
    """The stub's answer: a function of the prompt only."""
    h = int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16)
    if "[[A]]" in prompt or "Assistant A" in prompt:
        return ["[[A]]", "[[B]]", "[[C]]", "no verdict"][h % 4]
    if "Criterion" in prompt or "Options" in prompt or "option" in prompt.lower():
        return ["Excellent", "Bad", "Acceptable", "Excellent\nor Bad", "none"][h % 5]
    if "yes" in prompt and "no" in prompt:
        return ["yes", "no", "maybe"][h % 3]
    if "JSON" in prompt or "json" in prompt:
        return json.dumps({"correctness": h % 11, "relevance": (h >> 4) % 11,
                           "score": h % 11, "reasoning": "r"})
    return ["Rating: [[{}]]".format(1 + h % 5), "Rating: {}".format(1 + (h >> 3) % 5),
            "I cannot rate this", "[[7]]"][(h >> 8) % 4]


def _responder(request):
    body = request.json if isinstance(request.json, dict) else {}
    prompt = json.dumps(body.get("messages"), sort_keys=True)
    if "boom" in prompt:
        return error(500, "the judge fell over")
    return chat(_reply_for(prompt, body))


def _cases():
    """(name, argv, reruns: more argv lists run after it in the same folder)."""
    qa = "qa.jsonl"  # each case runs in its own folder
    base = ["--judge-url", "{url}", "--max-retries", "0", qa]
    cases = [
        ("rating", base, []),
        ("rating-ref-summary-html", base + ["--summary", "s.json", "--html", "p.html"], []),
        ("rating-noref", ["--reference-field", "nothere"] + base, []),
        ("save-prompts-system", base + ["--save-prompts", "--system", "be fair"], []),
        ("binary", base + ["--mode", "binary"], []),
        ("binary-01", base + ["--mode", "binary", "--binary-format", "01"], []),
        ("math", base + ["--mode", "math"], []),
        ("rubric", base + ["--mode", "rubric"], []),
        ("criterion", base + ["--criteria", "crit.json"], []),
        ("criterion-assess", base + ["--criteria", "crit.json", "--assess"], []),
        ("criterion-position", base + ["--criteria", "crit.json", "--check-position"], []),
        ("pairwise", base + ["--mode", "pairwise"], []),
        ("pairwise-single", base + ["--mode", "pairwise", "--single-order"], []),
        ("systems", base + ["--mode", "systems", "--html", "p.html", "--summary", "s.json"], []),
        ("jury-mean", base + ["--judges", "judges.json", "--jury", "mean"], []),
        ("jury-majority", base + ["--judges", "judges.json", "--jury", "majority"], []),
        ("panel", base + ["--judges", "judges.json", "--summary", "s.json"], []),
        ("pair-jury", base + ["--judges", "pairs.json", "--jury", "mean"], []),
        ("repeats", base + ["--repeats", "3", "--seed", "7"], []),
        ("logprobs-structured", base + ["--logprobs", "--structured", "--max-tokens", "5"], []),
        ("human", base + ["--human-field", "human", "--summary", "s.json"], []),
        ("threshold", base + ["--pass-threshold", "0.5"], []),
        ("context", base + ["--context-field", "Topic=topic"], []),
        ("shard", base + ["--shard", "1/3", "-o", "out.jsonl"], []),
        ("strict", base + ["--strict"], []),
        ("error-rate", base + ["--max-error-rate", "0.9"], []),
        ("cache", base + ["--cache", "c.jsonl", "-o", "o1.jsonl"],
         [base + ["--cache", "c.jsonl", "-o", "o2.jsonl"]]),
        ("batch", base + ["--judge-model", "judge-model", "--batch-export", "req"], []),
        ("dry-run", base + ["--dry-run"], []),
        ("check", ["--judge-url", "{url}", "--check"], []),
        ("report", base + ["-o", "out.jsonl"], [["report", "out.jsonl", "--summary", "r.json"]]),
        ("template-file", base + ["--template", "t.txt", "--scale", "1,10"], []),
        ("extra-body-header", base + ["--extra-body", '{"top_k": 1}', "--header", "X-A: b"], []),
        ("fields", ["--question-field", "topic", "--response-field", "answer"] + base, []),
        ("bad-flag", base + ["--concurrency", "0"], []),
        ("bad-scale", base + ["--scale", "5,1"], []),
        ("bad-mode", base + ["--mode", "pairwise", "--template", "rating"], []),
        ("no-input", ["--judge-url", "{url}"], []),
        ("two-inputs", base + [qa], []),
        ("server-errors", ["--judge-url", "{url}", "--max-retries", "0",
                           "--question-field", "topic", "--system", "boom",
                           "--concurrency", "1", qa], []),
    ]
    return cases


_INPUTS = ("qa.jsonl", "crit.json", "judges.json", "pairs.json", "t.txt")


def _write_inputs(d):
    with open(os.path.join(d, "qa.jsonl"), "w") as f:
        for row in _records():
            f.write(json.dumps(row) + "\n")
    for name, obj in (("crit.json", CRITERIA), ("judges.json", JUDGES),
                      ("pairs.json", PAIR_JUDGES)):
        with open(os.path.join(d, name), "w") as f:
            json.dump(obj, f)
    with open(os.path.join(d, "t.txt"), "w") as f:
        f.write("Rate {response} for {question} from 1 to 10, as [[N]].")


_NOISE = [
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"chatcmpl-[0-9a-f]+"), "chatcmpl-ID"),
    (re.compile(r'"created": \d+'), '"created": 0'),
    (re.compile(r"\d+(\.\d+)? ?(s|ms|records/s|/s)\b"), "T s"),
    (re.compile(r"[0-9.]+ requests/s"), "R requests/s"),
    (re.compile(r'"(\w*(latency|seconds|per_second)\w*)": [0-9.e-]+'), r'"\1": T'),
    (re.compile(r"ETA [^,\n]*"), "ETA T"),
    (re.compile(r"\r[^\n]*"), ""),  # progress lines redrawn in place
]


def _clean(text, d):
    text = text.replace(d, "TMP")
    for pattern, blank in _NOISE:
        text = pattern.sub(blank, text)
    return text


def _run_case(module_dir, case, d_root):
    name, argv, reruns = case
    d = os.path.join(d_root, name)
    os.makedirs(d)
    _write_inputs(d)
    srv = StubServer(responder=_responder).start()
    outputs = []
    try:
        for each in [argv] + reruns:
            args = [a.replace("{url}", srv.url) for a in each]
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("LLM_JUDGE_", "OPENAI_"))}
            env["PYTHONPATH"] = module_dir
            proc = subprocess.run([sys.executable, "-m", "minijudge"] + args, cwd=d, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            outputs.append("exit {}\n--stdout\n{}\n--stderr\n{}".format(
                proc.returncode, proc.stdout.decode("utf-8", "replace"),
                proc.stderr.decode("utf-8", "replace")))
        requests = sorted("{} {} {}".format(r.method, r.path, json.dumps(
            r.json, sort_keys=True)) + " " + json.dumps(sorted(
                (k, v) for k, v in r.headers.items() if k not in ("host", "content-length")))
            for r in srv.requests)
    finally:
        srv.stop()
    files = []
    for fname in sorted(set(os.listdir(d)) - set(_INPUTS)):
        with open(os.path.join(d, fname), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        if fname.startswith(("c.", "req.")):  # the cache and batch parts: in reply order
            text = "\n".join(sorted(text.splitlines()))
        files.append("== {}\n{}".format(fname, text))
    text = "\n".join(outputs + ["--requests"] + requests + files)
    return _clean(text, d)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("-k", help="only the cases whose name contains this")
    parser.add_argument("-v", action="store_true", help="show the first differences")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="mj-diff-")
    dirs = []
    for tag, path in (("old", args.old), ("new", args.new)):
        dirs.append(os.path.join(root, tag + "-module"))
        os.makedirs(dirs[-1])
        shutil.copy(path, os.path.join(dirs[-1], "minijudge.py"))
    differ = 0
    for case in _cases():
        if args.k and args.k not in case[0]:
            continue
        seen = []
        for tag, module_dir in zip(("old", "new"), dirs):
            seen.append(_run_case(module_dir, case, os.path.join(root, tag)))
        same = seen[0] == seen[1]
        differ += not same
        print("{:28} {}".format(case[0], "same" if same else "DIFFERS"))
        if not same and args.v:
            diff = difflib.unified_diff(seen[0].splitlines(), seen[1].splitlines(),
                                        "old", "new", lineterm="", n=1)
            print("\n".join(list(diff)[:40]))
    shutil.rmtree(root, ignore_errors=True)
    print("{} of the cases differ".format(differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
