"""The summary (the sections "Tallies", "Summary figures" and "The printed summary"):
per-group figures (--group-by), the interval as asked (--bootstrap-samples, --confidence),
self-judging, the lines the printer writes, and the hostile passes over them; each through
the real command line against the loopback stub, the printed summary, --summary, report and
the page saying one thing.

Issue 34, item 1: per-group figures (`--group-by FIELD`, repeatable).

Each value of a field gets every figure of the summary (records, failures, means and
interval, ratings, pass rate, win rates, agreement), computed from its records alone, beside
the overall figures: in the printed summary (a table), `--summary` JSON ("groups"), `report`
and the page. A record without the field is its own group, "(no field)". Values are shown as
their JSON, so "all" (a value) and all (the overall row) differ. Each test judges small files
through the real command line against the loopback stub.
"""
import hashlib
import html
import io
import json
import os
import random
import re
import sys
import unittest
from statistics import NormalDist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import CommandLineSideBySide, StubTestCase, chat, run_main  # noqa: E402

# the stub's rating for a response holding each marker; "resp-huh" gets no rating
RATINGS = {"resp-good": "Rating: 5", "resp-fair": "Rating: 3", "resp-bad": "Rating: 1",
           "resp-huh": "I cannot evaluate this."}
RECORDS = [
    {"id": 1, "category": "math", "question": "q1", "response": "resp-good", "label": 5},
    {"id": 2, "category": "math", "question": "q2", "response": "resp-bad", "label": 2},
    {"id": 3, "category": "math", "question": "q3", "response": "resp-huh", "label": 3},
    {"id": 4, "category": "writing", "question": "q4", "response": "resp-good", "label": 4},
    {"id": 5, "category": "writing", "question": "q5", "response": "resp-fair", "label": 3},
    {"id": 6, "question": "q6", "response": "resp-good", "label": 5},
]
# the figures a group's row carries, each as the summary of its records alone has it
FIGURES = ("records", "statuses", "failed", "failure_rate", "mean_score", "mean_score_judged",
           "mean_value", "ci", "ci95", "ci_method", "ratings", "pass_rate", "systems", "ranking",
           "agreement")


def rate_by_marker(request):
    for marker, reply in RATINGS.items():
        if marker in (request.prompt or ""):
            return chat(reply)
    return None


def prefer_marked(request):
    """Pairwise and systems: the answer holding "ans-best" wins, else "ans-good", else a tie."""
    prompt = request.prompt or ""
    a, _, b = prompt.partition("Assistant B")
    for marker in ("ans-best", "ans-good"):
        if marker in a and marker not in b:
            return chat("[[A]]")
        if marker in b and marker not in a:
            return chat("[[B]]")
    return chat("[[C]]")


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


class GroupTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = rate_by_marker

    def run_cli(self, data, *more, name="s.json"):
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                   "--summary", self.path(name), "--max-error-rate", "1"]
                                  + list(more))
        self.assertEqual(code, 0, err)
        return out, err, self.summary(name)


