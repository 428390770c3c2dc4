"""Issue 28, item 3: a combined judgement (a panel's, or one judge's repeats) says one thing in
every field. When the members disagree, the verdict, option, value and pass describe the
combined score (a split is a tie, and has no single option), a field only some members share
is null, and each member's own values are under ``judge_members``. Through the real command
line, a stub server a judge, each answering as scripted by what its request holds."""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from stub import StubTestCase, chat, error, run_main

import minijudge

CRITERION = {"name": "quality", "description": "how good",
             "options": {"Excellent": 1.0, "Fair": 0.5, "Poor": 0.0}}


def prefers(answer):
    """A pairwise judge that always prefers ``answer`` (so it is consistent in both orders)."""
    other = {"ans-one": "ans-two", "ans-two": "ans-one"}[answer]

    def respond(request):
        prompt = request.prompt or ""
        return chat("[[A]]" if prompt.find(answer) < prompt.find(other) else "[[B]]")
    return respond


def by_seed(*answers):
    """One judge asked with --repeats: the answer for the request's seed (0, 1, ...)."""
    return lambda request: chat(answers[request.json.get("seed", 0) % len(answers)])


def failing(request):
    return error(500, "scripted failure")


class Combined(StubTestCase):
    def setUp(self):
        super().setUp()
        self.criteria = self.write("criteria.json", json.dumps(CRITERION))
        self.source = self.write_jsonl("in.jsonl", [{
            "question": "q", "answer": "x", "response": "resp", "response_a": "ans-one",
            "response_b": "ans-two", "responses": {"one": "ans-one", "two": "ans-two"}}])

    def run_cli(self, flags, code=0):
        summary = self.path("s.json")
        got, out, err = run_main(["--judge-model", "m", "--no-preflight", "--summary", summary,
                                  *flags, self.source])
        self.assertEqual(got, code, err)
        if "-o" in flags:
            with open(flags[flags.index("-o") + 1], encoding="utf-8") as f:
                out = f.read()
        with open(summary, encoding="utf-8") as f:
            return json.loads(out.splitlines()[0]), json.load(f)

    def panel(self, mode, responders, *flags, code=0, **options):
        judges = []
        for n, respond in enumerate(responders):
            srv = self.srv if n == 0 else self.start_stub()
            srv.responder = respond
            judges.append({"name": "j%d" % n, "url": srv.url, "mode": mode,
                           "options": dict(options, max_retries=0)})
            if mode == "criterion":
                judges[-1]["criteria"] = self.criteria
        config = self.write("judges.json", json.dumps(judges))
        return self.run_cli(["--judges", config, *flags], code)

    def repeats(self, mode, respond, k, *flags):
        self.srv.responder = respond
        criteria = ["--criteria", self.criteria] if mode == "criterion" else []
        return self.run_cli(["--judge-url", self.srv.url, "--mode", mode, "--max-retries", "0",
                             "--repeats", str(k), *criteria, *flags])

    def fields(self, record, *names):
        return {name: record["judge_" + name] for name in names}


