"""The command line's files (the sections "Input" and "The run: judging, writing,
stopping"): what it reads and writes kept to its word when the files are hostile, each a
real ``python -m minijudge`` process against the loopback stub.

Issue 11, the input and output side: the command line keeps its word when its files
are hostile. A FIFO read with progress on a terminal, -o or --cache naming another of
its files, /dev/null and /dev/stdout for a user who is not root, a JSON line nested too
deeply, a lone surrogate, a locale that is not UTF-8, NaN, a gzip or UTF-16 file, a full
disk (a real RLIMIT_FSIZE) and SIGTERM. Each test drives ``python -m minijudge`` in a
real process against the loopback stub.

    python -m unittest tests.test_hostile_io -v
"""
import contextlib
import errno
import gzip
import io
import json
import os
import pty
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import (PYTHON, SideBySide, StubTestCase, chat, read_terminal,  # noqa: E402
                  without_judge)

NOBODY = 65534
FILE_TOO_LARGE = "[Errno {}] {}".format(errno.EFBIG, os.strerror(errno.EFBIG))


def good(i, **fields):
    """One JSONL line of record i, as bytes, with its line ending."""
    return json.dumps(dict({"id": i, "question": "q%d" % i, "response": "r%d" % i},
                           **fields)).encode() + b"\n"


def record_asked(request):
    """The id i of the record a chat request asks about (its response is "r<i>"), or None."""
    match = re.search(r"\[The Start of the Response\]\nr(\d+)\b", request.prompt or "")
    return match and int(match.group(1))


def rating_by_id(request):
    """Record i's reply is the rating i % 5 + 1, so a reply given to another record shows."""
    i = record_asked(request)
    if i is None:
        return None
    return chat(str(i % 5 + 1))


def strict_lines(data):
    """The records of JSONL bytes, read as strict JSON (no NaN or Infinity); each line
    must be whole."""
    def refuse(token):
        raise ValueError("not strict JSON: " + token)
    if data and not data.endswith(b"\n"):
        raise AssertionError("a torn last line: {!r}".format(data[-80:]))
    return [json.loads(line.decode("utf-8"), parse_constant=refuse)
            for line in data.splitlines()]