class FiguresTest(GroupTest):
    def test_each_value_gets_its_figures_beside_the_overall_ones(self):
        data = self.write_jsonl("data.jsonl", RECORDS)
        _, err, summary = self.run_cli(data, "--group-by", "category")
        groups = summary["groups"]["category"]
        self.assertEqual({k: groups[k] for k in ("values", "limit", "not_shown")},
                         {"values": 3, "limit": 10000, "not_shown": 0})
        math, writing, missing = groups["shown"]  # the most records first
        # math: ratings 5 and 1 (scores 1.0 and 0.0) and one reply with no rating
        self.assertEqual(math, {
            "label": '"math"', "value": "math", "missing": False, "records": 3,
            "statuses": {"ok": 2, "parse_error": 1}, "failed": 1, "failure_rate": 0.3333,
            "mean_score": 0.3333, "mean_score_judged": 0.5, "mean_value": 3.0,
            "ci": [0.0, 1.0], "ci95": [0.0, 1.0], "ci_method": "bootstrap, 1000 resamples, seed 0",
            "ratings": {"1": 1, "5": 1}, "pass_rate": None, "criteria": None, "systems": None,
            "ranking": None, "agreement": None})
        self.assertEqual((writing["label"], writing["records"], writing["mean_score"],
                          writing["mean_value"], writing["ci95"], writing["ratings"]),
                         ('"writing"', 2, 0.75, 4.0, [0.5, 1.0], {"3": 1, "5": 1}))
        self.assertEqual((missing["label"], missing["value"], missing["missing"],
                          missing["records"], missing["mean_score"], missing["ci95"]),
                         ("(no field)", None, True, 1, 1.0, [1.0, 1.0]))
        self.assertEqual((summary["records"], summary["mean_score"], summary["mean_value"]),
                         (6, 0.5833, 3.8))
        title, rows = table(err, "category")
        self.assertEqual(title, "  by category (--group-by): 3 values")
        self.assertEqual(rows, [
            ["value", "records", "failed", "mean", "judged mean", "on the scale", "95% CI"],
            ['"math"', "3", "1", "0.3333", "0.5", "3.0", "[0.0, 1.0]"],
            ['"writing"', "2", "0", "0.75", "0.75", "4.0", "[0.5, 1.0]"],
            ["(no field)", "1", "0", "1.0", "1.0", "5.0", "[1.0, 1.0]"],
            ["all", "6", "1", "0.5833", "0.7", "3.8", str(summary["ci95"])]])
        # beside the overall figures: after the score's line, before trust
        lines = err.splitlines()
        self.assertTrue(lines[lines.index(title) - 1].startswith("  mean score 0.5833"))

    def test_the_tables_interval_is_at_the_runs_confidence(self):
        # the column read "95% CI" with ci95 under --confidence 0.9: "all" disagreed with
        # the score line's 90% CI above it
        data = self.write_jsonl("data.jsonl", RECORDS)
        _, err, summary = self.run_cli(data, "--group-by", "category", "--confidence", "0.9",
                                       "--bootstrap-samples", "200")
        _, rows = table(err, "category")
        self.assertEqual(rows[0][-1], "90% CI")
        self.assertEqual(rows[-1], ["all", "6", "1", "0.5833", "0.7", "3.8", str(summary["ci"])])
        self.assertIn("90% CI {} (bootstrap, 200 resamples".format(summary["ci"]), err)
        for row in summary["groups"]["category"]["shown"]:
            self.assertEqual(row["ci_method"], "bootstrap, 200 resamples, seed 0")
            self.assertNotEqual(row["ci"], None)

    def test_the_docs_table_is_this_dataset_s(self):
        with open(os.path.join(os.path.dirname(HERE), "docs", "ranking-and-statistics.md"),
                  encoding="utf-8") as f:
            readme = f.read()
        shown = re.search(r"## Figures by group\n.*?```\n(.*?)```", readme, re.S).group(1)
        data = self.write_jsonl("data.jsonl", RECORDS)
        _, err, _ = self.run_cli(data, "--group-by", "category", "--human-field", "label")
        self.assertIn(shown, err)

    def test_a_groups_figures_are_those_of_a_run_over_its_records_alone(self):
        pairs = [{"category": c, "question": "q%d" % i, "response_a": a, "response_b": b,
                  "label": lab} for i, (c, a, b, lab) in enumerate([
                      ("x", "ans-best", "ans-ok", "A"), ("x", "ans-ok", "ans-good", "B"),
                      ("x", "ans-ok", "ans-ok", "A"), ("y", "ans-good", "ans-best", "B"),
                      ("y", "ans-good", "ans-ok", "tie")])]
        systems = [{"category": c, "question": "q%d" % i, "responses": dict(zip(
            ("s1", "s2", "s3"), answers))} for i, (c, answers) in enumerate([
                ("x", ("ans-best", "ans-good", "ans-ok")),
                ("x", ("ans-good", "ans-best", "ans-ok")),
                ("y", ("ans-ok", "ans-good", "ans-best")),
                (None, ("ans-best", "ans-ok", "ans-good"))])]
        rating = [dict(r, category=["a", 1]) if r["id"] == 6 else r for r in RECORDS]
        rating += [dict(RECORDS[0], id=7, category="one")]
        cases = [("rating", rating, ["--human-field", "label", "--pass-threshold", "0.5"]),
                 ("pairwise", pairs, ["--mode", "pairwise", "--human-field", "label"]),
                 ("systems", systems, ["--mode", "systems"])]
        headings = {"rating": ["mean", "judged mean", "on the scale", "95% CI", "pass rate",
                               "agreement"],
                    "pairwise": ["A's win rate", "95% CI", "agreement"],
                    "systems": ["win rates"]}
        for mode, records, flags in cases:
            with self.subTest(mode=mode):
                if mode != "rating":
                    self.srv.responder = prefer_marked
                data = self.write_jsonl(mode + ".jsonl", records)
                _, err, summary = self.run_cli(data, "--group-by", "category", *flags)
                shown = summary["groups"]["category"]["shown"]
                rows = table(err, "category")[1]
                self.assertEqual(rows[0], ["value", "records", "failed"] + headings[mode])
                self.assertEqual(sum(row["records"] for row in shown), len(records))
                for row in shown:
                    alone = [r for r in records if json.dumps(r.get("category")) == row["label"]]
                    part = self.write_jsonl("part.jsonl", alone)
                    _, _, own = self.run_cli(part, *flags, name="part.json")
                    self.assertEqual({k: row[k] for k in FIGURES}, {k: own[k] for k in FIGURES})
                if mode == "systems":  # each system's win rate, the best first
                    self.assertEqual(rows[1], ['"x"', "2", "0", "s1 0.75, s2 0.75, s3 0.0"])

    def test_report_over_shards_gives_the_groups_of_one_run(self):
        records = [dict(r, id=r["id"] + 10 * k, difficulty=k % 3)
                   for k in range(3) for r in RECORDS]
        data = self.write_jsonl("data.jsonl", records)
        flags = ["--group-by", "category", "--group-by", "difficulty", "--human-field", "label"]
        _, err, whole = self.run_cli(data, "-o", self.path("all.jsonl"), *flags)
        shards = []
        for k in range(3):
            shards.append(self.path("shard%d.jsonl" % k))
            self.run_cli(data, "--shard", "%d/3" % k, "-o", shards[-1], *flags)
        shard_err, shard_report = self.report(*(shards[::-1] + flags))  # in any order
        self.assertEqual(list(whole["groups"]), ["category", "difficulty"])
        self.assertEqual(self.run_cli(data, "--group-by", "id", "--shard", "2/18")[1].count(
            "  by id (--group-by): 1 value\n"), 1)
        self.assertEqual(shard_report["groups"], whole["groups"])
        self.assertEqual(self.report(self.path("all.jsonl"), *flags)[1]["groups"],
                         whole["groups"])
        for field in ("category", "difficulty"):
            self.assertEqual(table(shard_err, field), table(err, field))

    def test_the_summary_its_json_and_the_page_say_the_same(self):
        records = RECORDS + [dict(RECORDS[0], id=7, category="<b>bold</b> & co")]
        data = self.write_jsonl("data.jsonl", records)
        _, err, summary = self.run_cli(data, "--group-by", "category", "--html",
                                       self.path("page.html"), "--human-field", "label")
        title, rows = table(err, "category")
        self.assertEqual(rows[0], ["value", "records", "failed", "mean", "judged mean",
                                   "on the scale", "95% CI", "agreement"])
        shown = summary["groups"]["category"]["shown"]
        self.assertEqual([row[0] for row in rows[1:]], [g["label"] for g in shown] + ["all"])
        for printed, group in zip(rows[1:], shown + [summary]):
            self.assertEqual(printed[1:7], [str(group[k]) for k in (
                "records", "failed", "mean_score", "mean_score_judged", "mean_value", "ci95")])
        self.assertEqual(rows[1][7], "quadratic kappa {} (n=2)".format(
            shown[0]["agreement"]["kappa_quadratic"]))
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertNotIn("<b>bold", page)
        self.assertIn("<p>{}</p>".format(html.escape(title.strip())), page)
        found = re.search(r"<h3>Groups</h3><p>[^<]*</p>(<table>.*?</table>)", page).group(1)
        cells = [[html.unescape(c) for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
                 for row in re.findall(r"<tr>(.*?)</tr>", found)]
        self.assertEqual(cells, rows)


class HostileValuesTest(GroupTest):
    def test_any_value_is_its_own_group_shown_as_its_json(self):
        long_text = "x" * 5000
        values = [1, "1", None, float("nan"), 1e999, [1, 2], {"b": 1, "a": 2}, "数学",
                  "<script>alert(1)</script>", long_text, "all", "none judged", True,
                  "\u202eevil", "a\nb"]
        records = [{"id": i, "category": v, "question": "q", "response": "resp-good"}
                   for i, v in enumerate(values)] + [{"id": 99, "question": "q",
                                                       "response": "resp-bad"}]
        with open(self.path("data.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        out, err, summary = self.run_cli(self.path("data.jsonl"), "--group-by", "category",
                                         "-o", self.path("out.jsonl"), "--html",
                                         self.path("page.html"))
        cut = '"{}... sha256 {}'.format("x" * 39, hashlib.sha256(
            json.dumps(long_text).encode()).hexdigest()[:16])
        shown = summary["groups"]["category"]["shown"]
        # NaN and 1e999 are written as null: they are null's group, in a run as in report;
        # --summary has the long value whole, the printed table cut (issue 44)
        whole = json.dumps(long_text)
        self.assertEqual([(g["label"], g["records"]) for g in shown], [("null", 3)] + sorted([
            ("1", 1), ('"1"', 1), ("[1, 2]", 1), ('{"a": 2, "b": 1}', 1), ('"数学"', 1),
            ('"<script>alert(1)</script>"', 1), (whole, 1), ('"all"', 1), ('"none judged"', 1),
            ("true", 1), ('"\u202eevil"', 1), ('"a\\nb"', 1), ("(no field)", 1)]))
        values = {g["label"]: (g["value"], g["missing"]) for g in shown}
        self.assertEqual([values[k] for k in ("1", '"1"', "null", "[1, 2]", whole, "(no field)")],
                         [(1, False), ("1", False), (None, False), ([1, 2], False),
                          (long_text, False), (None, True)])
        _, rows = table(err, "category")
        self.assertIn(cut, [row[0] for row in rows])
        self.assertEqual(rows[-1][:3], ["all", "16", "0"])
        self.assertIn('"all"', [row[0] for row in rows])
        self.assertIn('"\\u202eevil"', [row[0] for row in rows])  # escaped on a terminal
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertNotIn("<script>alert", page)
        self.assertIn("&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;", page)
        self.assertEqual(self.report(self.path("out.jsonl"), "--group-by", "category")[1][
            "groups"], summary["groups"])

    def test_an_empty_field_name_is_refused(self):
        code, out, err = run_main(["--group-by", "", self.write_jsonl("d.jsonl", RECORDS)])
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.endswith("minijudge: error: argument --group-by: expected a value, "
                                     "got an empty string\n"), err)


class ManyValuesTest(GroupTest):
    def test_ten_thousand_values_show_the_largest_and_say_how_many_are_not(self):
        self.run_cli(self.write_jsonl("one.jsonl", RECORDS[:1]), "-o", self.path("one.out"))
        with open(self.path("one.out"), encoding="utf-8") as f:
            scored = json.loads(f.read())
        with open(self.path("many.jsonl"), "w", encoding="utf-8") as f:
            for k in range(10001):  # ids: 10,001 values; buckets: 10,000 (0 twice)
                f.write(json.dumps(dict(scored, id=k, bucket=k % 10000, judge_line=k + 1)))
                f.write("\n")
        err, summary = self.report(self.path("many.jsonl"), "--group-by", "bucket",
                                   "--group-by", "id")
        buckets = summary["groups"]["bucket"]
        # --summary has every value; the printed table the 60 with the most records (issue 44)
        self.assertEqual((buckets["values"], buckets["not_shown"], len(buckets["shown"])),
                         (10000, 9940, 10000))
        self.assertEqual([g["label"] for g in buckets["shown"][:4]], ["0", "1", "10", "100"])
        self.assertEqual(buckets["shown"][0]["records"], 2)
        self.assertEqual(summary["groups"]["id"], {"values": None, "limit": 10000,
                                                   "shown": [], "not_shown": None})
        title, rows = table(err, "bucket")
        self.assertEqual(title, "  by bucket (--group-by): 10,000 values; the 60 with the most "
                                "records shown, and 9,940 more values: --summary lists all")
        self.assertEqual(len(rows), 62)  # the heading, 60 values, all
        self.assertIn("  by id (--group-by): over 10,000 values: none shown (figures are kept "
                      "for at most 10,000 values)\n", err)



class SummaryRunTest(StubTestCase):
    """Issue 44's summary items, through the real command line against the loopback stub:
    --summary keeps every --group-by value and each value whole (only the printed table and
    the page cut, saying so), one JSON number is one group however it is written, a model's
    size tag is part of its name for self-judging, and the mean on the judge's scale has its
    interval beside it."""

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


class EveryGroupTest(SummaryRunTest):
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


class OneNumberTest(SummaryRunTest):
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


class ModelSizeTest(SummaryRunTest):
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


class MeanOnTheScaleTest(SummaryRunTest):
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

    def test_the_interval_on_the_scale_is_rounded_once_there(self):
        # its 0-1 ends were rounded to 4 places, then stretched: 7 on 1-10 on every record
        # gave (7 on the 1-10 scale, 95% CI [7.0003, 7.0003]), an interval without its mean
        template = self.write("t.txt", "Rate the response from 1 to 10.\n{question}\n{response}")
        for ratings in ([7] * 4, [2, 3, 9, 7, 7]):
            with self.subTest(ratings=ratings):
                self.srv.push(*["Rating: %d" % rating for rating in ratings])
                records = [{"question": "q%d" % k, "response": "r", "team": "t"}
                           for k in range(len(ratings))]
                err, summary = self.run_cli(records, "--concurrency", "1", "--no-preflight",
                                            "--scale", "1,10", "--template", template,
                                            "--group-by", "team", "-o", self.path("o.jsonl"))
                expected = bootstrap(ratings, 1000, 0, 0.95)  # of the ratings themselves
                self.assertEqual((summary["mean_value"], summary["mean_value_ci"]),
                                 (round(sum(ratings) / len(ratings), 4), expected))
                self.assertIn(" on the 1-10 scale, 95% CI {}); ".format(expected), err)
                reported = self.report(self.path("o.jsonl"), "--group-by", "team")[1]
                self.assertEqual((reported["mean_value_ci"], reported["groups"]),
                                 (expected, summary["groups"]))


class GroupsHostileTest(SummaryRunTest):
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


# the stub rates each response by the digit after "ans-": a judge whose scores we know
RATED = [{"question": "q{}".format(k), "response": "ans-{}".format(1 + k * 3 % 5)}
         for k in range(12)]


def rate_by_answer(request):
    found = re.findall(r"ans-(\d)", request.json["messages"][-1]["content"])
    return "Rating: " + (found or ["3"])[-1]  # the preflight's request has no answer


def prefer_self(request):
    """Systems: the answer marked SELF wins; else a tie."""
    text = request.json["messages"][-1]["content"]
    where, b = text.find("SELF"), text.find("Start of Assistant B")
    if where < 0:
        return "[[C]]"
    if where < b:
        return "[[A]]"
    return "[[B]]"


def bootstrap(scores, samples, seed, level):
    """The README's method, written again: the means of ``samples`` resamples of the sorted
    scores by random.Random(seed).choices, cut at the (1 -+ level) / 2 quantiles."""
    rng, scores, n = random.Random(seed), sorted(scores), len(scores)
    means = sorted(sum(rng.choices(scores, k=n)) / n for _ in range(samples))
    tail = (1 - level) / 2
    low, high = round(tail * samples), round((1 - tail) * samples)
    return [round(means[low], 4), round(means[min(high, samples - 1)], 4)]


class RatedByAnswerTest(StubTestCase):
    """Issue 34, items 3 and 4: the interval as the user wants it (--bootstrap-samples,
    --confidence: every interval says its level and method), and self-judging (--model-
    field; systems named like the judge): a warning, and the self-preference gap under
    trust.

    Each test judges small files through the real command line against the loopback stub;
    `report` over shards must give the same figures as one run, and the printed summary, the
    --summary JSON and the page must say the same thing."""

    def setUp(self):
        super().setUp()
        self.srv.responder = rate_by_answer

    def run_ok(self, *argv):
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m"]
                                  + list(argv))
        self.assertEqual(code, 0, err)
        return err

    def report_ok(self, *argv):
        code, out, err = run_main(["report"] + list(argv))
        self.assertEqual(code, 0, err)
        return err


