"""Real servers, real behaviour (issue 18): each server's quirk reproduced by the loopback
stub (status, body, timing) and met by the command line: main() in this process, and in a
real subprocess where a process matters (connections held or closed by it).

llama-cpp-python refuses response_format json_schema with a 500; llama-server's grammar
puts whitespace inside its JSON, serves requests on a few HTTP threads, answers any model
name, and keeps connections open and silent while it shuts down; a LiteLLM proxy whose
backend is down answers every request with the same 500.
"""
import json
import os
import socketserver
import subprocess
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_servers` finds stub too
import minijudge  # noqa: E402
import stub  # noqa: E402
from stub import (PYTHON, StubServer, StubTestCase, chat, error, hang, rate_limited, raw,  # noqa: E402
                  run_main)

# llama_cpp/server/errors.py wraps any exception, a request that fails validation too, as
# a 500 whose message is str(exc): FastAPI's validation errors, then where they were raised
LLAMA_CPP_PYTHON_500 = error(
    500, "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/usr/lib/python3.12/site-"
    "packages/llama_cpp/server/app.py\", line 509, in create_chat_completion\n    POST "
    "/v1/chat/completions", type="internal_server_error")
# what LiteLLM's proxy answers for each request while the backend it routes to is down
LITELLM_DOWN = raw(500, json.dumps({"error": {
    "message": "litellm.APIConnectionError: APIConnectionError: OpenAIException - Connection "
               "error.\nReceived Model Group=judge-model\nAvailable Model Group Fallbacks=None",
    "type": None, "param": None, "code": "500"}}))
LLAMA_SERVER_MODEL = "qwen2.5-0.5b-instruct-q4_k_m.gguf"


def chats(srv):
    return [r for r in list(srv.requests) if r.path.endswith("/chat/completions")]


class ServerTest(StubTestCase):
    SUBPROCESS = False  # main() in this process: the same output, ~0.2 s quicker a run

    def cli(self, *argv, timeout=60):
        """(exit code, stdout, stderr) of the command line against this stub."""
        argv = ["--judge-url", self.srv.url, "--retry-max-wait", "0"] + list(argv)
        if not self.SUBPROCESS:
            return run_main(argv)
        proc = subprocess.run([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                              cwd=REPO, env=dict(os.environ),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def judged(self, *argv, n=3, **options):
        """(exit code, output records, stderr) of a run over n records."""
        source = self.write_jsonl("in.jsonl", [{"id": i, "question": "q%d" % i,
                                                "answer": "a%d" % i, "response": "r%d" % i}
                                               for i in range(n)])
        code, out, err = self.cli(*argv, source, **options)
        return code, [json.loads(line) for line in out.splitlines()], err


class LlamaCppPythonTest(ServerTest):
    def test_a_500_naming_response_format_is_adapted_once_not_retried(self):
        self.srv.responder = lambda request: (
            LLAMA_CPP_PYTHON_500 if "response_format" in request.json else chat("4"))
        code, out, err = self.judged("--structured", "--max-retries", "2", n=32)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 32)
        refused = [r for r in chats(self.srv) if "response_format" in r.json]
        # at most one per request in flight (8) when the first 500 came back, none retried
        self.assertLessEqual(len(refused), 8)
        self.assertEqual(len(chats(self.srv)), 32 + len(refused))
        self.assertIn("  adapted: response_format dropped: the replies are parsed as text (the "
                      "server said: ", err)


class GrammarWhitespaceTest(ServerTest):
    # llama-server's JSON grammar lets the model put any whitespace between the tokens
    CASES = [("rating", '{\n\n\t"rating"\n:\n4\n}', 4, 0.75),
             ("binary", '{"correct"\n:\ntrue}', True, 1.0),
             ("binary", '{\n\n\t"correct"\n\n:\n\n\tfalse\n}', False, 0.0)]

    def test_the_parsers_read_one_json_object_whatever_its_whitespace(self):
        read = {"rating": minijudge.parse_rating, "binary": minijudge.parse_binary}
        for mode, reply, value, _ in self.CASES:
            with self.subTest(reply=reply):
                self.assertEqual(read[mode](reply), value)
        for reply, value in [('{\n  "reasoning": "It is not correct.",\n  "correct": true\n}',
                              True), ('{"reasoning": "Rating: 2 at first", "rating": 5}', 5)]:
            with self.subTest(reply=reply):  # the key named, not words inside a value
                read_by = minijudge.parse_binary if "correct" in reply else minijudge.parse_rating
                self.assertEqual(read_by(reply), value)

    def test_structured_replies_with_grammar_whitespace_are_judged(self):
        for mode, reply, value, score in self.CASES:
            with self.subTest(reply=reply):
                self.srv.content = reply
                code, out, err = self.judged("--mode", mode, "--structured", n=2)
                self.assertEqual(code, 0, err)
                self.assertEqual([(r["judge_status"], r["judge_value"], r["judge_score"])
                                  for r in out], [("ok", value, score)] * 2)


class _OneThread(stub._HTTPServer):
    """llama-server's few HTTP threads, at the extreme: one connection at a time."""
    process_request = socketserver.TCPServer.process_request


class FewHTTPThreadsTest(ServerTest):
    SUBPROCESS = True  # the connections a real process holds open or closes

    def start_stub(self):
        with mock.patch.object(stub, "_HTTPServer", _OneThread):
            srv = StubServer().start()
        self.addCleanup(srv.stop)
        return srv

    def test_the_preflight_connection_is_closed_before_the_run(self):
        # the server serves the workers' connection only once the preflight's has ended:
        # kept open, it would hold the one thread and every request would time out
        code, out, err = self.judged("--concurrency", "1", "--timeout", "2",
                                     "--max-retries", "0")
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 3, err)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.connections, 2)  # the preflight's, then the worker's
        self.assertEqual([r.method for r in self.srv.requests], ["GET"] + ["POST"] * 3)


class ModelNameTest(ServerTest):
    def test_llama_server_answering_any_name_with_its_own_is_warned_about(self):
        self.srv.models = (LLAMA_SERVER_MODEL,)
        self.srv.responder = lambda request: chat("4", model=LLAMA_SERVER_MODEL)
        code, out, err = self.judged("--judge-model", "gpt-4o-mini")
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 3)
        self.assertIn("minijudge: warning: model 'gpt-4o-mini' is not among those GET {}/v1/"
                      "models lists ({}); the server answered anyway, as {!r}\n".format(
                          self.srv.url, LLAMA_SERVER_MODEL, LLAMA_SERVER_MODEL), err)

    def test_llama_cpp_python_echoing_any_name_is_warned_about(self):
        code, out, err = self.judged("--judge-model", "gpt-4o-mini")
        self.assertEqual(code, 0, err)
        self.assertIn("minijudge: warning: model 'gpt-4o-mini' is not among those GET {}/v1/"
                      "models lists (judge-model); the server answered anyway\n".format(
                          self.srv.url), err)

    def test_a_listed_model_gets_no_warning(self):
        code, out, err = self.judged("--judge-model", "judge-model")
        self.assertEqual((code, [r["judge_status"] for r in out]), (0, ["ok"] * 3), err)
        self.assertNotIn("warning", err)

    def test_check_with_several_models_and_none_given_lists_them(self):
        self.srv.models = ("judge-a", "judge-b")
        code, out, err = self.cli("--check")
        self.assertEqual((code, err), (0, ""))
        self.assertIn("models: judge-a, judge-b\n", out)
        self.assertIn("model: none given: pass one of these with --judge-model\n", out)
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_run_with_several_models_and_none_given_stops_with_the_list(self):
        self.srv.models = ("judge-a", "judge-b")
        code, out, err = self.judged()
        self.assertEqual((code, out), (1, []))
        self.assertIn("lists judge-a, judge-b: pass one with model= or --judge-model", err)
        self.assertEqual(self.srv.chat_count, 0)


class RepeatedErrorTest(ServerTest):
    def test_the_same_server_error_on_the_first_records_stops_the_run(self):
        for name, reply, said, retries in [
                ("LiteLLM, backend down", LITELLM_DOWN, "litellm.APIConnectionError", 1),
                ("always 429", rate_limited("0"), "Rate limit reached", 0)]:
            with self.subTest(name):
                self.srv.clear()
                self.srv.responder = lambda request: reply
                code, out, err = self.judged("--max-retries", retries, "--concurrency", "2",
                                             n=20)
                self.assertEqual(code, 1, err)
                statuses = [r["judge_status"] for r in out]
                failed = statuses.count("http_error")
                self.assertTrue(5 <= failed <= 5 + 2, statuses)  # and those in flight
                self.assertEqual(statuses, ["http_error"] * failed + ["not_judged"] * (
                    20 - failed))
                self.assertEqual(self.srv.chat_count, (1 + retries) * failed)
                stop = out[-1]["judge_error"]
                self.assertTrue(stop.startswith("not judged: the run stopped: 5 records failed "
                                                "with the same error and none was judged: "
                                                "http "), stop)
                self.assertIn(said, stop)
                self.assertIn("  first not_judged: " + stop[:80], err)

    def test_a_record_judged_first_keeps_the_run_going(self):
        self.srv.push("4")
        self.srv.responder = lambda request: LITELLM_DOWN
        code, out, err = self.judged("--max-retries", "0", "--concurrency", "1", n=8)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] + ["http_error"] * 7, err)

    def test_check_sends_one_chat_and_max_retries_bounds_it(self):
        self.srv.responder = lambda request: LITELLM_DOWN  # its model list still works
        code, out, err = self.cli("--check", "--max-retries", "1")
        self.assertEqual(code, 1, err)
        self.assertTrue(err.startswith("minijudge: error: preflight failed: http 500 from POST "
                                       "{}/v1/chat/completions: litellm.APIConnectionError: "
                                       .format(self.srv.url)), err)
        self.assertIn("(after 2 tries)", err)
        self.assertEqual(self.srv.chat_count, 2)

    def test_a_model_not_listed_is_tried_once_before_the_run(self):
        self.srv.responder = lambda request: LITELLM_DOWN
        code, out, err = self.judged("--judge-model", "openai/gpt-4o-mini", "--max-retries", "0")
        self.assertEqual((code, out), (1, []))
        self.assertTrue(err.startswith("minijudge: error: preflight failed: http 500 from POST "
                                       "{}/v1/chat/completions: litellm.APIConnectionError: "
                                       .format(self.srv.url)), err)
        self.assertEqual(self.srv.chat_count, 1)


class ShutdownTest(ServerTest):
    SUBPROCESS = True  # a real process against a server going away mid-run, end to end

    def test_a_server_silent_while_it_shuts_down_is_a_timeout_not_a_refusal(self):
        srv = self.srv

        def responder(request):
            if srv.chat_count < 3:
                return None
            # llama-server on SIGTERM: no new connections; this one stays open and silent
            srv.stop_listening()  # the port held: the retry is refused, not answered
            return hang(30)
        srv.responder = responder
        code, out, err = self.judged("--concurrency", "1", "--timeout", "0.5", "--max-retries",
                                     "1", "--restart-wait", "0", n=5)
        self.assertEqual(code, 1, err)
        self.assertEqual([r["judge_status"] for r in out][:3], ["ok", "ok", "timeout"], err)
        error_text = out[2]["judge_error"]
        where = "POST {}/v1/chat/completions".format(srv.url)
        self.assertTrue(error_text.startswith("timeout: no reply within 0.5 s from {}; then "
                                              "connection refused by {}".format(where, where)),
                        error_text)
        self.assertTrue(error_text.endswith("(after 2 tries)"), error_text)


if __name__ == "__main__":
    unittest.main()
