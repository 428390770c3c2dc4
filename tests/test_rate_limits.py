"""Rate limits (the section "Rate limits: --rpm, --tpm, the server's x-ratelimit headers,
requests in flight"): the client's own limits, a server's limit told by its headers or only
by its 429s, one limiter an account, and the hostile pass over them.

Issue 33 item 1, run economics: client-side rate limits (--rpm, --tpm, the server's
x-ratelimit headers, requests in flight backing off on 429s), through the real command
line against the loopback stub, whose `limit` enforces a bucket of requests and sends the
headers OpenAI does. Limits are scaled so each test takes a second or two: 1200 RPM is 20
requests a second (tests/bench_limits.py runs the issue's 64 threads against 60 RPM).

A loaded machine wakes a held request late (never early) and delays a reply or a packet
now and then, so a pace is measured where the limiter lets each request go, on the clock
it reads to decide and against the time it had each due (``sent``): under --rpm each is
due exactly its share after the one before went, and goes no sooner; and some gap is
within 10% of the share, which a few late wake-ups leave (a rate over the whole run
counts each of them: two busy loops on 2 cores took it 10-20% under --rpm; at a load
of 20 the quarter of the gaps nearest it was 10% over) and a limiter that holds too
long does not."""
import collections
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import (PYTHON, StubTestCase, chat, rate_limited, read_terminal,  # noqa: E402
                  run_main, without_judge)


def gaps(times):
    """The seconds between each of ``times`` and the next, shortest first."""
    times = sorted(times)
    return sorted(later - sooner for sooner, later in zip(times, times[1:]))