class IntervalTest(RatedByAnswerTest):
    def test_samples_and_level_name_the_interval_in_the_summary_json_report_and_page(self):
        data = self.write_jsonl("data.jsonl", RATED)
        flags = ["--bootstrap-samples", "200", "--confidence", "0.9"]
        err = self.run_ok(data, "-o", self.path("out.jsonl"), "--summary", self.path("s.json"),
                          "--html", self.path("page.html"), *flags)
        s = self.summary("s.json")
        scores = [(int(r["response"][-1]) - 1) / 4 for r in RATED]
        self.assertEqual(s["ci"], bootstrap(scores, 200, 0, 0.9))
        self.assertEqual(s["ci95"], bootstrap(scores, 200, 0, 0.95))  # kept: always 95%
        self.assertEqual(s["ci_method"], "bootstrap, 200 resamples, seed 0")
        self.assertEqual(s["interval"], {"confidence": 0.9, "bootstrap_samples": 200,
                                         "bootstrap_seed": 0})
        line = "90% CI {} (bootstrap, 200 resamples, seed 0)".format(s["ci"])
        self.assertIn(line + "\n", err)
        with open(self.path("page.html"), encoding="utf-8") as f:
            self.assertIn(line, f.read())
        # shards, reported with the same flags: the same interval
        for k in range(2):
            self.run_ok(data, "-o", self.path("s%d.jsonl" % k), "--shard", "%d/2" % k, "-q")
        self.report_ok(self.path("s0.jsonl"), self.path("s1.jsonl"), "--summary",
                       self.path("r.json"), *flags)
        r = self.summary("r.json")
        for key in ("ci", "ci95", "ci_method", "interval", "mean_score"):
            self.assertEqual(r[key], s[key], key)

    def test_the_defaults_give_todays_interval_and_say_95_percent(self):
        data = self.write_jsonl("data.jsonl", RATED)
        err = self.run_ok(data, "-o", self.path("out.jsonl"), "--summary", self.path("s.json"))
        s = self.summary("s.json")
        scores = [(int(r["response"][-1]) - 1) / 4 for r in RATED]
        self.assertEqual(s["ci"], bootstrap(scores, 1000, 0, 0.95))
        self.assertEqual(s["ci95"], s["ci"])
        self.assertIn("; 95% CI {} (bootstrap, 1000 resamples, seed 0)\n".format(s["ci"]), err)

    def test_past_2000_scores_the_normal_interval_takes_the_level(self):
        self.run_ok(self.write_jsonl("one.jsonl", RATED[:1]), "-o", self.path("one.out"), "-q")
        with open(self.path("one.out"), encoding="utf-8") as f:
            record = json.loads(f.readline())
        big = []
        for k in range(2001):  # one run's records of 2,001 input lines
            big.append(dict(record, question="q%d" % k, judge_line=k + 1,
                            judge_score=k % 2, judge_value=1 + 4 * (k % 2)))
        self.write_jsonl("big.jsonl", big)
        err = self.report_ok(self.path("big.jsonl"), "--confidence", "0.8",
                             "--summary", self.path("r.json"))
        r = self.summary("r.json")
        mean = 1000 / 2001
        se = (sum((k % 2 - mean) ** 2 for k in range(2001)) / 2000 / 2001) ** 0.5
        z80, z95 = NormalDist().inv_cdf(0.9), NormalDist().inv_cdf(0.975)
        self.assertEqual(r["ci"], [round(mean - z80 * se, 4), round(mean + z80 * se, 4)])
        self.assertEqual(r["ci95"], [round(mean - z95 * se, 4), round(mean + z95 * se, 4)])
        self.assertIn("; 80% CI {} (normal approximation)\n".format(r["ci"]), err)

    def test_out_of_range_values_are_refused_on_a_run_and_on_report(self):
        data = self.write_jsonl("data.jsonl", RATED[:2])
        self.run_ok(data, "-o", self.path("out.jsonl"), "-q")
        cases = [
            (["--confidence", "95"], "--confidence must be a share between 0 and 1, at "
                                     "least 0.00000001 from either (0.95 for a 95% "
                                     "interval); got 95.0"),
            (["--confidence", "0"], None), (["--confidence", "1"], None),
            (["--confidence", "nan"], None), (["--confidence", "-0.5"], None),
            (["--bootstrap-samples", "99"], "--bootstrap-samples must be a whole number "
                                            "from 100 to 100000; got 99"),
            (["--bootstrap-samples", "100001"], None), (["--bootstrap-samples", "0"], None)]
        for flags, message in cases:
            for argv in (["--judge-url", self.srv.url, data] + flags,
                         ["report", self.path("out.jsonl")] + flags):
                with self.subTest(argv=argv):
                    code, out, err = run_main(argv)
                    self.assertEqual((code, out), (2, ""))
                    self.assertTrue(err.startswith("minijudge: error: " + flags[0] + " must be"),
                                    err)
                    if message:
                        self.assertEqual(err, "minijudge: error: " + message + "\n")
        before = self.srv.chat_count
        code, _, err = run_main(["--judge-url", self.srv.url, data, "--bootstrap-samples", "abc"])
        self.assertEqual(code, 2)
        self.assertIn("argument --bootstrap-samples: invalid int value: 'abc'", err)
        self.assertEqual(self.srv.chat_count, before)  # refused before anything was sent

    def test_a_judges_file_takes_no_interval_setting(self):
        judges = self.write("judges.json", json.dumps(
            [{"name": "a", "url": self.srv.url, "model": "m", "confidence": 0.9}]))
        code, out, err = run_main(["--judges", judges, self.write_jsonl("d.jsonl", RATED)])
        self.assertEqual(code, 2)
        self.assertIn("confidence", err)

    def test_win_rates_on_the_page_say_their_level_and_method(self):
        self.srv.responder = prefer_self
        data = self.write_jsonl("sys.jsonl", [
            {"question": "q%d" % k, "responses": {"x": "plain", "y": "SELF here", "z": "p"}}
            for k in range(3)])
        self.run_ok(data, "--mode", "systems", "-o", self.path("o.jsonl"), "-q",
                    "--html", self.path("page.html"), "--confidence", "0.8")
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn("<h3>Win rates (80% interval: normal approximation), ranked</h3>", page)
        self.assertNotIn("95%", page)


