"""Issue 28's second independent campaign, other inputs for each class: batch files read
back that hold no reply are not counted as imported replies. Through the real command
line against the loopback stub, on real files.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from batch_engine import output_line  # noqa: E402
from stub import PYTHON, StubTestCase, run_main  # noqa: E402

RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class ImportOfAnExportPartTest(StubTestCase):
    def test_a_request_file_imported_as_replies_imports_none(self):
        # importing the export's own part (requests, not replies) said "3 replies imported"
        # while the run judged all 3 live, exit 0: the summary's figure was wrong
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("data.jsonl", RECORDS)
        code, _, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                 self.path("req")])
        self.assertEqual(code, 0, err)
        part = self.path("req.000.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                 "--batch-import", part, "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual((summary["batch"]["imported"], summary["batch"]["unasked"],
                          summary["batch"]["malformed"], summary["requests"]),
                         (0, 0, {"not a batch output line": 3}, 3))
        self.assertIn("\n  batch: 0 replies imported, 0 not asked for (ignored); malformed "
                      "lines: 3 not a batch output line\n", err)


class NoneJudgedTest(StubTestCase):
    def test_a_run_with_none_judged_says_so_not_none(self):
        # "mean score 0.0 with failures as 0.0; None over the 0 judged": Python's None in
        # the summary, in the run's and in report's
        self.srv.content = "no rating here"
        data = self.write_jsonl("data.jsonl", RECORDS)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                 "-o", self.path("out.jsonl")])
        self.assertEqual(code, 1)
        line = ("\n  mean score 0.0 with failures as 0.0; none judged; 95% CI [0.0, 0.0] "
                "(bootstrap, 1000 resamples, seed 0)\n")
        self.assertIn(line, err)
        code, _, err = run_main(["report", self.path("out.jsonl")])
        self.assertEqual(code, 1)
        self.assertIn(line, err)


class ImportFromAPipeTest(StubTestCase):
    def test_a_batch_import_that_is_a_pipe_is_refused_before_anything_is_read(self):
        # `--batch-import /dev/stdin` or `<(cat out.jsonl)`: "no records in data.jsonl",
        # "interrupted", "cannot write None: [Errno None] None", exit 1, no record written
        data = self.write_jsonl("data.jsonl", RECORDS[:1])
        code, out, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                   self.path("req")])
        self.assertEqual(code, 0, err)
        key = json.loads(out)["judge_error"].split("custom_id ")[1][:64]
        reply = {"object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {
            "role": "assistant", "content": "Rating: 4"}, "finish_reason": "stop"}]}
        line = json.dumps(output_line(key, 200, reply)) + "\n"
        done = subprocess.run([*PYTHON, "-m", "minijudge", "--judge-model", "m", data,
                               "--batch-import", "/dev/stdin", "-o", self.path("out.jsonl")],
                              input=line.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=os.path.dirname(HERE), timeout=60)
        self.assertEqual((done.returncode, done.stderr.decode()), (
            2, "minijudge: error: --batch-import /dev/stdin is not a regular file (a pipe?): "
               "its replies are read again where they are needed; save it to a file first\n"))
        self.assertFalse(os.path.exists(self.path("out.jsonl")))


class FifoTest(StubTestCase):
    def test_an_output_on_the_fifo_the_run_reads_is_refused_before_it_is_opened(self):
        # `minijudge ff -o ff` on a named pipe: not refused, the run waited on the pipe and
        # would read its own records back; a pipe read was not among the files checked
        fifo = self.path("ff")
        os.mkfifo(fifo)
        for flag in ("-o", "--summary", "--html"):
            with self.subTest(flag=flag):
                done = subprocess.run([*PYTHON, "-m", "minijudge", "--judge-url",
                                       self.srv.url, "--judge-model", "m", fifo, flag, fifo],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, cwd=os.path.dirname(HERE),
                                      timeout=20)
                self.assertEqual((done.returncode, done.stdout, done.stderr.decode()), (
                    2, b"", "minijudge: error: {} {} is the input file; write elsewhere\n"
                    .format(flag, fifo)))
