"""minijudge's HTTP client and LLMJudge against a real loopback StubServer.

Every test asserts what was sent (path, headers, body) and what came back (status,
score, the error word for word). Sleeps are faked, so no test waits on a backoff; the
trap names in the test names are those of JUDGE-TRAPS.md.
"""
import logging
import math
import os
import re
import signal
import socket
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_http` finds stub too
import minijudge  # noqa: E402
from stub import (SideBySide, StubServer, StubTestCase, chat, choices_null, drop,  # noqa: E402
                  drop_mid_body, error, framed, hang, html, http_date, invalid_json,
                  no_choices, oversized, raw, rate_limited, redirect, truncated_json, wire)

KEY = "sk-test-SECRET123"
EXAMPLE = {"question": "q", "answer": "a"}
OUTPUT = {"response": "r"}
NO_CHAT_HERE = (" (no chat endpoint there: give the judge URL as the server's base, "
                "http://HOST:PORT or .../v1, or the full .../v1/chat/completions)")
TRUNCATED = ("the reply was cut off (finish_reason length) before a verdict: raise "
             "max_tokens (reasoning models need ~1024) or disable thinking with extra_body "
             '{"chat_template_kwargs": {"enable_thinking": false}}')


class StubTest(StubTestCase):
    """A fresh stub per test, and no judge settings leaking in from the environment."""

    def setUp(self):
        super().setUp()
        self.chat_url = self.srv.url + "/v1/chat/completions"
        self.waits = []

    def judge(self, **options):
        """A judge on the stub's /v1 with a recording fake sleep."""
        options.setdefault("model", "judge-model")
        options.setdefault("sleep", self.waits.append)
        return self.closing(minijudge.LLMJudge(self.srv.url + "/v1", **options))

    def closing(self, judge):
        """The judge, whose kept-alive connection closes when the test ends."""
        self.addCleanup(judge.close)
        return judge

    def paths(self):
        return [(r.method, r.path) for r in self.srv.requests]


class ContractTest(StubTest):
    def test_score_contract_for_every_base_url_form(self):
        # trap: `.../v1` + `/v1/chat/completions` = `/v1/v1/...`, every item silently 0.0
        forms = [("", "/v1"), ("/", "/v1"), ("/v1", "/v1"), ("/v1/", "/v1"),
                 ("/v1/chat/completions", "/v1"), ("/v1/chat/completions/", "/v1"),
                 ("/compatible-mode/v1", "/compatible-mode/v1")]
        for suffix, root in forms:
            with self.subTest(url=suffix):
                self.srv.clear()
                judge = self.closing(minijudge.LLMJudge(self.srv.url + suffix,
                                                        sleep=lambda s: None))
                self.assertEqual(judge.score({"question": "q", "answer": "a"},
                                             {"response": "r"}), {"judge_score": 0.75})
                self.assertEqual(self.paths(), [("GET", root + "/models"),
                                                ("POST", root + "/chat/completions")])

    def test_a_url_ending_in_chat_is_the_chat_endpoint_cut_short(self):
        # issue 44: .../v1/chat was taken for a prefix: POST .../v1/chat/v1/chat/completions
        for suffix, root in (("/v1/chat", "/v1"), ("/v1/chat/", "/v1"),
                             ("/openai/v1/chat", "/openai/v1")):
            with self.subTest(url=suffix):
                self.srv.clear()
                judge = self.closing(minijudge.LLMJudge(self.srv.url + suffix, model="m"))
                self.assertEqual(judge.url, self.srv.url + root + "/chat/completions")
                self.assertEqual(judge.score(EXAMPLE, OUTPUT), {"judge_score": 0.75})
                self.assertEqual(self.paths(), [("POST", root + "/chat/completions")])

    def test_a_404_from_the_chat_url_says_to_give_the_base_url(self):
        # a path the server has no chat endpoint at: the 404 alone did not say what to fix
        self.srv.responder = lambda request: error(404, "Not Found", style="detail")
        judge = self.closing(minijudge.LLMJudge(self.srv.url + "/api/chat", model="m"))
        j = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.http_status), ("http_error", 404))
        self.assertEqual(j.error, "http 404 from POST {}/api/chat/v1/chat/completions: Not "
                         "Found".format(self.srv.url) + NO_CHAT_HERE)
        # a 404 that says why (a model the server does not serve) gets no hint
        self.srv.responder = None
        self.srv.strict_model = True
        j = self.judge(model="wrong").judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.error, "http 404 from POST {}: The model `wrong` does not "
                         "exist.".format(self.chat_url))

    def test_azure_deployment_url_keeps_api_version_and_sends_api_key_header(self):
        self.srv.require_key = KEY
        judge = self.closing(minijudge.LLMJudge(
            self.srv.url + "/openai/deployments/gpt?api-version=2024-02-01", model="gpt",
            api_key=KEY, key_header="api-key", sleep=lambda s: None))
        self.assertEqual(judge.score(EXAMPLE, OUTPUT), {"judge_score": 0.75})
        request, = self.srv.requests
        self.assertEqual(request.path, "/openai/deployments/gpt/chat/completions")
        self.assertEqual(request.query, {"api-version": "2024-02-01"})
        self.assertEqual(request.headers["api-key"], KEY)
        self.assertNotIn("authorization", request.headers)


class RequestBodyTest(StubTest):
    def test_request_body_sends_temperature_0_and_a_short_max_tokens(self):
        self.judge().judge({"question": "What is 2+2?", "answer": "four"},
                           {"response": "4, obviously"})
        body = self.srv.requests[-1].json
        self.assertEqual(body["model"], "judge-model")
        self.assertEqual([m["role"] for m in body["messages"]], ["user"])
        prompt = self.srv.requests[-1].prompt
        self.assertIn("[Question]\nWhat is 2+2?\n", prompt)
        self.assertIn("[Reference Answer]\nfour\n", prompt)
        self.assertIn("[The Start of the Response]\n4, obviously\n", prompt)
        self.assertEqual(body["temperature"], 0)
        self.assertEqual(body["max_tokens"], 16)
        self.assertIs(body["stream"], False)

    def test_no_reference_section_without_answer(self):
        self.judge().judge({"question": "What is 2+2?"}, {"response": "4"})
        self.assertNotIn("Reference", self.srv.requests[-1].prompt)

    def test_extra_body_and_headers_arrive(self):
        self.judge(extra_body={"chat_template_kwargs": {"enable_thinking": False}},
                   headers={"X-Team": "eval"}).judge(EXAMPLE, OUTPUT)
        request = self.srv.requests[-1]
        self.assertEqual(request.json["chat_template_kwargs"], {"enable_thinking": False})
        self.assertEqual(request.headers["x-team"], "eval")

    def test_keyless_local_server_gets_no_authorization_header(self):
        self.assertEqual(self.judge().judge(EXAMPLE, OUTPUT).status, "ok")
        self.assertNotIn("authorization", self.srv.requests[-1].headers)

    def test_openai_api_key_from_environment_is_sent_as_bearer(self):
        os.environ["OPENAI_API_KEY"] = KEY
        self.judge().judge(EXAMPLE, OUTPUT)
        self.assertEqual(self.srv.requests[-1].headers["authorization"], "Bearer " + KEY)


class ModelDiscoveryTest(StubTest):
    def test_vllm_served_model_name_is_discovered_once(self):
        self.srv.models = ("qwen3-judge",)
        judge = self.judge(model=None)
        judge.judge(EXAMPLE, OUTPUT)
        judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual([m for m, _ in self.paths()], ["GET", "POST", "POST"])
        self.assertEqual([r.json["model"] for r in self.srv.requests[1:]],
                         ["qwen3-judge", "qwen3-judge"])

    def test_two_listed_models_is_a_model_error(self):
        self.srv.models = ("judge-a", "judge-b")
        j = self.judge(model=None).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.score), ("model_error", 0.0))
        self.assertEqual(j.error, "no model given and GET {}/v1/models lists judge-a, "
                         "judge-b: pass one with model= or --judge-model"
                         .format(self.srv.url))
        self.assertEqual(self.srv.chat_count, 0)


class FakeScoreTest(StubTest):
    """Trap 1: a failure must score the failure value with a visible reason."""

    def test_out_of_range_10_is_not_clamped(self):
        self.srv.content = "10"
        j = self.judge().judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.score, j.value), ("out_of_range", 0.0, None))
        self.assertEqual(j.error, "the judge answered 10 but the scale is 1-5: '10'")

    def test_dead_server_is_connection_error_without_retry(self):
        url = self.down_url()
        judge = minijudge.LLMJudge(url, model="m",
                                   sleep=self.waits.append)
        j = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.score, j.attempts), ("connection_error", 0.0, 1))
        self.assertEqual(j.error, "connection refused by POST {}/v1/chat/"
                         "completions: is the server running?".format(url))
        self.assertEqual(self.waits, [])

    def test_empty_response_is_scored_without_calling_the_judge(self):
        for response in ("", "  \n", None):
            with self.subTest(response=response):
                j = self.judge(model=None).judge(EXAMPLE, {"response": response})
                self.assertEqual((j.status, j.score), ("empty_response", 0.0))
                self.assertEqual(j.error, "the response is empty: scored 0.0 without "
                                 "calling the judge")
        self.assertEqual(self.srv.requests, [])

    def test_on_failure_nan_and_none_are_honoured(self):
        self.srv.content = "I cannot evaluate this."
        j = self.judge(on_failure=float("nan")).judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.status, "parse_error")
        self.assertTrue(math.isnan(j.score))
        with self.assertLogs("minijudge", "WARNING") as logged:  # never a silent failure
            self.assertEqual(self.judge(on_failure=None).score(EXAMPLE, OUTPUT),
                             {"judge_score": None})
        self.assertIn("judge_score None: parse_error", logged.output[0])

    def test_strict_raises_judge_error_carrying_the_judgement(self):
        self.srv.content = "10"
        with self.assertRaises(minijudge.JudgeError) as caught:
            self.judge(strict=True).judge(EXAMPLE, OUTPUT)
        self.assertEqual(caught.exception.judgement.status, "out_of_range")
        self.assertEqual(str(caught.exception), caught.exception.judgement.error)


class RetryTest(StubTest):
    """Trap 5: retry what is transient, boundedly; stop at once on what is not."""

    def test_429_retry_after_seconds_is_waited(self):
        self.srv.push(rate_limited("2"))
        j = self.judge().judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts, self.srv.chat_count), ("ok", 2, 2))
        self.assertEqual(len(self.waits), 1)
        self.assertGreaterEqual(self.waits[0], 2)

    def test_429_retry_after_http_date_is_waited(self):
        self.srv.push(rate_limited(http_date(3)))
        j = self.judge().judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts), ("ok", 2))
        self.assertTrue(1.5 < self.waits[0] <= 3, self.waits)

    def test_a_retry_after_date_out_of_range_is_ignored_not_a_crash(self):
        for date in ("Mon, 99 Sep 1000000000000 98:69:90", "Tue, 01 Jan 99999 00:00:00 GMT"):
            with self.subTest(date=date):
                self.srv.clear()
                self.srv.push(rate_limited(date))
                j = self.judge().judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.attempts), ("ok", 2), j.error)

    def test_transient_faults_then_a_good_reply_are_ok(self):
        faults = {
            "500": error(500, "The server had an error while processing your request."),
            "502 nginx html": html(502), "504": error(504, "Gateway Timeout"),
            "503": error(503, "The engine is currently overloaded, please try again."),
            "408": error(408, "Request Timeout"), "409": error(409, "Conflict"),
            "drop": drop(), "drop_mid_body": drop_mid_body(),
            "truncated_json": truncated_json(), "invalid_json": invalid_json(),
            "choices_null": choices_null(), "no_choices": no_choices(),
        }
        judge = self.judge()
        for name, fault in faults.items():
            with self.subTest(fault=name):
                self.srv.clear()
                del self.waits[:]
                self.srv.push(fault)
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.score), ("ok", 0.75))
                self.assertEqual(self.srv.chat_count, 2)
                if name == "drop":  # on a kept-alive connection: resent at once, as a stale close
                    self.assertEqual((j.attempts, len(self.waits)), (1, 0))
                else:
                    self.assertEqual((j.attempts, len(self.waits)), (2, 1))

    def test_six_503s_give_http_error_after_six_tries(self):
        self.srv.push(*[error(503, "overloaded")] * 6)
        j = self.judge(max_retries=5).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.score, j.attempts, j.http_status),
                         ("http_error", 0.0, 6, 503))
        self.assertEqual(j.error, "http 503 from POST {}: overloaded (after 6 tries)"
                         .format(self.chat_url))
        self.assertEqual((self.srv.chat_count, len(self.waits)), (6, 5))

    def test_client_errors_are_not_retried(self):
        judge = self.judge()
        for status in (400, 401, 403, 404, 422):
            with self.subTest(status=status):
                self.srv.clear()
                self.srv.push(error(status, "nope %d" % status))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.http_status, j.attempts),
                                 ("http_error", status, 1))
                hint = ""
                if status == 404:  # issue 44: a 404 of the chat URL says which URL to give
                    hint = NO_CHAT_HERE
                self.assertEqual(j.error, "http {} from POST {}: nope {}".format(
                    status, self.chat_url, status) + hint)
                self.assertEqual(self.srv.chat_count, 1)
        self.assertEqual(self.waits, [])

    def test_quota_429_is_not_retried(self):
        judge = self.judge()
        cases = [("insufficient_quota", rate_limited("1", quota=True), "quota exhausted, not "
                  "retrying: You exceeded your current quota, please check your plan and "
                  "billing details."),
                 ("Retry-After 3600", rate_limited("3600"), "the server asks to wait 3600 s, "
                  "over the 300 s limit; not retrying: Rate limit reached for requests per "
                  "min (RPM): Limit 3, Used 3, Requested 1.")]
        for name, reply, message in cases:
            with self.subTest(name):
                self.srv.clear()
                self.srv.push(reply)
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.score, j.http_status),
                                 ("quota_exceeded", 0.0, 429))
                self.assertEqual(j.error, "http 429 from POST {}: {}".format(
                    self.chat_url, message))
                self.assertEqual(self.srv.chat_count, 1)
        self.assertEqual(self.waits, [])

    def test_backoff_grows_exponentially_and_is_capped_at_30s(self):
        self.srv.responder = lambda request: error(503, "busy")
        j = self.judge(max_retries=9).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts, len(self.waits)), ("http_error", 10, 9))
        for i, wait in enumerate(self.waits):
            ceiling = min(30.0, 0.5 * 2 ** i)
            self.assertTrue(ceiling / 2 <= wait <= ceiling, (i, self.waits))
        self.assertEqual(self.waits[:6], sorted(self.waits[:6]))


class ToleranceTest(SideBySide, StubTest):
    """Traps 3 and 4: the bodies OpenAI-compatible servers really send."""

    # LLMJudge objects of their own, no main(), no signal: two wait out a timeout, so the
    # six run three at a time (see stub.SideBySide)
    side_by_side = 3

    def test_unusable_replies_fail_with_a_reason(self):
        cases = [
            ("reasoning ate the budget", chat(None, finish_reason="length",
                                              reasoning_content="Okay, the user"),
             "truncated", TRUNCATED),
            ("cut inside <think>", chat("<think>The user wants", finish_reason="length"),
             "truncated", TRUNCATED),
            ("empty content, stop", chat(""), "empty",
             "the judge's reply is empty (finish_reason stop)"),
            ("refusal", chat(None, refusal="I can't help with that."), "refused",
             "the judge refused: I can't help with that."),
            ("content_filter", chat("", finish_reason="content_filter"), "refused",
             "the judge refused: finish_reason content_filter"),
        ]
        judge = self.judge()
        for name, reply, status, message in cases:
            with self.subTest(name):
                self.srv.push(reply)
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.score, j.error), (status, 0.0, message))

    def test_reasoning_is_kept_when_it_ate_the_budget(self):
        # vLLM says reasoning_content; newer versions say reasoning
        for field in ("reasoning_content", "reasoning"):
            with self.subTest(field):
                self.srv.push(chat(None, finish_reason="length", **{field: "Okay, the"}))
                j = self.judge().judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.raw, j.reasoning),
                                 ("truncated", None, "Okay, the"))

    def test_error_bodies_show_the_servers_message(self):
        cases = [("fastapi detail", error(404, "Model gpt-4 not found", style="detail"),
                  "http 404", "Model gpt-4 not found"),
                 ("plain text", error(500, "Internal Server Error", style="text"),
                  "http 500", "Internal Server Error"),
                 ("nginx html", html(502), "http 502", "HTML page: 502 Bad Gateway")]
        for name, reply, status, message in cases:
            with self.subTest(name):
                self.srv.push(reply)
                j = self.judge(max_retries=0).judge(EXAMPLE, OUTPUT)
                self.assertEqual(j.error, "{} from POST {}: {}".format(
                    status, self.chat_url, message))

    def test_oversized_body_is_invalid_response_retried_and_bounded(self):
        self.srv.push(oversized(5000))
        judge = self.judge(max_response_bytes=1000, max_retries=2)
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")
        self.srv.clear()
        self.srv.responder = lambda request: oversized(5000)
        j = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts), ("invalid_response", 3))
        self.assertEqual(j.error, "reply from POST {} is larger than 1000 bytes; refused "
                         "(after 3 tries)".format(self.chat_url))
        self.assertEqual(self.srv.chat_count, 3)

    def test_hang_past_timeout_is_timeout(self):
        self.srv.push(hang(5))
        j = self.judge(timeout=0.3, max_retries=0).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.score), ("timeout", 0.0))
        self.assertEqual(j.error, "timeout: no reply within 0.3 s from POST "
                         + self.chat_url)

    def test_headers_dripped_slower_than_the_timeout_allows_time_out(self):
        # each byte comes well within the timeout, but all of them would take 3 s
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        self.addCleanup(server.close)

        def drip():
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 2:
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        return
                    time.sleep(0.03)
        threading.Thread(target=drip, daemon=True).start()
        judge = minijudge.LLMJudge("http://127.0.0.1:{}".format(server.getsockname()[1]),
                                   model="m", timeout=0.3, max_retries=0)
        started = time.monotonic()
        j = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.status, "timeout")
        self.assertLess(time.monotonic() - started, 0.6 + 0.1)  # at most twice the timeout


def reply_bytes(head, body=b'{"choices": [{"message": {"content": "4"}}]}'):
    return head.encode("latin-1") + b"Content-Length: %d\r\n\r\n" % len(body) + body


class WireTest(StubTest):
    """The keep-alive handler writes requests and reads replies' headers itself: every
    framing servers and proxies use, and one connection for as long as it lasts."""

    def test_chunked_close_delimited_and_100_continue_replies_are_read(self):
        for how in ("chunked", "until_close", "continue"):
            with self.subTest(how):
                # a key of its own is an account of its own: the last framing's Retry-After
                # holds the last account's requests for 2 s, not this one's
                judge = self.judge(max_retries=1, api_key="sk-" + how)
                self.srv.push(framed(chat("Rating: 4"), how))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.score, j.attempts), ("ok", 0.75, 1))
                self.srv.push(framed(rate_limited("2"), how), framed(error(
                    400, "max_tokens is too large"), how))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual(self.waits.pop(), 2.0)
                self.assertEqual((j.status, j.error), ("http_error", "http 400 from POST {}: "
                                 "max_tokens is too large (after 2 tries)".format(
                                     self.chat_url)))

    def test_a_reply_starting_with_a_byte_order_mark_is_read(self):
        self.srv.push(raw(200, b'\xef\xbb\xbf{"choices": [{"message": {"content": "5"}}]}'))
        self.assertEqual(self.judge().judge(EXAMPLE, OUTPUT).score, 1.0)

    def test_the_request_goes_out_as_http_1_1_with_its_headers(self):
        self.judge(api_key=KEY, headers={"X-Team": "eval"}).judge(EXAMPLE, OUTPUT)
        headers = self.srv.requests[-1].headers
        self.assertEqual(headers["host"], "127.0.0.1:{}".format(self.srv.port))
        self.assertEqual(headers["accept-encoding"], "identity")  # never gzip
        self.assertEqual((headers["authorization"], headers["x-team"]),
                         ("Bearer " + KEY, "eval"))
        self.assertEqual(int(headers["content-length"]), len(self.srv.requests[-1].body))

    def test_folded_and_odd_headers_are_read_and_malformed_replies_fail(self):
        judge = self.judge(max_retries=0)
        self.srv.push(wire(reply_bytes("HTTP/1.0 200 OK\r\nX-Folded: one\r\n two\r\n"
                                       "content-type:application/json\r\n")))
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")
        body = b'{"choices": [{"message": {"content": "4"}}]}'  # "²" is no length: read to the end
        self.srv.push(wire(b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n" + body))
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")
        for head, says in [("HTTP/1.1 200 OK\r\n" + "X-A: 1\r\n" * 101,
                            "got more than 100 headers"),
                           ("HTTP/1.1 200 OK\r\nX-Fold: a\r\n" + " b\r\n" * 101,
                            "got more than 100 headers"),  # folded lines count too
                           ("HTTP/2 200 OK\r\n", "HTTP/2"),
                           ("HTTP/1.1 200 OK\r\nX-Long: {}\r\n".format("a" * 70000),
                            "header line")]:
            with self.subTest(says):
                self.srv.push(wire(reply_bytes(head)))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual(j.status, "connection_error")
                self.assertIn(says, j.error)

    def test_interim_replies_before_the_answer_are_skipped(self):
        judge = self.judge(max_retries=0)
        for interim in ("102 Processing", "103 Early Hints"):
            with self.subTest(interim):
                self.srv.push(wire(reply_bytes("HTTP/1.1 {}\r\nLink: </x>\r\n\r\n"
                                               "HTTP/1.1 200 OK\r\n".format(interim))))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.score, j.attempts), ("ok", 0.75, 1))

    def test_a_request_whose_reply_had_begun_is_not_sent_again(self):
        # only a connection closed before any reply byte is safe to resend on
        judge = self.judge(max_retries=0)
        for head in ("HTTP/1.1 5", "HTTP/1.1 200 OK\r\n" + "X-A: 1\r\n" * 101):
            with self.subTest(head[:12]):
                self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")  # kept alive
                sent = self.srv.chat_count
                self.srv.push(wire(head.encode()))
                self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "connection_error")
                self.assertEqual(self.srv.chat_count, sent + 1)

    @unittest.skipUnless(hasattr(signal, "setitimer"), "needs POSIX interval timers")
    def test_a_call_interrupted_while_waiting_leaves_no_reply_for_the_next(self):
        # Ctrl-C, or a notebook's Stop, while the judge waits: the reply arrives later
        # and must not be read as the answer to the next prompt
        def responder(request):
            if "slow" in request.prompt:
                time.sleep(0.3)
            return chat(re.search(r"rate (\d)", request.prompt).group(1))
        self.srv.responder = responder
        judge = self.judge(max_retries=0)

        class Interrupted(BaseException):
            pass

        def interrupt(signum, frame):
            raise Interrupted()
        self.addCleanup(signal.signal, signal.SIGALRM, signal.signal(signal.SIGALRM, interrupt))
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with self.assertRaises(Interrupted):
            judge.judge({"question": "slow: rate 1"}, OUTPUT)
        self.assertTrue(self.srv.wait_replied(1))  # its reply is on the socket now
        self.assertEqual([judge.judge({"question": "rate %d" % r}, OUTPUT).value
                          for r in (5, 4)], [5, 4])

    @unittest.skipUnless(hasattr(signal, "setitimer"), "needs POSIX interval timers")
    def test_timeout_holds_while_signals_interrupt_the_wait(self):
        # a periodic signal (a profiler, a watchdog) must not restart the wait each time
        self.addCleanup(signal.signal, signal.SIGALRM, signal.signal(
            signal.SIGALRM, lambda signum, frame: None))
        self.addCleanup(signal.setitimer, signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        self.srv.push(hang(5))
        started = time.monotonic()
        j = self.judge(timeout=0.3, max_retries=0).judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.status, "timeout")
        self.assertLess(time.monotonic() - started, 0.6 + 0.1)  # at most twice the timeout

    def test_one_connection_per_thread_until_the_server_closes_it(self):
        judge = self.judge()
        for _ in range(5):
            judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual(self.srv.connections, 1)
        self.srv.push(framed(chat("4"), "until_close"))
        judge.judge(EXAMPLE, OUTPUT)
        judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual(self.srv.connections, 2)
        judge.close()
        srv = StubServer(close_after=2).start()  # says "Connection: close" on the 2nd
        self.addCleanup(srv.stop)
        judge = self.closing(minijudge.LLMJudge(srv.url, model="m"))
        judgements = [judge.judge(EXAMPLE, OUTPUT) for _ in range(5)]
        self.assertEqual((srv.connections, srv.chat_count), (3, 5))
        self.assertEqual({(j.status, j.attempts) for j in judgements}, {("ok", 1)})

    def test_a_connection_the_server_closed_while_idle_is_replaced_unseen(self):
        srv = StubServer(idle_timeout=0.1).start()  # llama-server closes idle ones at 5 s
        self.addCleanup(srv.stop)
        judge = self.closing(minijudge.LLMJudge(srv.url, model="m", max_retries=0))
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")
        time.sleep(0.3)
        j = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts, srv.connections), ("ok", 1, 2))


class RedirectAndProxyTest(StubTest):
    def test_redirect_to_another_host_is_not_followed_and_the_key_stays(self):
        # urllib itself follows a 302 for a POST, as a GET that keeps Authorization
        target = StubServer().start()
        self.addCleanup(target.stop)
        location = target.url + "/v1/chat/completions"
        judge = self.judge(api_key=KEY)
        for status in (307, 302):
            with self.subTest(status=status):
                self.srv.clear()
                self.srv.push(redirect(location, status))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.http_status), ("http_error", status))
                self.assertEqual(j.error, "http {} from POST {}: redirected to {}; not "
                                 "followed, so the key stays here: use that URL".format(
                                     status, self.chat_url, location))
                self.assertEqual([r.headers["authorization"] for r in self.srv.requests],
                                 ["Bearer " + KEY])
                self.assertEqual(target.requests, [])

    def test_loopback_judge_bypasses_a_dead_proxy(self):
        # trap: NO_PROXY=localhost does not cover 127.0.0.1
        proxy = self.down_url()
        for name in ("no_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy"):
            os.environ.pop(name, None)
        os.environ.update({"http_proxy": proxy, "HTTP_PROXY": proxy, "ALL_PROXY": proxy,
                           "NO_PROXY": "localhost"})
        j = self.judge(max_retries=0).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.error), ("ok", None))
        self.assertEqual(self.srv.chat_count, 1)


class SecretTest(StubTest):
    """Trap 6: the key belongs in no repr, result, error message or log line."""

    def assertHidden(self, text):
        self.assertNotIn("SECRET", text)

    def test_line_breaks_in_the_key_or_a_header_are_refused_without_quoting_them(self):
        # a key read from a file keeps its newline; a header value could forge others
        for options, says in [
                ({"api_key": "sk-abc\nSECRET-rest"}, "the API key contains spaces, line "
                 "breaks or non-ASCII characters; check where it was read from"),
                ({"headers": {"X-Token": "SECRET\r\nX-Admin: 1"}},
                 "header 'X-Token' has a line break in it")]:
            with self.subTest(says):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(self.srv.url, model="m", **options)
                self.assertEqual(str(caught.exception), says)
        self.assertEqual(self.srv.requests, [])

    def test_key_not_in_repr_str_or_judgements(self):
        judge = self.judge(api_key=KEY)
        self.srv.push(error(401, "bad key " + KEY))
        judgements = [judge.judge(EXAMPLE, OUTPUT), judge.judge(EXAMPLE, OUTPUT)]
        self.assertEqual([j.status for j in judgements], ["http_error", "ok"])
        for text in [repr(judge), str(judge), repr(vars(judge))] + [
                repr(j) for j in judgements] + [repr(j.to_dict()) for j in judgements]:
            self.assertHidden(text)

    def test_key_echoed_by_the_server_shows_as_hidden(self):
        self.srv.push(error(401, "bad key " + KEY))
        j = self.judge(api_key=KEY).judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.error, "http 401 from POST {}: bad key <hidden>".format(
            self.chat_url))

    def test_key_echoed_across_the_message_cut_is_not_leaked(self):
        self.srv.push(error(401, "x" * 488 + KEY))
        j = self.judge(api_key=KEY).judge(EXAMPLE, OUTPUT)
        self.assertEqual(j.status, "http_error")
        self.assertNotIn(KEY[:12], j.error)

    def test_key_not_in_log_records_of_a_retried_call(self):
        self.srv.push(error(503, "overloaded for key " + KEY))
        with self.assertLogs("minijudge", logging.DEBUG) as logs:
            j = self.judge(api_key=KEY).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.attempts), ("ok", 2))
        self.assertIn("<hidden>", logs.output[0])
        for record in logs.records:
            self.assertHidden(record.getMessage())


class BatchTest(StubTest):
    def test_judge_records_returns_input_order_exactly_once(self):
        def responder(request):
            n = int(re.search(r"resp-(\d+)", request.prompt).group(1))
            return chat(str(n % 5 + 1))
        self.srv.responder = responder
        records = [{"question": "q%d" % i, "response": "resp-%d" % i} for i in range(50)]
        out = list(minijudge.judge_records(self.judge(), records, concurrency=8))
        self.assertEqual(len(out), 50)
        for i, (record, j) in enumerate(out):
            self.assertIs(record, records[i])
            self.assertEqual((j.status, j.value), ("ok", i % 5 + 1))
        self.assertEqual(self.srv.chat_count, 50)

    def test_judge_records_stops_early_on_401(self):
        self.srv.responder = lambda request: error(401, "Incorrect API key provided.")
        records = [{"question": "q", "response": "r%d" % i} for i in range(50)]
        out = list(minijudge.judge_records(self.judge(), records, concurrency=8))
        self.assertEqual([r for r, _ in out], records)
        reason = "http 401 from POST {}: Incorrect API key provided.".format(self.chat_url)
        self.assertEqual((out[0][1].status, out[0][1].error), ("http_error", reason))
        last = out[-1][1]
        self.assertEqual((last.status, last.score), ("not_judged", 0.0))
        self.assertEqual(last.error, "not judged: the run stopped: " + reason)
        self.assertLessEqual(self.srv.chat_count, 8)


class ChatTest(StubTest):
    def test_chat_returns_the_reply_fields(self):
        messages = [{"role": "user", "content": "Rate this: 2+2=4"}]
        reply = self.judge().chat(messages)
        self.assertEqual((reply["content"], reply["finish_reason"], reply["model"]),
                         ("4", "stop", "judge-model"))
        self.assertEqual((reply["reasoning"], reply["refusal"]), (None, None))
        self.assertEqual(reply["usage"]["completion_tokens"], 1)
        self.assertEqual(self.srv.requests[-1].json["messages"], messages)

    def test_chat_raises_api_error_with_status(self):
        self.srv.push(error(400, "max_tokens is not supported with this model"))
        with self.assertRaises(minijudge.APIError) as caught:
            self.judge().chat([{"role": "user", "content": "hi"}])
        self.assertEqual(caught.exception.status, 400)


if __name__ == "__main__":
    unittest.main()