class SelfJudgingTest(RatedByAnswerTest):
    MODELS = ["Meta-Llama/Judge-8B:q4_K_M", "other-7b", "judge-8b-2024-08-06", None, 7,
              float("nan"), ["judge-8b"], "<b>all</b>", "none judged", "x" * 100000, "\u00e9t\u00e9"]

    def rated(self):
        records = []
        for k, model in enumerate(self.MODELS):
            rating = 5 if model in self.MODELS[:3:2] else 2
            records.append({"question": "q%d" % k, "response": "ans-%d" % rating,
                            "model": model})
        return self.write_jsonl("data.jsonl", records)

    def test_the_judges_own_answers_are_named_with_the_gap_in_summary_json_report_page(self):
        data = self.rated()
        args = ["--judge-url", self.srv.url, "--judge-model", "judge-8B", data,
                "--model-field", "model"]
        code, _, err = run_main(args + ["-o", self.path("o.jsonl"), "--summary",
                                        self.path("s.json"), "--html", self.path("p.html")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s, {"field": "model", "unnamed": 5, "judges": [{
            "judge": None, "model": "judge-8B",
            "answers": ["Meta-Llama/Judge-8B:q4_K_M", "judge-8b-2024-08-06"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.25, "n": 4}, "gap": 0.75}]})
        warning = ("  warning: the judge judge-8B also answered 2 of the records (field "
                   "'model': Meta-Llama/Judge-8B:q4_K_M, judge-8b-2024-08-06): its scores of "
                   "its own answers may be biased; see self-preference under trust\n")
        trust = ("    self-preference: judge-8B's mean score for its own model's answers 1.0 "
                 "(n=2), for the others' 0.25 (n=4): gap +0.75 (5 judged records name no "
                 "model)\n")
        self.assertIn(warning, err)
        self.assertIn(trust, err)
        with open(self.path("p.html"), encoding="utf-8") as f:
            page = f.read()
        import html
        self.assertIn(html.escape(warning.strip()), page)
        self.assertIn(html.escape(trust.strip()), page)
        self.assertNotIn("<b>all</b>", page)
        # shards, reported: the same figures
        for k in range(3):
            code, _, e = run_main(args + ["-o", self.path("s%d.jsonl" % k), "--shard",
                                          "%d/3" % k, "-q"])
            self.assertEqual(code, 0, e)
        rerr = self.report_ok(*[self.path("s%d.jsonl" % k) for k in range(3)], "--model-field",
                              "model", "--summary", self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)
        self.assertIn(warning, rerr)
        self.assertIn(trust, rerr)

    def test_no_warning_when_no_record_names_the_judges_model(self):
        data = self.rated()
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "gpt-4o", data,
                                 "--model-field", "model", "-o", self.path("o.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        self.assertIsNone(self.summary("s.json")["self_judging"])
        self.assertNotIn("self-preference", err)
        self.assertNotIn("  warning:", err)

    def test_a_system_named_like_the_judge_is_warned_of_with_its_win_rate_gap(self):
        self.srv.responder = prefer_self
        data = self.write_jsonl("sys.jsonl", [
            {"question": "q%d" % k, "responses": {"x": "plain", "Org/Judge-8B": "SELF",
                                                  "z": "p"}} for k in range(2)])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-8b:latest",
                                 data, "--mode", "systems", "-o", self.path("o.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s, {"field": None, "unnamed": 0, "judges": [{
            "judge": None, "model": "judge-8b:latest", "answers": ["Org/Judge-8B"],
            "own": {"mean": 1.0, "n": 4}, "others": {"mean": 0.25, "n": 8}, "gap": 0.75}]})
        self.assertIn("  warning: the judge judge-8b:latest is also a system judged "
                      "(Org/Judge-8B): its verdicts on its own answers may be biased; see "
                      "self-preference under trust\n", err)
        self.assertIn("    self-preference: judge-8b:latest's win rate for its own answers 1.0 "
                      "(n=4), the others' 0.25 (n=8): gap +0.75\n", err)

    def test_a_jury_shows_each_members_gap(self):
        data = self.rated()
        judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "judge-8b"},
            {"name": "b", "url": self.srv.url, "model": "gpt-4o"}]))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", data, "--model-field",
                                 "model", "-o", self.path("o.jsonl"), "--summary",
                                 self.path("s.json")])
        self.assertEqual(code, 0, err)
        s = self.summary("s.json")["self_judging"]
        self.assertEqual(s["judges"], [{
            "judge": "a", "model": "judge-8b",
            "answers": ["Meta-Llama/Judge-8B:q4_K_M", "judge-8b-2024-08-06"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.25, "n": 4}, "gap": 0.75}])
        self.assertIn("    self-preference: a (judge-8b)'s mean score for its own model's "
                      "answers 1.0 (n=2)", err)
        self.report_ok(self.path("o.jsonl"), "--model-field", "model", "--summary",
                       self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)

    def test_model_field_in_a_mode_judging_two_responses_is_refused(self):
        data = self.write_jsonl("p.jsonl", [{"question": "q", "response_a": "a",
                                             "response_b": "b", "model": "m"}])
        code, out, err = run_main(["--judge-url", self.srv.url, data, "--mode", "pairwise",
                                   "--model-field", "model"])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --model-field names the model of a record's "
                              "one response; --mode pairwise judges two\n")
        self.assertEqual(self.srv.chat_count, 0)