class PanelsTest(Combined):
    def test_a_pairwise_panel_split_one_to_one_is_a_tie(self):
        for how in ("majority", "mean", "median"):
            with self.subTest(jury=how):
                record, summary = self.panel("pairwise", [prefers("ans-one"), prefers("ans-two")],
                                             "--jury", how)
                self.assertEqual(self.fields(
                    record, "score", "status", "value", "verdict", "consistent", "verdicts",
                    "raw", "raw_swapped", "error"), {
                    "score": 0.5, "status": "ok", "value": "tie", "verdict": "tie",
                    "consistent": True, "verdicts": None, "raw": None, "raw_swapped": None,
                    "error": None})  # each judge agreed with itself in both orders
                self.assertEqual(record["judge_panel"], {"j0": 1.0, "j1": 0.0})
                self.assertEqual(record["judge_members"]["j0"], {
                    "status": "ok", "score": 1.0, "value": "A", "error": None, "raw": "[[A]]",
                    "verdict": "A", "raw_swapped": "[[B]]", "verdicts": ["A", "A"],
                    "consistent": True})
                self.assertEqual(record["judge_members"]["j1"]["verdicts"], ["B", "B"])
                # each judge's two orders count: two pairs, both consistent
                self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                                 (1.0, 2))

    def test_a_pairwise_panel_whose_judges_differ_in_consistency_says_neither(self):
        always_a = lambda request: chat("[[A]]")  # inconsistent: a tie of its own
        record, summary = self.panel("pairwise", [prefers("ans-one"), always_a, prefers(
            "ans-one")], "--jury", "mean")
        self.assertEqual(self.fields(record, "score", "value", "verdict", "consistent"), {
            "score": 2.5 / 3, "value": None, "verdict": None, "consistent": None})
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                         (0.6667, 3))

    def test_a_quorum_with_a_failed_judge_keeps_what_the_others_said(self):
        record, summary = self.panel("pairwise", [prefers("ans-one"), prefers("ans-two"),
                                                  failing], "--jury", "majority", "--quorum", "2")
        self.assertEqual(self.fields(record, "score", "status", "value", "verdict"), {
            "score": 0.5, "status": "ok", "value": "tie", "verdict": "tie"})
        self.assertTrue(record["judge_error"].startswith("judge j2: http_error: "))
        self.assertEqual(record["judge_panel"], {"j0": 1.0, "j1": 0.0, "j2": None})
        failed = record["judge_members"]["j2"]
        self.assertEqual((failed["status"], failed["score"], failed["value"]),
                         ("http_error", 0.0, None))
        self.assertIn("scripted failure", failed["error"])
        self.assertEqual((summary["statuses"], summary["position_pairs"]), ({"ok": 1}, 2))

    def test_a_criterion_panel_split_has_no_option(self):
        record, summary = self.panel("criterion", [lambda r: chat("Excellent"),
                                                   lambda r: chat("Poor")], "--jury", "majority")
        self.assertEqual(self.fields(record, "score", "value", "option", "raw"), {
            "score": 0.5, "value": None, "option": None, "raw": None})  # not Fair: no one said it
        self.assertEqual({name: member["option"] for name, member in record[
            "judge_members"].items()}, {"j0": "Excellent", "j1": "Poor"})

    def test_a_criterion_panel_that_agrees_keeps_the_option_and_what_it_shares(self):
        record, _ = self.panel("criterion", [lambda r: chat("Fair"), lambda r: chat("Fair")],
                               "--jury", "mean")
        self.assertEqual(self.fields(record, "score", "value", "option", "raw", "model"), {
            "score": 0.5, "value": "Fair", "option": "Fair", "raw": "Fair", "model": "m"})

    def test_check_position_in_a_panel_counts_each_judge(self):
        def reversed_choice(request):  # the option listed first wins: biased
            prompt = request.prompt or ""
            return chat("Excellent" if prompt.find("- Excellent") < prompt.find("- Poor")
                        else "Poor")
        record, summary = self.panel("criterion", [lambda r: chat("Excellent"), reversed_choice],
                                     "--jury", "mean", "--check-position")
        self.assertEqual(self.fields(record, "score", "option", "positional_bias",
                                     "option_reversed"), {
            "score": 1.0, "option": "Excellent", "positional_bias": None,
            "option_reversed": None})
        self.assertEqual([(m["positional_bias"], m["option_reversed"]) for m in record[
            "judge_members"].values()], [(False, "Excellent"), (True, "Poor")])
        self.assertEqual((summary["positional_bias_rate"], summary["positional_bias_n"]),
                         (0.5, 2))

    def test_a_binary_panel_split_has_no_verdict(self):
        record, summary = self.panel("binary", [lambda r: chat("yes"), lambda r: chat("no")],
                                     "--jury", "majority")
        self.assertEqual(self.fields(record, "score", "value", "raw"), {
            "score": 0.5, "value": None, "raw": None})

    def test_pass_is_the_panels_score_against_the_threshold(self):
        record, summary = self.panel("rating", [lambda r: chat("Rating: 5"),
                                                lambda r: chat("Rating: 2")], "--jury", "mean",
                                     "--pass-threshold", "0.7")
        self.assertEqual(self.fields(record, "score", "value", "pass"), {
            "score": 0.625, "value": 3.5, "pass": False})
        self.assertEqual([m["pass"] for m in record["judge_members"].values()], [True, False])
        self.assertEqual((summary["pass_rate"], summary["ratings"]), (0.0, {"3.5": 1}))

    def test_a_failed_panel_is_its_failure_in_every_field(self):
        record, summary = self.panel("pairwise", [prefers("ans-one"), failing], "--jury",
                                     "majority", code=1)
        self.assertEqual(self.fields(record, "status", "score", "value"), {
            "status": "http_error", "score": 0.0, "value": None})
        self.assertNotIn("judge_verdict", record)  # as a single judge's failure
        self.assertEqual(record["judge_members"]["j0"]["verdict"], "A")
        self.assertEqual((summary["statuses"], summary["position_pairs"]), ({"http_error": 1}, 1))


    def test_a_failed_panel_fails_the_threshold_as_one_judge_does(self):
        record, summary = self.panel("rating", [lambda r: chat("Rating: 5"), failing],
                                     "--jury", "mean", "--pass-threshold", "0.5", code=1)
        self.assertEqual(self.fields(record, "status", "score", "pass"), {
            "status": "http_error", "score": 0.0, "pass": False})
        self.assertEqual(summary["pass_rate"], 0.0)  # as a single judge's failure counts

    def test_an_empty_response_says_why_for_the_panel(self):
        self.source = self.write_jsonl("empty.jsonl", [{"question": "q", "response": " "}])
        record, summary = self.panel("rating", [failing, failing], "--jury", "mean")
        self.assertEqual(self.fields(record, "status", "score", "error"), {
            "status": "empty_response", "score": 0.0,
            "error": "the response is empty: scored 0.0 without calling the judge"})
        self.assertEqual(summary["statuses"], {"empty_response": 1})

    def test_each_judges_repeats_count_in_the_summary(self):
        record, summary = self.panel("binary", [by_seed("yes", "no"), by_seed("yes")],
                                     "--jury", "majority", "--repeats", "2")
        self.assertEqual(self.fields(record, "score", "value", "panel"), {
            "score": 0.5, "value": None, "panel": {"j0": 0.5, "j1": 1.0}})
        self.assertEqual([m["repeats"] for m in record["judge_members"].values()],
                         [[1.0, 0.0], [1.0, 1.0]])
        self.assertEqual(summary["repeats"], {"k": 2, "all_alike": 0.5, "n": 2,
                                              "mean_sd": 0.25})

    def test_report_counts_a_panel_as_the_run_did(self):
        always_a = lambda request: chat("[[A]]")
        self.source = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % n, "response_a": "ans-one", "response_b": "ans-two"}
            for n in range(3)])
        judges = [prefers("ans-one"), always_a, prefers("ans-two")]
        _, summary = self.panel("pairwise", judges, "--jury", "median", "--pass-threshold",
                                "0.6", "-o", self.path("out.jsonl"))
        code, out, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                   self.path("r.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("r.json"), encoding="utf-8") as f:
            report = json.load(f)
        for name in ("statuses", "mean_score", "position_consistency", "position_pairs",
                     "pass_rate", "panel"):
            self.assertEqual(report[name], summary[name], name)
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]),
                         (0.6667, 9))

    def test_judges_that_would_combine_unlike_numbers_are_refused(self):
        # a 1-5 judge's 5 and a 1-10 judge's 10 were judge_value 7.5 beside judge_score 1.0
        for options, message in (
                ({"scale": [1, 10]}, "--jury needs one scale for every judge; got j0 (1, 5), "
                 "j1 (1, 10)"),
                ({"pass_threshold": 0.9}, "--jury needs one pass_threshold for every judge; "
                 "got j0 0.5, j1 0.9"),
                # on_failure is refused in any judges file (options28): failures are 0.0
                ({"on_failure": None}, "judge j1: on_failure is for Python: on the command "
                 "line a failure scores 0.0 (the summary's \"failures as 0.0\") and "
                 "judge_status says why")):
            with self.subTest(options=options):
                config = self.write("judges.json", json.dumps([
                    {"name": "j0", "url": self.srv.url, "options": {"pass_threshold": 0.5}},
                    {"name": "j1", "url": self.srv.url, "options": dict(
                        {"pass_threshold": 0.5}, **options)}]))
                code, out, err = run_main(["--judge-model", "m", "--no-preflight", "--judges",
                                           config, "--jury", "mean", self.source])
                self.assertEqual((code, out, err), (2, "", "minijudge: error: " + message + "\n"))
        self.assertEqual(self.srv.chat_count, 0)