class LimitTest(StubTestCase):
    def items(self, n):
        return self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(n)])

    def run_code(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--no-preflight", "-o",
                         self.path("out.jsonl"), "--summary", self.path("s.json")] + list(argv))

    def sent(self):
        """Each request the limiter let go (any judge's), as (the time.monotonic() it read to
        let it go, the time --rpm had it due): filled as the run goes."""
        import minijudge
        sent = []
        take = minijudge._Limiter._take

        def taken(limiter, now, *args, **kwargs):
            sent.append((now, limiter._next["requests"]))
            return take(limiter, now, *args, **kwargs)
        patch = mock.patch.object(minijudge._Limiter, "_take", taken)
        patch.start()
        self.addCleanup(patch.stop)
        return sent

    def assertPaced(self, sent, seconds, rpm=True):
        """Requests ``sent`` one every ``seconds``. Under --rpm, exactly: each due that long
        after the one before went, none gone sooner; else most gaps (the median) no more
        than 10% shorter (a reply slower than the estimate's share lets the next go early).
        And as they went: a gap within 10% of it, which a limiter that holds too long has
        none of, and load (which wakes some late) leaves."""
        spaced = gaps([went for went, _ in sent])
        if rpm:
            for (went, _), (_, due) in zip(sent, sent[1:]):
                self.assertAlmostEqual(due, went + seconds, delta=1e-9, msg=sent)
            self.assertGreaterEqual(spaced[0], seconds - 1e-9, spaced)
        else:
            self.assertGreater(spaced[len(spaced) // 2], seconds * 0.9, spaced)
        nearest = min(spaced, key=lambda gap: abs(gap - seconds))
        self.assertLess(abs(nearest - seconds) / seconds, 0.10, spaced)


class RpmTest(LimitTest):
    def test_the_measured_rate_is_within_10_percent_of_rpm(self):
        sent = self.sent()
        code, _, err = self.run_code("--rpm", "1200", "--concurrency", "16", self.items(20))
        self.assertEqual(code, 0, err)
        self.assertEqual(len(sent), 20)
        self.assertPaced(sent, 0.05)
        self.assertEqual(self.srv.chat_count, 20)
        limits = self.summary()["limits"]
        self.assertEqual(limits["rate_limited"], 0)
        # held from the second request's wait to the last one's turn: 19 gaps, ~0.95 s
        self.assertAlmostEqual(limits["held_seconds"], sent[-1][0] - sent[0][0], delta=0.05)
        held = re.search(r"\n  limits: held ([0-9.]+) s by --rpm 1200 or the server's limit; "
                         r"0 replies were http 429 \(rate limited\)\n", err)
        self.assertAlmostEqual(float(held.group(1)), limits["held_seconds"], delta=0.051)

    def test_rpm_from_python_and_a_judges_entry(self):
        import minijudge
        judge = minijudge.LLMJudge(self.srv.url, model="m", rpm=1200)
        self.assertEqual(judge.rpm, 1200)
        judges = self.write("j.json", json.dumps(
            [{"name": "a", "url": self.srv.url, "options": {"rpm": 600, "tpm": 100000}}]))
        sent = self.sent()
        code, _, err = run_main(["--judges", judges, "--no-preflight", "-o",
                                 self.path("out.jsonl"), "--summary", self.path("s.json"),
                                 self.items(6)])
        self.assertEqual(code, 0, err)
        limits = self.summary()["judges"]["a"]["limits"]
        held = limits.pop("held_seconds")  # 5 gaps of 0.1 s between 6 requests
        self.assertEqual(limits, {"rpm": 600, "tpm": 100000, "rate_limited": 0,
                                  "turns_waited": 0})
        self.assertPaced(sent, 0.1)
        self.assertAlmostEqual(held, sent[-1][0] - sent[0][0], delta=0.05)

    def test_a_wrong_rpm_or_tpm_from_each_place_says_so(self):
        import minijudge
        for value in ("abc", "0", "-5", "nan", "inf"):
            code, _, err = self.run_code("--rpm", value, self.items(1))
            self.assertEqual(code, 2, value)
            self.assertIn("minijudge: error: --rpm must be a number of requests a minute "
                          "above 0; got ", err)
        code, _, err = self.run_code("--tpm", "1.5", self.items(1))
        self.assertEqual(code, 2)
        self.assertIn("minijudge: error: --tpm must be a whole number of tokens a minute, "
                      "1 or more; got '1.5'", err)
        for bad in ("60", True, float("nan"), -1, 0):
            with self.assertRaises(minijudge.JudgeError) as caught:
                minijudge.LLMJudge(self.srv.url, model="m", rpm=bad)
            self.assertIn("rpm must be a number of requests a minute above 0; got ",
                          str(caught.exception))
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url, model="m", tpm=2.5)
        self.assertIn("tpm must be a whole number of tokens a minute, 1 or more; got 2.5",
                      str(caught.exception))
        judges = self.write("j.json", json.dumps(
            [{"name": "a", "url": self.srv.url, "options": {"rpm": "60"}}]))
        code, _, err = run_main(["--judges", judges, "--no-preflight", self.items(1)])
        self.assertEqual(code, 2)
        self.assertIn("rpm must be a number of requests a minute above 0; got '60'", err)


class TpmTest(LimitTest):
    def test_tokens_are_corrected_from_usage(self):
        # each reply says 300 tokens; sent, a request is estimated at ~160 (prompt + 16):
        # at 144000 TPM (2400 a second) the usage allows 8 requests a second, the estimate 15
        usage = {"prompt_tokens": 290, "completion_tokens": 10, "total_tokens": 300}
        self.srv.responder = lambda request: chat("Rating: 4", usage=dict(usage))
        sent = self.sent()
        code, _, err = self.run_code("--tpm", "144000", "--concurrency", "8", self.items(9))
        self.assertEqual(code, 0, err)
        self.assertEqual(len(sent), 9)
        self.assertPaced(sent, 1 / 8, rpm=False)
        self.assertEqual(self.summary()["limits"]["tpm"], 144000)


class ServerLimitTest(LimitTest):
    def test_64_threads_against_a_limit_end_every_record_ok(self):
        # 128 requests a second, the bucket holding 32; no --rpm: the headers and the 429s
        # (halving the requests in flight) bring the run under the limit by themselves
        self.srv.limit = (32, 0.25)
        self.srv._bucket = (32.0, 0.0)
        code, _, err = self.run_code("--concurrency", "64", self.items(96))
        self.assertEqual(code, 0, err)
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 96)
        limits = self.summary()["limits"]
        self.assertEqual(limits["rate_limited"], self.srv.limited)
        self.assertEqual(self.srv.chat_count, 96 + self.srv.limited)

    def test_the_progress_line_says_what_holds_the_run(self):
        master, slave = pty.openpty()  # stderr is a terminal: progress is on
        proc = subprocess.Popen(
            PYTHON + ("-m", "minijudge", "--judge-url", self.srv.url, "--no-preflight",
                      "--rpm", "1200", "--concurrency", "4", "-o", self.path("out.jsonl"),
                      self.items(6)), cwd=ROOT, env=without_judge(), stdout=subprocess.PIPE,
            stderr=slave)
        os.close(slave)
        tty = read_terminal(master, 20)
        proc.communicate(timeout=30)
        self.assertIn(b" done, 0 failed; judge held by --rpm 1200   \r", tty)

    def test_the_server_headers_hold_the_run_before_a_429(self):
        # a bucket of 4 refilled in 0.25 s: the first reply says 3 left, the client counts
        # down and, at 0 left, waits the reset instead of sending into a 429
        self.srv.limit = (4, 0.25)
        self.srv._bucket = (4.0, 0.0)
        told = []  # the requests left, as each reply said
        limited = self.srv._limited

        def telling(request):
            reply = limited(request)
            told.append(dict(reply.headers)["x-ratelimit-remaining-requests"])
            return reply
        self.srv._limited = telling
        code, _, err = self.run_code("--concurrency", "1", self.items(8))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.limited, 0)
        limits = self.summary()["limits"]
        self.assertEqual(limits["rate_limited"], 0)
        # how long it held depends on how fast the requests went: a loaded machine's are
        # slower, the bucket refills meanwhile, less is held (0.15 s seen with three busy
        # loops on 2 cores, ~0.3 s on an idle one), but it holds (4 requests within 0.25 s)
        self.assertIn("0", told[:-1])
        self.assertGreater(limits["held_seconds"], 0)


