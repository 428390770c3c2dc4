"""Batch files and reports: --batch-export, a batch engine, --batch-import, and report.

A run of every mode is exported, answered by tests/batch_engine.py through a StubServer
(OpenAI's output format, lines shuffled), imported, and compared with an online run of the
same stub: the same records, the same summary but for timing and requests. Faults the
engine injects (a 500, an expired request, a missing line, malformed lines) become statuses
and counts; with --judge-url only those are sent. ``report`` over shards equals the single
run's summary and refuses shards of different runs.
"""
import json
import os
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from batch_engine import output_line, run_batch  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, run_main  # noqa: E402

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


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


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
        with open(self.path(name + ".json")) as f:
            return lines(self.path(name + ".jsonl")), json.load(f)

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
        with open(self.path("imported.json")) as f:
            summary = json.load(f)
        return lines(self.path("imported.jsonl")), summary, self.srv.chat_count - sent, err

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
        online, imported = (load(self.path(n + ".json")) for n in ("online", "imported"))
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


class ReportTest(StubTestCase):
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
        with open(self.path(out + ".json")) as f:
            return json.load(f)

    def report(self, *argv):
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        proc = subprocess.run([*PYTHON, "-m", "minijudge", "report"] + list(argv),
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=30)
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
