"""tests/run.py, the suite's runner, through the real script in a subprocess over modules
written to a folder of each test's own. It exits 0 only when every module reported and
nothing failed; its totals, its closing line, its exit status and its FAIL/ERROR reports
are those of ``python -m unittest discover -s FOLDER`` on the same folder; a module that
ends its process, hangs past --timeout or is interrupted is an error naming the test it
was running."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stub import SideBySide, default_sigint  # noqa: E402

MODULES = {
    "test_good": """
        import unittest
        class Good(unittest.TestCase):
            def test_one(self):
                pass
            def test_two(self):
                self.assertEqual(sum([1, 2]), 3)
            @unittest.skip("not here")
            def test_skipped(self):
                pass
        """,
    "test_bad": """
        import unittest
        class Bad(unittest.TestCase):
            def test_fails(self):
                self.assertEqual(1, 2, "one is not two")
            def test_errs(self):
                raise RuntimeError("broken on purpose")
        """,
    "test_more": """
        import unittest
        class More(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                cls.ready = True
            def test_fixture(self):
                self.assertTrue(self.ready)
        """,
}

# a test that waits until killed, saying first (in a file beside it) that it started and
# the pid of a child process of its own, which must not outlive it
HANGS = """
    import os
    import subprocess
    import sys
    import time
    import unittest
    class Hangs(unittest.TestCase):
        def test_first(self):
            pass
        def test_hangs(self):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            started = os.path.join(os.path.dirname(__file__), "started")
            with open(started + ".part", "w") as f:  # whole when it appears: the test
                f.write(str(child.pid))  # signals run.py once it exists
            os.replace(started + ".part", started)
            time.sleep(600)
    """


def terminal_signals():
    """A Popen preexec_fn: SIGINT and SIGHUP as a terminal's, whatever a shell that started
    us did with them (a background job's SIGINT, nohup's SIGHUP: both ignored)."""
    default_sigint()
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def ran(tests, skipped=1):
    """unittest's count of ``tests``, ``skipped`` of them skipped, as in "Ran 6 tests":
    Python 3.12.0 and 3.12.1 leave the skipped out."""
    class Skipped(unittest.TestCase):
        @unittest.skip("to see if it counts")
        def runTest(self):
            pass
    result = unittest.TestResult()
    Skipped().run(result)
    count = tests - skipped + skipped * result.testsRun
    return r"\nRan {} tests? in [0-9.]+s\n\n".format(count)


def summary(out):
    """What run.py and discovery must agree on: the count of tests run, the closing line,
    and each report's header (ERROR: name) with its last line, in order."""
    out = re.sub(r"^(Ran \d+ tests?) in [0-9.]+s$", r"\1", out, flags=re.M)
    ran = re.findall(r"^Ran \d+ tests?$", out, re.M)
    closing = out.rstrip("\n").rsplit("\n", 1)[-1]
    reports = re.findall(r"^={70}\n(.+)\n-{70}\n(?:.*\n)*?(.+)\n\n", out, re.M)
    return ran, closing, reports


class RunnerTest(SideBySide):
    def folder(self, modules, under=""):
        folder = os.path.join(self.tmp, under)
        os.makedirs(folder, exist_ok=True)
        for name, text in modules.items():
            with open(os.path.join(folder, name + ".py"), "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        return folder

    def run_py(self, *argv, discover=False, then=None):
        """(exit code, stdout and stderr) of tests/run.py, or of unittest's discovery;
        ``then(proc)`` is called once it started. The output goes to a file, not a pipe:
        a process a runner left behind could hold a pipe open, and the test with it."""
        command = [sys.executable, os.path.join(HERE, "run.py"), *argv]
        if discover:
            command = [sys.executable, "-m", "unittest", "discover", *argv]
        with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                    cwd=self.tmp, preexec_fn=terminal_signals)
            try:
                if then:
                    then(proc)
                proc.wait(timeout=120)
            finally:
                proc.kill()
                proc.wait()
            out.seek(0)
            return proc.returncode, out.read()

    def as_discovery(self, folder, *argv):
        """run.py's exit code and output on ``folder``, checked to say what discovery says."""
        code, out = self.run_py("-s", folder, *argv)
        said_code, said = self.run_py("-s", folder, discover=True)
        self.assertEqual(summary(out), summary(said), "\n" + out + "\n" + said)
        self.assertEqual(code, said_code, "\n" + out + "\n" + said)
        return code, out

    def test_failures_are_reported_whole_and_counted_as_discovery_counts_them(self):
        code, out = self.as_discovery(self.folder(MODULES), "--jobs", "2")
        self.assertEqual(code, 1, out)
        self.assertIn("\nFAIL: test_fails (test_bad.Bad", out)
        self.assertIn("AssertionError: 1 != 2 : one is not two", out)
        self.assertIn("\nERROR: test_errs (test_bad.Bad", out)
        self.assertIn("RuntimeError: broken on purpose", out)
        self.assertRegex(out, ran(6) + r"FAILED \(failures=1, errors=1, "
                              r"skipped=1\)\n$")

    def test_passing_modules_exit_0_and_named_modules_alone_run(self):
        folder = self.folder(MODULES)
        code, out = self.run_py("-s", folder, "test_good", "test_more", "--jobs", "1")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, ran(4) + r"OK \(skipped=1\)\n$")
        code, out = self.run_py("-s", folder, "test_bad.Bad.test_fails")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, ran(1, skipped=0) + r"FAILED \(failures=1\)\n$")

    def test_the_slowest_modules_of_the_last_run_start_first_and_times_prints_them(self):
        # each module says, as it is imported, that it started: one at a time, in order
        says = "import os\n" \
               "open(os.path.join(os.path.dirname(__file__), 'order'), 'a')" \
               ".write(__name__ + ' ')\n"
        folder = self.folder({name: says + textwrap.dedent(text)
                              for name, text in MODULES.items()})
        kept = os.path.join(folder, "__pycache__", "run-times.json")
        os.makedirs(os.path.dirname(kept))
        with open(kept, "w", encoding="utf-8") as f:
            f.write('{"test_bad": 0.5, "test_more": 9, "test_gone": 20}')
        code, out = self.run_py("-s", folder, "--jobs", "1", "--times")
        self.assertEqual(code, 1, out)
        with open(os.path.join(folder, "order"), encoding="utf-8") as f:
            # test_good not timed yet: first; then the slowest of the last run
            self.assertEqual(f.read(), "test_good test_more test_bad ")
        self.assertRegex(out, r"FAILED \(failures=1, errors=1, skipped=1\)\n\n"
                              r"run\.py: seconds of each module \(wall, CPU\):\n"
                              r"(?: +[0-9.]+ +[0-9.]+  test_(good|bad|more)\n){3}"
                              r" +[0-9.]+ +[0-9.]+  in all \(the wall seconds summed")
        with open(kept, encoding="utf-8") as f:
            times = json.load(f)
        self.assertEqual(sorted(times), ["test_bad", "test_gone", "test_good", "test_more"])
        self.assertLess(times["test_more"], 9)  # this run's seconds, not the last's

    def test_a_module_that_exits_at_import_is_an_error_as_in_discovery(self):
        # the runner this replaced took the SystemExit for its own: exit 0, dots only
        folder = self.folder(dict(MODULES, test_exits="""
            import sys
            sys.exit(0)
            """))
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 1, out)
        self.assertIn("\nERROR: test_exits (unittest.loader._FailedTest", out)
        self.assertIn("ImportError: Failed to import test module: test_exits\n", out)
        self.assertIn("\nSystemExit: 0\n", out)
        self.assertTrue(out.endswith("\nFAILED (failures=1, errors=2, skipped=1)\n"), out)

    def test_a_test_that_ends_its_process_is_an_error_naming_it(self):
        # discovery itself stops there and exits 0; run.py says which test ended the
        # process, counts the tests that ran before it and the modules' after it
        folder = self.folder(dict(MODULES, test_ends="""
            import os
            import unittest
            class Ends(unittest.TestCase):
                def test_a_first(self):
                    pass
                def test_b_ends(self):
                    os._exit(0)
                def test_c_never(self):
                    pass
            """, test_ends_at_import="""
            import os
            os._exit(3)
            """))
        code, out = self.run_py("-s", folder, "--jobs", "2")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"\nERROR: test_b_ends \(test_ends\.Ends(\.test_b_ends)?\)\n-+\n"
                              r"run\.py: test_ends ended its process \(exit status 0\) "
                              r"without its report, in this test\n")
        self.assertIn("\nERROR: test_ends_at_import (run.py)\n" + "-" * 70 + "\nrun.py: "
                      "test_ends_at_import ended its process (exit status 3) without its "
                      "report, while importing the module\n", out)
        self.assertRegex(out, ran(9) + r"FAILED \(failures=1, errors=3, "
                              r"skipped=1\)\n$")

    def test_a_syntax_error_is_an_error_with_its_traceback_as_in_discovery(self):
        folder = self.folder(dict(MODULES, test_syntax="""
            import unittest
            class Broken(unittest.TestCase):
                def test_never(self:
                    pass
            """))
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 1, out)
        self.assertIn("\nERROR: test_syntax (unittest.loader._FailedTest", out)
        self.assertIn("SyntaxError: ", out)
        self.assertRegex(out, 'test_syntax.py", line [45]\n')  # 3.8's parser: 5
        self.assertTrue(out.endswith("\nFAILED (failures=1, errors=2, skipped=1)\n"), out)

    def test_a_module_that_skips_itself_is_skipped_as_in_discovery(self):
        folder = self.folder({"test_good": MODULES["test_good"], "test_skips": """
            import unittest
            raise unittest.SkipTest("not on this machine")
            """})
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 0, out)
        self.assertTrue(out.endswith("\nOK (skipped=2)\n"), out)
        code, out = self.run_py("-s", folder, "test_skips")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, ran(1) + r"(OK|NO TESTS RAN) \(skipped=1\)\n$")

    def test_expected_failures_and_unexpected_successes_as_in_discovery(self):
        expected = {"test_good": MODULES["test_good"], "test_expected": """
            import unittest
            class Expected(unittest.TestCase):
                @unittest.expectedFailure
                def test_known_bug(self):
                    self.assertEqual(1, 2)
            """}
        code, out = self.as_discovery(self.folder(expected))
        self.assertEqual(code, 0, out)
        self.assertTrue(out.endswith("\nOK (skipped=1, expected failures=1)\n"), out)
        code, out = self.as_discovery(self.folder(dict(expected, test_lucky="""
            import unittest
            class Lucky(unittest.TestCase):
                @unittest.expectedFailure
                def test_fixed_unknowingly(self):
                    pass
            """), under="lucky"))
        self.assertEqual(code, 1, out)
        self.assertTrue(out.endswith("\nFAILED (skipped=1, expected failures=1, unexpected "
                                     "successes=1)\n"), out)

    def test_modules_without_tests_and_an_empty_folder_as_in_discovery(self):
        code, out = self.as_discovery(self.folder({"test_nothing": "X = 1\n"}, under="none"))
        self.assertRegex(out, r"\nRan 0 tests in [0-9.]+s\n")
        code, out = self.as_discovery(self.folder({}, under="empty"))
        self.assertRegex(out, r"\nRan 0 tests in [0-9.]+s\n")
        code, out = self.as_discovery(self.folder(dict(MODULES, test_nothing="X = 1\n"),
                                                  under="some"))
        self.assertTrue(out.endswith("\nFAILED (failures=1, errors=1, skipped=1)\n"), out)

    def test_fixtures_subtests_and_packages_as_in_discovery(self):
        folder = self.folder(dict(MODULES, test_fixtures="""
            import unittest
            def tearDownModule():
                raise ValueError("module teardown")
            class NoSetUp(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    raise OSError("class setup")
                def test_never(self):
                    pass
            class Sub(unittest.TestCase):
                def test_cases(self):
                    for n in range(4):
                        with self.subTest(n=n):
                            self.assertLess(n, 2)
            class SkippedClass(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    raise unittest.SkipTest("class skipped")
                def test_never(self):
                    pass
            """, helper="X = 1\n"))
        self.folder({"__init__": "", "test_inside": MODULES["test_more"],
                     "test_bad": MODULES["test_bad"]}, under="pkg")
        self.folder({"test_not_a_package": MODULES["test_bad"]}, under="plain")
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 1, out)
        self.assertIn("\nFAIL: test_cases (test_fixtures.Sub", out)
        self.assertIn("\nERROR: setUpClass (test_fixtures.NoSetUp)\n", out)
        self.assertIn("\nERROR: tearDownModule (test_fixtures)\n", out)
        self.assertIn("\nFAIL: test_fails (pkg.test_bad.Bad", out)

    def test_a_hanging_test_is_killed_at_the_timeout_and_named(self):
        folder = self.folder(dict(MODULES, test_hangs=HANGS))
        started = time.monotonic()
        code, out = self.run_py("-s", folder, "--timeout", "3")
        self.assertLess(time.monotonic() - started, 30, out)
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"\nERROR: test_hangs \(test_hangs\.Hangs(\.test_hangs)?\)\n-+\n"
                              r"run\.py: test_hangs was still running after --timeout 3 s: "
                              r"killed, in this test\n")
        self.assertRegex(out, ran(8) + r"FAILED \(failures=1, errors=2, "
                              r"skipped=1\)\n$")
        self.assertGone(folder)

    def assertGone(self, folder):
        """The hanging test's own child process was killed with it."""
        with open(os.path.join(folder, "started"), encoding="utf-8") as f:
            pid = int(f.read())
        for _ in range(100):  # init reaps it once its parent is gone
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        self.fail("the hanging test's child process {} outlived the run".format(pid))

    def interrupt(self, how):
        """run.py's exit code and output when ``how`` reaches it while a test hangs."""
        folder = self.folder(dict(MODULES, test_hangs=HANGS))

        def when_it_hangs(proc):
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(folder, "started")):
                self.assertLess(time.monotonic(), deadline, "the hanging test never started")
                time.sleep(0.05)
            proc.send_signal(how)
            proc.wait(timeout=30)
        code, out = self.run_py("-s", folder, then=when_it_hangs)
        self.assertGone(folder)
        return code, out

    def test_ctrl_c_stops_the_tests_and_names_those_running(self):
        code, out = self.interrupt(signal.SIGINT)
        self.assertEqual(code, 130, out)
        self.assertRegex(out, r"\nERROR: test_hangs \(test_hangs\.Hangs(\.test_hangs)?\)\n-+\n"
                              r"run\.py: test_hangs was still running when run\.py was "
                              r"interrupted \(SIGINT\): killed, in this test\n")
        self.assertIn("\nrun.py: interrupted (SIGINT)", out)

    def test_sigterm_stops_the_tests_and_names_those_running(self):
        code, out = self.interrupt(signal.SIGTERM)
        self.assertEqual(code, 143, out)
        self.assertRegex(out, r"\nERROR: test_hangs \(test_hangs\.Hangs(\.test_hangs)?\)\n-+\n"
                              r"run\.py: test_hangs was still running when run\.py was "
                              r"interrupted \(SIGTERM\): killed, in this test\n")