def limit_file_size(size):
    """A preexec_fn: files this process writes stop at size bytes, as on a full disk (Python
    ignores SIGXFSZ, so the write fails with EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def limit_memory():
    """A preexec_fn: 1 GiB of address space, so a file read without end fails fast
    (MemoryError) instead of eating the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def nobody_python():
    """An interpreter the user nobody can run (sys.executable may sit under a private
    /root), or None."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        try:
            if candidate and subprocess.run([candidate, "-c", "import json"], cwd=REPO,
                                            preexec_fn=as_nobody, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL).returncode == 0:
                return candidate
        except OSError:  # not executable for nobody
            pass
    return None


class HostileIOTest(StubTestCase):
    def start_stub(self):
        srv = super().start_stub()
        srv.responder = rating_by_id
        return srv

    def write(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        return self.path(name)

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    def spawn(self, *argv, env=None, python=sys.executable, **options):
        """``python -m minijudge`` against the stub, with no judge settings of ours."""
        env = without_judge(env)
        options.setdefault("stdout", subprocess.PIPE)
        options.setdefault("stderr", subprocess.PIPE)
        proc = subprocess.Popen(
            [python, "-m", "minijudge", "--judge-url", self.srv.url, "--judge-model",
             "judge-model", "--max-retries", "0", "--timeout", "5", "--max-error-rate", "1"]
            + [str(a) for a in argv], cwd=REPO, env=env, **options)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def main(self, *argv):
        """(exit code, stderr) of main() in this process, against the stub."""
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = minijudge.main(["--judge-url", self.srv.url, "--judge-model",
                                   "judge-model", "-q"] + [str(a) for a in argv])
        return code, err.getvalue()

    def run_cli(self, *argv, input=None, timeout=60, **options):
        """(exit code, stdout bytes, stderr text) of a whole run."""
        if input is not None:
            options["stdin"] = subprocess.PIPE
        return self.finish(self.spawn(*argv, **options), input, timeout)

    def finish(self, proc, input=None, timeout=60):
        """run_cli() of a process from spawn()."""
        out, err = proc.communicate(input, timeout=timeout)
        return proc.returncode, out, (err or b"").decode("utf-8", "replace")


class InputHostileTest(SideBySide, HostileIOTest):
    side_by_side = 2  # subprocesses only (see stub.SideBySide): one a core

    def test_a_fifo_with_stderr_on_a_terminal_loses_no_record(self):
        # the progress line once counted the lines by reading the input a second time:
        # what the count read from the FIFO was never judged (85 of 3,000 came out); 500
        # records are 25 KB, three times what the first read takes
        n = 500
        fifo = self.path("in.fifo")
        os.mkfifo(fifo)

        def feed():
            with open(fifo, "wb") as f:
                f.write(b"".join(good(i) for i in range(n)))
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        master, slave = pty.openpty()  # stderr is a terminal: the progress line is on
        proc = self.spawn("--no-preflight", "--concurrency", "16", "-o", self.path("out"),
                          fifo, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        tty = read_terminal(master, 30)
        proc.wait(timeout=30)
        if writer.is_alive():  # the run never opened the FIFO: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        self.assertEqual(proc.returncode, 0, tty)
        out = strict_lines(self.read("out"))
        self.assertEqual([r["id"] for r in out], list(range(n)))
        self.assertEqual({r["judge_status"] for r in out}, {"ok"})
        self.assertEqual(self.srv.chat_count, n)
        self.assertIn("{} done".format(n).encode(), tty)  # no total: a FIFO is not counted

    def test_gzip_or_utf16_input_is_refused_up_front(self):
        # (that the first bytes are peeked, not consumed, the FIFO test shows)
        text = b"".join(good(i) for i in range(3)).decode()
        gz = self.write("data.jsonl.gz", gzip.compress(text.encode()))
        utf16 = self.write("data16.jsonl", text.encode("utf-16"))  # FF FE, little-endian
        cases = [
            ([gz], None, "{0} is gzip-compressed; decompress it (zcat {0} | minijudge ... -)"
             .format(gz)),
            ([utf16], None, utf16 + " is UTF-16; re-encode it as UTF-8 (iconv -f UTF-16 -t "
             "UTF-8)"),
            (["-"], b"\xfe\xff" + text.encode("utf-16-be"), "stdin is UTF-16; re-encode it as "
             "UTF-8 (iconv -f UTF-16 -t UTF-8)"),
            (["-"], gzip.compress(text.encode()), None)]
        # side by side: the interpreters start on both cores
        procs = [self.spawn(*argv, stdin=subprocess.PIPE) for argv, _, _ in cases]
        for proc, (argv, stdin, message) in zip(procs, cases[:-1]):
            with self.subTest(message):
                code, out, err = self.finish(proc, stdin)
                self.assertEqual((code, err, out), (2, "minijudge: error: " + message + "\n",
                                                    b""))
        code, out, err = self.finish(procs[-1], cases[-1][1])
        self.assertEqual((code, err), (2, "minijudge: error: stdin is gzip-compressed; "
                                          "decompress it (zcat FILE | minijudge ... -)\n"))
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_line_nested_too_deeply_is_that_lines_bad_record(self):
        def deep(depth):
            return b'{"a":' * depth + b"1" + b"}" * depth + b"\n"
        # Python up to 3.11 cannot read the 2 KB line of depth 1,000; 3.12 can, and
        # then it is an ordinary record without a response; none reads depth 100,000
        source = self.write("in.jsonl", good(0) + deep(1000) + good(2) + deep(100000)
                            + good(4))
        code, out, err = self.run_cli(source)
        self.assertEqual(code, 0, err)
        self.assertNotIn("Traceback", err)
        out = strict_lines(out)
        too_deep = "line {}: not JSON (nested too deeply)"
        self.assertEqual([(r.get("id"), r["judge_status"]) for r in out],
                         [(0, "ok"), (None, "bad_record"), (2, "ok"), (None, "bad_record"),
                          (4, "ok")])
        self.assertIn(out[1]["judge_error"], (too_deep.format(2), "line 2: no 'response' "
                      "field (choose one with --response-field; the record has a)"))
        self.assertEqual(out[3]["judge_error"], too_deep.format(4))
        self.assertEqual(out[3]["judge_input"], '{"a":' * 40)  # the first 200 characters


class OutputHostileTest(SideBySide, HostileIOTest):
    side_by_side = 2  # as InputHostileTest

    def test_a_lone_surrogate_is_judged_and_written_back_escaped(self):
        source = self.write("in.jsonl", good(0) + b'{"id": 1, "question": "q", '
                            b'"response": "r1 hi \\ud83d"}\n' + good(2))
        code, _, err = self.run_cli("-o", self.path("out"), source)
        self.assertEqual(code, 0, err)
        out = self.read("out")
        self.assertIn(b'"response": "r1 hi \\ud83d"', out)  # the JSON escape, as it came
        records = strict_lines(out)
        self.assertEqual([(r["id"], r["judge_status"], r["judge_value"]) for r in records],
                         [(0, "ok", 1), (1, "ok", 2), (2, "ok", 3)])
        self.assertEqual(records[1]["response"], "r1 hi \ud83d")

    def test_utf8_is_written_whatever_the_locale(self):
        source = self.write("in.jsonl", good(0, note="café, 日本") + good(1)[:-2]
                            + b', "note": "\\ud83d"}\n')
        env = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C", "PYTHONUTF8": "0"}
        code, out, err = self.run_cli(source, env=env)  # to stdout, a pipe
        self.assertEqual(code, 0, err)
        self.assertIn('"note": "café, 日本"'.encode("utf-8"), out)  # UTF-8, not escaped
        self.assertIn(b'"note": "\\ud83d"', out)
        self.assertEqual([(r["judge_status"], r["note"]) for r in strict_lines(out)],
                         [("ok", "café, 日本"), ("ok", "\ud83d")])

    def test_nan_and_infinity_are_written_as_null(self):
        source = self.write("in.jsonl", good(0)[:-2] + b', "x": NaN}\n' + good(1)[:-2]
                            + b', "y": 1e999, "z": [-Infinity, 1.5]}\n' + good(2))
        code, out, err = self.run_cli(source)
        self.assertEqual(code, 0, err)
        out = strict_lines(out)  # fails on a NaN or Infinity token
        self.assertEqual([(r["id"], r["judge_status"]) for r in out],
                         [(0, "ok"), (1, "ok"), (2, "ok")])
        self.assertEqual((out[0]["x"], out[1]["y"], out[1]["z"]), (None, None, [None, 1.5]))


class OptimizedHostileTest(HostileIOTest):
    def test_flags_are_checked_under_python_dash_o(self):
        # python -O drops assert statements: a check written as one would let these through
        source = self.write("in.jsonl", b'{"question": "q", "response": "r"}\n')
        cases = (("--concurrency", "0"), ("--scale", "5,1"), ("--timeout", "nan"))
        # side by side: the interpreters start on both cores
        procs = [self.spawn(flag, value, source, python=sys.executable,
                            env={"PYTHONOPTIMIZE": "1"}) for flag, value in cases]
        for (flag, _), proc in zip(cases, procs):
            with self.subTest(flag=flag):
                code, out, err = self.finish(proc)
                self.assertEqual((code, out), (2, b""), err)
                self.assertIn("minijudge: error: {} must be".format(flag), err)
        self.assertEqual(self.srv.chat_count, 0)


class SameFileHostileTest(HostileIOTest):
    def test_output_cache_or_summary_naming_another_file_of_the_run_is_refused(self):
        data = b"".join(good(i) for i in range(3))
        source = self.write("in.jsonl", data)
        other = self.write("other.jsonl", b'{"old": 1}\n')
        link = self.path("link.jsonl")
        os.symlink(source, link)
        os.mkdir(self.path("sub"))
        respelled, new = self.path("sub/../in.jsonl"), self.path("new.jsonl")
        real = [  # in a real process
            (["-o", source, source], "-o {} is the input file".format(source)),
            (["-o", link, source], "-o {} is the input file {}".format(link, source)),
            (["-o", other, "--cache", other, source], "--cache {} is the -o file".format(other))]
        in_process = [  # the other pairs and spellings, quicker through main()
            (["-o", respelled, source], "-o {} is the input file {}".format(respelled, source)),
            (["--cache", link, source], "--cache {} is the input file {}".format(link, source)),
            (["--summary", other, "--cache", other, source],
             "--summary {} is the --cache file".format(other)),
            (["--summary", respelled, source],
             "--summary {} is the input file {}".format(respelled, source)),
            (["-o", new, "--summary", self.path("sub/../new.jsonl"), source],  # not there yet
             "--summary {} is the -o file {}".format(self.path("sub/../new.jsonl"), new))]
        for argv, message in real + in_process:
            with self.subTest(" ".join(argv)):
                self.srv.clear()  # and the files as they were, whatever the last case did
                self.write("in.jsonl", data)
                self.write("other.jsonl", b'{"old": 1}\n')
                if os.path.exists(new):
                    os.remove(new)
                if (argv, message) in real:
                    code, _, err = self.run_cli(*argv, timeout=10)
                else:
                    code, err = self.main(*argv)
                self.assertEqual((code, err), (2, "minijudge: error: {}; write elsewhere\n"
                                               .format(message)))
                self.assertEqual(self.read("in.jsonl"), data)  # untouched
                self.assertEqual(self.read("other.jsonl"), b'{"old": 1}\n')
                self.assertFalse(os.path.exists(new))
                self.assertEqual(self.srv.chat_count, 0)
        # /dev/null is no regular file: it may take both -o and --summary
        code, err = self.main("-o", os.devnull, "--summary", os.devnull, source)
        self.assertEqual(code, 0, err)

    def test_output_on_the_file_given_as_stdin_or_on_a_folder_is_refused(self):
        # `minijudge - -o in.jsonl < in.jsonl` truncated its own input; -o on a folder
        # ended in an IsADirectoryError traceback
        data = b"".join(good(i) for i in range(3))
        source = self.write("in.jsonl", data)
        with open(source, "rb") as stdin:  # side by side with the three runs below
            own_input = self.spawn("-o", source, "-", stdin=stdin)
        runs = [self.spawn(flag, self.tmp, source) for flag in ("-o", "--cache", "--summary")]
        code, out, err = self.finish(own_input, timeout=10)
        self.assertEqual((code, err), (2, "minijudge: error: -o {} is the input file (stdin); "
                                          "write elsewhere\n".format(source)))
        self.assertEqual(self.read("in.jsonl"), data)
        for flag, proc in zip(("-o", "--cache", "--summary"), runs):
            with self.subTest(flag):
                self.assertEqual(self.finish(proc, timeout=10)[::2], (2, "minijudge: error: "
                                 "{} {} is a folder; name a file\n".format(flag, self.tmp)))
        with open(source, "rb") as stdin:  # stdin from a file is still judged as stdin
            code, out, err = self.finish(self.spawn("-o", self.path("out.jsonl"), "-",
                                                    stdin=stdin), timeout=10)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(self.read("out.jsonl").splitlines()), 3)
        self.assertEqual(self.srv.chat_count, 3)

    def test_dev_null_and_dev_stdout_are_writable_for_a_user_who_is_not_root(self):
        if os.getuid() == 0:
            python = nobody_python()
            if python is None:
                self.skipTest("no interpreter the user nobody can run")
            options = dict(python=python, preexec_fn=as_nobody)
        else:
            options = {}
        os.chmod(self.tmp, 0o755)  # readable by nobody, not writable
        source = self.write("in.jsonl", b"".join(good(i) for i in range(3)))
        # three runs side by side: the interpreters start on both cores
        null = self.spawn("-o", os.devnull, "--summary", os.devnull, source, **options)
        with open(self.path("stdout"), "wb") as stdout:  # what nobody's shell would open
            os.chown(self.path("stdout"), NOBODY, NOBODY)
            to_stdout = self.spawn("-o", "/dev/stdout", source, stdout=stdout, **options)
        if options:  # and a folder nobody cannot write to is still refused up front
            refused = self.spawn("-o", self.path("new.jsonl"), source, **options)
        code, out, err = self.finish(null)
        self.assertEqual((code, out), (0, b""), err)
        self.assertIn("3 records", err)
        code, out, err = self.finish(to_stdout)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["id"] for r in strict_lines(self.read("stdout"))], [0, 1, 2])
        if options:
            code, out, err = self.finish(refused)
            self.assertEqual((code, err), (2, "minijudge: error: -o {}: cannot write there\n"
                                           .format(self.path("new.jsonl"))))


class FullDiskHostileTest(SideBySide, HostileIOTest):
    side_by_side = 2  # as InputHostileTest

    def cached_keys(self, name):
        with open(self.path(name), "rb") as f:
            lines = f.read().split(b"\n")[:-1]
        keys = set()
        for line in lines:
            try:
                keys.add(json.loads(line)["key"])
            except ValueError:
                pass  # a line torn by the full disk
        return keys

    def check_stopped(self, code, out, err, where, n):
        """A run stopped by a full disk: exit 1, the error naming the file, the summary of
        the records written, whole lines, no internal_error; the records written."""
        self.assertEqual(code, 1, err)
        self.assertNotIn("Traceback", err)
        self.check_said_once(err, where)
        written = strict_lines(out)
        self.assertGreater(len(written), 0)
        self.assertLess(len(written), n)
        self.assertEqual([(r["id"], r["judge_status"]) for r in written],
                         [(i, "ok") for i in range(len(written))])
        self.assertIn("minijudge: {} records in".format(len(written)), err)
        return written

    def check_said_once(self, err, where):
        """The full file said once (not once a worker); the requests counted as sent (4 in
        flight at the summary may be missed)."""
        self.assertEqual(err.count("minijudge: error: cannot write"), 1, err)
        self.assertIn("minijudge: error: cannot write {}: {}\n".format(where, FILE_TOO_LARGE),
                      err)
        requests = int(re.search(r" records in [\d.]+ s \((\d+) requests,", err).group(1))
        in_flight = 4  # --concurrency: a request may still be under way at the summary
        self.assertLessEqual(self.srv.chat_count - in_flight, requests, err)
        self.assertLessEqual(requests, self.srv.chat_count, err)

    def check_resumed(self, argv, n, cached):
        self.srv.clear()
        code, out, err = self.run_cli(*argv)
        self.assertEqual(code, 0, err)
        out = strict_lines(self.read("out") if "-o" in argv else out)
        self.assertEqual([(r["id"], r["judge_status"], r["judge_value"]) for r in out],
                         [(i, "ok", i % 5 + 1) for i in range(n)])
        # no cached reply paid twice: the records asked are those the cache lacks. Counted
        # by record, not request: one the stopped run had in flight can reach the stub after
        # clear() on a busy host (CI saw 45 requests for the 43 records left)
        asked = {record_asked(r) for r in self.srv.requests if r.path.endswith("/completions")}
        self.assertEqual(len(asked), n - len(cached))

    def test_a_full_disk_on_o_stops_cleanly_and_a_rerun_resumes(self):
        n, limit = 60, 40000
        pad = "x" * 2000  # output lines of ~2 KB; cache lines stay small, far from the limit
        source = self.write("in.jsonl", b"".join(good(i, pad=pad) for i in range(n)))
        argv = ["--concurrency", "4", "--cache", self.path("cache"), "-o", self.path("out"),
                source]
        code, _, err = self.run_cli(*argv, preexec_fn=limit_file_size(limit))
        self.check_stopped(code, self.read("out"), err, self.path("out"), n)
        self.assertLessEqual(os.path.getsize(self.path("out")), limit)
        self.check_resumed(argv, n, self.cached_keys("cache"))

    def test_a_full_disk_on_the_cache_stops_cleanly_and_a_rerun_resumes(self):
        n = 120  # ~300-byte cache lines: the 12 KB limit comes after ~40 records
        source = self.write("in.jsonl", b"".join(good(i) for i in range(n)))
        argv = ["--concurrency", "4", "--cache", self.path("cache"), source]
        code, out, err = self.run_cli(*argv, preexec_fn=limit_file_size(12000))
        self.check_stopped(code, out, err, self.path("cache"), n)
        self.check_resumed(argv, n, self.cached_keys("cache"))

    def test_a_cache_full_at_its_first_line_says_so_once_and_counts_what_was_sent(self):
        # 300 bytes: every reply's line fails; each worker said the error, and the summary
        # said "0 requests" of the requests sent
        source = self.write("in.jsonl", b"".join(good(i) for i in range(20)))
        code, out, err = self.run_cli("--concurrency", "4", "--cache", self.path("fc.jsonl"),
                                      source, preexec_fn=limit_file_size(300))
        self.assertEqual((code, out), (1, b""), err)
        self.assertNotIn("Traceback", err)
        self.check_said_once(err, self.path("fc.jsonl"))
        self.assertGreater(self.srv.chat_count, 0)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full")
    def test_o_on_a_device_that_is_always_full_is_an_error_not_a_traceback(self):
        # the torn line is cut off a regular file; a device cannot be truncated
        source = self.write("in.jsonl", b"".join(good(i) for i in range(3)))
        code, _, err = self.run_cli(source, "-o", "/dev/full")
        self.assertEqual(code, 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("minijudge: error: cannot write /dev/full: [Errno {}] {}\n".format(
            errno.ENOSPC, os.strerror(errno.ENOSPC)), err)


class CacheFileHostileTest(SideBySide, HostileIOTest):
    side_by_side = 2  # as InputHostileTest

    def test_a_cache_that_is_no_regular_file_is_refused_before_a_request(self):
        # `--cache /dev/full` read a "line" that never ends until the kernel killed the run
        # (a MemoryError under a memory limit); a FIFO waited for ever on a reader
        source = self.write("in.jsonl", b"".join(good(i) for i in range(3)))
        fifo, link = self.path("fifo"), self.path("link")
        os.mkfifo(fifo)
        os.symlink("/dev/zero", link)
        cases = [(fifo, "a FIFO"), (link, "a device")]
        cases += [(path, "a device") for path in ("/dev/full", "/dev/zero", os.devnull)
                  if os.path.exists(path)]
        runs = [self.spawn("--cache", path, source, preexec_fn=limit_memory)
                for path, _ in cases]
        for (path, kind), proc in zip(cases, runs):
            with self.subTest(path):
                code, out, err = self.finish(proc, timeout=20)
                self.assertEqual((code, out, err), (2, b"", "minijudge: error: cache (--cache) "
                                 "{!r} is not a regular file ({})\n".format(path, kind)))
        self.assertEqual(self.srv.chat_count, 0)
        # the library's keyword is checked by the same code, and so are a cache reopened
        # after close() and an unpickled one, once a FIFO is where their file was
        script = ("import minijudge, os, pickle, sys\n"
                  "url, fifo, swapped = sys.argv[1:]\n"
                  "judge = minijudge.LLMJudge(base_url=url, model='m', cache=swapped)\n"
                  "data = pickle.dumps(judge.cache)\n"
                  "judge.close()\n"
                  "os.remove(swapped)\n"
                  "os.mkfifo(swapped)\n"
                  "for opening in (lambda: minijudge.LLMJudge(base_url=url, cache=fifo),\n"
                  "                lambda: judge.cache.get('0' * 64),\n"
                  "                lambda: pickle.loads(data)):\n"
                  "    try:\n"
                  "        opening()\n"
                  "    except minijudge.JudgeError as exc:\n"
                  "        print(exc)\n")
        swapped = self.path("swapped.jsonl")
        done = subprocess.run([sys.executable, "-c", script, self.srv.url, fifo, swapped],
                              cwd=REPO, env=without_judge(), preexec_fn=limit_memory,
                              timeout=20, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = "cache (--cache) {!r} is not a regular file (a FIFO)\n"
        self.assertEqual((done.returncode, done.stdout.decode(), done.stderr), (
            0, said.format(fifo) + said.format(swapped) * 2, b""))

    def test_a_cache_linked_to_a_regular_file_is_that_file(self):
        source = self.write("in.jsonl", b"".join(good(i) for i in range(3)))
        self.write("real.jsonl", b"")
        os.symlink(self.path("real.jsonl"), self.path("link.jsonl"))
        for sent in (3, 0):  # the rerun reads the replies back through the link
            code, out, err = self.run_cli("--cache", self.path("link.jsonl"), source)
            self.assertEqual(code, 0, err)
            self.assertEqual(len(strict_lines(out)), 3)
            self.assertEqual(self.srv.chat_count, sent)
            self.srv.clear()
        self.assertEqual(len(self.read("real.jsonl").splitlines()), 3)


class SigtermHostileTest(HostileIOTest):
    def test_sigterm_writes_whole_lines_and_the_summary_and_a_rerun_resumes(self):
        n = 100
        source = self.write("in.jsonl", b"".join(good(i) for i in range(n)))
        argv = ["--concurrency", "4", "-o", self.path("out"), source]
        code, _, err = self.run_cli("--cache", self.path("fresh-cache"), *argv)
        self.assertEqual(code, 0, err)
        uninterrupted = self.read("out")

        self.srv.clear()
        self.srv.delay = 0.02
        cache = ["--cache", self.path("cache")]
        proc = self.spawn(*cache + argv)
        deadline = time.monotonic() + 20
        while self.srv.chat_count < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        err = err.decode()
        self.assertEqual(proc.returncode, 143, err)
        self.assertNotIn("Traceback", err)
        written = strict_lines(self.read("out"))
        self.assertLess(len(written), n)
        self.assertEqual([r["id"] for r in written], list(range(len(written))))
        self.assertIn("minijudge: {} records in".format(len(written)), err)
        self.assertIn("  interrupted: {0} of {1} records written to {2}; rerun the same "
                      "command: the {0} judged come from the cache, and {2} is written "
                      "again, whole\n".format(len(written), n, self.path("out")), err)

        self.srv.delay = 0
        code, _, err = self.run_cli(*cache + argv)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.read("out"), uninterrupted)


THREE_RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class StdoutHostileTest(SideBySide):
    """Issue 28's independent hostile campaign (hostA): records to stdout, a file the run reads
    or a pipe the summary shares, are refused."""

    side_by_side = 2  # subprocesses only: its two tests at once, one a core
    def test_records_to_stdout_that_is_a_file_the_run_reads_are_refused(self):
        # `minijudge in.jsonl >> in.jsonl` read 29 of its own records back, judged them, exit 0
        data = self.write_jsonl("in.jsonl", THREE_RECORDS)
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
        data = self.write_jsonl("in.jsonl", THREE_RECORDS)
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


class FifoOutputHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2A): an output named as the FIFO the run reads
    is refused before it is opened."""

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


if __name__ == "__main__":
    unittest.main()