class HeaderTest(LimitTest):
    def timed(self, headers):
        """A responder sending ``headers`` (one set a request, in turn), keeping each time."""
        times, sets = [], list(headers)

        def responder(request):
            import time
            times.append(time.monotonic())
            return chat("Rating: 4", headers=sets.pop(0))
        self.srv.responder = responder
        return times

    def test_0_left_holds_until_the_reset_in_openai_form(self):
        times = self.timed([{"x-ratelimit-remaining-requests": "0",
                             "x-ratelimit-reset-requests": "300ms"}, {}])
        code, _, err = self.run_code("--concurrency", "1", self.items(2))
        self.assertEqual(code, 0, err)
        # 0.3 s from the reply, which left the stub after times[0]
        self.assertGreaterEqual(times[1] - times[0], 0.3)
        # held: the 0.3 s less the reply's way back; less than twice that, which a reset
        # misread (a unit off) or a hold past it goes beyond and a loaded machine's late
        # wake-up (0.1 s seen with two busy loops on 2 cores) does not
        held = self.summary()["limits"]["held_seconds"]
        self.assertGreaterEqual(held, 0.25)
        self.assertLess(held, 0.6)
        said = re.search(r"\n  limits: held ([0-9.]+) s by the server's limit; 0 replies were "
                         r"http 429 \(rate limited\)\n", err)
        self.assertAlmostEqual(float(said.group(1)), held, delta=0.051)

    def test_garbage_headers_hold_nothing(self):
        garbage = [("0", "-1s"), ("0", "1e309s"), ("0", "nan"), ("0", "inf"), ("0", "2h"),
                   ("-3", "5s"), ("1e3", "5s"), ("0", ""), ("0", "6m0s0")]
        self.timed({"x-ratelimit-remaining-requests": left, "x-ratelimit-reset-requests": reset,
                    "x-ratelimit-remaining-tokens": left, "x-ratelimit-reset-tokens": reset}
                   for left, reset in garbage + [("", "")])
        code, _, err = self.run_code("--concurrency", "1", self.items(10))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.summary()["limits"], {"rpm": None, "tpm": None,
                                                    "held_seconds": 0.0, "rate_limited": 0,
                                                    "turns_waited": 0})
        self.assertNotIn("limits:", err)

    def test_two_judges_on_one_server_share_its_limit(self):
        judges = self.write("j.json", json.dumps(
            [{"name": "a", "url": self.srv.url, "options": {"rpm": 1200}},
             {"name": "b", "url": self.srv.url + "/v1", "options": {"rpm": 1200}}]))
        sent = self.sent()
        code, _, err = run_main(["--judges", judges, "--no-preflight", "-o",
                                 self.path("out.jsonl"), self.items(10)])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 20)
        self.assertEqual(len(sent), 20)
        self.assertPaced(sent, 0.05)  # 1200 RPM for the two together, not each