class RunnerHostileTest(SideBySide):
    """Modules that misbehave, options and signals run.py must survive: it says what
    discovery says, or fails where discovery cannot finish, and leaves nothing running."""

    folder = RunnerTest.folder
    run_py = RunnerTest.run_py
    as_discovery = RunnerTest.as_discovery
    interrupt = RunnerTest.interrupt
    assertGone = RunnerTest.assertGone

    def test_sighup_stops_the_tests_and_names_those_running(self):
        # a closed terminal's SIGHUP ended run.py alone: the module and the process its
        # test started, each in a session of their own, ran on
        code, out = self.interrupt(signal.SIGHUP)
        self.assertEqual(code, 129, out)
        self.assertRegex(out, r"\nERROR: test_hangs \(test_hangs\.Hangs(\.test_hangs)?\)\n-+\n"
                              r"run\.py: test_hangs was still running when run\.py was "
                              r"interrupted \(SIGHUP\): killed, in this test\n")
        self.assertIn("\nrun.py: interrupted (SIGHUP)", out)

    def test_a_line_in_its_report_that_is_not_run_pys_is_the_modules_error(self):
        # a test that writes to every file it finds open wrote to the module's report too:
        # run.py ended in a JSONDecodeError's traceback, with no summary
        folder = self.folder(dict(MODULES, test_scribbles="""
            import os
            import unittest
            class Scribbles(unittest.TestCase):
                def test_writes_to_every_open_file(self):
                    for fd in os.listdir("/proc/self/fd"):
                        if os.path.realpath("/proc/self/fd/" + fd).endswith(".jsonl"):
                            os.write(int(fd), b"\\xff not a report's line\\n")
                def test_after(self):
                    pass
            """))
        if not os.path.isdir("/proc/self/fd"):
            self.skipTest("the test finds the report's descriptor in /proc")
        code, out = self.run_py("-s", folder)
        self.assertEqual(code, 1, out)
        self.assertIn("\nERROR: test_scribbles (run.py)\n" + "-" * 70 + "\nrun.py: test_scribbles "
                      "ended its process (exit status 0), its report holding a line that is "
                      "not run.py's: b\"\\xff not a report's line\", after its last test\n", out)
        self.assertRegex(out, ran(9) + r"FAILED \(failures=1, errors=2, skipped=1\)\n$")

    def test_atexit_handlers_that_raise_are_as_at_an_interpreters_exit(self):
        # Python 3.8 and 3.9 raise a handler's error again once all have run: the module
        # was an error where discovery said OK and exited 0 (discovery prints the error
        # after its summary, run.py before it)
        folder = self.folder({"test_good": MODULES["test_good"], "test_atexit": """
            import atexit
            import sys
            import unittest
            def clean_up():
                raise OSError("could not clean up")
            atexit.register(clean_up)
            atexit.register(sys.exit, 3)
            class Passes(unittest.TestCase):
                def test_passes(self):
                    pass
            """})
        code, out = self.run_py("-s", folder)
        said_code, said = self.run_py("-s", folder, discover=True)
        self.assertEqual((code, said_code), (0, 0), "\n" + out + "\n" + said)
        self.assertRegex(out, ran(4) + r"OK \(skipped=1\)\n$")
        self.assertRegex(said, ran(4) + r"OK \(skipped=1\)\n")
        self.assertIn("OSError: could not clean up\n", out)

    def test_load_tests_that_returns_nothing_is_as_in_discovery(self):
        # discovery leaves such a module out; run.py called None and made it an error
        folder = self.folder({"test_good": MODULES["test_good"], "test_none": """
            import unittest
            class Never(unittest.TestCase):
                def test_never(self):
                    self.fail("load_tests left it out")
            def load_tests(loader, tests, pattern):
                return None
            """})
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, ran(3) + r"OK \(skipped=1\)\n$")

    def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(self):
        # nan let a hanging module run forever; 0 and less killed every module at once
        folder = self.folder(MODULES)
        for timeout in ("nan", "0", "-5"):
            code, out = self.run_py("-s", folder, "--timeout", timeout)
            self.assertEqual(code, 2, out)
            self.assertIn("run.py: error: argument --timeout: invalid seconds value: "
                          "{!r}\n".format(timeout), out)
        code, out = self.run_py("-s", folder, "--timeout", "inf", "test_good")
        self.assertEqual(code, 0, out)

    def test_a_module_beside_a_folder_of_its_name_is_as_in_discovery(self):
        # run.py took test_data for the folder test_data/ (its fixtures, no __init__.py):
        # "Start directory is not importable", an error where discovery says OK
        folder = self.folder({"test_good": MODULES["test_good"],
                              "test_data": MODULES["test_more"]})
        self.folder({"sample": "{}"}, under="test_data")
        code, out = self.as_discovery(folder)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, ran(4) + r"OK \(skipped=1\)\n$")

    def test_a_module_and_a_package_of_one_name_fail_the_run(self):
        # import finds the package for both: run.py ran the package's tests twice and
        # never the module's, and said OK; discovery stops at the module, and exits 1
        folder = self.folder({"test_good": MODULES["test_good"], "test_pkg": MODULES["test_bad"]})
        self.folder({"__init__": "", "test_inside": MODULES["test_more"]}, under="test_pkg")
        code, out = self.run_py("-s", folder)
        said_code, said = self.run_py("-s", folder, discover=True)
        self.assertEqual((code, said_code), (1, 1), "\n" + out + "\n" + said)
        self.assertIn("module incorrectly imported", said)
        self.assertIn("\nImportError: test_pkg.py and the package test_pkg are one module: "
                      "discovery stops at them\n", out)
        self.assertIn("\nrun.py: test_pkg ended its process (exit status 1) without its report, "
                      "while importing the module\n", out)

    def test_modules_that_end_discovery_itself_fail_the_run(self):
        # discovery stops at each of these, saying nothing or OK, and most exit 0
        folder = self.folder({"test_good": MODULES["test_good"], "test_class_exits": """
            import sys
            import unittest
            class Exits(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    sys.exit(0)
                def test_never(self):
                    pass
            """, "test_module_exits": """
            import unittest
            def tearDownModule():
                raise SystemExit
            class Passes(unittest.TestCase):
                def test_passes(self):
                    pass
            """, "test_alarm": """
            import signal
            import time
            import unittest
            class Alarm(unittest.TestCase):
                def test_rings(self):
                    signal.setitimer(signal.ITIMER_REAL, 0.05)
                    time.sleep(5)
            """, "test_interrupts": """
            import unittest
            class Interrupts(unittest.TestCase):
                def test_interrupts(self):
                    raise KeyboardInterrupt
            """})
        code, out = self.run_py("-s", folder)
        self.assertEqual(code, 1, out)
        for name in ("test_class_exits", "test_module_exits", "test_alarm", "test_interrupts"):
            self.assertRegex(out, r"\nrun\.py: {} ended its process \((exit status \d+|killed "
                                  r"by SIG\w+)\) without its report".format(name))
        self.assertRegex(out, r"\nFAILED \(errors=4, skipped=1\)\n$")


if __name__ == "__main__":
    unittest.main()
