"""Issue 44, replicas: one judge on several servers. A failure the server causes (a 5xx, a
429, a connection dropped) sends the request to another server at no retry's cost, so a
record fails only when every server failed it, its error naming each server's failure; a
4xx that is the request's fault is not sent elsewhere. And a loopback server named under
two of its aliases (localhost, 127.0.0.1, [::1]) is one server, refused as named twice.
Through the command line's main(), in this process: what is tested is how a run spreads
its requests over the servers and what it writes and says, not anything of a process.
"""
import json
import os
import socket
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import (StubServer, StubTestCase, choices_null, drop, error,  # noqa: E402
                  rate_limited, run_main)


class Replicas(StubTestCase):
    """The run and the faulty servers of both classes below (which hold the tests)."""

    def run_cli(self, *argv, records=6):
        """(exit code, records written, stderr) of a run over ``records`` records: main()
        in this process (setUp took the judge's variables out of the environment)."""
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                               for k in range(records)])
        code, _, err = run_main([source, "--judge-model", "judge-model", "--no-preflight",
                                 "-o", self.path("out.jsonl"), *argv])
        written = []
        if os.path.exists(self.path("out.jsonl")):
            with open(self.path("out.jsonl"), encoding="utf-8") as f:
                written = [json.loads(line) for line in f]
        return code, written, err

    def faulty(self, reply):
        srv = StubServer(responder=lambda request: reply).start()
        self.addCleanup(srv.stop)
        return srv


class ReplicaTest(Replicas):
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


