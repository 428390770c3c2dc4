"""Whether a judge's numbers can be trusted: logprob-weighted ratings, reasoning judges,
adapting to parameters a server refuses, structured output, agreement with people and
what a run records to be reproduced.

Library tests build an ``LLMJudge`` on a loopback StubServer; CLI tests call
``minijudge.main([...])`` in-process with stdout and stderr captured. Expected values are
computed by hand in the comments, never with the code under test.
"""
import contextlib
import hashlib
import io
import json
import math
import os
import re
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_trust` finds stub too
import minijudge  # noqa: E402
from stub import StubTestCase, chat, error, rating_logprobs  # noqa: E402

_RESPONSE_RE = re.compile(r"\[The Start of the Response\]\n(.*?)\n\[The End of the Response\]",
                          re.S)
MAX_TOKENS_400 = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                  "Use 'max_completion_tokens' instead.")
TEMPERATURE_400 = ("Unsupported value: 'temperature' does not support 0 with this model. "
                   "Only the default (1) value is supported.")
RESPONSE_FORMAT_400 = "'response_format.type' must be 'json_schema' or 'text'"
TRUNCATED_HINT = minijudge._FAILURE_HINTS["truncated"]


def by_response(replies):
    """A responder answering replies[the judged response] (a str or a reply)."""
    def responder(request):
        match = _RESPONSE_RE.search(request.prompt or "")
        reply = replies.get(match.group(1)) if match else None
        return chat(reply) if isinstance(reply, str) else reply
    return responder


def refusing(param, message):
    """A responder answering a 400 with message whenever the body carries param."""
    def responder(request):
        if param in request.json:
            return error(400, message, type="invalid_request_error")
        return None
    return responder


def logprobs(*alternatives):
    """A chat logprobs object with one position: the first alternative is the chosen
    token; each alternative is (token, probability)."""
    def entry(token, p):
        return {"token": token, "logprob": math.log(p), "bytes": list(token.encode())}
    return {"content": [dict(entry(*alternatives[0]),
                             top_logprobs=[entry(*a) for a in alternatives])]}


def chats(srv):
    return [r for r in srv.requests if r.method == "POST"]


class StubTest(StubTestCase):
    """A fresh stub, a temp dir and no judge settings from the environment."""

    def judge(self, **options):
        options.setdefault("max_retries", 0)
        judge = minijudge.LLMJudge(self.srv.url, "judge-model", timeout=5, **options)
        self.addCleanup(judge.close)
        return judge

    def main(self, *argv):
        """(exit code, records written, stderr, summary JSON) of main() on the stub."""
        summary = self.path("summary.json")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = minijudge.main(["--judge-url", self.srv.url, "--max-retries", "0",
                                   "--timeout", "5", "--summary", summary]
                                  + [str(a) for a in argv])
        with open(summary, encoding="utf-8") as f:
            return code, [json.loads(line) for line in out.getvalue().splitlines()], \
                err.getvalue(), json.load(f)

    def items(self, *responses, **fields):
        """A JSONL file with one record per response text."""
        return self.write_jsonl("in.jsonl", [dict({"question": "q%d" % i, "response": r},
                                                  **fields) for i, r in enumerate(responses)])


# -- 1. Logprobs ----------------------------------------------------------------------


class LogprobsTest(StubTest):
    # G-Eval over {"4": 0.6, "5": 0.3, "3": 0.1}: 0.6*4 + 0.3*5 + 0.1*3 = 2.4 + 1.5 + 0.3
    # = 4.2; on 1-5 the score is (4.2 - 1) / 4 = 0.8
    PROBS = {"4": 0.6, "5": 0.3, "3": 0.1}

    def test_cli_scores_the_expected_rating_and_asks_for_logprobs(self):
        self.srv.content = None
        self.srv.responder = lambda request: chat("4", logprobs=rating_logprobs(self.PROBS))
        code, (record,), err, summary = self.main("--logprobs", self.items("r0"))
        self.assertEqual(code, 0, err)
        self.assertAlmostEqual(record["judge_score"], 0.8, delta=1e-9)
        self.assertEqual(record["judge_score_source"], "logprobs")
        self.assertAlmostEqual(record["judge_expected_rating"], 4.2, delta=1e-9)
        self.assertEqual(record["judge_value"], 4)
        (request,) = chats(self.srv)
        self.assertIs(request.json["logprobs"], True)
        self.assertEqual(request.json["top_logprobs"], 5)
        self.assertEqual(summary["score_sources"], {"logprobs": 1})
        self.assertIn("  scores from logprobs: 1, from the text: 0\n", err)

    def test_top_logprobs_flag_is_sent(self):
        self.main("--logprobs", "--top-logprobs", "3", self.items("r0"))
        self.assertEqual(chats(self.srv)[0].json["top_logprobs"], 3)

    def test_without_the_flag_no_logprobs_are_asked_for_or_used(self):
        self.srv.push(chat("4", logprobs=rating_logprobs(self.PROBS)))
        code, (record,), err, summary = self.main(self.items("r0"))
        self.assertNotIn("logprobs", chats(self.srv)[0].json)
        self.assertNotIn("top_logprobs", chats(self.srv)[0].json)
        self.assertEqual((record["judge_score"], record["judge_score_source"]), (0.75, "text"))
        self.assertNotIn("judge_expected_rating", record)

    def test_library_judgement_carries_source_and_expected(self):
        self.srv.push(chat("4", logprobs=rating_logprobs(self.PROBS)))
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.source), ("ok", 4, "logprobs"))
        self.assertAlmostEqual(j.expected, 4.2, delta=1e-9)
        self.assertAlmostEqual(j.score, 0.8, delta=1e-9)

    def test_token_with_and_without_a_leading_space_both_count(self):
        # " 4" 0.4 + "4" 0.2 = 0.6 for 4; "5" 0.3; " 3" 0.1 -> 4.2, score 0.8
        self.srv.push(chat(" 4", logprobs=logprobs((" 4", 0.4), ("5", 0.3), ("4", 0.2),
                                                   (" 3", 0.1))))
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual(j.source, "logprobs")
        self.assertAlmostEqual(j.expected, 4.2, delta=1e-9)
        self.assertAlmostEqual(j.score, 0.8, delta=1e-9)

    def test_alternatives_outside_the_scale_are_ignored_and_the_rest_renormalised(self):
        # in scale: 4 (0.3) and 5 (0.2), total 0.5 -> (0.3*4 + 0.2*5) / 0.5 = 2.2 / 0.5
        # = 4.4; score (4.4 - 1) / 4 = 0.85. "9", "hello" and "0" are not 1-5.
        self.srv.push(chat("4", logprobs=logprobs(("4", 0.3), ("9", 0.25), ("hello", 0.15),
                                                  (" 5", 0.2), ("0", 0.1))))
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual(j.source, "logprobs")
        self.assertAlmostEqual(j.expected, 4.4, delta=1e-9)
        self.assertAlmostEqual(j.score, 0.85, delta=1e-9)

    def test_a_non_ascii_digit_alternative_is_ignored_not_a_crash(self):
        self.srv.push(chat("4", logprobs=logprobs(("4", 0.6), ("²", 0.2), ("5", 0.2))))
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.source), ("ok", "logprobs"), j.error)
        self.assertAlmostEqual(j.expected, 4.25, delta=1e-9)

    def test_rating_after_a_lead_uses_the_rating_tokens_position(self):
        # the lead tokens "Rating:" and " " carry probability 1 and no digit: only the
        # last position holds the scale's alternatives
        self.srv.push(chat("Rating: 4", logprobs=rating_logprobs(
            self.PROBS, lead=("Rating:", " "))))
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual((j.value, j.source), (4, "logprobs"))
        self.assertAlmostEqual(j.expected, 4.2, delta=1e-9)

    def test_server_ignoring_the_flag_gives_the_text_score_and_the_summary_says_so(self):
        self.srv.content = "4"  # LM Studio, transformers serve: no logprobs in the reply
        code, records, err, summary = self.main("--logprobs", self.items("r0", "r1"))
        self.assertEqual(code, 0, err)
        for record in records:
            self.assertEqual((record["judge_score"], record["judge_score_source"]),
                             (0.75, "text"))
            self.assertNotIn("judge_expected_rating", record)
        self.assertEqual(summary["score_sources"], {"text": 2})
        self.assertIn("  scores from logprobs: 0, from the text: 2 (the server sent no usable "
                      "logprobs for those)\n", err)

    def test_a_two_digit_scale_uses_the_text(self):
        # "10" spans two tokens on many tokenizers: 1-10 ratings come from the text;
        # "8" on 1-10 scores (8 - 1) / 9
        template = self.write("t.txt", "Rate from 1 to 10.\n{question}\n{response}")
        self.srv.push(chat("8", logprobs=rating_logprobs({"8": 0.5, "9": 0.3, "7": 0.2})))
        code, (record,), err, summary = self.main("--template", template, "--scale", "1,10",
                                                  "--logprobs", self.items("r0"))
        self.assertEqual(code, 0, err)
        self.assertEqual(record["judge_score_source"], "text")
        self.assertAlmostEqual(record["judge_score"], 7 / 9, delta=1e-9)
        self.assertNotIn("judge_expected_rating", record)

    def test_library_no_logprobs_in_reply_is_text(self):
        j = self.judge(logprobs=True).judge({"question": "q"}, "r")
        self.assertEqual((j.score, j.source, j.expected), (0.75, "text", None))


# -- 2. Reasoning judges --------------------------------------------------------------


class ReasoningTest(StubTest):
    def judge_reply(self, reply):
        self.srv.push(reply)
        return self.judge().judge({"question": "q"}, "r")

    def test_cut_inside_think_is_truncated_with_the_hint(self):
        j = self.judge_reply(chat("<think>The user wants", finish_reason="length"))
        self.assertEqual((j.status, j.score, j.value), ("truncated", 0.0, None))
        self.assertIn("max_tokens", j.error)
        self.assertIn("enable_thinking", j.error)
        self.assertIn("finish_reason length", j.error)

    def test_unclosed_think_with_stop_is_truncated_too(self):
        j = self.judge_reply(chat("<think>Rating: 5 seems", finish_reason="stop"))
        self.assertEqual((j.status, j.value), ("truncated", None))

    def test_reasoning_only_reply_is_never_read_as_the_verdict(self):
        for name in ("reasoning_content", "reasoning"):  # vLLM, then newer vLLM
            for content in (None, ""):
                with self.subTest(field=name, content=content):
                    j = self.judge_reply(chat(content, finish_reason="stop", **{
                        name: "The answer is right. Rating: 5"}))
                    self.assertEqual(j.status, "reasoning_only")
                    self.assertEqual((j.score, j.value), (0.0, None))
                    self.assertEqual(j.reasoning, "The answer is right. Rating: 5")
                    self.assertIn("enable_thinking", j.error)

    def test_reasoning_kept_beside_a_good_answer(self):
        j = self.judge_reply(chat("Rating: 3", reasoning_content="Rating: 5 at first"))
        self.assertEqual((j.status, j.value, j.score), ("ok", 3, 0.5))
        self.assertEqual(j.reasoning, "Rating: 5 at first")

    def test_only_the_text_after_the_closing_tag_counts(self):
        j = self.judge_reply(chat("</think>Rating: 2"))
        self.assertEqual((j.status, j.value, j.score), ("ok", 2, 0.25))
        j = self.judge_reply(chat("<think>Rating: 5? no.</think>\nRating: 2"))
        self.assertEqual((j.status, j.value), ("ok", 2))

    def test_closed_think_block_with_no_answer_is_reasoning_only(self):
        j = self.judge_reply(chat("<think>Rating: 5</think>", finish_reason="stop"))
        self.assertEqual((j.status, j.value), ("reasoning_only", None))
        self.assertIn("enable_thinking", j.error)

    def test_null_content_with_refusal_is_refused(self):
        j = self.judge_reply(chat(None, refusal="I'm sorry, I can't help with that."))
        self.assertEqual((j.status, j.score), ("refused", 0.0))
        self.assertIn("I'm sorry, I can't help with that.", j.error)

    def test_cli_records_and_summary_show_each_status(self):
        self.srv.responder = by_response({
            "cut": chat("<think>The user wants", finish_reason="length"),
            "old": chat(None, reasoning_content="Rating: 5", finish_reason="stop"),
            "new": chat(None, reasoning="Rating: 5", finish_reason="stop"),
            "closed": "</think>Rating: 2",
            "refuse": chat(None, refusal="I can't help with that."),
        })
        code, records, err, summary = self.main("--max-error-rate", "1", self.items(
            "cut", "old", "new", "closed", "refuse"))
        self.assertEqual(code, 0, err)
        by = {r["response"]: r for r in records}
        self.assertEqual(by["cut"]["judge_status"], "truncated")
        self.assertEqual(by["cut"]["judge_score"], 0.0)
        self.assertIn("enable_thinking", by["cut"]["judge_error"])
        for name in ("old", "new"):
            self.assertEqual(by[name]["judge_status"], "reasoning_only")
            self.assertEqual(by[name]["judge_reasoning"], "Rating: 5")
            self.assertIsNone(by[name]["judge_value"])
            self.assertEqual(by[name]["judge_score"], 0.0)
        self.assertEqual((by["closed"]["judge_status"], by["closed"]["judge_value"]), ("ok", 2))
        self.assertEqual(by["refuse"]["judge_status"], "refused")
        self.assertEqual(summary["statuses"], {"truncated": 1, "reasoning_only": 2, "ok": 1,
                                               "refused": 1})
        self.assertIn("  statuses: ok 1, reasoning_only 2, refused 1, truncated 1\n", err)
        self.assertIn("  first truncated: the reply was cut off (finish_reason length) before "
                      "a verdict: " + TRUNCATED_HINT + "\n", err)


# -- 3. Adapting to refused parameters ------------------------------------------------


class AdaptTest(StubTest):
    def test_max_tokens_becomes_max_completion_tokens_once(self):
        self.srv.responder = refusing("max_tokens", MAX_TOKENS_400)
        judge = self.judge()
        with self.assertLogs("minijudge", "WARNING") as logs:
            results = [judge.judge({"question": "q"}, "r%d" % i) for i in range(3)]
        self.assertEqual([j.status for j in results], ["ok"] * 3)
        self.assertEqual([j.score for j in results], [0.75] * 3)
        sent = [r.json for r in chats(self.srv)]
        self.assertEqual(len(sent), 4)  # one 400 over three items
        self.assertEqual(sent[0]["max_tokens"], 16)
        for body in sent[1:]:
            self.assertEqual(body["max_completion_tokens"], 16)
            self.assertNotIn("max_tokens", body)
        self.assertEqual(len(judge.adapted), 1)
        self.assertIn("max_completion_tokens", judge.adapted[0])
        self.assertIn(MAX_TOKENS_400, judge.adapted[0])
        self.assertEqual(len(logs.records), 1)

    def test_cli_summary_says_what_was_adapted(self):
        self.srv.responder = refusing("max_tokens", MAX_TOKENS_400)
        code, records, err, summary = self.main("--concurrency", "1",
                                                self.items("r0", "r1", "r2"))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 3)
        sent = [r.json.get("max_tokens") for r in chats(self.srv)]
        self.assertEqual(sent, [16, None, None, None])  # one 400 over three items
        self.assertEqual(len(summary["adapted"]), 1)
        self.assertTrue(summary["adapted"][0].startswith(
            "max_tokens sent as max_completion_tokens (the server said: "),
            summary["adapted"][0])
        self.assertEqual(summary["parameters"]["max_completion_tokens"], 16)
        self.assertNotIn("max_tokens", summary["parameters"])
        self.assertIn("  adapted: max_tokens sent as max_completion_tokens", err)

    def test_requests_in_flight_when_the_first_400_arrives_are_retried_too(self):
        barrier = threading.Barrier(3, timeout=2)

        def responder(request):
            if "max_tokens" in request.json:
                try:  # all three refused before any is adapted
                    barrier.wait()
                except threading.BrokenBarrierError:
                    pass
                return error(400, MAX_TOKENS_400)
            return None
        self.srv.responder = responder
        judge = self.judge()
        with self.assertLogs("minijudge", "WARNING"):
            results = [j for _, j in minijudge.judge_records(
                judge, [{"question": "q", "response": "r%d" % i} for i in range(3)],
                concurrency=3, judge_one=lambda r: judge.judge(r, r["response"]))]
        self.assertEqual([j.status for j in results], ["ok"] * 3,
                         [j.error for j in results])
        self.assertEqual(len(judge.adapted), 1)

    def test_temperature_is_left_to_the_server(self):
        self.srv.responder = refusing("temperature", TEMPERATURE_400)
        judge = self.judge()
        with self.assertLogs("minijudge", "WARNING"):
            results = [judge.judge({"question": "q"}, "r%d" % i) for i in range(3)]
        self.assertEqual([j.status for j in results], ["ok"] * 3)
        sent = [r.json for r in chats(self.srv)]
        self.assertEqual(len(sent), 4)
        self.assertEqual(sent[0]["temperature"], 0)
        for body in sent[1:]:
            self.assertNotIn("temperature", body)
            self.assertEqual(body["max_tokens"], 16)
        self.assertEqual(len(judge.adapted), 1)
        self.assertTrue(judge.adapted[0].startswith("temperature left to the server"))

    def test_o_series_refusing_both_is_adapted_twice_then_goes_straight(self):
        def responder(request):
            if "max_tokens" in request.json:
                return error(400, MAX_TOKENS_400)
            if "temperature" in request.json:
                return error(400, TEMPERATURE_400)
            return None
        self.srv.responder = responder
        judge = self.judge()
        with self.assertLogs("minijudge", "WARNING"):
            results = [judge.judge({"question": "q"}, "r%d" % i) for i in range(2)]
        self.assertEqual([j.status for j in results], ["ok", "ok"])
        self.assertEqual(len(chats(self.srv)), 4)  # 400, 400, ok; then ok
        last = chats(self.srv)[-1].json
        self.assertEqual(last["max_completion_tokens"], 16)
        self.assertNotIn("max_tokens", last)
        self.assertNotIn("temperature", last)
        self.assertEqual(len(judge.adapted), 2)

    def test_response_format_is_dropped_and_replies_read_as_text(self):
        self.srv.responder = refusing("response_format", RESPONSE_FORMAT_400)
        self.srv.content = "Rating: 4"
        code, records, err, summary = self.main("--structured", "--concurrency", "1",
                                                self.items("r0", "r1"))
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_status"], r["judge_score"]) for r in records],
                         [("ok", 0.75)] * 2)
        sent = [r.json for r in chats(self.srv)]
        self.assertEqual(len(sent), 3)
        self.assertIn("response_format", sent[0])
        self.assertNotIn("response_format", sent[1])
        self.assertNotIn("response_format", sent[2])
        self.assertEqual(len(summary["adapted"]), 1)
        self.assertTrue(summary["adapted"][0].startswith(
            "response_format dropped: the replies are parsed as text"))

    def test_a_400_naming_no_known_parameter_is_not_retried(self):
        self.srv.push(error(400, "Invalid 'messages[0].content': string too long."))
        judge = self.judge(max_retries=5)
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.http_status, j.score), ("http_error", 400, 0.0))
        self.assertEqual(len(chats(self.srv)), 1)
        self.assertEqual(judge.adapted, [])
        self.assertEqual(judge.params["max_tokens"], 16)
        self.assertEqual(judge.params["temperature"], 0.0)

    def test_a_400_about_max_tokens_values_is_not_adapted(self):
        # a bad value, not an unsupported parameter: changing the name would not help
        self.srv.push(error(400, "max_tokens must be at least 1, got 0."))
        judge = self.judge()
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual(j.status, "http_error")
        self.assertEqual((len(chats(self.srv)), judge.adapted), (1, []))


# -- 4. Structured output -------------------------------------------------------------


class StructuredTest(StubTest):
    def schema(self):
        fmt = chats(self.srv)[0].json["response_format"]
        self.assertEqual(fmt["type"], "json_schema")
        return fmt["json_schema"]["schema"]

    def test_rating_schema_and_reply(self):
        self.srv.content = '{"rating": 4}'
        code, (record,), err, summary = self.main("--structured", self.items("r0"))
        self.assertEqual(code, 0, err)
        schema = self.schema()
        self.assertEqual(schema["type"], "object")
        self.assertEqual(schema["required"], ["rating"])
        self.assertEqual(schema["properties"]["rating"],
                         {"type": "integer", "minimum": 1, "maximum": 5})
        self.assertEqual((record["judge_value"], record["judge_score"]), (4, 0.75))

    def test_library_pairwise_schema_and_reply(self):
        self.srv.content = '{"verdict": "B"}'
        judge = self.judge(template="pairwise", structured=True)
        j = judge.judge({"question": "q"}, response_a="a", response_b="b")
        self.assertEqual((j.status, j.value, j.score), ("ok", "B", 0.0))
        schema = self.schema()
        self.assertEqual(schema["required"], ["verdict"])
        self.assertEqual(schema["properties"]["verdict"],
                         {"type": "string", "enum": ["A", "B", "tie"]})

    def test_pairwise_schema_and_reply(self):
        self.srv.content = '{"verdict": "B"}'
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response_a": "a",
                                                "response_b": "b"}])
        code, (record,), err, summary = self.main("--mode", "pairwise", "--single-order",
                                                  "--structured", source)
        self.assertEqual(code, 0, err)
        schema = self.schema()
        self.assertEqual(schema["required"], ["verdict"])
        self.assertEqual(schema["properties"]["verdict"],
                         {"type": "string", "enum": ["A", "B", "tie"]})
        self.assertEqual((record["judge_value"], record["judge_score"]), ("B", 0.0))

    def test_binary_schema_and_reply(self):
        self.srv.responder = by_response({"good": '{"correct": true}',
                                          "bad": '{"correct": false}'})
        code, records, err, summary = self.main("--template", "binary", "--structured",
                                                self.items("good", "bad", answer="x"))
        self.assertEqual(code, 0, err)
        schema = self.schema()
        self.assertEqual(schema["required"], ["correct"])
        self.assertEqual(schema["properties"]["correct"], {"type": "boolean"})
        self.assertEqual([(r["judge_value"], r["judge_score"]) for r in records],
                         [(True, 1.0), (False, 0.0)])

    def test_no_flag_no_response_format(self):
        self.main(self.items("r0"))
        self.assertNotIn("response_format", chats(self.srv)[0].json)


# -- 5. Agreement with people ---------------------------------------------------------

# judge J = [1, 2, 3, 4, 5, 3], human H = [1, 2, 4, 4, 5, 2]
# exact: pairs 1, 2, 4 and 5 agree -> 4/6 = 0.6667; every |J - H| <= 1 -> within_one 1.0.
# Quadratic kappa, weights (h - j)^2, n = 6:
#   sum w*O = 0 + 0 + (4-3)^2 + 0 + 0 + (2-3)^2 = 2
#   human marginals h1 1, h2 2, h4 2, h5 1; judge marginals j1 1, j2 1, j3 2, j4 1, j5 1
#   sum_b j_b (a-b)^2: a=1: 0+1+8+9+16 = 34; a=2: 1+0+2+4+9 = 16; a=4: 9+4+2+0+1 = 16;
#                      a=5: 16+9+8+1+0 = 34
#   sum w*E = (1*34 + 2*16 + 2*16 + 1*34) / 6 = 132 / 6 = 22
#   kappa = 1 - 2/22 = 10/11 = 0.90909 -> 0.9091
# Pearson: both means 3; dJ = [-2,-1,0,1,2,0], dH = [-2,-1,1,1,2,-1]
#   Sxy = 4+1+0+1+4+0 = 10, Sxx = 10, Syy = 4+1+1+1+4+1 = 12
#   r = 10 / sqrt(120) = 0.912871 -> 0.9129
# Spearman, average ranks for ties:
#   J sorted 1,2,3,3,4,5 -> the 3s share positions 3,4 = 3.5: ranks [1, 2, 3.5, 5, 6, 3.5]
#   H sorted 1,2,2,4,4,5 -> 2s share 2,3 = 2.5; 4s share 4,5 = 4.5:
#     ranks [1, 2.5, 4.5, 4.5, 6, 2.5]
#   both means 3.5; dRJ = [-2.5,-1.5,0,1.5,2.5,0], dRH = [-2.5,-1,1,1,2.5,-1]
#   Sxy = 6.25+1.5+0+1.5+6.25+0 = 15.5, Sxx = 6.25+2.25+0+2.25+6.25+0 = 17,
#   Syy = 6.25+1+1+1+6.25+1 = 16.5
#   rho = 15.5 / sqrt(280.5) = 15.5 / 16.74813 = 0.92548 -> 0.9255
JUDGE = [1, 2, 3, 4, 5, 3]
HUMAN = [1, 2, 4, 4, 5, 2]
RATINGS_AGREEMENT = {
    "n": 6, "kind": "ratings", "exact": 0.6667, "within_one": 1.0, "kappa_quadratic": 0.9091,
    "spearman": 0.9255, "pearson": 0.9129,
    "confusion": {"1": {"1": 1}, "2": {"2": 1, "3": 1}, "4": {"3": 1, "4": 1}, "5": {"5": 1}},
}
# scores [0.75, 0.25, 0.5, 0.0] vs labels [1, 0, 0, 1]
# at 0.5: 0.75 TP, 0.25 TN, 0.5 FP, 0.0 FN -> accuracy 2/4, precision 1/2, recall 1/2
# thresholds from the scores: t=0 all positive, TP 2 FP 2 -> 0.5; t=0.25 TP 1 FP 2 FN 1
# -> 0.25; t=0.5 -> 0.5; t=0.75 TP 1 TN 2 FN 1 -> 0.75: best 0.75, accuracy 0.75
BINARY_AGREEMENT = {"n": 4, "kind": "binary", "accuracy": 0.5, "precision": 0.5,
                    "recall": 0.5, "best_threshold": 0.75, "best_accuracy": 0.75}


class AgreementTest(unittest.TestCase):
    def test_ratings_by_hand(self):
        self.assertEqual(minijudge.agreement(JUDGE, HUMAN), RATINGS_AGREEMENT)

    def test_labels_as_strings(self):
        result = minijudge.agreement(JUDGE, [str(h) for h in HUMAN])
        self.assertEqual(result, RATINGS_AGREEMENT)

    def test_perfectly_anti_correlated(self):
        # J = 1..5, H = 5..1: exact only (3,3) = 0.2; within one only (3,3) = 0.2
        # sum w*O = 16+4+0+4+16 = 40; marginals all 1, n = 5:
        # sum w*E = sum_{a,b} (a-b)^2 / 5 = (2*5*55 - 2*15^2) / 5 = 100 / 5 = 20
        # kappa = 1 - 40/20 = -1; Pearson and Spearman -1
        result = minijudge.agreement([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
        self.assertEqual((result["pearson"], result["spearman"]), (-1.0, -1.0))
        self.assertEqual(result["kappa_quadratic"], -1.0)
        self.assertEqual((result["exact"], result["within_one"]), (0.2, 0.2))

    def test_constant_judge_has_no_correlation(self):
        # J all 3, H = [1, 2, 4, 5]: sum w*O = 4+1+1+4 = 10; judge marginal j3 = 4, so
        # sum w*E = sum_a 1*4*(a-3)^2 / 4 = 10: kappa 1 - 10/10 = 0
        result = minijudge.agreement([3, 3, 3, 3], [1, 2, 4, 5])
        self.assertEqual(result["n"], 4)
        self.assertIsNone(result["pearson"])
        self.assertIsNone(result["spearman"])
        self.assertEqual(result["kappa_quadratic"], 0.0)
        self.assertEqual((result["exact"], result["within_one"]), (0.0, 0.5))

    def test_both_constant_no_crash(self):
        result = minijudge.agreement([3, 3, 3], [3, 3, 3])
        self.assertEqual((result["exact"], result["within_one"]), (1.0, 1.0))
        self.assertIsNone(result["kappa_quadratic"])  # no expected disagreement
        self.assertIsNone(result["pearson"])

    def test_binary_by_hand(self):
        self.assertEqual(minijudge.agreement([0.75, 0.25, 0.5, 0.0], [1, 0, 0, 1]),
                         BINARY_AGREEMENT)

    def test_binary_labels_as_words_and_booleans(self):
        scores = [0.75, 0.25, 0.5, 0.0]
        for labels in (["yes", "no", "no", "yes"], [True, False, False, True],
                       ["True", "False", "false", "TRUE"], ["1", "0", "0", "1"],
                       [" Yes ", "NO", "incorrect", "correct"]):
            with self.subTest(labels=labels):
                self.assertEqual(minijudge.agreement(scores, labels), BINARY_AGREEMENT)

    def test_missing_values_are_left_out(self):
        judge = JUDGE[:3] + [None, 4] + JUDGE[3:] + [2]
        human = HUMAN[:3] + [3, None] + HUMAN[3:] + ["maybe"]
        self.assertEqual(minijudge.agreement(judge, human), RATINGS_AGREEMENT)

    def test_nan_is_missing(self):
        result = minijudge.agreement([1, float("nan"), 3], [1, 2, float("nan")])
        self.assertEqual(result, {"n": 1})

    def test_fewer_than_two_pairs(self):
        self.assertEqual(minijudge.agreement([], []), {"n": 0})
        self.assertEqual(minijudge.agreement([4], [4]), {"n": 1})


class CLIAgreementTest(StubTest):
    def test_ratings_in_the_summary(self):
        # six labelled items rated JUDGE; one failed (parse_error), one with no label:
        # both left out, so n is 6 and the values are the hand-computed ones
        replies = {"r%d" % i: str(r) for i, r in enumerate(JUDGE)}
        replies.update({"broken": "no idea", "unlabelled": "5"})
        self.srv.responder = by_response(replies)
        items = [{"question": "q", "response": "r%d" % i, "human": h}
                 for i, h in enumerate(HUMAN)]
        items[3:3] = [{"question": "q", "response": "broken", "human": 1},
                      {"question": "q", "response": "unlabelled"}]
        code, records, err, summary = self.main(
            "--human-field", "human", "--max-error-rate", "1",
            self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(summary["statuses"], {"ok": 7, "parse_error": 1})
        self.assertEqual(summary["agreement"], dict(RATINGS_AGREEMENT, field="human"))
        self.assertIn("  agreement with human (n=6): exact 0.6667, within one 1.0, quadratic "
                      "kappa 0.9091, Spearman 0.9255, Pearson 0.9129\n", err)

    def test_binary_labels_in_the_summary(self):
        # ratings 4, 2, 3, 1 score 0.75, 0.25, 0.5, 0.0 against yes/no labels
        self.srv.responder = by_response({"a": "4", "b": "2", "c": "3", "d": "1"})
        items = [{"question": "q", "response": r, "ok": h}
                 for r, h in zip("abcd", ["yes", "no", False, "True"])]
        code, records, err, summary = self.main("--human-field", "ok", self.write_jsonl(
            "in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertEqual(summary["agreement"], dict(BINARY_AGREEMENT, field="ok"))
        self.assertIn("  agreement with ok (n=4): accuracy 0.5, precision 0.5, recall 0.5 "
                      "at 0.5; best threshold 0.75 (accuracy 0.75)\n", err)

    def test_too_few_labels_is_said(self):
        code, records, err, summary = self.main("--human-field", "human", self.write_jsonl(
            "in.jsonl", [{"question": "q", "response": "r", "human": 4},
                         {"question": "q", "response": "s"}]))
        self.assertEqual(summary["agreement"], {"n": 1, "field": "human"})
        self.assertIn("  agreement with human: too few judged records with a label (n=1)\n",
                      err)

    def test_no_human_field_no_agreement(self):
        code, records, err, summary = self.main(self.items("r0"))
        self.assertIsNone(summary["agreement"])
        self.assertNotIn("agreement", err)


# -- 6. Reproducibility ---------------------------------------------------------------


class ReproducibilityTest(StubTest):
    def test_seed_is_sent_and_recorded(self):
        code, records, err, summary = self.main("--seed", "42", self.items("r0"))
        self.assertEqual(code, 0, err)
        self.assertEqual(chats(self.srv)[0].json["seed"], 42)
        self.assertEqual(summary["parameters"]["seed"], 42)

    def test_no_seed_no_key(self):
        code, records, err, summary = self.main(self.items("r0"))
        self.assertNotIn("seed", chats(self.srv)[0].json)
        self.assertNotIn("seed", summary["parameters"])

    def test_library_seed(self):
        self.judge(seed=7).judge({"question": "q"}, "r")
        self.assertEqual(chats(self.srv)[0].json["seed"], 7)

    def test_summary_records_what_a_rerun_needs(self):
        self.srv.content = None
        self.srv.responder = lambda request: chat("4", model="served",
                                                  system_fingerprint="fp_abc")
        code, records, err, summary = self.main("--logprobs", self.items("r0", "r1"))
        self.assertEqual(code, 0, err)
        self.assertEqual(summary["minijudge_version"], minijudge.__version__)
        self.assertEqual(summary["judge_model"], "served")
        self.assertEqual(summary["parameters"]["model"], "judge-model")
        self.assertEqual([r["judge_model"] for r in records], ["served", "served"])
        self.assertEqual(summary["system_fingerprints"], {"fp_abc": 2})
        self.assertRegex(summary["template_sha256"], r"\A[0-9a-f]{16}\Z")
        params = summary["parameters"]
        self.assertEqual((params["temperature"], params["max_tokens"], params["top_logprobs"],
                          params["logprobs"]), (0.0, 16, 5, True))

    def test_template_hash_is_of_the_text(self):
        def sha(*argv):
            self.srv.clear()
            return self.main(*argv, self.items("r0", answer="a"))[3]["template_sha256"]
        rating, binary = sha("--template", "rating"), sha("--template", "binary")
        self.assertNotEqual(rating, binary)
        self.assertEqual(sha("--template", "rating"), rating)
        self.assertEqual(rating, hashlib.sha256(
            minijudge.TEMPLATES["rating"].encode("utf-8")).hexdigest()[:16])
        # a file holding the same text is the same template
        copy = self.write("rating.txt", minijudge.TEMPLATES["rating"])
        self.assertEqual(sha("--template", copy), rating)
        edited = self.write("edited.txt", minijudge.TEMPLATES["rating"] + " ")
        self.assertNotEqual(sha("--template", edited), rating)


if __name__ == "__main__":
    unittest.main()
