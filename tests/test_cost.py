"""Cost (the sections "Tokens and cost" and "Dry run and cost estimates"): --price and the
cost in each record, the summary and the page, the usage a server reports (or cannot), and
--dry-run's estimate of a run, of a panel and under --tpm; the hostile pass over them.
--max-cost, the cap, is test_cost_cap.py's.

Issue 33 item 3, run economics: --price and the cost in each record and the summary,
through the real command line against the loopback stub, which here reports fixed `usage`
figures so each cost can be checked by hand."""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, chat, run_main  # noqa: E402

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


class PartlyUnknownTest(StubTestCase):
    """Issue 33's cost, one record asked several times (--repeats, --reask): when one of its
    replies came without usage, the record's tokens and cost are unknown, not the other
    replies' alone (that priced a record of two requests as one)."""

    def setUp(self):
        super().setUp()
        self.srv.responder = fixed_usage
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(2)])

    def run_code(self, *argv):
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "--concurrency", "1", "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json")] + list(argv) + [self.data])
        self.assertEqual(code, 0, err)
        return self.records(), self.summary(), err

    def test_a_repeat_without_usage_leaves_the_records_cost_unknown(self):
        self.srv.push(chat("Rating: 4", usage={}))  # the first record's first repeat
        records, summary, err = self.run_code("--repeats", "2")
        # the second record: two requests of $0.0033 each; the first: one of them unknown
        self.assertEqual([r["judge_cost"] for r in records], [None, 0.0066])
        self.assertEqual(set(records[0]["judge_usage"].values()), {None})
        self.assertEqual(summary["cost"], {"total": 0.0066, "per_record": 0.0066,
                                           "records": 1, "without_usage": 1})
        self.assertIn("1 replies without usage are not counted", err)

    def test_a_reask_without_usage_leaves_the_records_cost_unknown(self):
        self.srv.push(chat("no idea", usage={}))  # read on the re-ask, which has usage
        records, summary, _ = self.run_code("--reask", "1")
        self.assertEqual([r["judge_status"] for r in records], ["ok", "ok"])
        self.assertEqual([r["judge_cost"] for r in records], [None, 0.0033])
        self.assertEqual(summary["cost"]["without_usage"], 1)


class CostPageTest(StubTestCase):
    """Issue 33: the page (--html) says what the run spent, as the printed summary does."""

    def test_the_page_says_the_tokens_and_the_cost(self):
        self.srv.responder = fixed_usage
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(3)])
        page = self.path("page.html")
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "-o", self.path("out.jsonl"), "--html", page, data])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        spent = ("<tr><th>spent</th><td>tokens: 3000 prompt, 60 completion<br>cost: "
                 "$0.009900 for 3 records, $0.003300 a record</td></tr>")
        self.assertIn(spent, html)
        code, _, err = run_main(["report", self.path("out.jsonl"), "--html", page])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            self.assertIn(spent, f.read())  # the records' costs, read back


class PriceWordsTest(StubTestCase):
    """--price is two plain numbers: float() alone read '1_0' as 10, and a flag given
    'nan,1' was refused with its parsed form, (nan, 1.0), not the text the user typed."""

    def test_each_wrong_price_is_refused_in_its_own_words(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for text in ("1_0,2", "nan,1", "inf,1", "1e400,1", "1,2,3", "abc", "0x10,1"):
            with self.subTest(text=text):
                code, _, err = run_main(["--judge-url", self.srv.url, "--price", text,
                                         "--dry-run", data])
                self.assertEqual((code, err.strip().splitlines()[-1]), (
                    2, "minijudge: error: --price must be IN,OUT: dollars per million prompt, "
                       "completion tokens, each 0 or more; got {!r}".format(text)))
        code, _, err = run_main(["--judge-url", self.srv.url, "--price", " .5 , 1e2 ",
                                 "--dry-run", data])
        self.assertEqual(code, 0, err)
        self.assertIn("at --price 0.5,100", err)


class StopWordsTest(StubTestCase):
    """--max-cost's first cost_limit said '$0.003300 spent' where the summary then said
    $0.009900: the records in flight were not named. Now what they hold is said, and the
    two add up to the run's total."""

    def test_the_first_cost_limit_names_what_the_records_in_flight_hold(self):
        import re
        self.srv.responder = fixed_usage
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(12)])
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "--max-cost", "0.01", "--concurrency", "4", "-o",
                                 self.path("out.jsonl"), "--summary", self.path("s.json"),
                                 data])
        self.assertEqual(code, 1, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["cost"]["total"], 0.0099)
        first = re.search(r"first cost_limit: not judged: its requests would take the run past "
                          r"--max-cost \$0\.01 \(\$([\d.]+) spent(?:, \$([\d.]+) held for the "
                          r"records being judged)?, \$0\.003300 estimated for this one\)", err)
        self.assertIsNotNone(first, err)
        spent, held = float(first.group(1)), float(first.group(2) or 0)
        self.assertAlmostEqual(spent + held, 0.0099)