KEY = "sk-host34-secret-0123456789"


class StatisticsHostileTest(StubTestCase):
    """The hostile pass on issue 34 (per-group figures, Bradley-Terry ranking, interval
    options, self-judging), each through the real command line against the loopback stub:
    combined options whose results must still agree between the printed summary, --summary,
    report (over shards too) and the page."""

    def run_code(self, *argv, env=None):
        return run_main(["--judge-url", self.srv.url] + list(argv), env=env)

    def run_ok(self, *argv, env=None):
        code, out, err = self.run_code(*argv, env=env)
        self.assertEqual(code, 0, err)
        return err

    def report_ok(self, *argv, env=None):
        code, out, err = run_main(["report"] + list(argv), env=env)
        self.assertEqual(code, 0, err)
        return err

    def page(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()


def named_pair(k, a, b):
    """A pairwise record naming its two systems; the judge's own model's answer says SELF."""
    texts = {"Org/Judge-8B": "SELF", "x": "plain x", "z": "plain z"}
    return {"question": "q%d" % k, "model_a": a, "model_b": b, "response_a": texts[a],
            "response_b": texts[b]}


class SelfJudgingInPairwiseHostileTest(StatisticsHostileTest):
    """A pairwise record naming its systems (model_a, model_b) ranks them as systems mode
    does; a judge that is one of them was warned of in systems mode but not here: the
    ranking put the judge's own model first with no word of it."""

    def records(self):
        pairs = [("Org/Judge-8B", "x"), ("z", "Org/Judge-8B"), ("x", "z"), ("z", "x")]
        return self.write_jsonl("p.jsonl", [named_pair(k, a, b)
                                            for k, (a, b) in enumerate(pairs)])

    def test_a_judge_named_like_a_system_is_warned_of_with_its_win_rate_gap(self):
        self.srv.responder = prefer_self
        data = self.records()
        args = ["--judge-model", "judge-8b:latest", data, "--mode", "pairwise"]
        err = self.run_ok(*args, "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"))
        s = self.summary("s.json")["self_judging"]
        # own: 2 comparisons, both won; others: x and z's 6 sides (2 lost to SELF, 4 ties)
        self.assertEqual(s, {"field": None, "unnamed": 0, "judges": [{
            "judge": None, "model": "judge-8b:latest", "answers": ["Org/Judge-8B"],
            "own": {"mean": 1.0, "n": 2}, "others": {"mean": 0.3333, "n": 6},
            "gap": 0.6667}]})
        warning = ("  warning: the judge judge-8b:latest is also a system judged "
                   "(Org/Judge-8B): its verdicts on its own answers may be biased; see "
                   "self-preference under trust\n")
        trust = ("    self-preference: judge-8b:latest's win rate for its own answers 1.0 "
                 "(n=2), the others' 0.3333 (n=6): gap +0.6667\n")
        self.assertIn(warning, err)
        self.assertIn(trust, err)
        page = self.page("p.html")
        self.assertIn(html.escape(warning.strip()), page)
        self.assertIn(html.escape(trust.strip()), page)
        with open(self.path("o.jsonl"), encoding="utf-8") as f:
            lines = f.readlines()
        for k, part in enumerate((lines[3:], lines[:3])):  # shards, the last first
            with open(self.path("s%d.jsonl" % k), "w", encoding="utf-8") as f:
                f.writelines(part)
        rerr = self.report_ok(self.path("s0.jsonl"), self.path("s1.jsonl"), "--summary",
                              self.path("r.json"))
        self.assertEqual(self.summary("r.json")["self_judging"], s)
        self.assertIn(warning, rerr)
        self.assertIn(trust, rerr)

    def test_no_warning_when_no_system_is_the_judges_model(self):
        self.srv.responder = prefer_self
        err = self.run_ok("--judge-model", "gpt-4o", self.records(), "--mode", "pairwise",
                          "-o", self.path("o.jsonl"), "--summary", self.path("s.json"))
        self.assertIsNone(self.summary("s.json")["self_judging"])
        self.assertNotIn("self-preference", err)


