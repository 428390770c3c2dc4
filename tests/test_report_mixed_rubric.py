"""report --mixed over runs whose rubrics differ: a criterion judged on 1-5 with weight 1 in
one run and on 0-10 with weight 2 in the other has no one scale or weight, so no mean on
"its" scale; its 0-1 score and interval still are one figure over both runs' records.
What differs is named in the summary (each criterion's ``differs``), the printed lines,
--group-by's table and the page; a criterion the runs agree on keeps its figures.

Two runs (``minijudge --rubric``, main() in this process, in the test's folder) against the
loopback stub, which answers from the criteria its prompt lists, then ``minijudge report
--mixed`` over both files: the figures are the same as a process's, without its 0.05 s of
CPU each. Expected figures are worked out by hand in the comments."""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from stub import CommandLineTestCase, chat, run_main  # noqa: E402

# criterion a differs in scale and weight, b in weight alone, c nowhere
FIVE = [{"name": "a", "scale": [1, 5], "weight": 1}, {"name": "b", "weight": 1},
        {"name": "c"}]
TEN = [{"name": "a", "scale": [0, 10], "weight": 2}, {"name": "b", "weight": 3},
       {"name": "c"}]


def judge_replies(request):
    """a 4 of 1-5 (0.75) or 2 of 0-10 (0.2); b 3 (0.5) or 5 (1.0); c 5 (1.0) or 3 (0.5)."""
    if "- a (0 to 10)" in request.prompt:
        return chat(json.dumps({"reasoning": "Fine.", "a": 2, "b": 5, "c": 3}))
    return chat(json.dumps({"reasoning": "Fine.", "a": 4, "b": 3, "c": 5}))


class MixedRubrics(CommandLineTestCase):
    def cli(self, *argv):
        """main() in the test's folder: (exit code, stdout, stderr)."""
        return run_main(argv, cwd=self.tmp)

    def setUp(self):
        super().setUp()
        self.srv.responder = judge_replies
        items = [{"question": "q%d" % i, "response": "r%d" % i, "topic": "t"}
                 for i in range(2)]
        self.source = self.write_jsonl("in.jsonl", items)
        for name, rubric in (("five", FIVE), ("ten", TEN)):
            path = self.write(name + ".json", json.dumps(rubric))
            code, _, err = self.cli(
                "--judge-url", self.srv.url, "--judge-model", "judge-model", "--no-preflight",
                "--max-retries", "0", "--rubric", path, "-o", name + ".jsonl", self.source)
            self.assertEqual(code, 0, err)

    def report(self, *argv, more=()):
        code, _, err = self.cli("report", "--mixed", "five.jsonl", "ten.jsonl", *more,
                                       "--summary", "s.json", *argv)
        self.assertEqual(code, 0, err)
        return err, self.summary("s.json")

    def test_a_criterion_whose_scale_or_weight_differs_has_no_figure_on_one_scale(self):
        err, summary = self.report()
        criteria = summary["criteria"]
        # a: (0.75 + 0.75 + 0.2 + 0.2) / 4 = 0.475, on no one scale
        self.assertEqual({k: criteria["a"][k] for k in (
            "n", "mean_score", "mean_value", "mean_value_ci", "scale", "weight", "differs")},
            {"n": 4, "mean_score": 0.475, "mean_value": None, "mean_value_ci": None,
             "scale": None, "weight": None, "differs": ["scale", "weight"]})
        self.assertEqual(len(criteria["a"]["ci"]), 2)
        # b: 1-5 in both, (0.5 + 0.5 + 1 + 1) / 4 = 0.75, 4.0 on it; its weight 1 or 3
        self.assertEqual((criteria["b"]["mean_value"], criteria["b"]["scale"],
                          criteria["b"]["weight"], criteria["b"]["differs"]),
                         (4.0, [1, 5], None, ["weight"]))
        # c: alike in both runs, (1 + 1 + 0.5 + 0.5) / 4 = 0.75, 4.0 on 1-5, weight 1
        self.assertEqual((criteria["c"]["mean_value"], criteria["c"]["scale"],
                          criteria["c"]["weight"], criteria["c"]["differs"]),
                         (4.0, [1, 5], 1, None))
        a, b, c = (criteria[name] for name in "abc")
        self.assertIn("    a: score 0.475 (CI {}); scale and weight differ between the runs "
                      "(n=4)\n".format(a["ci"]), err)
        self.assertIn("    b: 4.0 on the 1-5 scale (CI {}), score 0.75 (CI {}); weight differs "
                      "between the runs (n=4)\n".format(b["mean_value_ci"], b["ci"]), err)
        self.assertIn("    c: 4.0 on the 1-5 scale (CI {}), score 0.75 (CI {}); weight 1 "
                      "(n=4)\n".format(c["mean_value_ci"], c["ci"]), err)
        self.assertNotIn("a: 3.0", err)  # no longer read on the first run's scale

    def test_the_group_table_and_the_page_agree(self):
        err, summary = self.report("--group-by", "topic", "--html", "page.html")
        group = summary["groups"]["topic"]["shown"][0]
        self.assertEqual(group["criteria"], summary["criteria"])  # one group: every record
        a = summary["criteria"]["a"]
        table = re.search(r"  by topic \(--group-by\): 1 value\n((?:    .*\n)+)", err).group(1)
        self.assertIn("a score 0.475 {}, b 4.0 {}, c 4.0 {}".format(
            a["ci"], summary["criteria"]["b"]["mean_value_ci"],
            summary["criteria"]["c"]["mean_value_ci"]), table)
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("<tr><td>a</td><td>differs between the runs</td><td>4</td><td>scale "
                      "differs between the runs</td><td>-</td><td>0.475</td>", page)
        self.assertIn("<tr><td>b</td><td>differs between the runs</td><td>4</td><td>4.0</td>",
                      page)
        self.assertIn("<tr><td>c</td><td>1</td><td>4</td><td>4.0</td>", page)

    def test_a_criterion_one_run_names_alone_is_on_that_runs_scale(self):
        # a third run: a on 1-5 weight 1 as the first, d (0-10) its own; a still differs
        path = self.write("more.json", json.dumps(FIVE[:1] + [{"name": "d", "scale": [0, 10]}]))
        self.srv.responder = lambda request: chat(json.dumps({"a": 4, "d": 6}))
        code, _, err = self.cli(
            "--judge-url", self.srv.url, "--judge-model", "judge-model", "--no-preflight",
            "--rubric", path, "-o", "more.jsonl", self.source)
        self.assertEqual(code, 0, err)
        err, summary = self.report(more=["more.jsonl"])
        a, d = summary["criteria"]["a"], summary["criteria"]["d"]
        self.assertEqual((a["n"], a["scale"], a["differs"]), (6, None, ["scale", "weight"]))
        self.assertEqual((d["n"], d["mean_value"], d["scale"], d["weight"], d["differs"]),
                         (2, 6.0, [0, 10], 1, None))

    def test_one_run_read_alone_keeps_its_own_figures(self):
        code, _, err = self.cli("report", "ten.jsonl", "--summary", "t.json")
        self.assertEqual(code, 0, err)
        a = self.summary("t.json")["criteria"]["a"]
        self.assertEqual((a["mean_value"], a["scale"], a["weight"], a["differs"]),
                         (2.0, [0, 10], 2, None))


if __name__ == "__main__":
    unittest.main()
