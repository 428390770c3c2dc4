"""Issue 13, what lm-eval and small harnesses had: judges named in the environment, retry
bounds, the prompt that was sent on each record, and a judge that is a Python function.

Each against the loopback StubServer, in Python and through the command line (main() in
this process; the named judges' environment end to end in a real subprocess); the waits
between tries are read from the stub's clock or an injected sleep, never from how long a
test took.
"""
import json
import os
import subprocess
import sys
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, error, run_main  # noqa: E402
from test_modes import ASSESSMENT, HELPFULNESS, judge_like  # noqa: E402

KEY = "sk-parity-0123456789abcdef"
URL_KEY = "uk-parity-9876543210fedcba"
Q = {"question": "q"}


def run(argv, *, env=None, timeout=30, subprocess_=False):
    """(exit code, stdout, stderr) of the command line: main(argv) in this process (the same
    output, ~0.2 s quicker), or ``python -m minijudge argv``; only ``env`` of the judge
    settings reaches it."""
    if not subprocess_:
        with mock.patch.dict(os.environ):
            for name in [k for k in os.environ if k in JUDGE_ENV or k.startswith("LLM_JUDGE_")]:
                del os.environ[name]
            return run_main(argv, env)
    env = dict({k: v for k, v in os.environ.items() if k not in JUDGE_ENV
                and not k.startswith("LLM_JUDGE_")}, **(env or {}))
    proc = subprocess.run([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def clocked(failures, reply="4"):
    """A responder: ``failures`` 503s, then ``reply``; the stub's clock at each request."""
    times = []

    def responder(request):
        times.append(time.monotonic())
        return error(503, "overloaded") if len(times) <= failures else chat(reply)
    return responder, times


class ParityTest(StubTestCase):
    def read_jsonl(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def chats(self, srv=None):
        return [r for r in (srv or self.srv).requests if r.method == "POST"]

    def everything(self, *texts):
        """All that a run left behind: its streams and every file in the folder."""
        files = []
        for name in os.listdir(self.tmp):
            with open(self.path(name), encoding="utf-8") as f:
                files.append(f.read())
        return "\n".join(list(texts) + files)


class NamedJudgesTest(ParityTest):
    def test_a_named_judge_reads_its_own_variables_before_the_unnamed_ones(self):
        other = self.start_stub()
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        self.write("judges.json", json.dumps([
            {"name": "accuracy"}, {"name": "my-style"},
            {"name": "fluency", "url": other.url, "model": "entry-model"}]))
        code, out, err = run(
            ["--judges", self.path("judges.json"), "--no-preflight", "--summary",
             self.path("summary.json"), "-o", self.path("out.jsonl"), self.path("in.jsonl")],
            env={"LLM_JUDGE_ACCURACY_API_BASE": self.srv.url,
                 "LLM_JUDGE_ACCURACY_API_KEY": KEY,
                 "LLM_JUDGE_ACCURACY_MODEL": "accuracy-model",
                 "LLM_JUDGE_MY_STYLE_API_BASE": other.url + "/v1",  # hyphen: underscore
                 "LLM_JUDGE_FLUENCY_API_BASE": "http://127.0.0.1:9",  # the entry's url wins
                 "LLM_JUDGE_FLUENCY_MODEL": "not-this-one",
                 "LLM_JUDGE_API_KEY": "sk-unnamed-key-000",
                 "LLM_JUDGE_MODEL": "unnamed-model"},
            subprocess_=True)  # end to end: a real process's environment, its files and streams
        self.assertEqual(code, 0, err)
        (accuracy,) = self.chats()
        self.assertEqual(accuracy.json["model"], "accuracy-model")
        self.assertEqual(accuracy.headers["authorization"], "Bearer " + KEY)
        fluency, style = sorted(self.chats(other), key=lambda r: r.json["model"])
        self.assertEqual((fluency.json["model"], style.json["model"]),
                         ("entry-model", "unnamed-model"))
        for request in (style, fluency):  # no key of their own: the unnamed one
            self.assertEqual(request.headers["authorization"], "Bearer sk-unnamed-key-000")
        (record,) = self.read_jsonl("out.jsonl")
        self.assertEqual([record[n + "_status"] for n in ("accuracy", "my-style", "fluency")],
                         ["ok"] * 3)
        self.assertNotIn(KEY, self.everything(out, err))

    def test_the_named_variables_come_before_the_flags(self):
        # --judge-url is every judge's default; a judge's own variables are more specific
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        self.write("judges.json", json.dumps([{"name": "accuracy"}, {"name": "style"}]))
        code, out, err = run(["--judges", self.path("judges.json"), "--judge-url", self.srv.url,
                              "--judge-model", "flag-model", "--no-preflight",
                              "--max-retries", "0", "--max-error-rate", "1",
                              self.path("in.jsonl")],
                             env={"LLM_JUDGE_ACCURACY_API_BASE": "http://127.0.0.1:9",
                                  "LLM_JUDGE_STYLE_MODEL": "style-model"})
        record = json.loads(out)
        self.assertEqual((record["accuracy_status"], record["style_status"]),
                         ("connection_error", "ok"), err)
        self.assertIn("127.0.0.1:9", record["accuracy_error"])
        self.assertEqual([r.json["model"] for r in self.chats()], ["style-model"])

    def test_the_command_line_judge_is_not_named(self):
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run(["--no-preflight", self.path("in.jsonl")],
                             env={"LLM_JUDGE_JUDGE_API_BASE": self.srv.url})
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: no judge URL: pass --judge-url or set "
                              "LLM_JUDGE_API_BASE\n")


class RetryBoundsTest(ParityTest):
    def test_python_waits_stay_within_the_bounds(self):
        for low, high, expected in ((0.2, 0.2, [0.2] * 4), (0.0, 0.0, [0.0] * 4),
                                    (0.1, 0.3, None)):
            with self.subTest(low=low, high=high):
                self.srv.clear()
                self.srv.push(*[error(503, "busy")] * 4, chat("4"))
                waits = []
                judge = minijudge.LLMJudge(self.srv.url, model="m", sleep=waits.append,
                                           retry_min_wait=low, retry_max_wait=high)
                j = judge.judge({"question": "q"}, "r")
                self.assertEqual((j.status, j.attempts), ("ok", 5))
                self.assertEqual(len(waits), 4)
                if expected is not None:
                    self.assertEqual(waits, expected)
                self.assertTrue(all(low <= w <= high for w in waits), waits)

    def test_python_defaults_are_the_old_constants(self):
        self.srv.push(*[error(503, "busy")] * 3, chat("4"))
        waits = []
        self.assertEqual(minijudge.LLMJudge(self.srv.url, model="m", sleep=waits.append).judge(
            Q, "r").attempts, 4)
        self.assertEqual(len(waits), 3)
        for n, wait in enumerate(waits):  # 0.5 s doubling, jittered down to half
            self.assertTrue(0.25 * 2 ** n <= wait <= 0.5 * 2 ** n, waits)

    def test_python_refuses_bounds_that_are_not_seconds(self):
        for low, high in ((-1, 30), (0.5, float("inf")), (float("nan"), 30), (5, 1)):
            with self.subTest(low=low, high=high), self.assertRaises(minijudge.JudgeError) as cm:
                minijudge.LLMJudge(self.srv.url, retry_min_wait=low, retry_max_wait=high)
            self.assertEqual(str(cm.exception), "retry_min_wait and retry_max_wait "
                             "(--retry-min-wait, --retry-max-wait) must be seconds, 0 <= min <= "
                             "max; got {!r} and {!r}".format(low, high))

    def test_the_command_line_refuses_bad_bounds_naming_the_flag(self):
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        cases = [
            (["--retry-min-wait", "-1"], "--retry-min-wait must be a number of seconds, 0 "
             "or more; got -1.0"),
            (["--retry-max-wait", "inf"], "--retry-max-wait must be a number of seconds, 0 "
             "or more; got inf"),
            (["--retry-min-wait", "nan"], "--retry-min-wait must be a number of seconds, 0 "
             "or more; got nan"),
            (["--retry-min-wait", "5", "--retry-max-wait", "1"], "retry_min_wait and "
             "retry_max_wait (--retry-min-wait, --retry-max-wait) must be seconds, 0 <= min <= "
             "max; got 5.0 and 1.0"),
            (["--retry-min-wait", "40"], "retry_min_wait and retry_max_wait (--retry-min-wait, "
             "--retry-max-wait) must be seconds, 0 <= min <= max; got 40.0 and 30.0"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                self.assertEqual(run(["--judge-url", self.srv.url] + flags +
                                     [self.path("in.jsonl")]),
                                 (2, "", "minijudge: error: {}\n".format(message)))
        self.assertEqual(self.srv.requests, [])

    def test_the_command_line_waits_at_least_the_minimum(self):
        self.srv.responder, times = clocked(1)
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                              "--no-preflight", "--retry-min-wait", "0.6",
                              "--retry-max-wait", "0.6", self.path("in.jsonl")])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["judge_status"], "ok")
        self.assertEqual(len(times), 2)
        self.assertGreaterEqual(times[1] - times[0], 0.6)  # default: at most 0.5

    def test_the_command_line_waits_at_most_the_maximum(self):
        self.srv.responder, times = clocked(5)
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                              "--no-preflight", "--retry-max-wait", "0.05",  # alone
                              self.path("in.jsonl")])
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["judge_status"], "ok")
        self.assertEqual(len(times), 6)
        # the defaults wait at least 0.25 + 0.5 + 1 + 2 + 4 s between these six tries
        self.assertLess(times[-1] - times[0], 5.0)


