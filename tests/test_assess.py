"""Assess, then select (two turns of one conversation) and the position check (the
options asked again in reverse order), for criterion judges: in Python and on the command
line, against the loopback stub, with every failure of either turn.

The stub reads the prompt as a judge would: the first turn asks for an assessment and
gets one; a selection prompt gets an option named by the test's responder.
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import chat, error  # noqa: E402
from test_modes import HELPFULNESS, ModeTest  # noqa: E402

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


if __name__ == "__main__":
    unittest.main()
