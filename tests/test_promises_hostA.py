"""Issue 28's independent campaign, other inputs for each class: `report` refuses every
hostile value it reads (a rating that is no number, token counts no server sends, a list
where text belongs) naming file and line, never a traceback nor a wrong total with exit 0.
Through the real command line against the loopback stub, on real files.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from batch_engine import output_line  # noqa: E402
from stub import PYTHON, SideBySide, StubTestCase, run_main  # noqa: E402

RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class StdoutTest(SideBySide):
    side_by_side = 2  # subprocesses only: its two tests at once, one a core
    def test_records_to_stdout_that_is_a_file_the_run_reads_are_refused(self):
        # `minijudge in.jsonl >> in.jsonl` read 29 of its own records back, judged them, exit 0
        data = self.write_jsonl("in.jsonl", RECORDS)
        with open(data, "rb") as f:
            original = f.read()
        cache = self.path("cache.jsonl")
        self.write("cache.jsonl", "")
        argv = [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                "--judge-model", "m", "-q"]
        for args, stdin, stdout, named in (
                ([data], None, data, "the input file " + data),
                (["-"], data, data, "the input file (stdin)"),
                ([data, "--cache", cache], None, cache, "the --cache file " + cache)):
            with self.subTest(stdout=stdout, stdin=stdin), open(stdout, "ab") as out:
                source = open(stdin, "rb") if stdin else subprocess.DEVNULL
                done = subprocess.run(argv + args, stdin=source, stdout=out,
                                      stderr=subprocess.PIPE, cwd=os.path.dirname(HERE),
                                      timeout=60)
                if stdin:
                    source.close()
            self.assertEqual((done.returncode, done.stderr.decode()), (
                2, "minijudge: error: stdout is {}; write elsewhere\n".format(named)))
            with open(data, "rb") as f:
                self.assertEqual(f.read(), original)

    def test_a_summary_into_the_records_pipe_is_refused(self):
        # records | --summary /dev/stdout: the summary's JSON mixed into the records, exit 0
        data = self.write_jsonl("in.jsonl", RECORDS)
        argv = [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                "--judge-model", "m", "-q", data]
        for more, message in (
                (["--summary", "/dev/stdout"], "stdout is the --summary file /dev/stdout"),
                (["-o", "/dev/stdout", "--html", "/dev/stdout"],
                 "--html /dev/stdout is the -o file")):
            with self.subTest(more=more):
                done = subprocess.run(argv + more, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      cwd=os.path.dirname(HERE), timeout=60)
                self.assertEqual((done.returncode, done.stdout, done.stderr.decode()), (
                    2, b"", "minijudge: error: {}; write elsewhere\n".format(message)))