class SavePromptsTest(ParityTest):
    def test_each_record_carries_the_messages_sent_and_no_key(self):
        self.write_jsonl("in.jsonl", [{"question": "q1", "response": "r1"},
                                      {"question": "q2", "response": "r2"}])
        url = "{}/v1?api_key={}".format(self.srv.url, URL_KEY)
        code, out, err = run(["--judge-url", url, "--judge-model", "judge-model",
                              "--system", "Be fair.",
                              "--header", "X-Api-Key: " + KEY, "--save-prompts", "--concurrency",
                              "1", "-o", self.path("out.jsonl"), self.path("in.jsonl")],
                             env={"LLM_JUDGE_API_KEY": KEY + "-env"})
        self.assertEqual(code, 0, err)
        records, sent = self.read_jsonl("out.jsonl"), self.chats()
        self.assertEqual([r["judge_prompt"] for r in records],
                         [request.json["messages"] for request in sent])
        self.assertEqual(records[0]["judge_prompt"][0], {"role": "system", "content": "Be fair."})
        self.assertIn("q2", records[1]["judge_prompt"][1]["content"])
        self.assertEqual(sent[0].headers["x-api-key"], KEY)  # the keys were sent
        self.assertEqual(sent[0].query["api_key"], URL_KEY)
        self.assertNotIn(KEY, self.everything(out, err))
        self.assertNotIn(URL_KEY, self.everything(out, err))

    def test_off_by_default(self):
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                              self.path("in.jsonl")])
        self.assertEqual(code, 0, err)
        self.assertNotIn("judge_prompt", json.loads(out))

    def test_assess_saves_both_turns_as_sent(self):
        self.srv.responder = judge_like(lambda listed: "Acceptable")
        self.write("criteria.json", json.dumps(HELPFULNESS))
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                              "--mode",
                              "criterion", "--criteria", self.path("criteria.json"), "--assess",
                              "--save-prompts", self.path("in.jsonl")])
        self.assertEqual(code, 0, err)
        first, second = self.chats()
        prompt = json.loads(out)["judge_prompt"]
        self.assertEqual(prompt, second.json["messages"])
        self.assertEqual([m["role"] for m in prompt], ["user", "assistant", "user"])
        self.assertEqual(prompt[1]["content"], ASSESSMENT)  # the reply, not a placeholder

    def test_pairwise_and_systems_save_the_first_order(self):
        self.srv.content = "[[A]]"
        self.write_jsonl("pairs.jsonl", [{"question": "q", "response_a": "first one",
                                          "response_b": "second one"}])
        self.write_jsonl("systems.jsonl", [{"question": "q", "responses": {
            "x": "from x", "y": "from y", "z": "from z"}}])
        for mode, name in (("pairwise", "pairs.jsonl"), ("systems", "systems.jsonl")):
            with self.subTest(mode=mode):
                self.srv.clear()
                code, out, err = run(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                      "--mode", mode, "--save-prompts", "--concurrency", "1",
                                      self.path(name)])
                self.assertEqual(code, 0, err)
                first = self.chats()[0]
                prompt = json.loads(out)["judge_prompt"]
                self.assertEqual(prompt, first.json["messages"])
                self.assertLess(*(prompt[-1]["content"].index(t) for t in (
                    ("first one", "second one") if mode == "pairwise" else ("from x", "from y"))))

    def test_not_in_the_cache_key(self):
        self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        argv = ["--judge-url", self.srv.url, "--judge-model", "judge-model", "--cache",
                self.path("cache.jsonl"), self.path("in.jsonl")]
        self.assertEqual(run(argv)[0], 0)
        code, out, err = run(argv + ["--save-prompts"])
        self.assertEqual(code, 0, err)
        self.assertEqual(len(self.chats()), 1)  # the second run sent nothing
        record = json.loads(out)
        self.assertEqual(record["judge_prompt"], self.chats()[0].json["messages"])
        self.assertEqual(record["judge_status"], "ok")

    def test_python_keeps_it_in_details(self):
        self.srv.content = "Rating: 4"
        judge = minijudge.LLMJudge(self.srv.url, model="m", save_prompts=True)
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual(j.details["prompt"], self.chats()[0].json["messages"])
        self.assertEqual(j.details["prompt"], judge.messages({"question": "q"}, "r"))
        plain = minijudge.LLMJudge(self.srv.url, model="m").judge({"question": "q"}, "r")
        self.assertNotIn("prompt", plain.details)

    def test_a_failed_item_keeps_the_prompt_it_sent(self):
        self.srv.push(chat("[[A]]"), error(400, "bad request"), error(400, "bad request"))
        judge = minijudge.LLMJudge(self.srv.url, model="m", template="pairwise",
                                   save_prompts=True)
        j = judge.compare({"question": "q"}, "one", "two")  # the second order fails
        self.assertEqual(j.status, "http_error")
        self.assertEqual(j.details["prompt"], self.chats()[0].json["messages"])
        judge = minijudge.LLMJudge(self.srv.url, model="m", save_prompts=True)
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.details["prompt"]),
                         ("http_error", self.chats()[2].json["messages"]))


