"""Issue 46, item 4: the summary's figures as Python calls (mean_interval, group_table,
rank_systems) from plain values and from Judgements, equal to what the command line prints
for the same data; and `report --layout` reading FastChat's and arena-hard-auto's judgment
files (a small copy of each layout is in examples/).

The runs judge records against the loopback stub, which answers as a real judge does: an
explanation, then the verdict on its last line (or a refusal to follow the format).
"""
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from minijudge import (Judgement, JudgeError, LLMJudge, group_table, judge_records,  # noqa: E402
                       mean_interval, rank_systems)
from stub import CommandLineTestCase, chat, run_main  # noqa: E402
from test_modes import answers  # noqa: E402

MT = os.path.join(REPO, "examples", "mt_bench")
ARENA = os.path.join(REPO, "examples", "arena_hard")
ARENA_JUDGMENTS = os.path.join(ARENA, "model_judgment", "gpt-4-1106-preview")


def explained(request):
    """A rating judge that explains first: the answer "worth N" gets N; "refuse" a reply
    with no rating. Pairwise: the answer starting "win" wins ("WIN": strongly)."""
    a, b = answers(request)
    if a is not None:
        for side, mine, theirs in (("A", a, b), ("B", b, a)):
            if mine.lower().startswith("win") and not theirs.lower().startswith("win"):
                strong = ">>" + "AB".replace(side, "") if mine.startswith("WIN") else ""
                return chat("Assistant {} answers the question; the other does not.\n\n"
                            "[[{}{}]]".format(side, side, strong))
        return chat("Both answers are alike.\n\n[[C]]")
    prompt = request.prompt or ""
    if "refuse" in prompt:
        return chat("I would rather not grade this answer.")
    worth = prompt.split("worth ")[1][0]
    return chat("The answer covers part of the question.\nRating: " + worth)


RATED = [{"question": "q%d" % k, "response": text, "category": category}
         for k, (text, category) in enumerate([
             ("worth 5", "math"), ("worth 1", "math"), ("refuse", "math"),
             ("worth 4", "writing"), ("worth 3", "writing"), ("worth 5", "code"),
             ("worth 2", "writing"), ("worth 4", "math")])]


def pair(k, a, b, winner, length_a=3, length_b=3, strong=False):
    texts = {a: "los", b: "los"}
    if winner:
        texts[winner] = "WIN" if strong else "win"
    return {"question": "q%d" % k, "model_a": a, "model_b": b,
            "response_a": texts[a].ljust(length_a, "."),
            "response_b": texts[b].ljust(length_b, ".")}


PAIRS = [pair(1, "x", "y", "x", 9, 3), pair(2, "x", "y", "y", 8, 3, strong=True),
         pair(3, "y", "z", "y", 12, 4), pair(4, "y", "z", None, 5, 5),
         pair(5, "x", "z", "x", 7, 6, strong=True), pair(6, "z", "x", "x", 4, 10),
         pair(7, "x", "y", "x", 6, 6), pair(8, "z", "y", "z", 9, 2),
         pair(9, "x", "z", "z", 11, 3), pair(10, "y", "x", "y", 10, 4)]


