"""Issue 31, item 1: --batch-export and --batch-import judge their records by a lean path.

An offline run judges an item a judge asks once by its kind's recipe (_ByRecipe, chosen by
_Run.go_offline), else by _judge_item; every run writes with _Run.write_record. The two
ways must write the same bytes: each test runs one varied
corpus (records that are judged, bad lines, missing and empty fields, unicode, NaN,
duplicates, an earlier run's fields, a resume from a --cache) through a real
``python -m minijudge`` twice, once plain and once with --html (which only adds its own
file), or in-process with the lean path turned off, and compares every file and stderr.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from stub import PYTHON  # noqa: E402
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
JUDGE = ["--judge-model", "judge-model"]

LINES = [  # the corpus: each line as it is in the input file
    json.dumps({"id": 1, "question": "What is 2 + 2?", "response": "4"}),
    json.dumps({"id": 2, "question": "Qu'est-ce que l'été ? 夏", "response": "Une saison ☀ 🌞",
                "answer": "a season"}, ensure_ascii=False),
    json.dumps({"id": 3, "question": "What is 2 + 2?", "response": "4"}),  # a duplicate
    json.dumps({"id": 4, "question": "q", "response": "r", "score": float("nan")}),
    json.dumps({"id": 5, "question": "no response here"}),
    json.dumps({"id": 6, "question": "q", "response": ""}),
    json.dumps({"id": 7, "question": "q", "response": "   "}),
    "{not json",
    "[1, 2, 3]",
    "",
    json.dumps({"id": 10, "context": "only a context", "response": "an answer"}),
    json.dumps({"id": 11, "question": "q", "response": "r", "judge_score": 5,
                "judge_status": "ok", "judge_extra": "an earlier run's"}),
    json.dumps({"id": 12, "question": "q", "response": 42}),
    json.dumps({"id": 13, "question": "q", "response": "lone \ud83d surrogate"}),
    json.dumps({"id": 14, "question": "q {braces} {0}", "response": "{response}"}),
    json.dumps({"id": 15, "question": "q", "response": "r", "answer": None}),
    json.dumps({"id": 16, "question": ["a", "list"], "response": {"a": "dict"}}),
]
REPLIES = ["[[4]]", "Rating: 5", "no rating at all", "[[9]]", "[[2]]"]


def timeless(stderr):
    """The summary without the times it measured ("16 records in 0.1 s", "0.0 requests/s")."""
    return re.sub(r"[0-9.]+ (s|requests/s)\b", "T", stderr)


def run(folder, *argv):
    """(exit status, stderr) of ``python -m minijudge ARGV`` in ``folder``."""
    done = subprocess.run([*PYTHON, "-m", "minijudge"] + list(argv), cwd=folder, env=dict(
        ENV, PYTHONPATH=REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return done.returncode, timeless(done.stderr.decode())


TIMED = re.compile(rb'"(wall_seconds|latency[a-z_]*)": [0-9.e-]+')  # the clock's, not ours


def files(folder, skip=("in.jsonl", "replies.jsonl", "page.html")):
    """{name: bytes} of a folder's files but the inputs and --html's page; the times a run
    measured as 0, the cache as its keys (its entries keep their latency)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        if name not in skip:
            with open(os.path.join(folder, name), "rb") as f:
                found[name] = TIMED.sub(rb'"\1": 0', f.read())
    if "cache.jsonl" in found:
        found["cache.jsonl"] = [json.loads(line)["key"] for line in
                                found["cache.jsonl"].splitlines()]
    return found


