"""Batch files (the section "Batch files"): --batch-export, a batch engine (the tests'
own, tests/batch_engine.py, tested here too), --batch-import, and report over a batch run's
shards; an export that never writes over a file the run reads or writes, replies that
disagree, and the hostile campaigns' batch files that hold no reply.

Batch files and reports: --batch-export, a batch engine, --batch-import, and report.

A run of every mode is exported, answered by tests/batch_engine.py through a StubServer
(OpenAI's output format, lines shuffled), imported, and compared with an online run of the
same stub: the same records, the same summary but for timing and requests. Faults the
engine injects (a 500, an expired request, a missing line, malformed lines) become statuses
and counts; with --judge-url only those are sent. ``report`` over shards equals the single
run's summary and refuses shards of different runs."""
import json
import os
import contextlib
import io
import subprocess
import sys
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from batch_engine import (SERVER_ERROR, failed_line, main, malformed_lines,  # noqa: E402
                          output_line, run_batch, vllm_error_line)
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, error, html, run_main  # noqa: E402
from stub import read_records as lines, run_process  # noqa: E402

REPO = os.path.dirname(HERE)
EXAMPLES = os.path.join(REPO, "examples")
# a reply each mode can read, picked by the prompt: the same request gets the same reply
REPLIES = {
    "rating": ["Rating: [[2]]", "Rating: [[4]]", "Rating: [[5]]", "no idea"],
    "binary": ["yes", "no", "yes"], "math": ["no", "yes"],
    "rubric": ['{"correctness": 4, "relevance": 5}', '{"correctness": 2, "relevance": 3}'],
    "criterion": ["Excellent", "Bad", "Acceptable"],
    "comparative": ["8 6", "5 9", "7 7"], "pairwise": ["[[A]]", "[[B]]", "[[C]]"],
    "systems": ["[[A]]", "[[B]]", "[[C]]"],
}
DATA = {"comparative": "pairs.jsonl", "pairwise": "pairs.jsonl", "systems": "systems.jsonl"}
# what differs between a run that sent requests and one that read them from files
TIMING = {"wall_seconds", "requests", "requests_per_second", "latency_mean", "latency_max",
          "cached", "judge_url", "servers", "batch", "limits"}


def figures(summary):
    return {k: v for k, v in summary.items() if k not in TIMING}


class BatchTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.mode = "rating"
        self.srv.responder = lambda request: chat(REPLIES[self.mode][zlib.crc32(
            request.prompt.encode()) % len(REPLIES[self.mode])])

    def main(self, *argv, code=0):
        exit_code, out, err = run_main(list(argv) + ["-q"])
        self.assertIn(exit_code, (0, 1) if code is None else (code,), err)
        return err

    def argv(self, mode, *more):
        data = os.path.join(EXAMPLES, DATA.get(mode, "qa.jsonl"))
        criteria = ["--criteria", os.path.join(EXAMPLES, "helpfulness.json")] * (
            mode == "criterion")
        return ["--judge-model", "judge-model", "--mode", mode] + criteria + list(more) + [data]

    def online(self, mode, name, *more):
        self.mode = mode
        self.main("--judge-url", self.srv.url, *self.argv(mode, *more), "-o", self.path(
            name + ".jsonl"), "--summary", self.path(name + ".json"), code=None)
        return self.records(name + ".jsonl"), self.summary(name + ".json")

    def export(self, mode, *more):
        self.mode = mode
        self.main(*self.argv(mode, *more), "--batch-export", self.path("requests.jsonl"),
                  "--batch-max-lines", "5",
                  "-o", self.path("exported.jsonl"))
        parts = sorted(os.path.join(self.tmp, name) for name in os.listdir(self.tmp)
                       if name.startswith("requests."))
        return parts, lines(self.path("exported.jsonl"))

    def imported(self, mode, files, *more, code=None):
        sent = self.srv.chat_count
        argv = [x for f in files for x in ("--batch-import", f)]
        err = self.main(*self.argv(mode, *argv, *more), "-o", self.path("imported.jsonl"),
                        "--summary", self.path("imported.json"), code=code)
        summary = self.summary("imported.json")
        return self.records("imported.jsonl"), summary, self.srv.chat_count - sent, err

    def test_every_mode_imported_equals_online(self):
        for mode in REPLIES:
            for more in [()] + [("--repeats", "2")] * (mode == "binary"):
                with self.subTest(mode=mode, more=more):
                    records, summary = self.online(mode, "online", *more)
                    self.assertTrue(any(r["judge_status"] == "ok" for r in records))
                    parts, exported = self.export(mode, *more)
                    self.assertLessEqual({r["judge_status"] for r in exported},
                                        {"exported", "empty_response"})
                    # every request once: both orders, every pair, every repeat
                    requests = [line for part in parts for line in lines(part)]
                    self.assertEqual(len(requests), summary["requests"], summary)
                    self.assertEqual(len({r["custom_id"] for r in requests}), len(requests))
                    self.assertEqual(len(parts), -(-len(requests) // 5))  # --batch-max-lines 5
                    self.assertEqual(run_batch(parts, self.path("results.jsonl"), self.srv.url +
                                               "/v1/chat/completions", shuffle_seed=3),
                                     len(requests))
                    got, got_summary, sent, _ = self.imported(
                        mode, [self.path("results.jsonl")], *more)
                    self.assertEqual(sent, 0)
                    self.assertEqual(got, records)
                    self.assertEqual(figures(got_summary), figures(summary))
                    self.assertEqual(got_summary["requests"], 0)
                    self.assertEqual(got_summary["batch"], {
                        "imported": len(requests), "unasked": 0, "malformed": {},
                        "conflicting": 0, "exported": 0, "files": []})
                    for name in os.listdir(self.tmp):
                        os.remove(self.path(name))

    def test_assess_runs_in_two_rounds_as_the_readme_says(self):
        # the second prompt holds the first reply: export, import and export the second turns
        records, summary = self.online("criterion", "online", "--assess")
        parts, _ = self.export("criterion", "--assess")
        sent = self.srv.chat_count
        run_batch(parts, self.path("first.jsonl"), self.srv.url + "/v1/chat/completions")
        for part in parts:
            os.remove(part)
        self.main(*self.argv("criterion", "--assess", "--batch-import", self.path(
            "first.jsonl"), "--batch-export", self.path("requests.jsonl")))
        second = sorted(os.path.join(self.tmp, n) for n in os.listdir(self.tmp)
                        if n.startswith("requests."))
        self.assertEqual(len([x for part in second for x in lines(part)]),
                         summary["requests"] // 2)
        run_batch(second, self.path("second.jsonl"), self.srv.url + "/v1/chat/completions")
        got, got_summary, _, _ = self.imported("criterion", [self.path(
            "first.jsonl"), self.path("second.jsonl")], "--assess")
        self.assertEqual(self.srv.chat_count - sent, summary["requests"])  # all by the engine
        self.assertEqual(got, records)
        self.assertEqual(figures(got_summary), figures(summary))

    def test_a_jury_of_three_models_exports_a_file_per_model(self):
        # OpenAI takes one model per batch file
        judges = ["--judges", os.path.join(EXAMPLES, "jury.json"), "--jury", "median"]
        data = os.path.join(EXAMPLES, "qa.jsonl")
        self.main("--judge-url", self.srv.url, *judges, data, "-o", self.path("online.jsonl"),
                  "--summary", self.path("online.json"), code=None)
        self.main(*judges, "--batch-export", self.path("requests"), data)
        parts = [self.path("requests.%03d.jsonl" % n) for n in range(3)]
        self.assertEqual([len({line["body"]["model"] for line in lines(part)}) for part in parts],
                         [1, 1, 1])
        run_batch(parts, self.path("results.jsonl"), self.srv.url + "/v1/chat/completions")
        self.main(*judges, "--batch-import", self.path("results.jsonl"), data,
                  "-o", self.path("imported.jsonl"), "--summary", self.path("imported.json"),
                  code=None)
        self.assertEqual(lines(self.path("imported.jsonl")), lines(self.path("online.jsonl")))
        online, imported = (self.summary(n + ".json") for n in ("online", "imported"))
        self.assertIsNotNone(online["panel"])
        self.assertEqual(figures(imported), figures(online))

    def test_faults_become_statuses_and_counts_and_are_sent_online_if_a_url_is_given(self):
        records, _ = self.online("rating", "online")
        parts, exported = self.export("rating")
        ids = [line["custom_id"] for line in lines(parts[0])]
        results = self.path("results.jsonl")
        run_batch(parts, results, self.srv.url + "/v1/chat/completions", errors={ids[0]},
                  failures={ids[1]: "batch_expired"}, missing={ids[2]}, shuffle_seed=1)
        with open(results, "ab") as f:
            f.write(b'{"id": "batch_req_9", "custom_id": \n')  # not JSON
            f.write(json.dumps(output_line("k-1", 200, {})).encode() + b"\n")  # not ours
            f.write(json.dumps(output_line("0" * 64, 200, {})).encode() + b"\n")  # not asked
            f.write(b"\n")  # a blank line is no line
        with open(self.path("more.jsonl"), "wb") as f:  # a second file: a bad reply, a torn one
            line = json.dumps(output_line(ids[3], 200, {"object": "list", "data": []}))
            f.write(line.encode() + b"\n" + line.replace("list", "li").encode()[:160] + b"\n")
        got, summary, sent, err = self.imported("rating", [results, self.path("more.jsonl")])
        self.assertEqual(sent, 0)
        self.assertEqual(len(got), len(records))
        status = {r["id"]: (r["judge_status"], r["judge_error"]) for r in got}
        rows = {r["judge_error"].split("custom_id ")[1][:64]: r["id"] for r in exported
                if r["judge_status"] == "exported"}
        self.assertEqual(status[rows[ids[0]]][0], "http_error")
        self.assertIn("http 500 from {} (custom_id {}): The server had an error".format(
            results, ids[0]), status[rows[ids[0]]][1])
        self.assertEqual(status[rows[ids[1]]], ("not_judged", "not judged: the batch did not "
                         "run it: This request could not be executed before the completion "
                         "window expired."))
        self.assertEqual(status[rows[ids[2]]], ("not_judged", "not judged: no reply in the "
                         "--batch-import files (custom_id {})".format(ids[2])))
        # the engine's success, then a bad 200 and a torn line: the success is used
        online = {r["id"]: (r["judge_status"], r["judge_error"]) for r in records}
        self.assertEqual(status[rows[ids[3]]], online[rows[ids[3]]])
        self.assertEqual(summary["batch"]["conflicting"], 1)
        self.assertEqual(summary["batch"]["malformed"], {
            "not JSON": 2, "without a minijudge custom_id": 1,
            "a 200 body that is not a chat completion": 1})
        self.assertEqual(summary["batch"]["unasked"], 1)
        self.assertEqual(summary["requests"], 0)
        # with a URL, what the file did not answer is sent: those three, and nothing else
        got, summary, sent, _ = self.imported("rating", [results], "--judge-url", self.srv.url,
                                              "--no-preflight")
        self.assertEqual(sent, 3)
        self.assertEqual(got, records)

    def test_a_python_without_sqlite_exports_each_request_once_imports_and_caches(self):
        # the keys' index lives in SQLite; a Python built without it keeps them in a dict
        with open(os.path.join(EXAMPLES, "qa.jsonl"), "rb") as f:
            rows = f.read().splitlines(keepends=True)
        data = self.path("data.jsonl")
        with open(data, "wb") as f:
            f.writelines(rows + rows[:2])  # two records twice: the same requests
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        blocked = ("import runpy, sys; sys.modules['sqlite3'] = None; "
                   "runpy.run_module('minijudge', run_name='__main__', alter_sys=True)")

        def start(*argv):
            proc = subprocess.Popen([*PYTHON, "-c", blocked, "--judge-model",
                                     "judge-model", "-q", data, *argv], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.addCleanup(lambda: proc.poll() is None and proc.kill())
            return proc, argv[argv.index("-o") + 1]

        def finish(run):
            proc, output = run
            _, err = proc.communicate(timeout=60)
            self.assertIn(proc.returncode, (0, 1), err)
            self.assertNotIn("Traceback", err)
            return lines(output)

        # two runs side by side, twice: the export (it sends nothing) beside the first run
        # on the cache, then the import (nothing either) beside the run the cache answers
        cache = ["--judge-url", self.srv.url, "--no-preflight", "--concurrency", "1",
                 "--cache", self.path("c.jsonl")]
        exporting = start("--batch-export", self.path("requests.jsonl"),
                          "-o", self.path("e.jsonl"))
        first = finish(start(*cache, "-o", self.path("first.jsonl")))
        exported = finish(exporting)
        asked = sum(r["judge_status"] == "exported" for r in exported[:len(rows)])
        self.assertEqual([r["judge_status"] for r in exported[-2:]], ["exported"] * 2)
        self.assertEqual(len(lines(self.path("requests.000.jsonl"))), asked)
        self.assertEqual(self.srv.chat_count, asked)  # identical records: one request
        run_batch([self.path("requests.000.jsonl")], self.path("results.jsonl"),
                  self.srv.url + "/v1/chat/completions")
        sent = self.srv.chat_count
        importing = start("--batch-import", self.path("results.jsonl"),
                          "-o", self.path("i.jsonl"))
        again = finish(start(*cache, "-o", self.path("again.jsonl")))
        imported = finish(importing)
        self.assertEqual(self.srv.chat_count, sent)  # the cache answered, the import too
        self.assertEqual([(r["judge_status"], r["judge_score"]) for r in imported],
                         [(r["judge_status"], r["judge_score"]) for r in first])
        self.assertEqual([r["judge_score"] for r in again], [r["judge_score"] for r in first])

    def test_a_run_without_a_model_or_with_an_unreadable_file_is_refused(self):
        data = os.path.join(EXAMPLES, "qa.jsonl")
        code, _, err = run_main(["--batch-export", self.path("r"), data])
        self.assertEqual(code, 2)
        self.assertIn("need the model each request names: --judge-model", err)
        code, _, err = run_main(["--judge-model", "m", "--batch-import", self.path("none"), data])
        self.assertEqual(code, 2)
        self.assertIn("No such file or directory", err)
        code, _, err = run_main(["--judge-model", "m", "--batch-export", "/no/such/r", data])
        self.assertEqual((code, err), (2, "minijudge: error: --batch-export /no/such/r: cannot "
                                          "write there\n"))


class ShardReportTest(StubTestCase):
    def setUp(self):
        super().setUp()
        replies = REPLIES["rating"]
        self.srv.responder = lambda request: chat(replies[zlib.crc32(
            request.prompt.encode()) % len(replies)])
        with open(self.path("data.jsonl"), "w") as f:
            for n in range(30):
                f.write(json.dumps({"id": n, "question": "q%d" % n, "answer": "a",
                                    "response": "r" * n, "label": 1 + n % 5}) + "\n")

    def run_judge(self, out, *more):
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                 "--human-field", "label", self.path("data.jsonl"), "-o",
                                 self.path(out), "--summary", self.path(out + ".json"),
                                 "-q"] + list(more))
        self.assertIn(code, (0, 1), err)
        return self.summary(out + ".json")

    def report(self, *argv):
        proc = run_process("report", *argv, cwd=REPO, timeout=30)
        return proc.returncode, proc.stderr.decode()

    def test_a_report_over_three_shards_equals_the_single_run(self):
        single = self.run_judge("all.jsonl")
        self.assertEqual(single["statuses"]["parse_error"] > 0, True)
        shards = [self.path("shard%d.jsonl" % k) for k in range(3)]
        for k in range(3):
            self.run_judge("shard%d.jsonl" % k, "--shard", "%d/3" % k)
        code, err = self.report(*shards[::-1], "--human-field", "label", "--summary",
                                self.path("report.json"))
        self.assertEqual(code, 1, err)  # over --max-error-rate, as the run was
        with open(self.path("report.json")) as f:
            report = json.load(f)
        skip = TIMING | {"parameters", "shard", "interrupted", "mixed", "overridden"}
        self.assertEqual({k: v for k, v in report.items() if k not in skip},
                         {k: v for k, v in single.items() if k not in skip})
        self.assertEqual(report["agreement"]["n"], single["agreement"]["n"])
        self.assertTrue(err.startswith("minijudge report: 30 records; judge judge-model\n"), err)
        self.assertIn("agreement with label", err)

    def test_shards_of_two_templates_are_refused_unless_mixed(self):
        self.run_judge("a.jsonl")
        with open(self.path("t.txt"), "w") as f:
            f.write("Rate it 1-5.\n{question}\n{response}\nReply: Rating: [[N]]")
        self.run_judge("b.jsonl", "--template", self.path("t.txt"))
        code, err = self.report(self.path("a.jsonl"), self.path("b.jsonl"))
        self.assertEqual(code, 2)
        self.assertRegex(err, r"^minijudge: error: \S+a.jsonl line 1 and \S+b.jsonl line 1 are "
                              r"records of different runs: template 'rating / rating_ref' and "
                              r"'custom'; "
                              r"--mixed reports them together\n$")
        code, err = self.report(self.path("a.jsonl"), self.path("b.jsonl"), "--mixed")
        self.assertIn("minijudge report: 60 records", err)
        self.assertIn("  mixed: the records differ in ['template', 'template_sha256']", err)

    def test_a_file_minijudge_did_not_write_is_refused_and_a_torn_line_skipped(self):
        code, err = self.report(self.path("data.jsonl"))
        self.assertEqual((code, err), (2, "minijudge: error: {} line 1 has no judge_run field: "
                                          "not a record this minijudge ({}) scored\n".format(
                                              self.path("data.jsonl"), minijudge.__version__)))
        self.run_judge("a.jsonl")
        with open(self.path("a.jsonl"), "a") as f:
            f.write('{"id": 30, "judge_sco')
        code, err = self.report(self.path("a.jsonl"))
        self.assertIn("minijudge: warning: {}: line 31: not JSON".format(self.path("a.jsonl")),
                      err)
        self.assertIn("minijudge report: 30 records", err)


IDS = ["k-%d" % i for i in range(6)]


def request(custom_id, model="judge-model", text=None):
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "temperature": 0,
                     "messages": [{"role": "user", "content": text or custom_id}]}}


