"""The progress line and the stop notes (the section "The run: judging, writing, stopping"):
a run whose judge fails says so on the progress line while it happens; a run stopped by
Ctrl-C or SIGTERM, before any record or while records come fast, says what was done and
what a rerun will do. Every test is a real ``python -m minijudge`` process.

Issue 30, first part: a run whose judge fails says so while it happens, and a stopped run
says what was done and what a rerun will do.

(1) While requests fail and are retried, the progress line (stderr on a terminal: a pty
here) says why and what happens next, within about 2 s, and returns to normal once
requests succeed. (2) Ctrl-C (SIGINT) and SIGTERM: the summary says how many of the
total records were written, and what a rerun does, with --cache and without.

Every test runs ``python -m minijudge`` as a real subprocess against the stub.
"""

import concurrent.futures
import errno
import fcntl
import itertools
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from stub import (PYTHON, CommandLineSideBySide, SideBySide, StubTestCase,  # noqa: E402
                  default_sigint, hang, rate_limited, read_terminal, without_judge)

KEY = "sk-first30a-secret-key-0123456789"


def records(n):
    return "".join(json.dumps({"id": i, "question": "q%d" % i, "response": "r%d" % i}) + "\n"
                   for i in range(n))


def last_progress(tty):
    """The progress line as it was left, before the summary."""
    return tty.split("\r\nminijudge: ")[0].split("\r")[-1]


