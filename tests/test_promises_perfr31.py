"""Issue 31, `report` at a million records: the duplicate check keeps a hash a record and
reads the files again only to name a repeat. What a user sees stays as it was: the first
repeat in reading order, a torn line's warning only up to it, an error before it said
instead, and a FIFO (which cannot be read twice) checked the same way.
"""
import json
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from test_report import ReportTest  # noqa: E402


class RepeatNamedTest(ReportTest):
    def setUp(self):
        super().setUp()
        with open(self.judge("a.jsonl")) as f:
            self.lines = f.readlines()

    def file(self, name, lines):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.writelines(lines)
        return self.path(name)

    def test_the_first_repeat_is_named_and_later_torn_lines_are_not_warned(self):
        torn = '{"torn\n'
        path = self.file("d.jsonl", [torn] + self.lines + self.lines[2:3] + [torn] +
                         self.lines[1:2])
        code, out, err = self.report(path)
        self.assertEqual((code, out), (2, ""))
        warning, error = err.splitlines()  # the torn line after the repeat: no warning
        self.assertRegex(warning, r"^minijudge: warning: .*d\.jsonl: line 1: not JSON .*; skipped")
        self.assertEqual(error, "minijudge: error: {0} line 4 and {0} line 6 are the same "
                         "record (input line 3 of one run); report each record once".format(path))

    def test_an_error_after_a_repeat_is_not_said_and_one_before_it_is(self):
        bad = json.loads(self.lines[3])
        bad["judge_status"] = "okk"
        bad = json.dumps(bad) + "\n"
        after = self.file("after.jsonl", self.lines + self.lines[:1] + [bad])
        self.refused("{0} line 1 and {0} line 5 are the same record (input line 1 of one run); "
                     "report each record once".format(after), after)
        before = self.file("before.jsonl", self.lines + [bad] + self.lines[:1])
        self.refused("{} line 5: judge_status must be a status minijudge writes (README, "
                     "Statuses); got 'okk'".format(before), before)

    def test_a_repeat_read_from_a_fifo_is_named(self):
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        writer = threading.Thread(target=self.file, args=("fifo", self.lines + self.lines[1:2]))
        writer.start()
        try:
            self.refused("{0} line 2 and {0} line 5 are the same record (input line 2 of one "
                         "run); report each record once".format(fifo), fifo)
        finally:
            writer.join()
