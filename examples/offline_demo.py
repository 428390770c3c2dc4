"""Try minijudge without a model: a stub judge on 127.0.0.1, and the real CLI against it.

    python examples/offline_demo.py           # a 1-5 rating run over examples/qa.jsonl
    python examples/offline_demo.py --modes   # pairwise, systems, criteria, several judges
    python examples/offline_demo.py --mtbench # MT-Bench's second turns, in their context
    python examples/offline_demo.py --agents  # agent runs judged whole; pairs of conversations

THE STUB IS NOT A MODEL. It is a word-overlap heuristic that answers in the OpenAI
chat-completions format (with a short delay, like a small local model), so that you can
watch a whole run: progress, the scored records and the summary. Its ratings mean
nothing; point `--judge-url` at a real server (vLLM, llama.cpp, Ollama, ...) for that.
In pairwise prompts it always prefers the first answer, like a position-biased judge:
minijudge asks both orders and reports those verdicts as inconsistent ties.
"""

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DELAY = 0.15  # seconds per reply, like a small judge on a GPU


def heuristic_reply(prompt):
    """What the stub answers, by the kind of prompt (it is not a model)."""
    if "[The Start of the Agent's Run]" in prompt:
        return heuristic_run(prompt)
    if "Assistant A's Answer" in prompt:
        return "[[A]]"  # position bias, on purpose
    if "Assistant 1's Answer" in prompt:
        return "7 9\nAssistant 2 gives the fuller answer."
    if "Criterion:" in prompt:
        return ["Bad", "Acceptable", "Acceptable", "Excellent", "Excellent"][
            heuristic_rating(prompt) - 1]
    if '"correctness"' in prompt:
        rating = heuristic_rating(prompt)
        return json.dumps({"reasoning": "word overlap, not judgement", "correctness":
                           2 * rating, "relevance": 8})
    if "Reply with one word: yes" in prompt:
        return "yes" if heuristic_rating(prompt) >= 4 else "no"
    return str(heuristic_rating(prompt))


def heuristic_rating(prompt):
    """1-5 from how many of the reference answer's words the response repeats."""
    def section(name):
        match = re.search(r"\[{}\]\n(.*?)\n\[".format(re.escape(name)), prompt, re.S)
        return match.group(1) if match else ""
    words = lambda text: set(re.findall(r"[a-z0-9]+", text.lower())) - {"the", "a", "an", "is"}
    reference = words(section("Reference Answer"))
    response = words(section("The Start of the Response"))
    if not reference:
        return 3
    return 1 + round(4 * len(reference & response) / len(reference))


def heuristic_run(prompt):
    """yes if the tool results hold most words of the expected outcome (not a judgement)."""
    words = lambda text: set(re.findall(r"[a-z0-9]+", text.lower())) - {"the", "a", "at", "to"}
    match = re.search(r"\[Expected Outcome\]\n(.*?)\n\n", prompt, re.S)
    expected = words(match.group(1) if match else "")
    results = words(" ".join(re.findall(r"\[Tool result[^\]]*\]\n(.*?)(?:\n\n|\n\[The End)",
                                        prompt, re.S)))
    return "yes" if expected and len(expected & results) >= 0.75 * len(expected) else "no"


class StubJudge(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # GET /v1/models
        self.reply({"object": "list", "data": [{"id": "stub-heuristic-not-a-model"}]})

    def do_POST(self):  # POST /v1/chat/completions
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(DELAY)
        content = heuristic_reply(request["messages"][-1]["content"])
        self.reply({"id": "stub", "object": "chat.completion", "created": int(time.time()),
                    "model": "stub-heuristic-not-a-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": len(str(request).split()),
                              "completion_tokens": 1}})

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def modes(url):
    """Every judging mode over the example files, as you would run it."""
    status = 0
    for args in (["--mode", "pairwise", "pairs.jsonl"], ["--mode", "systems", "systems.jsonl"],
                 ["--criteria", "helpfulness.json", "qa.jsonl"],
                 ["--mode", "rubric", "--pass-threshold", "0.7", "qa.jsonl"],
                 ["--judges", "judges.json", "qa.jsonl"]):
        print("\n$ python -m minijudge --judge-url {} -o /dev/null {}".format(
            url, " ".join(args)), flush=True)
        status |= subprocess.call([sys.executable, os.path.join(HERE, "..", "minijudge.py"),
                                   "--judge-url", url, "-o", os.devnull] + args, cwd=HERE)
    return status


def mtbench(url):
    """MT-Bench's layout judged on its second turn, the first shown as the conversation so far."""
    args = ["--turn", "2", "-o", "mtbench_turn2.scored.jsonl", "mtbench_turn2.jsonl"]
    print("\n$ python -m minijudge --judge-url {} {}".format(url, " ".join(args)), flush=True)
    status = subprocess.call([sys.executable, os.path.join(HERE, "..", "minijudge.py"),
                              "--judge-url", url] + args, cwd=HERE)
    with open(os.path.join(HERE, "mtbench_turn2.scored.jsonl"), encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            print("  question {question_id:<4} turn {judge_turn}  score {judge_score:<5} "
                  "{judge_status}".format(**record))
    return status


def agents(url):
    """Agent runs judged whole (--mode trajectory), then two models' MT-Bench conversations
    compared on turn 2 (--mode pairwise, each side a list of replies)."""
    status = 0
    for args, shown in ((["--mode", "trajectory", "--reference-field", "answer",
                          "agent_runs.jsonl"], "run_id"),
                        (["--mode", "pairwise", "--reference-field", "reference", "--turn",
                          "2", "mtbench_pairs.jsonl"], "question_id")):
        output = os.path.join(HERE, "agents.scored.jsonl")
        print("\n$ python -m minijudge --judge-url {} -o agents.scored.jsonl {}".format(
            url, " ".join(args)), flush=True)
        status |= subprocess.call([sys.executable, os.path.join(HERE, "..", "minijudge.py"),
                                   "--judge-url", url, "-q", "-o", output] + args, cwd=HERE)
        with open(output, encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                print("  {:<16} turn {}  score {:<5} {}".format(
                    str(record[shown]), record.get("judge_turn"), record["judge_score"],
                    record["judge_status"]))
        os.remove(output)
    return status


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubJudge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:{}".format(server.server_port)
    if sys.argv[1:] == ["--modes"]:
        print("stub judge (a heuristic, NOT a model) at", url)
        return modes(url)
    if sys.argv[1:] == ["--agents"]:
        print("stub judge (a word-overlap heuristic, NOT a model) at", url)
        return agents(url)
    if sys.argv[1:] == ["--mtbench"]:
        print("stub judge (a word-overlap heuristic, NOT a model) at", url)
        return mtbench(url)
    output = os.path.join(HERE, "qa.scored.jsonl")
    command = [sys.executable, os.path.join(HERE, "..", "minijudge.py"), "--judge-url", url,
               "--concurrency", "4", "-o", output, os.path.join(HERE, "qa.jsonl")]
    print("stub judge (a word-overlap heuristic, NOT a model) at", url)
    print("$ python minijudge.py --judge-url {} --concurrency 4 -o {} {}\n".format(
        url, os.path.relpath(output), os.path.relpath(os.path.join(HERE, "qa.jsonl"))))
    status = subprocess.call(command)
    print("\nfirst records of {}:".format(os.path.relpath(output)))
    with open(output, encoding="utf-8") as f:
        for line in list(f)[:4]:
            record = json.loads(line)
            print("  {id:8} score {judge_score:<5} {judge_status:15} {judge_error}".format(
                **record))
    server.shutdown()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