class KeyInAGroupHostileTest(StatisticsHostileTest):
    """--group-by a field holding the API key (a record carrying its request's headers):
    the key was printed as a group's name in the summary, --summary and the page."""

    def test_a_group_named_by_the_key_is_hidden_everywhere(self):
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % k, "response": "r", "auth": [KEY, "plain"][k % 2]}
            for k in range(4)])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--group-by", "auth", "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"), "--html-rows", "0",
                          env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", "auth", "--summary",
                              self.path("r.json"), "--html", self.path("r.html"),
                              "--html-rows", "0", env=env)  # the records hold it, as -o does
        for text in (err, rerr, self.page("p.html"), self.page("r.html"),
                     json.dumps(self.summary("s.json")), json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn('    "<hidden>"  2        0       0.75  0.75         4.0', err)
        self.assertIn("<td>&quot;&lt;hidden&gt;&quot;</td>", self.page("p.html"))
        shown = self.summary("s.json")["groups"]["auth"]["shown"]
        self.assertEqual([(g["label"], g["value"]) for g in shown],
                         [('"<hidden>"', None), ('"plain"', "plain")])
        self.assertEqual(self.summary("r.json")["groups"], self.summary("s.json")["groups"])

    def test_a_key_pasted_as_the_group_by_field_is_hidden(self):
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--group-by", KEY, "-o", self.path("o.jsonl"), "--summary",
                          self.path("s.json"), "--html", self.path("p.html"), "--html-rows",
                          "0", env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", KEY, "--summary",
                              self.path("r.json"), env=env)
        for text in (err, rerr, self.page("p.html"), json.dumps(self.summary("s.json")),
                     json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn("  by <hidden> (--group-by): 1 value\n", err)
        self.assertEqual(list(self.summary("r.json")["groups"]), ["<hidden>"])

    def test_a_key_pasted_as_the_model_field_is_hidden(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r",
                                              KEY: "judge-model"}])
        env = {"LLM_JUDGE_API_KEY": KEY}
        err = self.run_ok(data, "--judge-model", "judge-model", "--model-field", KEY, "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"), "--html",
                          self.path("p.html"), "--html-rows", "0", env=env)
        rerr = self.report_ok(self.path("o.jsonl"), "--model-field", KEY, "--summary",
                              self.path("r.json"), env=env)
        for text in (err, rerr, self.page("p.html"), json.dumps(self.summary("s.json")),
                     json.dumps(self.summary("r.json"))):
            self.assertNotIn(KEY, text)
        self.assertIn("  warning: the judge judge-model also answered 1 of the records (field "
                      "'<hidden>': judge-model): ", err)
        self.assertEqual(self.summary("r.json")["self_judging"]["field"], "<hidden>")


