"""Issue 44's ranking items, through the real command line against the loopback stub:
systems never compared with each other are ranked apart, a length-controlled figure with
no finite fit is said and not printed, `report` ranks with the run's own options, and the
MT-Bench example names its systems where the ranking reads them.

The runs judge small files whose answers say which side wins (the stub's responder reads
them), or `report` reads scored files a run wrote.
"""
import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from stub import StubTestCase, chat, run_main  # noqa: E402
from test_modes import answers  # noqa: E402


def prefer_marked(request):
    """Pairwise: the answer starting with "win" wins, else a tie."""
    a, b = answers(request)
    if a is None:
        return None
    if a.startswith("win") and not b.startswith("win"):
        return chat("[[A]]")
    if b.startswith("win") and not a.startswith("win"):
        return chat("[[B]]")
    return chat("[[C]]")


def pair(k, a, b, winner, length_a=3, length_b=3):
    """A pairwise record naming its systems a and b; the winner's answer starts "win"."""
    texts = {a: "los", b: "los"}
    if winner:
        texts[winner] = "win"
    return {"question": "q%d" % k, "model_a": a, "model_b": b,
            "response_a": texts[a].ljust(length_a, "."),
            "response_b": texts[b].ljust(length_b, ".")}


def ranking_block(err):
    """The printed summary's ranking: its head line and the lines under it."""
    lines = err.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("  ranked over ")]
    if not head:
        return []
    block = [lines[head[0]]]
    for line in lines[head[0] + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return block


class RankingTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = prefer_marked

    def run_cli(self, records, *more, name="s.json"):
        data = self.write_jsonl("in.jsonl", records)
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--mode", "pairwise", data, "-o", self.path("out.jsonl"),
                                   "--summary", self.path(name), "--max-error-rate", "1"]
                                  + list(more))
        self.assertEqual(code, 0, err)
        return err, self.summary(name)

    def report(self, *argv):
        code, out, err = run_main(["report", "--summary", self.path("r.json"),
                                   "--max-error-rate", "1"] + list(argv))
        self.assertEqual(code, 0, err)
        return err, self.summary("r.json")

    def summary(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def page(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()


class MTBenchExampleTest(RankingTest):
    """examples/mtbench_pairs.jsonl held the answers in model_a and model_b, the fields the
    ranking reads as the systems' names: its two systems were never ranked."""

    def test_the_readme_command_ranks_the_two_systems_named(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            command = [line for line in f if line.startswith("$ python -m minijudge")
                       and "mtbench_pairs.jsonl" in line]
        self.assertEqual(len(command), 1, command)
        argv = shlex.split(command[0])[4:]  # after python -m minijudge
        argv[argv.index("--judge-url") + 1] = self.srv.url
        argv[argv.index("-o") + 1] = self.path("out.jsonl")
        argv[-1] = os.path.join(REPO, "examples", argv[-1])
        self.srv.content = "[[A]]"
        code, _, err = run_main(argv + ["--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        summary = self.summary("s.json")
        self.assertEqual(summary["statuses"], {"ok": 2})
        self.assertEqual(sorted(summary["bradley_terry"]["systems"]),
                         ["demo-model-a", "demo-model-b"])
        with open(os.path.join(REPO, "examples", "mtbench_pairs.jsonl"), encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                self.assertEqual((type(record["response_a"]), type(record["response_b"])),
                                 (list, list))
