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
from stub import PYTHON  # noqa: E402

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
    done = subprocess.run([*PYTHON, "-c", _WORKER, ROOT], input=data,
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
        self.assertNotIn("sk-pickled", repr(vars(judge)))  # kept for the pickle, hidden
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


def _summary_without_times(path):
    """A --summary file's figures but the clock's (a run's wall time, its rate)."""
    with open(path, encoding="utf-8") as f:
        summary = json.load(f)
    return {k: v for k, v in summary.items()
            if k not in ("wall_seconds", "records_per_second", "elapsed", "latency")}


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class ScoredRecordTest(stub.StubTestCase):
    """scored_record writes what the command line writes: shards written from Python
    are merged by report as the command line's own."""

    def setUp(self):
        super().setUp()
        replies = iter(["Rating: 4", "Rating: 2", "no rating here", "Rating: 5"] * 2)
        self.srv.responder = lambda request: next(replies)
        self.records = [{"id": 1, "question": "q1", "response": "a1"},
                        {"id": 2, "question": "q2", "response": "a2", "answer": "r2"},
                        {"id": 3, "question": "q3", "response": "a3"},
                        {"id": 4, "question": "q4", "response": ""},
                        {"id": 5, "question": "q5", "response": "a5"}]
        self.input = self.write_jsonl("in.jsonl", self.records)

    def test_the_records_and_report_of_python_shards_are_the_command_line_s(self):
        out, summary = self.path("cli.jsonl"), self.path("cli.json")
        code = stub.run_main(["--judge-url", self.srv.url, "--concurrency", "1", "-o", out,
                              "--summary", summary, self.input])[0]
        self.assertEqual(code, 1)  # 1 parse_error in 5: over the default error rate
        judge = minijudge.LLMJudge(self.srv.url)
        self.addCleanup(judge.close)
        written = [minijudge.scored_record(judge, record, line=n)
                   for n, record in enumerate(self.records, 1)]
        self.assertEqual(written, _lines(out))
        for name, part in (("a.jsonl", written[:2]), ("b.jsonl", written[2:])):
            self.write("shard-" + name, "".join(json.dumps(r) + "\n" for r in part))
        merged, again = self.path("merged.json"), self.path("again.json")
        code = stub.run_main(["report", self.path("shard-a.jsonl"), self.path("shard-b.jsonl"),
                              "--summary", merged])[0]
        self.assertEqual(code, 1)
        self.assertEqual(stub.run_main(["report", out, "--summary", again])[0], 1)
        self.assertEqual(_summary_without_times(merged), _summary_without_times(again))
        ran = _summary_without_times(summary)  # the run knew its server: report does not
        differ = {k for k, v in _summary_without_times(merged).items() if v != ran.get(k)}
        differ.discard("servers")  # each replica's requests (issue 31's replicas), if given
        differ.discard("limits")  # how the run's requests were held (issue 33): a run's only
        self.assertEqual(sorted(differ),
                         ["fields", "judge_url", "latency_max", "latency_mean", "parameters",
                          "requests", "requests_per_second"])

    def test_a_record_sent_nothing_is_stamped_with_the_model_the_server_lists(self):
        # a worker's first record may need no request (an empty response): its stamp must
        # still name the model, as the command line's does (it asks before the first record)
        judge = minijudge.LLMJudge(self.srv.url)
        self.addCleanup(judge.close)
        scored = minijudge.scored_record(judge, self.records[3], line=4)
        self.assertEqual((scored["judge_status"], scored["judge_run"]["model"]),
                         ("empty_response", "judge-model"))
        self.assertEqual([r.method for r in self.srv.requests], ["GET"])

    def test_a_judge_of_another_mode_is_refused(self):
        judge = minijudge.LLMJudge(self.srv.url, template="pairwise")
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge.scored_record(judge, self.records[0], line=1)
        self.assertEqual(str(caught.exception),
                         "scored_record writes the records of a rating judge (the command "
                         "line's default mode); got a verdict judge: for its records, run "
                         "python -m minijudge with --shard K/N on each worker")
        self.assertEqual(self.srv.requests, [])


class RayExampleTest(unittest.TestCase):
    def test_the_docs_show_the_example_the_ray_check_runs(self):
        with open(os.path.join(ROOT, "docs", "batch-and-ray.md"), encoding="utf-8") as f:
            readme = f.read()
        with open(os.path.join(ROOT, "examples", "ray_judge.py"), encoding="utf-8") as f:
            example = f.read()
        section = readme.split("## Judging on a Ray cluster\n", 1)[1]
        shown = section.split("```python\n", 1)[1].split("```", 1)[0]
        self.assertIn("class JudgeShard:", shown)
        self.assertIn("def judge_on_ray(", shown)
        self.assertIn(shown.strip("\n"), example)


if __name__ == "__main__":
    unittest.main()
