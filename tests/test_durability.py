"""Issue 31, item 1: the offline paths write by the batch, and stay durable.

An export and an import send no request: they judge in the main thread and write their
records by the batch (_FLUSH_LINES lines, or _FLUSH_SECONDS). What must hold, through a
real ``python -m minijudge`` process and real signals: Ctrl-C and SIGTERM flush what is
buffered and the stop note counts the lines in the file; a full disk (RLIMIT_FSIZE) keeps
no torn line and counts only what the file holds; SIGKILL at any moment leaves the start of
an uninterrupted run's file, whole lines but for a last one the kernel may cut short, and the
rerun the stop note names gives the files of an uninterrupted run.
Speed is measured by tests/bench_offline.py, not here.
"""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from stub import PYTHON, default_sigint  # noqa: E402
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
EXPORT = ["--judge-model", "judge-model", "--batch-export", "req"]


def write_records(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "question": "What is %d + %d?" % (i, i),
                                "response": "It is %d. " % (2 * i) + "So it is. " * 20}) + "\n")


def write_replies(parts, path):
    """A batch output line for each request in ``parts``, as an engine writes them."""
    with open(path, "w") as out:
        for part in parts:
            with open(part) as f:
                for line in f:
                    key = json.loads(line)["custom_id"]
                    body = {"object": "chat.completion", "model": "judge-model", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "[[4]]"},
                         "finish_reason": "stop"}]}
                    out.write(json.dumps({"custom_id": key, "error": None, "response": {
                        "status_code": 200, "body": body}}) + "\n")


N = 600  # records of the runs that are killed
COMMANDS = {  # each run in a folder of its own, with in.jsonl (and replies.jsonl)
    "export": EXPORT + ["--batch-max-lines", "250", "in.jsonl", "-o", "out.jsonl"],
    "import": ["--judge-model", "judge-model", "--batch-import", "replies.jsonl", "in.jsonl",
               "-o", "scored.jsonl"],
    "report": ["report", "scored.jsonl", "--summary", "summary.json"]}
WRITES = {"export": ["req.000.jsonl", "req.001.jsonl", "req.002.jsonl", "out.jsonl"],
          "import": ["scored.jsonl"], "report": ["summary.json"]}


