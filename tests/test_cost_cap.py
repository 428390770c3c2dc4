"""Issue 44, cost: --max-cost is a cap the run never spends past, against a server whose
usage is adversarial: a long first record whose tokens are few for its length, then many
short ones counted at the most a request can cost (a token per prompt byte and 4 a
message, every completion at max_tokens), some replies without usage, 8 threads. What
the server charged is summed from its own record of each request, told or not; and the
stop line, the printed summary, --summary and the page say one figure for what was spent.
Through the real command line, in a subprocess.
"""
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
from stub import PYTHON, StubTestCase, chat, error, run_main, run_process  # noqa: E402
from test_cost import CostTest  # noqa: E402

PRICE = (3, 15)  # dollars per million prompt, completion tokens
LONG = "Explain this. " * 430  # 6,020 characters


class AdversarialServer:
    """A responder that charges each request and says so in its usage, except every third
    short one, whose usage it leaves out (it charged it all the same)."""

    def __init__(self):
        self.charged = []  # (prompt tokens, completion tokens) of each request
        self.lock = threading.Lock()

    def __call__(self, request):
        texts = [m["content"] for m in request.messages]
        completion = request.json["max_tokens"]
        if LONG in texts[-1]:  # few tokens for its length: 5 characters a token
            prompt = sum(len(text) for text in texts) // 5
        else:  # the most: a token per byte and 4 a message
            prompt = sum(len(text.encode("utf-8")) + 4 for text in texts)
        with self.lock:
            self.charged.append((prompt, completion))
            told = LONG in texts[-1] or len(self.charged) % 3
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}
        return chat("Rating: 4", usage=usage if told else {})

    def dollars(self):
        with self.lock:
            return sum(p * PRICE[0] + c * PRICE[1] for p, c in self.charged) / 1e6