class LevelPrintedAsItIsHostileTest(StatisticsHostileTest):
    """--confidence 1e-300 was taken and printed '0% CI'; 0.999999999 printed '100% CI'."""

    def test_a_level_that_would_print_as_0_or_100_percent_is_refused(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        expected = ("minijudge: error: --confidence must be a share between 0 and 1, at least "
                    "0.00000001 from either (0.95 for a 95% interval); got {!r}\n")
        for value in ("1e-300", "0.999999999", "4e-9"):
            with self.subTest(value=value):
                code, out, err = self.run_code(data, "--confidence", value)
                self.assertEqual((code, err), (2, expected.format(float(value))))
                code, out, err = run_main(["report", data, "--confidence", value])
                self.assertEqual((code, err), (2, expected.format(float(value))))
        self.srv.content = "Rating: 4"
        err = self.run_ok(data, "--confidence", "1e-8", "-o", self.path("o.jsonl"))
        self.assertIn(" 1e-06% CI [0.75, 0.75] (bootstrap, 1000 resamples, seed 0)", err)


class OneComparisonHostileTest(StatisticsHostileTest):
    """One comparison only: the ranking said 'ranked over 1 comparisons' and '1 comparisons'."""

    def test_one_comparison_is_counted_in_the_singular(self):
        self.srv.content = "[[A]]"
        data = self.write_jsonl("p.jsonl", [
            {"question": "q", "model_a": "A", "model_b": "B", "response_a": "x",
             "response_b": "y"}])
        err = self.run_ok(data, "--mode", "pairwise", "--single-order", "-o",
                          self.path("o.jsonl"), "--html", self.path("p.html"))
        self.assertIn("  ranked over 1 comparison, baseline A at 1000 (", err)
        self.assertIn("    A 1000.0 (CI [1000.0, 1000.0]), win rate against the baseline 0.5 "
                      "(CI [0.5, 0.5]), length-controlled 1000.0, 1 comparison\n", err)
        self.assertNotIn("1 comparisons", err)
        self.assertNotIn("1 comparisons", self.page("p.html"))
        rerr = self.report_ok(self.path("o.jsonl"))
        self.assertIn("  ranked over 1 comparison, baseline A at 1000 (", rerr)


class GroupAgreementKindHostileTest(StatisticsHostileTest):
    """A group whose 1-5 labels were all 1 read them as yes/no: 'accuracy 1.0' for a judge
    rating 3 where each label said 1, beside the other groups' kappas."""

    def test_a_group_reads_its_labels_as_the_run_does(self):
        self.srv.content = "Rating: 3"
        data = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % k, "response": "r", "cat": "ones" if k < 3 else "mixed",
             "label": 1 if k < 3 else 1 + k % 5} for k in range(8)])
        err = self.run_ok(data, "--group-by", "cat", "--human-field", "label", "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"), "--html",
                          self.path("p.html"))
        shown = self.summary("s.json")["groups"]["cat"]["shown"]
        ones = [g for g in shown if g["value"] == "ones"][0]["agreement"]
        self.assertEqual((ones["kind"], ones["exact"], ones["within_one"], ones["n"]),
                         ("ratings", 0.0, 0.0, 3))
        self.assertIn('    "ones"   3        0       0.5   0.5          3.0           '
                      '[0.5, 0.5]  quadratic kappa ', err)
        self.assertNotIn("accuracy", err)
        self.assertNotIn("accuracy", self.page("p.html"))
        rerr = self.report_ok(self.path("o.jsonl"), "--group-by", "cat", "--human-field",
                              "label", "--summary", self.path("r.json"))
        self.assertEqual(self.summary("r.json")["groups"], self.summary("s.json")["groups"])
        self.assertNotIn("accuracy", rerr)


class NoLengthGapHostileTest(StatisticsHostileTest):
    """Answers all of one length: the trust block's length-controlled win rate said 0.5
    against a raw 0.75 (its fit had no length spread to stand on), while the ranking's
    length-controlled scores were the plain ones."""

    def test_the_length_controlled_win_rate_is_the_raw_one(self):
        self.srv.content = "[[A]]"
        data = self.write_jsonl("p.jsonl", [
            {"question": "q%d" % k, "model_a": "A", "model_b": "B", "response_a": "xy",
             "response_b": "zw"} for k in range(4)])
        self.srv.push(*["[[B]]"] * 1)
        err = self.run_ok(data, "--mode", "pairwise", "--single-order", "-o",
                          self.path("o.jsonl"), "--summary", self.path("s.json"))
        length = self.summary("s.json")["length_bias"]
        self.assertEqual((length["win_rate"], length["lc_win_rate"]), (0.75, 0.75))
        self.assertIn("length-controlled win rate 0.75, raw 0.75 (n=4)", err)


class EmptySummaryLinesTest(StubTestCase):
    """Issue 30, the first hour: two summary lines a new user met with nothing in them.

    An input with no records printed ``statuses: `` (nothing after it; now ``statuses:
    none``), and a run whose judge model was neither given nor listed by the server printed
    ``judge None at URL``."""

    def test_no_records_says_so_on_the_statuses_line(self):
        source = self.write("empty.jsonl", "")
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", source])
        self.assertEqual(code, 0, err)
        self.assertIn("\n  statuses: none\n", err)
        self.assertIn("warning: no records in " + source, err)

    def test_a_model_not_known_is_not_printed_as_none(self):
        source = self.write("in.jsonl", '{"question": "q", "response": "r"}\n')
        url = self.down_url()  # refuses: the model list cannot be read, no model to name
        code, out, err = run_main(["--judge-url", url, "--no-preflight", "--max-retries", "0",
                                   "--max-error-rate", "1", source])
        self.assertEqual(code, 0, err)
        self.assertIn("; judge (model not known) at {}/v1/chat/completions\n".format(url), err)
        self.assertNotIn("judge None", err)


# summaries covering every line the printer can write, and what it wrote before issue 12
_BASE = {
    "records": 8, "statuses": {"parse_error": 2, "ok": 5, "http_error": 1}, "failed": 3,
    "failure_rate": 0.375, "errors": {"parse_error": "no rating in '{x}' {0}",
                                      "http_error": "HTTP 500: {oops}"},
    "mean_score": 0.4062, "mean_score_judged": 0.65, "ci95": [0.1875, 0.625],
    "ci": [0.1875, 0.625], "interval": {"confidence": 0.95, "bootstrap_samples": 1000,
                                         "bootstrap_seed": 0},
    "ci_method": "bootstrap, 1000 resamples, seed 0", "ratings": {"1": 1, "3.5": 2, "5": 2},
    "tokens": {"completion_tokens": 7, "total_tokens": 40}, "requests": 9, "cached": 2,
    "wall_seconds": 1.26, "requests_per_second": 7.14, "latency_mean": 0.1,
    "latency_max": 0.2, "judge_url": "http://127.0.0.1:9/v1/chat/completions",
    "judge_model": "judge-{model}", "parameters": {"pass_threshold": 0.75, "logprobs": False},
    "score_sources": {"logprobs": 3, "text": 2},
    "adapted": ["dropped response_format (the server said: {no})", "max_tokens 16 -> 32"],
    "mode": "rating", "position_consistency": None, "systems": None, "ranking": None,
    "position_pairs": 6,
    "pass_rate": 0.5, "interrupted": False, "positional_bias_rate": None, "batch": None,
    "agreement": {"n": 5, "kind": "ratings", "exact": 0.4, "within_one": 0.8,
                  "kappa_quadratic": 0.61, "spearman": 0.7, "pearson": 0.72,
                  "field": "human", "confusion": {}},
}


