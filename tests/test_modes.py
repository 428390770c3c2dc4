"""Modes (the section "Modes"): every kind of judging, and a criterion judge's assessment
and position check.

Every kind of judging against a loopback StubServer: pairwise (both orders), several
systems, comparative scores, a criterion with options, a JSON rubric, binary and math
correctness, several judges in one run, and the runnable examples.

Library tests build an ``LLMJudge`` on the stub; CLI tests call ``minijudge.main([...])``
in-process (the examples run ``python -m minijudge`` from the repository root).
Responders read the prompt the way a judge would, so a test controls which answer wins
wherever it stands. Expected values are worked out by hand in the comments; messages are
compared word for word. Tests marked ``expectedFailure`` pin down known bugs (``# BUG``).
"""
import inspect
import io
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_modes` finds stub too
import minijudge  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubServer, StubTestCase, chat, error  # noqa: E402
from test_cli import REPO, CLITest, by_response, parse_lines, response_of  # noqa: E402

_ANSWER_RE = re.compile(r"\[The Start of Assistant (A|B)'s Answer\]\n(.*?)\n"
                        r"\[The End of Assistant \1's Answer\]", re.S)
_QUESTION_RE = re.compile(r"\[Question\]\n(.*?)\n\n", re.S)
HELPFULNESS = {
    "name": "helpfulness",
    "description": "Does the response answer the question correctly and usefully?",
    "options": {"Excellent": {"score": 1.0, "description": "correct, complete and to the "
                                                           "point"},
                "Acceptable": {"score": 0.5, "description": "mostly right, or right but thin"},
                "Bad": 0.0},  # no description: listed by name alone
}


def answers(request):
    """(Assistant A's answer, Assistant B's answer) in a pairwise prompt."""
    found = dict(_ANSWER_RE.findall(request.prompt or ""))
    return found.get("A"), found.get("B")


def question_of(request):
    match = _QUESTION_RE.search(request.prompt or "")
    return match.group(1) if match else None


def preferring(*best_first):
    """A pairwise responder that prefers the answer earliest in best_first (an answer
    not listed comes last), whichever position it is in."""
    rank = {text: i for i, text in enumerate(best_first)}

    def responder(request):
        a, b = answers(request)
        if a is None:
            return None
        return chat("[[A]]" if rank.get(a, len(rank)) <= rank.get(b, len(rank)) else "[[B]]")
    return responder


def pairs(*ab, **extra):
    """Pairwise records p0, p1, ... from (response_a, response_b) tuples."""
    return [dict({"id": "p%d" % i, "question": "q%d" % i, "response_a": a,
                  "response_b": b}, **extra) for i, (a, b) in enumerate(ab)]


class ModeTest(CLITest):
    """CLITest with one stub per class, reset before each test."""

    @classmethod
    def setUpClass(cls):
        cls.shared = StubServer().start()
        cls.addClassCleanup(cls.shared.stop)

    def start_stub(self):
        self.shared.clear()
        self.shared.content, self.shared.responder = "4", None
        self.shared.models = ("judge-model",)
        return self.shared

    def run_cli(self, *argv):
        """(exit code, records, stderr, summary JSON) of a run against the stub."""
        summary = self.path("summary.json")
        if os.path.exists(summary):
            os.remove(summary)
        code, out, err = self.judge_main("--summary", summary, *argv)
        written = json.loads(self.read("summary.json")) if os.path.exists(summary) else None
        return code, parse_lines(out), err, written

    def chats(self):
        return [r for r in self.srv.requests if r.method == "POST"]

    def library_judge(self, **options):
        judge = minijudge.LLMJudge(self.srv.url, max_retries=0, timeout=5, **options)
        self.addCleanup(judge.close)
        return judge


# -- 1. Pairwise ----------------------------------------------------------------------


class PairwiseTest(ModeTest):
    def test_human_verdicts_are_compared_with_the_judges(self):
        # the judge prefers the first-listed good answer in both orders: verdicts A, B, A
        self.srv.responder = lambda request: chat("[[A]]" if "A's Answer]\ngood" in
                                                  request.prompt else "[[B]]")
        items = pairs(("good", "bad"), ("bad", "good"), ("good", "bad"))
        for item, label in zip(items, ["A", "B", "tie"]):
            item["human"] = label
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--human-field", "human",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual([r["judge_verdict"] for r in out], ["A", "B", "A"], err)
        human = summary["agreement"]
        self.assertEqual((human["n"], human["kind"], human["exact"]), (3, "ratings", 0.6667))
        self.assertEqual(human["confusion"], {"0": {"0": 1}, "0.5": {"1": 1}, "1": {"1": 1}})

    def test_two_requests_per_item_the_second_with_the_answers_swapped(self):
        items = pairs(("alpha", "beta"), ("gamma", "delta"), ("eps", "zeta"))
        self.srv.responder = preferring("alpha", "delta", "eps")
        code, out, err, summary = self.run_cli("--mode", "pairwise",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 2 * len(items))
        self.assertEqual(summary["requests"], 2 * len(items))
        for item in items:
            with self.subTest(item=item["id"]):
                # one worker judges an item, first order then swapped: its requests are
                # in that order even when items run concurrently
                sent = [answers(r) for r in self.chats() if question_of(r) == item["question"]]
                a, b = item["response_a"], item["response_b"]
                self.assertEqual(sent, [(a, b), (b, a)])
        self.assertEqual([r["judge_value"] for r in out], ["A", "B", "A"])

    def test_library_compare_in_the_callers_terms(self):
        self.srv.responder = preferring("right")
        judge = self.library_judge(template="pairwise")
        j = judge.compare({"question": "q"}, "right", "wrong")
        self.assertEqual((j.status, j.value, j.score), ("ok", "A", 1.0))
        self.assertEqual((j.details["consistent"], j.details["verdicts"]), (True, ["A", "A"]))
        self.assertEqual((j.raw, j.details["raw_swapped"]), ("[[A]]", "[[B]]"))
        self.assertEqual(j.attempts, 2)
        j = judge.compare({"question": "q"}, "wrong", "right")
        self.assertEqual((j.status, j.value, j.score), ("ok", "B", 0.0))
        self.assertEqual((j.details["consistent"], j.details["verdicts"]), (True, ["B", "B"]))
        self.assertEqual(self.srv.chat_count, 4)
        self.assertEqual([answers(r) for r in self.chats()], [
            ("right", "wrong"), ("wrong", "right"), ("wrong", "right"), ("right", "wrong")])

    def test_library_compare_needs_a_pairwise_judge(self):
        with self.assertRaises(minijudge.JudgeError) as caught:
            self.library_judge().compare({"question": "q"}, "a", "b")
        self.assertEqual(str(caught.exception), "compare needs a pairwise judge: "
                         "LLMJudge(..., template='pairwise')")
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_judge_that_always_says_A_gets_ties_and_zero_consistency(self):
        self.srv.content = "[[A]]"
        items = pairs(("x", "y"), ("y", "x"), ("long answer", "short"))
        code, out, err, summary = self.run_cli("--mode", "pairwise",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 6)
        for record in out:
            with self.subTest(item=record["id"]):
                self.assertEqual(record["judge_status"], "ok")
                self.assertEqual(record["judge_value"], "tie")
                self.assertEqual(record["judge_score"], 0.5)
                self.assertIs(record["judge_consistent"], False)
                # A first, A again with the answers swapped: B in the input's terms
                self.assertEqual(record["judge_verdicts"], ["A", "B"])
                self.assertEqual(record["judge_verdict"], "tie")
        self.assertEqual(summary["position_consistency"], 0.0)
        self.assertEqual(summary["mean_score_judged"], 0.5)
        self.assertEqual(summary["mode"], "pairwise")
        self.assertIn("  A's win rate 0.5 (ties count half) over the 3 judged; 95% CI ", err)
        self.assertIn("  position-consistent: 0.0% of the pairs asked in both orders (the "
                      "rest count as ties; n=3)\n", err)

    def test_the_right_answer_wins_in_either_position(self):
        items = pairs(("Canberra.", "Sydney."), ("124", "144"), ("Paris", "Lyon"),
                      ("Rome", "Rome"))
        self.srv.responder = preferring("Canberra.", "144", "Paris")
        code, out, err, summary = self.run_cli("--mode", "pairwise",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        got = [(r["judge_value"], r["judge_score"], r["judge_consistent"]) for r in out]
        # identical answers: the responder says A both times, so a tie, inconsistent
        self.assertEqual(got, [("A", 1.0, True), ("B", 0.0, True), ("A", 1.0, True),
                               ("tie", 0.5, False)])
        self.assertEqual(summary["position_consistency"], 0.75)  # 3 of 4 pairs
        self.assertEqual(summary["mean_score_judged"], 0.625)  # (1 + 0 + 1 + 0.5) / 4
        self.assertEqual(len(summary["ci95"]), 2)
        low, high = summary["ci95"]
        self.assertTrue(0.0 <= low <= 0.625 <= high <= 1.0, summary["ci95"])
        self.assertEqual(summary["ci_method"], "bootstrap, 1000 resamples, seed 0")
        self.assertEqual(summary["parameters"]["both_orders"], True)
        self.assertIn("  A's win rate 0.625 (ties count half) over the 4 judged; 95% CI "
                      "{} (bootstrap, 1000 resamples, seed 0)\n".format(summary["ci95"]), err)
        self.assertIn("  position-consistent: 75.0% of the pairs", err)

    def test_C_both_times_is_a_consistent_tie(self):
        self.srv.content = "[[C]]"
        code, out, err, summary = self.run_cli("--mode", "pairwise", self.write_jsonl(
            "in.jsonl", pairs(("a", "b"))))
        self.assertEqual(code, 0, err)
        (record,) = out
        self.assertEqual((record["judge_value"], record["judge_score"],
                          record["judge_consistent"], record["judge_verdicts"]),
                         ("tie", 0.5, True, ["tie", "tie"]))
        self.assertEqual(summary["position_consistency"], 1.0)

    def test_single_order_sends_one_request_per_item(self):
        self.srv.content = "[[B]]"
        items = pairs(("a", "b"), ("c", "d"), ("e", "f"))
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--single-order",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 3)
        self.assertEqual([answers(r) for r in self.chats()].count(("a", "b")), 1)
        self.assertEqual([(r["judge_value"], r["judge_score"]) for r in out], [("B", 0.0)] * 3)
        self.assertNotIn("judge_consistent", out[0])
        self.assertIsNone(summary["position_consistency"])
        self.assertEqual(summary["parameters"]["both_orders"], False)
        self.assertEqual(summary["requests"], 3)
        self.assertNotIn("position-consistent", err)

    def test_arena_hard_verdicts(self):
        cases = [  # (first reply, reply with the answers swapped, verdict, consistent)
            ("[[A>>B]]", "[[B>>A]]", "A", True),
            ("[[A>B]]", "[[B>A]]", "A", True),
            ("[[B>A]]", "[[A>B]]", "B", True),
            ("[[B>>A]]", "[[A>>B]]", "B", True),
            ("[[A=B]]", "[[A=B]]", "tie", True),
            ("[[B<<A]]", "[[A<<B]]", "A", True),   # B much worse than A, then swapped
            ("[[A>>B]]", "[[A>>B]]", "tie", False),  # position bias: A both times
            ("Verdict: [[A>B]].", "My final verdict is [[B>A]]", "A", True),
        ]
        for first, second, _, _ in cases:
            self.srv.push(first, second)
        items = pairs(*[("a%d" % i, "b%d" % i) for i in range(len(cases))])
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--concurrency", "1",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        for (first, second, verdict, consistent), record in zip(cases, out):
            with self.subTest(first=first, second=second):
                self.assertEqual(record["judge_status"], "ok")
                self.assertEqual((record["judge_value"], record["judge_consistent"]),
                                 (verdict, consistent))
                self.assertEqual(record["judge_score"],
                                 {"A": 1.0, "tie": 0.5, "B": 0.0}[verdict])
                self.assertEqual((record["judge_raw"], record["judge_raw_swapped"]),
                                 (first, second))
        self.assertEqual(self.srv.chat_count, 2 * len(cases))

    def test_field_flags_map_the_two_responses(self):
        self.srv.responder = preferring("second")
        source = self.write_jsonl("in.jsonl", [
            {"q": "Which?", "x": "first", "y": "second", "response_a": "NO",
             "response_b": "NO"}])
        code, out, err, summary = self.run_cli(
            "--mode", "pairwise", "--question-field", "q", "--response-a-field", "x",
            "--response-b-field", "y", source)
        self.assertEqual(code, 0, err)
        self.assertEqual([answers(r) for r in self.chats()],
                         [("first", "second"), ("second", "first")])
        self.assertEqual([question_of(r) for r in self.chats()], ["Which?"] * 2)
        self.assertEqual((out[0]["judge_value"], out[0]["judge_score"]), ("B", 0.0))

    def test_a_missing_response_b_is_a_bad_record(self):
        self.srv.content = "[[C]]"
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "response_a": "a", "response_b": "b"},
            {"question": "q2", "response_a": "a"}])
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--max-error-rate", "1",
                                               source)
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in out], [
            ("ok", None),
            ("bad_record", "line 2: no 'response_b' field (choose one with --response-b-field; "
                           "the record has question, response_a)")])
        self.assertEqual(self.srv.chat_count, 2)  # only the good record was sent
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--max-error-rate", "1",
                                               "--response-b-field", "y", source)
        self.assertEqual(out[0]["judge_error"], "line 1: no 'y' field (choose one with "
                         "--response-b-field; the record has question, response_a, "
                         "response_b); pass --response-b-field response_b?")

    def test_a_failure_with_the_answers_swapped_fails_the_item(self):
        self.srv.push(chat("[[A]]"), error(500, "boom"))
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--max-error-rate", "1",
                                               self.write_jsonl("in.jsonl", pairs(("a", "b"))))
        self.assertEqual(code, 0, err)
        (record,) = out
        self.assertEqual(record["judge_status"], "http_error")
        self.assertEqual(record["judge_error"], "with the answers swapped: http 500 from POST "
                         "{}/v1/chat/completions: boom".format(self.srv.url))
        self.assertEqual(record["judge_score"], 0.0)
        self.assertEqual(self.srv.chat_count, 2)
        self.assertIn("  first http_error: with the answers swapped: http 500 from POST ", err)

    def test_summary_counts_both_requests_when_the_swapped_one_fails(self):
        self.srv.push(chat("[[A]]"), error(500, "boom"))
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--max-error-rate", "1",
                                               self.write_jsonl("in.jsonl", pairs(("a", "b"))))
        self.assertEqual(self.srv.chat_count, 2)
        self.assertEqual(summary["requests"], 2)

    def test_ci_brackets_the_win_rate_it_is_printed_with(self):
        self.srv.responder = preferring("good")
        source = self.write_jsonl("in.jsonl", pairs(("good", "bad")) + [
            {"question": "q", "response_a": "x"}] * 3)
        code, out, err, summary = self.run_cli("--mode", "pairwise", "--max-error-rate", "1",
                                               source)
        self.assertEqual(summary["mean_score_judged"], 1.0)
        low, high = summary["ci95"]
        self.assertTrue(low <= summary["mean_score_judged"] <= high, summary["ci95"])


# -- 2. Several systems ---------------------------------------------------------------


def systems_record(i, order=("sys1", "sys2", "sys3")):
    return {"id": i, "question": "q%d" % i,
            "responses": {name: "item %d by %s" % (i, name) for name in order}}


def preferring_systems(*best_first):
    """Prefers the answer written by the system earliest in best_first."""
    def rank(text):
        return best_first.index(text.rsplit(" by ", 1)[1])

    def responder(request):
        a, b = answers(request)
        return chat("[[A]]" if rank(a) < rank(b) else "[[B]]") if a is not None else None
    return responder


class SystemsTest(ModeTest):
    def test_every_pair_in_both_orders_win_rates_and_ranking(self):
        self.srv.responder = preferring_systems("sys2", "sys1", "sys3")
        items = [systems_record(0), systems_record(1, order=("sys3", "sys1", "sys2"))]
        code, out, err, summary = self.run_cli("--mode", "systems",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 2 * 3 * len(items))  # 2 x C(3, 2) per record
        first, second = out
        # sys2 beats both, sys1 beats sys3: win rates 1.0, 0.5, 0.0 on each item
        self.assertEqual(first["judge_status"], "ok")
        self.assertEqual(first["judge_value"], {"sys1": 0.5, "sys2": 1.0, "sys3": 0.0})
        self.assertEqual(second["judge_value"], {"sys3": 0.0, "sys1": 0.5, "sys2": 1.0})
        self.assertEqual(first["judge_pairs"], [
            {"a": "sys1", "b": "sys2", "verdict": "B", "consistent": True},
            {"a": "sys1", "b": "sys3", "verdict": "A", "consistent": True},
            {"a": "sys2", "b": "sys3", "verdict": "A", "consistent": True}])
        self.assertEqual(second["judge_pairs"], [
            {"a": "sys3", "b": "sys1", "verdict": "B", "consistent": True},
            {"a": "sys3", "b": "sys2", "verdict": "B", "consistent": True},
            {"a": "sys1", "b": "sys2", "verdict": "B", "consistent": True}])
        # each pair was asked in both orders: the swapped prompt of every pair was sent
        sent = [answers(r) for r in self.chats()]
        for a, b in [("item 0 by sys1", "item 0 by sys2"),
                     ("item 1 by sys3", "item 1 by sys2")]:
            self.assertEqual((sent.count((a, b)), sent.count((b, a))), (1, 1))
        self.assertEqual(summary["systems"], {
            "sys1": {"win_rate": 0.5, "comparisons": 4},
            "sys2": {"win_rate": 1.0, "comparisons": 4},
            "sys3": {"win_rate": 0.0, "comparisons": 4}})
        self.assertEqual(summary["ranking"], ["sys2", "sys1", "sys3"])
        self.assertEqual(summary["position_consistency"], 1.0)
        self.assertEqual(summary["mode"], "systems")
        self.assertIn("  ranking over the 2 judged (win rates, ties count half): sys2 1.0 "
                      "(4 comparisons), sys1 0.5 (4 comparisons), "
                      "sys3 0.0 (4 comparisons)\n", err)

    def test_library_compare_systems(self):
        self.srv.responder = preferring_systems("b", "c", "a")
        judge = self.library_judge(template="pairwise")
        j = judge.compare_systems({"question": "q"}, {"a": "x by a", "b": "x by b",
                                                       "c": "x by c"})
        self.assertEqual((j.status, j.value), ("ok", {"a": 0.0, "b": 1.0, "c": 0.5}))
        self.assertEqual([(p["a"], p["b"], p["verdict"]) for p in j.details["pairs"]],
                         [("a", "b", "B"), ("a", "c", "B"), ("b", "c", "A")])
        self.assertEqual(j.attempts, 6)
        self.assertEqual(self.srv.chat_count, 6)

    def test_responses_field_and_single_order(self):
        self.srv.responder = preferring_systems("sys1", "sys2", "sys3")
        record = systems_record(0)
        record["outs"] = record.pop("responses")
        code, out, err, summary = self.run_cli("--mode", "systems", "--single-order",
                                               "--responses-field", "outs",
                                               self.write_jsonl("in.jsonl", [record]))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 3)  # C(3, 2), one order each
        self.assertEqual(out[0]["judge_value"], {"sys1": 1.0, "sys2": 0.5, "sys3": 0.0})
        self.assertIsNone(summary["position_consistency"])

    def test_fewer_than_two_systems_is_a_bad_record(self):
        self.srv.content = "[[C]]"
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "responses": {"only": "x"}},
            {"question": "q", "responses": "just text"},
            {"question": "q"},
            systems_record(3, order=("s1", "s2"))])
        code, out, err, summary = self.run_cli("--mode", "systems", "--max-error-rate", "1",
                                               source)
        self.assertEqual(code, 0, err)
        message = "line {}: field 'responses' must map two or more systems to their responses"
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in out], [
            ("bad_record", message.format(1)), ("bad_record", message.format(2)),
            ("bad_record", message.format(3)), ("ok", None)])
        self.assertEqual(self.srv.chat_count, 2)
        self.assertEqual(out[3]["judge_value"], {"s1": 0.5, "s2": 0.5})

    def test_pass_threshold_does_not_break_systems(self):
        self.srv.responder = preferring_systems("sys1", "sys2", "sys3")
        source = self.write_jsonl("in.jsonl", [systems_record(0)])
        code, out, err, summary = self.run_cli("--mode", "systems", "--pass-threshold", "0.5",
                                               source)
        self.assertEqual(out[0]["judge_status"], "ok", out[0]["judge_error"])
        self.assertEqual(code, 0, err)

    def test_dry_run_shows_the_first_pair_of_systems(self):
        code, out, err = self.judge_main("--dry-run", "--mode", "systems",
                                         self.write_jsonl("in.jsonl", [systems_record(0)]))
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("--- line 1 ---\n[user]\n"), out)
        self.assertIn("[The Start of Assistant A's Answer]\nitem 0 by sys1\n", out)
        self.assertIn("[The Start of Assistant B's Answer]\nitem 0 by sys2\n", out)
        self.assertEqual(self.srv.requests, [])


# -- 3. Comparative -------------------------------------------------------------------


class ComparativeTest(ModeTest):
    def test_a_custom_template_is_read_as_the_mode_says(self):
        template = self.write("cmp.txt", "Q: {question}\n1: {response_a}\n2: {response_b}")
        source = self.write_jsonl("in.jsonl", pairs(("a", "b")))
        for mode, reply, value in (("comparative", "7 9", [7.0, 9.0]),
                                   ("pairwise", "[[B]]", "tie")):
            with self.subTest(mode=mode):
                self.srv.clear()
                self.srv.content = reply
                code, out, err, summary = self.run_cli("--mode", mode, "--template", template,
                                                       source)
                self.assertEqual(out[0]["judge_status"], "ok", err)
                self.assertEqual(out[0]["judge_value"], value)
                self.assertGreater(self.srv.chat_count, 0)

    def test_a_custom_binary_template_reads_yes_and_no(self):
        self.srv.content = "yes"
        code, out, err, summary = self.run_cli(
            "--mode", "binary", "--template", self.write("t.txt", "{question} {response}"),
            self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}]))
        self.assertEqual((out[0]["judge_status"], out[0]["judge_value"]), ("ok", True), err)

    def test_a_null_response_is_a_bad_record(self):
        source = self.write_jsonl("in.jsonl", pairs(("a", "b")) + [
            {"question": "q", "response_a": None, "response_b": "b"}])
        code, out, err, summary = self.run_cli("--mode", "comparative", "--max-error-rate",
                                               "1", source)
        self.assertEqual((out[1]["judge_status"], out[1]["judge_error"]),
                         ("bad_record", "line 2: field 'response_a' is null, expected text"))

    def test_one_request_with_both_responses_and_two_scores(self):
        self.srv.content = "7 9\nAssistant 2 is more complete."
        source = self.write_jsonl("in.jsonl", pairs(("first answer", "second answer")))
        code, out, err, summary = self.run_cli("--mode", "comparative", source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 1)
        prompt = self.srv.requests[-1].prompt
        self.assertIn("[The Start of Assistant 1's Answer]\nfirst answer\n"
                      "[The End of Assistant 1's Answer]", prompt)
        self.assertIn("[The Start of Assistant 2's Answer]\nsecond answer\n"
                      "[The End of Assistant 2's Answer]", prompt)
        self.assertIn("on a scale of 1 to 10", prompt)
        (record,) = out
        self.assertEqual(record["judge_status"], "ok")
        self.assertEqual((record["judge_score_a"], record["judge_score_b"],
                          record["judge_score_diff"]), (7.0, 9.0, 2.0))
        self.assertEqual(record["judge_value"], [7.0, 9.0])
        self.assertAlmostEqual(record["judge_score"], 8 / 9)  # the second, (9 - 1) / (10 - 1)

    def test_a_score_off_the_default_scale_is_out_of_range(self):
        self.srv.content = "7 12"
        code, out, err, summary = self.run_cli("--mode", "comparative", "--max-error-rate", "1",
                                               self.write_jsonl("in.jsonl", pairs(("a", "b"))))
        self.assertEqual(code, 0, err)
        (record,) = out
        self.assertEqual((record["judge_status"], record["judge_error"]), (
            "out_of_range", "the judge answered 7 12 but the scale is 1-10: '7 12'"))
        self.assertEqual(record["judge_score"], 0.0)


# -- 4. A criterion with options -------------------------------------------------------


class CriterionTest(ModeTest):
    def criteria_file(self, criterion=HELPFULNESS, name="criterion.json"):
        return self.write(name, json.dumps(criterion))

    def test_the_prompt_lists_the_criterion_and_its_options(self):
        self.srv.content = "Excellent"
        code, out, err, summary = self.run_cli(
            "--criteria", self.criteria_file(),
            self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}]))
        self.assertEqual(code, 0, err)
        prompt = self.srv.requests[-1].prompt
        self.assertIn("Criterion: helpfulness\nDoes the response answer the question correctly "
                      "and usefully?\n\nOptions:\n"
                      "- Excellent: correct, complete and to the point\n"
                      "- Acceptable: mostly right, or right but thin\n"
                      "- Bad\n\n[Question]\nq\n", prompt)
        self.assertIn("[The Start of the Response]\nr\n[The End of the Response]", prompt)
        self.assertEqual(self.srv.requests[-1].json["max_tokens"], 16)
        self.assertEqual(summary["mode"], "criterion")

    def test_a_negated_option_is_not_that_option(self):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", criterion=HELPFULNESS)
        for reply in ("Not acceptable.", "It is not acceptable", "Not excellent"):
            with self.subTest(reply=reply):
                self.srv.content = reply
                j = judge.judge({"question": "q"}, {"response": "r"})
                self.assertEqual((j.status, j.score), ("parse_error", 0.0))

    def test_option_scores_must_be_between_0_and_1(self):
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url, model="m", criterion={
                "name": "likert", "options": {"Good": 5, "Bad": 1}})
        self.assertEqual(str(caught.exception), "criterion 'likert': option scores must be "
                         "between 0 and 1; got {'Good': 5.0, 'Bad': 1.0}")

    def test_replies_map_to_options_and_scores(self):
        replies = {"r0": "Excellent", "r1": "**Acceptable**.", "r2": "Answer: Bad",
                   "r3": "I'd say it is acceptable overall", "r4": "EXCELLENT",
                   "r5": "The response is thin.\nAcceptable"}
        self.srv.responder = by_response(replies)
        items = [{"question": "q", "response": r} for r in replies]
        code, out, err, summary = self.run_cli("--criteria", self.criteria_file(),
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        expected = [("Excellent", 1.0), ("Acceptable", 0.5), ("Bad", 0.0), ("Acceptable", 0.5),
                    ("Excellent", 1.0), ("Acceptable", 0.5)]
        for reply, (option, score), record in zip(replies.values(), expected, out):
            with self.subTest(reply=reply):
                self.assertEqual(record["judge_status"], "ok")
                self.assertEqual((record["judge_value"], record["judge_option"],
                                  record["judge_score"]), (option, option, score))
                self.assertEqual(record["judge_raw"], reply)

    def test_a_reply_naming_no_option_is_a_parse_error(self):
        self.srv.content = "Hard to say."
        code, out, err, summary = self.run_cli(
            "--criteria", self.criteria_file(), "--max-error-rate", "1",
            self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}]))
        self.assertEqual(code, 0, err)
        self.assertEqual((out[0]["judge_status"], out[0]["judge_error"]), (
            "parse_error", "no option (Excellent, Acceptable, Bad) found in the judge's reply: "
                           "'Hard to say.'"))

    def test_library_criterion(self):
        judge = self.library_judge(criterion=HELPFULNESS)
        self.assertEqual(judge.template, "criterion")
        self.srv.content = "Answer: Bad"
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.score, j.details), ("ok", "Bad", 0.0,
                                                                   {"option": "Bad"}))
        self.assertIn("Criterion: helpfulness\n", self.srv.requests[-1].prompt)
        self.srv.content = "Good"
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.error), ("parse_error", "no option (Excellent, "
                         "Acceptable, Bad) found in the judge's reply: 'Good'"))

    def test_yes_no_options(self):
        yes_no = {"name": "correct", "description": "Is the response right?",
                  "options": {"Yes": 1, "No": 0}}
        replies = {"r0": "Yes", "r1": "No.", "r2": "no", "r3": "Yes, it is right."}
        self.srv.responder = by_response(replies)
        code, out, err, summary = self.run_cli(
            "--criteria", self.criteria_file(yes_no),
            self.write_jsonl("in.jsonl", [{"question": "q", "response": r} for r in replies]))
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_value"], r["judge_score"]) for r in out],
                         [("Yes", 1.0), ("No", 0.0), ("No", 0.0), ("Yes", 1.0)])
        self.assertIn("Options:\n- Yes\n- No\n", self.srv.requests[-1].prompt)

    def test_a_criterion_without_two_options_is_a_usage_error(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        one = {"name": "helpfulness", "description": "d", "options": {"Good": 1.0}}
        none = {"name": "helpfulness", "description": "d"}
        listed = {"name": "helpfulness", "options": ["Good", "Bad"]}
        cases = [
            (one, "criterion 'helpfulness' needs at least two options"),
            (none, "a criterion needs a name and options mapping each option to a score; "
                   "got {'name': 'helpfulness', 'description': 'd'}"),
            (listed, "a criterion needs a name and options mapping each option to a score; "
                     "got {'name': 'helpfulness', 'options': ['Good', 'Bad']}"),
        ]
        for criterion, message in cases:
            with self.subTest(criterion=criterion):
                code, out, err = self.judge_main("--criteria", self.criteria_file(criterion),
                                                 source)
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, "minijudge: error: {}\n".format(message))
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(self.srv.url, criterion=criterion)
                self.assertEqual(str(caught.exception), message)
        self.assertEqual(self.srv.chat_count, 0)

    def test_criteria_file_that_is_not_json_is_a_usage_error(self):
        path = self.write("bad.json", "{not json")
        code, out, err = self.judge_main("--criteria", path, self.write_jsonl(
            "in.jsonl", [{"question": "q", "response": "r"}]))
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --criteria {}: Expecting property name "
                         "enclosed in double quotes: line 1 column 2 (char 1)\n".format(path))


# -- 5. Rubric ------------------------------------------------------------------------


def rubric(correctness, relevance, **extra):
    return json.dumps(dict({"reasoning": "Right, but it pads the answer.",
                            "correctness": correctness, "relevance": relevance}, **extra))


class RubricTest(ModeTest):
    def test_reasoning_first_json_scores_the_mean_of_the_criteria(self):
        replies = {"r0": rubric(8, 6),
                   "r1": rubric(8, 6, confidence=95),  # not a criterion: ignored
                   "r2": "Some thoughts first.\n```json\n" + rubric(10, 9) + "\n```",
                   "r3": json.dumps({"reasoning": "x", "correctness": 8})}
        self.srv.responder = by_response(replies)
        items = [{"question": "q", "response": r} for r in replies]
        code, out, err, summary = self.run_cli("--mode", "rubric", "--max-error-rate", "1",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        # (8 + 6) / 2 / 10 = 0.7; (10 + 9) / 2 / 10 = 0.95
        self.assertEqual([(r["judge_status"], r["judge_score"]) for r in out],
                         [("ok", 0.7), ("ok", 0.7), ("ok", 0.95), ("parse_error", 0.0)])
        self.assertEqual(out[0]["judge_value"], json.loads(replies["r0"]))
        self.assertEqual(out[3]["judge_error"], "no JSON object with correctness and relevance "
                         "found in the judge's reply: {!r}".format(replies["r3"]))
        self.assertEqual({r.json["max_tokens"] for r in self.chats()}, {512})
        prompt = self.chats()[0].prompt
        self.assertIn('{"reasoning": "<two or three sentences>", "correctness": <0-10>, '
                      '"relevance": <0-10>}', prompt)
        self.assertIn("[Reference Answer]\n(none given)\n", prompt)

    def test_short_templates_keep_16_max_tokens(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "answer": "a",
                                                "response": "r"}])
        for mode in ("rating", "binary", "math"):
            with self.subTest(mode=mode):
                self.srv.clear()
                self.srv.content = "yes" if mode != "rating" else "4"
                code, out, err, summary = self.run_cli("--mode", mode, source)
                self.assertEqual(code, 0, err)
                self.assertEqual(self.chats()[-1].json["max_tokens"], 16)

    def test_pass_threshold_marks_records_and_reports_the_pass_rate(self):
        replies = {"r0": rubric(8, 6), "r1": rubric(6, 6), "r2": rubric(10, 9), "r3": "??"}
        self.srv.responder = by_response(replies)
        items = [{"question": "q", "response": r} for r in replies]
        code, out, err, summary = self.run_cli("--mode", "rubric", "--pass-threshold", "0.7",
                                               "--max-error-rate", "1",
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        # 0.7 passes (at least T), 0.6 does not, 0.95 does; a failure does not pass
        self.assertEqual([r.get("judge_pass") for r in out], [True, False, True, False])
        self.assertEqual(summary["pass_rate"], 0.5)  # 2 of the 4 records
        self.assertEqual(summary["parameters"]["pass_threshold"], 0.7)
        self.assertIn("  pass rate 0.5 at --pass-threshold 0.7\n", err)


# -- 6. Binary and math ---------------------------------------------------------------


class BinaryMathTest(ModeTest):
    def check(self, mode):
        replies = {"right": "yes", "wrong": "no", "also right": "Yes.", "also wrong": "No"}
        self.srv.responder = by_response(replies)
        items = [{"question": "What is 1/2?", "answer": "0.5", "response": r} for r in replies]
        code, out, err, summary = self.run_cli("--mode", mode,
                                               self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_value"], r["judge_score"]) for r in out],
                         [(True, 1.0), (False, 0.0), (True, 1.0), (False, 0.0)])
        self.assertEqual(summary["mean_score"], 0.5)
        self.assertEqual(self.srv.chat_count, 4)
        prompt = self.chats()[0].prompt
        self.assertIn("[Reference Answer]\n0.5\n", prompt)
        return prompt

    def test_binary(self):
        prompt = self.check("binary")
        self.assertIn("Reply with one word: yes if the response is correct, no if it is not.",
                      prompt)

    def test_math_scores_yes_and_no(self):
        self.check("math")

    def test_math_mode_prompt_says_to_ignore_formatting(self):
        prompt = self.check("math")
        self.assertIn("mathematically equivalent to the reference\nanswer. Ignore formatting: ",
                      prompt)

    def test_math_template_says_to_ignore_formatting(self):
        self.srv.content = "yes"
        j = self.library_judge(template="math").judge({"question": "What is 1/2?",
                                                       "answer": "0.5"}, "$\\frac{1}{2}$")
        self.assertEqual((j.status, j.score), ("ok", 1.0))
        prompt = self.chats()[-1].prompt
        self.assertIn("mathematically equivalent to the reference\nanswer. Ignore formatting: ",
                      prompt)
        self.assertIn("0.5 versus 1/2,\n\\frac{1}{2} versus 1/2", prompt)

    def test_summary_names_the_template_the_mode_used(self):
        self.srv.content = "yes"
        code, out, err, summary = self.run_cli("--mode", "binary", self.write_jsonl(
            "in.jsonl", [{"question": "q", "answer": "a", "response": "r"}]))
        self.assertEqual(summary["template"], "binary")


# -- 7. Several judges ----------------------------------------------------------------


def by_kind(request):
    """Binary prompts get "yes", criterion prompts "Acceptable", pairwise ones [[A]],
    ratings 2 from the model judge-2 and 5 from any other."""
    prompt = request.prompt or ""
    if "Reply with one word" in prompt:
        return chat("yes")
    if "\nOptions:\n" in prompt:
        return chat("Acceptable")
    if "Assistant A's Answer" in prompt:
        return chat("[[A]]")
    return chat("2" if request.json.get("model") == "judge-2" else "5")


class JudgesTest(ModeTest):
    def setUp(self):
        super().setUp()
        self.srv.models = ("judge-model", "judge-2")
        self.srv.responder = by_kind
        self.source = self.write_jsonl("in.jsonl", [
            {"id": i, "question": "q%d" % i, "answer": "a", "response": "r%d" % i}
            for i in range(2)])

    def config(self, entries, name="judges.json"):
        return self.write(name, json.dumps(entries))

    def test_a_judge_whose_server_is_down_stops_alone(self):
        dead = self.down_url()  # held until the test ends: no other server takes it
        config = self.config([{"name": "good", "mode": "binary"},
                              {"name": "down", "mode": "binary", "url": dead}])
        source = self.write_jsonl("in.jsonl", [
            {"question": "q%d" % i, "answer": "a", "response": "r%d" % i} for i in range(6)])
        code, out, err, summary = self.run_cli("--judge-model", "judge-model", "--concurrency",
                                               "1", "--no-preflight", "--judges", config, source)
        self.assertEqual([r["good_status"] for r in out], ["ok"] * 6)
        self.assertEqual(out[0]["down_status"], "connection_error")
        self.assertEqual({r["down_status"] for r in out[1:]}, {"not_judged"})
        self.assertTrue(out[1]["down_error"].startswith("not judged: judge down stopped: "
                                                        "connection refused by POST " + dead))
        self.assertEqual(code, 1)  # the down judge failed every record

    def test_each_judge_writes_its_own_fields_and_summary(self):
        config = self.config([
            {"name": "quality", "mode": "rating"},
            {"name": "correct", "mode": "binary", "options": {"max_tokens": 4}},
            {"name": "second", "mode": "rating", "model": "judge-2"}])
        code, out, err, summary = self.run_cli("--judge-model", "judge-model", "--judges",
                                               config, self.source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 3 * 2)
        for record in out:
            with self.subTest(id=record["id"]):
                self.assertNotIn("judge_score", record)
                # rating 5 -> 1.0; yes -> 1.0; rating 2 -> (2 - 1) / 4 = 0.25
                names = ("quality", "correct", "second")
                self.assertEqual([(record[n + "_status"], record[n + "_score"],
                                   record[n + "_value"]) for n in names],
                                 [("ok", 1.0, 5), ("ok", 1.0, True), ("ok", 0.25, 2)])
                for name in ("quality", "correct", "second"):
                    for field in ("error", "raw", "usage", "model", "finish_reason"):
                        self.assertIn("{}_{}".format(name, field), record)
                self.assertEqual((record["quality_model"], record["second_model"]),
                                 ("judge-model", "judge-2"))
        binary = [r for r in self.chats() if "Reply with one word" in r.prompt]
        self.assertEqual([r.json["max_tokens"] for r in binary], [4, 4])
        self.assertEqual(sorted(r.json["model"] for r in self.chats()),
                         ["judge-2"] * 2 + ["judge-model"] * 4)
        self.assertEqual(list(summary), ["judges"])
        self.assertEqual(list(summary["judges"]), ["quality", "correct", "second"])
        self.assertEqual([(s["records"], s["mean_score"], s["mode"], s["judge_model"])
                          for s in summary["judges"].values()],
                         [(2, 1.0, "rating", "judge-model"), (2, 1.0, "binary", "judge-model"),
                          (2, 0.25, "rating", "judge-2")])
        for name in ("quality", "correct", "second"):
            self.assertRegex(err, r"(?m)^minijudge \[{}\]: 2 records in ".format(name))
        self.assertEqual(err.count("minijudge ["), 3)

    def test_mixed_modes_pairwise_and_criteria(self):
        self.write("crit.json", json.dumps(HELPFULNESS))
        config = self.config([{"name": "prefer", "mode": "pairwise"},
                              {"name": "helpful", "criteria": "crit.json"}])
        source = self.write_jsonl("pairs.jsonl", [dict(p, response="r") for p in pairs(
            ("a", "b"))])
        code, out, err, summary = self.run_cli("--judge-model", "judge-model", "--judges",
                                               config, source)
        self.assertEqual(code, 0, err)
        (record,) = out
        self.assertEqual((record["prefer_value"], record["prefer_consistent"]), ("tie", False))
        self.assertEqual((record["helpful_option"], record["helpful_score"]),
                         ("Acceptable", 0.5))
        self.assertEqual(self.srv.chat_count, 3)
        self.assertEqual([summary["judges"][n]["mode"] for n in ("prefer", "helpful")],
                         ["pairwise", "criterion"])

    def test_a_criteria_path_is_read_relative_to_the_config(self):
        folder = self.path("config")
        os.mkdir(folder)
        self.write(os.path.join("config", "crit.json"), json.dumps(HELPFULNESS))
        config = self.config([{"name": "helpful", "criteria": "crit.json"},
                              {"name": "quality"}], name=os.path.join("config", "judges.json"))
        self.assertFalse(os.path.exists(os.path.join(os.getcwd(), "crit.json")))
        code, out, err, summary = self.run_cli("--judge-model", "judge-model", "--judges",
                                               config, self.source)
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["helpful_option"], r["quality_score"]) for r in out],
                         [("Acceptable", 1.0)] * 2)
        self.assertEqual(sum("Criterion: helpfulness\n" in r.prompt for r in self.chats()), 2)

    def test_bad_configs_are_usage_errors(self):
        cases = [
            ([{"name": "a"}, {"name": "a"}], "names must be distinct words (they prefix the "
                                             "output fields); got a, a"),
            ([{"name": "my judge"}], "names must be distinct words (they prefix the output "
                                     "fields); got my judge"),
            ([{"name": "a", "mode": "nope"}], None),
            ([{"name": "a", "criteria": "missing.json"}], None),
            ({"name": "a"}, "expected a JSON list of judges, each with a name"),
            ("quality", "expected a JSON list of judges, each with a name"),
            ([{"mode": "rating"}], "expected a JSON list of judges, each with a name"),
            (["quality"], "expected a JSON list of judges, each with a name"),
        ]
        for entries, message in cases:
            with self.subTest(config=entries):
                config = self.config(entries)
                code, out, err = self.judge_main("--judges", config, self.source)
                self.assertEqual((code, out), (2, ""))
                if message and message.startswith("names"):
                    self.assertEqual(err, "minijudge: error: --judges {}: {}\n".format(
                        config, message))
                elif message:
                    self.assertTrue(err.startswith("minijudge: error: --judges {}: {} (".format(
                        config, message)), err)
        code, out, err = self.judge_main("--judges", self.config(
            [{"name": "a", "mode": "nope"}]), self.source)
        self.assertEqual(err, "minijudge: error: mode must be one of rating, binary, math, "
                         "rubric, criterion, comparative, pairwise, systems, trajectory; "
                         "got 'nope'\n")
        code, out, err = self.judge_main("--judges", self.config(
            [{"name": "a", "criteria": "missing.json"}]), self.source)
        self.assertEqual(err, "minijudge: error: criteria missing.json: [Errno 2] No such "
                         "file or directory: {!r}\n".format(self.path("missing.json")))
        self.assertEqual(self.srv.chat_count, 0)

    def test_an_empty_judges_list_is_a_usage_error(self):
        code, out, err = self.judge_main("--judges", self.config([]), self.source)
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.startswith("minijudge: error: --judges "), err)

    def test_an_unknown_judge_option_is_a_usage_error(self):
        code, out, err = self.judge_main("--judges", self.config(
            [{"name": "a", "options": {"max_token": 4}}]), self.source)
        self.assertEqual((code, out), (2, ""))
        self.assertIn("max_token", err)

    def test_options_that_are_not_an_object_are_a_usage_error(self):
        code, out, err = self.judge_main("--judges", self.config(
            [{"name": "a", "options": [1, 2]}]), self.source)
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.startswith("minijudge: error: "), err)


# -- 8. The runnable examples ---------------------------------------------------------


def sensible(request):
    """Ratings 4, binary yes, the option Acceptable, and in a pair the shorter answer
    (a stable preference, so both orders agree)."""
    a, b = answers(request)
    if a is not None:
        return chat("[[A]]" if (len(a), a) <= (len(b), b) else "[[B]]")
    return by_kind(request) if "Options:" in (request.prompt or "") or "one word" in (
        request.prompt or "") else chat("4")


class ExamplesTest(ModeTest):
    EXAMPLES = {"pairwise": ("--mode", "pairwise", "examples/pairs.jsonl"),
                "systems": ("--mode", "systems", "examples/systems.jsonl"),
                "criteria": ("--criteria", "examples/helpfulness.json", "examples/qa.jsonl"),
                "judges": ("--judges", "examples/judges.json", "examples/qa.jsonl")}

    @classmethod
    def setUpClass(cls):
        """Every example starts at once, on a stub of its own: the interpreters start on
        both cores, and each test reads its example's run."""
        super().setUpClass()
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        cls.runs = {}
        for name, argv in cls.EXAMPLES.items():
            srv = StubServer(responder=sensible).start()
            cls.addClassCleanup(srv.stop)
            proc = subprocess.Popen(
                [*PYTHON, "-m", "minijudge", "--judge-url", srv.url, "--max-retries",
                 "0", "--timeout", "5"] + list(argv), cwd=REPO, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            cls.addClassCleanup(lambda proc=proc: proc.poll() is None and proc.kill())
            cls.runs[name] = srv, proc

    def run_example(self, name):
        """(records, stderr, stub) of the example's run."""
        srv, proc = self.runs[name]
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        err = err.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, err)
        return [json.loads(line) for line in out.decode("utf-8").splitlines()], err, srv

    def lines(self, name):
        with open(os.path.join(REPO, "examples", name), encoding="utf-8") as f:
            return sum(1 for line in f if line.strip())

    def test_pairwise_example(self):
        out, err, srv = self.run_example("pairwise")
        self.assertEqual(len(out), self.lines("pairs.jsonl"))
        self.assertEqual({r["judge_status"] for r in out}, {"ok"})
        self.assertEqual({r["judge_consistent"] for r in out}, {True})
        self.assertEqual(srv.chat_count, 2 * len(out))
        self.assertIn("A's win rate", err)

    def test_systems_example(self):
        out, err, srv = self.run_example("systems")
        self.assertEqual(len(out), self.lines("systems.jsonl"))
        self.assertEqual({r["judge_status"] for r in out}, {"ok"})
        self.assertEqual(srv.chat_count, 2 * 3 * len(out))
        self.assertIn("  ranking over the 3 judged (win rates, ties count half): ", err)

    def test_criteria_example(self):
        out, err, _ = self.run_example("criteria")
        self.assertEqual(len(out), self.lines("qa.jsonl"))
        self.assertEqual({r["judge_status"] for r in out}, {"ok", "empty_response"})
        self.assertEqual({r.get("judge_option") for r in out if r["judge_status"] == "ok"},
                         {"Acceptable"})

    def test_judges_example(self):
        out, err, _ = self.run_example("judges")
        self.assertEqual(len(out), self.lines("qa.jsonl"))
        judged = [r for r in out if r["response"]]
        self.assertEqual({(r["quality_score"], r["correct_score"], r["helpful_option"])
                          for r in judged}, {(0.75, 1.0, "Acceptable")})
        for name in ("quality", "correct", "helpful"):
            self.assertRegex(err, r"(?m)^minijudge \[{}\]: ".format(name))


ASSESSMENT = "The response is right but says little about why."


def options_listed(prompt):
    """The option names in a prompt's list, in the order shown."""
    return re.findall(r"^- (\w+)", prompt, re.M)


def judge_like(pick, assessment=ASSESSMENT):
    """A responder: an assessment for an assessment turn, else pick(listed options)."""
    def responder(request):
        if "Do not name an option yet" in request.prompt:
            return chat(assessment) if isinstance(assessment, str) else assessment
        return chat(pick(options_listed(request.prompt)))
    return responder


class AssessTest(ModeTest):
    """Assess, then select (two turns of one conversation) and the position check (the options
    asked again in reverse order), for criterion judges: in Python and on the command line,
    against the loopback stub, with every failure of either turn.

    The stub reads the prompt as a judge would: the first turn asks for an assessment and
    gets one; a selection prompt gets an option named by the test's responder."""

    def test_two_requests_the_second_carries_the_assessment_as_the_assistant_turn(self):
        self.srv.responder = judge_like(lambda listed: "Acceptable")
        judge = self.library_judge(model="judge-model", criterion=HELPFULNESS, assess=True,
                                   system="Be fair.")
        j = judge.judge({"question": "q"}, {"response": "r"})
        self.assertEqual((j.status, j.value, j.score), ("ok", "Acceptable", 0.5))
        self.assertEqual(j.details, {"option": "Acceptable", "assessment": ASSESSMENT})
        first, second = self.chats()
        self.assertEqual([m["role"] for m in first.json["messages"]], ["system", "user"])
        self.assertIn("[The Start of the Response]\nr\n", first.prompt)
        self.assertIn("Do not name an option yet.", first.prompt)
        self.assertEqual(first.json["max_tokens"], 512)
        self.assertEqual(second.json["messages"][:2], first.json["messages"])
        self.assertEqual(second.json["messages"][2],
                         {"role": "assistant", "content": ASSESSMENT})
        self.assertEqual(second.json["messages"][3]["role"], "user")
        self.assertTrue(second.prompt.startswith("Given your assessment, which option"))
        self.assertEqual(options_listed(second.prompt), ["Excellent", "Acceptable", "Bad"])
        self.assertTrue(second.prompt.endswith("Reply with the name of one option only."))
        self.assertEqual(second.json["max_tokens"], 16)
        self.assertEqual(j.attempts, 2)

    def test_the_assessment_budget_is_its_own_and_no_schema_is_sent_with_it(self):
        self.srv.responder = judge_like(lambda listed: "Bad")
        judge = self.library_judge(model="judge-model", criterion=HELPFULNESS, assess=True,
                                   assess_max_tokens=200, structured=True, max_tokens=8)
        self.assertEqual(judge.judge({"question": "q"}, "r").value, "Bad")
        first, second = self.chats()
        self.assertEqual((first.json["max_tokens"], second.json["max_tokens"]), (200, 8))
        self.assertNotIn("response_format", first.json)
        self.assertEqual(second.json["response_format"]["json_schema"]["schema"]["properties"],
                         {"option": {"type": "string",
                                     "enum": ["Excellent", "Acceptable", "Bad"]}})

    def test_every_failure_of_the_first_turn_is_this_records_and_no_option_is_guessed(self):
        cases = [
            (chat("The response is right but", finish_reason="length"), "truncated",
             "the reply was cut off (finish_reason length) before the assessment: raise "
             "assess_max_tokens (--assess-max-tokens, 512 by default)"),
            (chat(""), "empty", "the judge's assessment is empty (finish_reason stop)"),
            (chat("<think>weighing it up", finish_reason="stop"), "truncated", None),
            (chat("", reasoning_content="I think it is fine"), "reasoning_only", None),
            (chat(None, refusal="I cannot help with that"), "refused",
             "the judge refused: I cannot help with that"),
            (error(400, "prompt too long"), "http_error", None),
        ]
        for reply, status, message in cases:
            with self.subTest(status=status):
                self.srv.clear()
                self.srv.responder = judge_like(lambda listed: "Excellent", reply)
                judge = self.library_judge(model="judge-model", criterion=HELPFULNESS,
                                           assess=True)
                j = judge.judge({"question": "q"}, "r")
                self.assertEqual((j.status, j.score, j.value), (status, 0.0, None))
                if message:
                    self.assertEqual(j.error, message)
                self.assertEqual(len(self.chats()), 1, "no selection after a failed assessment")

    def test_every_failure_of_the_selection_keeps_the_assessment(self):
        cases = [(chat("I would rather not choose"), "parse_error"),
                 (chat("Excel", finish_reason="length"), "truncated"), (chat(""), "empty"),
                 (error(500, "backend down"), "http_error")]
        for reply, status in cases:
            with self.subTest(status=status):
                self.srv.clear()
                self.srv.responder = lambda request, reply=reply: judge_like(
                    lambda listed: None)(request) if "Do not name" in request.prompt else reply
                judge = self.library_judge(model="judge-model", criterion=HELPFULNESS,
                                           assess=True)
                j = judge.judge({"question": "q"}, "r")
                self.assertEqual((j.status, j.score, j.value), (status, 0.0, None))
                self.assertEqual(j.details["assessment"], ASSESSMENT)
                self.assertEqual(len(self.chats()), 2)

    def test_cli_records_the_assessment_and_a_rerun_is_served_by_the_cache(self):
        self.srv.responder = judge_like(lambda listed: "Excellent")
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % i, "response": "r%d" % i}
                                               for i in range(3)])
        criteria = self.write("c.json", json.dumps(HELPFULNESS))
        argv = ("--criteria", criteria, "--assess", "--cache", self.path("cache.jsonl"),
                source)
        code, records, err, summary = self.run_cli(*argv)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(self.chats()), 6)
        for record in records:
            self.assertEqual((record["judge_status"], record["judge_score"],
                              record["judge_option"], record["judge_assessment"]),
                             ("ok", 1.0, "Excellent", ASSESSMENT))
        self.assertEqual(summary["requests"], 6)
        self.srv.clear()
        code, again, err, summary = self.run_cli(*argv)
        self.assertEqual((code, len(self.chats()), summary["cached"]), (0, 0, 3), err)
        self.assertEqual(again, records)

    def test_dry_run_shows_both_turns_and_sends_nothing(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = self.main("--judge-url", self.srv.url, "--dry-run", "--assess",
                                   "--criteria", self.write("c.json", json.dumps(HELPFULNESS)),
                                   source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.chats(), [])
        self.assertEqual(re.findall(r"^\[(user|assistant|system)\]$", out, re.M),
                         ["user", "assistant", "user"])
        self.assertIn("Do not name an option yet.", out)
        self.assertIn("[assistant]\n(the judge's reply to the turn above)\n[user]\nGiven "
                      "your assessment", out)

    def test_assess_or_check_position_without_a_criterion_is_a_usage_error(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for flag in ("--assess", "--check-position"):
            with self.subTest(flag=flag):
                code, out, err = self.main("--judge-url", self.srv.url, flag, source)
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, "minijudge: error: --assess and --check-position need "
                                      "--mode criterion; got mode rating\n")
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url, assess=True)
        self.assertEqual(str(caught.exception), "assess needs criterion={'name', "
                         "'description', 'options': {option: score}}")


class PositionTest(ModeTest):
    def run_position_check(self, pick, *extra, n=4):
        self.srv.responder = judge_like(pick)
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % i, "response": "r%d" % i}
                                               for i in range(n)])
        code, records, err, summary = self.run_cli(
            "--criteria", self.write("c.json", json.dumps(HELPFULNESS)), "--check-position",
            "--concurrency", "1", *extra, source)
        self.assertEqual(code, 0, err)
        return records, summary, err

    def test_a_judge_that_always_picks_the_first_listed_option_is_biased_every_time(self):
        records, summary, err = self.run_position_check(lambda listed: listed[0])
        selections = [options_listed(r.prompt) for r in self.chats()]
        self.assertEqual(selections, [["Excellent", "Acceptable", "Bad"],
                                      ["Bad", "Acceptable", "Excellent"]] * 4)
        for record in records:
            self.assertEqual((record["judge_status"], record["judge_option"],
                              record["judge_score"], record["judge_positional_bias"],
                              record["judge_option_reversed"]),
                             ("ok", "Excellent", 1.0, True, "Bad"))
        self.assertEqual(summary["positional_bias_rate"], 1.0)

    def test_a_judge_that_picks_by_content_is_not_biased(self):
        records, summary, err = self.run_position_check(lambda listed: "Acceptable")
        self.assertEqual([r["judge_positional_bias"] for r in records], [False] * 4)
        self.assertEqual([r["judge_score"] for r in records], [0.5] * 4)
        self.assertEqual(summary["positional_bias_rate"], 0.0)
        self.assertEqual(summary["requests"], 8)

    def test_with_assess_each_order_is_its_own_conversation(self):
        records, summary, err = self.run_position_check(lambda listed: listed[0], "--assess")
        self.assertEqual(len(self.chats()), 16)
        assessed = [r for r in self.chats() if "Do not name an option yet" in r.prompt]
        self.assertEqual([options_listed(r.prompt) for r in assessed[:2]],
                         [["Excellent", "Acceptable", "Bad"], ["Bad", "Acceptable", "Excellent"]])
        self.assertEqual({(r["judge_positional_bias"], r["judge_assessment"]) for r in records},
                         {(True, ASSESSMENT)})
        self.assertEqual(summary["positional_bias_rate"], 1.0)

    def test_a_failure_of_the_reversed_order_fails_the_record_and_says_which(self):
        def pick(listed):
            return listed[0] if listed[0] == "Excellent" else "no idea"
        self.srv.responder = judge_like(pick)
        judge = self.library_judge(model="judge-model", criterion=HELPFULNESS,
                                   check_position=True)
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score), ("parse_error", 0.0))
        self.assertEqual(j.error, "with the options reversed: no option (Excellent, "
                         "Acceptable, Bad) found in the judge's reply: 'no idea'")
        self.assertEqual(j.attempts, 2)


def reversed_options(criterion):
    return dict(criterion, options=dict(reversed(list(criterion["options"].items()))))


def first_listed(request):
    """The option listed first in a criterion prompt."""
    return re.search(r"Options:\n- (\w+)", request.prompt).group(1)


class PositionalBiasSummaryTest(StubTestCase):
    """Issue 12, items 4 and 5: the summary's positional bias.

    Each record judged with the options as given and reversed, the way the check does,
    then tallied, summarised and printed."""

    def summarise(self, judgements, mode="criterion"):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", criterion=HELPFULNESS)
        self.addCleanup(judge.close)
        tally = minijudge._Tally()
        for judgement in judgements:
            tally.add(judgement)
        args = minijudge._arg_parser().parse_args(["--criteria", "c.json", "in.jsonl"])
        stamp = minijudge._stamp([judge], mode, args)
        summary = minijudge._summary(stamp, args, tally, 1.0, False, judge)
        printed = io.StringIO()
        minijudge._print_summary(summary, 0.5, printed)
        return summary, printed.getvalue()

    def test_the_rate_counts_the_records_asked_in_both_orders(self):
        # r0-r2: the judge names whatever is listed first (Excellent, then Bad: biased);
        # r3-r7: it names Acceptable wherever it stands; r8: no option at all
        def responder(request):
            response = response_of(request)
            if response in ("r0", "r1", "r2"):
                return chat(first_listed(request))
            return chat("Hard to say." if response == "r8" else "Acceptable")
        self.srv.responder = responder
        judges = [minijudge.LLMJudge(self.srv.url, model="m", max_retries=0, criterion=c)
                  for c in (HELPFULNESS, reversed_options(HELPFULNESS))]
        for judge in judges:
            self.addCleanup(judge.close)
        judgements = []
        for i in range(9):
            first, second = (judge.judge({"question": "q"}, "r%d" % i) for judge in judges)
            if first.ok and second.ok:
                first.details["positional_bias"] = first.value != second.value
            judgements.append(first)
        self.assertEqual([j.value for j in judgements[:4]],
                         ["Excellent", "Excellent", "Excellent", "Acceptable"])
        self.assertEqual(minijudge._judge_fields("judge", judgements[0], {})[
            "judge_positional_bias"], True)
        self.assertNotIn("positional_bias", judgements[8].details)
        summary, printed = self.summarise(judgements)
        self.assertEqual(summary["positional_bias_rate"], 0.375)  # 3 of the 8 asked twice
        self.assertIn("\n    positional bias: 37.5% of the records asked in both option orders "
                      "chose differently (the first choice is kept; n=8)\n", printed)
        self.assertEqual(json.loads(json.dumps(summary))["positional_bias_rate"], 0.375)

    def test_no_rate_when_no_record_was_asked_in_both_orders(self):
        self.srv.content = "Bad"
        judge = minijudge.LLMJudge(self.srv.url, model="m", criterion=HELPFULNESS)
        self.addCleanup(judge.close)
        summary, printed = self.summarise([judge.judge({"question": "q"}, "r")])
        self.assertIsNone(summary["positional_bias_rate"])
        self.assertNotIn("positional bias", printed)
        self.assertTrue(printed.startswith("minijudge: 1 records in 1.0 s (1 requests, 0 "
                                           "from cache, 1.0 requests/s); judge m at "), printed)


@unittest.skipUnless("check_position" in inspect.signature(minijudge.LLMJudge).parameters,
                     "the judging core has no position check yet (issue 12, item 3)")
class PositionCheckRunTest(CLITest):
    """Issue 12: --check-position through the command line."""

    def test_a_judge_naming_the_first_listed_option_is_biased_on_every_record(self):
        self.srv.responder = lambda request: chat(first_listed(request))
        criteria = self.write("criterion.json", json.dumps(HELPFULNESS))
        code, out, err = self.judge_main(
            "--criteria", criteria, "--check-position", "--summary", self.path("s.json"),
            self.write_jsonl("in.jsonl", [{"question": "q", "response": "r%d" % i}
                                          for i in range(3)]))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_positional_bias"] for r in parse_lines(out)], [True] * 3)
        self.assertEqual(json.loads(self.read("s.json"))["positional_bias_rate"], 1.0)
        self.assertIn("  positional bias: 100.0% of the records asked in both option orders "
                      "chose differently (the first choice is kept; n=3)\n", err)


if __name__ == "__main__":
    unittest.main()
