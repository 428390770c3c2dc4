"""Issue 44's summary items, through the real command line against the loopback stub:
--summary keeps every --group-by value and each value whole (only the printed table and
the page cut, saying so), one JSON number is one group however it is written, a model's
size tag is part of its name for self-judging, and the mean on the judge's scale has its
interval beside it.
"""
import hashlib
import html
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402
from test_promises_stats34c import bootstrap  # noqa: E402


def table(err, field):
    """The printed table of ``field``: its title line and rows, each row's cells."""
    lines = err.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("  by " + field)))
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        rows.append(re.split(r"  +", line.strip()))
    return lines[start], rows


class SummaryTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: 4"

    def run_cli(self, records, *more, name="s.json"):
        data = self.write_jsonl("in.jsonl", records)
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                   "--summary", self.path(name), "--max-error-rate", "1"]
                                  + list(more))
        self.assertEqual(code, 0, err)
        return err, self.summary(name)

    def report(self, *argv):
        code, out, err = run_main(["report", "--summary", self.path("r.json"),
                                   "--max-error-rate", "1"] + list(argv))
        self.assertEqual(code, 0, err)
        return err, self.summary("r.json")

    def summary(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)


class EveryGroupTest(SummaryTest):
    """A table of 61 values showed 60 rows in --summary too; a value over 60 characters
    came back as value null with a hashed label."""

    def test_the_summary_lists_every_value_and_the_printed_table_says_how_many_more(self):
        records = [{"question": "q%d" % k, "response": "r", "team": "t%02d" % k}
                   for k in range(61)]
        err, summary = self.run_cli(records, "--group-by", "team", "-o", self.path("o.jsonl"),
                                    "--html", self.path("p.html"))
        groups = summary["groups"]["team"]
        self.assertEqual([g["value"] for g in groups["shown"]], ["t%02d" % k for k in range(61)])
        self.assertEqual((groups["values"], groups["not_shown"]), (61, 1))
        title, rows = table(err, "team")
        self.assertEqual(title, "  by team (--group-by): 61 values; the 60 with the most "
                                "records shown, and 1 more value: --summary lists all")
        self.assertEqual(len(rows), 62)  # the heading, 60 values, all
        self.assertEqual(rows[-2][0], '"t59"')
        with open(self.path("p.html"), encoding="utf-8") as f:
            self.assertIn("<p>{}</p>".format(html.escape(title.strip())), f.read())
        rerr, again = self.report(self.path("o.jsonl"), "--group-by", "team")
        self.assertEqual(again["groups"], summary["groups"])
        self.assertEqual(table(rerr, "team"), (title, rows))

    def test_a_long_value_is_whole_in_the_summary_and_cut_in_the_printed_table(self):
        long_value = "y" * 300
        records = [{"question": "q%d" % k, "response": "r", "doc": v}
                   for k, v in enumerate([long_value, long_value, {"title": long_value}])]
        err, summary = self.run_cli(records, "--group-by", "doc", "-o", self.path("o.jsonl"))
        shown = summary["groups"]["doc"]["shown"]
        self.assertEqual([(g["value"], g["label"], g["records"]) for g in shown],
                         [(long_value, json.dumps(long_value), 2),
                          ({"title": long_value}, json.dumps({"title": long_value}), 1)])
        cut = '"{}... sha256 {}'.format("y" * 39, hashlib.sha256(
            json.dumps(long_value).encode()).hexdigest()[:16])
        _, rows = table(err, "doc")
        self.assertEqual([row[0] for row in rows[1:3]], [cut, '{"title": "' + "y" * 29 + "... "
                         "sha256 " + hashlib.sha256(json.dumps({"title": long_value}).encode())
                         .hexdigest()[:16]])
        self.assertEqual(self.report(self.path("o.jsonl"), "--group-by", "doc")[1]["groups"],
                         summary["groups"])


class OneNumberTest(SummaryTest):
    """--group-by put 1 and 1.0, one JSON number, in two groups."""

    def test_a_number_written_two_ways_is_one_group(self):
        values = [1, 1.0, 2, 2.5, "1", [1.0, 2], [1, 2.0], {"a": 3.0}, {"a": 3}]
        records = [{"question": "q%d" % k, "response": "r", "n": v}
                   for k, v in enumerate(values)]
        err, summary = self.run_cli(records, "--group-by", "n", "-o", self.path("o.jsonl"))
        shown = summary["groups"]["n"]["shown"]
        self.assertEqual([(g["label"], g["records"]) for g in shown],
                         [("1", 2), ("[1, 2]", 2), ('{"a": 3}', 2), ('"1"', 1), ("2", 1),
                          ("2.5", 1)])
        self.assertEqual([type(g["value"]) for g in shown[:1]], [int])
        self.assertEqual(self.report(self.path("o.jsonl"), "--group-by", "n")[1]["groups"],
                         summary["groups"])


