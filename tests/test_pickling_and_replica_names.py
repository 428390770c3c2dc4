"""Replicas named twice in another spelling, a judge pickled in
one folder and unpickled in another (a Ray worker's), and scored_record given the records
the command line turns into strict JSON lines or bad_record lines.
"""
import functools
import json
import os
import pickle
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON, StubTestCase, chat, hang, rate_limited, run_main  # noqa: E402

# made in the folder it runs in (argv[2]), pickled to stdout
PICKLE_HERE = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
import minijudge
judge = minijudge.LLMJudge(sys.argv[3], model="judge-model", cache="cache.jsonl",
                           image_root="pictures")
sys.stdout.buffer.write(pickle.dumps(judge))
"""
# unpickled from stdin in the folder it runs in, judges one item with an image
JUDGE_THERE = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
judge = pickle.loads(sys.stdin.buffer.read())
judgement = judge.judge({"question": "q", "images": ["cat.png"]}, "r")
print(judgement.status, judgement.cached, judgement.error)
"""
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24


class PickledJudgeTest(StubTestCase):
    def test_a_judge_pickled_in_one_folder_reads_its_images_and_cache_there_elsewhere(self):
        made, worker = self.path("made"), self.path("worker")
        os.makedirs(os.path.join(made, "pictures"))
        os.makedirs(worker)
        with open(os.path.join(made, "pictures", "cat.png"), "wb") as f:
            f.write(PNG)
        pickled = subprocess.run([*PYTHON, "-c", PICKLE_HERE, ROOT, made, self.srv.url],
                                 cwd=made, stdout=subprocess.PIPE, check=True).stdout
        for tell in ("ok False None\n", "ok True None\n"):  # the second: from made's cache
            run = subprocess.run([*PYTHON, "-c", JUDGE_THERE, ROOT], cwd=worker,
                                 input=pickled, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual((run.stdout.decode(), run.stderr.decode()[-300:]), (tell, ""))
        self.assertEqual(self.srv.chat_count, 1)
        self.assertEqual(os.listdir(worker), [])
        with open(os.path.join(made, "cache.jsonl"), encoding="utf-8") as f:
            self.assertEqual(len(f.readlines()), 1)


def _keyed_judge_fn():
    def call(messages, api_key=None, **options):  # local: it does not pickle
        return "Rating: 4"
    return call


class PickleErrorTest(StubTestCase):
    def test_a_judge_fn_that_does_not_pickle_is_named_without_the_key(self):
        key = "sk-host31-partial-0123456789"
        judge = minijudge.LLMJudge(judge_fn=functools.partial(_keyed_judge_fn(), api_key=key),
                                   api_key=key)
        with self.assertRaises(pickle.PicklingError) as caught:
            pickle.dumps(judge)
        self.assertNotIn(key, str(caught.exception))
        self.assertIn("api_key='<hidden>'", str(caught.exception))
        self.assertTrue(str(caught.exception).startswith(
            "cannot pickle LLMJudge: its judge_fn functools.partial(<function "
            "_keyed_judge_fn.<locals>.call at "), caught.exception)


class ReplicaSpellingTest(StubTestCase):
    def test_a_server_named_twice_in_another_case_or_with_its_default_port_is_refused(self):
        port = self.srv.url.rsplit(":", 1)[1]
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        cases = [("http://localhost:" + port, "http://LocalHost:" + port,
                  "http://LocalHost:{}/v1/chat/completions".format(port)),
                 ("http://judge.invalid/v1", "http://judge.invalid:80/v1",
                  "http://judge.invalid:80/v1/chat/completions"),
                 ("https://judge.invalid", "HTTPS://JUDGE.invalid:443/",
                  "https://JUDGE.invalid:443/v1/chat/completions")]
        for first, again, shown in cases:
            with self.subTest(again=again):
                code, out, err = run_main([source, "--judge-url", first, "--judge-url", again,
                                           "--judge-model", "m"])
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, "minijudge: error: judge URL {!r} is given twice (as {})"
                                      ": name each server once\n".format(again, shown))

    def test_the_same_host_on_another_port_or_path_is_another_server(self):
        judge = minijudge.LLMJudge(["http://judge.invalid:8000", "http://judge.invalid:8001",
                                    "http://judge.invalid:8000/b/v1"], model="m")
        self.assertEqual(len(judge.urls), 3)