class BatchEngineTest(StubTestCase):
    """The tests' batch engine against a real loopback StubServer: one line per request in
    OpenAI's output shape, the three injected faults, the input checks OpenAI makes, and a
    shuffle that keeps every line."""


    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: [[4]]"
        self.url = self.srv.url + "/v1/chat/completions"
        self.inputs = [self.write_jsonl("in.000.jsonl", [request(i) for i in IDS[:4]]),
                       self.write_jsonl("in.001.jsonl", [request(i) for i in IDS[4:]])]
        self.out = self.path("out.jsonl")

    def lines(self):
        with open(self.out, encoding="utf-8") as f:
            return [json.loads(text) for text in f]

    def test_a_line_per_request_in_openais_shape(self):
        self.assertEqual(run_batch(self.inputs, self.out, self.url), 6)
        lines = self.lines()
        self.assertEqual([line["custom_id"] for line in lines], IDS)
        self.assertEqual([r.prompt for r in self.srv.requests], IDS)
        self.assertEqual(self.srv.requests[0].json, request("k-0")["body"])
        for line in lines:
            self.assertEqual(list(line), ["id", "custom_id", "response", "error"])
            self.assertRegex(line["id"], r"^batch_req_[0-9a-f]{24}$")
            self.assertIsNone(line["error"])
            response = line["response"]
            self.assertEqual(list(response), ["status_code", "request_id", "body"])
            self.assertEqual(response["status_code"], 200)
            self.assertRegex(response["request_id"], r"^[0-9a-f]{32}$")
            self.assertEqual(response["body"]["object"], "chat.completion")
            self.assertEqual(response["body"]["choices"][0]["message"]["content"],
                             "Rating: [[4]]")
        self.assertEqual(len({line["id"] for line in lines}), 6)

    def test_the_servers_http_error_is_a_line_with_its_status_and_body(self):
        self.srv.push(error(400, "maximum context length is 8192 tokens",
                            code="context_length_exceeded"), html(502))
        run_batch(self.inputs[:1], self.out, self.url)
        first, second = self.lines()[:2]
        self.assertEqual(first["response"]["status_code"], 400)
        self.assertEqual(first["response"]["body"], {"error": {
            "message": "maximum context length is 8192 tokens",
            "type": "invalid_request_error", "param": None,
            "code": "context_length_exceeded"}})
        self.assertIsNone(first["error"])
        self.assertEqual(second["response"]["status_code"], 502)
        self.assertIn("<h1>502 Bad Gateway</h1>", second["response"]["body"])

    def test_injected_errors_failures_and_missing_lines(self):
        run_batch(self.inputs, self.out, self.url, errors={"k-1"},
                  failures={"k-2": "batch_expired", "k-3": "batch_cancelled"},
                  missing={"k-4"})
        lines = {line["custom_id"]: line for line in self.lines()}
        self.assertEqual(sorted(lines), ["k-0", "k-1", "k-2", "k-3", "k-5"])
        self.assertEqual([r.prompt for r in self.srv.requests], ["k-0", "k-5"])
        self.assertEqual(lines["k-1"]["response"]["status_code"], 500)
        self.assertEqual(lines["k-1"]["response"]["body"], SERVER_ERROR)
        self.assertIsNone(lines["k-1"]["error"])
        self.assertEqual(lines["k-2"]["response"], None)
        self.assertEqual(lines["k-2"]["error"], {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window "
                       "expired."})
        self.assertEqual(lines["k-3"]["error"]["code"], "batch_cancelled")

    def test_failures_given_as_ids_are_expired(self):
        run_batch(self.inputs, self.out, self.url, failures=["k-0"])
        self.assertEqual(self.lines()[0]["error"]["code"], "batch_expired")
        self.assertEqual(self.srv.chat_count, 5)

    def test_shuffle_keeps_every_line_and_is_repeatable(self):
        run_batch(self.inputs, self.out, self.url, shuffle_seed=3)
        first = self.lines()
        run_batch(self.inputs, self.out, self.url, shuffle_seed=3)
        again = self.lines()
        order = [line["custom_id"] for line in first]
        self.assertEqual(sorted(order), IDS)
        self.assertNotEqual(order, IDS)
        self.assertEqual([line["custom_id"] for line in again], order)

    def test_input_openai_would_refuse_raises_before_anything_is_sent(self):
        cases = [
            ("repeated custom_id", [request("a"), request("a")],
             "in.jsonl line 2: custom_id 'a' repeats in.jsonl line 1"),
            ("second model", [request("a"), request("b", model="other")],
             "in.jsonl line 2: model 'other', but in.jsonl line 1 has 'judge-model'; a batch "
             "file holds one model"),
            ("another endpoint", [dict(request("a"), url="/v1/embeddings")],
             "in.jsonl line 1: expected POST /v1/chat/completions; got POST "
             "/v1/embeddings"),
            ("no custom_id", [{"method": "POST"}], "in.jsonl line 1: no custom_id"),
        ]
        for name, items, message in cases:
            with self.subTest(name):
                path = self.write_jsonl("in.jsonl", items)
                with self.assertRaises(ValueError) as caught:
                    run_batch([path], self.out, self.url)
                self.assertEqual(str(caught.exception), message.replace("in.jsonl", path))
        self.assertEqual(self.srv.requests, [])

    def test_panels_may_mix_models_when_asked(self):
        path = self.write_jsonl("in.jsonl", [request("a"), request("b", model="other")])
        self.assertEqual(run_batch([path], self.out, self.url, single_model=False), 2)

    def test_malformed_lines_are_each_wrong_in_one_way(self):
        bad = dict(malformed_lines("k-0"))
        self.assertEqual(list(bad), ["not_json", "no_custom_id", "unknown_custom_id",
                                     "not_a_completion"])
        with self.assertRaises(ValueError):
            json.loads(bad["not_json"])
        self.assertNotIn("custom_id", json.loads(bad["no_custom_id"]))
        self.assertNotIn(json.loads(bad["unknown_custom_id"])["custom_id"], IDS)
        line = json.loads(bad["not_a_completion"])
        self.assertEqual(line["custom_id"], "k-0")
        self.assertEqual(line["response"]["body"], {"object": "list", "data": []})

    def test_vllm_error_line_keeps_the_message_in_error_and_no_body(self):
        line = vllm_error_line("k-0", "Request must not be sent in stream mode")
        self.assertEqual(list(line), ["id", "custom_id", "response", "error"])
        self.assertRegex(line["id"], r"^vllm-[0-9a-f]{32}$")
        self.assertEqual((line["response"]["status_code"], line["response"]["body"]),
                         (400, None))
        self.assertEqual(line["error"], "Request must not be sent in stream mode")

    def test_command_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(self.inputs + ["-o", self.out, "--url", self.url])
        self.assertEqual((code, err.getvalue()),
                         (0, "batch_engine.py: 6 lines to %s\n" % self.out))
        self.assertEqual(len(self.lines()), 6)

    def test_command_line_names_a_bad_input(self):
        path = self.write_jsonl("in.jsonl", [request("a"), request("a")])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main([path, "-o", self.out, "--url", self.url])
        self.assertEqual((code, err.getvalue()), (1, "batch_engine.py: error: %s line 2: "
                         "custom_id 'a' repeats %s line 1\n" % (path, path)))