class FlightTest(LimitTest):
    def test_no_429_no_fewer_requests_in_flight(self):
        # the preflight's one request, then 8 at a time: no limit on what is in flight
        # comes of successes alone (16 replies 0.1 s each: 0.2 s at 8 a time, 1.6 s at 1;
        # the bound, 1.2 s, leaves a loaded machine a second to spare)
        import time
        self.srv.delay = 0.1
        started = time.monotonic()
        code, _, err = run_main(["--judge-url", self.srv.url, "--concurrency", "8", "-o",
                                 self.path("out.jsonl"), self.items(16)])
        self.assertEqual(code, 0, err)
        self.assertLess(time.monotonic() - started, 1.2)

    def test_one_request_then_eight_at_a_time(self):
        import time
        import minijudge
        self.srv.delay = 0.1
        judge = minijudge.LLMJudge(self.srv.url, model="m")
        self.assertEqual(judge.judge({"question": "q"}, {"response": "r"}).status, "ok")
        started = time.monotonic()
        records = [{"question": "q", "response": "r"}] * 16
        done = list(minijudge.judge_records(judge, records, concurrency=8))
        self.assertEqual([judgement.status for _, judgement in done], ["ok"] * 16)
        self.assertLess(time.monotonic() - started, 1.2)


class AccountsTest(StubTestCase):
    """Issue 33's rate limits are an account's: two judges on one server with different API
    keys (two accounts) are each held by their own --rpm, not by one limiter they share;
    judges with the same key share one, as every thread does."""

    def judge(self, key, **options):
        return minijudge.LLMJudge(self.srv.url, model="m", api_key=key, rpm=60, **options)

    def test_two_keys_on_one_server_are_two_limits(self):
        first, second = self.judge("sk-first-account"), self.judge("sk-second-account")
        self.assertIsNot(first._limits, second._limits)

    def test_one_key_is_one_limit(self):
        first, second = self.judge("sk-same"), self.judge("sk-same")
        self.assertIs(first._limits, second._limits)

    def test_a_key_sent_in_another_header_is_another_account(self):
        first = self.judge("sk-one", key_header="api-key")
        second = self.judge("sk-two", key_header="api-key")
        self.assertIsNot(first._limits, second._limits)

    def test_the_key_is_not_in_the_limiters_keys(self):
        judge = self.judge("sk-secret-1234567")
        self.assertNotIn("sk-secret-1234567", repr(list(minijudge._LIMITERS.keys())))
        self.assertIsNotNone(judge)


class Storm(StubTestCase):
    """Issue 33 item 1 against a server that enforces its limit WITHOUT x-ratelimit-* headers
    (vLLM behind a proxy, LiteLLM, some gateways): 429s with Retry-After are all the client
    hears, and `--concurrency 64` must still end with every record ok. Through the real
    command line against the loopback stub (`limit_headers=False`), scaled so each test
    takes a second or two: 60 requests a second (a bucket of 20 refilled in a third of a
    second), with the waits between tries cut to a third as well, stands for the issue's 60
    a minute (`python tests/bench_limits.py --no-headers` runs the issue's own figures)."""

    def items(self, n):
        return self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(n)])

    def argv(self, *argv):
        return ["--judge-url", self.srv.url, "--no-preflight", "-o", self.path("out.jsonl"),
                "--summary", self.path("s.json")] + list(argv)

    def tries(self):
        """The requests the stub was sent for each record, by its question."""
        tries = collections.Counter()
        for request in self.srv.requests:
            if request.method != "POST":
                continue
            prompt = "\n".join(m["content"] for m in request.json["messages"])
            tries[re.search(r"\bq[0-9]+\b", prompt).group()] += 1
        return tries

    def headerless(self, n, seconds):
        """The stub enforcing ``n`` requests per ``seconds``, sending no x-ratelimit-*."""
        self.srv.limit = (n, seconds)
        self.srv._bucket = (float(n), time.monotonic())
        self.srv.limit_headers = False


