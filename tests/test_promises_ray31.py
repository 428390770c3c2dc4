"""Issue 31, item 3: an LLMJudge pickles, and judges where it lands (another process),
its connections, locks and cache handle made anew there."""

import json
import os
import pickle
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stub  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import minijudge  # noqa: E402

# the other process: a judge unpickled from stdin judges one item; its Judgement and what
# it kept of the judge, as JSON on stdout
_WORKER = """
import json, pickle, sys
sys.path.insert(0, sys.argv[1])
judge = pickle.loads(sys.stdin.buffer.read())
j = judge.judge({"question": "2+2?"}, "4")
print(json.dumps({"score": j.score, "status": j.status, "error": j.error, "raw": j.raw,
                  "cached": j.cached, "model": judge.model, "repr": repr(judge)}))
"""


def judged_elsewhere(data, env=None):
    """What a judge pickled as ``data`` does in a new Python process."""
    done = subprocess.run([sys.executable, "-c", _WORKER, ROOT], input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, env=env)
    if done.returncode:
        raise AssertionError(done.stderr.decode())
    return json.loads(done.stdout)


def worker_env(**changes):
    env = {k: v for k, v in os.environ.items() if k not in stub.JUDGE_ENV}
    env.update(changes)
    return env


def secret_judge_fn(messages):  # at the top of a module: pickle finds it by name
    return "Rating: 3"


class PicklesTest(stub.StubTestCase):
    def test_a_judge_pickled_judges_in_another_process(self):
        judge = minijudge.LLMJudge(self.srv.url, api_key="sk-pickled-key-1234")
        self.addCleanup(judge.close)
        self.srv.require_key = "sk-pickled-key-1234"
        here = judge.judge({"question": "2+2?"}, "4")
        there = judged_elsewhere(pickle.dumps(judge), worker_env())
        self.assertEqual((there["score"], there["status"], there["raw"]),
                         (here.score, here.status, here.raw))
        self.assertEqual(there["model"], "judge-model")
        self.assertNotIn("sk-pickled", there["repr"])
        # the model was listed once, here: the worker asks only for the judgement
        self.assertEqual([r.method for r in self.srv.requests], ["GET", "POST", "POST"])
        self.assertEqual(self.srv.requests[-1].headers["authorization"],
                         "Bearer sk-pickled-key-1234")

    def test_after_use_with_open_connections_and_a_cache(self):
        cache = self.path("cache.jsonl")
        judge = minijudge.LLMJudge(self.srv.url + "/v1", model="m", cache=cache)
        self.addCleanup(judge.cache.close)
        self.addCleanup(judge.close)
        first = judge.judge({"question": "2+2?"}, "4")
        self.assertEqual(first.status, "ok")
        there = judged_elsewhere(pickle.dumps(judge), worker_env())
        self.assertEqual((there["score"], there["status"], there["cached"]),
                         (first.score, "ok", True))  # read from the same cache file
        self.assertEqual(self.srv.chat_count, 1)
        self.assertEqual(judge.judge({"question": "2+2?"}, "4").status, "ok")  # still usable

    def test_a_key_from_the_environment_travels_with_the_judge(self):
        os.environ["LLM_JUDGE_API_KEY"] = "sk-from-the-env-5678"
        os.environ["LLM_JUDGE_API_BASE"] = self.srv.url
        judge = minijudge.LLMJudge(model="m")
        del os.environ["LLM_JUDGE_API_KEY"], os.environ["LLM_JUDGE_API_BASE"]
        there = judged_elsewhere(pickle.dumps(judge), worker_env(
            LLM_JUDGE_API_KEY="sk-the-worker-s-own", LLM_JUDGE_API_BASE="http://127.0.0.1:9"))
        self.assertEqual(there["status"], "ok")
        self.assertEqual(self.srv.requests[-1].headers["authorization"],
                         "Bearer sk-from-the-env-5678")

    def test_an_adapted_parameter_stays_adapted(self):
        self.srv.push(stub.error(400, "Unsupported parameter: 'max_tokens' is not supported "
                                      "with this model. Use 'max_completion_tokens' instead."))
        judge = minijudge.LLMJudge(self.srv.url, model="m")
        self.addCleanup(judge.close)
        with self.assertLogs("minijudge", "WARNING"):
            self.assertEqual(judge.judge({"question": "q"}, "a").status, "ok")
        there = judged_elsewhere(pickle.dumps(judge), worker_env())
        self.assertEqual(there["status"], "ok")
        self.assertIn("max_completion_tokens", self.srv.requests[-1].json)
        self.assertEqual(self.srv.chat_count, 3)

    def test_a_judge_fn_at_module_level_pickles(self):
        judge = minijudge.LLMJudge(judge_fn=secret_judge_fn)
        again = pickle.loads(pickle.dumps(judge))
        self.assertEqual(again.judge({"question": "q"}, "a").score, 0.5)
        self.assertEqual(again.model, "secret_judge_fn")

    def test_a_judge_fn_that_does_not_pickle_is_named(self):
        judge = minijudge.LLMJudge(judge_fn=lambda messages: "Rating: 3")
        with self.assertRaises(pickle.PicklingError) as caught:
            pickle.dumps(judge)
        self.assertRegex(str(caught.exception),
                         r"^cannot pickle LLMJudge: its judge_fn PicklesTest\.test_a_judge_fn_that_does_not_pickle_is_named\.<locals>\.<lambda> does not pickle "
                         r"\(.+\); define it at the top level of a module$")


if __name__ == "__main__":
    unittest.main()