MODEL = ["--judge-model", "judge-model", "-q"]


def completion(content):
    return {"object": "chat.completion", "model": "judge-model", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}


class FilesTest(StubTestCase):
    """Issue 28, batch files: an export never writes over a file the run reads or writes, nor
    over an earlier export; each file the run writes is checked against every file it reads
    and against the others; two replies to one request that disagree are counted, the first
    success used. All through the real command line, on real files, symlinks and hard links."""

    def setUp(self):
        super().setUp()
        self.data = self.path("data.jsonl")
        self.write("data.jsonl", "".join(json.dumps({"id": n, "question": "q%d" % n,
                                                     "response": "r%d" % n}) + "\n"
                                         for n in range(3)))
        with open(self.data, "rb") as f:
            self.original = f.read()

    def refused(self, argv, message):
        code, out, err = run_main(MODEL + argv)
        self.assertEqual((code, err), (2, "minijudge: error: " + message + "\n"))
        self.assertEqual(out, "")

    def assert_untouched(self, path, content):
        with open(path, "rb") as f:
            self.assertEqual(f.read(), content)


class ExportPartsTest(FilesTest):
    def test_an_input_named_like_an_export_part_is_refused_before_it_is_read(self):
        os.rename(self.data, self.path("req.000.jsonl"))
        self.refused([self.path("req.000.jsonl"), "--batch-export", self.path("req")],
                     "--batch-export {0} writes {0}.000.jsonl, the input file; name another "
                     "prefix".format(self.path("req")))
        self.assert_untouched(self.path("req.000.jsonl"), self.original)

    def test_the_input_through_a_symlink_or_hard_link_named_like_a_part_is_refused(self):
        for link in (os.symlink, os.link):
            with self.subTest(link=link.__name__):
                link(self.data, self.path("req.001.jsonl"))
                try:
                    self.refused([self.data, "--batch-export", self.path("req.jsonl")],
                                 "--batch-export {0}.jsonl writes {0}.001.jsonl, the input file "
                                 "{1}; name another prefix".format(self.path("req"), self.data))
                    self.assert_untouched(self.data, self.original)
                finally:
                    os.remove(self.path("req.001.jsonl"))

    def test_an_input_on_stdin_that_is_a_part_is_refused(self):
        os.rename(self.data, self.path("req.000.jsonl"))
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        with open(self.path("req.000.jsonl"), "rb") as stdin:
            done = subprocess.run([*PYTHON, "-m", "minijudge", *MODEL, "-",
                                   "--batch-export", self.path("req")], stdin=stdin,
                                  cwd=os.path.dirname(HERE), env=env, capture_output=True,
                                  text=True, timeout=60)
        self.assertEqual((done.returncode, done.stderr), (2, "minijudge: error: --batch-export "
                         "{0} writes {0}.000.jsonl, the input file (stdin); name another "
                         "prefix\n".format(self.path("req"))))
        self.assert_untouched(self.path("req.000.jsonl"), self.original)

    def test_an_output_named_like_a_part_is_refused_before_anything_is_written(self):
        for flag in ("-o", "--cache", "--summary", "--html"):
            with self.subTest(flag=flag):
                self.refused([self.data, flag, self.path("x.000.jsonl"), "--batch-export",
                              self.path("x")],
                             "--batch-export {0} writes {0}.000.jsonl, the {1} file; name "
                             "another prefix".format(self.path("x"), flag))
                self.assertEqual(os.listdir(self.tmp), ["data.jsonl"])

    def test_a_cache_reached_through_a_hard_link_named_like_a_part_keeps_its_replies(self):
        self.write("cache.jsonl", '{"key": "paid"}\n')
        os.link(self.path("cache.jsonl"), self.path("c.000.jsonl"))
        self.refused([self.data, "--cache", self.path("cache.jsonl"), "--batch-export",
                      self.path("c")],
                     "--batch-export {0} writes {0}.000.jsonl, the --cache file {1}; name "
                     "another prefix".format(self.path("c"), self.path("cache.jsonl")))
        self.assert_untouched(self.path("cache.jsonl"), b'{"key": "paid"}\n')

    def test_a_batch_import_named_like_a_part_is_refused(self):
        self.write("r.002.jsonl", "")
        self.refused([self.data, "--batch-import", self.path("r.002.jsonl"), "--batch-export",
                      self.path("r")],
                     "--batch-export {0} writes {0}.002.jsonl, the --batch-import file; name "
                     "another prefix".format(self.path("r")))

    def test_a_folder_reached_through_a_symlink_is_the_same_folder(self):
        os.mkdir(self.path("real"))
        os.symlink(self.path("real"), self.path("alias"))
        self.refused([self.data, "-o", self.path("real/x.000.jsonl"), "--batch-export",
                      self.path("alias/x")],
                     "--batch-export {0} writes {0}.000.jsonl, the -o file {1}; name another "
                     "prefix".format(self.path("alias/x"), self.path("real/x.000.jsonl")))
        self.assertEqual(os.listdir(self.path("real")), [])

    def test_a_second_export_to_one_prefix_is_refused_and_the_first_kept(self):
        code, _, err = run_main(MODEL + [self.data, "--shard", "0/2", "--batch-export",
                                         self.path("req"), "-o", os.devnull])
        self.assertEqual(code, 0, err)
        with open(self.path("req.000.jsonl"), "rb") as f:
            first = f.read()
        self.assertEqual(len(first.splitlines()), 2)
        self.refused([self.data, "--shard", "1/2", "--batch-export", self.path("req"),
                      "-o", os.devnull],
                     "--batch-export {0}: {0}.000.jsonl exists (an earlier export?); name "
                     "another prefix, or remove it".format(self.path("req")))
        self.assert_untouched(self.path("req.000.jsonl"), first)

    def test_a_dangling_symlink_named_like_a_part_is_refused_not_followed(self):
        os.symlink(self.path("elsewhere.jsonl"), self.path("req.000.jsonl"))
        self.refused([self.data, "--batch-export", self.path("req"), "-o", os.devnull],
                     "--batch-export {0}: {0}.000.jsonl exists (an earlier export?); name "
                     "another prefix, or remove it".format(self.path("req")))
        self.assertFalse(os.path.lexists(self.path("elsewhere.jsonl")))

    def test_parts_past_999_are_parts_too(self):
        self.write("req.1000.jsonl", "")
        self.refused([self.data, "--batch-export", self.path("req"), "-o", os.devnull],
                     "--batch-export {0}: {0}.1000.jsonl exists (an earlier export?); name "
                     "another prefix, or remove it".format(self.path("req")))

    def test_a_part_made_by_another_run_after_the_check_is_not_overwritten(self):
        # the input is a FIFO: the run has checked its files once it opens it to read
        os.mkfifo(self.path("fifo"))
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        run = subprocess.Popen([*PYTHON, "-m", "minijudge", *MODEL, self.path("fifo"),
                                "--batch-export", self.path("req"), "--batch-max-lines", "1",
                                "-o", os.devnull], cwd=os.path.dirname(HERE), env=env,
                               stderr=subprocess.PIPE, text=True)
        with open(self.path("fifo"), "wb") as fifo:
            self.write("req.001.jsonl", "another run's\n")
            fifo.write(self.original)
        _, err = run.communicate(timeout=60)
        self.assertEqual(run.returncode, 1, err)
        self.assertIn("minijudge: error: cannot write {}: [Errno 17] File exists\n".format(
            self.path("req.001.jsonl")), err)
        self.assert_untouched(self.path("req.001.jsonl"), b"another run's\n")

    def test_a_prefix_that_names_only_a_folder_is_refused(self):
        self.refused([self.data, "--batch-export", self.tmp + os.sep, "-o", os.devnull],
                     "--batch-export {0}/ names a folder; name a prefix in it ({0}/requests)"
                     .format(self.tmp))
        self.assertEqual(os.listdir(self.tmp), ["data.jsonl"])

    def test_other_names_beside_the_prefix_do_not_stop_an_export(self):
        for name in ("req.jsonl", "req.00.jsonl", "req.000.json", "req2.000.jsonl",
                     "xreq.000.jsonl"):
            self.write(name, "keep\n")
        code, _, err = run_main(MODEL + [self.data, "--batch-export", self.path("req"),
                                         "-o", os.devnull])
        self.assertEqual(code, 0, err)
        self.assertEqual(len(lines(self.path("req.000.jsonl"))), 3)
        self.assert_untouched(self.path("req.jsonl"), b"keep\n")