def either(request):
    """A binary question answered yes, a rating 4; each with the same usage."""
    if "yes" in request.messages[-1]["content"].lower():
        return chat("Yes", usage=dict(USAGE))
    return chat("Rating: 4", usage=dict(USAGE))


class PanelDryRunTest(StubTestCase):
    """--dry-run's estimate covers every judge of a --judges panel, each at its own template
    and price (it counted the first judge alone: a panel of three was estimated at a third)."""

    def setUp(self):
        super().setUp()
        self.srv.responder = either
        self.data = self.write_jsonl("in.jsonl", [
            {"question": "What is 2+2?", "response": "4", "answer": "4"},
            {"question": "q", "response": ""},  # empty: nothing sent, nothing counted
            {"question": "Name a prime above " + "ten " * 50, "response": "eleven",
             "answer": "13"}])
        self.judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3, 15]}},
            {"name": "b", "url": self.srv.url, "template": "binary",
             "options": {"price": "1,2", "max_tokens": 8, "repeats": 2}}]))

    def sent(self):
        """Each judge's prompts, as a real run sends them: {name: [messages, ...]}."""
        code, _, err = run_main(["--judges", self.judges, "--no-preflight", "--concurrency",
                                 "1", "-o", self.path("out.jsonl"), self.data])
        self.assertEqual(code, 0, err)
        chats = [r for r in self.srv.requests if r.path.endswith("/chat/completions")]
        binary = [r.messages for r in chats if "yes" in r.messages[-1]["content"].lower()]
        rating = [r.messages for r in chats if r.messages not in binary]
        return rating, binary

    def test_every_judge_is_counted_at_its_own_price(self):
        code, _, err = run_main(["--judges", self.judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 0)
        rating, binary = self.sent()
        self.assertEqual((len(rating), len(binary)), (2, 4))
        a_tokens = sum(by_hand(m) for m in rating)
        b_tokens = sum(by_hand(m) for m in binary)
        a_cost = (a_tokens * 3 + 2 * 16 * 15) / 1e6
        b_cost = (b_tokens * 1 + 4 * 8 * 2) / 1e6
        a_most = (sum(most_by_hand(m) for m in rating) * 3 + 2 * 16 * 15) / 1e6
        b_most = (sum(most_by_hand(m) for m in binary) * 1 + 4 * 8 * 2) / 1e6
        lines = err.splitlines()[-3:]
        self.assertEqual(lines[0], "minijudge: --dry-run: judge a: 2 requests, about {} prompt "
                         "tokens and at most 32 completion tokens; about ${:.6f} at --price "
                         "3,15, at most ${:.6f}".format(a_tokens, a_cost, a_most))
        self.assertEqual(lines[1], "minijudge: --dry-run: judge b: 4 requests, about {} prompt "
                         "tokens and at most 32 completion tokens; about ${:.6f} at --price "
                         "1,2, at most ${:.6f}".format(b_tokens, b_cost, b_most))
        self.assertEqual(lines[2], "minijudge: --dry-run: 6 requests, about {} prompt tokens "
                         "(estimated: a token per 4 characters) and at most 64 completion "
                         "tokens (max_tokens); about ${:.6f} at the judges' prices, at most "
                         "${:.6f}{}".format(a_tokens + b_tokens, a_cost + b_cost,
                                            a_most + b_most, MOST_WHY))

    def test_a_judge_without_a_price_is_named_and_not_priced(self):
        self.judges = self.write("judges.json", json.dumps([
            {"name": "a", "url": self.srv.url, "options": {"price": [3, 15]}},
            {"name": "b", "url": self.srv.url}]))
        code, _, err = run_main(["--judges", self.judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertRegex(err.splitlines()[-2], r"^minijudge: --dry-run: judge b: 2 requests, "
                         r"about \d+ prompt tokens and at most 32 completion tokens$")
        self.assertRegex(err.splitlines()[-1], r"^minijudge: --dry-run: 4 requests, about \d+ "
                         r"prompt tokens \(estimated: a token per 4 characters\) and at most "
                         r"64 completion tokens \(max_tokens\); about \$\d\.\d{6} at the "
                         r"judges' prices, at most \$\d\.\d{6} \(a token per prompt byte: what "
                         r"--max-cost reserves\), judge b not counted \(no --price\)$")


class DryRunTpmTest(StubTestCase):
    """--dry-run and --tpm: a record whose request is estimated over --tpm is not sent by the
    run (http_error, 'not sent: ...'); the dry run, which estimates the run before it sends
    anything, says how many such requests there are, not only the run."""

    def test_the_requests_over_tpm_are_counted_before_the_run(self):
        data = self.write_jsonl("in.jsonl", [
            {"question": "q" * 40000, "response": "r"},  # about 10,000 tokens
            {"question": "short", "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--tpm", "6000", "--dry-run",
                                 data])
        self.assertEqual(code, 0, err)
        self.assertIn("; 1 request over --tpm 6000 will not be sent (a request's estimated "
                      "tokens and max_tokens must fit in a minute)", err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_each_judge_of_a_panel_says_its_own(self):
        judges = self.write("judges.json", '[{"name": "a", "options": {"tpm": 6000}}, '
                                           '{"name": "b"}]')
        data = self.write_jsonl("in.jsonl", [{"question": "q" * 40000, "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judges", judges,
                                 "--dry-run", data])
        self.assertEqual(code, 0, err)
        lines = [line for line in err.splitlines() if "--dry-run: judge" in line]
        self.assertIn("1 request over --tpm 6000 will not be sent", lines[0])
        self.assertNotIn("over --tpm", lines[1])

    def test_no_tpm_no_words(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q" * 40000, "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--dry-run", data])
        self.assertEqual(code, 0, err)
        self.assertNotIn("--tpm", err)


BAD = "I think the answer is quite good."


def bad_always(request):
    return chat(BAD, usage=dict(USAGE))


class CostHostileTest(StubTestCase):
    """A hostile pass over issue 33 (run economics), through the real command line against the
    loopback stub: a server's usage that cannot be (negative, true, a float, NaN, text,
    10**30), a record re-asked more often than its run allowed, and --dry-run's run line
    with a panel's re-asks."""

    def setUp(self):
        super().setUp()
        self.srv.responder = fixed_usage
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(3)])

    def run_code(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--no-preflight", "--judge-model",
                         "judge-model", "-o", self.path("out.jsonl"), "--summary",
                         self.path("s.json")] + list(argv) + [self.data])

    def report(self, *argv, name="out.jsonl"):
        return run_main(["report", "--max-error-rate", "1", "--summary", self.path("r.json")]
                        + list(argv)
                        + [self.path(name)])


class ImpossibleUsageHostileTest(CostHostileTest):
    """Counts no server can mean were written into the record as sent, summed into the
    summary's tokens (-800 prompt tokens, a total of 10**30) and then refused by report
    over the run's own file: 'judge_usage must be an object of token counts'."""

    CASES = (  # (the server's usage, the record's)
        ({"prompt_tokens": -1000, "completion_tokens": 20, "total_tokens": -980},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": True, "completion_tokens": 20, "total_tokens": 21},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": 21}),
        ({"prompt_tokens": 1000.0, "completion_tokens": 20, "total_tokens": 1020.5},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": float("nan"), "completion_tokens": float("inf"),
          "total_tokens": 7},
         {"prompt_tokens": None, "completion_tokens": None, "total_tokens": 7}),
        ({"prompt_tokens": "1000", "completion_tokens": 20, "total_tokens": "1020"},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": 10 ** 30, "completion_tokens": 20, "total_tokens": 10 ** 30 + 20},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": 1000, "completion_tokens": 2 ** 62, "total_tokens": 1020},
         {"prompt_tokens": 1000, "completion_tokens": None, "total_tokens": 1020}),
    )

    def run_one(self, usage):
        """A run whose first reply says ``usage`` and the other two USAGE."""
        self.srv.push(chat("Rating: 4", usage=usage))
        code, _, err = self.run_code("--price", "3,15", "--concurrency", "1")
        self.assertEqual(code, 0, err)
        return err

    def assert_summed_without(self, kept, summary):
        """The summary's tokens: the two good replies' and what ``kept`` held."""
        tokens = {name: 2 * count + (kept.get(name) or 0) for name, count in USAGE.items()}
        self.assertEqual(summary["tokens"], tokens)

    def test_each_impossible_count_is_null_in_the_record_and_left_out_of_the_summary(self):
        for usage, kept in self.CASES:
            with self.subTest(usage=usage):
                err = self.run_one(usage)
                records = self.records()
                self.assertEqual(records[0]["judge_usage"], kept)
                self.assertEqual([r["judge_cost"] for r in records], [None, 0.0033, 0.0033])
                self.assert_summed_without(kept, self.summary())
                self.assertEqual(self.summary()["cost"], {
                    "total": 0.0066, "per_record": 0.0033, "records": 2, "without_usage": 1})
                self.assertNotIn("-", err.split("tokens: ")[1].split("\n")[0])

    def test_the_record_is_strict_json(self):
        # NaN and Infinity were written as sent: no JSON, and jq or JSON.parse refuse the line
        self.run_one({"prompt_tokens": float("nan"), "completion_tokens": float("inf")})
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            line = f.readline()
        json.loads(line, parse_constant=lambda name: self.fail("{} in {}".format(name, line)))

    def test_no_count_left_is_no_usage(self):
        self.run_one({"prompt_tokens": -1, "completion_tokens": "x", "total_tokens": 1.5})
        self.assertIsNone(self.records()[0]["judge_usage"])
        self.assertEqual(self.summary()["tokens"], {name: 2 * count
                                                    for name, count in USAGE.items()})

    def test_report_over_the_run_file_agrees_with_the_run(self):
        for usage, _ in self.CASES:
            with self.subTest(usage=usage):
                self.run_one(usage)
                code, _, err = self.report()
                self.assertEqual(code, 0, err)
                ran, reported = self.summary(), self.summary("r.json")
                self.assertEqual(reported["tokens"], ran["tokens"])
                self.assertEqual(reported["cost"], ran["cost"])
                code, _, err = self.report("--price", "3,15")
                self.assertEqual(code, 0, err)
                self.assertEqual(self.summary("r.json")["cost"], ran["cost"])

    def test_a_reask_with_an_impossible_count_leaves_the_sum_unknown_not_low(self):
        # the first reply said -1000 prompt tokens: summed over the re-ask, the record's
        # prompt tokens read 1000 and the record was priced as one request ($0.0036)
        replies = [chat(BAD, usage={"prompt_tokens": -1000, "completion_tokens": 20,
                                    "total_tokens": 1020}), chat("Rating: 4", usage=USAGE)]
        self.srv.push(*replies)
        code, _, err = self.run_code("--price", "3,15", "--concurrency", "1", "--reask", "1")
        self.assertEqual(code, 0, err)
        first = self.records()[0]
        self.assertEqual(first["judge_reasks"], [BAD])
        self.assertEqual(first["judge_usage"], {"prompt_tokens": None, "completion_tokens": 40,
                                                "total_tokens": 2040})
        self.assertIsNone(first["judge_cost"])
        self.assertEqual(self.summary()["cost"]["without_usage"], 1)

    def test_report_reads_an_older_file_whose_counts_no_run_writes_now(self):
        # an older minijudge wrote what the server sent; report names the field, no traceback
        self.run_one(dict(USAGE))
        records = self.records()
        for count in (-5, True, 10 ** 30):
            with self.subTest(count=count):
                usage = dict(USAGE, prompt_tokens=count)
                records[0]["judge_usage"] = usage
                self.write_jsonl("old.jsonl", records)
                code, out, err = self.report(name="old.jsonl")
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: "
                                 "judge_usage must be an object of token counts (0 or more) "
                                 "or null; got {!r}\n".format(self.path("old.jsonl"), usage)))
        for count in ("1000", 1000.0):  # what is no whole number is skipped, as a run skips it
            with self.subTest(count=count):
                records[0]["judge_usage"] = dict(USAGE, prompt_tokens=count)
                self.write_jsonl("old.jsonl", records)
                code, _, err = self.report(name="old.jsonl")
                self.assertEqual(code, 0, err)
                self.assertEqual(self.summary("r.json")["tokens"]["prompt_tokens"], 2000)


