"""Issue 44, replicas: one judge on several servers. A failure the server causes (a 5xx, a
429, a connection dropped) sends the request to another server at no retry's cost, so a
record fails only when every server failed it, its error naming each server's failure; a
4xx that is the request's fault is not sent elsewhere. And a loopback server named under
two of its aliases (localhost, 127.0.0.1, [::1]) is one server, refused as named twice.
Through the real command line, in a subprocess.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
from stub import (JUDGE_ENV, PYTHON, StubServer, StubTestCase, drop, error,  # noqa: E402
                  rate_limited)


class ReplicaTest(StubTestCase):
    def run_cli(self, *argv, records=6):
        """(exit code, records written, stderr) of a run over ``records`` records."""
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                               for k in range(records)])
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        run = subprocess.run([*PYTHON, "-m", "minijudge", source, "--judge-model",
                              "judge-model", "--no-preflight", "-o", self.path("out.jsonl"),
                              *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60)
        written = []
        if os.path.exists(self.path("out.jsonl")):
            with open(self.path("out.jsonl"), encoding="utf-8") as f:
                written = [json.loads(line) for line in f]
        return run.returncode, written, run.stderr

    def faulty(self, reply):
        srv = StubServer(responder=lambda request: reply).start()
        self.addCleanup(srv.stop)
        return srv

    def test_a_server_failing_every_request_fails_no_record(self):
        # one of two servers answering 500 to everything failed half the records at
        # --max-retries 0: a 500 spent a retry, though another server was up
        for name, reply in (("500", error(500, "cuda error")), ("503", error(503, "loading")),
                            ("429 without Retry-After", rate_limited(None)),
                            ("connection dropped", drop())):
            with self.subTest(name):
                self.srv.clear()
                bad = self.faulty(reply)
                code, written, err = self.run_cli(
                    "--judge-url", bad.url, "--judge-url", self.srv.url, "--max-retries", "0",
                    "--concurrency", "2")
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_status"] for r in written], ["ok"] * 6, err)
                self.assertGreater(bad.chat_count, 0)
                self.assertEqual(self.srv.chat_count, 6)

    def test_a_record_fails_when_every_server_failed_it_naming_each(self):
        first, second = self.faulty(error(500, "cuda error")), self.faulty(error(503, "oom"))
        code, written, err = self.run_cli("--judge-url", first.url, "--judge-url", second.url,
                                          "--max-retries", "0", "--concurrency", "1",
                                          records=1)
        self.assertEqual(code, 1, err)
        self.assertEqual(written[0]["judge_error"], "all 2 servers failed: http 500 from POST "
                         "{}/v1/chat/completions: cuda error; http 503 from POST {}/v1/chat/"
                         "completions: oom (after 2 tries)".format(first.url, second.url))
        self.assertEqual((first.chat_count, second.chat_count), (1, 1))

    def test_a_request_refused_for_its_own_fault_is_not_sent_elsewhere(self):
        for status in (400, 422):
            with self.subTest(status=status):
                self.srv.clear()
                bad = self.faulty(error(status, "messages: field required"))
                code, written, err = self.run_cli(
                    "--judge-url", bad.url, "--judge-url", self.srv.url, "--max-retries", "0",
                    "--concurrency", "1", "--max-error-rate", "1", records=4)
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_status"] for r in written],
                                 ["http_error", "ok"] * 2)  # the servers in turn
                self.assertEqual(written[0]["judge_error"], "http {} from POST {}/v1/chat/"
                                 "completions: messages: field required".format(status, bad.url))
                self.assertEqual((bad.chat_count, self.srv.chat_count), (2, 2))

    def test_a_loopback_server_under_two_of_its_names_is_named_twice(self):
        port = self.srv.port
        for first, again in (("http://127.0.0.1:%d" % port, "http://localhost:%d" % port),
                             ("http://localhost:%d/v1" % port, "http://[::1]:%d/v1" % port),
                             ("http://127.0.0.1:%d" % port, "http://127.0.0.2:%d/" % port)):
            with self.subTest(again=again):
                code, written, err = self.run_cli("--judge-url", first, "--judge-url", again)
                self.assertEqual((code, written), (2, []))
                self.assertEqual(err, "minijudge: error: judge URL {!r} is given twice (as {}):"
                                      " name each server once\n".format(
                                          again, again.rstrip("/").replace("/v1", "") +
                                          "/v1/chat/completions"))
        self.assertEqual(self.srv.chat_count, 0)

    def test_loopback_servers_on_two_ports_are_two(self):
        other = self.start_stub()
        code, written, err = self.run_cli("--judge-url", "http://localhost:%d" % self.srv.port,
                                          "--judge-url", "http://127.0.0.1:%d" % other.port,
                                          "--concurrency", "1", records=4)
        self.assertEqual(code, 0, err)
        self.assertEqual((self.srv.chat_count, other.chat_count), (2, 2))


if __name__ == "__main__":
    import unittest
    unittest.main()
