"""Compare what users see from two copies of minijudge.py: a refactoring's check.

    python tests/differential.py OLD NEW [-k NAME] [-v]

OLD and NEW are each a copy of minijudge.py (a path) or a commit of this repository
(`c84730d`, `main~3`, `HEAD`: its minijudge.py as git holds it, so a scratch copy
overwritten since cannot stand in for the commit named).

Each case runs the real command line (``python -m minijudge``, a subprocess with each
copy in turn) against the loopback stub, which answers from the prompt alone (the same
prompt gets the same reply, whichever copy asked). What is compared, case by case: the
exit code, stdout, stderr, every file the run wrote (records, --summary, --html, cache,
batch parts) and the requests on the wire (method, path, headers but Host, body), with
the run's own noise blanked first (timings, ports, the temporary folder, reply ids).
It prints one line a case and exits 1 if any differs; -v shows the first differences.
Not a unittest: it takes two files and runs for a while (about half a minute). The cases
cover every mode, conversations (OpenAI messages, MT-Bench turns), rankings and report of
them, groups, two replicas ({url2}), the cost cap and the dry run.
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
    conv = ["--judge-url", "{url}", "--max-retries", "0", "conv.jsonl"]
    mt = ["--judge-url", "{url}", "--max-retries", "0", "mtbench.jsonl"]
    pairs = ["--judge-url", "{url}", "--max-retries", "0", "--mode", "pairwise", "pairs.jsonl"]
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
        # conversations: OpenAI messages with tool calls and MT-Bench's turns, each turn
        ("conv-messages", conv + ["--summary", "s.json", "--html", "p.html"], []),
        ("conv-turn-1", conv + ["--turn", "1", "--max-turn-chars", "40"], []),
        ("conv-mtbench", mt + ["--reference-field", "reference"], []),
        ("conv-mtbench-turn-2", mt + ["--turn", "2", "--save-prompts"], []),
        ("conv-trajectory", conv + ["--mode", "trajectory"], []),
        ("conv-pairwise", mt + ["--mode", "pairwise", "--response-a-field", "answers_a",
                                "--response-b-field", "answers_b"], []),
        # rankings: systems and pairs, weights and baselines, and report of the run
        ("rank-systems", base + ["--mode", "systems", "--baseline", "y", "--strong-weight",
                                 "3", "--bootstrap-seed", "2", "--summary", "s.json",
                                 "-o", "out.jsonl"],
         [["report", "out.jsonl", "--summary", "r.json", "--html", "r.html"]]),
        ("rank-pairs", pairs + ["--summary", "s.json", "-o", "out.jsonl"],
         [["report", "out.jsonl", "--baseline", "m2", "--summary", "r.json"]]),
        ("rank-components", pairs + ["--summary", "s.json", "--group-by", "topic",
                                     "--html", "p.html"], []),
        # groups, replicas, cost
        ("groups", base + ["--group-by", "topic", "--human-field", "human",
                           "--summary", "s.json", "--html", "p.html"], []),
        ("replicas", ["--judge-url", "{url}", "--judge-url", "{url2}", "--max-retries", "0",
                      "--concurrency", "1",
                      "--summary", "s.json", qa], []),
        ("cost-cap", base + ["--price", "10,30", "--max-cost", "0.03", "--concurrency",
                             "1", "--summary", "s.json"], []),
        ("cost-dry-run", base + ["--price", "3,15", "--dry-run", "--judges", "judges.json"],
         []),
    ]
    return cases


_INPUTS = ("qa.jsonl", "crit.json", "judges.json", "pairs.json", "t.txt", "conv.jsonl",
           "mtbench.jsonl", "pairs.jsonl")


def _conversations():
    """OpenAI messages (a tool call, its result, a refusal, a bad one) and MT-Bench turns."""
    tool = {"id": "c1", "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"q": "x" * 60})}}
    conv = []
    for i in range(6):
        conv.append({"id": i, "topic": "t{}".format(i % 2), "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first question {}".format(i)},
            {"role": "assistant", "content": None, "tool_calls": [tool]},
            {"role": "tool", "tool_call_id": "c1", "content": "found {}".format(i)},
            {"role": "assistant", "content": "answer {} ".format(i) * (1 + i)},
            {"role": "user", "content": "second question {}".format(i)},
            {"role": "assistant", "content": None, "refusal": "I can't"}
            if i == 3 else {"role": "assistant", "content": "again {}".format(i)}]})
    conv.append({"id": 6, "messages": [{"role": "user", "content": "q"}]})
    conv.append({"id": 7, "messages": [{"role": "wizard", "content": "q"}]})
    mt = []
    for i in range(6):
        mt.append({"question_id": i, "turns": ["q1 {}".format(i), "q2 {}".format(i)],
                   "answers": ["a1 {}".format(i), None if i == 2 else "a2 {}".format(i)],
                   "answers_a": ["A1 {}".format(i), "A2 {}".format(i)],
                   "answers_b": ["B1 {}".format(i), "B2 {}".format(i % 2)],
                   "reference": ["r1 {}".format(i), "r2 {}".format(i)]})
    return conv, mt


def _pairs():
    """Pairwise records in two components (m1-m2, m3-m4) and one never-met system."""
    rows = []
    for i in range(16):
        a, b = (("m1", "m2"), ("m3", "m4"))[i % 2]
        rows.append({"id": i, "question": "p{}?".format(i), "topic": "g{}".format(i % 3),
                     "response_a": "{} says {}".format(a, "x" * (i % 5)),
                     "response_b": "{} says {}".format(b, i), "model_a": a, "model_b": b})
    return rows


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
    conv, mt = _conversations()
    for name, rows in (("conv.jsonl", conv), ("mtbench.jsonl", mt), ("pairs.jsonl", _pairs())):
        with open(os.path.join(d, name), "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)


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
    srv2 = StubServer(responder=_responder).start()  # a second replica, for {url2}
    outputs = []
    try:
        for each in [argv] + reruns:
            args = [a.replace("{url}", srv.url).replace("{url2}", srv2.url) for a in each]
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
            for r in srv.requests + srv2.requests)
    finally:
        srv.stop()
        srv2.stop()
    files = []
    for fname in sorted(set(os.listdir(d)) - set(_INPUTS)):
        with open(os.path.join(d, fname), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        if fname.startswith(("c.", "req.")):  # the cache and batch parts: in reply order
            text = "\n".join(sorted(text.splitlines()))
        files.append("== {}\n{}".format(fname, text))
    text = "\n".join(outputs + ["--requests"] + requests + files)
    return _clean(text, d)


def _place(given, target):
    """Copy ``given`` to ``target``: a file, else a commit's minijudge.py from git."""
    if os.path.isfile(given):
        shutil.copy(given, target)
        return
    shown = subprocess.run(["git", "-C", REPO, "show", given + ":minijudge.py"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if shown.returncode:
        sys.exit("differential.py: {} is no file and no commit of {}: {}".format(
            given, REPO, shown.stderr.decode(errors="replace").strip()))
    with open(target, "wb") as f:
        f.write(shown.stdout)


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
        _place(path, os.path.join(dirs[-1], "minijudge.py"))
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