class RepeatsTest(Combined):
    def test_criterion_repeats_split_have_no_option(self):
        record, summary = self.repeats("criterion", by_seed("Excellent", "Poor"), 2)
        self.assertEqual(self.fields(record, "score", "value", "option", "raw", "repeats"), {
            "score": 0.5, "value": None, "option": None, "raw": None, "repeats": [1.0, 0.0]})
        self.assertEqual([m["option"] for m in record["judge_members"]], ["Excellent", "Poor"])

    def test_binary_repeats_split_have_no_verdict(self):
        record, _ = self.repeats("binary", by_seed("yes", "no"), 2)
        self.assertEqual(self.fields(record, "score", "value", "raw"), {
            "score": 0.5, "value": None, "raw": None})
        self.assertEqual([m["value"] for m in record["judge_members"]], [True, False])

    def test_rating_repeats_combine_the_rating_and_keep_a_shared_raw(self):
        record, summary = self.repeats("rating", by_seed("Rating: 4"), 3, "--pass-threshold", "0.7")
        self.assertEqual(self.fields(record, "score", "value", "raw", "pass", "repeats"), {
            "score": 0.75, "value": 4, "raw": "Rating: 4", "pass": True,
            "repeats": [0.75] * 3})

    def test_pairwise_repeats_split_in_one_order_are_a_tie(self):
        record, summary = self.repeats("pairwise", by_seed("[[A]]", "[[B]]"), 2, "--single-order")
        self.assertEqual(self.fields(record, "score", "value", "verdict", "raw"), {
            "score": 0.5, "value": "tie", "verdict": "tie", "raw": None})

    def test_pairwise_repeats_in_both_orders_count_each_repeat(self):
        # seed 0: A in both orders (inconsistent, a tie); seed 1: a consistent preference
        def respond(request):
            if request.json.get("seed", 0) == 0:
                return chat("[[A]]")
            return prefers("ans-one")(request)
        record, summary = self.repeats("pairwise", respond, 2)
        self.assertEqual(self.fields(record, "score", "value", "verdict", "consistent"), {
            "score": 0.5, "value": "tie", "verdict": "tie", "consistent": None})
        self.assertEqual([m["consistent"] for m in record["judge_members"]], [False, True])
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]), (0.5, 2))

    def test_systems_repeats_split_are_a_tie_in_the_pairs_and_each_repeat_counts(self):
        def respond(request):  # seed 0: A in both orders (a tie); seed 1: prefers ans-one
            if request.json.get("seed", 0) == 0:
                return chat("[[A]]")
            return prefers("ans-one")(request)
        record, summary = self.repeats("systems", respond, 2)
        pair = record["judge_pairs"][0]
        self.assertEqual({k: pair[k] for k in ("a", "b", "verdict", "consistent")},
                         {"a": "one", "b": "two", "verdict": "tie", "consistent": None})
        self.assertEqual([(m["verdict"], m["consistent"]) for m in pair["members"]],
                         [("tie", False), ("A", True)])
        self.assertEqual(record["judge_value"], {"one": 0.5, "two": 0.5})
        self.assertEqual((summary["position_consistency"], summary["position_pairs"]), (0.5, 2))