class ReasksPastTheRunHostileTest(CostHostileTest):
    """A record holding more re-asked replies than its run's --reask allowed was counted as
    if sent (report: 're-asked: ... (9 re-asks sent)' of a --reask 1 run); report refuses it
    as it refuses any value no run writes: exit 2, file, line, field."""

    def setUp(self):
        super().setUp()
        self.srv.responder = bad_always

    def assert_refused(self, records, message):
        self.write_jsonl("bad.jsonl", records)
        code, out, err = self.report(name="bad.jsonl")
        self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: {}\n".format(
            self.path("bad.jsonl"), message)))

    def test_more_reasks_than_the_run_allowed_are_refused(self):
        code, _, err = self.run_code("--reask", "1", "--max-error-rate", "1")
        records = self.records()
        self.assertEqual(records[0]["judge_reasks"], [BAD])
        code, _, err = self.report()
        self.assertEqual(code, 0, err)  # the run's own file reads
        records[0]["judge_reasks"] = [BAD] * 3
        self.assert_refused(records, "judge_reasks must be a list of at most 1 replies "
                            "re-asked (the run's --reask 1); got a list of 3")

    def test_a_repeats_member_with_too_many_reasks_is_refused_by_its_place(self):
        code, _, err = self.run_code("--reask", "2", "--repeats", "2", "--max-error-rate", "1")
        records = self.records()
        self.assertEqual(records[0]["judge_members"][1]["reasks"], [BAD, BAD])
        records[0]["judge_members"][1]["reasks"] = [BAD] * 3
        self.assert_refused(records, "judge_members.1.reasks must be a list of at most 2 "
                            "replies re-asked (the run's --reask 2); got a list of 3")

    def test_a_jury_member_is_held_to_its_own_judges_reask(self):
        judges = self.write("j.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "m", "options": {"reask": 1}},
            {"name": "b", "url": self.srv.url, "model": "m", "options": {"reask": 2}}]))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", "--no-preflight",
                                 "--max-error-rate", "1", "-o", self.path("out.jsonl"),
                                 self.data])
        records = self.records()
        members = records[0]["judge_members"]
        self.assertEqual((members["a"]["reasks"], members["b"]["reasks"]),
                         ([BAD], [BAD, BAD]))
        code, _, err = self.report()
        self.assertEqual(code, 0, err)
        members["a"]["reasks"] = [BAD, BAD]  # b's limit, not a's
        self.assert_refused(records, "judge_members.a.reasks must be a list of at most 1 "
                            "replies re-asked (the run's --reask 1); got a list of 2")

    def test_a_stamp_whose_reask_is_no_count_is_refused(self):
        code, _, err = self.run_code("--reask", "1", "--max-error-rate", "1")
        records = self.records()
        for record in records:  # a run's records share one stamp
            record["judge_run"]["request"]["reask"] = "9"
        self.assert_refused(records, "judge_run: request must be an object (its on_failure a "
                            "number or null, its reask 0 or more, its rubric a list of {{name, "
                            "scale, weight}}), or a list of them; got "
                            "{!r}".format(records[0]["judge_run"]["request"]))


