"""Issue 44's ranking items, through the real command line against the loopback stub:
systems never compared with each other are ranked apart, a length-controlled figure with
no finite fit is said and not printed, `report` ranks with the run's own options, and the
MT-Bench example names its systems where the ranking reads them.

The runs judge small files whose answers say which side wins (the stub's responder reads
them), or `report` reads scored files a run wrote.
"""
import html
import json
import math
import os
import shlex
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from minijudge import rank_systems  # noqa: E402
from stub import StubTestCase, chat, ranking_block, read_records, run_main  # noqa: E402
from test_modes import answers  # noqa: E402


def prefer_marked(request):
    """Pairwise: the answer starting with "win" wins ("WIN": strongly, [[A>>B]]), else a tie."""
    a, b = answers(request)
    if a is None:
        return None
    for side, mine, theirs in (("A", a, b), ("B", b, a)):
        if mine.lower().startswith("win") and not theirs.lower().startswith("win"):
            strong = ">>" + "AB".replace(side, "") if mine.startswith("WIN") else ""
            return chat("[[{}{}]]".format(side, strong))
    return chat("[[C]]")


def pair(k, a, b, winner, length_a=3, length_b=3, strong=False):
    """A pairwise record naming its systems a and b; the winner's answer starts "win"
    ("WIN" if ``strong``), each answer as long as asked."""
    texts = {a: "los", b: "los"}
    if winner:
        texts[winner] = "WIN" if strong else "win"
    return {"question": "q%d" % k, "model_a": a, "model_b": b,
            "response_a": texts[a].ljust(length_a, "."),
            "response_b": texts[b].ljust(length_b, ".")}


class RankingTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = prefer_marked

    def run_cli(self, records, *more, name="s.json"):
        data = self.write_jsonl("in.jsonl", records)
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--mode", "pairwise", data, "-o", self.path("out.jsonl"),
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

    def page(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()


class MTBenchExampleTest(RankingTest):
    """examples/mtbench_pairs.jsonl held the answers in model_a and model_b, the fields the
    ranking reads as the systems' names: its two systems were never ranked."""

    def test_the_docs_command_ranks_the_two_systems_named(self):
        with open(os.path.join(REPO, "docs", "conversations.md"), encoding="utf-8") as f:
            command = [line for line in f if line.startswith("$ python -m minijudge")
                       and "mtbench_pairs.jsonl" in line]
        self.assertEqual(len(command), 1, command)
        argv = shlex.split(command[0])[4:]  # after python -m minijudge
        argv[argv.index("--judge-url") + 1] = self.srv.url
        argv[argv.index("-o") + 1] = self.path("out.jsonl")
        argv[-1] = os.path.join(REPO, "examples", argv[-1])
        self.srv.content = "[[A]]"
        code, _, err = run_main(argv + ["--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        summary = self.summary("s.json")
        self.assertEqual(summary["statuses"], {"ok": 2})
        self.assertEqual(sorted(summary["bradley_terry"]["systems"]),
                         ["demo-model-a", "demo-model-b"])
        with open(os.path.join(REPO, "examples", "mtbench_pairs.jsonl"), encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                self.assertEqual((type(record["response_a"]), type(record["response_b"])),
                                 (list, list))


class ComponentsTest(RankingTest):
    """A and B compared only with each other, C and D only with each other: C was printed
    at 1000 beside baseline A, with a confident interval and a win rate of 0.5 against A,
    a system it never met."""

    def records(self):
        return [pair(0, "A", "B", "A"), pair(1, "B", "A", "A"), pair(2, "A", "B", "B"),
                pair(3, "C", "D", "C"), pair(4, "D", "C", "D"), pair(5, "C", "D", "D")]

    def test_each_group_is_ranked_apart_against_its_own_baseline(self):
        err, summary = self.run_cli(self.records(), "--html", self.path("p.html"))
        ranking = summary["bradley_terry"]
        self.assertEqual(ranking["components"], [
            {"baseline": "A", "comparisons": 3, "ties_added": False, "length_coefficient": 0.0,
             "systems": ["A", "B"]},
            {"baseline": "C", "comparisons": 3, "ties_added": False, "length_coefficient": 0.0,
             "systems": ["D", "C"]}])
        self.assertEqual((ranking["baseline"], ranking["comparisons"], ranking["ties_added"],
                          ranking["length_coefficient"]), (None, 6, False, None))
        # A beats B 2 of 3: B is 1000 - 400 log10 2 = 879.59, its win rate against A 1/3;
        # D beats C 2 of 3: D is 1120.41 against C
        got = {k: (v["component"], v["score"], v["win_rate"], v["comparisons"])
               for k, v in ranking["systems"].items()}
        self.assertEqual(got, {"A": (1, 1000.0, 0.5, 3), "B": (1, 879.59, 0.3333, 3),
                               "D": (2, 1120.41, 0.6667, 3), "C": (2, 1000.0, 0.5, 3)})
        self.assertEqual(list(ranking["systems"]), ["A", "B", "D", "C"])
        self.assertEqual(ranking["systems"]["C"]["ci"], [1000.0, 1000.0])
        block = ranking_block(err)
        self.assertEqual(block[0], "  ranked over 6 comparisons ({}):".format(ranking["method"]))
        self.assertEqual(block[1], "    2 groups of systems never compared with each other: "
                                   "A, B; C, D (a score compares with its group's alone)")
        self.assertEqual(block[2], "    group 1, baseline A at 1000:")
        self.assertTrue(block[3].startswith("      A 1000.0 (CI [1000.0, 1000.0]), win rate "
                                            "against the baseline 0.5 "), block)
        self.assertTrue(block[4].startswith("      B 879.59 (CI ["), block)
        self.assertEqual(block[5], "    group 2, baseline C at 1000:")
        self.assertTrue(block[6].startswith("      D 1120.41 (CI ["), block)
        self.assertTrue(block[7].startswith("      C 1000.0 (CI [1000.0, 1000.0]), "), block)
        self.assertEqual(len(block), 8)
        self.assertNotIn("tie was added", err)
        page = self.page("p.html")
        for line in block:
            self.assertIn(html.escape(line.strip()), page)
        rerr, again = self.report(self.path("out.jsonl"))
        self.assertEqual(again["bradley_terry"], ranking)
        self.assertEqual(ranking_block(rerr), block)

    def test_the_baseline_flag_anchors_its_own_group(self):
        for baseline, anchors in (("B", ["B", "C"]), ("D", ["A", "D"])):
            with self.subTest(baseline=baseline):
                err, summary = self.run_cli(self.records(), "--baseline", baseline)
                components = summary["bradley_terry"]["components"]
                self.assertEqual([c["baseline"] for c in components], anchors)
                for name in anchors:
                    self.assertEqual(summary["bradley_terry"]["systems"][name]["score"], 1000.0)
        err, summary = self.run_cli(self.records(), "--baseline", "Z")
        self.assertEqual(summary["bradley_terry"],
                         {"error": "--baseline 'Z' is none of the 4 systems compared"})

    def test_one_group_is_printed_as_before(self):
        records = self.records()[:3] + [pair(6, "B", "C", "C"), pair(7, "C", "B", "B")]
        err, summary = self.run_cli(records)
        ranking = summary["bradley_terry"]
        # B and C are level (879.59: each won one of their two): in name order (MM's stop
        # had C 2e-6 points above B, and this list read A, C, B)
        self.assertEqual([c["systems"] for c in ranking["components"]], [["A", "B", "C"]])
        self.assertEqual(ranking["baseline"], "A")
        self.assertEqual({v["component"] for v in ranking["systems"].values()}, {1})
        block = ranking_block(err)
        self.assertTrue(block[0].startswith("  ranked over 5 comparisons, baseline A at 1000 ("))
        self.assertTrue(block[1].startswith("    A 1000.0 (CI [1000.0, 1000.0]), "), block)
        self.assertEqual(len(block), 4)


# three evenly matched systems (each pair one win each way), answers of 500 or 700
# characters: the longer and the systems together split every win from every loss
EVEN = [("A", "B", "A", 500, 500), ("A", "B", "B", 500, 700), ("B", "C", "B", 500, 500),
        ("B", "C", "C", 500, 700), ("A", "C", "A", 500, 700), ("A", "C", "C", 500, 700)]


class LengthControlledFitTest(RankingTest):
    """Length-controlled figures with no finite fit were printed as results: scores far
    from the plain ones of evenly matched systems, a win rate of 0.5 beside a raw 0.8."""

    def test_no_finite_fit_gives_no_length_controlled_score(self):
        records = [pair(k, a, b, w, la, lb) for k, (a, b, w, la, lb) in enumerate(EVEN)]
        err, summary = self.run_cli(records, "--html", self.path("p.html"))
        ranking = summary["bradley_terry"]
        reason = ("no finite fit: the wins and the losses are split by the systems and the "
                  "length (separation), so the estimates grow without end")
        self.assertEqual({k: (v["score"], v["lc_score"]) for k, v in ranking["systems"].items()},
                         {"A": (1000.0, None), "B": (1000.0, None), "C": (1000.0, None)})
        self.assertEqual((ranking["components"][0]["lc_unfitted"],
                          ranking["components"][0]["length_coefficient"],
                          ranking["length_coefficient"]), (reason, None, None))
        block = ranking_block(err)
        self.assertIn(", length-controlled none, 4 comparisons", block[1])
        self.assertEqual(block[-1], "    no length-controlled scores: " + reason)
        self.assertIn(html.escape(block[-1].strip()), self.page("p.html"))

    def test_a_constant_length_gap_gives_no_length_controlled_figure(self):
        records = [pair(k, "A", "B", "B" if k == 4 else "A", 700, 500) for k in range(5)]
        err, summary = self.run_cli(records)
        length = summary["length_bias"]
        reason = ("the length gap is the same in every pair: the win rate at no gap cannot "
                  "be told from the length's effect")
        self.assertEqual((length["win_rate"], length["lc_win_rate"], length["lc_unfitted"]),
                         (0.8, None, reason))
        self.assertIn("; length-controlled win rate none ({}), raw 0.8 (n=5)\n".format(reason),
                      err)
        component = summary["bradley_terry"]["components"][0]
        self.assertEqual(component["lc_unfitted"],
                         "the length gaps are those of each system's own length (collinear "
                         "with the systems): the length's effect cannot be told from their "
                         "strengths")
        self.assertEqual(summary["bradley_terry"]["systems"]["B"]["lc_score"], None)
        rerr, again = self.report(self.path("out.jsonl"))
        self.assertEqual((again["length_bias"], again["bradley_terry"]),
                         (length, summary["bradley_terry"]))

    def test_too_few_comparisons_give_no_length_controlled_score(self):
        records = [pair(0, "A", "B", "A", 10, 3), pair(1, "B", "C", "B", 3, 30),
                   pair(2, "C", "A", "C", 3, 3)]
        err, summary = self.run_cli(records)
        self.assertEqual(summary["bradley_terry"]["components"][0]["lc_unfitted"],
                         "too few comparisons: 3 for 3 systems' strengths and the length's "
                         "effect")
        self.assertEqual(summary["length_bias"]["lc_unfitted"],
                         "every verdict was A's (separation): the fit has no finite end")

    def test_a_fit_that_exists_is_still_given(self):
        # x wins 3 of 5 against y; the longer answer won 3 of 5 (test_bradley_terry)
        records = [pair(0, "x", "y", "y", 3, 15), pair(1, "x", "y", "y", 3, 15),
                   pair(2, "x", "y", "x", 3, 14), pair(3, "x", "y", "x", 17, 3),
                   pair(4, "x", "y", "y", 16, 3)]
        err, summary = self.run_cli(records)
        component = summary["bradley_terry"]["components"][0]
        self.assertNotIn("lc_unfitted", component)
        self.assertIsInstance(summary["bradley_terry"]["systems"]["y"]["lc_score"], float)
        self.assertNotIn("lc_unfitted", summary["length_bias"])
        self.assertIsInstance(summary["length_bias"]["lc_win_rate"], float)

    def test_an_answer_not_given_is_left_out_of_the_length_controlled_fit(self):
        # recipes.md: an answer --answers does not hold is no length. The trust block left
        # its comparison out, the ranking's length control fitted it at a gap of 0 (mid-13b
        # 897.28, tiny-7b 451.64): the figures of the comparisons whose lengths are known
        mt = os.path.join(REPO, "examples", "mt_bench")
        given = self.path("answers")
        shutil.copytree(os.path.join(mt, "model_answer"), given)
        with open(os.path.join(given, "tiny-7b.jsonl"), encoding="utf-8") as f:
            lines = f.readlines()
        with open(os.path.join(given, "tiny-7b.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(lines[2:])
        gone = {json.loads(line)["question_id"] for line in lines[:2]}
        judged = os.path.join(mt, "model_judgment", "gpt-4_pair.jsonl")
        with open(judged, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        known = self.write_jsonl("known.jsonl", [
            row for row in rows if row["question_id"] not in gone
            or "tiny-7b" not in (row["model_1"], row["model_2"])])
        flags = ("--layout", "fastchat-pair", "--bootstrap-seed", "7")
        err, summary = self.report(*flags, judged, "--answers", given)
        _, alone = self.report(*flags, known, "--answers", os.path.join(mt, "model_answer"))
        _, without = self.report(*flags, judged)
        ranking, fitted = summary["bradley_terry"], alone["bradley_terry"]
        self.assertEqual((ranking["comparisons"], fitted["comparisons"],
                          summary["length_bias"]["n"]), (22, 14, 14))

        def lc(ranking, key="lc_score"):
            return {name: figures[key] for name, figures in ranking["systems"].items()}
        self.assertEqual(lc(ranking), {"big-70b": 1000.0, "mid-13b": 987.51, "tiny-7b": 754.6})
        self.assertEqual((lc(ranking), ranking["length_coefficient"]),
                         (lc(fitted), fitted["length_coefficient"]))
        self.assertIn("), length-controlled 987.51, 15 comparisons\n", err)
        # the plain fit, its intervals and win rates count all 22, as without --answers,
        # where the length-controlled scores are the plain ones (as before)
        plain = without["bradley_terry"]
        for key in ("score", "ci", "win_rate", "win_rate_ci", "comparisons"):
            self.assertEqual(lc(ranking, key), lc(plain, key), key)
        self.assertEqual((lc(plain), plain["length_coefficient"]), (lc(plain, "score"), 0.0))

    def test_a_systems_response_not_held_is_left_out_of_the_length_controlled_fit(self):
        # a record whose responses no longer hold C (trimmed after the run): C's pairs there
        # were fitted at a gap of 0, as if its answer were as long as the other's
        items = [{"question": "q%d" % k, "responses": {"A": "win" + "." * k, "B": "los",
                                                       "C": "los" + "." * (5 - k)}}
                 for k in range(6)]
        items += [{"question": "r%d" % k, "responses": {"A": "los", "B": "win..", "C": "los."}}
                  for k in range(3)]
        items += [{"question": "s%d" % k, "responses": {"A": "los......", "B": "los",
                                                        "C": "win"}} for k in range(3)]
        _, run = self.run_cli(items, "--mode", "systems", "--bootstrap-seed", "3")
        records = read_records(self.path("out.jsonl"))
        known = []
        for record in records:
            if record["question"].startswith("s"):
                del record["responses"]["C"]
            responses = record["responses"]
            known += [(p["a"], p["b"], p["verdict"], len(responses[p["a"]])
                       - len(responses[p["b"]])) for p in record["judge_pairs"]
                      if p["a"] in responses and p["b"] in responses]
        self.write_jsonl("trimmed.jsonl", records)
        err, summary = self.report(self.path("trimmed.jsonl"))
        ranking, alone = summary["bradley_terry"], rank_systems(known, seed=3)
        self.assertEqual((ranking["comparisons"], len(known)), (36, 30))

        def figures(ranking, key):
            return {name: figures[key] for name, figures in ranking["systems"].items()}
        self.assertEqual((figures(ranking, "lc_score"), ranking["length_coefficient"]),
                         (figures(alone, "lc_score"), alone["length_coefficient"]))
        self.assertNotEqual(figures(ranking, "lc_score"), figures(run["bradley_terry"],
                                                                  "lc_score"))
        for key in ("score", "ci", "win_rate", "comparisons"):
            self.assertEqual(figures(ranking, key), figures(run["bradley_terry"], key), key)


class ReportOptionsTest(RankingTest):
    """report of a run's own output ranked with report's defaults (weight 1, baseline the
    first name, the default interval), not the run's: the stamp kept neither."""

    def records(self):
        # A beats B twice, strongly once; B beats C twice, strongly; C beats A once
        return [pair(0, "A", "B", "A", strong=True), pair(1, "B", "A", "A"),
                pair(2, "A", "B", "B"), pair(3, "B", "C", "B", strong=True),
                pair(4, "C", "B", "B"), pair(5, "C", "A", "C"), pair(6, "A", "C", "A")]

    def test_report_of_a_runs_output_gives_the_runs_figures(self):
        flags = ["--strong-weight", "3", "--baseline", "C", "--confidence", "0.9",
                 "--bootstrap-samples", "200", "--bootstrap-seed", "7"]
        err, summary = self.run_cli(self.records(), *flags)
        self.assertEqual(summary["bradley_terry"]["components"][0]["baseline"], "C")
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            stamp = json.loads(f.readline())["judge_run"]
        self.assertEqual(stamp["figures"], {"strong_weight": 3, "baseline": "C",
                                            "confidence": 0.9, "bootstrap_samples": 200,
                                            "bootstrap_seed": 7})
        rerr, again = self.report(self.path("out.jsonl"))
        for key in ("bradley_terry", "ci", "ci95", "ci_method", "interval", "length_bias",
                    "mean_score_judged"):
            self.assertEqual(again[key], summary[key], key)
        self.assertIsNone(again["overridden"])
        self.assertEqual(ranking_block(rerr), ranking_block(err))
        self.assertNotIn("given to report", rerr)
        # a run with the defaults: its stamp as before, no figures
        self.run_cli(self.records(), name="d.json")
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            self.assertNotIn("figures", json.loads(f.readline())["judge_run"])

    def test_a_flag_given_to_report_overrides_the_runs_and_says_so(self):
        self.run_cli(self.records(), "--strong-weight", "3", "--baseline", "C")
        _, plain = self.run_cli(self.records(), name="plain.json")  # weight 1, baseline A
        self.run_cli(self.records(), "--strong-weight", "3", "--baseline", "C")
        rerr, again = self.report(self.path("out.jsonl"), "--strong-weight", "1", "--baseline",
                                  "A", "--confidence", "0.95")
        self.assertEqual(again["bradley_terry"], plain["bradley_terry"])
        self.assertEqual(again["overridden"], {"--strong-weight": {"run": 3, "given": 1},
                                               "--baseline": {"run": "C", "given": "A"}})
        self.assertIn("\n  given to report, not the run's: --strong-weight 1 (the run's 3), "
                      "--baseline A (the run's C)\n", rerr)

    def test_a_pass_threshold_given_to_report_is_the_records_again(self):
        self.srv.responder = None
        self.srv.push(*["Rating: %d" % r for r in (5, 4, 3, 2)])
        records = [{"question": "q%d" % k, "response": "r"} for k in range(4)]
        data = self.write_jsonl("rated.jsonl", records)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data, "-o",
                                 self.path("rated.out"), "--pass-threshold", "0.5",
                                 "--concurrency", "1", "--no-preflight"])
        self.assertEqual(code, 0, err)
        rerr, again = self.report(self.path("rated.out"))
        self.assertEqual((again["pass_rate"], again["parameters"]["pass_threshold"]), (0.75, 0.5))
        rerr, again = self.report(self.path("rated.out"), "--pass-threshold", "0.8")
        self.assertEqual((again["pass_rate"], again["parameters"]["pass_threshold"]), (0.25, 0.8))
        self.assertEqual(again["overridden"], {"--pass-threshold": {"run": 0.5, "given": 0.8}})
        self.assertIn("  pass rate 0.25 at --pass-threshold 0.8\n", rerr)
        self.assertIn("\n  given to report, not the run's: --pass-threshold 0.8 (the run's "
                      "0.5)\n", rerr)

    def test_report_reads_the_lengths_from_the_runs_response_fields(self):
        records = [dict(question="q%d" % k, first=r["response_a"], second=r["response_b"],
                        model_a=r["model_a"], model_b=r["model_b"])
                   for k, r in enumerate(pair(k, a, b, w, la, lb)
                                         for k, (a, b, w, la, lb) in enumerate(
                                             [("x", "y", "y", 3, 15), ("x", "y", "y", 3, 15),
                                              ("x", "y", "x", 3, 14), ("x", "y", "x", 17, 3),
                                              ("x", "y", "y", 16, 3)]))]
        err, summary = self.run_cli(records, "--response-a-field", "first",
                                    "--response-b-field", "second")
        self.assertIsInstance(summary["bradley_terry"]["systems"]["y"]["lc_score"], float)
        rerr, again = self.report(self.path("out.jsonl"))
        self.assertEqual((again["bradley_terry"], again["length_bias"]),
                         (summary["bradley_terry"], summary["length_bias"]))

    def test_records_written_before_the_model_was_known_report_cleanly(self):
        # no --judge-model and no preflight: the first record's empty answer sent nothing
        # and was written before the server's default model was asked for
        self.srv.responder = None
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("first.jsonl", [{"question": "q%d" % k, "response": r}
                                                for k, r in enumerate(["", "a", "b"])])
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", data, "-o",
                                 self.path("first.out"), "--concurrency", "1"])
        self.assertEqual(code, 0, err)
        with open(self.path("first.out"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        self.assertEqual([r["judge_run"]["model"] for r in records[1:]], ["judge-model"] * 2)
        # the first is stamped None when it is written before the second's request asks the
        # server for its model, as it mostly is: so here whichever came first
        records[0]["judge_run"]["model"] = "None"
        self.write_jsonl("first.out", records)
        rerr, again = self.report(self.path("first.out"))
        self.assertEqual((again["records"], again["statuses"], again["judge_model"],
                          again["mixed"]), (3, {"empty_response": 1, "ok": 2}, "judge-model",
                                            None))


def chain(names, winner_first, strong=False):
    """Records comparing each system with the next: the first of each two wins (strongly
    if ``strong``), then the second, if ``winner_first`` is 2 the first twice."""
    records = []
    for i, (a, b) in enumerate(zip(names, names[1:])):
        winners = {1: (a, b), 2: (a, a)}[winner_first]
        records.append(pair(2 * i, a, b, winners[0], strong=strong))
        records.append(pair(2 * i + 1, b, a, winners[1]))
    return records


class RankingHostileTest(RankingTest):
    """A hostile pass over the ranking: figures that were wrong, or sure of what the
    comparisons cannot tell, and inputs that crashed it."""

    def test_a_chain_of_systems_is_ranked_at_its_maximum_not_where_the_updates_stopped(self):
        # 20 systems in a row, each beating the next strongly once (x9) and losing to it
        # once: each is 9 times the next's strength, 400 log10 9 = 381.7 points above it.
        # The minorise-maximise updates crawl along a chain: after their 1,000 steps the
        # last was printed 257 points short of its maximum
        names = ["s%02d" % k for k in range(20)]
        err, summary = self.run_cli(chain(names, 1, strong=True), "--strong-weight", "9",
                                    "--bootstrap-samples", "100")
        systems = summary["bradley_terry"]["systems"]
        for k, name in enumerate(names):
            self.assertAlmostEqual(systems[name]["score"], 1000 - k * 400 * math.log10(9),
                                   delta=0.011, msg=name)
            self.assertEqual(systems[name]["lc_score"], systems[name]["score"], name)
        self.assertIn("    s19 -6252.24 (CI ", err)
        rerr, again = self.report(self.path("out.jsonl"))
        self.assertEqual(again["bradley_terry"], summary["bradley_terry"])

    def test_a_strong_weight_past_what_a_number_holds_is_refused_not_a_crash(self):
        # 10**400 overflowed a float when the summary was computed, after every record
        # was judged: a traceback, and no summary (a run's and report's, from a stamp too)
        huge = "1" + "0" * 400
        data = self.write_jsonl("in.jsonl", [pair(0, "A", "B", "A", strong=True)])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "--mode",
                                 "pairwise", data, "-o", self.path("out.jsonl"),
                                 "--strong-weight", huge])
        self.assertEqual(code, 2, err)
        self.assertIn("minijudge: error: argument --strong-weight: must be a whole number "
                      "from 1 to 1000; got '1000", err)
        self.assertEqual(self.srv.chat_count, 0)
        self.run_cli([pair(0, "A", "B", "A", strong=True), pair(1, "A", "B", "B")],
                     "--strong-weight", "1000")
        code, _, err = run_main(["report", self.path("out.jsonl"), "--strong-weight", huge])
        self.assertEqual(code, 2, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        self.assertEqual(records[0]["judge_run"]["figures"]["strong_weight"], 1000)
        for record in records:
            record["judge_run"]["figures"]["strong_weight"] = 10 ** 400
        self.write_jsonl("edited.jsonl", records)
        code, _, err = run_main(["report", self.path("edited.jsonl")])
        self.assertEqual(code, 2, err)
        self.assertIn("edited.jsonl line 1: judge_run: figures must be an object of "
                      "--strong-weight", err)

    def test_a_hand_edited_strong_flag_is_refused(self):
        # a run writes judge_strong true, or null (a panel's judges said different things),
        # or not at all: "yes" was read as a weak verdict, without a word
        self.run_cli([pair(0, "A", "B", "A", strong=True), pair(1, "A", "B", "B")],
                     "--strong-weight", "3")
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        self.assertEqual([r.get("judge_strong") for r in records], [True, None])
        for value in ("yes", 1, False):
            with self.subTest(value=value):
                edited = [dict(records[0], judge_strong=value), records[1]]
                self.write_jsonl("edited.jsonl", edited)
                code, _, err = run_main(["report", self.path("edited.jsonl")])
                self.assertEqual(code, 2, err)
                self.assertIn("edited.jsonl line 1: judge_strong must be true (a strong "
                              "verdict) or null; got {!r}".format(value), err)

    def test_a_system_seldom_joined_to_the_baseline_in_a_resample_has_no_interval(self):
        # 12 systems in a row, each pair one win each way (2 comparisons): a resample
        # draws neither of a pair's 13.5% of the time, and s11 is joined to the baseline
        # s00 only when all 11 pairs are drawn (a fifth of the resamples). Its score in
        # the others was where the fit started (a system no comparison ties to the
        # baseline): its interval was narrower than its neighbours', nearer the baseline
        names = ["s%02d" % k for k in range(12)]
        err, summary = self.run_cli(chain(names, 1), "--bootstrap-samples", "200")
        systems = summary["bradley_terry"]["systems"]
        self.assertEqual({v["score"] for v in systems.values()}, {1000.0})
        width = {k: v["ci"] and v["ci"][1] - v["ci"][0] for k, v in systems.items()}
        self.assertGreater(width["s03"], width["s01"])
        for name in ("s08", "s09", "s10", "s11"):
            self.assertEqual((systems[name]["ci"], systems[name]["win_rate_ci"]), (None, None),
                             name)
        line = next(line for line in ranking_block(err) if line.startswith("    s11 "))
        self.assertEqual(line, "    s11 1000.0 (CI none), win rate against the baseline 0.5 "
                               "(CI none), length-controlled 1000.0, 2 comparisons")
        rerr, again = self.report(self.path("out.jsonl"))
        self.assertEqual(again["bradley_terry"], summary["bradley_terry"])

    def test_report_mixed_over_runs_ranked_with_other_options_is_told_which_to_take(self):
        # a run with --strong-weight 3 and one without: report --mixed ranked with the
        # first file's weight, so the files' order changed the scores
        first = [pair(0, "A", "B", "A", strong=True), pair(1, "B", "C", "B", strong=True),
                 pair(2, "C", "A", "C")]
        second = [pair(3, "A", "B", "B", strong=True), pair(4, "A", "C", "A"),
                  pair(5, "B", "C", "C", strong=True)]
        self.run_cli(first, "--strong-weight", "3")
        os.rename(self.path("out.jsonl"), self.path("three.jsonl"))
        self.run_cli(second)
        for files in (("three.jsonl", "out.jsonl"), ("out.jsonl", "three.jsonl")):
            with self.subTest(files=files):
                code, _, err = run_main(["report", "--mixed"] + [self.path(f) for f in files])
                self.assertEqual(code, 2, err)
                self.assertIn("are records of runs whose figures differ: --strong-weight ", err)
                self.assertIn("; give --strong-weight to report to choose", err)
        rankings = []
        for files in (("three.jsonl", "out.jsonl"), ("out.jsonl", "three.jsonl")):
            rerr, again = self.report("--mixed", "--strong-weight", "2",
                                      *[self.path(f) for f in files])
            rankings.append(again["bradley_terry"])
            self.assertEqual(again["bradley_terry"]["strong_weight"], 2)
        self.assertEqual(rankings[0], rankings[1])

    def test_report_mixed_reads_each_records_lengths_from_its_own_runs_fields(self):
        # one run read response_a/response_b, another first/second: report --mixed read
        # every record's lengths from the first file's run's fields (the other's as empty)
        records = [pair(k, a, b, w, la, lb) for k, (a, b, w, la, lb) in enumerate(
            [("x", "y", "y", 3, 15), ("x", "y", "y", 3, 15), ("x", "y", "x", 3, 14),
             ("x", "y", "x", 17, 3), ("x", "y", "y", 16, 3)])]
        _, plain = self.run_cli(records, name="plain.json")
        os.rename(self.path("out.jsonl"), self.path("plain.jsonl"))
        renamed = [dict(question="r" + r["question"], first=r["response_a"],
                        second=r["response_b"], model_a=r["model_a"], model_b=r["model_b"])
                   for r in records]
        _, named = self.run_cli(renamed, "--response-a-field", "first", "--response-b-field",
                                "second", name="named.json")
        lengths = []
        for files in (("plain.jsonl", "out.jsonl"), ("out.jsonl", "plain.jsonl")):
            rerr, again = self.report("--mixed", *[self.path(f) for f in files])
            lengths.append((again["length_bias"], again["bradley_terry"]))
        self.assertEqual(lengths[0], lengths[1])
        self.assertEqual(lengths[0][0]["decisive"], plain["length_bias"]["decisive"]
                         + named["length_bias"]["decisive"])
        self.assertEqual(lengths[0][0]["decisive"], 10)

    def test_an_interval_that_does_not_hold_its_own_score_is_not_given(self):
        # 22 systems in a cycle, each beating the next once: all level at 1000. A resample
        # keeps the whole cycle in one draw in 25,000; in the others s01 is joined to s00 by
        # its loss alone (a tie added to each pair), so every draw put it below: CI [618.3,
        # 809.15] beside its score of 1000, as sure as a verdict it never had (s21 above)
        names = ["s%02d" % k for k in range(22)]
        records = [pair(k, a, b, a) for k, (a, b) in enumerate(zip(names, names[1:] + names[:1]))]
        err, summary = self.run_cli(records, "--bootstrap-samples", "200")
        systems = summary["bradley_terry"]["systems"]
        self.assertEqual({v["score"] for v in systems.values()}, {1000.0})
        self.assertEqual({name: v["ci"] for name, v in systems.items() if v["ci"]},
                         {"s00": [1000.0, 1000.0]})
        self.assertIn("    s01 1000.0 (CI none), win rate against the baseline 0.5 (CI none), ",
                      err)
