"""Issue 28's parser items and the HTML page's size: criterion options that only differ in
case are refused wherever a criterion is loaded; ratings, verdicts, yes/no answers, score
pairs and options offered as alternatives ("[[9]] or [[10]]") are no verdict, and the one
stated as the verdict wins over them; the --html page shows at most a capped part of each
field. Parser cases are tables looped with subTest; the rest runs the real command line
against the loopback stub."""
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from minijudge import parse_binary, parse_comparative, parse_rating, parse_verdict  # noqa: E402
from stub import PYTHON, StubTestCase, run_main  # noqa: E402


_MIB = 1024 * 1024
_FIELD_CHARS, _FIELDS = 2000, 100  # what docs/outputs.md's "The HTML page" promises


class HtmlPageTest(StubTestCase):
    def test_each_field_shows_at_most_its_cap_with_what_was_left_out(self):
        # records of 1 MiB (40 made the 42 MB page): a run in a real process, then
        # report over its output
        items = [{"question": "q{}".format(i), "response": "x" * _MIB, "notes": {"n": "y" * 9999}}
                 for i in range(4)]
        page, data = self.path("page.html"), self.write_jsonl("in.jsonl", items)
        self.srv.content = "Rating: 3"
        proc = subprocess.run(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--html", page,
             "-o", self.path("out.jsonl"), data], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        code, out, err = run_main(["report", self.path("out.jsonl"), "--html",
                                   self.path("report.html")])
        self.assertEqual(code, 0, err)
        cap = _FIELD_CHARS
        notes = json.dumps({"n": "y" * 9999})
        for name in (page, self.path("report.html")):
            with open(name, encoding="utf-8") as f:
                html = f.read()
            with self.subTest(page=os.path.basename(name)):
                self.assertLess(len(html.encode("utf-8")), 40000)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    "x" * cap, _MIB - cap)), 4)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    minijudge._esc(notes[:cap]), len(notes) - cap)), 4)
                self.assertIn("<pre>Rating: 3</pre>", html)  # short fields whole

    def test_a_record_with_many_fields_shows_the_first_and_the_last_ones(self):
        fields = {"f{:04d}".format(i): i for i in range(1000)}
        data = self.write_jsonl("in.jsonl", [dict(fields, question="q", response="r")])
        page = self.path("page.html")
        self.srv.content = "Rating: 3"
        code, out, err = run_main(["--judge-url", self.srv.url, "--html", page, data])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        half, record = _FIELDS // 2, json.loads(out)
        names = list(record)
        filled = {name for name in names if record[name] not in (None, "", {}, [])}
        shown = re.findall(r"<p><b>(.*?)</b></p>", html)
        self.assertEqual(shown, [n for n in names[:half] if n in filled] + ["…"] + [
            n for n in names[-half:] if n in filled])  # the judge's fields come last: shown
        self.assertIn("<pre>Rating: 3</pre>", html)
        self.assertIn("<p><b>…</b></p><pre>{} more fields</pre>".format(len(names) - 2 * half),
                      html)

if __name__ == "__main__":
    unittest.main()
