"""Issue 34, item 1: per-group figures (`--group-by FIELD`, repeatable).

Each value of a field gets every figure of the summary (records, failures, means and
interval, ratings, pass rate, win rates, agreement), computed from its records alone, beside
the overall figures: in the printed summary (a table), `--summary` JSON ("groups"), `report`
and the page. A record without the field is its own group, "(no field)". Values are shown as
their JSON, so "all" (a value) and all (the overall row) differ. Each test judges small files
through the real command line against the loopback stub.
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
from stub import StubTestCase, chat, run_main  # noqa: E402

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
        with open(self.path(name), encoding="utf-8") as f:
            return out, err, json.load(f)

    def report(self, *argv):
        code, out, err = run_main(["report", "--summary", self.path("r.json"), "--max-error-rate",
                                   "1"] + list(argv))
        self.assertEqual(code, 0, err)
        with open(self.path("r.json"), encoding="utf-8") as f:
            return err, json.load(f)


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
            "ratings": {"1": 1, "5": 1}, "pass_rate": None, "systems": None, "ranking": None,
            "agreement": None})
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


if __name__ == "__main__":
    import unittest
    unittest.main()