class OfflineWrites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """The files of uninterrupted runs (once: each run takes a while)."""
        cls.whole = tempfile.mkdtemp()
        write_records(os.path.join(cls.whole, "in.jsonl"), N)
        for stage in ("export", "import", "report"):
            if stage == "import":
                write_replies([os.path.join(cls.whole, p) for p in WRITES["export"][:3]],
                              os.path.join(cls.whole, "replies.jsonl"))
            subprocess.run([*PYTHON, "-m", "minijudge"] + COMMANDS[stage],
                           cwd=cls.whole, env=dict(ENV, PYTHONPATH=REPO), check=True,
                           stderr=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.whole)

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        for name in ("in.jsonl", "replies.jsonl", "scored.jsonl"):
            shutil.copy(os.path.join(self.whole, name), self.dir)

    def uninterrupted(self, stage):
        found = {}
        for name in WRITES[stage]:
            with open(os.path.join(self.whole, name), "rb") as f:
                found[name] = f.read()
        return found

    def path(self, name):
        return os.path.join(self.dir, name)

    def spawn(self, *argv, **kwargs):
        return subprocess.Popen([*PYTHON, "-m", "minijudge"] + list(argv),
                                cwd=self.dir, env=dict(ENV, PYTHONPATH=REPO),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)

    def run_to_end(self, *argv):
        proc = self.spawn(*argv)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err.decode())

    def lines(self, name, killed=False):
        """The lines of a file, each checked whole: JSON ending in a newline. After a kill -9
        the last may be cut short (Linux stops a write between two pages when a fatal signal
        is pending, so no program can keep an appended line whole through one); it must then
        be the start of the line an uninterrupted run writes there, and it is left out."""
        with open(self.path(name), "rb") as f:
            data = f.read()
        if killed and not data.endswith(b"\n") and data:
            kept = data[:data.rfind(b"\n") + 1]
            with open(os.path.join(self.whole, name), "rb") as f:
                self.assertTrue(f.read().startswith(data), "not a cut line in " + name)
            data = kept
        self.assertTrue(data == b"" or data.endswith(b"\n"), "torn last line in " + name)
        lines = data.decode().splitlines()
        for line in lines:
            json.loads(line)
        return lines

    def contents(self, names):
        found = {}
        for name in names:
            with open(self.path(name), "rb") as f:
                found[name] = f.read()
        return found

    def wait_for(self, proc, name, size):
        """Until ``name`` holds ``size`` bytes or the process ended."""
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            if os.path.exists(self.path(name)) and os.path.getsize(self.path(name)) >= size:
                return
            time.sleep(0.002)

    def test_ctrl_c_and_sigterm_flush_an_export_and_count_what_the_file_holds(self):
        write_records(self.path("in.jsonl"), 20000)  # not all written by the signal
        for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            with self.subTest(signum=signum):
                for name in os.listdir(self.dir):
                    if name != "in.jsonl":
                        os.remove(self.path(name))
                proc = self.spawn(*EXPORT, "in.jsonl", "-o", "out.jsonl",
                                  preexec_fn=default_sigint)
                self.wait_for(proc, "out.jsonl", 1)
                proc.send_signal(signum)
                _, err = proc.communicate(timeout=20)
                written = self.lines("out.jsonl")
                self.assertEqual(proc.returncode, code, err)
                self.assertGreater(len(written), 0)
                self.assertLess(len(written), 20000)
                self.assertIn(
                    "  interrupted: {} of 20000 records written to out.jsonl; "
                    "the export is partial: remove req.*.jsonl, then rerun the same "
                    "command\n".format(len(written)), err.decode())

    def test_a_full_disk_during_an_import_keeps_whole_lines_and_counts_them(self):
        # RLIMIT_FSIZE: -o fails as on a full disk (EFBIG), in the middle of a batch of lines
        import resource
        os.remove(self.path("scored.jsonl"))
        proc = self.spawn(*COMMANDS["import"], preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_FSIZE, (100000, 100000)))
        _, err = proc.communicate(timeout=30)
        written = self.lines("scored.jsonl")
        self.assertEqual(proc.returncode, 1, err)
        self.assertGreater(len(written), 0)
        self.assertLess(len(written), 256)  # in the middle of the first batch
        self.assertIn("  stopped: {0} of {1} records written to scored.jsonl; without --cache "
                      "a rerun judges all {1} again and writes scored.jsonl anew: pass --cache "
                      "FILE next time\nminijudge: error: cannot write scored.jsonl: [Errno {2}] "
                      "{3}\n".format(len(written), N, errno.EFBIG, os.strerror(errno.EFBIG)),
                      err.decode())

    def kill_9(self, stage, name):
        """Run ``stage``, SIGKILL it once ``name`` holds 20 KB (or at its end)."""
        proc = self.spawn(*COMMANDS[stage])
        self.wait_for(proc, name, 20000)
        proc.kill()
        proc.communicate(timeout=20)

    def test_kill_9_during_an_export_leaves_whole_lines_and_the_rerun_the_same_files(self):
        self.kill_9("export", "req.000.jsonl")
        killed = sorted(p for p in os.listdir(self.dir) if p.startswith("req."))
        for name in killed + ["out.jsonl"]:
            self.lines(name, killed=True)
        for name in killed:  # as the stop note of an interrupted export says
            os.remove(self.path(name))
        self.run_to_end(*COMMANDS["export"])
        self.assertEqual(self.contents(WRITES["export"]), self.uninterrupted("export"))

    def test_kill_9_during_an_export_leaves_no_record_said_exported_without_its_line(self):
        # records down a pipe, the run killed once -o holds its first batch of lines (256,
        # written by count): each record -o says exported has its line in a part; before,
        # the parts still held theirs (a MiB or 0.5 s at a time) and kill -9 lost them
        proc = self.spawn("--judge-model", "judge-model", "--batch-export", "req", "-",
                          "-o", "out.jsonl", stdin=subprocess.PIPE)
        with open(self.path("in.jsonl"), "rb") as f:
            proc.stdin.write(b"".join(f.readlines()[:300]))
        proc.stdin.flush()
        deadline = time.monotonic() + 20
        while not self.lines("out.jsonl", killed=True) and time.monotonic() < deadline:
            time.sleep(0.002)
        proc.kill()
        proc.communicate(timeout=20)
        said = [json.loads(line)["judge_error"] for line in self.lines("out.jsonl", killed=True)]
        self.assertGreater(len(said), 0)
        keys = [re.search(r" as custom_id (\S+):", error).group(1) for error in said]
        parts = [name for name in os.listdir(self.dir) if name.startswith("req.")]
        written = {json.loads(line)["custom_id"] for name in parts
                   for line in self.lines(name, killed=True)}
        self.assertEqual([key for key in keys if key not in written], [])

    def test_kill_9_during_an_import_leaves_whole_lines_and_the_rerun_the_same_file(self):
        os.remove(self.path("scored.jsonl"))
        self.kill_9("import", "scored.jsonl")
        self.lines("scored.jsonl", killed=True)
        self.run_to_end(*COMMANDS["import"])
        self.assertEqual(self.contents(["scored.jsonl"]), self.uninterrupted("import"))

    def test_kill_9_during_a_report_leaves_no_torn_summary(self):
        for delay in (0.05, 0.15, 0.3):
            with self.subTest(delay=delay):
                proc = self.spawn(*COMMANDS["report"])
                time.sleep(delay)
                proc.kill()
                proc.communicate(timeout=20)
                if os.path.exists(self.path("summary.json")):  # it had ended: whole
                    self.assertEqual(self.contents(["summary.json"]),
                                     self.uninterrupted("report"))
        self.run_to_end(*COMMANDS["report"])
        self.assertEqual(self.contents(["summary.json"]), self.uninterrupted("report"))


if __name__ == "__main__":
    unittest.main()
