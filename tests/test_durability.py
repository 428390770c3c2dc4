"""Durability (the section "The run: judging, writing, stopping", offline and on a full
disk): an export, an import and report write by the batch and keep whole lines through
Ctrl-C, SIGTERM, SIGKILL and a full disk; a disk that fills while an export writes its
batch files, or while a run or report writes --summary or --html, stops the run naming
the file. Real processes, real signals, a real RLIMIT_FSIZE.

Issue 31, item 1: the offline paths write by the batch, and stay durable.

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
import functools
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
from stub import PYTHON, StubTestCase, default_sigint, run_process, without_judge  # noqa: E402
ENV = without_judge({"PYTHONPATH": REPO}, every=True)  # a child's, in any folder
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


class OfflineWritesTest(unittest.TestCase):
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


LIMIT = 150000  # bytes a file may hold


TOO_LARGE = "[Errno {}] {}".format(errno.EFBIG, os.strerror(errno.EFBIG))


SYSTEM = "Judge the answer's accuracy above all. " * 100  # 4 KB in each request, not in -o


def limited(size=LIMIT):
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


class FullDiskTest(StubTestCase):
    """Issue 31, item 1 (durability): a disk that fills up while an export writes its batch
    files, or while a run or a report writes --summary or --html, stops the run with the
    file named and no traceback; the batch files keep whole lines only, held no longer than
    -o's records are. Real processes: the disk is filled by RLIMIT_FSIZE (a write past it
    fails with EFBIG, as ENOSPC on a full disk) or is /dev/full; the records come down a
    pipe."""


    def minijudge(self, *argv, limit=None):
        """(exit code, stderr) of ``python -m minijudge ARGV`` in the test's folder, each
        file it writes held to ``limit`` bytes (True: LIMIT)."""
        limit_files = None
        if limit:
            limit_files = functools.partial(limited, LIMIT if limit is True else limit)
        proc = run_process(*argv, cwd=self.tmp, env=ENV, preexec_fn=limit_files)
        return proc.returncode, proc.stderr.decode()

    def lines(self, name):
        """The file's lines, each one whole JSON."""
        with open(self.path(name), "rb") as f:
            text = f.read()
        self.assertTrue(text.endswith(b"\n"), name)
        return [json.loads(line) for line in text.splitlines()]

    def records(self, n):
        return self.write_jsonl("data.jsonl", [{"question": "Q%d" % i, "response": "R%d" % i}
                                               for i in range(n)])

    def test_a_batch_file_that_fills_the_disk_stops_the_export_with_whole_lines(self):
        # each part holds 40 requests of ~4 KB (160 KB): the first is cut at 150 KB when it
        # is closed, while -o holds 40 records of ~700 bytes
        self.records(200)
        for extra in ([], ["--html", "page.html"]):  # the lean path, and the general one
            with self.subTest(extra=extra):
                for name in os.listdir(self.tmp):
                    if name.startswith(("req.", "out.")):
                        os.remove(self.path(name))
                code, err = self.minijudge(
                    "--judge-model", "judge-model", "--system", SYSTEM, "--batch-export",
                    "req", "--batch-max-lines", "40", "data.jsonl", "-o", "out.jsonl", *extra,
                    limit=True)
                self.assertEqual(code, 1, err)
                self.assertNotIn("Traceback", err)
                self.assertIn("minijudge: error: cannot write req.000.jsonl: " + TOO_LARGE, err)
                self.assertIn("the export is partial: remove req.*.jsonl, then rerun", err)
                part = self.lines("req.000.jsonl")
                self.assertGreater(len(part), 30)
                self.assertLess(len(part), 40)  # cut after its last whole line
                self.assertIn("exported: {} requests to req.000.jsonl".format(len(part)), err)
                written = self.lines("out.jsonl")
                self.assertEqual(len(written), 40)  # the records before the one that failed
                self.assertEqual({r["judge_status"] for r in written}, {"exported"})
                self.assertIn("stopped: 40 of 200 records written to out.jsonl", err)

    def test_the_last_lines_held_are_written_at_the_end_and_a_failure_there_is_said(self):
        # 30 requests of ~4 KB: held until the end of the run, then cut at 150 KB
        self.records(37)
        code, err = self.minijudge("--judge-model", "judge-model", "--system", SYSTEM,
                                   "--batch-export", "req", "data.jsonl", "-o", "out.jsonl",
                                   limit=True)
        self.assertEqual(code, 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("minijudge: error: cannot write req.000.jsonl: " + TOO_LARGE, err)
        part = self.lines("req.000.jsonl")
        self.assertLess(len(part), 37)
        self.assertIn("exported: {} requests to req.000.jsonl".format(len(part)), err)
        self.assertEqual(len(self.lines("out.jsonl")), 37)

    def test_a_batch_file_refused_as_o_writes_its_records_stops_the_run_there(self):
        # 2 KB requests: -o's first 256 records (written by count, 240 KB) take their
        # part's lines (600 KB, under the MiB a part holds) out first, which the disk
        # refuses at 300 KB
        self.records(300)
        code, err = self.minijudge("--judge-model", "judge-model", "--system", SYSTEM[:2000],
                                   "--batch-export", "req", "data.jsonl", "-o", "out.jsonl",
                                   limit=300000)
        self.assertEqual(code, 1, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(err.count("cannot write req.000.jsonl: " + TOO_LARGE), 1, err)
        part = self.lines("req.000.jsonl")
        self.assertIn("exported: {} requests to req.000.jsonl".format(len(part)), err)
        written = self.lines("out.jsonl")
        self.assertEqual(len(written), 256)  # the record being written is written, counted
        self.assertIn("stopped: 256 of 300 records written to out.jsonl", err)
        self.assertIn("\n  statuses: exported 256\n", err)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full")
    def test_a_summary_or_page_on_a_full_disk_is_said_for_a_run_and_for_report(self):
        self.records(5)
        for flag in ("--summary", "--html"):
            with self.subTest(flag=flag):
                code, err = self.minijudge("--judge-model", "judge-model", "--batch-export",
                                           "req" + flag, "data.jsonl", "-o", "out.jsonl",
                                           flag, "/dev/full")
                self.assertEqual(code, 1, err)
                self.assertNotIn("Traceback", err)
                self.assertTrue(err.endswith("minijudge: error: cannot write /dev/full: "
                                             "[Errno {}] {}\n".format(
                                                 errno.ENOSPC, os.strerror(errno.ENOSPC))), err)
                self.assertIn("statuses: exported 5", err)  # the summary, said all the same
                self.assertEqual(len(self.lines("out.jsonl")), 5)
                code, err = self.minijudge("report", "out.jsonl", flag, "/dev/full")
                self.assertEqual(code, 1, err)
                self.assertNotIn("Traceback", err)
                self.assertIn("statuses: exported 5", err)
                self.assertTrue(err.endswith("cannot write /dev/full: [Errno {}] {}\n".format(
                    errno.ENOSPC, os.strerror(errno.ENOSPC))), err)

    def test_a_page_or_summary_that_cannot_be_written_whole_leaves_the_earlier_one(self):
        # issue 44: the page was truncated before the new one was written, so a full disk
        # (or a kill) midway left a cut page, or 0 bytes
        self.records(5)
        run = ["--judge-model", "judge-model", "--judge-url", self.srv.url + "/v1", "data.jsonl"]
        code, err = self.minijudge(*run, "-o", "out.jsonl")
        self.assertEqual(code, 0, err)
        for flag in ("--summary", "--html"):
            for argv in (["report", "out.jsonl"], run):
                with self.subTest(flag=flag, command=argv[0]):
                    with open(self.path("page"), "w") as f:
                        f.write("the earlier page\n")
                    os.chmod(self.path("page"), 0o640)
                    code, err = self.minijudge(*argv, flag, "page", limit=300)
                    self.assertEqual(code, 1, err)
                    self.assertNotIn("Traceback", err)
                    self.assertTrue(err.endswith("minijudge: error: cannot write page: "
                                                 + TOO_LARGE + "\n"), err)
                    with open(self.path("page")) as f:
                        self.assertEqual(f.read(), "the earlier page\n")
                    self.assertEqual(sorted(n for n in os.listdir(self.tmp) if "page" in n),
                                     ["page"])  # no half-written file left beside it
                    code, err = self.minijudge(*argv, flag, "page")
                    self.assertEqual(code, 0, err)
                    with open(self.path("page")) as f:
                        self.assertNotIn("the earlier page", f.read())
                    self.assertEqual(os.stat(self.path("page")).st_mode & 0o777, 0o640)
        # a link to the page stays a link; a pipe (not a file renamed over) is written to
        os.symlink("page", self.path("link"))
        code, err = self.minijudge("report", "out.jsonl", "--summary", "link")
        self.assertEqual(code, 0, err)
        self.assertTrue(os.path.islink(self.path("link")))
        with open(self.path("page")) as f:
            self.assertEqual(json.load(f)["records"], 5)
        done = subprocess.run([*PYTHON, "-m", "minijudge", "report", "out.jsonl", "--summary",
                               "/dev/stdout"], cwd=self.tmp, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["records"], 5)


UNANSWERED = 8  # the first records, with no reply: no length, nothing kept; 8 KiB exported
HELD = 2240  # ok records whose lengths and scores fill the child's memory (_NUMBERS_HELD pairs)
SPILL = UNANSWERED + HELD  # the record whose numbers go to the temporary file: its line
HELD_FOR_O = SPILL % 256  # -o's lines held then (_FLUSH_LINES a write): 200 of 1 KB, > a pipe
FSIZE = 16 * 1024  # a file's limit: the export's 8 requests fit, the 35 KiB spill does not
# A child judges as `python -m minijudge` does, but spills at HELD records, not at 65,536
# (1 MiB, 16 s of CPU a run): its _NUMBERS_HELD set before main(), in the process itself.
JUDGE = ("import sys, minijudge; minijudge._NUMBERS_HELD = %d; "
         "sys.exit(minijudge.main(sys.argv[1:]))" % (2 * HELD))
CHILD = [*PYTHON, "-c", JUDGE]
TMPDIR_GONE = [*PYTHON, "-c", "import tempfile; tempfile.tempdir = 'no-such-folder'; "
               + JUDGE]  # TMPDIR gone mid-run: ENOENT at the spill


class FullTmpdirTest(unittest.TestCase):
    """A run whose temporary file of the responses' lengths cannot be written (a full TMPDIR:
    a real RLIMIT_FSIZE, EFBIG, as its first spill goes out) stops as on -o and writes the
    lines it holds for -o (an offline run writes 256 at a time), the one of the record being
    tallied the last; before, they were lost with -o free: 2,048 of 2,248 judged. Real
    processes, each with a _NUMBERS_HELD of its own, set before main(): the spill (16 bytes a
    record, 35 KiB) comes once 2,240 ok records are judged, not 65,536 (1 MiB; 16 s of CPU a
    run), past a limit of 16 KiB that the export's file, of 8 requests, stays under."""

    @classmethod
    def setUpClass(cls):
        """The records, their replies but the first UNANSWERED's, and an import of them
        that the full TMPDIR stops: its stdout and stderr (the run each test varies)."""
        cls.dir = tempfile.mkdtemp()
        write_records(os.path.join(cls.dir, "in.jsonl"), SPILL + 100)
        subprocess.run([*PYTHON, "-m", "minijudge", *EXPORT, "in.jsonl", "-o", os.devnull],
                       cwd=cls.dir, env=ENV, check=True, stderr=subprocess.DEVNULL)
        parts = sorted(name for name in os.listdir(cls.dir) if name.startswith("req."))
        write_replies([os.path.join(cls.dir, name) for name in parts],
                      os.path.join(cls.dir, "replies.jsonl"))
        with open(os.path.join(cls.dir, "replies.jsonl"), "rb") as f:
            replies = f.readlines()[UNANSWERED:]
        with open(os.path.join(cls.dir, "replies.jsonl"), "wb") as f:
            f.writelines(replies)
        for name in parts:
            os.remove(os.path.join(cls.dir, name))
        cls.full = subprocess.run(
            [*CHILD, *cls.importing()], cwd=cls.dir, env=ENV,
            preexec_fn=functools.partial(limited, FSIZE), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    @staticmethod
    def importing(*more):
        return ["--judge-model", "judge-model", "--batch-import", "replies.jsonl", *more,
                "in.jsonl"]

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_held_lines(self, data, n=SPILL):
        """``data`` is n whole lines, the records' in order: none after the one tallied."""
        self.assertTrue(data.endswith(b"\n"))
        lines = data.splitlines()
        self.assertEqual(len(lines), n)
        self.assertEqual(json.loads(lines[0])["judge_line"], 1)
        self.assertEqual(json.loads(lines[-1])["judge_line"], n)
        return lines

    def test_the_records_held_for_stdout_are_written_and_counted(self):
        err = self.full.stderr.decode()
        self.assertEqual(self.full.returncode, 1, err)
        self.assertNotIn("Traceback", err)
        lines = self.assert_held_lines(self.full.stdout)
        self.assertEqual(json.loads(lines[-1])["judge_status"], "ok")  # the one tallied
        self.assertIn("\n  statuses: ok {}, not_judged {}\n".format(HELD, UNANSWERED), err)
        self.assertTrue(err.endswith(
            "  stopped: {} of {} records written to stdout; without --cache a rerun judges "
            "all {} again: pass --cache FILE next time\nminijudge: error: cannot write the "
            "lengths of the responses (a temporary file under TMPDIR): {}\n".format(
                SPILL, SPILL + 100, SPILL + 100, TOO_LARGE)), err[-600:])

    def test_sigterm_while_an_export_writes_them_to_a_fifo_waits_for_the_last_line(self):
        # the unanswered records exported; -o a FIFO read up to the held lines (200 of 1 KB:
        # more than the pipe's 64 KiB), SIGTERM while the write of them waits
        import fcntl
        import select
        import termios
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        self.addCleanup(os.remove, fifo)
        self.addCleanup(lambda: [os.remove(self.path(name)) for name in os.listdir(self.dir)
                                 if name.startswith("again.")])
        proc = subprocess.Popen(
            [*CHILD, *self.importing("--batch-export", "again"), "-o", "out.fifo"],
            cwd=self.dir, env=ENV, stderr=subprocess.PIPE,
            preexec_fn=functools.partial(limited, FSIZE))
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        data, read, deadline = bytearray(), 0, time.monotonic() + 120
        while read < SPILL - HELD_FOR_O and time.monotonic() < deadline:
            select.select([fd], [], [], 1)
            chunk = os.read(fd, 1 << 16)
            read += chunk.count(b"\n")
            data += chunk
        os.set_blocking(fd, True)
        waiting = bytearray(4)  # what the pipe holds: full, the run's write waits on it
        while proc.poll() is None and time.monotonic() < deadline:
            fcntl.ioctl(fd, termios.FIONREAD, waiting)
            if int.from_bytes(waiting, sys.byteorder) >= 1 << 16:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        while True:
            more = os.read(fd, 1 << 16)
            if not more:
                break
            data += more
        os.close(fd)
        err = proc.communicate(timeout=60)[1].decode()
        self.assertEqual(proc.returncode, 1, err)
        self.assertNotIn("Traceback", err)
        lines = self.assert_held_lines(bytes(data))
        self.assertEqual(json.loads(lines[0])["judge_status"], "exported")
        with open(self.path("again.000.jsonl")) as f:
            self.assertEqual(len(f.readlines()), UNANSWERED)
        self.assertTrue(err.endswith(
            "  interrupted: {} of {} records written to out.fifo; the export is partial: "
            "remove again.*.jsonl, then rerun the same command\nminijudge: error: cannot "
            "write the lengths of the responses (a temporary file under TMPDIR): {}\n".format(
                SPILL, SPILL + 100, TOO_LARGE)), err[-600:])

    def test_with_o_full_too_the_lines_it_took_whole_count_and_a_rerun_resumes(self):
        # TMPDIR gone (ENOENT) and -o full 100 lines and 10 bytes into the 200 held; the
        # --cache (0.6 MB) keeps every reply, so the rerun sends none and writes -o whole
        # (its lengths spilled, to a TMPDIR that takes them)
        self.addCleanup(lambda: [os.remove(self.path(name)) for name in ("o", "cache")])
        room = len(b"".join(self.full.stdout.splitlines(True)[:SPILL - 100])) + 10
        argv = self.importing("--cache", "cache", "-o", "o")
        proc = subprocess.run([*TMPDIR_GONE, *argv], cwd=self.dir, env=ENV,
                              preexec_fn=functools.partial(limited, room),
                              stderr=subprocess.PIPE, timeout=120)
        err = proc.stderr.decode()
        self.assertEqual(proc.returncode, 1, err)
        self.assertNotIn("Traceback", err)
        with open(self.path("o"), "rb") as f:
            self.assert_held_lines(f.read(), SPILL - 100)
        self.assertTrue(err.endswith(
            "  stopped: {} of {} records written to o; rerun the same command: the {} judged "
            "come from the cache, and o is written again, whole\nminijudge: error: cannot "
            "write the lengths of the responses (a temporary file under TMPDIR): [Errno {}] "
            "{}\nminijudge: error: cannot write o: {}\n".format(
                SPILL - 100, SPILL + 100, HELD, errno.ENOENT, os.strerror(errno.ENOENT),
                TOO_LARGE)), err[-800:])
        proc = subprocess.run([*CHILD, *argv], cwd=self.dir, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(" (0 requests, {} from cache,".format(HELD).encode(), proc.stderr)
        with open(self.path("o"), "rb") as f:
            self.assert_held_lines(f.read(), SPILL + 100)


class SlowExportTest(StubTestCase):
    """Issue 31, item 1 (durability, full31)."""

    def test_its_batch_lines_are_written_as_its_records_come_not_at_its_end(self):
        # records down a pipe, one every 0.2 s: -o and the part are written within 0.5 s
        # of a record (at the next one), long before the end
        proc = subprocess.Popen([*PYTHON, "-m", "minijudge", "--judge-model", "judge-model",
                                 "--batch-export", "req", "-", "-o", "out.jsonl"],
                                cwd=self.tmp, env=ENV, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seen = []
        for i in range(8):
            proc.stdin.write(json.dumps({"question": "Q%d" % i, "response": "R"}).encode()
                             + b"\n")
            proc.stdin.flush()
            time.sleep(0.2)
            seen.append(self.count("req.000.jsonl"))
        proc.stdin.close()
        with proc.stderr:
            err = proc.stderr.read()
        self.assertEqual(proc.wait(timeout=30), 0, err)
        self.assertGreater(seen[-1], 3, seen)  # written while the run went on
        self.assertEqual(self.count("req.000.jsonl"), 8)
        self.assertEqual(self.count("out.jsonl"), 8)

    def count(self, name):
        """Whole lines in the file (none if it is not there yet)."""
        try:
            with open(self.path(name), "rb") as f:
                return f.read().count(b"\n")
        except FileNotFoundError:
            return 0


if __name__ == "__main__":
    unittest.main()
