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
