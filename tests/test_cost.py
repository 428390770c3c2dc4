"""Issue 33 item 3, run economics: --price and the cost in each record and the summary,
through the real command line against the loopback stub, which here reports fixed `usage`
figures so each cost can be checked by hand."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import PYTHON, StubTestCase, chat, run_main  # noqa: E402

# every reply: 1000 prompt and 20 completion tokens
USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}


def fixed_usage(request):
    return chat("Rating: 4", usage=dict(USAGE))


class CostTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = fixed_usage
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(3)])

    def run_code(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--no-preflight"] + list(argv))

    def records(self, name="out.jsonl"):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def summary(self, name="s.json"):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)


class PriceTest(CostTest):
    def test_each_record_and_the_summary_carry_the_cost_checked_by_hand(self):
        # 1000 prompt tokens at $3/M = $0.003; 20 completion at $15/M = $0.0003: $0.0033 each
        code, _, err = self.run_code("--price", "3,15", "-o", self.path("out.jsonl"),
                                     "--summary", self.path("s.json"), self.data)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records()], [0.0033] * 3)
        self.assertEqual(self.summary()["cost"], {"total": 0.0099, "per_record": 0.0033,
                                                  "records": 3, "without_usage": 0})
        self.assertIn("\n  tokens: 3000 prompt, 60 completion\n  cost: $0.009900 for 3 records, "
                      "$0.003300 a record\n", err + "\n")

    def test_no_price_no_cost(self):
        code, _, err = self.run_code("-o", self.path("out.jsonl"), "--summary",
                                     self.path("s.json"), self.data)
        self.assertEqual(code, 0, err)
        self.assertNotIn("judge_cost", self.records()[0])
        self.assertIsNone(self.summary()["cost"])
        self.assertNotIn("cost:", err)

    def test_a_rerun_from_the_cache_costs_nothing(self):
        cache = self.path("cache.jsonl")
        for name in ("a.jsonl", "b.jsonl"):
            code, _, err = self.run_code("--price", "3,15", "--cache", cache, "-o",
                                         self.path(name), "--summary", self.path("s.json"),
                                         self.data)
            self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records("b.jsonl")], [0.0] * 3)
        self.assertEqual(self.summary()["cost"]["total"], 0.0)
        self.assertEqual(self.srv.chat_count, 3)

    def test_a_reply_without_usage_is_counted_apart(self):
        self.srv.push(chat("Rating: 4", usage={}))
        code, _, err = self.run_code("--price", "3,15", "--concurrency", "1", "-o",
                                     self.path("out.jsonl"), "--summary", self.path("s.json"),
                                     self.data)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records()], [None, 0.0033, 0.0033])
        self.assertEqual(self.summary()["cost"], {"total": 0.0066, "per_record": 0.0033,
                                                  "records": 2, "without_usage": 1})
        self.assertIn("  cost: $0.006600 for 2 records, $0.003300 a record; 1 replies without "
                      "usage are not counted", err)

    def test_a_reply_whose_counts_lie_is_counted_apart_not_priced_below_cost(self):
        # A negative count gave money back (a total of -$0.0146 over 5 records) and a count
        # sent as text was priced at nothing: each is a reply without usable usage.
        for usage in ({"prompt_tokens": -1000, "completion_tokens": 20},
                      {"prompt_tokens": "1000", "completion_tokens": 20},
                      {"prompt_tokens": 1000.0, "completion_tokens": 20},
                      {"prompt_tokens": 1000}):
            with self.subTest(usage=usage):
                self.srv.push(chat("Rating: 4", usage=usage))
                code, _, err = self.run_code("--price", "3,15", "--concurrency", "1", "-o",
                                             self.path("out.jsonl"), "--summary",
                                             self.path("s.json"), self.data)
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_cost"] for r in self.records()],
                                 [None, 0.0033, 0.0033])
                self.assertEqual(self.summary()["cost"]["without_usage"], 1)

    def test_replies_imported_from_a_batch_are_priced_by_their_usage(self):
        # The engine paid for them: an import read "cost: $0.000000" for 3,000 prompt tokens.
        code, _, err = self.run_code("--batch-export", self.path("req.jsonl"), "-o",
                                     self.path("exported.jsonl"), self.data)
        self.assertEqual(code, 0, err)
        with open(self.path("req.000.jsonl")) as f, \
                open(self.path("res.jsonl"), "w") as out:
            for line in f:
                reply = {"object": "chat.completion", "model": "judge-model", "usage": USAGE,
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": "Rating: 4"}}]}
                out.write(json.dumps({"custom_id": json.loads(line)["custom_id"], "response": {
                    "status_code": 200, "body": reply}}) + "\n")
        code, _, err = self.run_code("--price", "3,15", "--batch-import", self.path("res.jsonl"),
                                     "-o", self.path("out.jsonl"), "--summary",
                                     self.path("s.json"), self.data)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records()], [0.0033] * 3)
        self.assertEqual(self.summary()["cost"]["total"], 0.0099)

    def test_report_recomputes_the_cost_at_another_price(self):
        code, _, err = self.run_code("--price", "3,15", "-o", self.path("out.jsonl"),
                                     self.data)
        self.assertEqual(code, 0, err)
        code, _, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                 self.path("r.json")])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.summary("r.json")["cost"]["total"], 0.0099)
        code, _, err = run_main(["report", "--price", "1,2", self.path("out.jsonl"),
                                 "--summary", self.path("r.json")])
        self.assertEqual(code, 0, err)  # 1000 * 1 + 20 * 2 = 1040 per million: $0.00104
        self.assertEqual(self.summary("r.json")["cost"]["total"], 0.00312)

    def test_a_panel_costs_its_judges_summed_and_each_judge_its_own(self):
        judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3, 15]}},
            {"name": "b", "url": self.srv.url, "options": {"price": "1,2"}}]))
        code, _, err = run_main(["--judges", judges, "--no-preflight", "-o",
                                 self.path("out.jsonl"), "--summary", self.path("s.json"),
                                 self.data])
        self.assertEqual(code, 0, err)
        record = self.records()[0]
        self.assertEqual((record["a_cost"], record["b_cost"]), (0.0033, 0.00104))
        summaries = self.summary()["judges"]
        self.assertEqual(summaries["a"]["cost"]["total"], 0.0099)
        self.assertEqual(summaries["b"]["cost"]["total"], 0.00312)
        code, _, err = run_main(["--judges", judges, "--jury", "mean", "--no-preflight", "-o",
                                 self.path("jury.jsonl"), "--summary", self.path("j.json"),
                                 self.data])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.records("jury.jsonl")[0]["judge_cost"], 0.00434)
        self.assertEqual(self.summary("j.json")["cost"]["total"], 0.01302)


class PriceValueTest(CostTest):
    """A wrong price from each place it can come from, and the message."""

    def test_flag(self):
        for text in ("3", "a,b", "1,2,3", "-1,2"):  # as typed, a negative one too
            with self.subTest(text=text):
                code, _, err = self.run_code("--price=" + text, self.data)
                self.assertEqual(code, 2)
                self.assertIn("minijudge: error: --price must be IN,OUT: dollars per million "
                              "prompt, completion tokens, each 0 or more; got {!r}".format(text),
                              err)

    def test_judges_file(self):
        judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3]}}]))
        code, _, err = run_main(["--judges", judges, self.data])
        self.assertEqual(code, 2)
        self.assertIn("price must be a pair [IN, OUT] (or \"IN,OUT\") of dollars per million "
                      "prompt and completion tokens, each 0 or more; got [3]", err)

    def test_python(self):
        import minijudge
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.LLMJudge(self.srv.url, price=(1, -2))
        self.assertEqual(str(caught.exception), "price must be a pair [IN, OUT] (or \"IN,OUT\") "
                         "of dollars per million prompt and completion tokens, each 0 or more; "
                         "got (1, -2)")
        self.assertEqual(minijudge.LLMJudge(self.srv.url, price="0.5,1").price, (0.5, 1.0))


if __name__ == "__main__":
    import unittest
    unittest.main()


NOT_JUDGED = ("not judged: its requests would take the run past --max-cost $0.01 ($0.009900 "
              "spent, $0.003300 estimated for this one)")


class MaxCostTest(CostTest):
    """--max-cost stops the run before the request that would pass it: every record
    written, the summary printed, exit 1 with one line; a rerun with --cache goes on."""

    def setUp(self):
        super().setUp()
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(5)])

    def test_stops_cleanly_and_a_rerun_with_the_cache_goes_on(self):
        # each record: $0.0033 spent, estimated below that; the 4th would pass $0.01
        cache = self.path("cache.jsonl")
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.01", "--cache", cache,
                                     "--concurrency", "1", "-o", self.path("out.jsonl"),
                                     self.data)
        self.assertEqual(code, 1, err)
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 3 + ["cost_limit"] * 2)
        self.assertEqual([r["judge_error"] for r in records[3:]], [NOT_JUDGED] * 2)
        self.assertEqual(self.srv.chat_count, 3)
        self.assertIn("  statuses: ok 3, cost_limit 2\n", err)
        self.assertIn("  cost: $0.009900 for 3 records, $0.003300 a record\n", err)
        self.assertEqual(err.splitlines()[-1], "minijudge: error: --max-cost $0.01 reached: "
                         "$0.009900 spent, 2 records not judged (cost_limit); rerun with --cache "
                         + cache + " and a higher --max-cost: the replies in the cache cost "
                         "nothing and do not count against it")
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.01", "--cache", cache,
                                     "--concurrency", "1", "-o", self.path("out.jsonl"),
                                     self.data)  # the 3 cached are free: 2 more fit in $0.01
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records()], [0.0] * 3 + [0.0033] * 2)
        self.assertEqual(self.srv.chat_count, 5)

    def test_without_a_cache_the_line_says_to_use_one(self):
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.01", "--concurrency",
                                     "1", self.data)
        self.assertEqual(code, 1, err)
        self.assertEqual(err.splitlines()[-1], "minijudge: error: --max-cost $0.01 reached: "
                         "$0.009900 spent, 2 records not judged (cost_limit); rerun with a "
                         "higher --max-cost (with --cache, a rerun sends only what it did not "
                         "judge)")

    def test_a_limit_the_first_request_would_pass_sends_nothing(self):
        code, out, err = self.run_code("--price", "3,15", "--max-cost", "0.000001", self.data)
        self.assertEqual(code, 1, err)
        self.assertEqual([json.loads(line)["judge_status"] for line in out.splitlines()],
                         ["cost_limit"] * 5)
        self.assertEqual(self.srv.chat_count, 0)

    def test_threads_do_not_spend_past_the_limit_on_estimates_that_were_low(self):
        # The stub counts 1000 prompt tokens where the estimate counts ~150: eight threads
        # each reserved a low estimate at once and spent $0.0396 under --max-cost 0.02.
        self.srv.delay = 0.05
        data = self.write_jsonl("many.jsonl", [{"question": "q%d" % k, "response": "r"}
                                               for k in range(24)])
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.02", "--concurrency",
                                     "8", "-o", self.path("out.jsonl"), "--summary",
                                     self.path("s.json"), data)
        self.assertEqual(code, 1, err)
        cost = self.summary()["cost"]
        self.assertLessEqual(cost["total"], 0.02)
        self.assertEqual(cost["records"], 6)  # $0.0033 each: the seventh would pass it
        self.assertEqual(self.srv.chat_count, 6)

    def test_an_export_is_refused_not_cut_short(self):
        # It wrote 0 requests and 3 cost_limit records, saying "$0.000000 spent ... rerun
        # with --cache": an export spends nothing; the engine spends later.
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.0000001",
                                     "--batch-export", self.path("req.jsonl"), "-o",
                                     self.path("out.jsonl"), self.data)
        self.assertEqual(code, 2)
        self.assertIn("minijudge: error: --max-cost limits what a run sends; a batch run "
                      "(--batch-export, --batch-import) sends nothing: --dry-run estimates "
                      "what the exported requests will cost\n", err)
        self.assertEqual(os.listdir(self.tmp), ["in.jsonl"])

    def test_wrong_values(self):
        for value, message in (
                ("0", "--max-cost must be dollars, a number above 0; got '0'"),
                ("nan", "--max-cost must be dollars, a number above 0; got 'nan'"),
                ("$5", "--max-cost must be dollars, a number above 0; got '$5'")):
            with self.subTest(value=value):
                code, _, err = self.run_code("--price", "3,15", "--max-cost", value, self.data)
                self.assertEqual(code, 2)
                self.assertIn("minijudge: error: " + message, err)
        code, _, err = self.run_code("--max-cost", "1", self.data)
        self.assertEqual(code, 2)
        self.assertIn("minijudge: error: --max-cost needs a price to count the cost with: "
                      "--price IN,OUT (or \"price\" in a --judges entry's options); "
                      "judge judge has none",
                      err)
        self.assertEqual(self.srv.chat_count, 0)


class KillAndResumeTest(CostTest):
    """kill -9 mid-run, then a rerun with --cache and a --max-cost the whole run would pass:
    it goes on, the cached replies costing nothing and not counted against the limit."""

    def test_sigkill_then_resume_under_the_limit(self):
        import signal
        import subprocess
        import time
        repo = os.path.dirname(HERE)
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(12)])
        cache = self.path("cache.jsonl")
        self.srv.delay = 0.03
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
        proc = subprocess.Popen(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--no-preflight",
             "--price", "3,15", "--max-cost", "1", "--cache", cache, "--concurrency", "2",
             "-o", self.path("killed.jsonl"), data],
            cwd=self.tmp, env=dict(env, PYTHONPATH=repo), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.cached_lines(cache) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.srv.delay = 0.0
        sent = -1
        while sent != self.srv.chat_count:  # a request the kill left in a socket may still land
            sent = self.srv.chat_count
            time.sleep(0.1)
        cached = self.cached_lines(cache)
        self.assertTrue(3 <= cached < 12, cached)
        # 12 records cost $0.0396: more than $0.035, which holds the uncached ones alone
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.035", "--cache", cache,
                                     "--concurrency", "1", "-o", self.path("out.jsonl"), data)
        self.assertEqual(code, 0, err)
        records = self.records()
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 12)
        costs = [r["judge_cost"] for r in records]
        self.assertEqual(costs.count(0.0), cached)
        self.assertEqual(costs.count(0.0033), 12 - cached)
        self.assertEqual(self.srv.chat_count, sent + 12 - cached)

    @staticmethod
    def cached_lines(path):
        try:
            with open(path, "rb") as f:
                return sum(1 for line in f if line.endswith(b"\n"))
        except FileNotFoundError:
            return 0


def by_hand(messages):
    """_estimate_tokens' rule, written out: 4 a message, a token per 4 characters (rounded up)."""
    return sum(4 + (len(m["content"]) + 3) // 4 for m in messages)


def most_by_hand(messages):
    """The most a prompt can cost, written out: 4 a message, a token per UTF-8 byte."""
    return sum(4 + len(m["content"].encode("utf-8")) for m in messages)


MOST_WHY = " (a token per prompt byte: what --max-cost reserves)"


class DryRunEstimateTest(CostTest):
    """--dry-run ends with the whole run's estimate on stderr, before anything is sent."""

    def setUp(self):
        super().setUp()
        self.data = self.write_jsonl("in.jsonl", [
            {"question": "What is 2+2?", "response": "4"},
            {"question": "q", "response": ""},  # empty: nothing sent, nothing counted
            {"question": "Name a prime above " + "ten " * 50, "response": "eleven"}])

    def test_the_estimate_is_that_of_the_prompts_the_run_sends(self):
        code, _, err = self.run_code("--dry-run", "--price", "3,15", "--repeats", "2", self.data)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 0)
        code, _, run_err = self.run_code("--repeats", "2", "--concurrency", "1", self.data)
        self.assertEqual(code, 0, run_err)
        sent = [r.messages for r in self.srv.requests if r.path.endswith("/chat/completions")]
        self.assertEqual(len(sent), 4)
        tokens = sum(by_hand(messages) for messages in sent)
        dollars = (tokens * 3 + 4 * 16 * 15) / 1e6
        most = (sum(most_by_hand(messages) for messages in sent) * 3 + 4 * 16 * 15) / 1e6
        self.assertEqual(err.splitlines()[-1], "minijudge: --dry-run: 4 requests, about {} "
                         "prompt tokens (estimated: a token per 4 characters) and at most 64 "
                         "completion tokens (max_tokens); about ${:.6f} at --price 3,15, at "
                         "most ${:.6f}{}".format(tokens, dollars, most, MOST_WHY))

    def test_without_a_price_no_dollars(self):
        code, _, err = self.run_code("--dry-run", "--max-tokens", "100", self.data)
        self.assertEqual(code, 0, err)
        self.assertRegex(err.splitlines()[-1], r"^minijudge: --dry-run: 2 requests, about \d+ "
                         r"prompt tokens \(estimated: a token per 4 characters\) and at most "
                         r"200 completion tokens \(max_tokens\)$")

    def test_estimate_tokens_rule(self):
        import minijudge
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        for messages, tokens in (
                ([], 0),
                ([{"role": "user", "content": ""}], 4),
                ([{"role": "user", "content": "abcd"}], 5),
                ([{"role": "user", "content": "abcde"}], 6),
                ([{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y"}], 19),
                ([{"role": "user", "content": [{"type": "text", "text": "abcdefgh"}, image]}],
                 4 + 2 + 85)):
            with self.subTest(messages=messages):
                self.assertEqual(minijudge._estimate_tokens(messages), tokens)