class JuryApiTest(unittest.TestCase):
    def judged(self, answer, template="pairwise", **options):
        judge = minijudge.LLMJudge("http://127.0.0.1:9", model="m", template=template,
                                   judge_fn=lambda messages: answer, **options)
        if template == "pairwise":
            return judge.compare({"question": "q"}, "x", "y", both_orders=False)
        return judge.judge({"question": "q"}, "r")

    def test_a_split_of_verdicts_is_a_tie_in_every_field(self):
        combined = minijudge.jury({"a": self.judged("[[A]]"), "b": self.judged("[[B]]")},
                                  "majority")
        self.assertEqual((combined.score, combined.value, combined.details["verdict"],
                          combined.raw), (0.5, "tie", "tie", None))
        self.assertEqual(combined.details["members"]["a"]["raw"], "[[A]]")

    def test_a_split_of_options_has_no_option(self):
        options = dict(criterion=CRITERION)
        combined = minijudge.jury([self.judged("Excellent", "criterion", **options),
                                   self.judged("Poor", "criterion", **options)], "majority")
        self.assertEqual((combined.score, combined.value, combined.details["option"]),
                         (0.5, None, None))

    def test_pass_is_recomputed_from_the_combined_score(self):
        members = {"a": self.judged("Rating: 5", "rating", pass_threshold=0.7),
                   "b": self.judged("Rating: 2", "rating", pass_threshold=0.7)}
        self.assertNotIn("pass", minijudge.jury(members, "mean").details)
        combined = minijudge.jury(members, "mean", pass_threshold=0.7)
        self.assertEqual((combined.score, combined.details["pass"]), (0.625, False))


if __name__ == "__main__":
    unittest.main()