def replies_for(parts):
    """Batch output lines for the requests in ``parts``: replies that parse and do not, an
    error line, a line that is no reply, and one request answered twice."""
    lines, keys = [], []
    for part in parts:
        with open(part, "rb") as f:
            keys.extend(json.loads(line)["custom_id"] for line in f)
    for n, key in enumerate(keys):
        body = {"object": "chat.completion", "model": "judge-model", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": REPLIES[n % 5]},
             "finish_reason": "stop"}], "usage": {"prompt_tokens": 30, "completion_tokens": 3}}
        response = {"status_code": 200, "body": body}
        if n == 3:
            response = {"status_code": 500, "body": {"error": {"message": "overloaded"}}}
        lines.append(json.dumps({"custom_id": key, "response": response, "error": None}))
    lines.append(json.dumps({"custom_id": keys[0], "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "[[1]]"}}]}}, "error": None}))
    lines.append("not a reply")
    return "\n".join(lines[1:] + lines[:1]) + "\n"  # the first one answered last


class LeanPathWritesWhatTheGeneralPathWrites(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def folder(self, name, replies=None):
        path = os.path.join(self.root, name)
        os.mkdir(path)
        with open(os.path.join(path, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        if replies is not None:
            with open(os.path.join(path, "replies.jsonl"), "w") as f:
                f.write(replies)
        return path

    def both(self, argv, replies=None):
        """Run ``argv`` plain (lean) and with --html (general) in folders of their own; check
        they wrote the same files and stderr; the lean run's files."""
        lean, general = self.folder("lean", replies), self.folder("general", replies)
        lean_run = run(lean, *argv)
        general_run = run(general, *argv, "--html", "page.html")
        self.assertEqual(lean_run, general_run)
        self.assertTrue(os.path.exists(os.path.join(general, "page.html")))
        self.assertEqual(files(lean), files(general))
        return lean, files(lean)

    def test_an_export_writes_the_same_files(self):
        folder, written = self.both(JUDGE + ["--batch-export", "req", "--batch-max-lines", "4",
                                             "in.jsonl", "-o", "out.jsonl", "--summary",
                                             "summary.json"])
        self.assertEqual(sorted(written), ["out.jsonl", "req.000.jsonl", "req.001.jsonl",
                                           "summary.json"])
        out = [json.loads(line) for line in written["out.jsonl"].splitlines()]
        self.assertEqual(len(out), 16)  # every non-blank line, the bad ones too
        statuses = [record["judge_status"] for record in out]
        self.assertEqual(statuses.count("exported"), 10)
        self.assertIn("bad_record", statuses)
        self.assertIn("empty_response", statuses)
        self.assertIsNone(out[3]["score"])  # NaN written as null
        self.assertNotIn("judge_extra", out[10])  # an earlier run's field is dropped
        self.assertEqual(out[0]["judge_error"].split(" as ")[0], "exported to req.000.jsonl")
        self.assertEqual(out[0]["judge_error"], out[2]["judge_error"])  # asked once
        for record in out:
            self.assertEqual(list(record)[-2:], ["judge_line", "judge_run"])
            self.assertEqual(record["judge_run"], out[0]["judge_run"])
        requests = b"".join(written[name] for name in sorted(written) if name[:4] == "req.")
        self.assertEqual(len(requests.splitlines()), 7)  # each duplicate exported once
        self.assertTrue(requests.startswith(b'{"custom_id": "'))

    def test_an_import_and_its_resume_write_the_same_files(self):
        export = self.folder("export")
        self.assertEqual(run(export, *JUDGE, "--batch-export", "req", "in.jsonl", "-o",
                             "out.jsonl")[0], 0)
        replies = replies_for([os.path.join(export, "req.000.jsonl")])
        self.assertFalse(os.path.exists(os.path.join(export, "req.001.jsonl")))
        argv = JUDGE + ["--batch-import", "replies.jsonl", "in.jsonl", "-o", "scored.jsonl",
                        "--summary", "summary.json", "--cache", "cache.jsonl"]
        folder, written = self.both(argv, replies)
        out = [json.loads(line) for line in written["scored.jsonl"].splitlines()]
        statuses = [record["judge_status"] for record in out]
        self.assertEqual(statuses.count("ok"), 6)
        self.assertEqual(statuses.count("parse_error"), 3)
        self.assertEqual(statuses[9], "http_error")
        self.assertIn("bad_record", statuses)
        self.assertEqual([record["judge_score"] for record in out[:3]], [0.0, 1.0, 0.0])
        self.assertTrue(written["cache.jsonl"])
        for name in ("lean", "general"):  # the rerun answers from the cache
            os.remove(os.path.join(self.root, name, "scored.jsonl"))
        lean = run(os.path.join(self.root, "lean"), *argv)
        general = run(os.path.join(self.root, "general"), *argv, "--html", "page.html")
        self.assertEqual(lean, general)
        self.assertEqual(files(os.path.join(self.root, "lean")),
                         files(os.path.join(self.root, "general")))


class TheLeanJudgingGivesWhatTheGeneralGives(unittest.TestCase):
    """_ByRecipe (the judging of the lean path) beside _judge_item: the same corpus run
    in-process by main() with go_offline as it is and doing nothing (every record
    judged and written the general way), in one folder so the paths in messages agree."""

    def run_twice(self, argv, outputs, replies=None):
        import io
        from contextlib import redirect_stderr
        from unittest import mock
        import minijudge
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        with open(os.path.join(folder, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        if replies is not None:
            with open(os.path.join(folder, "replies.jsonl"), "w") as f:
                f.write(replies)
        argv = [os.path.join(folder, arg) if arg.endswith(("jsonl", ".json")) or arg == "req" else arg
                for arg in argv]
        seen = []
        for lean in (True, False):
            stderr = io.StringIO()
            with redirect_stderr(stderr), mock.patch.object(
                    minijudge._Run, "go_offline", autospec=True,
                    side_effect=minijudge._Run.go_offline if lean else None):
                status = minijudge.main(argv)
            seen.append((status, timeless(stderr.getvalue()), files(folder)))
            for name in outputs:
                os.remove(os.path.join(folder, name))
        self.assertEqual(seen[0], seen[1])
        return seen[0]

    def test_an_export(self):
        status, _, written = self.run_twice(JUDGE + ["--batch-export", "req", "in.jsonl", "-o",
                                                     "out.jsonl", "--summary", "s.json"],
                                            ["req.000.jsonl", "out.jsonl", "s.json"])
        self.assertEqual(status, 0)
        self.assertEqual(len(written["req.000.jsonl"].splitlines()), 7)

    def test_an_import(self):
        export = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, export)
        with open(os.path.join(export, "in.jsonl"), "w", encoding="utf-8") as f:
            f.write("\n".join(LINES) + "\n")
        run(export, *JUDGE, "--batch-export", "req", "in.jsonl", "-o", "out.jsonl")
        replies = replies_for([os.path.join(export, "req.000.jsonl")])
        status, stderr, written = self.run_twice(
            JUDGE + ["--batch-import", "replies.jsonl", "in.jsonl", "-o", "scored.jsonl"],
            ["scored.jsonl"], replies)
        self.assertEqual(status, 1)  # over --max-error-rate: said on stderr
        self.assertIn("statuses: ok 6,", stderr)
        self.assertEqual(len(written["scored.jsonl"].splitlines()), 16)


class TheLeanPathIsTaken(unittest.TestCase):
    """Which runs judge by recipe (_ByRecipe): decided once a run (a test of the choice
    itself). One writer and one tally serve every run, so a page or a price no longer turn
    it off; a judge that asks an item more than once does."""

    def judged_by_recipe(self, *argv):
        import io
        from contextlib import redirect_stderr
        from unittest import mock
        import minijudge
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        data = os.path.join(folder, "in.jsonl")
        with open(data, "w") as f:
            f.write(LINES[0] + "\n")
        spy = mock.patch.object(minijudge._ByRecipe, "__call__", autospec=True,
                                side_effect=minijudge._ByRecipe.__call__)
        with spy as lean, redirect_stderr(io.StringIO()):
            minijudge.main(JUDGE + ["--batch-export", os.path.join(folder, "req"), data,
                                    "-o", os.path.join(folder, "out.jsonl")] + list(argv))
        return lean.call_count

    def test_a_plain_export_takes_it_and_html_or_a_price_does_not(self):
        self.assertEqual(self.judged_by_recipe(), 1)
        self.assertEqual(self.judged_by_recipe("--html", os.devnull), 1)
        self.assertEqual(self.judged_by_recipe("--price", "1,2"), 1)
        self.assertEqual(self.judged_by_recipe("--repeats", "2"), 0)


if __name__ == "__main__":
    unittest.main()