class WritesAgainstReadsTest(FilesTest):
    """Every file the run writes (-o, --cache, --summary, --html) against every file it
    reads (--batch-import, --judges and the files it names, --criteria, --template,
    --response-format) and against the others."""

    def test_an_output_on_a_file_the_run_reads_is_refused(self):
        criteria = {"name": "helpful", "description": "d", "options": {"Good": 1, "Bad": 0}}
        self.write("criteria.json", json.dumps(criteria))
        self.write("template.txt", "Rate 1-5.\n{question}\n{response}\nRating: [[N]]")
        self.write("format.json", '{"score": 4}')
        self.write("import.jsonl", "")
        self.write("judges.json", json.dumps([{"name": "a", "criteria": "criteria.json"}]))
        cases = [
            (["--criteria", "criteria.json"], "-o", "criteria.json", "the --criteria file"),
            (["--template", "template.txt"], "--summary", "template.txt", "the --template file"),
            (["--response-format", "format.json", "--template", "template.txt"], "--cache",
             "format.json", "the --response-format file"),
            (["--batch-import", "import.jsonl"], "--html", "import.jsonl",
             "the --batch-import file"),
            (["--judges", "judges.json"], "-o", "judges.json", "the --judges file"),
            (["--judges", "judges.json"], "--summary", "criteria.json",
             "judge a's criteria file"),
        ]
        for reads, flag, name, what in cases:
            for link in (None, os.symlink, os.link):
                with self.subTest(reads=reads, flag=flag, link=link and link.__name__):
                    argv = [self.path(x) if os.path.exists(self.path(x)) else x for x in reads]
                    argv += ["--judge-url", self.srv.url, "--no-preflight"]  # main wrote on
                    target = self.path(name)
                    if link:
                        target = self.path("link")
                        link(self.path(name), target)
                    with open(self.path(name), "rb") as f:
                        before = f.read()
                    seen = "" if link is None else " " + self.path(name)
                    try:
                        self.refused(argv + [self.data, flag, target], "{} {} is {}{}; write "
                                     "elsewhere".format(flag, target, what, seen))
                        self.assert_untouched(self.path(name), before)
                    finally:
                        if link:
                            os.remove(target)

    def test_report_does_not_write_its_summary_over_a_file_it_reports(self):
        scored = self.path("scored.jsonl")
        code, _, err = run_main(MODEL + ["--judge-url", self.srv.url, self.data, "-o", scored])
        self.assertEqual(code, 0, err)
        with open(scored, "rb") as f:
            records = f.read()
        code, _, err = run_main(["report", scored, "--summary", scored])
        self.assertEqual((code, err), (2, "minijudge: error: --summary {} is the input file; "
                                          "write elsewhere\n".format(scored)))
        self.assert_untouched(scored, records)


