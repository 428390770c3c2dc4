"""What a newcomer meets first: the licence a vendored copy carries, the page's
score row in every mode (as the printed summary says it), ``.compare`` as docs/python-api.md shows
it, and the parser-accuracy report run from a clone without its data."""
import doctest
import html
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON, StubTestCase, chat, copy_minijudge, run_main  # noqa: E402
from test_modes import answers, preferring  # noqa: E402

KEY = "sk-first30c-0123456789abcdef"
MIT = ("MIT License\n\nCopyright (c) 2026 the minijudge authors\n\n"
       "Permission is hereby granted, free of charge, to any person obtaining a copy\n"
       "of this software and associated documentation files (the \"Software\"), to deal\n"
       "in the Software without restriction, including without limitation the rights\n"
       "to use, copy, modify, merge, publish, distribute, sublicense, and/or sell\n"
       "copies of the Software, and to permit persons to whom the Software is\n"
       "furnished to do so, subject to the following conditions:\n\n"
       "The above copyright notice and this permission notice shall be included in all\n"
       "copies or substantial portions of the Software.\n\n"
       "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR\n"
       "IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,\n"
       "FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE\n"
       "AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER\n"
       "LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,\n"
       "OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE\n"
       "SOFTWARE.\n")


def read(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


class LicenceTest(unittest.TestCase):
    def test_the_licence_file_is_mit_for_the_minijudge_authors(self):
        self.assertEqual(read("LICENSE"), MIT)

    def test_the_header_a_vendored_copy_keeps_names_licence_version_and_project(self):
        # the header says "keep this header": it is all a copied file carries of its licence
        head = read("minijudge.py").splitlines()[:2]
        self.assertEqual(head, ["# SPDX-License-Identifier: MIT",
                                "# Copyright (c) 2026 the minijudge authors"])
        self.assertIn("\nminijudge {} (``__version__``), MIT licence (the project's LICENSE "
                      "file); project: minijudge\n(no public address yet: see its README.md). "
                      "Vendored copies: keep this header,\nupgrade by replacing the file.\n"
                      .format(minijudge.__version__), minijudge.__doc__)

    def test_pyproject_points_at_the_licence_file(self):
        self.assertIn('\nlicense = {file = "LICENSE"}\n', read("pyproject.toml"))

    def test_the_readme_names_the_licence(self):
        self.assertIn("\n## Licence\n\nMIT (`LICENSE`), copyright the minijudge authors.",
                      read("README.md"))


class CompareTest(StubTestCase):
    def readme_example(self):
        """docs/python-api.md's doctest of .compare, the one that names its template."""
        blocks = re.findall(r"```python\n(.*?)```", read("docs", "python-api.md"), re.S)
        found = [b for b in blocks if "= pair.compare(" in b]
        self.assertEqual(len(found), 1)
        return found[0].replace("http://127.0.0.1:8000", self.srv.url)

    def test_the_readme_s_compare_example_runs_as_shown(self):
        self.srv.responder = preferring("Canberra.")
        test = doctest.DocTestParser().get_doctest(
            self.readme_example(), {"LLMJudge": minijudge.LLMJudge}, "python-api",
            "docs/python-api.md", 0)
        runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)  # not -v's
        runner.run(test, out=self.fail)
        self.assertEqual(runner.summarize(verbose=False), (0, 3))
        self.assertEqual([answers(r) for r in self.srv.requests if r.json],
                         [("Sydney.", "Canberra."), ("Canberra.", "Sydney.")])

    def test_the_readme_says_compare_needs_the_pairwise_template(self):
        self.assertIn('>>> # .compare needs template="pairwise": comparing two answers means '
                      'pairwise\n>>> pair = LLMJudge("{}", template="pairwise")\n'.format(
                          self.srv.url), self.readme_example())
        row = [line for line in read("docs", "python-api.md").splitlines()
               if line.startswith("| `.compare(example, response_a, response_b")]
        self.assertEqual(len(row), 1)
        self.assertIn('a judge made with `template="pairwise"` (another raises `JudgeError`)',
                      row[0])
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url).compare({"question": "q"}, "a", "b")
        self.assertEqual(str(caught.exception),
                         "compare needs a pairwise judge: LLMJudge(..., template='pairwise')")


if __name__ == "__main__":
    unittest.main()