class SameFiguresAsTheSummary(CommandLineTestCase):
    """Each function against the summary of a run over the same records."""

    def setUp(self):
        super().setUp()
        self.srv.responder = explained

    def run_and_judge(self, records, *flags, **judge):
        """The run's --summary, and the Judgements the library gives the same records."""
        self.main("--judge-model", "judge-model", "--summary", self.path("s.json"),
                  "--max-error-rate", "1", *flags, items=records)
        llm = LLMJudge(self.srv.url, model="judge-model", max_retries=0, **judge)
        return self.summary(), llm

    def test_mean_interval_is_the_summarys_mean_and_interval(self):
        summary, llm = self.run_and_judge(RATED)
        judgements = [j for _, j in judge_records(llm, RATED)]
        self.assertEqual([j.status for j in judgements].count("parse_error"), 1)
        figures = mean_interval(judgements)
        self.assertEqual(figures, {
            "n": 8, "mean": summary["mean_score"], "ci": summary["ci"], "level": 0.95,
            "method": summary["ci_method"], "failed": 1,
            "mean_judged": summary["mean_score_judged"]})
        self.assertEqual((figures["mean"], figures["mean_judged"]), (0.5312, 0.6071))
        at_90 = mean_interval(judgements, level=0.9, resamples=500, seed=7)
        self.main("--judge-model", "judge-model", "--summary", self.path("90.json"),
                  "--max-error-rate", "1", "--confidence", "0.9", "--bootstrap-samples",
                  "500", "--bootstrap-seed", "7", items=RATED)
        self.assertEqual(at_90["ci"], self.summary("90.json")["ci"])
        self.assertEqual(at_90["method"], "bootstrap, 500 resamples, seed 7")

    def test_group_table_is_the_summarys_group_by_table(self):
        summary, llm = self.run_and_judge(RATED, "--group-by", "category")
        judgements = [j for _, j in judge_records(llm, RATED)]
        table = group_table(judgements, [r["category"] for r in RATED])
        rows = summary["groups"]["category"]["shown"]
        self.assertEqual(list(table), [row["value"] for row in rows])  # most records first
        self.assertEqual(list(table), ["math", "writing", "code"])
        for row in rows:
            mine = table[row["value"]]
            self.assertEqual((mine["n"], mine["mean"], mine["ci"], mine["failed"],
                              mine["mean_judged"]),
                             (row["records"], row["mean_score"], row["ci"], row["failed"],
                              row["mean_score_judged"]), row["value"])

    def test_rank_systems_is_the_summarys_ranking(self):
        flags = ("--mode", "pairwise", "--strong-weight", "3", "--baseline", "y")
        summary, llm = self.run_and_judge(PAIRS, *flags, template="pairwise")
        compared = []
        for record in PAIRS:
            judgement = llm.compare({"question": record["question"]}, record["response_a"],
                                    record["response_b"])
            gap = len(record["response_a"]) - len(record["response_b"])
            compared.append((record["model_a"], record["model_b"], judgement, gap))
        ranking = rank_systems(compared, baseline="y", strong_weight=3)
        self.assertEqual(ranking.pop("failed"), 0)
        self.assertEqual(ranking, summary["bradley_terry"])
        self.assertIsNotNone(ranking["length_coefficient"])
        self.assertNotEqual(ranking["systems"]["x"]["lc_score"], ranking["systems"]["x"]["score"])

    def test_rank_systems_from_systems_judgements_and_their_responses(self):
        items = [{"question": "q%d" % k, "responses": {"p": "win" + "." * k, "q": "los",
                                                       "r": "los.."}} for k in range(1, 5)]
        items.append({"question": "q9", "responses": {"p": "los", "q": "win", "r": "los"}})
        summary, llm = self.run_and_judge(items, "--mode", "systems", template="pairwise")
        judged = [(llm.compare_systems({"question": i["question"]}, i["responses"]),
                   i["responses"]) for i in items]
        ranking = rank_systems(judged)
        del ranking["failed"]
        self.assertEqual(ranking, summary["bradley_terry"])
        without_lengths = rank_systems([judgement for judgement, _ in judged])
        self.assertEqual(without_lengths["length_coefficient"], 0.0)