class ReplicasHostileTest(Replicas):
    """The hostile pass (issue 44): servers that fail in ways the first tests did not try,
    and URLs a careless user gives. (It subclassed ReplicaTest, whose five tests it ran a
    second time, unchanged.)"""
    SECRET = "sk-hrep-secret-0123456789"

    def summary_servers(self):
        with open(self.path("s.json"), encoding="utf-8") as f:
            return [(s["requests"], s["failures"]) for s in json.load(f)["servers"]]

    def test_a_server_asking_a_wait_past_the_limit_rests_while_the_other_answers(self):
        # a Retry-After over 300 s read as "out of quota": no hop, the record failed and
        # the run stopped, though the other server answered
        slow = self.faulty(rate_limited("100000"))
        code, written, err = self.run_cli("--judge-url", slow.url, "--judge-url", self.srv.url,
                                          "--max-retries", "0", "--concurrency", "1", records=4)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in written], ["ok"] * 4, err)
        self.assertEqual((slow.chat_count, self.srv.chat_count), (1, 4))  # it rests 30 s

    def test_a_server_down_from_the_start_beside_one_failing_once_fails_no_record(self):
        # the refusal ended the request (no retry for "nothing listens"), and its message
        # stopped the run as unreachable, though the other server's 500 was a passing one
        self.srv.push(error(500, "cuda error"))
        down = self.down_url()
        code, written, err = self.run_cli(
            "--judge-url", self.srv.url, "--judge-url", down, "--max-retries", "1",
            "--retry-max-wait", "0.01", "--concurrency", "1", records=4)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in written], ["ok"] * 4, err)
        self.assertEqual(self.srv.chat_count, 5)

    def test_without_retries_a_record_both_failed_fails_alone(self):
        # a server down and the other failing once: the record fails, both named, and the
        # run goes on (it stopped: "connection refused" in the message read as no server)
        for name, fault in (("500", error(500, "cuda error")), ("dropped", drop())):
            with self.subTest(name):
                self.srv.clear()
                self.srv.push(fault)
                down = self.down_url()
                code, written, err = self.run_cli(
                    "--judge-url", self.srv.url, "--judge-url", down, "--max-retries", "0",
                    "--concurrency", "1", "--max-error-rate", "1", records=4)
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_status"] for r in written][1:], ["ok"] * 3, err)
                self.assertTrue(written[0]["judge_error"].startswith(
                    "all 2 servers failed: "), written[0]["judge_error"])
                self.assertIn("; connection refused by POST {}/v1/chat/completions: is the "
                              "server running? (after 2 tries)".format(down),
                              written[0]["judge_error"])

    def test_the_tries_end_the_message_of_every_server(self):
        # "(after N tries)" was put on the last server's error, which then said it in later
        # records' messages too, whatever their tries
        self.srv.responder = lambda request: error(500, "cuda error")
        down = self.down_url()
        code, written, err = self.run_cli(
            "--judge-url", self.srv.url, "--judge-url", down, "--max-retries", "1",
            "--retry-max-wait", "0.01", "--concurrency", "1", "--max-error-rate", "1",
            records=1)
        self.assertEqual(written[0]["judge_error"], "all 2 servers failed: http 500 from POST "
                         "{}/v1/chat/completions: cuda error; connection refused by POST {}/v1/"
                         "chat/completions: is the server running? (after 3 tries)".format(
                             self.srv.url, down))

    def test_a_bad_body_is_named_and_counted_as_its_servers_failure(self):
        # read after the request was counted a success, with the first server's URL
        failing = self.faulty(error(500, "cuda error"))
        bad = self.faulty(choices_null())
        code, written, err = self.run_cli(
            "--judge-url", failing.url, "--judge-url", bad.url, "--max-retries", "0",
            "--concurrency", "1", "--max-error-rate", "1", "--summary", self.path("s.json"),
            records=1)
        self.assertEqual(code, 0, err)
        self.assertIn("; reply from POST {}/v1/chat/completions has no choices: ".format(
            bad.url), written[0]["judge_error"])
        self.assertEqual(self.summary_servers(), [(1, 1), (1, 1)])

    def test_a_key_in_a_url_named_twice_is_hidden(self):
        first = self.srv.url + "?api-key=" + self.SECRET
        again = self.srv.url + "/v1?api-key=" + self.SECRET
        code, written, err = self.run_cli("--judge-url", first, "--judge-url", again)
        self.assertEqual(code, 2)
        self.assertEqual(err, "minijudge: error: judge URL '{0}/v1?api-key=<hidden>' is given "
                              "twice (as {0}/v1/chat/completions?api-key=<hidden>): name each "
                              "server once\n".format(self.srv.url))
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge([first, "htp://h:8000/v1?api-key=" + self.SECRET], model="m")
        self.assertNotIn(self.SECRET, str(caught.exception))

    def test_several_urls_in_one_text_are_refused_at_once(self):
        # "http://a:1,http://b:1" was sent as one URL, retried for seconds: "Name or
        # service not known"
        other = self.start_stub()
        for joined in ("{},{}", "{} {}", "{};{}", "{}/v1,{}/v1"):
            text = joined.format(self.srv.url, other.url)
            with self.subTest(text=text):
                code, written, err = self.run_cli("--judge-url", text)
                self.assertEqual((code, written), (2, []))
                self.assertEqual(err, "minijudge: error: judge URL {!r} holds several URLs: "
                                      "give each server its own --judge-url (a list in "
                                      "Python)\n".format(text))
        with self.assertRaises(minijudge.JudgeError):
            minijudge.LLMJudge(json.dumps([self.srv.url, other.url]), model="m")
        self.assertEqual(self.srv.chat_count + other.chat_count, 0)

    def test_a_server_refusing_the_key_stops_the_run_at_the_preflight(self):
        # its models list's 401 was passed over as "cannot list now": the run started, and
        # stopped at the first record sent there, others judged or not by then
        keyed = StubServer(require_key="sk-other-key").start()
        self.addCleanup(keyed.stop)
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url",
                                   keyed.url + "/v1?api-key=" + self.SECRET, "-o",
                                   self.path("out.jsonl")], env={"LLM_JUDGE_API_KEY": "sk-k"})
        self.assertEqual(code, 1)
        self.assertEqual(err, "minijudge: error: preflight failed: http 401 from GET {}/v1/"
                              "models?api-key=<hidden>: Incorrect API key provided.\n".format(
                                  keyed.url))
        self.assertEqual(self.srv.chat_count + keyed.chat_count, 0)

    def test_a_hung_server_costs_the_preflight_one_timeout(self):
        # its models list timed out, then its check of the model waited the timeout again
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        accepted = []  # connections taken, never answered

        def take():
            try:
                while True:
                    accepted.append(listener.accept()[0])
            except OSError:  # closed
                pass
        thread = threading.Thread(target=take, daemon=True)
        thread.start()
        self.addCleanup(lambda: [c.close() for c in accepted])
        self.addCleanup(listener.close)
        self.addCleanup(thread.join)
        self.addCleanup(listener.shutdown, socket.SHUT_RDWR)  # wakes accept(), as close() does not
        hung = "http://127.0.0.1:%d" % listener.getsockname()[1]
        code, out, err = run_main(["--check", "--judge-url", hung, "--judge-url",
                                   self.srv.url, "--judge-model", "judge-model",
                                   "--timeout", "0.3"])
        self.assertEqual(code, 0, err)
        self.assertEqual(len(accepted), 1)
        # named second, it failed the check of its model, then the run's first record
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 2)
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url", hung,
                                   "--judge-model", "judge-model", "--timeout", "0.3",
                                   "--concurrency", "1", "-o", self.path("out.jsonl")])
        self.assertEqual(code, 0, err)
        self.assertEqual(len(accepted), 2)


if __name__ == "__main__":
    import unittest
    unittest.main()