class ScoredRecordTest(StubTestCase):
    def cli_lines(self, lines, exit_code=0):
        source = self.write("in.jsonl", "".join(line + "\n" for line in lines))
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-model",
                                   "judge-model", "-o", self.path("out.jsonl")])
        self.assertEqual(code, exit_code, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            return f.read().splitlines()

    def test_a_record_with_nan_or_infinity_scores_as_the_command_line_writes_it(self):
        lines = ['{"question": "q", "response": "r", "x": NaN, "y": [-Infinity, 1e999]}']
        cli = json.loads(self.cli_lines(lines)[0])
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model")
        scored = minijudge.scored_record(judge, json.loads(lines[0]), line=1)
        text = json.dumps(scored, allow_nan=False)  # strict JSON, as the command line's
        self.assertEqual((scored["x"], scored["y"]), (None, [None, None]))
        for record in (cli, scored):
            record.pop("judge_latency", None)  # a figure of each run
        self.assertEqual(json.loads(text), dict(cli, judge_run=scored["judge_run"]))

    def test_a_record_that_is_not_an_object_is_a_bad_record_as_in_a_run(self):
        cli = [json.loads(line) for line in self.cli_lines(['[1,2]', '"text"', '7'], 1)]
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model")
        for line, (record, written) in enumerate(zip([[1, 2], "text", 7], cli), 1):
            with self.subTest(record=record):
                scored = minijudge.scored_record(judge, record, line=line)
                self.assertEqual(scored["judge_status"], "bad_record")
                self.assertEqual(scored["judge_error"], written["judge_error"])
                self.assertEqual(dict(scored, judge_run=None), dict(written, judge_run=None))
        self.assertEqual(self.srv.chat_count, 0)  # neither sent a bad record


class ReplicaCountsTest(StubTestCase):
    def test_the_preflights_chat_request_is_not_counted_as_a_servers_request(self):
        other = self.start_stub()  # both list judge-model: the model asked is not listed
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 4)
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url",
                                   other.url, "--judge-model", "unlisted", "-o",
                                   self.path("out.jsonl"), "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        sent = [server["requests"] for server in summary["servers"]]
        self.assertEqual((sum(sent), summary["requests"]), (4, 4))
        self.assertEqual(self.srv.chat_count + other.chat_count, 5)  # the preflight's too
        self.assertIn("  servers:\n    {}/v1/chat/completions: {} requests, 0 failed\n".format(
            self.srv.url, sent[0]), err)

    def test_a_server_asking_to_wait_rests_while_another_takes_its_requests_at_once(self):
        other = self.start_stub()
        self.srv.push(rate_limited("30"))  # a run that waited for it would take 30 s
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 3)
        started = time.monotonic()
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url",
                                   other.url, "--judge-model", "judge-model", "--concurrency",
                                   "1", "-o", self.path("out.jsonl"), "--summary",
                                   self.path("s.json")])
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual([(s["requests"], s["failures"]) for s in summary["servers"]],
                         [(1, 1), (3, 0)])  # rested: asked no more in the run
        self.assertEqual((summary["requests"], summary["statuses"]), (4, {"ok": 3}))

    def test_requests_in_flight_to_a_server_that_stops_answering_rest_it_once(self):
        hung = self.start_stub()
        hung.push(hang(3), hang(3))
        self.srv.delay = 0.3  # the second thread's request still out when the third picks
        judge = minijudge.LLMJudge([hung.url, self.srv.url], model="judge-model", timeout=0.5)
        notes = []
        judge._on_retry = notes.append
        threads = [threading.Thread(target=judge.judge, args=({"question": "q"}, "r"))
                   for _ in range(3)]  # ties in turn: the first and third go to hung
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(hung.chat_count, 2)
        said = "judge not answering: no reply within --timeout at {}/v1/chat/completions; " \
               "resting it 1 s, its requests go to the others".format(hung.url)
        notes = [note for note in notes if note]  # None: a request answered
        self.assertEqual(notes, [said, said])  # not 1 s, then 2 s: it failed once, not twice

    def test_replicas_answering_as_different_models_are_named_not_merged_into_one(self):
        other = self.start_stub()
        other.responder = lambda request: chat("Rating: 2", model="other-model")
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 4)
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url",
                                   other.url, "--judge-model", "judge-model", "--concurrency",
                                   "1", "-o", self.path("out.jsonl"), "--summary",
                                   self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual(summary["judge_models"], {"judge-model": 2, "other-model": 2})
        self.assertIn("\n  models answering: judge-model 2, other-model 2: not one model; "
                      "check each server\n", err)
        code, out, err = run_main(["report", self.path("out.jsonl"), "--summary",
                                   self.path("r.json")])
        with open(self.path("r.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["judge_models"], summary["judge_models"])

    def test_one_model_answering_under_its_own_spelling_names_no_models(self):
        self.srv.responder = lambda request: chat("Rating: 4", model="org/Judge-Model")
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 2)
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-model",
                                   "judge-model", "--summary", self.path("s.json")])
        with open(self.path("s.json"), encoding="utf-8") as f:
            self.assertIsNone(json.load(f)["judge_models"])
        self.assertNotIn("models answering", err)

    def test_a_replica_naming_its_model_with_a_list_or_a_number_does_not_stop_the_run(self):
        other = self.start_stub()
        self.srv.responder = lambda request: chat("Rating: 4", model=5)
        other.responder = lambda request: chat("Rating: 2", model=["x"],
                                               system_fingerprint={"fp": 1})
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 4)
        code, out, err = run_main([source, "--judge-url", self.srv.url, "--judge-url",
                                   other.url, "--judge-model", "judge-model", "-o",
                                   self.path("out.jsonl"), "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 4)
        self.assertEqual({r["judge_model"] for r in records}, {None})  # not text: no name
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual((summary["judge_model"], summary["system_fingerprints"]),
                         ("judge-model", {}))