class FromPlainValues(CommandLineTestCase):
    def test_the_docs_worked_example(self):
        # A beats B in 2 of 3, B beats C in 2 of 3, A beats C in 4 of 5: p = (4, 2, 1)
        compared = ([("A", "B", "A")] * 2 + [("A", "B", "B")] + [("B", "C", 1)] * 2
                    + [("B", "C", 0)] + [("A", "C", "A>B")] * 4 + [("A", "C", "B")])
        ranking = rank_systems(compared)
        systems = ranking["systems"]
        self.assertEqual([systems[k]["score"] for k in "ABC"], [1000.0, 879.59, 759.18])
        self.assertEqual([systems[k]["win_rate"] for k in "BC"], [0.3333, 0.2])
        self.assertEqual(ranking["baseline"], "A")
        self.assertEqual(rank_systems(compared, baseline="C")["systems"]["A"]["score"], 1240.82)

    def test_outcomes_read_alike(self):
        def scores(ranking):
            return {name: (v["score"], v["win_rate"]) for name, v in ranking["systems"].items()}
        strong = rank_systems([("a", "b", "A>>B"), ("a", "b", "B>A")], strong_weight=3)
        plain = rank_systems([("a", "b", "A")] * 3 + [("a", "b", "b")])
        self.assertEqual(scores(strong), scores(plain))
        self.assertEqual(scores(strong), {"a": (1000.0, 0.5), "b": (809.15, 0.25)})
        swapped = rank_systems([("a", "b", "B<<A"), ("b", "a", "A>B")], strong_weight=3)
        self.assertEqual(scores(swapped), scores(plain))
        ties = rank_systems([("a", "b", "tie"), ("a", "b", "A=B"), ("a", "b", 0.5),
                             ("a", "b", "c")])
        self.assertEqual(ties["systems"]["b"]["score"], 1000.0)

    def test_a_comparison_of_unknown_length_is_left_out_of_the_length_control(self):
        # a 3-tuple or a gap of None: no length known. It was fitted at a gap of 0, as if both
        # answers were as long; now the length-controlled figures are those of the
        # comparisons whose gaps are known, the plain ones those of all
        rng = random.Random(11)
        known = []
        for _ in range(60):
            a, b = rng.sample("pqrs", 2)
            gap = rng.randint(-400, 400)
            won = rng.random() < 1 / (1 + math.exp(-gap / 200 - ("pqrs".index(a) - "pqrs"
                                                                  .index(b)) / 2))
            known.append((a, b, "A" if won else "B", gap))
        unknown = [("p", "q", "B", None), ("p", "r", "B"), ("s", "q", "A", None),
                   ("s", "r", "A")] * 3
        mixed = rank_systems(known[:30] + unknown + known[30:], seed=4)
        alone = rank_systems(known, seed=4)
        plain = rank_systems([c[:3] for c in known + unknown], seed=4)

        def figures(ranking, key):
            return {name: figures[key] for name, figures in ranking["systems"].items()}
        self.assertEqual((figures(mixed, "lc_score"), mixed["length_coefficient"]),
                         (figures(alone, "lc_score"), alone["length_coefficient"]))
        self.assertNotEqual(figures(mixed, "lc_score"), figures(mixed, "score"))
        for key in ("score", "ci", "win_rate", "win_rate_ci", "comparisons"):
            self.assertEqual(figures(mixed, key), figures(plain, key), key)
        # no length known at all: the plain scores and gamma 0, as before
        self.assertEqual((figures(plain, "lc_score"), plain["length_coefficient"]),
                         (figures(plain, "score"), 0.0))
        none = rank_systems([c[:3] + (None,) for c in known + unknown], seed=4)
        self.assertEqual(none, plain)

    def test_unknown_lengths_that_leave_a_system_or_the_baseline_unjoined(self):
        known = [("a", "b", "A", 5), ("a", "b", "B", -3), ("b", "a", "A", 2),
                 ("a", "b", "A", 9), ("b", "a", "B", -1)]
        # c compared at unknown lengths alone: no length-controlled score; a and b theirs
        ranking = rank_systems(known + [("c", "a", "A"), ("c", "b", "B", None)])
        self.assertEqual(ranking["systems"]["c"]["lc_score"], None)
        self.assertEqual({k: ranking["systems"][k]["lc_score"] for k in "ab"},
                         {k: rank_systems(known)["systems"][k]["lc_score"] for k in "ab"})
        # a cycle closed at an unknown length: the known ones alone need ties added (one
        # system never lost), as their own fit adds them
        cycle = [("a", "b", "A", 3), ("a", "b", "A", -2), ("b", "c", "A", 4),
                 ("b", "c", "A", 1), ("a", "c", "A", 2)]
        closed, alone = rank_systems(cycle + [("c", "a", "A")]), rank_systems(cycle)
        self.assertEqual((closed["ties_added"], alone["ties_added"]), (False, True))
        self.assertEqual({k: v["lc_score"] for k, v in closed["systems"].items()},
                         {k: v["lc_score"] for k, v in alone["systems"].items()})
        # the baseline, or one group of systems, joined to the rest at unknown lengths alone
        cases = [(known + [("c", "a", "A")], "c",
                  "the comparisons of known length (5 of 6) do not join every system they "
                  "compare to the baseline 'c'"),
                 (known + [("c", "d", "A", 1), ("d", "c", "A", -2), ("c", "a", "B")], "a",
                  "the comparisons of known length (7 of 8) do not join every system they "
                  "compare to the baseline 'a'")]
        for comparisons, baseline, reason in cases:
            with self.subTest(baseline):
                ranking = rank_systems(comparisons, baseline=baseline)
                self.assertEqual(ranking["components"][0]["lc_unfitted"], reason)
                self.assertEqual((ranking["length_coefficient"],
                                  {f["lc_score"] for f in ranking["systems"].values()}),
                                 (None, {None}))
                self.assertEqual(ranking["systems"][baseline]["score"], 1000.0)
        with self.assertRaises(JudgeError) as caught:  # still refused: not a length
            rank_systems([("a", "b", "A", float("nan"))])
        self.assertEqual(str(caught.exception), "comparisons[0][3] must be a number, a's "
                         "length minus b's; got nan")

    def test_failed_judgements_are_counted_not_ranked(self):
        failed = Judgement(status="parse_error", error="no verdict", score=None)
        won = Judgement(score=1.0, value="A")
        ranking = rank_systems([("a", "b", won), ("a", "b", failed), ("a", "b", "B")])
        self.assertEqual((ranking["failed"], ranking["comparisons"]), (1, 2))
        self.assertEqual(mean_interval([won, failed, 0.5])["failed"], 1)
        self.assertEqual(mean_interval([won, failed, 0.5])["mean"], 0.5)

    def test_bad_values_name_where_they_came_from(self):
        cases = [
            (lambda: mean_interval([1, None]), "scores[1] must be a number or a Judgement; "
             "got None"),
            (lambda: mean_interval([1, float("nan")]), "scores[1] must be a number or a "
             "Judgement; got nan"),
            (lambda: mean_interval([True]), "scores[0] must be a number or a Judgement; got "
             "True"),
            (lambda: mean_interval("0.5"), "scores must be a list; got '0.5'"),
            (lambda: mean_interval([1e200, 1]), "scores must be numbers whose squares a float "
             "holds (below about 1e154); got one of 1e+200"),
            (lambda: mean_interval([1], level=95), "level must be a share between 0 and 1, at "
             "least 0.00000001 from either (0.95 for a 95% interval); got 95"),
            (lambda: mean_interval([1], level="0.9"), "level must be a share between 0 and 1, "
             "at least 0.00000001 from either (0.95 for a 95% interval); got '0.9'"),
            (lambda: mean_interval([1], resamples=10), "resamples must be a whole number from "
             "100 to 100000; got 10"),
            (lambda: mean_interval([1], seed=1.5), "seed must be a whole number; got 1.5"),
            (lambda: group_table([1, 2], ["a"]), "group_table needs one group for each score; "
             "got 2 scores and 1 groups"),
            (lambda: group_table([1], [["a"]]), "groups[0] must be a value a dict can key "
             "(text, a number, a tuple); got ['a']"),
            (lambda: rank_systems([("a", "b", "A")], strong_weight=0), "strong_weight must "
             "be a whole number from 1 to 1000; got 0"),
            (lambda: rank_systems([("a", "b", "A")], baseline="c"), "baseline 'c' is none of "
             "the 2 systems compared"),
            (lambda: rank_systems([]), "rank_systems needs a comparison of two systems; got "
             "none (0 failed)"),
            (lambda: rank_systems([("a", "a", "A")]), "comparisons[0] must be two systems' "
             "names, two different texts, first; got ('a', 'a', 'A')"),
            (lambda: rank_systems([("a", 2, "A")]), "comparisons[0] must be two systems' "
             "names, two different texts, first; got ('a', 2, 'A')"),
            (lambda: rank_systems([("a", "b", "A>>A")]), "comparisons[0][2] must be A, B, tie, "
             "an Arena-Hard label (A>>B, A>B, A=B, B>A, B>>A), a share from 0 to 1 or a "
             "Judgement; got 'A>>A'"),
            (lambda: rank_systems([("a", "b", 2)]), "comparisons[0][2] must be A, B, tie, an "
             "Arena-Hard label (A>>B, A>B, A=B, B>A, B>>A), a share from 0 to 1 or a "
             "Judgement; got 2"),
            (lambda: rank_systems([("a", "b", "A", "long")]), "comparisons[0][3] must be a "
             "number, a's length minus b's; got 'long'"),
            (lambda: rank_systems([("a", "b")]), "comparisons[0] must be (a, b, outcome), (a, "
             "b, outcome, gap) or a Judgement of compare_systems (with its responses); got "
             "('a', 'b')"),
            (lambda: rank_systems([Judgement(score=1.0, value="A")]), "comparisons[0] is a "
             "Judgement of compare, which names no systems: give (a, b, judgement)"),
            (lambda: rank_systems([("a", "b", Judgement(score=None))]), "comparisons[0][2]."
             "score must be A's share of the win, 0 to 1, in a judged Judgement; got None"),
            (lambda: rank_systems([Judgement(details={"pairs": [None, 3]})]), "rank_systems "
             "needs a comparison of two systems; got none (0 failed)"),
        ]
        for call, message in cases:
            with self.subTest(message):
                with self.assertRaises(JudgeError) as caught:
                    call()
                self.assertEqual(str(caught.exception), message)

    def test_nan_groups_are_one_group(self):  # NaN != NaN: each would be its own group
        table = group_table([1, 0, 1], [float("nan"), float("nan"), None])
        self.assertEqual({k: v["n"] for k, v in table.items()}, {None: 3})

    def test_a_generator_is_read_once(self):
        self.assertEqual(mean_interval(x / 4 for x in range(5))["mean"], 0.5)
        table = group_table((x for x in (1, 0, 1)), iter(["a", "b", "a"]))
        self.assertEqual({k: v["mean"] for k, v in table.items()}, {"a": 1.0, "b": 0.0})

    def test_public_and_documented(self):
        for name in ("mean_interval", "group_table", "rank_systems"):
            self.assertIn(name, minijudge.__all__)
            self.assertIn(name, minijudge.__doc__)
            with open(os.path.join(REPO, "docs", "python-api.md"), encoding="utf-8") as f:
                self.assertIn("`{}(".format(name), f.read())


