"""Issue 33 item 2, re-asking: --reask N (reask= in Python and a judges entry) asks a reply
that cannot be read (parse_error, out_of_range) again, up to N times, in the same
conversation; the record keeps each earlier raw reply (judge_reasks), usage and cost are
summed over the attempts, and the summary counts the re-asks. Through the real command
line against the loopback stub, whose judge here answers badly until it is re-asked."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from batch_engine import run_batch  # noqa: E402
from stub import StubTestCase, chat, run_main  # noqa: E402

USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
BAD = "I think the answer is quite good."


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def bad_once(request):
    """A judge that cannot answer in form until it is re-asked."""
    if len(request.json["messages"]) == 1:
        return chat(BAD, usage=dict(USAGE))
    return chat("Rating: 4", usage=dict(USAGE))


def bad_always(request):
    return chat(BAD, usage=dict(USAGE))


class ReaskTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = bad_once
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(3)])

    def run_code(self, *argv, url=True):
        head = ["--no-preflight", "--judge-model", "judge-model"]
        if url:
            head += ["--judge-url", self.srv.url]
        return run_main(head + list(argv) + ["-o", self.path("out.jsonl"), "--summary",
                                              self.path("s.json"), self.data])

    def reasked(self, messages=3):
        """The requests of that many messages: the first re-asks (3), the second (5)."""
        return [r for r in self.srv.requests if len(r.json["messages"]) == messages]


class OnlineTest(ReaskTest):
    def test_a_reply_read_on_the_reask_is_ok_with_the_first_raw_kept_and_usage_summed(self):
        code, _, err = self.run_code("--reask", "2", "--price", "3,15")
        self.assertEqual(code, 0, err)
        for r in self.records():
            self.assertEqual((r["judge_status"], r["judge_value"], r["judge_raw"]),
                             ("ok", 4, "Rating: 4"))
            self.assertEqual(r["judge_reasks"], [BAD])
            self.assertEqual(r["judge_usage"], {"prompt_tokens": 2000, "completion_tokens": 40,
                                                "total_tokens": 2040})
            self.assertEqual(r["judge_cost"], 0.0066)
        second = self.reasked()[0].json["messages"]
        self.assertEqual([m["role"] for m in second], ["user", "assistant", "user"])
        self.assertEqual(second[1]["content"], BAD)
        self.assertEqual(second[2]["content"], "Your reply above gave no rating that could be "
                         "read. Reply again with the rating alone, a number from 1 to 5, in "
                         "the form asked for above.")
        self.assertEqual(self.srv.chat_count, 6)
        self.assertEqual(self.summary()["reasks"], {"sent": 3, "reasked": 3, "saved": 3})
        self.assertEqual(self.summary()["requests"], 6)
        self.assertIn("\n  re-asked: 3 replies that could not be read (3 re-asks sent); 3 "
                      "read on a re-ask\n", err)

    def test_a_judge_that_never_answers_in_form_ends_parse_error_with_every_raw_kept(self):
        self.srv.responder = bad_always
        code, _, err = self.run_code("--reask", "2", "--max-error-rate", "1")
        self.assertEqual(code, 0, err)
        for r in self.records():
            self.assertEqual(r["judge_status"], "parse_error")
            self.assertEqual(r["judge_raw"], BAD)
            self.assertEqual(r["judge_reasks"], [BAD, BAD])
            self.assertEqual(r["judge_usage"]["prompt_tokens"], 3000)
        self.assertEqual(self.srv.chat_count, 9)
        self.assertEqual(len(self.reasked(5)), 3)
        self.assertEqual(self.summary()["reasks"], {"sent": 6, "reasked": 3, "saved": 0})

    def test_an_answer_off_the_scale_is_reasked_naming_the_scale(self):
        self.srv.responder = lambda request: chat(
            "Rating: 9" if len(request.json["messages"]) == 1 else "Rating: 5")
        code, _, err = self.run_code("--reask", "1", "--scale", "1,5")
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_reasks"] for r in self.records()], [["Rating: 9"]] * 3)
        self.assertEqual(self.reasked()[0].json["messages"][2]["content"],
                         "Your reply above gave 9, which is not on the scale. Reply again with "
                         "the rating alone, a number from 1 to 5, in the form asked for above.")

    def test_without_reask_nothing_changes(self):
        code, _, err = self.run_code("--max-error-rate", "1")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 3)
        self.assertEqual({r["judge_status"] for r in self.records()}, {"parse_error"})
        self.assertNotIn("judge_reasks", self.records()[0])
        self.assertNotIn("reasks", self.summary())
        self.assertNotIn("reask", self.records()[0]["judge_run"]["request"])
        self.assertNotIn("re-asked", err)

    def test_a_rerun_with_the_cache_sends_nothing_and_writes_the_same(self):
        code, _, err = self.run_code("--reask", "1", "--cache", self.path("c.jsonl"))
        self.assertEqual(code, 0, err)
        first = self.records()
        code, _, err = self.run_code("--reask", "1", "--cache", self.path("c.jsonl"))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 6)
        self.assertEqual(self.records(), first)

    def test_report_reads_the_records_and_counts_the_reasks_again(self):
        self.run_code("--reask", "1")
        code, _, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                 self.path("r.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("r.json")) as f:
            self.assertEqual(json.load(f)["reasks"], {"sent": 3, "reasked": 3, "saved": 3})

    def test_repeats_reask_each_conversation(self):
        code, _, err = self.run_code("--reask", "1", "--repeats", "2")
        self.assertEqual(code, 0, err)
        r = self.records()[0]
        self.assertEqual(r["judge_status"], "ok")
        self.assertEqual([m["reasks"] for m in r["judge_members"]], [[BAD], [BAD]])
        self.assertNotIn("judge_reasks", r)
        self.assertEqual(self.summary()["reasks"], {"sent": 6, "reasked": 6, "saved": 6})


class OptionTest(ReaskTest):
    def test_a_wrong_reask_is_refused_from_every_place(self):
        for value in ("6", "-1"):
            code, _, err = self.run_code("--reask", value)
            self.assertEqual(code, 2)
            self.assertIn("minijudge: error: --reask must be a whole number from 0 to 5; got "
                          "{}\n".format(value), err)
        for value in ("x", "1.5"):
            code, _, err = self.run_code("--reask", value)
            self.assertEqual(code, 2)
            self.assertIn("minijudge: error: argument --reask: invalid int value: '{}'\n".format(
                value), err)
        judges = self.write("j.json", json.dumps([{"name": "a", "url": self.srv.url,
                                                   "options": {"reask": "2"}}]))
        code, _, err = run_main(["--judges", judges, self.data])
        self.assertEqual(code, 2)
        self.assertIn("reask must be a whole number from 0 to 5; got '2'", err)
        for value in (True, 6, -1, 2.0, None):
            with self.assertRaises(minijudge.JudgeError) as caught:
                minijudge.LLMJudge(self.srv.url, reask=value)
            self.assertIn("reask must be a whole number from 0 to 5; got", str(caught.exception))

    def test_strict_python_judge_is_reasked_before_it_raises(self):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", strict=True, reask=1)
        self.addCleanup(judge.close)  # its keep-alive socket, else a later test's warning
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.details["reasks"]), ("ok", 4, [BAD]))
        self.srv.responder = bad_always
        with self.assertRaises(minijudge.JudgeError) as caught:
            judge.judge({"question": "q2"}, "r")
        self.assertEqual(caught.exception.judgement.details["reasks"], [BAD])


class BatchTest(ReaskTest):
    def parts(self):
        return sorted(os.path.join(self.tmp, n) for n in os.listdir(self.tmp)
                      if n.startswith("requests."))

    def test_the_reasks_of_what_was_imported_are_exported_as_a_new_part(self):
        code, _, err = self.run_code("--reask", "1")
        online = self.records()
        sent = self.srv.chat_count
        url = self.srv.url + "/v1/chat/completions"
        self.run_code("--reask", "1", "--batch-export", self.path("requests.jsonl"), url=False)
        run_batch(self.parts(), self.path("first.jsonl"), url)
        for part in self.parts():
            os.remove(part)
        code, _, err = self.run_code("--reask", "1", "--batch-import", self.path("first.jsonl"),
                                     "--batch-export", self.path("requests.jsonl"), url=False)
        exported = self.records()
        self.assertEqual({r["judge_status"] for r in exported}, {"exported"})
        self.assertEqual([r["judge_reasks"] for r in exported], [[BAD]] * 3)
        self.assertEqual(sum(count_lines(part) for part in self.parts()), 3)
        run_batch(self.parts(), self.path("second.jsonl"), url)
        code, _, err = self.run_code("--reask", "1", "--batch-import", self.path("first.jsonl"),
                                     "--batch-import", self.path("second.jsonl"), url=False)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count - sent, 6)  # all by the engine
        self.assertEqual(self.records(), online)


class CostLimitTest(ReaskTest):
    def test_a_reask_is_reserved_and_spent_under_max_cost(self):
        # each record: two requests of 1000 prompt, 20 completion tokens at $3/$15 a million
        code, _, err = self.run_code("--reask", "1", "--price", "3,15", "--max-cost", "0.015",
                                     "--concurrency", "1")
        self.assertEqual(code, 1, err)
        records = self.records()
        judged = [r for r in records if r["judge_status"] == "ok"]
        self.assertEqual([r["judge_cost"] for r in judged], [0.0066] * len(judged))
        self.assertGreaterEqual(len(judged), 1)
        self.assertEqual({r["judge_status"] for r in records[len(judged):]}, {"cost_limit"})
        total = self.summary()["cost"]["total"]
        self.assertEqual(total, round(0.0066 * len(judged), 9))
        self.assertLessEqual(total, 0.015)
        self.assertEqual(self.srv.chat_count, 2 * len(judged))

    def test_a_reask_the_first_records_did_not_need_is_reserved_all_the_same(self):
        # q0 and q1 are read at once ($0.0033 each); q2 would need a re-ask ($0.0066): the
        # $0.0054 left cannot pay for it, so q2 is not judged rather than the run passing
        # $0.012 (each record's reserve holds its re-ask: here about $0.0075)
        def bad_for_q2(request):
            if "q2" in request.json["messages"][0]["content"]:
                return bad_once(request)
            return chat("Rating: 4", usage=dict(USAGE))
        self.srv.responder = bad_for_q2
        code, _, err = self.run_code("--reask", "1", "--price", "3,15", "--max-cost", "0.012",
                                     "--concurrency", "1")
        self.assertEqual(code, 1, err)
        self.assertEqual([r["judge_status"] for r in self.records()], ["ok", "ok", "cost_limit"])
        self.assertEqual(self.summary()["cost"]["total"], 0.0066)
        self.assertEqual(self.srv.chat_count, 2)


class CombinationsTest(ReaskTest):
    def test_assess_reasks_the_choice_not_the_assessment(self):
        # the assessment (a free turn) is read as text; the choice after it is re-asked
        def judge(request):
            messages = request.json["messages"]
            if len(messages) == 1:
                return chat("It answers well.")
            if len(messages) == 3:
                return chat("Hard to say.")
            return chat("Excellent")
        self.srv.responder = judge
        code, _, err = self.run_code("--mode", "criterion", "--criteria", os.path.join(
            os.path.dirname(HERE), "examples", "helpfulness.json"), "--assess", "--reask", "1")
        self.assertEqual(code, 0, err)
        r = self.records()[0]
        self.assertEqual((r["judge_status"], r["judge_value"], r["judge_reasks"]),
                         ("ok", "Excellent", ["Hard to say."]))
        self.assertEqual(r["judge_assessment"], "It answers well.")
        ask = self.reasked(5)[0].json["messages"][4]["content"]
        self.assertEqual(ask, "Your reply above gave no option that could be read. Reply again "
                         "with the name of one option alone: Excellent, Acceptable, Bad, in "
                         "the form asked for above.")
        self.assertEqual(self.srv.chat_count, 9)

    def test_pairwise_reasks_each_order(self):
        self.srv.responder = lambda request: chat(
            "Both are fine." if len(request.json["messages"]) == 1 else "[[A]]")
        self.data = self.write_jsonl("in.jsonl", [{"question": "q", "response_a": "a",
                                                   "response_b": "b"}])
        code, _, err = self.run_code("--mode", "pairwise", "--reask", "1")
        self.assertEqual(code, 0, err)
        r = self.records()[0]
        self.assertEqual(r["judge_status"], "ok")
        self.assertEqual((r["judge_reasks"], r["judge_reasks_other_order"]),
                         (["Both are fine."], ["Both are fine."]))
        self.assertEqual(self.srv.chat_count, 4)
        self.assertIn("the verdict alone, [[A]], [[B]] or [[C]]",
                      self.reasked()[0].json["messages"][2]["content"])
        self.assertEqual(self.summary()["reasks"], {"sent": 2, "reasked": 2, "saved": 2})

    def test_a_jury_keeps_each_judges_reasks_in_its_member(self):
        judges = self.write("j.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "judge-model",
             "options": {"reask": 1}},
            {"name": "b", "url": self.srv.url, "model": "judge-model"}]))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", "--no-preflight",
                                 "--quorum", "1", "-o", self.path("out.jsonl"), "--summary",
                                 self.path("s.json"), self.data])
        self.assertEqual(code, 0, err)
        r = self.records()[0]
        self.assertEqual(r["judge_status"], "ok")
        self.assertEqual(r["judge_members"]["a"]["reasks"], [BAD])
        self.assertNotIn("reasks", r["judge_members"]["b"])
        self.assertEqual(r["judge_members"]["b"]["status"], "parse_error")
        self.assertEqual(r["judge_run"]["request"][0]["reask"], 1)
        self.assertNotIn("reask", r["judge_run"]["request"][1])
        self.assertEqual(self.summary()["reasks"], {"sent": 3, "reasked": 3, "saved": 3})

    def test_report_refuses_reasks_that_are_not_replies(self):
        self.run_code("--reask", "1")
        records = self.records()
        records[1]["judge_reasks"] = [3]
        self.write_jsonl("bad.jsonl", records)
        code, _, err = run_main(["report", self.path("bad.jsonl")])
        self.assertEqual(code, 2, err)
        self.assertIn("line 2: judge_reasks must be a list of the replies re-asked (text or "
                      "null); got [3]", err)

    def test_dry_run_names_the_most_reasks_and_their_cost(self):
        code, _, err = run_main(["--dry-run", "--judge-model", "m", "--reask", "2", "--price",
                                 "3,15", "--repeats", "2", self.data])
        self.assertEqual(code, 0, err)
        # 3 records x 2 repeats, each reply re-asked at most twice; each k-th re-ask sends the
        # prompt and k replies of 16 tokens and re-ask turns, and takes 16
        judge = minijudge.LLMJudge("http://127.0.0.1:9", model="m", reask=2, price=(3, 15))
        prompts = [minijudge._estimate_tokens(judge.messages({"question": "q%d" % k}, "r"),
                                              most=True) for k in range(3)]
        turn = minijudge._estimate_tokens([{"role": "assistant"}, {"role": "user", "content":
                                           "Your reply above gave no JSON object that could be "
                                           "read. Reply again with the rating alone, a number "
                                           "from 1 to 5, in the form asked for above."}],
                                          most=True)  # a token per byte: the most, reserved
        most = sum(2 * ((p + k * (16 + turn)) * 3 + 16 * 15) / 1e6 for p in prompts
                   for k in (1, 2))
        self.assertTrue(err.splitlines()[-1].endswith(
            "; --reask 2: up to 12 re-asks more (at most ${:.6f})".format(most)), err)

    def test_systems_keep_each_pairs_reasks_and_count_them(self):
        self.srv.responder = lambda request: chat(
            "Both are fine." if len(request.json["messages"]) == 1 else "[[A]]")
        self.data = self.write_jsonl("in.jsonl", [{"question": "q", "responses": {
            "x": "a", "y": "b", "z": "c"}}])
        code, _, err = self.run_code("--mode", "systems", "--reask", "1")
        self.assertEqual(code, 0, err)
        pairs = self.records()[0]["judge_pairs"]
        self.assertEqual([(p["reasks"], p["reasks_other_order"]) for p in pairs],
                         [(["Both are fine."], ["Both are fine."])] * 3)
        self.assertEqual(self.summary()["reasks"], {"sent": 6, "reasked": 6, "saved": 6})

    def test_a_reask_that_fails_says_so_and_a_cache_rerun_sends_only_it(self):
        from stub import error
        failing = [True]

        def judge(request):
            if len(request.json["messages"]) == 1:
                return chat(BAD)
            if failing[0]:
                return error(500, "boom")
            return chat("Rating: 3")
        self.srv.responder = judge
        argv = ("--reask", "1", "--max-retries", "0", "--cache", self.path("c.jsonl"),
                "--max-error-rate", "1")
        code, _, err = self.run_code(*argv)
        r = self.records()[0]
        self.assertEqual((r["judge_status"], r["judge_reasks"]), ("http_error", [BAD]))
        self.assertTrue(r["judge_error"].startswith("re-ask 1 of 1: http 500 from POST "),
                        r["judge_error"])
        failing[0] = False
        sent = self.srv.chat_count
        code, _, err = self.run_code(*argv)
        self.assertEqual(self.srv.chat_count - sent, 3)  # the re-asks only
        self.assertEqual({(r["judge_status"], r["judge_value"]) for r in self.records()},
                         {("ok", 3)})

    def test_dry_run_of_judges_names_each_ones_reasks_on_its_line(self):
        judges = self.write("j.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "m", "options": {"reask": 1}},
            {"name": "b", "url": self.srv.url, "model": "m"}]))
        code, _, err = run_main(["--judges", judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        lines = err.splitlines()
        self.assertTrue(lines[-3].startswith("minijudge: --dry-run: judge a: "), lines)
        self.assertTrue(lines[-3].endswith("; --reask 1: up to 3 re-asks more"), lines)
        self.assertNotIn("--reask", lines[-2] + lines[-1])
