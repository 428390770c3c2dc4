"""tests/run.py, the suite's runner: the same counts and exit status as unittest's
discovery, each failure's report whole, a worker that dies said, not waited on. Through
the real script in a subprocess, over modules written to a folder of the test's own."""
import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stub import StubTestCase  # noqa: E402

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


class RunnerTest(StubTestCase):
    def folder(self, modules):
        for name, text in modules.items():
            self.write(name + ".py", textwrap.dedent(text))
        return self.tmp

    def run_py(self, *argv, discover=False):
        """(exit code, stdout and stderr) of tests/run.py, or of unittest's discovery."""
        command = [sys.executable, os.path.join(HERE, "run.py"), *argv]
        if discover:
            command = [sys.executable, "-m", "unittest", "discover", *argv]
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=60)
        return proc.returncode, proc.stdout

    def test_failures_are_reported_whole_and_counted_as_unittest_counts_them(self):
        folder = self.folder(MODULES)
        code, out = self.run_py("-s", folder, "--jobs", "2")
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL: test_fails (", out)
        self.assertIn("AssertionError: 1 != 2 : one is not two", out)
        self.assertIn("ERROR: test_errs (", out)
        self.assertIn("RuntimeError: broken on purpose", out)
        self.assertRegex(out, r"\nRan 6 tests in [0-9.]+s \(3 modules\)\n")
        self.assertTrue(out.endswith("\nFAILED (failures=1, errors=1, skipped=1)\n"), out)
        code, said = self.run_py("-s", folder, discover=True)
        self.assertEqual(code, 1, said)
        self.assertIn("\nRan 6 tests in ", said)
        self.assertTrue(said.endswith("\nFAILED (failures=1, errors=1, skipped=1)\n"), said)

    def test_passing_modules_exit_0_and_named_modules_alone_run(self):
        folder = self.folder(MODULES)
        code, out = self.run_py("-s", folder, "test_good", "test_more", "--jobs", "1")
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"\nRan 4 tests in [0-9.]+s \(2 modules\)\n\nOK \(skipped=1\)\n$")

    def test_a_worker_that_dies_is_said_with_the_modules_left(self):
        folder = self.folder(dict(MODULES, test_dies="""
            import os
            import unittest
            class Dies(unittest.TestCase):
                def test_exits(self):
                    os._exit(3)
            """))
        code, out = self.run_py("-s", folder, "test_dies", "--jobs", "1")
        self.assertEqual(code, 1, out)
        self.assertIn("run.py: a worker process died (did a test end its process?); modules "
                      "not finished: test_dies\n", out)
        self.assertNotIn("Traceback", out)


if __name__ == "__main__":
    unittest.main()
