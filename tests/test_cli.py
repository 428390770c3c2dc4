"""minijudge's command line against a loopback StubServer.

Most tests call ``minijudge.main([...])`` in-process with stdout and stderr captured;
the few that need a real process (kill -9, SIGINT, stdin, a pipe closed by ``head``)
run ``python -m minijudge`` from the repository root. Messages are compared word for
word; every failure path is bounded with ``--max-retries 0`` or a short ``--timeout``.
"""
import contextlib
import gc
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest
import warnings
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_cli` finds stub too
import minijudge  # noqa: E402
from stub import PYTHON, StubTestCase, chat, error  # noqa: E402

KEY = "sk-test-SECRET123"
JUDGE_FIELDS = ("judge_score", "judge_status", "judge_error", "judge_raw", "judge_value",
                "judge_usage", "judge_model", "judge_finish_reason")
_RESPONSE_RE = re.compile(r"\[The Start of the Response\]\n(.*?)\n\[The End of the Response\]",
                          re.S)


def response_of(request):
    """The judged response inside a built-in template's prompt, or None."""
    match = _RESPONSE_RE.search(request.prompt or "")
    return match.group(1) if match else None


def by_response(replies, *, delays=None, model=None):
    """A responder answering replies[response text]; delays[response] seconds first."""
    def responder(request):
        response = response_of(request)
        if delays and response in delays:
            time.sleep(delays[response])
        if response in replies:
            return chat(replies[response], model=model)
        return None
    return responder


def records(n, **extra):
    """n records r0..r(n-1) whose judge reply is the rating (i % 5) + 1."""
    return [dict({"id": i, "question": "q%d" % i, "response": "r%d" % i}, **extra)
            for i in range(n)]


def ratings(n):
    return {"r%d" % i: str(i % 5 + 1) for i in range(n)}


def parse_lines(text):
    return [json.loads(line) for line in text.splitlines()]


class CLITest(StubTestCase):
    """A fresh stub and temp dir per test, and no judge settings from the environment."""

    def read(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            return f.read()

    def main(self, *argv):
        """(exit code, stdout, stderr) of main(argv) run in this process."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            # the leaks test_main_leaks_no_file_or_socket reports must not garble stderr
            warnings.simplefilter("ignore", ResourceWarning)
            code = minijudge.main([str(a) for a in argv])
            gc.collect()
            if not gc.get_freeze_count():
                # a full collection scans every object the suite holds (7 ms, 1.1 s over
                # the suite's 126 calls): keep what lives now out of it, so that each
                # collection reads only what main() made since
                gc.freeze()
        return code, out.getvalue(), err.getvalue()

    def judge_main(self, *argv):
        """main() against the stub, failing fast."""
        return self.main("--judge-url", self.srv.url, "--max-retries", "0", "--timeout",
                         "5", *argv)

    def popen(self, *argv, **options):
        """``python -m minijudge`` from the repository root, with this test's env."""
        options.setdefault("stdout", subprocess.PIPE)
        options.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                                cwd=REPO, env=dict(os.environ), **options)

    def wait_for_chats(self, proc, count, limit=10.0):
        deadline = time.monotonic() + limit
        while self.srv.chat_count < count:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                self.fail("the run ended or stalled before {} chat requests: {}".format(
                    count, proc.communicate()[1].decode(errors="replace")))
            time.sleep(0.005)


class OutputTest(CLITest):
    def test_records_in_input_order_with_every_judge_field(self):
        n = 12
        items = records(n, meta={"nested": [1, "two"]}, text="naïve ✓")
        done = []
        # the first records answer last, so completions come back out of order
        delays = {"r%d" % i: (n - i) * 0.01 for i in range(n)}
        responder = by_response(ratings(n), delays=delays)

        def recording(request):
            reply = responder(request)
            done.append(response_of(request))
            return reply
        self.srv.responder = recording
        code, out, err = self.judge_main("--concurrency", "8",
                                         self.write_jsonl("in.jsonl", items))
        self.assertEqual(code, 0, err)
        self.assertNotEqual(done, sorted(done, key=lambda r: int(r[1:])))
        self.assertEqual(len(out.splitlines()), n)
        for item, record in zip(items, parse_lines(out)):
            with self.subTest(id=item["id"]):
                self.assertEqual({k: record[k] for k in item}, item)
                for name in JUDGE_FIELDS:
                    self.assertIn(name, record)
                rating = item["id"] % 5 + 1
                self.assertEqual(record["judge_status"], "ok")
                self.assertIsNone(record["judge_error"])
                self.assertEqual(record["judge_raw"], str(rating))
                self.assertEqual(record["judge_value"], rating)
                self.assertEqual(record["judge_score"], (rating - 1) / 4)
                self.assertEqual(record["judge_model"], "judge-model")
                self.assertEqual(record["judge_usage"]["completion_tokens"], 1)
                self.assertNotIn("judge_latency", record)  # it varies: the summary has it
        self.assertEqual(self.srv.chat_count, n)

    def test_bad_input_is_never_dropped(self):
        lines = ['{"question": "q", "response": "r"}', "not json", "[1, 2]", "", "   ",
                 '{"question": "q2"}', '{"question": "q3", "response": ""}']
        code, out, err = self.judge_main(
            "--max-error-rate", "1", self.write("in.jsonl", "\n".join(lines) + "\n"))
        self.assertEqual(code, 0, err)
        got = [(r["judge_status"], r["judge_error"]) for r in parse_lines(out)]
        self.assertEqual(got, [
            ("ok", None),
            ("bad_record", "line 2: not JSON (Expecting value: line 1 column 1 (char 0))"),
            ("bad_record", "line 3: a JSON list, not an object"),
            ("bad_record", "line 6: no 'response' field (choose one with --response-field; "
                           "the record has question)"),
            ("empty_response", "the response is empty: scored 0.0 without calling the "
                               "judge"),
        ])
        out = parse_lines(out)
        self.assertEqual(out[3]["question"], "q2")
        self.assertEqual([r["judge_score"] for r in out[1:]], [0.0] * 4)
        self.assertEqual(self.srv.chat_count, 1)  # only the good record was sent

    def test_strict_sends_nothing_past_the_bad_line_and_still_summarises(self):
        lines = [json.dumps(r) for r in records(40)]
        lines[2] = '{"question": "q2", "response": {"text": "r2"}}'
        summary = self.path("summary.json")
        code, out, err = self.judge_main("--strict", "--summary", summary,
                                         self.write("in.jsonl", "\n".join(lines) + "\n"))
        self.assertEqual(code, 1)
        self.assertIn("minijudge: error: line 3: field 'response' is a dict, expected text "
                      "(--strict)\n", err)
        self.assertEqual([r["id"] for r in parse_lines(out)], [0, 1])
        self.assertEqual(self.srv.chat_count, 2)
        self.assertEqual(json.loads(self.read("summary.json"))["records"], 2)

    def test_bad_line_echoes_the_line_without_its_line_ending(self):
        code, out, err = self.judge_main("--max-error-rate", "1",
                                         self.write("in.jsonl", "not json\r\n[1]\n"))
        self.assertEqual([r["judge_input"] for r in parse_lines(out)], ["not json", "[1]"])

    def test_output_file_matches_stdout(self):
        source = self.write_jsonl("in.jsonl", records(3))
        self.srv.responder = by_response(ratings(3))
        code, out, err = self.judge_main("-q", "-o", self.path("out.jsonl"), source)
        self.assertEqual((code, out, err), (0, "", ""))
        code, stdout, _ = self.judge_main("-q", source)
        self.assertEqual(self.read("out.jsonl"), stdout)


class FieldTest(CLITest):
    def test_field_flags_reach_the_prompt(self):
        source = self.write_jsonl("in.jsonl", [
            {"q": "What is 2+2?", "gold": "four", "pred": "4, obviously", "question": "X"}])
        code, out, err = self.judge_main("--question-field", "q", "--reference-field",
                                         "gold", "--response-field", "pred", source)
        self.assertEqual(code, 0, err)
        prompt = self.srv.requests[-1].prompt
        self.assertIn("[Question]\nWhat is 2+2?\n", prompt)
        self.assertIn("[Reference Answer]\nfour\n", prompt)
        self.assertIn("[The Start of the Response]\n4, obviously\n", prompt)
        self.assertNotIn("X", prompt)

    def test_template_file_reads_doc_fields(self):
        template = self.write("t.txt", "Category: {doc[category]}\nQ: {question}\n"
                                       "A: {response}\nRate {{1-5}}.")
        source = self.write_jsonl("in.jsonl", [
            {"category": "math", "question": "q", "response": "r"}])
        code, out, err = self.judge_main("--template", template, source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.requests[-1].prompt, "Category: math\nQ: q\nA: r\n"
                                                      "Rate {1-5}.")
        self.assertEqual(parse_lines(out)[0]["judge_score"], 0.75)

    def test_template_the_first_record_cannot_fill_stops_the_run_up_front(self):
        template = self.write("t.txt", "{question} {nosuch}")
        source = self.write("in.jsonl", 'not json\n{"question": "q", "response": "r"}\n')
        code, out, err = self.judge_main("--template", template, source)
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: line 2 (the first record): template needs "
                         "field 'nosuch' (the template reads the record's field of that name, "
                         "or --var nosuch=VALUE's; the record has question, response)\n")
        self.assertEqual(len(self.srv.requests), 0)

    def test_template_a_later_record_cannot_fill_is_a_per_record_error(self):
        template = self.write("t.txt", "{question} {doc[extra]}")
        source = self.write_jsonl("in.jsonl", [
            {"question": "q", "response": "r", "extra": "x"}, {"question": "q2", "response": "r"}])
        code, out, err = self.judge_main("--max-error-rate", "1", "--template", template, source)
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in parse_lines(out)], [
            ("ok", None), ("template_error", "line 2: template field {doc[extra]}: the record "
                                             "has no 'extra'")])

    def test_unknown_template_name_is_a_usage_error(self):
        code, out, err = self.judge_main("--template", "nosuch",
                                         self.write_jsonl("in.jsonl", records(1)))
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --template 'nosuch' is neither a template "
                         "name (rating, rating_ref, binary, math, comparative, pairwise, "
                         "rubric, criterion, criteria, trajectory) nor a readable file: No such "
                         "file or "
                         "directory\n")
        self.assertEqual(self.srv.requests, [])


class SummaryTest(CLITest):
    def setUp(self):
        super().setUp()
        items = [dict(r, answer="a") for r in records(4)]
        self.source = self.write_jsonl("in.jsonl", items)
        self.srv.responder = by_response({"r0": "5", "r1": "4", "r2": "10", "r3": "3"},
                                         model="served-name")

    def summary(self, *argv):
        code, out, err = self.judge_main("--template", "rating_ref", "--summary",
                                         self.path("s.json"), *argv, self.source)
        with open(self.path("s.json"), encoding="utf-8") as f:
            return code, out, err, json.load(f)

    def test_summary_values_on_a_known_dataset(self):
        code, out, err, s = self.summary("--max-error-rate", "0.5", "--bootstrap-seed", "7")
        self.assertEqual(code, 0, err)
        self.assertEqual(s["records"], 4)
        self.assertEqual(s["statuses"], {"ok": 3, "out_of_range": 1})
        self.assertEqual(s["failed"], 1)
        self.assertEqual(s["failure_rate"], 0.25)
        self.assertEqual(s["mean_score"], round((1 + 0.75 + 0 + 0.5) / 4, 4))
        self.assertEqual(s["mean_score_judged"], round((1 + 0.75 + 0.5) / 3, 4))
        self.assertEqual(s["ratings"], {"3": 1, "4": 1, "5": 1})
        self.assertEqual(s["requests"], 4)
        prompt_tokens = sum(len(r.prompt.split()) for r in self.srv.requests
                            if r.method == "POST")
        self.assertEqual(s["tokens"], {"prompt_tokens": prompt_tokens,
                                       "completion_tokens": 4,
                                       "total_tokens": prompt_tokens + 4})
        self.assertGreater(s["wall_seconds"], 0)
        self.assertGreater(s["requests_per_second"], 0)
        self.assertEqual(s["judge_model"], "served-name")
        self.assertEqual(s["template"], "rating_ref")
        self.assertEqual(s["parameters"]["temperature"], 0)
        self.assertEqual(s["parameters"]["max_tokens"], 16)
        self.assertEqual(s["parameters"]["model"], "judge-model")
        self.assertEqual(s["errors"]["out_of_range"],
                         "the judge answered 10 but the scale is 1-5: '10'")
        low, high = s["ci95"]
        self.assertLessEqual(low, s["mean_score"])
        self.assertLessEqual(s["mean_score"], high)
        self.assertIn("seed 7", s["ci_method"])
        self.assertIn("  statuses: ok 3, out_of_range 1\n", err)

    def test_ci95_is_deterministic_for_a_seed(self):
        intervals = [self.summary("--bootstrap-seed", seed)[3]["ci95"] for seed in ("3", "3")]
        self.assertEqual(intervals[0], intervals[1])


class ExitCodeTest(CLITest):
    def test_exit_1_over_max_error_rate_with_records_written(self):
        self.srv.responder = by_response({"r0": "5", "r1": "nonsense"})
        source = self.write_jsonl("in.jsonl", records(2))
        code, out, err = self.judge_main(source)
        self.assertEqual(code, 1)
        self.assertEqual([r["judge_status"] for r in parse_lines(out)], ["ok", "parse_error"])
        self.assertIn("  failure rate 50.0% is over --max-error-rate 10.0%: exit 1\n", err)
        code, out, err = self.judge_main("--max-error-rate", "0.5", source)
        self.assertEqual(code, 0, err)

    def test_usage_errors_exit_2(self):
        source = self.write_jsonl("in.jsonl", records(1))
        cases = [
            ((), "minijudge: error: the following arguments are required: input\n"),
            (("--shard", "2/2", source),
             "minijudge: error: --shard must be K/N with 0 <= K < N; got '2/2'\n"),
            (("--shard", "x", source),
             "minijudge: error: --shard must be K/N with 0 <= K < N; got 'x'\n"),
            (("--extra-body", "{nope", source),
             "minijudge: error: --extra-body must be a JSON object; got '{nope'\n"),
            (("--extra-body", "[1]", source),
             "minijudge: error: --extra-body must be a JSON object; got '[1]'\n"),
            (("--concurrency", "0", source),
             "minijudge: error: --concurrency must be from 1 to 1024 (a thread each); got 0\n"),
            (("--scale", "5,1", source),
             "minijudge: error: --scale must be LO,HI with LO < HI; got '5,1'\n"),
            (("--header", "nocolon", source),
             "minijudge: error: --header must be 'NAME: VALUE'; got 'nocolon'\n"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                code, out, err = self.judge_main(*argv)
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.endswith(message), err)
        self.assertEqual(self.srv.requests, [])

    def test_no_url_anywhere_is_a_usage_error(self):
        code, out, err = self.main(self.write_jsonl("in.jsonl", records(1)))
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: no judge URL: pass --judge-url or set "
                              "LLM_JUDGE_API_BASE\n")

    def test_missing_input_file_is_a_usage_error(self):
        code, out, err = self.judge_main(self.path("nosuch.jsonl"))
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: [Errno 2] No such file or directory: "
                              "{!r}\n".format(self.path("nosuch.jsonl")))

    def test_unwritable_output_is_an_error_message_not_a_traceback(self):
        out_path = self.path("no/such/dir/out.jsonl")
        code, out, err = self.judge_main("-o", out_path,
                                         self.write_jsonl("in.jsonl", records(1)))
        self.assertEqual(code, 2)
        self.assertTrue(err.startswith("minijudge: error: "), err)
        self.assertIn(out_path, err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_unwritable_summary_is_an_error_message_not_a_traceback(self):
        summary = self.path("no/such/dir/s.json")
        code, out, err = self.judge_main("--summary", summary,
                                         self.write_jsonl("in.jsonl", records(1)))
        self.assertIn(code, (1, 2))
        self.assertTrue(err.startswith("minijudge: error: "), err)
        self.assertIn(summary, err)

    def test_main_leaks_no_file_or_socket(self):
        source = self.write_jsonl("in.jsonl", records(1))
        for argv in (["--judge-url", self.srv.url, "--check", source], [source]):
            with self.subTest(argv=argv[:-1]):
                with warnings.catch_warnings():  # what earlier tests left behind
                    warnings.simplefilter("ignore", ResourceWarning)
                    gc.collect()
                with warnings.catch_warnings(record=True) as caught, \
                        contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    warnings.simplefilter("always", ResourceWarning)
                    minijudge.main(argv)
                    gc.collect()
                self.assertEqual([str(w.message).split(" fd=")[0] for w in caught
                                  if issubclass(w.category, ResourceWarning)], [])


class ReportUsageTest(CLITest):
    """report's own help and usage: issue 44 found `report --help` printing a run's."""

    REPORT_USAGE = "usage: minijudge report [options] OUT.jsonl [MORE.jsonl ...]\n"

    def minijudge(self, *argv):
        """main(argv) in this process, as ``python -m minijudge`` runs it with stdout a pipe
        (argparse wraps --help to 80 columns): report's help and refusals are main()'s
        words, not the process's."""
        with mock.patch.dict(os.environ, COLUMNS="80"):
            return self.main(*argv)

    def test_report_help_lists_the_flags_report_takes(self):
        code, out, err = self.minijudge("report", "--help")
        self.assertEqual((code, err), (0, ""))
        self.assertTrue(out.startswith(self.REPORT_USAGE), out[:300])
        listed = re.findall(r"(?m)^  (-[\w-]+)", out)
        self.assertEqual(listed, [
            "-h", "--pass-threshold", "--question-field", "--response-field", "--response-a-field",
            "--response-b-field", "--responses-field", "--price", "--max-error-rate",
            "--summary", "--html", "--html-rows", "-q", "--group-by", "--human-field",
            "--bootstrap-seed", "--bootstrap-samples", "--confidence", "--model-field",
            "--baseline", "--strong-weight", "--mixed", "--layout", "--questions", "--answers"])
        self.assertIn("summary of scored records", out)

    def test_a_flag_report_does_not_take_is_refused_with_reports_usage(self):
        scored = self.path("out.jsonl")
        code, _, err = self.main("--judge-url", self.srv.url, "-q", "-o", scored,
                                 self.write_jsonl("in.jsonl", records(2)))
        self.assertEqual(code, 0, err)
        for argv, message in (
                (["report", scored, "--dry-run"], "unrecognized arguments: --dry-run"),
                (["report"], "the following arguments are required: input"),
                (["report", scored, "--html-rows", "x"],
                 "argument --html-rows: invalid int value: 'x'")):
            with self.subTest(argv=argv):
                code, out, err = self.minijudge(*argv)
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.startswith(self.REPORT_USAGE), err)
                self.assertTrue(err.endswith("minijudge: error: " + message + "\n"), err)
                self.assertNotIn("--judge-url", err)

    def test_reports_own_flag_on_a_run_is_refused_not_ignored(self):
        code, out, err = self.minijudge("--judge-url", self.srv.url, "--mixed",
                                        self.write_jsonl("in.jsonl", records(1)))
        self.assertEqual((code, out), (2, ""))
        self.assertTrue(err.endswith("minijudge: error: --mixed is report's: python -m "
                                     "minijudge report OUT.jsonl ... --mixed\n"), err)
        self.assertEqual(self.srv.chat_count, 0)


class PreflightTest(CLITest):
    """A dead, locked or wrong server stops the run at once, naming the URL."""

    def preflight_fails(self, *argv):
        started = time.monotonic()
        code, out, err = self.main(*argv, "--timeout", "5",
                                   self.write_jsonl("in.jsonl", records(5)))
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual((code, out), (1, ""))
        return err

    def test_connection_refused(self):
        url = self.down_url()
        err = self.preflight_fails("--judge-url", url)
        self.assertEqual(err, "minijudge: error: preflight failed: connection refused by "
                              "GET {}/v1/models: is the server running?\n".format(url))

    def test_wrong_key_401(self):
        self.srv.require_key = KEY
        os.environ["LLM_JUDGE_API_KEY"] = "sk-wrong-KEY"
        err = self.preflight_fails("--judge-url", self.srv.url)
        self.assertEqual(err, "minijudge: error: preflight failed: http 401 from GET "
                              "{}/v1/models: Incorrect API key provided.\n".format(
                                  self.srv.url))
        self.assertEqual(self.srv.chat_count, 0)

    def test_unknown_model_lists_the_served_models(self):
        self.srv.strict_model = True
        self.srv.models = ("judge-model", "other-model")
        err = self.preflight_fails("--judge-url", self.srv.url + "/v1", "--judge-model",
                                   "wrong")
        self.assertEqual(err, "minijudge: error: preflight failed: http 404 from POST "
                              "{}/v1/chat/completions: The model `wrong` does not exist.; "
                              "the server lists: judge-model, other-model\n".format(
                                  self.srv.url))
        self.assertEqual(self.srv.chat_count, 1)

    def test_wrong_path_with_a_model(self):
        self.srv.models = None
        self.srv.responder = lambda request: error(404, "Not Found", style="detail")
        err = self.preflight_fails("--judge-url", self.srv.url + "/api", "--judge-model",
                                   "m")
        self.assertEqual(err, "minijudge: error: preflight failed: http 404 from POST "
                              "{}/api/v1/chat/completions: Not Found (no chat endpoint "
                              "there: give the judge URL as the server's base, "
                              "http://HOST:PORT or .../v1, or the full "
                              ".../v1/chat/completions)\n".format(self.srv.url))
        self.assertEqual(self.srv.chat_count, 1)

    def test_wrong_path_without_a_model(self):
        self.srv.models = None
        err = self.preflight_fails("--judge-url", self.srv.url + "/api")
        self.assertEqual(err, "minijudge: error: preflight failed: no model given and the "
                              "server's model list failed: http 404 from GET "
                              "{}/api/v1/models: File Not Found\n".format(self.srv.url))
        self.assertEqual(self.srv.chat_count, 0)


class CheckAndDryRunTest(CLITest):
    def test_check_prints_url_models_model_and_reply(self):
        self.srv.push(chat("3", model="served-name"))
        code, out, err = self.judge_main("--check", self.write_jsonl("in.jsonl", []))
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(out.splitlines()[:3], [
            "url: {}/v1/chat/completions".format(self.srv.url),
            "models: judge-model",
            "model: judge-model (the server reported: served-name)"])
        self.assertRegex(out.splitlines()[3],
                         r"^reply: '3' \(finish_reason stop, usage \{.*\}, \d+\.\d\d s, "
                         r"1 tries\)$")
        self.assertEqual(len(out.splitlines()), 4)
        self.assertEqual(self.srv.chat_count, 1)

    def test_check_needs_no_input_file(self):
        code, out, err = self.judge_main("--check")
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("url: "))

    def test_check_with_dry_run_is_refused_with_or_without_input(self):
        # one asks the server, the other sends nothing: it was a TypeError without input
        for more in ([], [self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])]):
            code, out, err = self.judge_main("--check", "--dry-run", *more)
            self.assertEqual((code, out), (2, ""))
            self.assertIn("minijudge: error: --check asks the server and --dry-run sends "
                          "nothing: pick one\n", err)
            self.assertEqual(self.srv.chat_count, 0)

    def test_dry_run_prints_every_prompt_and_sends_nothing(self):
        os.environ["LLM_JUDGE_API_KEY"] = KEY
        source = self.write("in.jsonl", '{"question": "q1", "response": "r1"}\nnot json\n'
                            '{"question": "q2", "response": "r2", "answer": "a2"}\n')
        code, out, err = self.judge_main("--dry-run", "--system", "be fair", source)
        self.assertEqual(code, 0)
        self.assertRegex(err, r"\Aminijudge: --dry-run: 2 requests, about \d+ prompt tokens ")
        self.assertEqual(out, "".join([
            "--- line 1 ---\n[system]\nbe fair\n[user]\n",
            minijudge.render("rating", question="q1", response="r1"), "\n",
            "--- line 2: not JSON (Expecting value: line 1 column 1 (char 0))\n",
            "--- line 3 ---\n[system]\nbe fair\n[user]\n",
            minijudge.render("rating_ref", question="q2", reference="a2", response="r2"),
            "\n"]))
        self.assertEqual(self.srv.requests, [])
        self.assertNotIn(KEY, out + err)


class EnvironmentTest(CLITest):
    def run_env(self, *argv, **env):
        os.environ.update(env)
        return self.main("-q", "--max-retries", "0", *argv,
                         self.write_jsonl("in.jsonl", records(2)))

    def test_url_from_llm_judge_api_base(self):
        code, out, err = self.run_env(LLM_JUDGE_API_BASE=self.srv.url)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 2)

    def test_url_from_openai_base_url(self):
        code, out, err = self.run_env(OPENAI_BASE_URL=self.srv.url + "/v1")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 2)

    def test_llm_judge_api_base_wins_over_openai_base_url(self):
        code, out, err = self.run_env(LLM_JUDGE_API_BASE=self.srv.url,
                                      OPENAI_BASE_URL=self.down_url())
        self.assertEqual(code, 0, err)

    def test_model_from_llm_judge_model(self):
        self.srv.models = ("a", "judge-model")
        self.srv.strict_model = True
        code, out, err = self.run_env("--judge-url", self.srv.url,
                                      LLM_JUDGE_MODEL="judge-model")
        self.assertEqual(code, 0, err)
        self.assertEqual({r.json["model"] for r in self.srv.requests if r.method == "POST"},
                         {"judge-model"})

    def test_flags_win_over_environment(self):
        self.srv.models = ("a", "judge-model")
        self.srv.strict_model = True
        dead = self.down_url()
        code, out, err = self.run_env("--judge-url", self.srv.url, "--judge-model",
                                      "judge-model", LLM_JUDGE_API_BASE=dead,
                                      OPENAI_BASE_URL=dead, LLM_JUDGE_MODEL="a")
        self.assertEqual(code, 0, err)
        self.assertEqual({r.json["model"] for r in self.srv.requests if r.method == "POST"},
                         {"judge-model"})


class ShardTest(CLITest):
    def test_two_shards_cover_every_record_once(self):
        source = self.write_jsonl("in.jsonl", records(7))
        ids = []
        for shard in ("0/2", "1/2"):
            code, out, err = self.judge_main("-q", "--shard", shard, source)
            self.assertEqual(code, 0, err)
            ids.append([r["id"] for r in parse_lines(out)])
        self.assertEqual(ids, [[0, 2, 4, 6], [1, 3, 5]])
        self.assertEqual(self.srv.chat_count, 7)


class CacheTest(CLITest):
    def setUp(self):
        super().setUp()
        self.srv.models = ("judge-model", "other")  # a listed model: no preflight chat
        self.srv.responder = by_response(ratings(3))
        self.source = self.write_jsonl("in.jsonl", records(3))
        self.cache = self.path("cache.jsonl")

    def run_cached(self, *argv, out="out.jsonl", push=()):
        self.srv.clear()
        self.srv.push(*push)
        code, _, err = self.judge_main("-q", "--judge-model", "judge-model", "--cache",
                                       self.cache, "-o", self.path(out), *argv, self.source)
        return code, err

    def test_rerun_sends_nothing_and_writes_identical_bytes(self):
        self.assertEqual(self.run_cached(out="1.jsonl"), (0, ""))
        self.assertEqual(self.srv.chat_count, 3)
        self.assertEqual(self.run_cached("--summary", self.path("s.json"), out="2.jsonl"),
                         (0, ""))
        self.assertEqual(self.srv.chat_count, 0)
        self.assertEqual(self.read("1.jsonl"), self.read("2.jsonl"))
        summary = json.loads(self.read("s.json"))
        self.assertEqual((summary["cached"], summary["requests"]), (3, 0))

    def test_other_model_template_or_max_tokens_is_another_key(self):
        template = self.write("t.txt", "Rate {response} from 1 to 5.")
        self.run_cached()
        variants = [("--judge-model", "other"), ("--template", template),
                    ("--max-tokens", "32")]
        for argv in variants:
            with self.subTest(argv=argv):
                self.run_cached(*argv)
                self.assertEqual(self.srv.chat_count, 3)
                self.run_cached(*argv)
                self.assertEqual(self.srv.chat_count, 0)

    def test_failed_judgement_is_not_cached_and_is_retried(self):
        code, err = self.run_cached("--concurrency", "1", "--max-error-rate", "1", push=[
            error(500, "The server had an error while processing your request.")])
        self.assertEqual(code, 0, err)
        first = parse_lines(self.read("out.jsonl"))
        self.assertEqual([r["judge_status"] for r in first], ["http_error", "ok", "ok"])
        with open(self.cache, encoding="utf-8") as f:
            self.assertEqual(len(f.readlines()), 2)
        self.run_cached("--concurrency", "1")
        self.assertEqual([response_of(r) for r in self.srv.requests if r.method == "POST"],
                         ["r0"])
        self.assertEqual([r["judge_status"] for r in parse_lines(self.read("out.jsonl"))],
                         ["ok", "ok", "ok"])

    def test_api_key_never_in_the_cache(self):
        self.srv.require_key = KEY
        os.environ["LLM_JUDGE_API_KEY"] = KEY
        self.assertEqual(self.run_cached(), (0, ""))
        self.assertEqual(self.srv.requests[-1].headers["authorization"], "Bearer " + KEY)
        with open(self.cache, "rb") as f:
            cached = f.read()
        self.assertEqual(len(cached.splitlines()), 3)
        self.assertNotIn(KEY.encode(), cached)
        self.assertNotIn(KEY, self.read("out.jsonl"))


class ProcessTest(CLITest):
    """What only a real process shows: kill -9, Ctrl-C, stdin, a closed pipe."""

    def test_resume_after_kill_9_equals_an_uninterrupted_run(self):
        n = 60
        source = self.write_jsonl("in.jsonl", records(n))
        self.srv.responder = by_response(ratings(n))
        self.srv.delay = 0.02
        cache, out = self.path("cache.jsonl"), self.path("out.jsonl")
        argv = ("--judge-url", self.srv.url, "--judge-model", "judge-model", "-q",
                "--concurrency", "4", "--cache", cache, "-o", out, source)
        proc = self.popen(*argv)
        self.addCleanup(proc.wait)
        self.wait_for_chats(proc, 20)
        proc.kill()
        proc.communicate()
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        with open(cache, "rb") as f:
            complete = [line for line in f.read().split(b"\n")[:-1] if line.strip()]
        cached = len({json.loads(line)["key"] for line in complete})
        self.assertGreater(cached, 0)
        self.assertLess(cached, n)

        self.srv.clear()
        self.srv.delay = 0
        code, _, err = self.main(*argv)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, n - cached)
        with open(out, encoding="utf-8") as f:
            resumed = f.read()

        # a replay from the completed cache writes the same bytes: latency included
        self.srv.clear()
        replay = self.path("replay.jsonl")
        code, _, err = self.main(*argv[:-3], "-o", replay, source)
        self.assertEqual((code, self.srv.chat_count), (0, 0), err)
        with open(replay, encoding="utf-8") as f:
            self.assertEqual(f.read(), resumed)

        # and a fresh uninterrupted run matches in everything but the measured latency
        fresh = self.path("fresh.jsonl")
        code, _, err = self.main("--judge-url", self.srv.url, "--judge-model", "judge-model",
                                 "-q", "--concurrency", "4", "--cache",
                                 self.path("fresh-cache.jsonl"), "-o", fresh, source)
        self.assertEqual(code, 0, err)
        with open(fresh, encoding="utf-8") as f:
            fresh_records = parse_lines(f.read())
        resumed_records = parse_lines(resumed)
        self.assertEqual(resumed_records, fresh_records)
        self.assertEqual([r["id"] for r in resumed_records], list(range(n)))

    def test_ctrl_c_exits_130_with_a_prefix_of_complete_records(self):
        n = 100
        source = self.write_jsonl("in.jsonl", records(n))
        self.srv.responder = by_response(ratings(n))
        self.srv.delay = 0.02
        out = self.path("out.jsonl")
        # a shell starts background jobs with SIGINT ignored, and Python keeps an ignored
        # SIGINT: let the child start with the default disposition whatever ours is
        ours = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = self.popen("--judge-url", self.srv.url, "--concurrency", "2", "-o", out,
                              source)
        finally:
            signal.signal(signal.SIGINT, ours)
        self.addCleanup(proc.wait)
        self.wait_for_chats(proc, 6)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        err = err.decode()
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("interrupted", err)
        self.assertNotIn("Traceback", err)
        text = self.read("out.jsonl")
        self.assertTrue(text == "" or text.endswith("\n"))
        written = parse_lines(text)
        self.assertLess(len(written), n)
        self.assertEqual([r["id"] for r in written], list(range(len(written))))
        for r in written:
            self.assertEqual((r["judge_status"], r["judge_raw"]),
                             ("ok", str(r["id"] % 5 + 1)))

    def test_ctrl_c_counts_the_records_of_a_file_whose_first_line_is_a_byte_order_mark(self):
        # issue 44: the BOM line, blank once the BOM is off as the records are read, was
        # counted as a record in the stop note's "N of M"
        n = 40
        with open(self.path("in.jsonl"), "wb") as f:
            f.write(b"\xef\xbb\xbf\n" + "".join(json.dumps(r) + "\n"
                                               for r in records(n)).encode())
        self.srv.delay = 0.05
        ours = signal.signal(signal.SIGINT, signal.default_int_handler)  # as above
        try:
            proc = self.popen("--judge-url", self.srv.url, "--concurrency", "1", "-o",
                              self.path("out.jsonl"), self.path("in.jsonl"))
        finally:
            signal.signal(signal.SIGINT, ours)
        self.addCleanup(proc.wait)
        self.wait_for_chats(proc, 3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        err = err.decode()
        self.assertEqual(proc.returncode, 130, err)
        written = len(parse_lines(self.read("out.jsonl")))
        self.assertIn("  interrupted: {} of {} records written to ".format(written, n), err)

    def test_stdin_dash(self):
        self.srv.responder = by_response(ratings(3))
        proc = self.popen("--judge-url", self.srv.url, "-q", "-", stdin=subprocess.PIPE)
        data = "".join(json.dumps(r) + "\n" for r in records(3)).encode()
        out, err = proc.communicate(data, timeout=10)
        self.assertEqual((proc.returncode, err), (0, b""))
        self.assertEqual([(r["id"], r["judge_value"]) for r in parse_lines(out.decode())],
                         [(0, 1), (1, 2), (2, 3)])

    def test_pipe_closed_after_the_first_line_is_quiet(self):
        # ~600 KB of records: far more than a pipe holds, so the writer hits the close
        source = self.write_jsonl("in.jsonl", records(300, pad="x" * 2000))
        proc = self.popen("--judge-url", self.srv.url, "-q", source)
        self.addCleanup(proc.stderr.close)
        first = proc.stdout.readline()
        proc.stdout.close()
        try:
            proc.wait(timeout=10)  # with -q, stderr is far too small to fill its pipe
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        err = proc.stderr.read().decode()
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(json.loads(first)["id"], 0)
        self.assertNotIn("Traceback", err)
        self.assertNotIn("Exception ignored", err)
        self.assertEqual(err, "")
        self.assertLess(self.srv.chat_count, 300)


class StopEarlyTest(CLITest):
    def test_401_on_every_chat_stops_the_run(self):
        self.srv.responder = lambda request: error(401, "Incorrect API key provided.",
                                                   code="invalid_api_key")
        started = time.monotonic()
        code, out, err = self.judge_main("--concurrency", "4",
                                         self.write_jsonl("in.jsonl", records(50)))
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual(code, 1)
        written = parse_lines(out)
        self.assertEqual([r["id"] for r in written], list(range(50)))
        reason = "http 401 from POST {}/v1/chat/completions: Incorrect API key " \
                 "provided.".format(self.srv.url)
        statuses = [r["judge_status"] for r in written]
        self.assertLessEqual(self.srv.chat_count, 4)
        self.assertEqual(statuses.count("http_error"), self.srv.chat_count)
        self.assertEqual(statuses.count("not_judged"), 50 - self.srv.chat_count)
        for r in written:
            self.assertEqual(r["judge_error"], reason if r["judge_status"] == "http_error"
                             else "not judged: the run stopped: " + reason)


if __name__ == "__main__":
    unittest.main()
