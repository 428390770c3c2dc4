"""The network turns hostile: an untrusted certificate, a judge that restarts mid-run, a
proxy that is down or drips its reply, an extra reply on a kept-alive connection, a
compressed or completions-style body. Every server here listens on 127.0.0.1; a judge
named `judge.invalid` is only ever reached through a loopback proxy (the stub), and the
.invalid domain never resolves, so no request can leave the machine.

    python -m unittest tests.test_hostile_network -v
"""
import gzip
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_hostile_network` finds stub
import minijudge  # noqa: E402
from stub import (PYTHON, JUDGE_ENV, SideBySide, StubServer, StubTestCase, raw,  # noqa: E402
                  self_signed_cert, wire)

EXAMPLE, OUTPUT = {"question": "2+2?"}, {"response": "4"}
CA_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def reply_bytes(content, *, status="200 OK"):
    body = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        status.encode(), len(body)) + body


def completion(**choice):
    return {"object": "chat.completion", "model": "m", "choices": [dict(index=0, **choice)]}


def clear_network_environ():
    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name in CA_ENV:
            del os.environ[name]


class NetworkTest(StubTestCase):
    """A stub per test, and no judge, proxy or CA settings from the environment."""

    def setUp(self):
        super().setUp()
        if not getattr(self, "_in_thread", False):  # SideBySide: its class did it for all
            clear_network_environ()

    def records(self, n):
        return self.write_jsonl("in.jsonl", [
            {"id": i, "question": "q%d" % i, "response": "r%d" % i} for i in range(n)])

    def cli(self, *argv, env=None, limit=60):
        """``python -m minijudge`` in a subprocess: (exit code, records, stderr, seconds)."""
        return self.cli_all([(argv, env)], limit=limit)[0]

    def cli_all(self, runs, *, limit=60):
        """cli() of each (argv, env), side by side: the interpreters start on both cores."""
        started, procs = time.monotonic(), []
        for argv, env in runs:
            env = dict({k: v for k, v in os.environ.items() if k not in JUDGE_ENV},
                       **(env or {}))
            procs.append(subprocess.Popen(
                [*PYTHON, "-m", "minijudge"] + [str(a) for a in argv], cwd=REPO,
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        results = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                for each in procs:
                    each.kill()
                    each.communicate()
                raise
            results.append((proc.returncode, [json.loads(line) for line in
                                              out.decode().splitlines()],
                            err.decode(), time.monotonic() - started))
        return results

    def judge(self, url=None, **options):
        options.setdefault("model", "judge-model")
        options.setdefault("sleep", lambda seconds: None)
        judge = minijudge.LLMJudge(url or self.srv.url, **options)
        self.addCleanup(judge.close)
        return judge


class NetworkSideBySide(SideBySide, NetworkTest):
    """NetworkTest's tests run side by side (see stub.SideBySide): subprocesses and
    LLMJudge objects of their own, no main() in this process."""

    @classmethod
    def clear_environ(cls):
        super().clear_environ()
        clear_network_environ()


class UntrustedCertificateTest(NetworkSideBySide):
    """An internal CA nobody told Python about: no retry helps, the user must act."""

    side_by_side = 2  # subprocesses and openssl: one a core

    def setUp(self):
        super().setUp()
        pair = self_signed_cert(self.tmp)
        if pair is None:
            self.skipTest("needs the openssl command to make a certificate")
        self.cert, self.pair = pair[0], pair
        self.tls = StubServer(tls=pair).start()
        self.addCleanup(self.tls.stop)

    def test_an_untrusted_certificate_stops_at_once_naming_the_host_and_the_fix(self):
        # two runs side by side, a server each, so each counts its own connections
        second = StubServer(tls=self.pair).start()
        self.addCleanup(second.stop)
        flag_sets, servers, source = ([], ["--no-preflight", "--concurrency", "1"]), \
            (self.tls, second), self.records(5)
        runs = self.cli_all([(("--judge-url", tls.url, "--judge-model", "judge-model",
                                *flags, source), None) for tls, flags in zip(servers, flag_sets)])
        for flags, tls, (code, out, err, seconds) in zip(flag_sets, servers, runs):
            with self.subTest(flags=flags):
                self.assertEqual(code, 1, err)
                self.assertLess(seconds, 5.0, err)  # 21 s of retries before
                self.assertEqual(tls.connections, 1, err)  # one try, no retry
                self.assertEqual(tls.requests, [])  # nothing was sent in clear
                self.assertIn("the certificate of 127.0.0.1 is not trusted", err)
                self.assertIn("SSL_CERT_FILE=/path/ca.pem", err)
                self.assertIn("REQUESTS_CA_BUNDLE", err)
                if flags:
                    self.assertEqual([r["judge_status"] for r in out],
                                     ["connection_error"] + ["not_judged"] * 4)

    def test_the_ca_named_by_any_of_the_usual_variables_is_trusted(self):
        names, source = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"), \
            self.records(3)
        runs = self.cli_all([(("--judge-url", self.tls.url, source), {name: self.cert})
                             for name in names])
        for name, (code, out, err, _) in zip(names, runs):
            with self.subTest(name):
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_status"] for r in out], ["ok"] * 3)

    def test_a_ca_bundle_that_cannot_be_read_is_a_usage_error(self):
        missing = self.path("no-such-ca.pem")
        code, out, err, _ = self.cli("--judge-url", self.tls.url, self.records(1),
                                     env={"REQUESTS_CA_BUNDLE": missing})
        self.assertEqual((code, out), (2, []))
        self.assertEqual(err, "minijudge: error: REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE names "
                         "{}, not a readable file of CA certificates: No such file or "
                         "directory\n".format(missing))


class RestartTest(NetworkSideBySide):
    """The judge goes away after it has answered: wait for it, within a bound."""

    side_by_side = 4  # mostly waiting for the judge to come back: all four at once

    def restart_after(self, chats, down):
        """Stop the stub after `chats` chat requests; bring it back on the same port
        after `down` seconds (None: never). Returns {"served": chats served before}."""
        srv, port, seen = self.srv, self.srv.port, {}

        def cycle():
            deadline = time.monotonic() + 30
            while srv.chat_count < chats and time.monotonic() < deadline:
                time.sleep(0.005)
            srv.stop(hold_port=True)  # while down, no other process's server takes it
            seen["served"] = srv.chat_count
            if down is not None:
                time.sleep(down)
                srv.start(port=port)
        thread = threading.Thread(target=cycle, daemon=True)
        thread.start()
        self.addCleanup(thread.join)
        return seen

    def test_a_judge_that_restarts_mid_run_loses_no_record(self):
        self.srv.delay = 0.01  # 60 records take 0.3 s: the restart comes mid-run
        seen = self.restart_after(10, down=1.0)  # tests/HOSTILE.md: "a 1 s restart"
        code, out, err, _ = self.cli("--judge-url", self.srv.url, "--concurrency", "2",
                                     self.records(60))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["id"] for r in out], list(range(60)))
        self.assertEqual({r["judge_status"] for r in out}, {"ok"}, err)
        self.assertLess(seen["served"], 60)
        self.assertGreaterEqual(self.srv.chat_count, 60)  # the rest after the restart

    def test_a_judge_that_never_comes_back_stops_after_the_window(self):
        self.srv.delay = 0.02
        seen = self.restart_after(5, down=None)
        code, out, err, seconds = self.cli("--judge-url", self.srv.url, "--concurrency", "2",
                                           "--restart-wait", "0.3", self.records(200))
        self.assertEqual(code, 1, err)
        self.assertLess(seconds, 15)
        self.assertEqual([r["id"] for r in out], list(range(200)))
        statuses = [r["judge_status"] for r in out]
        # the replies in flight when it stopped (2 at most) were lost with it
        self.assertTrue(seen["served"] - 2 <= statuses.count("ok") <= seen["served"])
        self.assertIn("not_judged", statuses)
        chat_url = self.srv.url + "/v1/chat/completions"
        refused = "connection refused by POST {}: is the server running? it answered " \
                  "before, then refused connections for 0.3 s (--restart-wait)".format(chat_url)
        self.assertIn(refused, err)
        errors = {r["judge_error"] for r in out if r["judge_status"] == "connection_error"}
        self.assertTrue(errors and all(e.startswith(refused) for e in errors), errors)

    def test_the_window_is_the_judges_not_each_requests(self):
        judge = self.judge(restart_wait=0.2, sleep=time.sleep)
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "ok")
        self.srv.stop(hold_port=True)  # refused, not answered by another process's server
        started = time.monotonic()
        first = judge.judge(EXAMPLE, OUTPUT)
        waited = time.monotonic() - started
        self.assertEqual(first.status, "connection_error")
        self.assertTrue(0.2 <= waited < 2.2, waited)
        started = time.monotonic()
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).status, "connection_error")
        self.assertLess(time.monotonic() - started, 0.3)  # the window is spent already

    def test_a_server_never_seen_alive_is_refused_at_once(self):
        code, out, err, seconds = self.cli("--judge-url", self.down_url(), "--judge-model", "m",
                                           "--no-preflight", self.records(3))
        self.assertEqual(code, 1, err)
        self.assertLess(seconds, 5)
        self.assertEqual([r["judge_status"] for r in out][:1], ["connection_error"])


class ProxyTest(NetworkSideBySide):
    """http_proxy in the environment: the stub plays the proxy."""

    side_by_side = 3  # a drip waits out its timeout; the others are quick: three at once

    def test_a_proxy_that_is_down_is_named(self):
        proxy = self.down_url()
        code, out, err, seconds = self.cli("--judge-url", "http://judge.invalid:80/v1",
                                           self.records(2), env={"http_proxy": proxy})
        self.assertEqual((code, out), (1, []))
        self.assertEqual(err, "minijudge: error: preflight failed: connection refused by "
                         "the proxy {} (from http_proxy) for GET http://judge.invalid:80/v1/"
                         "models: is the proxy running?\n".format(proxy))

    def test_timeout_bounds_a_reply_whose_headers_drip_through_a_proxy(self):
        head = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: 1\r\n" * 20
        self.srv.responder = lambda request: wire(*[bytes([b]) for b in head],
                                                  interval=0.05)
        code, out, err, seconds = self.cli(
            "--judge-url", "http://judge.invalid:80/v1", "--timeout", "0.5",
            "--max-retries", "0", self.records(1), env={"http_proxy": self.srv.url})
        self.assertEqual([r["judge_status"] for r in out], ["timeout"], err)
        self.assertLess(seconds, 5)  # the drip takes 11 s
        self.assertEqual(self.srv.requests[-1].headers["host"], "judge.invalid:80")

    def test_connections_to_a_proxy_are_kept_alive(self):
        code, out, err, _ = self.cli("--judge-url", "http://judge.invalid:80/v1",
                                     "--concurrency", "1", self.records(5),
                                     env={"http_proxy": self.srv.url})
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 5)
        self.assertEqual([r.headers["host"] for r in self.srv.requests],
                         ["judge.invalid:80"] * 6)
        self.assertEqual(self.srv.connections, 2)  # the preflight's, and the worker's


    def test_https_goes_through_a_connect_tunnel_the_proxy_credentials_stay_there(self):
        pair = self_signed_cert(self.tmp, "judge.invalid")
        if pair is None:
            self.skipTest("needs the openssl command to make a certificate")
        judge = StubServer(tls=pair).start()
        self.addCleanup(judge.stop)
        self.srv.tunnel_to = judge.port
        proxy = "http://user:proxy-secret@127.0.0.1:%d" % self.srv.port
        code, out, err, _ = self.cli("--judge-url", "https://judge.invalid/v1",
                                     "--concurrency", "1", self.records(3),
                                     env={"https_proxy": proxy, "SSL_CERT_FILE": pair[0]})
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 3)
        tunnels = self.srv.requests
        self.assertEqual([r.method + " " + r.path for r in tunnels],
                         ["CONNECT judge.invalid:443"] * 2)  # the preflight's, the worker's
        self.assertEqual(tunnels[0].headers["proxy-authorization"],
                         "Basic dXNlcjpwcm94eS1zZWNyZXQ=")  # user:proxy-secret
        self.assertEqual([r.headers["host"] for r in judge.requests], ["judge.invalid"] * 4)
        self.assertFalse(any("proxy-authorization" in r.headers for r in judge.requests))
        self.assertNotIn("proxy-secret", err)


class ExtraReplyTest(NetworkTest):
    def test_an_unsolicited_second_reply_is_not_the_next_requests_answer(self):
        judge = self.judge(max_retries=0)
        self.srv.push(wire(reply_bytes("Rating: 2"), reply_bytes("Rating: 5"),
                           interval=0.05, close=False))
        self.srv.content = "Rating: 4"
        self.assertEqual(judge.judge(EXAMPLE, OUTPUT).value, 2)
        # once played, the extra reply is waiting on the kept-alive connection
        self.assertTrue(self.srv.wait_replied(1))
        second = judge.judge(EXAMPLE, OUTPUT)
        self.assertEqual((second.status, second.value), ("ok", 4))
        self.assertEqual(self.srv.chat_count, 2)
        self.assertEqual(self.srv.connections, 2)


class BodyTest(NetworkTest):
    def test_gzip_and_deflate_bodies_are_decoded(self):
        body = json.dumps(completion(message={"role": "assistant", "content": "Rating: 4"},
                                     finish_reason="stop")).encode()
        judge = self.judge(max_retries=0)
        for encoding, data in [("gzip", gzip.compress(body)), ("x-gzip", gzip.compress(body)),
                               ("deflate", zlib.compress(body)), ("identity", body)]:
            with self.subTest(encoding):
                self.srv.push(raw(200, data, headers={"Content-Encoding": encoding}))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual((j.status, j.value, j.raw), ("ok", 4, "Rating: 4"))

    def test_a_compressed_bomb_or_an_unknown_encoding_is_refused_with_a_reason(self):
        judge = self.judge(max_retries=0, max_response_bytes=10000)
        chat_url = self.srv.url + "/v1/chat/completions"
        bomb = gzip.compress(b" " * 10 ** 7)  # 10 KB on the wire
        cases = [("gzip", bomb, "reply from POST {} is larger than 10000 bytes once "
                  "decoded (gzip); refused".format(chat_url)),
                 ("gzip", b"\x1f\x8b not gzip at all", "reply from POST {} is not valid "
                  "gzip: ".format(chat_url)),
                 ("gzip", gzip.compress(b"{}")[:-12], "reply from POST {} is not valid "
                  "gzip: it ends early".format(chat_url)),
                 ("br", b"\x0b\x02\x80{}\x03", "reply from POST {} is br-encoded; minijudge "
                  "reads gzip and deflate only".format(chat_url))]
        for encoding, data, message in cases:
            with self.subTest(message):
                self.srv.push(raw(200, data, headers={"Content-Encoding": encoding}))
                j = judge.judge(EXAMPLE, OUTPUT)
                self.assertEqual(j.status, "invalid_response")
                self.assertTrue(j.error.startswith(message), j.error)

    def test_a_completions_style_text_is_read_as_the_reply(self):
        self.srv.push(raw(200, json.dumps(completion(text="Rating: 5", finish_reason="stop"))))
        j = self.judge(max_retries=0).judge(EXAMPLE, OUTPUT)
        self.assertEqual((j.status, j.value, j.raw), ("ok", 5, "Rating: 5"))


if __name__ == "__main__":
    unittest.main()