class JudgeFunctionTest(ParityTest):
    def test_a_function_judges_with_no_url_and_gets_the_messages(self):
        seen = []

        def judge_fn(messages):
            seen.append(messages)
            return "Rating: 4"
        judge = minijudge.LLMJudge(judge_fn=judge_fn, system="Be fair.")
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.score, j.raw), ("ok", 4, 0.75, "Rating: 4"))
        self.assertEqual(seen, [judge.messages({"question": "q"}, "r")])
        self.assertEqual(judge.score({"question": "q"}, "r"), {"judge_score": 0.75})
        self.assertEqual(self.srv.requests, [])

    def test_a_chat_completion_dict_is_read_like_a_servers(self):
        reply = {"model": "in-process", "choices": [{"message": {"content": "No."},
                                                     "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        j = minijudge.LLMJudge(judge_fn=lambda m: reply, template="binary").judge(
            {"question": "q", "answer": "a"}, "r")
        self.assertEqual((j.status, j.value, j.model, j.usage["prompt_tokens"]),
                         ("ok", False, "in-process", 3))
        waits = []
        bad = minijudge.LLMJudge(judge_fn=lambda m: {"no": "choices"}, sleep=waits.append)
        j = bad.judge(Q, "r")
        self.assertEqual((j.status, j.attempts, waits), ("invalid_response", 1, []))  # no retry
        self.assertEqual(j.error, "reply from POST judge_fn has no choices: "
                                  "b'{\"no\": \"choices\"}'")
        unread = minijudge.LLMJudge(judge_fn=lambda m: "no digit here").judge(Q, "r")
        self.assertEqual(unread.status, "parse_error")

    def test_modes_assess_and_compare_work_the_same(self):
        def prefers_alpha(messages):
            prompt = messages[-1]["content"]
            return "[[A]]" if prompt.index("alpha") < prompt.index("beta") else "[[B]]"
        judge = minijudge.LLMJudge(judge_fn=prefers_alpha, template="pairwise")
        j = judge.compare(Q, "alpha", "beta")
        self.assertEqual((j.status, j.value, j.details["consistent"]), ("ok", "A", True))
        biased = minijudge.LLMJudge(judge_fn=lambda m: "[[A]]", template="pairwise")
        j = biased.compare(Q, "alpha", "beta")
        self.assertEqual((j.status, j.value, j.details["consistent"]), ("ok", "tie", False))
        systems = judge.compare_systems({"question": "q"}, {"x": "alpha", "y": "beta"},
                                        both_orders=False)
        self.assertEqual(systems.value, {"x": 1.0, "y": 0.0})

        def assessor(messages):
            if "Do not name an option yet" in messages[-1]["content"]:
                return ASSESSMENT
            return "Excellent"
        j = minijudge.LLMJudge(judge_fn=assessor, criterion=HELPFULNESS, assess=True,
                               save_prompts=True).judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.value, j.details["assessment"]),
                         ("ok", "Excellent", ASSESSMENT))
        self.assertEqual(j.details["prompt"][1], {"role": "assistant", "content": ASSESSMENT})

    def test_an_exception_is_the_items_failure_naming_it(self):
        def broken(messages):
            if "boom" in messages[-1]["content"]:
                raise ConnectionError("the model process died")
            return "Rating: 5"
        judge = minijudge.LLMJudge(judge_fn=broken)
        results = [j for _, j in minijudge.judge_records(judge, [
            {"question": "q", "response": "fine"}, {"question": "q", "response": "boom"},
            {"question": "q", "response": "also fine"}], concurrency=2)]
        self.assertEqual([j.status for j in results], ["ok", "internal_error", "ok"])
        self.assertEqual(results[1].error,
                         "judge_fn raised ConnectionError: the model process died")
        with self.assertRaises(minijudge.JudgeError) as cm:
            minijudge.LLMJudge(judge_fn=broken, strict=True).judge(Q, "boom")
        self.assertEqual(str(cm.exception),
                         "judge_fn raised ConnectionError: the model process died")

    def test_replies_are_cached_like_a_servers(self):
        calls = []

        def counting(messages):
            calls.append(1)
            return "Rating: 2"
        results = []
        for _ in range(2):  # two runs, one after the other, on one cache file
            judge = minijudge.LLMJudge(judge_fn=counting, cache=self.path("cache.jsonl"))
            results.append(judge.judge(Q, "r"))
            judge.cache.close()
        first, again = results
        self.assertEqual((first.value, first.cached, again.value, again.cached),
                         (2, False, 2, True))
        self.assertEqual(len(calls), 1)


if __name__ == "__main__":
    unittest.main()