class ConflictingRepliesTest(FilesTest):
    """Two replies to one request that disagree: a success wins over an error, the first
    success over a later one; the summary counts them and says which was used."""

    def export(self):
        code, out, err = run_main(MODEL + [self.data, "--batch-export", self.path("req")])
        self.assertEqual(code, 0, err)
        return [record["judge_error"].split("custom_id ")[1][:64]
                for record in map(json.loads, out.splitlines())]

    def write_lines(self, name, rows):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
        return ["--batch-import", self.path(name)]

    def imported(self, *imports):
        argv = MODEL[:2] + [x for each in imports for x in each] + [
            self.data, "--summary", self.path("summary.json")]
        code, out, err = run_main(argv)
        records = [json.loads(line) for line in out.splitlines()]
        with open(self.path("summary.json")) as f:
            return code, records, json.load(f)["batch"], err

    def test_a_success_wins_over_errors_and_the_first_success_over_a_later_one(self):
        ids = self.export()
        first = self.write_lines("first.jsonl", [
            output_line(ids[0], 500, {"error": {"message": "overloaded"}}),
            output_line(ids[1], 200, completion("Rating: [[2]]")),
            failed_line(ids[2], "batch_expired"),
            output_line(ids[1], 200, completion("Rating: [[5]]"))])  # one file, two replies
        second = self.write_lines("second.jsonl", [
            output_line(ids[0], 200, completion("Rating: [[4]]")),
            output_line(ids[2], 500, {"error": {"message": "overloaded"}})])
        code, records, batch, err = self.imported(first, second)
        self.assertEqual([(r["judge_status"], r["judge_score"]) for r in records],
                         [("ok", 0.75), ("ok", 0.25), ("not_judged", 0.0)])
        self.assertEqual(records[2]["judge_error"], "not judged: the batch did not run it: "
                         "This request could not be executed before the completion window "
                         "expired.")
        self.assertEqual(batch["conflicting"], 3)
        self.assertEqual(batch["imported"], 3)
        self.assertIn("\n  batch: 3 replies imported, 0 not asked for (ignored); 3 requests had "
                      "conflicting replies: the first success was used, else the first error\n",
                      err)
        self.assertEqual(code, 1, err)  # one in three failed

    def test_the_same_reply_twice_is_no_conflict(self):
        ids = self.export()
        rows = [output_line(key, 200, completion("Rating: [[3]]")) for key in ids]
        code, records, batch, err = self.imported(self.write_lines("a.jsonl", rows + rows),
                                                  self.write_lines("b.jsonl", rows))
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_score"] for r in records], [0.5] * 3)
        self.assertEqual(batch["conflicting"], 0)
        self.assertNotIn("conflicting", err)

    def test_a_python_without_sqlite_chooses_alike(self):
        ids = self.export()
        imports = self.write_lines("r.jsonl", [
            output_line(ids[0], 500, {"error": {"message": "overloaded"}}),
            output_line(ids[0], 200, completion("Rating: [[4]]")),
            output_line(ids[1], 200, completion("Rating: [[2]]")),
            output_line(ids[1], 200, completion("Rating: [[5]]")),
            output_line(ids[2], 200, completion("Rating: [[1]]"))])
        blocked = ("import runpy, sys; sys.modules['sqlite3'] = None; "
                   "runpy.run_module('minijudge', run_name='__main__', alter_sys=True)")
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        done = subprocess.run([*PYTHON, "-c", blocked, *MODEL, *imports, self.data,
                               "--summary", self.path("summary.json")],
                              cwd=os.path.dirname(HERE), env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([json.loads(line)["judge_score"] for line in done.stdout.splitlines()],
                         [0.75, 0.25, 0.0])
        with open(self.path("summary.json")) as f:
            self.assertEqual(json.load(f)["batch"]["conflicting"], 2)


THREE_RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class ImportOfAnExportPartHostileTest(StubTestCase):
    """Issue 28's second independent campaign, other inputs for each class: batch files read
    back that hold no reply are not counted as imported replies. Through the real command
    line against the loopback stub, on real files."""

    def test_a_request_file_imported_as_replies_imports_none(self):
        # importing the export's own part (requests, not replies) said "3 replies imported"
        # while the run judged all 3 live, exit 0: the summary's figure was wrong
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("data.jsonl", THREE_RECORDS)
        code, _, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                 self.path("req")])
        self.assertEqual(code, 0, err)
        part = self.path("req.000.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                 "--batch-import", part, "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual((summary["batch"]["imported"], summary["batch"]["unasked"],
                          summary["batch"]["malformed"], summary["requests"]),
                         (0, 0, {"not a batch output line": 3}, 3))
        self.assertIn("\n  batch: 0 replies imported, 0 not asked for (ignored); malformed "
                      "lines: 3 not a batch output line\n", err)


class NoneJudgedHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2A)."""

    def test_a_run_with_none_judged_says_so_not_none(self):
        # "mean score 0.0 with failures as 0.0; None over the 0 judged": Python's None in
        # the summary, in the run's and in report's
        self.srv.content = "no rating here"
        data = self.write_jsonl("data.jsonl", THREE_RECORDS)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                 "-o", self.path("out.jsonl")])
        self.assertEqual(code, 1)
        line = ("\n  mean score 0.0 with failures as 0.0; none judged; 95% CI [0.0, 0.0] "
                "(bootstrap, 1000 resamples, seed 0)\n")
        self.assertIn(line, err)
        code, _, err = run_main(["report", self.path("out.jsonl")])
        self.assertEqual(code, 1)
        self.assertIn(line, err)


class ImportFromAPipeHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2A)."""

    def test_a_batch_import_that_is_a_pipe_is_refused_before_anything_is_read(self):
        # `--batch-import /dev/stdin` or `<(cat out.jsonl)`: "no records in data.jsonl",
        # "interrupted", "cannot write None: [Errno None] None", exit 1, no record written
        data = self.write_jsonl("data.jsonl", THREE_RECORDS[:1])
        code, out, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                   self.path("req")])
        self.assertEqual(code, 0, err)
        key = json.loads(out)["judge_error"].split("custom_id ")[1][:64]
        reply = {"object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {
            "role": "assistant", "content": "Rating: 4"}, "finish_reason": "stop"}]}
        line = json.dumps(output_line(key, 200, reply)) + "\n"
        done = subprocess.run([*PYTHON, "-m", "minijudge", "--judge-model", "m", data,
                               "--batch-import", "/dev/stdin", "-o", self.path("out.jsonl")],
                              input=line.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=os.path.dirname(HERE), timeout=60)
        self.assertEqual((done.returncode, done.stderr.decode()), (
            2, "minijudge: error: --batch-import /dev/stdin is not a regular file (a pipe?): "
               "its replies are read again where they are needed; save it to a file first\n"))
        self.assertFalse(os.path.exists(self.path("out.jsonl")))