class DryRunReasksHostileTest(CostHostileTest):
    """--dry-run with several judges: each judge's line said '--reask N: up to K re-asks
    more (at most $X)', the run's line left them out, so its total read below the worst
    case --max-cost reserves for."""

    def dry_run(self, *entries):
        judges = self.write("j.json", json.dumps([dict(entry, url=self.srv.url, model="m")
                                                  for entry in entries]))
        code, _, err = run_main(["--judges", judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 0)
        return err.splitlines()[-len(entries) - 1:]

    @staticmethod
    def most(line):
        """The dollars a line's re-asks may cost: '(at most $X)'."""
        return float(re.search(r"re-asks more \(at most \$([0-9.]+)\)", line).group(1))

    def test_the_run_line_adds_every_judges_reasks_and_their_cost(self):
        a, b, run = self.dry_run({"name": "a", "options": {"reask": 1, "price": [3, 15]}},
                                 {"name": "b", "options": {"reask": 2, "price": "1,2"}})
        self.assertIn("; --reask 1: up to 3 re-asks more (at most $", a)
        self.assertIn("; --reask 2: up to 6 re-asks more (at most $", b)
        self.assertRegex(run, r"^minijudge: --dry-run: 6 requests, .* at the judges' prices, "
                         r"at most \$[0-9.]+ \(a token per prompt byte: what --max-cost "
                         r"reserves\); up to 9 re-asks more \(at most \$[0-9.]+\)$")
        self.assertAlmostEqual(self.most(run), self.most(a) + self.most(b), delta=2e-6)

    def test_an_unpriced_judges_reasks_are_counted_not_priced(self):
        a, b, run = self.dry_run({"name": "a", "options": {"reask": 1, "price": [3, 15]}},
                                 {"name": "b", "options": {"reask": 1}})
        self.assertTrue(run.endswith("judge b not counted (no --price); up to 6 re-asks more "
                                     "(at most ${:.6f})".format(self.most(a))), run)

    def test_no_judge_priced_no_dollars_and_no_reask_no_words(self):
        _, _, run = self.dry_run({"name": "a", "options": {"reask": 2}}, {"name": "b"})
        self.assertTrue(run.endswith("(max_tokens); up to 6 re-asks more"), run)
        _, _, run = self.dry_run({"name": "a"}, {"name": "b"})
        self.assertTrue(run.endswith("(max_tokens)"), run)


if __name__ == "__main__":
    unittest.main()
