"""Issue 33, a hostile pass over the rate limits: a request --tpm can never let go, a reply
whose usage lies, requests counted when none went, a panel's 429s and x-ratelimit counts
kept per judge and per model. Through the real command line (a subprocess where today's
code would wait for hours) against the loopback stub."""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
from stub import JUDGE_ENV, PYTHON, StubTestCase, chat, rate_limited, run_main  # noqa: E402

_LONG = "word " * 80000  # ~100,000 tokens estimated: over --tpm 60000 on its own


class Host33bTest(StubTestCase):
    def items(self, questions):
        return self.write_jsonl("in.jsonl", [{"question": q, "response": "r"}
                                             for q in questions])

    def run_process(self, *argv, timeout=30):
        """(exit code, stderr) of ``python -m minijudge``: a run that would wait for hours
        fails the test in ``timeout`` s instead of hanging the suite."""
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        command = PYTHON + ("-m", "minijudge", "--judge-url", self.srv.url, "--no-preflight",
                            "-o", self.path("out.jsonl"), "--summary", self.path("s.json"))
        proc = subprocess.Popen(command + tuple(argv), cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("the run was still waiting after {} s".format(timeout))
        return proc.returncode, err.decode("utf-8", "replace")

    def records(self):
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def summary(self):
        with open(self.path("s.json"), encoding="utf-8") as f:
            return json.load(f)

    def posted(self):
        return [r for r in self.srv.requests if r.method == "POST"]


class TooBigForTpmTest(Host33bTest):
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


class LyingUsageTest(Host33bTest):
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


class PanelTest(Host33bTest):
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
    import unittest
    unittest.main()