def m_completion(content):
    return {"object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}


class BatchStatusHostileTest(StubTestCase):
    """Issue 28's independent hostile campaign (hostA): a batch output line whose status code
    is no number is a malformed line, not a traceback."""

    def test_a_status_code_that_is_no_number_is_a_malformed_line(self):
        # "200" was judge_status internal_error, "TypeError: '<=' not supported between ..."
        data = self.write_jsonl("data.jsonl", THREE_RECORDS[:1])
        code, out, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                   self.path("req")])
        self.assertEqual(code, 0, err)
        key = json.loads(out)["judge_error"].split("custom_id ")[1][:64]
        for status in ("200", True, None):
            with self.subTest(status=status):
                replies = self.write_jsonl("r.jsonl", [output_line(key, status, m_completion(
                    "Rating: 4"))])
                code, out, err = run_main(["--judge-model", "m", data, "--batch-import",
                                           replies, "--summary", self.path("s.json")])
                record = json.loads(out)
                self.assertEqual((record["judge_status"], record["judge_error"]), (
                    "not_judged", "not judged: the line of custom_id {} in {} is not a batch "
                    "output line".format(key, replies)))
                with open(self.path("s.json"), encoding="utf-8") as f:
                    self.assertEqual(json.load(f)["batch"]["malformed"],
                                     {"not a batch output line": 1})
                self.assertEqual(code, 1, err)


