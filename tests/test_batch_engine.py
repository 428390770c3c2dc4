"""The tests' batch engine against a real loopback StubServer: one line per request in
OpenAI's output shape, the three injected faults, the input checks OpenAI makes, and a
shuffle that keeps every line."""
import contextlib
import io
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from batch_engine import (SERVER_ERROR, main, malformed_lines, run_batch,  # noqa: E402
                          vllm_error_line)
from stub import StubTestCase, error, html  # noqa: E402

IDS = ["k-%d" % i for i in range(6)]


def request(custom_id, model="judge-model", text=None):
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "temperature": 0,
                     "messages": [{"role": "user", "content": text or custom_id}]}}


class BatchEngineTest(StubTestCase):

    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: [[4]]"
        self.url = self.srv.url + "/v1/chat/completions"
        self.inputs = [self.write_jsonl("in.000.jsonl", [request(i) for i in IDS[:4]]),
                       self.write_jsonl("in.001.jsonl", [request(i) for i in IDS[4:]])]
        self.out = self.path("out.jsonl")

    def lines(self):
        with open(self.out, encoding="utf-8") as f:
            return [json.loads(text) for text in f]

    def test_a_line_per_request_in_openais_shape(self):
        self.assertEqual(run_batch(self.inputs, self.out, self.url), 6)
        lines = self.lines()
        self.assertEqual([line["custom_id"] for line in lines], IDS)
        self.assertEqual([r.prompt for r in self.srv.requests], IDS)
        self.assertEqual(self.srv.requests[0].json, request("k-0")["body"])
        for line in lines:
            self.assertEqual(list(line), ["id", "custom_id", "response", "error"])
            self.assertRegex(line["id"], r"^batch_req_[0-9a-f]{24}$")
            self.assertIsNone(line["error"])
            response = line["response"]
            self.assertEqual(list(response), ["status_code", "request_id", "body"])
            self.assertEqual(response["status_code"], 200)
            self.assertRegex(response["request_id"], r"^[0-9a-f]{32}$")
            self.assertEqual(response["body"]["object"], "chat.completion")
            self.assertEqual(response["body"]["choices"][0]["message"]["content"],
                             "Rating: [[4]]")
        self.assertEqual(len({line["id"] for line in lines}), 6)

    def test_the_servers_http_error_is_a_line_with_its_status_and_body(self):
        self.srv.push(error(400, "maximum context length is 8192 tokens",
                            code="context_length_exceeded"), html(502))
        run_batch(self.inputs[:1], self.out, self.url)
        first, second = self.lines()[:2]
        self.assertEqual(first["response"]["status_code"], 400)
        self.assertEqual(first["response"]["body"], {"error": {
            "message": "maximum context length is 8192 tokens",
            "type": "invalid_request_error", "param": None,
            "code": "context_length_exceeded"}})
        self.assertIsNone(first["error"])
        self.assertEqual(second["response"]["status_code"], 502)
        self.assertIn("<h1>502 Bad Gateway</h1>", second["response"]["body"])

    def test_injected_errors_failures_and_missing_lines(self):
        run_batch(self.inputs, self.out, self.url, errors={"k-1"},
                  failures={"k-2": "batch_expired", "k-3": "batch_cancelled"},
                  missing={"k-4"})
        lines = {line["custom_id"]: line for line in self.lines()}
        self.assertEqual(sorted(lines), ["k-0", "k-1", "k-2", "k-3", "k-5"])
        self.assertEqual([r.prompt for r in self.srv.requests], ["k-0", "k-5"])
        self.assertEqual(lines["k-1"]["response"]["status_code"], 500)
        self.assertEqual(lines["k-1"]["response"]["body"], SERVER_ERROR)
        self.assertIsNone(lines["k-1"]["error"])
        self.assertEqual(lines["k-2"]["response"], None)
        self.assertEqual(lines["k-2"]["error"], {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window "
                       "expired."})
        self.assertEqual(lines["k-3"]["error"]["code"], "batch_cancelled")

    def test_failures_given_as_ids_are_expired(self):
        run_batch(self.inputs, self.out, self.url, failures=["k-0"])
        self.assertEqual(self.lines()[0]["error"]["code"], "batch_expired")
        self.assertEqual(self.srv.chat_count, 5)

    def test_shuffle_keeps_every_line_and_is_repeatable(self):
        run_batch(self.inputs, self.out, self.url, shuffle_seed=3)
        first = self.lines()
        run_batch(self.inputs, self.out, self.url, shuffle_seed=3)
        again = self.lines()
        order = [line["custom_id"] for line in first]
        self.assertEqual(sorted(order), IDS)
        self.assertNotEqual(order, IDS)
        self.assertEqual([line["custom_id"] for line in again], order)

    def test_input_openai_would_refuse_raises_before_anything_is_sent(self):
        cases = [
            ("repeated custom_id", [request("a"), request("a")],
             "in.jsonl line 2: custom_id 'a' repeats in.jsonl line 1"),
            ("second model", [request("a"), request("b", model="other")],
             "in.jsonl line 2: model 'other', but in.jsonl line 1 has 'judge-model'; a batch "
             "file holds one model"),
            ("another endpoint", [dict(request("a"), url="/v1/embeddings")],
             "in.jsonl line 1: expected POST /v1/chat/completions; got POST "
             "/v1/embeddings"),
            ("no custom_id", [{"method": "POST"}], "in.jsonl line 1: no custom_id"),
        ]
        for name, items, message in cases:
            with self.subTest(name):
                path = self.write_jsonl("in.jsonl", items)
                with self.assertRaises(ValueError) as caught:
                    run_batch([path], self.out, self.url)
                self.assertEqual(str(caught.exception), message.replace("in.jsonl", path))
        self.assertEqual(self.srv.requests, [])

    def test_panels_may_mix_models_when_asked(self):
        path = self.write_jsonl("in.jsonl", [request("a"), request("b", model="other")])
        self.assertEqual(run_batch([path], self.out, self.url, single_model=False), 2)

    def test_malformed_lines_are_each_wrong_in_one_way(self):
        bad = dict(malformed_lines("k-0"))
        self.assertEqual(list(bad), ["not_json", "no_custom_id", "unknown_custom_id",
                                     "not_a_completion"])
        with self.assertRaises(ValueError):
            json.loads(bad["not_json"])
        self.assertNotIn("custom_id", json.loads(bad["no_custom_id"]))
        self.assertNotIn(json.loads(bad["unknown_custom_id"])["custom_id"], IDS)
        line = json.loads(bad["not_a_completion"])
        self.assertEqual(line["custom_id"], "k-0")
        self.assertEqual(line["response"]["body"], {"object": "list", "data": []})

    def test_vllm_error_line_keeps_the_message_in_error_and_no_body(self):
        line = vllm_error_line("k-0", "Request must not be sent in stream mode")
        self.assertEqual(list(line), ["id", "custom_id", "response", "error"])
        self.assertRegex(line["id"], r"^vllm-[0-9a-f]{32}$")
        self.assertEqual((line["response"]["status_code"], line["response"]["body"]),
                         (400, None))
        self.assertEqual(line["error"], "Request must not be sent in stream mode")

    def test_command_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(self.inputs + ["-o", self.out, "--url", self.url])
        self.assertEqual((code, err.getvalue()),
                         (0, "batch_engine.py: 6 lines to %s\n" % self.out))
        self.assertEqual(len(self.lines()), 6)

    def test_command_line_names_a_bad_input(self):
        path = self.write_jsonl("in.jsonl", [request("a"), request("a")])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main([path, "-o", self.out, "--url", self.url])
        self.assertEqual((code, err.getvalue()), (1, "batch_engine.py: error: %s line 2: "
                         "custom_id 'a' repeats %s line 1\n" % (path, path)))


if __name__ == "__main__":
    unittest.main()