def arena_hard_battles(baseline, weight=3):
    """arena-hard-auto's own reading of its judgment files, written out here: game 1 shows
    the baseline as A, game 2 the model; a strong verdict counts ``weight`` times; a game
    with no verdict is left out. As (a, b, outcome) for rank_systems."""
    battles = []
    for name in sorted(os.listdir(ARENA_JUDGMENTS)):
        with open(os.path.join(ARENA_JUDGMENTS, name), encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                for number, game in enumerate(row["games"]):
                    label = game["score"]
                    if label not in ("A>>B", "A>B", "A=B", "B>A", "B>>A"):
                        continue
                    a, b = (baseline, row["model"]) if number == 0 else (row["model"], baseline)
                    outcome = {"A": "A", "B": "B", "=": "tie"}[label[1] if "=" in label
                                                                else label[0]]
                    battles += [(a, b, outcome)] * (weight if ">>" in label else 1)
    return battles


class ReportReadsOtherToolsFiles(CommandLineTestCase):
    """`report --layout` on the small copies of the published layouts in examples/."""

    def layout_report(self, *argv):
        code, out, err = self.in_process("report", "--summary", self.path("r.json"),
                                         "--max-error-rate", "1", *argv)
        self.assertEqual(code, 0, err)
        return err, self.summary("r.json")

    def test_fastchat_single_gives_mt_benchs_means(self):
        err, s = self.layout_report("--layout", "fastchat-single",
                                    os.path.join(MT, "model_judgment", "gpt-4_single.jsonl"),
                                    "--questions", os.path.join(MT, "question.jsonl"),
                                    "--group-by", "category", "--group-by", "turn")
        # FastChat's rule: each model's mean of its scores but the -1s (no rating read)
        means = {}
        with open(os.path.join(MT, "model_judgment", "gpt-4_single.jsonl")) as f:
            for row in map(json.loads, f):
                if row["score"] != -1:
                    means.setdefault(row["model"], []).append(row["score"])
        rows = {row["value"]: row for row in s["groups"]["model"]["shown"]}
        for model, scores in means.items():
            self.assertAlmostEqual(rows[model]["mean_value"], sum(scores) / len(scores), 4)
        self.assertEqual({m: rows[m]["mean_value"] for m in rows},
                         {"big-70b": 9.375, "mid-13b": 8.75, "tiny-7b": 4.4286})
        self.assertEqual((s["records"], s["failed"], s["mean_value"]), (24, 1, 7.6522))
        self.assertEqual([row["value"] for row in s["groups"]["category"]["shown"]],
                         ["extraction", "math", "reasoning", "writing"])
        self.assertIn("first out_of_range: field 'score' is -1.0, not on the scale 1 to 10",
                      err)
        self.assertIn('    "tiny-7b"  8        1       0.3333  0.381        4.4286        '
                      '[0.1389, 0.5556]', err)

    def test_fastchat_pair_agrees_or_ties_as_fastchat_does(self):
        err, s = self.layout_report(
            "--layout", "fastchat-pair", os.path.join(MT, "model_judgment", "gpt-4_pair.jsonl"),
            "--answers", os.path.join(MT, "model_answer"))
        # FastChat's rule: an "error" in either game drops the pair; games that differ tie
        wins, played = {}, {}
        with open(os.path.join(MT, "model_judgment", "gpt-4_pair.jsonl")) as f:
            for row in map(json.loads, f):
                if "error" in (row["g1_winner"], row["g2_winner"]):
                    continue
                won = {"model_1": 1.0, "model_2": 0.0}.get(row["g1_winner"], 0.5)
                if row["g1_winner"] != row["g2_winner"]:
                    won = 0.5
                for name, share in ((row["model_1"], won), (row["model_2"], 1 - won)):
                    wins[name] = wins.get(name, 0) + share
                    played[name] = played.get(name, 0) + 1
        ranking = s["bradley_terry"]
        self.assertEqual((s["records"], s["failed"], ranking["comparisons"]), (24, 2, 22))
        self.assertEqual({k: v["comparisons"] for k, v in ranking["systems"].items()}, played)
        self.assertEqual(list(ranking["systems"]), ["big-70b", "mid-13b", "tiny-7b"])
        self.assertEqual(s["position_consistency"], 0.9091)
        self.assertIsNotNone(ranking["length_coefficient"])  # the answers' lengths were read

    def test_arena_hard_ranks_as_arena_hard_auto_reads_its_files(self):
        err, s = self.layout_report("--layout", "arena-hard", "--baseline", "base-model",
                                    os.path.join(ARENA_JUDGMENTS, "large-model.jsonl"),
                                    os.path.join(ARENA_JUDGMENTS, "small-model.jsonl"))
        ranking = rank_systems(arena_hard_battles("base-model"), baseline="base-model")
        for name, figures in s["bradley_terry"]["systems"].items():
            for key in ("score", "win_rate"):
                self.assertEqual(figures[key], ranking["systems"][name][key], (name, key))
        systems = s["bradley_terry"]["systems"]
        self.assertEqual({k: (v["score"], v["win_rate"]) for k, v in systems.items()},
                         {"large-model": (1559.18, 0.9615), "base-model": (1000.0, 0.5),
                          "small-model": (661.96, 0.125)})
        self.assertEqual(s["bradley_terry"]["strong_weight"], 3)
        self.assertEqual((s["records"], s["failed"]), (20, 1))
        self.assertIn("first parse_error: field 'games[1].score' must be a verdict, A, B, tie "
                      "or A>>B, A>B, A=B, B>A, B>>A; got null", err)

    def test_a_layout_named_field_by_field(self):
        rows = [{"id": k, "sys": "m%d" % (k % 3), "grade": k % 5, "topic": "t%d" % (k % 2)}
                for k in range(12)] + [{"id": 99, "sys": "m0", "grade": "n/a"}]
        source = self.write_jsonl("mine.jsonl", rows)
        layout = json.dumps({"score": "grade", "scale": [0, 4], "system": "sys",
                             "group_by": ["sys"]})
        err, s = self.layout_report("--layout", layout, source, "--group-by", "topic")
        self.assertEqual((s["records"], s["failed"]), (13, 1))
        self.assertEqual(s["statuses"], {"ok": 12, "parse_error": 1})
        self.assertEqual(sorted(s["groups"]), ["sys", "topic"])
        table = group_table([r["grade"] / 4 for r in rows[:12]], [r["sys"] for r in rows[:12]])
        shown = {row["value"]: row for row in s["groups"]["sys"]["shown"]}
        self.assertEqual(shown["m1"]["ci"], table["m1"]["ci"])

    def test_a_line_that_is_no_record_is_counted_as_failed(self):
        source = self.write("bad.jsonl", '{"model_1": "a", "model_2": "b", "g1_winner": '
                            '"model_1", "g2_winner": "model_1"}\nnot json\n[1, 2]\n')
        err, s = self.layout_report("--layout", "fastchat-pair", source)
        self.assertEqual(s["statuses"], {"ok": 1, "bad_record": 2})

    def test_hostile_lines_are_failures_with_their_reason(self):
        key = "sk-host46-SECRET-0123456789"
        lines = [{"model_1": "a", "model_2": "a", "g1_winner": "tie", "g2_winner": "tie"},
                 {"model_1": 3, "model_2": "b", "g1_winner": "tie", "g2_winner": "tie"},
                 {"model_1": "a", "model_2": "b", "g1_winner": key, "g2_winner": "tie"},
                 {"model_1": "a", "model_2": "b", "g1_winner": ["model_1"],
                  "g2_winner": "tie", "judge": key},
                 {"model_1": "a", "model_2": "b", "g1_winner": "model_1",
                  "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"]}]
        source = self.write_jsonl("hostile.jsonl", lines)
        code, out, err = self.in_process("report", "--layout", "fastchat-pair", source,
                                         "--max-error-rate", "1", "--summary",
                                         self.path("r.json"), env={"LLM_JUDGE_API_KEY": key})
        self.assertEqual(code, 0, err)
        s = self.summary("r.json")
        self.assertEqual(s["statuses"], {"ok": 1, "bad_record": 2, "parse_error": 2})
        self.assertEqual(s["position_consistency"], 0.0)  # the one judged disagreed: a tie
        self.assertEqual(s["mean_score_judged"], 0.5)
        self.assertNotIn(key, err + json.dumps(s))
        games = self.write_jsonl("games.jsonl", [
            {"model": "base", "games": [{"score": "A>B"}, {"score": "B>A"}]},
            {"model": "m", "games": "A>B"}, {"model": "m", "games": [None, {"score": 0.5}]},
            {"model": "m", "games": [{"score": "A>>B"}, {"score": "a<<b"}, {"score": "A>B"}]}])
        err, s = self.layout_report("--layout", "arena-hard", "--baseline", "base", games)
        self.assertEqual(s["statuses"], {"bad_record": 1, "parse_error": 2, "ok": 4})
        self.assertIn("first bad_record: 'model' and --baseline both name \"base\": a system "
                      "is not compared with itself", err)
        # game 1 the baseline as A: A>>B is base's, strong; game 2 swapped: a<<b is base's
        # too; a third game is read as the first is (the baseline as A)
        self.assertEqual(s["bradley_terry"]["comparisons"], 4)
        big = self.write("big.jsonl", '{"s": 1e308}\n{"s": NaN}\n{"s": true}\n')
        err, s = self.layout_report("--layout", '{"score": "s", "scale": [0, 1e308]}', big)
        self.assertEqual(s["statuses"], {"ok": 1, "parse_error": 2})

    def test_flags_that_read_minijudges_records_only_are_refused(self):
        judgments = os.path.join(ARENA_JUDGMENTS, "small-model.jsonl")
        for flag in (["--price", "1,2"], ["--mixed"]):
            code, out, err = run_main(["report", "--layout", "fastchat-single", judgments]
                                      + flag)
            self.assertEqual((code, err), (2, "minijudge: error: {} reads minijudge's records; "
                                           "--layout's are another tool's judgments\n".format(
                                               flag[0])))
        err, s = self.layout_report("--layout", "fastchat-single", os.path.join(
            MT, "model_judgment", "gpt-4_single.jsonl"), "--pass-threshold", "0.7")
        self.assertEqual(s["pass_rate"], 0.6957)

    def test_layout_errors(self):
        judgments = os.path.join(ARENA_JUDGMENTS, "small-model.jsonl")
        cases = [
            (("--layout", "fastchat", judgments), "--layout must be one of fastchat-single, "
             "fastchat-pair, arena-hard or a JSON object of score, scale, system, model_a, "
             "model_b, verdict, verdicts, games, question, answer_system, judge, group_by, "
             "strong_weight; got 'fastchat'"),
            (("--layout", '{"model_a": "x"}', judgments), '--layout {"model_a": "x"} needs '
             "model_b and verdict"),
            (("--layout", '{"scores": "x"}', judgments), "--layout has no key 'scores'; it "
             "takes score, scale, system, model_a, model_b, verdict, verdicts, games, "
             "question, answer_system, judge, group_by, strong_weight"),
            (("--layout", '{"score": "x", "scale": [5, 1]}', judgments), "--layout's scale "
             "must be [LO, HI], two numbers, LO below HI, HI - LO a float; got [5, 1]"),
            (("--layout", '{"score": "x", "scale": [-1e308, 1e308]}', judgments), "--layout's "
             "scale must be [LO, HI], two numbers, LO below HI, HI - LO a float; got [-1e+308, "
             "1e+308]"),
            (("--layout", '{"model_a": "a", "model_b": "b", "verdict": ["x", "y", "z"]}',
              judgments), "--layout's verdict must be a field name, or a list of two (the "
             "verdicts of both orders); got ['x', 'y', 'z']"),
            (("--layout", '[1]', judgments), "--layout must be one of fastchat-single, "
             "fastchat-pair, arena-hard or a JSON object of score, scale, system, model_a, "
             "model_b, verdict, verdicts, games, question, answer_system, judge, group_by, "
             "strong_weight; got '[1]'"),
            (("--layout", '{"score": "x", "strong_weight": true}', judgments), "--layout's "
             "strong_weight must be a whole number from 1 to 1000; got True"),
            (("--layout", "arena-hard", judgments), "--layout arena-hard needs --baseline "
             "NAME: the system every answer was compared with (arena-hard-auto's default: "
             "gpt-4-0314)"),
            (("--questions", judgments, judgments), "--questions is read with --layout: the "
             "judgments of another tool"),
        ]
        for argv, message in cases:
            with self.subTest(message):
                code, out, err = run_main(["report"] + list(argv))
                self.assertEqual((code, err), (2, "minijudge: error: " + message + "\n"))
        code, out, err = run_main(["--layout", "arena-hard", judgments])
        self.assertEqual(code, 2)
        self.assertIn("--layout is report's: python -m minijudge report OUT.jsonl ... --layout",
                      err)


if __name__ == "__main__":
    import unittest
    unittest.main()