_NOTHING_ELSE = dict(agreement=None, tokens={}, adapted=[], score_sources={}, pass_rate=None,
                     ratings={})


_HEADER = ("records in 1.3 s (9 requests, 2 from cache, 7.14 requests/s); judge judge-{model} "
           "at http://127.0.0.1:9/v1/chat/completions\n")


_ERRORS = "  first parse_error: no rating in '{x}' {0}\n  first http_error: HTTP 500: {oops}\n"


_CI = "95% CI [0.1875, 0.625] (bootstrap, 1000 resamples, seed 0)\n"


_ADAPTED = ("  adapted: dropped response_format (the server said: {no})\n"
            "  adapted: max_tokens 16 -> 32\n")


PRINTED = [  # (what changes in _BASE, --max-error-rate, name, the text)
    ({}, 0.1, None,
     "minijudge: 8 " + _HEADER + "  statuses: ok 5, http_error 1, parse_error 2\n" + _ERRORS
     + "  mean score 0.4062 with failures as 0.0; 0.65 over the 5 judged; " + _CI
     + "  trust:\n    agreement with human (n=5): exact 0.4, within one 0.8, quadratic kappa "
     "0.61, Spearman 0.7, Pearson 0.72\n"
     "  pass rate 0.5 at --pass-threshold 0.75\n  ratings: 1: 1, 3.5: 2, 5: 2\n"
     "  scores from logprobs: 3, from the text: 2 (the server sent no usable logprobs for "
     "those)\n" + _ADAPTED + "  tokens: 0 prompt, 7 completion\n"
     "  failure rate 37.5% is over --max-error-rate 10.0%: exit 1\n"),
    (dict(mode="pairwise", position_consistency=0.8333, tokens={}, pass_rate=None, ratings={},
          adapted=[], score_sources={"text": 5}, interrupted=True,
          agreement={"n": 5, "kind": "binary", "accuracy": 0.8, "precision": 1.0,
                     "recall": 0.6667, "best_threshold": 0.5, "best_accuracy": 0.8,
                     "field": "label"}), 0.1, None,
     "minijudge: 8 " + _HEADER + "  statuses: ok 5, http_error 1, parse_error 2\n" + _ERRORS
     + "  A's win rate 0.65 (ties count half) over the 5 judged; " + _CI
     + "  trust:\n    position-consistent: 83.3% of the pairs asked in both orders (the rest "
     "count as ties; n=6)\n    agreement with label (n=5): accuracy 0.8, precision 1.0, recall "
     "0.6667 at 0.5; best threshold 0.5 (accuracy 0.8)\n"),  # interrupted: _Run says so
    (dict(mode="systems", errors={}, statuses={"ok": 4}, failed=0, failure_rate=0.0,
          score_sources={}, ratings={}, parameters={"pass_threshold": None, "logprobs": True},
          systems={"x": {"win_rate": 0.75, "comparisons": 4},
                   "y": {"win_rate": 0.25, "comparisons": 4}},
          ranking=["x", "y"], pass_rate=None, agreement={"n": 1, "field": "gold"}), 0.1, None,
     "minijudge: 8 " + _HEADER + "  statuses: ok 4\n  ranking over the 8 judged (win rates, "
     "ties count half): x 0.75 (4 comparisons), "
     "y 0.25 (4 comparisons)\n  trust:\n    agreement with gold: too few judged records with "
     "a label (n=1)\n  scores from logprobs: 0, from the text: 0\n" + _ADAPTED
     + "  tokens: 0 prompt, 7 completion\n"),
    (dict(_NOTHING_ELSE, mode="pairwise", records=2, failed=2, failure_rate=1.0,
          statuses={"timeout": 2}, errors={"timeout": "timed out"}), 1.0, None,
     "minijudge: 2 " + _HEADER + "  statuses: timeout 2\n  first timeout: timed out\n"
     "  A's win rate: none judged\n"),  # was the mean with failures as 0.0 (issue 30)
    (dict(_NOTHING_ELSE, records=0, failed=0, failure_rate=0.0, statuses={}, errors={}), 0.1,
     "j2", "minijudge [j2]: 0 " + _HEADER + "  statuses: none\n"),
]


class SummaryPrinterTest(unittest.TestCase):
    """The printed summary, line by line, as it was before the command line's help was put in
    groups (issue 12, items 4 and 5): summaries covering every line the printer can write."""

    def test_the_printer_writes_what_it_wrote_before(self):
        for change, max_error_rate, name, expected in PRINTED:
            with self.subTest(mode=change.get("mode"), records=change.get("records")):
                printed = io.StringIO()
                minijudge._print_summary(dict(_BASE, **change), max_error_rate, printed,
                                         name=name)
                self.assertEqual(printed.getvalue(), expected)


class EveryPairATieHostileTest(CommandLineSideBySide):
    """Issue 30's hostile pass (host30): the length line of a run whose every pair is a tie."""

    def test_the_length_line_prints_no_none(self):
        # "the longer answer won None of the decisive verdicts (n=0)": the printed None
        # the issue asked to be gone from the summary
        source = self.source([{"question": "q{}".format(i), "response_a": "a", "response_b": "bb"}
                              for i in range(4)])
        self.srv.content = "[[C]]"
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "--mode", "pairwise", source)
        self.assertEqual(code, 0, err)
        # one length gap in every pair: no length-controlled figure, said (issue 44)
        self.assertIn("\n    length: no verdict was decisive (n=0); length-controlled win rate "
                      "none (the length gap is the same in every pair: the win rate at no gap "
                      "cannot be told from the length's effect), raw 0.5 (n=4)\n", err)
        self.assertNotIn("None", err)


class ServerTextHostileTest(CommandLineSideBySide):
    """Issue 30's hostile pass (host30): a server's error text holding terminal escapes reaches
    no terminal."""

    def test_escapes_in_an_error_body_reach_no_terminal(self):
        # the summary's "first http_error" line printed the server's own text: ESC [2J
        # cleared the user's screen (the progress line with it), OSC set the window title,
        # U+202E turned the rest of the line around
        from stub import error
        self.srv.push(error(400, "bad \x1b[2J\x1b]0;pwned\x07 \u202eevil"))
        source = self.source()
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "--max-retries", "0", source)
        self.assertEqual(code, 1)
        self.assertIn(": bad \\x1b[2J\\x1b]0;pwned\\x07 \\u202eevil", err)
        for char in ("\x1b", "\x07", "\u202e"):
            self.assertNotIn(char, err)
        self.assertIn("\x1b[2J", json.loads(out)["judge_error"])  # the record keeps the text


if __name__ == "__main__":
    unittest.main()