class HeaderlessLimitTest(Storm):
    def test_64_threads_against_a_headerless_limit_end_every_record_ok(self):
        # 60 a second, 64 threads, 120 records: the run (~1.7 s) outlasts the retries'
        # waits (0.12 s doubling to 1/3 s at most here, ~1.2 s for all 5, as the issue's
        # 60 a minute outlasts the default 30 s), and main failed about 10 records, its
        # retries spent on 429s that only meant "the others go first"
        self.headerless(20, 1 / 3)
        code, _, err = run_main(self.argv("--concurrency", "64", "--retry-min-wait", "0.12",
                                          "--retry-max-wait", "0.33", self.items(120)))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in self.records()], ["ok"] * 120)
        self.assertGreater(self.srv.limited, 0)  # the storm came
        limits = self.summary()["limits"]
        self.assertEqual(limits["rate_limited"], self.srv.limited)
        self.assertEqual(self.srv.chat_count, 120 + self.srv.limited)
        self.assertGreater(limits["turns_waited"], 0)
        self.assertRegex(err, r"\n  limits: held [0-9.]+ s by the server's limit; {} replies "
                              r"were http 429 \(rate limited\), {} of them waiting their turn "
                              r"while others were answered\n".format(self.srv.limited,
                                                             limits["turns_waited"]))

    def test_429s_while_the_others_are_answered_spend_no_retry(self):
        # one retry allowed: a record meets several 429s in the storm, each while the
        # server answers the judge's other requests; none of them is the record's failure.
        # A wait between tries is 0.17 s at most, a third of the default first one (0.5 s),
        # as the bucket refills three times as fast as at 20 a second: the storm meets as
        # many tries
        self.headerless(20, 1 / 3)
        code, _, err = run_main(self.argv("--concurrency", "64", "--max-retries", "1",
                                          "--retry-max-wait", "0.17", self.items(60)))
        self.assertEqual(code, 0, err)
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 60)
        self.assertGreater(max(self.tries().values()), 2)
        limits = self.summary()["limits"]
        self.assertEqual(limits["rate_limited"], self.srv.limited)
        # a 429 spends a retry only if nothing was answered since the record's try before:
        # at most one per record, here
        self.assertLessEqual(limits["rate_limited"] - limits["turns_waited"], 60)

    def test_a_server_answering_429_to_everything_still_fails_after_the_retries(self):
        self.srv.responder = lambda request: rate_limited("0")
        code, _, err = run_main(self.argv("--concurrency", "4", "--max-retries", "2",
                                          "--retry-max-wait", "0.05", self.items(4)))
        self.assertEqual(code, 1, err)
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["http_error"] * 4)
        self.assertTrue(all(r["judge_error"].endswith(" (after 3 tries)") for r in records))
        self.assertEqual(self.srv.chat_count, 12)
        limits = self.summary()["limits"]
        self.assertEqual((limits["rate_limited"], limits["turns_waited"]), (12, 0))

    def test_a_request_the_server_never_takes_while_it_takes_others_still_fails(self):
        # OpenAI's 429 "Request too large ... on tokens per min" for one record, the others
        # answered: that record's 429s wait their turn 100 times at most, then spend retries
        def responder(request):
            if "BIG" in request.json["messages"][-1]["content"]:
                return rate_limited("0")
            return None
        self.srv.responder = responder
        items = [{"question": "q%d" % k, "response": "r"} for k in range(400)]
        items[0]["response"] = "BIG"
        code, _, err = run_main(self.argv("--concurrency", "2", "--retry-max-wait", "0.01",
                                          self.write_jsonl("in.jsonl", items)))
        self.assertEqual(code, 0, err)  # 1 failed of 400: under --max-error-rate
        records = self.records()
        self.assertEqual(records[0]["judge_status"], "http_error")
        self.assertEqual([r["judge_status"] for r in records[1:]], ["ok"] * 399)
        self.assertLessEqual(self.tries()["q0"], 100 + 1 + 5)


