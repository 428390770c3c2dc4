"""Issue 31, item 1 (durability): a disk that fills up while an export writes its batch
files, or while a run or a report writes --summary or --html, stops the run with the file
named and no traceback; the batch files keep whole lines only, held no longer than -o's
records are. Real processes: the disk is filled by RLIMIT_FSIZE (a write past it fails with
EFBIG, as ENOSPC on a full disk) or is /dev/full; the records come down a pipe.
"""
import errno
import functools
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stub import PYTHON, StubTestCase  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
ENV["PYTHONPATH"] = os.path.dirname(HERE)
LIMIT = 150000  # bytes a file may hold
TOO_LARGE = "[Errno {}] {}".format(errno.EFBIG, os.strerror(errno.EFBIG))
SYSTEM = "Judge the answer's accuracy above all. " * 100  # 4 KB in each request, not in -o


def limited(size=LIMIT):
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


class AFullDisk(StubTestCase):

    def minijudge(self, *argv, limit=None):
        """(exit code, stderr) of ``python -m minijudge ARGV`` in the test's folder, each
        file it writes held to ``limit`` bytes (True: LIMIT)."""
        limit_files = None
        if limit:
            limit_files = functools.partial(limited, LIMIT if limit is True else limit)
        proc = subprocess.run([*PYTHON, "-m", "minijudge"] + list(argv), cwd=self.tmp, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                              preexec_fn=limit_files)
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


class ASlowExport(StubTestCase):
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