class CostCapTest(StubTestCase):
    def run_cli(self, *argv):
        return run_process("--judge-url", self.srv.url, "--judge-model", "judge-model",
                           "--no-preflight", *argv, cwd=ROOT, text=True, timeout=120)

    def test_the_cap_holds_against_adversarial_usage_and_every_place_says_one_figure(self):
        # A long first record set the scale; the short ones after it were reserved at a
        # third of what they cost, and 8 in flight spent $0.031 under --max-cost 0.02
        server = AdversarialServer()
        self.srv.responder, self.srv.delay = server, 0.05
        records = [{"question": LONG, "response": "r"}] + [
            {"question": "q%d" % k, "response": "r"} for k in range(40)]
        data = self.write_jsonl("in.jsonl", records)
        run = self.run_cli(data, "--price", "3,15", "--max-cost", "0.02", "--concurrency", "8",
                           "-o", self.path("out.jsonl"), "--summary", self.path("s.json"),
                           "--html", self.path("page.html"))
        self.assertEqual(run.returncode, 1, run.stderr)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            statuses = [json.loads(line)["judge_status"] for line in f]
        self.assertIn("cost_limit", statuses)
        self.assertGreater(statuses.count("ok"), 5)
        charged = server.dollars()
        self.assertLessEqual(charged, 0.02, "the server charged ${:.6f}".format(charged))

        with open(self.path("s.json"), encoding="utf-8") as f:
            cost = json.load(f)["cost"]
        stop = run.stderr.splitlines()[-1]
        spent = re.match(r"minijudge: error: --max-cost \$0\.02 reached: \$([\d.]+) spent, \d+ "
                         r"replies without usage not counted \(held at their most: \$([\d.]+)\)"
                         r", \d+ records not judged \(cost_limit\); ", stop)
        self.assertIsNotNone(spent, stop)
        self.assertEqual(spent.group(1), "{:.6f}".format(cost["total"]))
        self.assertGreater(cost["without_usage"], 0)
        self.assertIn(" {} replies without usage not counted".format(cost["without_usage"]),
                      stop)
        line = "cost: ${:.6f} for {} records, ${:.6f} a record; {} replies without usage " \
               "are not counted".format(cost["total"], cost["records"], cost["per_record"],
                                        cost["without_usage"])
        self.assertIn("\n  " + line + "\n", run.stderr)
        with open(self.path("page.html"), encoding="utf-8") as f:
            self.assertIn(line + "</td></tr>", f.read())
        # what was said covers what was charged, and stays under the cap
        held = float(spent.group(2))
        self.assertLessEqual(charged, cost["total"] + held + 1e-9)
        self.assertLessEqual(cost["total"] + held, 0.02)

    def dry_run_most(self, *argv):
        """The dollars --dry-run says the run can cost at most (its re-asks' too)."""
        run = self.run_cli("--dry-run", *argv)
        self.assertEqual(run.returncode, 0, run.stderr)
        line = run.stderr.splitlines()[-1]
        found = re.findall(r"at most \$([\d.]+)", line)
        self.assertTrue(found, line)
        return line, sum(float(dollars) for dollars in found)

    def test_a_cap_of_the_dry_runs_most_lets_every_record_through(self):
        # --dry-run and --max-cost add up the same function's sum: at that cap (rounded up
        # to the next millionth, as the dry run prints it), no record is left unjudged
        server = AdversarialServer()
        self.srv.responder = server
        data = self.write_jsonl("in.jsonl", [{"question": "q%d " % k * k, "response": "r"}
                                             for k in range(1, 25)])
        _, most = self.dry_run_most(data, "--price", "3,15", "--reask", "1")
        run = self.run_cli(data, "--price", "3,15", "--reask", "1", "--concurrency", "8",
                           "--max-cost", "{:.6f}".format(most + 1e-6), "-o",
                           self.path("out.jsonl"))
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            self.assertEqual({json.loads(line)["judge_status"] for line in f}, {"ok"})
        self.assertLessEqual(server.dollars(), most)

    def test_the_dry_run_counts_every_pair_of_systems(self):
        # it counted the first two systems' pair alone: 3 systems were estimated at a third
        # of the 3 pairs asked, and --max-cost reserved that third
        self.srv.responder = lambda request: chat("[[A]]")
        data = self.write_jsonl("in.jsonl", [
            {"question": "q", "responses": {"x": "a", "y": "b" * 400, "z": "c" * 900}}])
        line, most = self.dry_run_most(data, "--mode", "systems", "--price", "3,15")
        run = self.run_cli(data, "--mode", "systems", "--concurrency", "1")
        self.assertEqual(run.returncode, 0, run.stderr)
        sent = [r.json for r in self.srv.requests if r.path.endswith("/chat/completions")]
        self.assertEqual(len(sent), 6)  # 3 pairs, each in both orders
        self.assertTrue(line.startswith("minijudge: --dry-run: 6 requests, "), line)
        charged = sum(sum(len(m["content"].encode("utf-8")) + 4 for m in body["messages"]) * 3
                      + body["max_tokens"] * 15 for body in sent) / 1e6
        self.assertLessEqual(charged, most)



def most_usage(request):
    """A reply whose usage is the most its request can cost: a token per prompt byte and 4
    a message, the completion at max_tokens (honest, and at the bound)."""
    prompt = sum(len(m["content"].encode("utf-8")) + 4 for m in request.messages)
    completion = request.json["max_tokens"]
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