class ExportThatExportsNothingTest(StubTestCase):
    """An export whose records failed exited 0: `export && upload` uploaded nothing. A user
    with a --judge-url and no --judge-model, the server down or listing two models: no part
    written, model_error then not_judged ("the run stopped"), exit 0, where the online run
    exits 1. An exported record is no failure; any other counts, as an online run's does."""

    LINE = "  failure rate 100.0% is over --max-error-rate 10.0%: exit 1\n"

    def export(self, *argv, prefix="req"):
        data = self.write_jsonl("data.jsonl", THREE_RECORDS)
        code, _, err = run_main([*argv, "--batch-export", self.path(prefix), data,
                                 "-o", self.path(prefix + "-out.jsonl")])
        statuses = [r.get("judge_status") for r in self.records(prefix + "-out.jsonl")]
        parts = sorted(name for name in os.listdir(self.tmp) if name.startswith(prefix + "."))
        return code, err, statuses, parts

    def test_an_export_whose_model_cannot_be_known_exits_1_as_the_online_run_does(self):
        self.srv.models = ["a", "b"]  # which one to name?
        down = self.start_stub()
        down.stop(hold_port=True)  # a refused connection
        for url in (self.srv.url, down.url):
            with self.subTest(url=url):
                code, err, statuses, parts = self.export("--judge-url", url)
                self.assertEqual((code, statuses, parts),
                                 (1, ["model_error", "not_judged", "not_judged"], []), err)
                self.assertTrue(err.endswith(self.LINE), err)
                self.assertEqual(run_main(["--judge-url", url, self.path("data.jsonl"),
                                           "-o", self.path("online.jsonl")])[0], 1)
                code, err, statuses, parts = self.export("--judge-url", url, "--max-error-rate",
                                                         "1", prefix="lenient")
                self.assertEqual((code, statuses), (0, ["model_error"] + ["not_judged"] * 2))
                self.assertNotIn("failure rate", err)

    def test_a_healthy_export_and_its_shards_exit_0_one_that_failed_1(self):
        self.srv.models = ["judge-model"]  # the one model the server lists is named
        code, err, statuses, parts = self.export("--judge-url", self.srv.url)
        self.assertEqual((code, statuses, parts), (0, ["exported"] * 3, ["req.000.jsonl"]), err)
        self.assertNotIn("failure rate", err)
        self.srv.models = ["a", "b"]
        for shard, records in (("1/2", 1), ("5/6", 0)):  # shard 5 of 6 holds no record
            with self.subTest(shard=shard):
                code, err, statuses, _ = self.export("--judge-url", self.srv.url, "--shard",
                                                     shard, prefix="s" + shard[0])
                self.assertEqual((code, len(statuses)), (1 if records else 0, records), err)

    def test_two_judges_one_exporting_one_failing_exit_1(self):
        down = self.start_stub()
        down.stop(hold_port=True)
        judges = [{"name": "a", "model": "m"}, {"name": "b", "url": [down.url]}]
        self.write("judges.json", json.dumps(judges))
        code, err, _, parts = self.export("--judges", self.path("judges.json"))
        self.assertEqual((code, parts), (1, ["req.000.jsonl"]), err)
        self.assertEqual([(r["a_status"], r["b_status"]) for r in self.records("req-out.jsonl")],
                         [("exported", "model_error")] + [("exported", "not_judged")] * 2)
        self.assertIn("\nminijudge [b]: ", err)
        self.assertEqual(err.count("failure rate"), 1)
        self.assertTrue(err.endswith(self.LINE), err)
        self.write("judges.json", json.dumps(judges[:1]))
        self.assertEqual(self.export("--judges", self.path("judges.json"), prefix="one")[0], 0)

    def test_a_resumed_export_counts_the_imported_errors_not_the_exported(self):
        code, err, _, parts = self.export("--judge-model", "m", "-q")
        self.assertEqual(code, 0, err)
        with open(self.path(parts[0])) as f:
            keys = [json.loads(line)["custom_id"] for line in f]
        answered = self.write_jsonl("out.jsonl", [output_line(keys[0], 200, m_completion(
            "Rating: 4"))])
        code, err, statuses, _ = self.export("--judge-model", "m", "--batch-import", answered,
                                             prefix="rest")
        self.assertEqual((code, statuses), (0, ["ok", "exported", "exported"]), err)
        answered = self.write_jsonl("out.jsonl", [output_line(keys[0], 200, m_completion(
            "no idea")), output_line(keys[1], 500, SERVER_ERROR)])
        code, err, statuses, _ = self.export("--judge-model", "m", "--batch-import", answered,
                                             prefix="more")
        # the error reply is exported again; the reply that was no rating failed
        self.assertEqual((code, statuses), (1, ["parse_error", "exported", "exported"]), err)
        self.assertIn("\n  failure rate 33.3% is over --max-error-rate 10.0%: exit 1\n", err)
        code, err, statuses, _ = self.export("--judge-model", "m", "--batch-import", answered,
                                             "--max-error-rate", "0.4", prefix="lenient")
        self.assertEqual(code, 0, err)


    def summary(self, name):
        with open(self.path(name)) as f:
            return json.load(f)

    def report(self, name, *argv):
        """report of -o's ``name``: (its exit status, stderr, its --summary)."""
        code, _, err = run_main(["report", self.path(name), *argv, "--summary",
                                 self.path("report.json")])
        return code, err, self.summary("report.json")

    def test_a_healthy_exports_summary_and_its_report_count_no_failure(self):
        # it exited 0, but its --summary said failed 3, failure_rate 1.0, and report of
        # its -o "failure rate 100.0% is over --max-error-rate 10.0%: exit 1"
        code, err, statuses, _ = self.export("--judge-model", "m", "--group-by", "id",
                                             "--summary", self.path("s.json"))
        self.assertEqual((code, statuses), (0, ["exported"] * 3), err)
        s = self.summary("s.json")
        self.assertEqual((s["failed"], s["failure_rate"]), (0, 0.0))
        self.assertEqual([(row["failed"], row["failure_rate"]) for row in
                          s["groups"]["id"]["shown"]], [(0, 0.0)] * 3)
        code, err, s = self.report("req-out.jsonl")
        self.assertEqual((code, s["failed"], s["failure_rate"]), (0, 0, 0.0), err)
        self.assertNotIn("failure rate", err)

    def test_an_import_and_export_say_one_failure_rate_everywhere(self):
        # the printed line said 33.3% (the exported record left out), --summary 0.6667
        code, err, _, parts = self.export("--judge-model", "m", "-q")
        with open(self.path(parts[0])) as f:
            keys = [json.loads(line)["custom_id"] for line in f]
        answered = self.write_jsonl("out.jsonl", [
            output_line(keys[0], 200, m_completion("Rating: 4")),
            output_line(keys[1], 200, m_completion("no idea"))])
        for limit, expected in (("0.2", 1), ("0.4", 0)):
            with self.subTest(limit=limit):
                prefix = "rest" + limit[-1]
                code, err, statuses, _ = self.export(
                    "--judge-model", "m", "--batch-import", answered, "--max-error-rate", limit,
                    "--group-by", "id", "--summary", self.path(prefix + ".json"), prefix=prefix)
                self.assertEqual((code, statuses), (expected, ["ok", "parse_error", "exported"]),
                                 err)
                s = self.summary(prefix + ".json")
                self.assertEqual((s["failed"], s["failure_rate"]), (1, 0.3333))
                self.assertEqual([row["failed"] for row in s["groups"]["id"]["shown"]],
                                 [0, 1, 0])
                self.assertIn(" 0.75 over the 1 judged ", err)  # not the exported one
                over = "\n  failure rate 33.3% is over --max-error-rate {:.1%}: exit 1\n".format(
                    float(limit))
                self.assertEqual(over in err, bool(expected), err)
                code, err, s = self.report(prefix + "-out.jsonl", "--max-error-rate", limit)
                self.assertEqual((code, s["failed"], s["failure_rate"]), (expected, 1, 0.3333),
                                 err)
                self.assertEqual(over in err, bool(expected), err)

    def test_two_judges_exporting_count_no_failure_one_failing_all_of_its_records(self):
        down = self.start_stub()
        down.stop(hold_port=True)
        judges = [{"name": "a", "model": "m"}, {"name": "b", "model": "n"},
                  {"name": "c", "url": [down.url]}]
        for count, expected in ((2, 0), (3, 1)):
            with self.subTest(judges=count):
                self.write("judges.json", json.dumps(judges[:count]))
                code, err, _, _ = self.export("--judges", self.path("judges.json"), "--summary",
                                              self.path("s.json"), prefix="j%d" % count)
                self.assertEqual(code, expected, err)
                for s in (self.summary("s.json"), self.report("j%d-out.jsonl" % count)[2]):
                    self.assertEqual({name: (j["failed"], j["failure_rate"]) for name, j in
                                      s["judges"].items()},
                                     dict(zip("abc", [(0, 0.0), (0, 0.0), (3, 1.0)][:count])))
                self.assertEqual(self.report("j%d-out.jsonl" % count)[0], expected)


if __name__ == "__main__":
    unittest.main()