class TerminalTestCase(StubTestCase):
    def spawn(self, *argv, **options):
        """``python -m minijudge`` against the stub, with a key that must never show."""
        env = without_judge({"OPENAI_API_KEY": KEY})
        options.setdefault("stdout", subprocess.PIPE)
        options.setdefault("stderr", subprocess.PIPE)
        proc = subprocess.Popen(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
             "--judge-model", "judge-model", "--no-preflight", "--max-error-rate", "1"]
            + [str(a) for a in argv], cwd=REPO, env=env, **options)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def on_terminal(self, *argv, columns=0):
        """(process, master end of the pty that is its stderr), the pty ``columns`` wide
        (0: unknown, as a pty nobody sized)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        proc = self.spawn(*argv, stderr=slave, stdout=subprocess.DEVNULL)
        os.close(slave)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc, master

    def read_until(self, master, text, timeout):
        """What the terminal showed until ``text`` appeared (or ``timeout`` s passed)."""
        tty, deadline = b"", time.monotonic() + timeout
        while text not in tty and time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                tty += chunk
        return tty

    def read_rest(self, master, proc):
        tty = self.read_until(master, b"\x00never\x00", 30)
        os.close(master)
        proc.wait(timeout=30)
        return tty.decode("utf-8", "replace")

    def assertNoKey(self, *texts):
        for text in texts:
            self.assertNotIn(KEY, text)


class RetryingProgressTest(SideBySide, TerminalTestCase):
    # each test waits on retries, a restart or the 3 s hang threshold, its subprocess idle:
    # all eight run at once, each with its own stub, pty and process
    side_by_side = 8

    def test_a_429_shows_on_the_progress_line_then_the_line_returns_to_normal(self):
        source = self.write("in.jsonl", records(3))
        # record 0 is judged, record 1 meets three 429s, then all goes well
        self.srv.push("4", rate_limited("0"), rate_limited("0"), rate_limited("0"))
        proc, master = self.on_terminal(
            "--concurrency", "1", "--retry-min-wait", "0.6", "--retry-max-wait", "0.6",
            "-o", self.path("out"), source)
        tty = self.read_rest(master, proc)
        self.assertEqual(proc.returncode, 0, tty)
        # each retry waits 0.6 s: the line, redrawn every 0.5 s, shows the second or third
        self.assertRegex(tty, r"\r  1/3 done, 0 failed; judge answers http 429 too many "
                              r"requests; retry [23] of 5 in 0\.6 s   ")
        self.assertNotIn("retry 4 of 5", tty)
        last = last_progress(tty)
        self.assertRegex(last, r"^  3/3 done, [0-9.]+/s ETA 0 s, 0 failed *$")
        self.assertNoKey(tty)

    def test_on_a_narrow_terminal_the_line_is_cut_not_wrapped(self):
        # a line wider than the terminal wraps, and \r then redraws only its last row
        source = self.write("in.jsonl", records(2))
        self.srv.push("4", rate_limited("0"), rate_limited("0"))
        proc, master = self.on_terminal(
            "--concurrency", "1", "--retry-min-wait", "0.6", "--retry-max-wait", "0.6",
            "-o", self.path("out"), source, columns=60)
        tty = self.read_rest(master, proc)
        self.assertEqual(proc.returncode, 0, tty)
        lines = tty.split("\r\nminijudge: ")[0].split("\r")[1:]
        self.assertIn("  1/2 done, 0 failed; judge answers http 429 too many re...", lines)
        widths = [len(line) for line in lines]
        self.assertLessEqual(max(widths), 59)
        self.assertEqual(widths, sorted(widths))  # each covers the one before

    def test_with_several_judges_the_line_names_the_one_retried(self):
        source = self.write("in.jsonl", records(2))
        judges = self.write("judges.json", json.dumps([{"name": "a"}, {"name": "b"}]))
        # record 0: a then b are judged; record 1: a meets two 429s
        self.srv.push("4", "4", rate_limited("0"), rate_limited("0"))
        proc, master = self.on_terminal(
            "--concurrency", "1", "--retry-min-wait", "0.6", "--retry-max-wait", "0.6",
            "--judges", judges, "-o", self.path("out"), source)
        tty = self.read_rest(master, proc)
        self.assertEqual(proc.returncode, 0, tty)
        self.assertRegex(tty, r"\r  1/2 done, 0 failed; judge a answers http 429 too many "
                              r"requests; retry [12] of 5 in 0\.6 s   ")
        self.assertNotIn("judge b answers", tty)

    def test_a_judge_that_dies_mid_run_shows_within_two_seconds(self):
        source = self.write("in.jsonl", records(50))
        self.srv.delay = 0.05
        # from the third request the stub answers only once it stopped (which cuts it
        # off): on a loaded machine the run judged 39 of the 50 before the test got to
        # stop it, and only 11 failed
        gone = threading.Event()

        def after_the_stop(request):
            if self.srv.chat_count >= 3:
                gone.wait(10)
        self.srv.responder = after_the_stop
        proc, master = self.on_terminal("--concurrency", "1", "--restart-wait", "3",
                                        "-o", self.path("out"), source)
        self.read_until(master, b"done", 10)
        deadline = time.monotonic() + 10
        while self.srv.chat_count < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.srv.stop(hold_port=True)  # refused until the test ends, not taken by another
        gone.set()
        stopped = time.monotonic()
        tty = self.read_until(master, b"judge unreachable: connection refused", 5)
        seen = time.monotonic() - stopped
        self.assertIn(b"judge unreachable: connection refused; retrying for ", tty)
        self.assertLess(seen, 2.0)
        tty = tty.decode() + self.read_rest(master, proc)
        self.assertRegex(tty, r"judge unreachable: connection refused; retrying for [0-9] s "
                              r"more \(--restart-wait\)")
        self.assertEqual(proc.returncode, 0, tty)  # --max-error-rate 1
        # the record that gave up is counted failed, and the line says no more retrying;
        # how many were judged before the server was gone depends on the machine's pace
        with open(self.path("out")) as f:
            failed = sum(json.loads(line)["judge_status"] != "ok" for line in f)
        self.assertGreater(failed, 25)
        self.assertRegex(last_progress(tty),
                         r"^  50/50 done, [0-9.]+/s ETA 0 s, {} failed *$".format(failed))
        self.assertNoKey(tty)

    def test_a_judge_that_restarts_is_shown_unreachable_then_the_line_recovers(self):
        source = self.write("in.jsonl", records(30))
        self.srv.delay = 0.02
        # from the third request the stub answers only once it stopped (which cuts them
        # off, and their retries are refused): on a loaded machine the 30 records were
        # all judged before the test got to stop it
        stopped = threading.Event()

        def after_the_stop(request):
            if self.srv.chat_count >= 3:
                stopped.wait(10)
        self.srv.responder = after_the_stop
        proc, master = self.on_terminal("--concurrency", "2", "-o", self.path("out"), source)
        deadline = time.monotonic() + 10
        while self.srv.chat_count < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        port = self.srv.port
        self.srv.stop(hold_port=True)  # held while down: no other process's server takes it
        stopped.set()
        tty = self.read_until(master, b"judge unreachable: connection refused", 5)
        self.srv.start(port=port)
        tty = tty.decode() + self.read_rest(master, proc)
        self.assertEqual(proc.returncode, 0, tty)
        self.assertIn("judge unreachable: connection refused; retrying for ", tty)
        last = last_progress(tty)
        self.assertRegex(last, r"^  30/30 done, [0-9.]+/s ETA 0 s, 0 failed *$")
        with open(self.path("out")) as f:
            out = [json.loads(line) for line in f]
        self.assertEqual({r["judge_status"] for r in out}, {"ok"})

    def test_the_total_counts_records_not_newlines(self):
        # blank lines are no records; a last record without its newline is one (the line
        # read "8/8 done" for 7 records, and "6/5 done ... ETA -0 s" with no blank line);
        # a shard's share of 7 records over 2 is 4 and 3 (it read 4 and 4)
        last = json.dumps({"id": 6, "question": "q6", "response": "r6"})
        source = self.write("in.jsonl", records(6) + "\n\n" + last)
        for shard, total in ((None, 7), ("0/2", 4), ("1/2", 3)):
            argv = ["--concurrency", "1", source]
            if shard:
                argv[:0] = ["--shard", shard]
            proc, master = self.on_terminal(*argv)
            tty = self.read_rest(master, proc)
            self.assertEqual(proc.returncode, 0, tty)
            self.assertRegex(last_progress(tty),
                             r"^  {0}/{0} done, [0-9.]+/s ETA 0 s, 0 failed *$".format(total))

    def test_an_exports_line_counts_no_exported_record_failed(self):
        # it read "3/3 done, ..., 3 failed" where the summary says failed 0
        source = self.write("in.jsonl", records(3))
        proc, master = self.on_terminal("--batch-export", self.path("req"), source)
        tty = self.read_rest(master, proc)
        self.assertEqual(proc.returncode, 0, tty)
        self.assertRegex(last_progress(tty), r"^  3/3 done, [0-9.]+/s ETA 0 s, 0 failed *$")

    def test_a_judge_that_hangs_shows_how_long_nothing_came(self):
        # a host gone without a word (no refusal) is silent until --timeout: the line
        # counts the seconds rather than freeze
        source = self.write("in.jsonl", records(3))
        self.srv.push("4", hang(30))
        proc, master = self.on_terminal("--concurrency", "1", "--timeout", "30", source)
        tty = self.read_until(master, b"1/3 done", 10)
        judged = time.monotonic()  # about when the last reply came
        tty = (tty + self.read_until(master, b"no reply for 3 s", 8)).decode()
        seen = time.monotonic() - judged
        proc.kill()
        proc.communicate(timeout=10)
        os.close(master)
        self.assertLess(seen, 4.5)  # 3 s, and the next redraw
        self.assertRegex(tty, r"\r  1/3 done, [0-9.]+/s ETA [0-9]+ s, 0 failed; no reply "
                              r"for 3 s   ")

    def test_no_terminal_no_progress_line(self):
        # the progress line is a terminal's: a log file gets none, retries or not
        source = self.write("in.jsonl", records(2))
        self.srv.push(rate_limited("0"))
        proc = self.spawn("--retry-min-wait", "0.01", "--retry-max-wait", "0.01", source)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn(b"retry", err)
        self.assertNotIn(b"\r", err)


class StoppedTest(SideBySide, TerminalTestCase):
    side_by_side = 2  # each run is busy till its signal: one a core

    def slow_after(self, n):
        """The stub answers its first ``n`` requests at once, then each after 1 s: a run
        under load cannot end before its signal comes (100 records took 0.6 s)."""
        count = itertools.count(1)

        def responder(request):
            if next(count) > n:
                time.sleep(1)
            return None
        self.srv.responder = responder

    def interrupt(self, sig, *argv, n=100):
        """(exit code, stderr, records written) of a run given ``sig`` after 12 requests."""
        source = self.write("in.jsonl", records(n))
        self.slow_after(12)
        proc = self.spawn("--concurrency", "4", *argv + (source,), preexec_fn=default_sigint)
        deadline = time.monotonic() + 20
        while self.srv.chat_count < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
        err = err.decode()
        self.assertNotIn("Traceback", err)
        self.assertNoKey(err, out.decode())
        if "-o" in argv:
            with open(self.path("out"), "rb") as f:
                out = f.read()
        return proc.returncode, err, out.decode().splitlines()

    def test_ctrl_c_with_cache_says_what_a_rerun_takes_from_it(self):
        code, err, written = self.interrupt(signal.SIGINT, "--cache", self.path("cache"),
                                            "-o", self.path("out"))
        self.assertEqual(code, 130, err)
        judged = [r for r in map(json.loads, written) if r["judge_status"] == "ok"]
        self.assertEqual(len(judged), len(written))
        self.assertIn("  interrupted: {0} of 100 records written to {1}; rerun the same "
                      "command: the {0} judged come from the cache, and {1} is written again, "
                      "whole\n".format(len(written), self.path("out")), err)
        self.assertNotIn("rerun with the same --cache", err)

    def test_sigterm_without_cache_says_a_rerun_judges_everything_again(self):
        code, err, written = self.interrupt(signal.SIGTERM, "-o", self.path("out"))
        self.assertEqual(code, 143, err)
        self.assertIn("  interrupted: {0} of 100 records written to {1}; without --cache a "
                      "rerun judges all 100 again and writes {1} anew: pass --cache FILE "
                      "next time\n".format(len(written), self.path("out")), err)

    def test_ctrl_c_to_stdout_without_cache(self):
        code, err, written = self.interrupt(signal.SIGINT)
        self.assertEqual(code, 130, err)
        self.assertIn("  interrupted: {} of 100 records written to stdout; without --cache "
                      "a rerun judges all 100 again: pass --cache FILE next time\n".format(
                          len(written)), err)

    def test_a_piped_input_has_no_total(self):
        self.slow_after(12)
        source = self.write("in.jsonl", records(100))
        with open(source, "rb") as stdin:  # stdin ("-") is not counted, file or pipe
            proc = self.spawn("--concurrency", "4", "-", stdin=stdin,
                              preexec_fn=default_sigint)
        deadline = time.monotonic() + 20
        while self.srv.chat_count < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        out, err = out.decode(), err.decode()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("  interrupted: {} records written to stdout; without --cache a rerun "
                      "judges every record again: pass --cache FILE next time\n".format(
                          len(out.splitlines())), err)

    def test_a_full_disk_says_the_same_as_stopped(self):
        # RLIMIT_FSIZE: -o fails as on a full disk (EFBIG); the run stops as Ctrl-C does
        import resource
        source = self.write("in.jsonl", records(100))
        proc = self.spawn("-o", self.path("out"), source, preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_FSIZE, (3000, 3000)))
        _, err = proc.communicate(timeout=30)
        err = err.decode()
        with open(self.path("out")) as f:
            written = f.read().splitlines()
        self.assertEqual(proc.returncode, 1, err)
        self.assertGreater(len(written), 0)
        self.assertIn("  stopped: {0} of 100 records written to {1}; without --cache a rerun "
                      "judges all 100 again and writes {1} anew: pass --cache FILE next time\n"
                      "minijudge: error: cannot write {1}: [Errno {2}] {3}\n".format(
                          len(written), self.path("out"), errno.EFBIG,
                          os.strerror(errno.EFBIG)), err)

    def test_a_shard_counts_its_own_records(self):
        code, err, written = self.interrupt(signal.SIGINT, "--shard", "1/3", "--cache",
                                            self.path("cache"))
        self.assertEqual(code, 130, err)
        self.assertIn("  interrupted: {0} of 33 records written to stdout; rerun the same "
                      "command: the {0} judged come from the cache\n".format(len(written)),
                      err)


class StoppedBeforeAnyRecordHostileTest(CommandLineSideBySide):
    """Issue 30's hostile pass (host30).

    Ctrl-C while the first request hangs: nothing done yet."""

    def interrupt(self, *argv):
        """(exit code, stderr) of a run of 3 records given SIGINT once its first request
        is at the stub (which holds every request until the test ends)."""
        import signal
        import threading
        release = threading.Event()
        self.addCleanup(release.set)
        self.srv.responder = lambda request: release.wait(10) and None
        source = self.source([{"question": "q{}".format(i), "response": "r"} for i in range(3)])
        environ = dict(os.environ, PYTHONPATH=os.path.dirname(HERE), LLM_JUDGE_API_KEY=self.KEY)
        proc = subprocess.Popen([*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                                 "--judge-model", "m", "--no-preflight"] + list(argv) + [source],
                                cwd=self.tmp, env=environ, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True,
                                preexec_fn=default_sigint)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.monotonic() + 20
        while not self.srv.requests and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        self.assertEqual((proc.returncode, out), (130, ""), err)
        return err

    def test_no_warning_that_the_file_has_no_records(self):
        # "warning: no records in in.jsonl", then "0 of 3 records written"
        err = self.interrupt()
        self.assertNotIn("no records", err)
        self.assertIn("  interrupted: 0 of 3 records written to stdout; without --cache a "
                      "rerun judges all 3 again: pass --cache FILE next time\n", err)

    def test_an_output_name_with_a_newline_is_shown_on_one_line(self):
        name = os.path.join(self.tmp, "out\n\u202e.jsonl")
        err = self.interrupt("-o", name)
        self.assertIn("  interrupted: 0 of 3 records written to {0}; without --cache a "
                      "rerun judges all 3 again and writes {0} anew: pass --cache FILE next "
                      "time\n".format(repr(name)), err)


class ProgressLineHostileTest(CommandLineSideBySide):
    """Issue 30's hostile pass (host30): the progress line's count of the records waiting
    behind a slow one."""

    def four_records_on_a_terminal(self, concurrency):
        """What a run of four records showed on the terminal that is its stderr."""
        import pty
        source = self.source([{"question": "q{}".format(i), "response": "r"} for i in range(4)])
        master, slave = pty.openpty()
        environ = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        proc = subprocess.Popen([*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                                 "--judge-model", "m", "--no-preflight", "--concurrency",
                                 str(concurrency), source], cwd=self.tmp, env=environ,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        tty = read_terminal(master, 20).decode()
        self.assertEqual(proc.wait(timeout=20), 0, tty)
        return tty

    def test_no_record_said_to_wait_behind_a_slow_one_when_none_does(self):
        # one request at a time, in order: every line said "1 more judged behind a slow
        # one" (the record being written counted as waiting), even "4/4 done"
        self.srv.delay = 0.3  # a redraw for each record (they are 0.25 s apart at least)
        tty = self.four_records_on_a_terminal(concurrency=1)
        self.assertIn("\r  1/4 done, ", tty)
        self.assertNotIn("behind a slow one", tty)

    def test_records_waiting_behind_a_slow_one_are_still_counted(self):
        def responder(request):  # the first record's request is slow, the others quick
            if "\nq0\n" in request.json["messages"][-1]["content"]:
                time.sleep(1.2)
        self.srv.responder = responder
        tty = self.four_records_on_a_terminal(concurrency=2)
        self.assertIn("\r  0/4 done, 3 more judged behind a slow one, ", tty)


class StoppedWhileWritingHostileTest(CommandLineSideBySide):
    """Issue 30's hostile pass (host30).

    Ctrl-C while records come fast (an export; a rerun from the cache is as fast)."""

    def export_interrupted(self, source, attempt):
        """(stderr, lines in -o) of an export given SIGINT once -o holds 100 lines."""
        import signal
        out, prefix = self.path("o{}.jsonl".format(attempt)), self.path("req{}".format(attempt))
        environ = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        proc = subprocess.Popen([*PYTHON, "-m", "minijudge", "--judge-model", "m",
                                 "--batch-export", prefix, "-o", out, source], cwd=self.tmp,
                                env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, preexec_fn=default_sigint)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None and (
                not os.path.exists(out) or os.path.getsize(out) < 60000):
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            self.fail("the export was still running 20 s after SIGINT; stderr: " + err[-2000:])
        self.assertEqual(proc.returncode, 130, err)
        self.assertTrue(os.path.exists(out), "no -o when SIGINT came; stderr: " + err[-2000:])
        with open(out, encoding="utf-8") as f:
            return err, len(f.read().splitlines())

    def test_the_note_counts_the_lines_the_file_holds(self):
        # a signal between a record's write and its count: the note said one fewer (2 of 6
        # runs); and it told an export's user that a rerun judges everything again, when
        # the same command refuses to write over the parts there
        source = self.source([{"question": "q{}".format(i), "response": "r"}
                              for i in range(50000)])  # under load, 5,000 ended first
        # the five attempts run two at a time (each its own export, -o and signal)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(self.export_interrupted, source, attempt)
                    for attempt in range(5)]
        for attempt, run in enumerate(runs):
            with self.subTest(attempt=attempt):
                err, lines = run.result()
                self.assertIn("  interrupted: {} of 50000 records written to {}; the export is "
                              "partial: remove {}.*.jsonl, then rerun the same command\n".format(
                                  lines, self.path("o{}.jsonl".format(attempt)),
                                  self.path("req{}".format(attempt))), err)


if __name__ == "__main__":
    unittest.main()