class CostCapHostileTest(StubTestCase):
    """A hostile pass over --price and --max-cost (issue 44): what a run spends, each place
    that says it, and the cap, against servers whose usage is honest, beyond the bound, or
    changes over the run. In this process (run_main), to stay quick."""

    def run_code(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--no-preflight"] + list(argv))

    @staticmethod
    def cost_line(err):
        return [line for line in err.splitlines() if line.startswith("  cost: ")]

    def test_report_price_counts_a_record_never_sent_as_the_run_did(self):
        # report --price priced each cost_limit record (never sent) and each record that got
        # no reply as a reply without usage: "3 replies without usage are not counted" where
        # the run, and report without --price, said none
        self.srv.responder = lambda request: chat("Rating: 4", usage=most_usage(request))
        self.srv.push(error(400, "bad request"))  # the first record gets no reply
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(6)])
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.005", "--concurrency",
                                     "1", "-o", self.path("out.jsonl"), data)
        self.assertEqual(code, 1, err)
        statuses = [r["judge_status"] for r in self.records()]
        self.assertEqual(statuses[0], "http_error")
        self.assertIn("cost_limit", statuses)
        ran = self.cost_line(err)
        self.assertEqual(len(ran), 1, err)
        self.assertNotIn("without usage", ran[0])
        for price in ([], ["--price", "3,15"]):
            with self.subTest(price=price):
                code, out, err = run_main(["report", self.path("out.jsonl")] + price)
                self.assertEqual(self.cost_line(err + out), ran)

    def dry_most(self, *argv):
        """The dollars --dry-run says the run can cost at most, its re-asks' too."""
        code, _, err = self.run_code("--dry-run", *argv)
        self.assertEqual(code, 0, err)
        return sum(float(d) for d in re.findall(r"at most \$([\d.]+)", err.splitlines()[-1]))

    def test_records_reasked_within_their_reserve_do_not_shrink_the_cap(self):
        # Each record's first reply is unread and its re-ask read, every usage at the most
        # its request can cost: within what --dry-run says. The reserves were scaled by what
        # records cost against their most without the re-asks, so every record re-asked
        # counted as a server counting twice its bound: 8 threads stopped at a third of the
        # dry run's most ($0.09 of $0.31 with --reask 3)
        charged = []

        def reask_each(request):
            usage = most_usage(request)
            charged.append(usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15)
            return chat("Rating: 4" if len(request.messages) > 1 else "no idea", usage=usage)
        self.srv.responder = reask_each
        data = self.write_jsonl("in.jsonl", [{"question": "q%d " % k + "w " * k, "response": "r"}
                                             for k in range(24)])
        most = self.dry_most("--price", "3,15", "--reask", "1", data)
        code, _, err = self.run_code("--price", "3,15", "--reask", "1", "--max-cost",
                                     "{:.6f}".format(most + 1e-6), "--concurrency", "8", "-o",
                                     self.path("out.jsonl"), data)
        self.assertEqual(code, 0, err)
        self.assertEqual({r["judge_status"] for r in self.records()}, {"ok"})
        self.assertEqual(len(charged), 48)
        self.assertLessEqual(sum(charged) / 1e6, most)

    def test_a_cap_passed_by_a_server_counting_past_the_bound_is_said(self):
        # A chat template adding 2,000 tokens to each prompt: more than the most a request
        # can cost, so no reserve holds it. The one record cost $0.0079 under --max-cost
        # 0.005, and the run exited 0 without a word of the cap
        def template(request):
            usage = most_usage(request)
            usage["prompt_tokens"] += 2000
            return chat("Rating: 4", usage=usage)
        self.srv.responder = template
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.005", "--summary",
                                     self.path("s.json"), data)
        self.assertEqual(code, 1, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            total = json.load(f)["cost"]["total"]
        self.assertGreater(total, 0.005)
        self.assertEqual(err.splitlines()[-1], "minijudge: error: --max-cost $0.005 passed: "
                         "${:.6f} spent: the server counted more tokens than the most a "
                         "request can take (a token per prompt byte and 4 a message, each "
                         "reply at max_tokens), so the cap could not be kept".format(total))

    def test_threads_keep_the_cap_once_a_server_counts_past_the_bound(self):
        # The same chat template: a long first record cost 1.3 times its most, each short one
        # 7 times. Reserves were scaled by the first, and 16 threads sent 16 short records at
        # once, each reserved at a fifth of its cost: $0.26 spent under --max-cost 0.1. Once
        # a record costs more than its reserve, the records go one at a time, each reserved
        # at the most any record cost against its own most
        charged = []

        def template(request):
            usage = most_usage(request)
            usage["prompt_tokens"] += 2000
            charged.append(usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15)
            return chat("Rating: 4", usage=usage)
        self.srv.responder = template
        data = self.write_jsonl("in.jsonl", [{"question": LONG, "response": "r"}] + [
            {"question": "q%d" % k, "response": "r"} for k in range(40)])
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.1", "--concurrency",
                                     "16", "-o", self.path("out.jsonl"), data)
        self.assertEqual(code, 1, err)
        self.assertIn("cost_limit", {r["judge_status"] for r in self.records()})
        self.assertLessEqual(sum(charged) / 1e6, 0.1, err.splitlines()[-1])
        self.assertIn(" reached: ", err.splitlines()[-1])

    def test_a_reply_limit_the_server_sets_is_counted_at_its_longest(self):
        # --extra-body '{"max_tokens": null}' leaves a reply's length to the server: --dry-run
        # ended in a TypeError's traceback, and under --max-cost each record was an
        # internal_error. And a max_completion_tokens above max_tokens, which vLLM reads
        # first, was not counted: the dry run said 16 completion tokens where 4,000 can come
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for body, most in (('{"max_tokens": null}', 10 ** 9),
                           ('{"max_completion_tokens": 4000}', 4000)):
            with self.subTest(body=body):
                code, _, err = self.run_code("--extra-body", body, "--price", "3,15",
                                             "--dry-run", data)
                self.assertEqual(code, 0, err)
                self.assertIn(" and at most {} completion tokens (max_tokens); ".format(most),
                              err.splitlines()[-1])
        code, _, err = self.run_code("--extra-body", '{"max_tokens": null}', "--price", "3,15",
                                     "--max-cost", "1", "-o", self.path("out.jsonl"), data)
        self.assertEqual(code, 1, err)
        self.assertEqual([r["judge_status"] for r in self.records()], ["cost_limit"])
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_cap_is_a_plain_number_as_a_price_is(self):
        # float() read --max-cost 0_5 as 5: a cap ten times the one typed, where --price
        # refuses 1_0
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for text in ("0_5", "1_000", "$5", "nan", "-1", "1e999"):
            with self.subTest(text=text):
                code, _, err = self.run_code("--price", "3,15", "--max-cost", text, data)
                self.assertEqual((code, err.splitlines()[-1]), (
                    2, "minijudge: error: --max-cost must be dollars, a number above 0; got "
                       "{!r}".format(text)))
        self.assertEqual(self.srv.chat_count, 0)
        code, _, err = self.run_code("--price", "3,15", "--max-cost", " 1e-2 ", data)
        self.assertEqual(code, 0, err)

    def test_a_cap_of_exactly_the_dry_runs_most_judges_every_record(self):
        # Two records at most $0.00192 and $0.001938: --dry-run says $0.003858, and the run
        # under --max-cost 0.003858 left the second unjudged, its reserve added in floating
        # point to 0.0038580000000000003
        self.srv.responder = lambda request: chat("Rating: 4", usage=most_usage(request))
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"},
                                             {"question": "qwwwwww", "response": "r"}])
        self.assertEqual(self.dry_most("--price", "3,15", data), 0.003858)
        code, _, err = self.run_code("--price", "3,15", "--max-cost", "0.003858",
                                     "--concurrency", "1", "-o", self.path("out.jsonl"), data)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_cost"] for r in self.records()], [0.00192, 0.001938])

    def test_a_record_partly_from_the_cache_costs_what_was_sent(self):
        # A rerun with --repeats 3 over a cache of 2 repeats sends one request a record, and
        # a rerun with --reask 1 over a cache of unread replies sends the re-ask alone; each
        # record's judge_cost counted the cached replies too: $0.017307 said for $0.005769
        # charged, and $0.012906 for $0.007137
        charged = []

        def answer(request):
            usage = most_usage(request)
            charged.append(usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15)
            return chat("Rating: 4" if len(request.messages) > 1 else "no idea", usage=usage)
        self.srv.responder = answer
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(3)])
        for first, then in ((["--repeats", "2"], ["--repeats", "3"]), ([], ["--reask", "1"])):
            with self.subTest(then=then):
                cache = self.path("cache%s.jsonl" % then[0])
                code, _, err = self.run_code("--price", "3,15", "--cache", cache, *first, data)
                del charged[:]
                code, _, err = self.run_code("--price", "3,15", "--cache", cache, *then, "-o",
                                             self.path("out.jsonl"), "--summary",
                                             self.path("s.json"), data)
                self.assertEqual(len(charged), 3, err)
                spent = sum(charged) / 1e6
                costs = [r["judge_cost"] for r in self.records()]
                self.assertAlmostEqual(sum(costs), spent, places=9)
                with open(self.path("s.json"), encoding="utf-8") as f:
                    self.assertAlmostEqual(json.load(f)["cost"]["total"], spent, places=9)

    def test_what_extra_body_sends_beside_the_messages_is_reserved(self):
        # Tools sent with --extra-body are prompt tokens on the bill (OpenAI counts their
        # definitions): the most counted the messages and a response_format schema alone
        tools = [{"type": "function", "function": {"name": "lookup", "description": "x" * 3000}}]
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        bare = self.dry_most("--price", "3,15", data)
        extra = json.dumps({"tools": tools})
        most = self.dry_most("--price", "3,15", "--extra-body", extra, data)
        self.assertEqual(round(most - bare, 6), len(json.dumps(tools)) * 3 / 1e6)

    def test_the_dry_runs_most_taken_as_the_cap_judges_every_record(self):
        # At --price 0.15,0.6 this record can cost $0.0000942 at most; --dry-run rounded that
        # to $0.000094, and a run under that cap left the record unjudged. "At most" is now
        # rounded up to the millionth it prints
        self.srv.responder = lambda request: chat("Rating: 4", usage=most_usage(request))
        data = self.write_jsonl("in.jsonl", [{"question": "qwww", "response": "r"}])
        for argv in ([], ["--reask", "1"]):
            with self.subTest(argv=argv):
                code, _, err = self.run_code("--price", "0.15,0.6", "--dry-run", *argv, data)
                self.assertEqual(code, 0, err)
                figures = re.findall(r"at most \$([\d.]+)", err.splitlines()[-1])
                cap = "{:.6f}".format(sum(float(f) for f in figures))
                code, _, err = self.run_code("--price", "0.15,0.6", "--max-cost", cap, *argv,
                                             "-o", self.path("out.jsonl"), data)
                self.assertEqual(code, 0, err)
                self.assertEqual([r["judge_status"] for r in self.records()], ["ok"])

    def test_a_free_judge_under_a_cap_is_not_judged_one_record_at_a_time(self):
        # --price 0,0 (a local model) with --max-cost: no reply ever costs, so none ended the
        # wait for the first cost, and 8 threads sent one record at a time all run long
        flying, most = [0], [0]
        lock = threading.Lock()

        def slow(request):
            with lock:
                flying[0] += 1
                most[0] = max(most[0], flying[0])
            time.sleep(0.05)
            with lock:
                flying[0] -= 1
            return chat("Rating: 4", usage=most_usage(request))
        self.srv.responder = slow
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(16)])
        code, _, err = self.run_code("--price", "0,0", "--max-cost", "1", "--concurrency", "8",
                                     data)
        self.assertEqual(code, 0, err)
        self.assertGreater(most[0], 1)


NOT_JUDGED = ("not judged: its requests would take the run past --max-cost $0.01 ($0.009900 "
              "spent, $0.003300 estimated for this one)")


class MaxCostTest(CostTest):
    """Issue 33 item 3: --max-cost against the stub's fixed usage (test_cost.CostTest).

    --max-cost stops the run before the request that would pass it: every record
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


if __name__ == "__main__":
    import unittest
    unittest.main()
