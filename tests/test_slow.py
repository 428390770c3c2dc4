"""A slow reply holds back only the writing, never the judging; misuse of the command
line is a usage error naming the flag; a server's deeply nested JSON is that request's
invalid_response. Against the loopback stub; the timing figures belong to
tests/bench_throughput.py, these tests count requests instead.
"""
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import SideBySide, chat, raw  # noqa: E402
from test_cli import CLITest, parse_lines  # noqa: E402


class SlowReplyTest(SideBySide):
    # each test waits on a slow reply (1 s, 0.5 s), with LLMJudge objects of its own and
    # no main(): the three run at once (see stub.SideBySide)
    side_by_side = 3

    def slow_responder(self, slow_id, seconds, *, until=None):
        """Record 'slow_id' is answered after ``seconds``, or, given ``until``, once the
        stub has received that many requests (``seconds`` then bounds the wait: a loaded
        machine may take long to send them); how many it had received when it answered
        goes to self.seen."""
        def responder(request):
            if "[{}]".format(slow_id) in request.prompt:
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline and (
                        until is None or self.srv.chat_count < until):
                    time.sleep(0.01)
                self.seen = self.srv.chat_count
            return chat("4")
        return responder

    def judge_all(self, n, **options):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", max_retries=0,
                                   template="{question} {response}")
        items = [{"question": "[{}]".format(i), "response": "r"} for i in range(n)]
        return [(r["question"], j.status) for r, j in minijudge.judge_records(
            judge, items, **options)]

    def test_the_others_are_judged_while_one_reply_is_slow_and_the_order_holds(self):
        # held until 101 requests came (the old window never let them), 20 s at most: a
        # second sufficed on an idle machine, not on one running two suites
        self.srv.responder = self.slow_responder(3, 20.0, until=101)
        out = self.judge_all(201, concurrency=8)
        self.assertEqual(out, [("[{}]".format(i), "ok") for i in range(201)])
        # the old window, 2 x concurrency, let 16 requests go while [3] was slow
        self.assertGreater(self.seen, 100)

    def test_the_window_bounds_the_records_held_behind_a_slow_one(self):
        self.srv.responder = self.slow_responder(0, 0.5)
        out = self.judge_all(60, concurrency=4, window=10)
        self.assertEqual(out, [("[{}]".format(i), "ok") for i in range(60)])
        self.assertLessEqual(self.seen, 10)  # [0] and the nine read after it

    def test_progress_counts_the_finished_records_waiting_behind_the_slow_one(self):
        progress, waiting = {}, []

        def responder(request):
            # [0] is held while its wait is read, every 0.02 s, until all 49 others wait
            # behind it (20 s at most): 0.5 s, as it was, is not always enough for 49
            # requests on a loaded machine
            deadline = time.monotonic() + 20
            while "[0]" in request.prompt and time.monotonic() < deadline:
                waiting.append(progress.get("waiting", 0))
                if waiting[-1] >= 49:
                    break
                time.sleep(0.02)
            return chat("4")
        self.srv.responder = responder
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", max_retries=0,
                                   template="{question} {response}")
        items = [{"question": "[{}]".format(i), "response": "r"} for i in range(50)]
        results = minijudge.judge_records(judge, items, concurrency=4, progress=progress)
        self.assertEqual(len(list(results)), 50)
        self.assertIn(49, waiting)  # all but the slow one, while it was outstanding
        self.assertEqual(progress["waiting"], 0)


class MisuseTest(CLITest):
    def test_each_misuse_is_a_usage_error_naming_the_flag(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        cases = [(["--timeout", t], "--timeout must be a number of seconds above 0, at most "
                  "86400 (a day); got " + s)
                 for t, s in (("0", "0.0"), ("inf", "inf"), ("nan", "nan"), ("-1", "-1.0"),
                              ("1e300", "1e+300"))]
        cases += [
            (["--concurrency", "100000"], "--concurrency must be from 1 to 1024 (a thread "
                                          "each); got 100000"),
            (["--concurrency", "0"], "--concurrency must be from 1 to 1024 (a thread each); got 0"),
            (["--window", "0"], "--window must be at least 1; got 0"),
            (["--header", "X-Note: \u201csmart\u201d"], "header 'X-Note' has a character "
             "outside Latin-1 (a pasted smart quote?) in it")]
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, out, err = self.main("--judge-url", self.srv.url, *argv, source)
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {}\n".format(
                    message)))
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_deeply_nested_reply_is_that_records_invalid_response(self):
        nested = b"[" * 100000 + b"]" * 100000
        self.srv.push(raw(200, nested))
        source = self.write_jsonl("in.jsonl", [{"question": "q%d" % i, "response": "r"}
                                               for i in range(3)])
        code, out, err = self.main("--judge-url", self.srv.url, "--judge-model",
                                   "judge-model", "--no-preflight", "--max-retries", "0",
                                   "--concurrency", "1", "--max-error-rate", "1", source)
        self.assertEqual(code, 0, err)
        records = parse_lines(out)
        self.assertEqual([r["judge_status"] for r in records],
                         ["invalid_response", "ok", "ok"])
        self.assertIn("is not JSON we can read (nested too deeply)", records[0]["judge_error"])
        with self.assertRaises(minijudge.APIError) as caught:  # a model list as deep
            minijudge._read_models(nested, "http://127.0.0.1/v1/models")
        self.assertEqual(caught.exception.kind, "invalid_response")
        json.dumps(records)  # and every record is still JSON


if __name__ == "__main__":
    unittest.main()