class RetryAfterTest(Storm):
    def test_a_429s_retry_after_holds_every_request_of_the_judge(self):
        # the first request meets a 429 asking for 1 s; the other two threads' replies come
        # 0.2 and 0.5 s later and their next requests wait out that second too (main sent
        # them at once). The 429 waits for the others to be in flight: on a busy machine
        # their threads could start after the 429, and be held before they sent anything.
        # When the third reply comes, the second thread's next request has been held 0.3 s:
        # the progress line drawn for that record says what holds the run (the lines the
        # clock draws, 0.5 s apart, could all miss a pause of 1 s)
        times, lock, flying = [], threading.Lock(), threading.Event()

        def responder(request):
            with lock:
                times.append(time.monotonic())
                nth = len(times)
            if nth == 3:
                flying.set()
            if nth > 3:  # after the pause: these only count the tries
                return chat("Rating: 4")
            flying.wait(5)
            if nth == 1:
                return rate_limited("1")
            time.sleep({2: 0.2, 3: 0.5}[nth])
            return chat("Rating: 4")
        self.srv.responder = responder
        master, slave = pty.openpty()  # stderr is a terminal: progress is on
        proc = subprocess.Popen(PYTHON + ("-m", "minijudge") + tuple(self.argv(
            "--concurrency", "3", self.items(5))), cwd=ROOT, env=without_judge(),
            stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        tty = read_terminal(master, 30)
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, tty)
        self.assertEqual(len(times), 6)
        self.assertGreaterEqual(times[3] - times[0], 0.95, times)
        self.assertIn(b"; judge held by the server's Retry-After after a 429", tty)
        self.assertEqual(self.summary()["limits"]["rate_limited"], 1)


class RecoveryTest(Storm):
    def test_after_a_429_the_requests_in_flight_grow_one_a_round_trip(self):
        # 16 threads, all in flight (their replies 10 ms apart); the first request sent
        # after them meets a 429 while the other 15 are out: 8 allowed in flight. Main
        # allowed one more per success: all 16 again once those 15 came back, straight
        # back into the storm; one more a round trip keeps it near 8. The 15 replies come
        # 0.2 s after the first: time for the client to hear the 429 first, even on a
        # loaded machine (at 10 ms, two busy loops on 2 cores had 15 in flight after it,
        # sent before the 429 was heard)
        state = {"seen": 0, "flying": 0, "most_after": 0}
        lock = threading.Lock()

        def responder(request):
            with lock:
                state["seen"] += 1
                seen = state["seen"]
                if seen == 17:
                    return rate_limited("0")
                state["flying"] += 1
                if seen > 17:
                    state["most_after"] = max(state["most_after"], state["flying"])
            if seen == 1 or seen > 17:
                time.sleep(0.1)
            else:
                time.sleep(0.3 + 0.01 * seen)
            with lock:
                state["flying"] -= 1
            return chat("Rating: 4")
        self.srv.responder = responder
        code, _, err = run_main(self.argv("--concurrency", "16", self.items(48)))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in self.records()], ["ok"] * 48)
        self.assertEqual(self.summary()["limits"]["rate_limited"], 1)
        self.assertLessEqual(state["most_after"], 12, state)


_LONG = "word " * 80000  # ~100,000 tokens estimated: over --tpm 60000 on its own