class ModelSizeTest(SummaryTest):
    """--model-field warned that llama3.1:70b judged its own answers when they came from
    llama3.1:8b: the size tag was set aside with the quantisation and revision tags."""

    def test_a_size_tag_is_part_of_the_model_a_quantisation_tag_is_not(self):
        models = ["llama3.1:8b", "llama3.1:8b-instruct-q4_K_M", "Llama3.1:70B-instruct-q4_K_M",
                  "ollama/llama3.1:70b@main", "llama3.1-70b", "llama3.1:latest", "mixtral:8x7b"]
        records = [{"question": "q%d" % k, "response": "r", "model": m}
                   for k, m in enumerate(models)]
        err, summary = self.run_cli(records, "--judge-model", "llama3.1:70b", "--model-field",
                                    "model")
        judge = summary["self_judging"]["judges"][0]
        self.assertEqual(judge["answers"], ["Llama3.1:70B-instruct-q4_K_M", "llama3.1-70b",
                                            "ollama/llama3.1:70b@main"])
        self.assertEqual((judge["own"]["n"], judge["others"]["n"]), (3, 4))
        err, summary = self.run_cli(records[:2] + records[5:], "--judge-model", "llama3.1:70b",
                                    "--model-field", "model")
        self.assertIsNone(summary["self_judging"])
        self.assertNotIn("  warning: the judge", err)


class MeanOnTheScaleTest(SummaryTest):
    """The mean on the judge's 1-5 scale was printed with no interval beside it."""

    def test_the_mean_on_the_scale_has_its_interval(self):
        replies = {"a": "Rating: 5", "b": "Rating: 1", "c": "no rating", "d": "Rating: 3"}
        texts = ["a", "b", "c", "d", "a"]  # one at a time: each its reply in turn
        self.srv.push(*[replies[t] for t in texts])
        records = [{"question": "q%d" % k, "response": t} for k, t in enumerate(texts)]
        err, summary = self.run_cli(records, "--concurrency", "1", "--no-preflight",
                                    "--bootstrap-samples", "200", "--confidence", "0.9")
        judged = [1.0, 0.0, 0.5, 1.0]  # ratings 5, 1, 3, 5; "no rating" failed
        low, high = bootstrap(judged, 200, 0, 0.9)
        expected = [round(1 + 4 * low, 4), round(1 + 4 * high, 4)]
        self.assertEqual((summary["mean_value"], summary["mean_value_ci"]), (3.5, expected))
        self.assertIn("; 0.625 over the 4 judged (3.5 on the 1-5 scale, 90% CI {}); 90% CI {} "
                      "(bootstrap, 200 resamples, seed 0)".format(expected, summary["ci"]), err)
        # all judged: the score's own interval, on the scale
        self.srv.push(*["Rating: 5", "Rating: 3"] * 2)
        err, summary = self.run_cli(records[:4], "--concurrency", "1", "--no-preflight")
        self.assertEqual(summary["mean_value_ci"], [round(1 + 4 * x, 4) for x in summary["ci"]])


class GroupsHostileTest(SummaryTest):
    """A hostile pass over --group-by: values a terminal does not show as written."""

    def test_a_value_of_direction_marks_keeps_its_row_in_the_columns(self):
        # JSON escapes a newline or an escape, not a direction mark or a C1 control: the
        # printed summary escaped them after the columns were measured, and the row of 12
        # left-to-right marks printed its figures 60 characters right, under other headings
        values = ["\u200e" * 12 + "x", "y\x9b", "z"]
        records = [{"question": "q%d" % k, "response": "r", "cat": v}
                   for k, v in enumerate(values)]
        err, summary = self.run_cli(records, "--group-by", "cat", "--html", self.path("p.html"))
        lines = err.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("  by cat"))
        heading, rows = lines[start + 1], lines[start + 2:start + 6]
        column = heading.index("records")
        for row in rows:
            self.assertEqual((row[column - 2:column], row[column]), ("  ", "1" if not
                             row.startswith("    all") else "3"), row)
        self.assertIn('    "\\u200e\\u200e', err)
        self.assertNotIn("\u200e", err)
        self.assertEqual(sorted(g["value"] for g in summary["groups"]["cat"]["shown"]),
                         sorted(values))  # whole in --summary
        with open(self.path("p.html"), encoding="utf-8") as f:
            groups = f.read().split("<h3>Groups</h3>")[1].split("<h2>Records</h2>")[0]
        self.assertNotIn("\u200e", groups)  # a cell's marks turned its text around too
        self.assertIn("<td>{}</td>".format(html.escape('"y\\x9b"')), groups)