class LimitsHostileTest(StubTestCase):
    """Issue 33, a hostile pass over the rate limits: a request --tpm can never let go, a reply
    whose usage lies, requests counted when none went, a panel's 429s and x-ratelimit counts
    kept per judge and per model. Through the real command line (a subprocess where today's
    code would wait for hours) against the loopback stub."""

    def items(self, questions):
        return self.write_jsonl("in.jsonl", [{"question": q, "response": "r"}
                                             for q in questions])

    def run_process(self, *argv, timeout=30):
        """(exit code, stderr) of ``python -m minijudge``: a run that would wait for hours
        fails the test in ``timeout`` s instead of hanging the suite."""
        command = PYTHON + ("-m", "minijudge", "--judge-url", self.srv.url, "--no-preflight",
                            "-o", self.path("out.jsonl"), "--summary", self.path("s.json"))
        proc = subprocess.Popen(command + tuple(argv), cwd=ROOT, env=without_judge(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("the run was still waiting after {} s".format(timeout))
        return proc.returncode, err.decode("utf-8", "replace")

    def posted(self):
        return [r for r in self.srv.requests if r.method == "POST"]


class TooBigForTpmHostileTest(LimitsHostileTest):
    def test_a_request_over_tpm_is_not_sent_and_the_others_are_judged(self):
        # the long question's request can never fit in a minute of --tpm 60000: today it
        # goes (it waits for the small ones' share, then nothing holds it) and the
        # requests after it wait its 100 s share of the minute
        code, err = self.run_process("--tpm", "60000", "--concurrency", "1",
                                     self.items(["q0", _LONG, "q2", "q3"]))
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records],
                         ["ok", "http_error", "ok", "ok"], err)
        error = records[1]["judge_error"]
        self.assertRegex(error, r"^not sent: its estimated \d+ tokens exceed --tpm 60000$")
        estimated = int(error.split()[4])
        self.assertGreater(estimated, 60000)
        self.assertNotIn(_LONG, "".join(r.body.decode("utf-8") for r in self.posted()))
        self.assertEqual(len(self.posted()), 3)
        summary = self.summary()
        self.assertEqual(summary["requests"], 3)  # item 3: the one not sent counts none
        self.assertEqual(summary["statuses"]["http_error"], 1)
        self.assertEqual(code, 1)  # 1 of 4 failed: over --max-error-rate 0.1
        self.assertIn("not sent: its estimated {} tokens exceed --tpm 60000".format(estimated),
                      err)

    def test_every_request_over_tpm_sends_nothing_and_does_not_stop_on_a_server_error(self):
        code, err = self.run_process("--tpm", "10", self.items(["q0", "q1", "q2"]))
        self.assertEqual(self.posted(), [])
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["http_error"] * 3, err)
        self.assertEqual(self.summary()["requests"], 0)
        self.assertEqual(code, 1)

    def test_from_python_the_judgement_says_so_with_no_attempt(self):
        import minijudge
        judge = minijudge.LLMJudge(self.srv.url, model="m", tpm=10)
        judgement = judge.judge({"question": "q"}, {"response": "r"})
        self.assertEqual(judgement.status, "http_error")
        self.assertEqual(judgement.attempts, 0)
        self.assertIsNone(judgement.http_status)
        self.assertRegex(judgement.error, r"^not sent: its estimated \d+ tokens exceed --tpm 10$")
        self.assertEqual(self.posted(), [])


class LyingUsageHostileTest(LimitsHostileTest):
    def test_a_usage_over_tpm_does_not_stall_the_run(self):
        # 10**9 tokens cannot have fit in a minute of --tpm 100000: believed, the next
        # request would wait 600,000 s
        self.srv.responder = lambda request: chat("Rating: 4", usage={
            "prompt_tokens": 10 ** 9 - 1, "completion_tokens": 1, "total_tokens": 10 ** 9})
        started = time.monotonic()
        code, err = self.run_process("--tpm", "100000", "--concurrency", "1",
                                     self.items(["q0", "q1", "q2", "q3"]))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in self.records()], ["ok"] * 4)
        self.assertLess(time.monotonic() - started, 10)
        self.assertLess(self.summary()["limits"]["held_seconds"], 1.0)

    def test_a_usage_at_tpm_still_paces(self):
        # 1,200 tokens a reply at --tpm 144000 (2,400 a second): a request each 0.5 s,
        # believed (the prompts' estimates alone would space them 0.1 s at most)
        times = []

        def responder(request):
            times.append(time.monotonic())
            return chat("Rating: 4", usage={"prompt_tokens": 1190, "completion_tokens": 10,
                                            "total_tokens": 1200})
        self.srv.responder = responder
        code, err = self.run_process("--tpm", "144000", "--concurrency", "1",
                                     self.items(["q0", "q1", "q2"]))
        self.assertEqual(code, 0, err)
        self.assertGreater(times[-1] - times[0], 0.9)


class PanelLimitsHostileTest(LimitsHostileTest):
    def panel(self, *entries):
        return self.write("j.json", json.dumps([
            {"name": name, "url": self.srv.url, "model": model,
             "options": {"retry_max_wait": 0.05}} for name, model in entries]))

    def run_panel(self, judges, questions):
        return run_main(["--judges", judges, "--no-preflight", "--concurrency", "1",
                         "-o", self.path("out.jsonl"), "--summary", self.path("s.json"),
                         self.items(questions)])

    def test_each_judge_counts_its_own_429s(self):
        # one server, one limiter: judge a's model is answered 429 three times, b's never
        lock, left = threading.Lock(), [3]

        def responder(request):
            with lock:
                if request.json["model"] == "ma" and left[0]:
                    left[0] -= 1
                    return rate_limited("0")
            return chat("Rating: 4")
        self.srv.responder = responder
        code, _, err = self.run_panel(self.panel(("a", "ma"), ("b", "mb")), ["q0", "q1"])
        self.assertEqual(code, 0, err)
        judges = self.summary()["judges"]
        self.assertEqual(judges["a"]["limits"]["rate_limited"], 3)
        self.assertEqual(judges["b"]["limits"]["rate_limited"], 0)
        # the turns waited are each judge's too: b had no 429, so none of its own
        self.assertEqual(judges["b"]["limits"]["turns_waited"], 0)
        self.assertLessEqual(judges["a"]["limits"]["turns_waited"], 3)
        self.assertEqual(judges["a"]["requests"], 5)
        self.assertEqual(judges["b"]["requests"], 2)
        self.assertIn("3 replies were http 429", err)
        self.assertEqual(err.count("replies were http 429"), 1, err)  # b: no limits line

    def test_a_jurys_summary_counts_every_members_429s(self):
        # one summary for the jury: the run's total, a's and b's
        lock, left = threading.Lock(), {"ma": 2, "mb": 1}

        def responder(request):
            model = request.json["model"]
            with lock:
                if left[model]:
                    left[model] -= 1
                    return rate_limited("0")
            return chat("Rating: 4")
        self.srv.responder = responder
        judges = self.panel(("a", "ma"), ("b", "mb"))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", "--no-preflight",
                                 "--concurrency", "1", "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json"), self.items(["q0", "q1"])])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.summary()["limits"]["rate_limited"], 3)
        self.assertEqual(self.srv.chat_count, 4 + 3)

    def test_what_is_left_is_kept_per_model(self):
        # model ma's replies say 0 requests left for 1 s; mb's say nothing: ma's requests
        # wait for the reset, mb's are not held by ma's count (OpenAI counts per model)
        events = []

        def responder(request):
            model = request.json["model"]
            events.append((time.monotonic(), model))
            headers = {}
            if model == "ma":
                headers = {"x-ratelimit-remaining-requests": "0",
                           "x-ratelimit-reset-requests": "1s"}
            return chat("Rating: 4", headers=headers)
        self.srv.responder = responder
        code, _, err = self.run_panel(self.panel(("a", "ma"), ("b", "mb")), ["q0", "q1"])
        self.assertEqual(code, 0, err)
        gaps = [(now - before, model) for (before, _), (now, model) in zip(events, events[1:])]
        self.assertTrue(any(gap > 0.75 for gap, model in gaps if model == "ma"), gaps)
        self.assertEqual([gap for gap, model in gaps if model == "mb" and gap > 0.5], [], gaps)


if __name__ == "__main__":
    unittest.main()
