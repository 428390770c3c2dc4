"""Issue 28's independent campaign, other inputs for each class: `report` refuses every
hostile value it reads (a rating that is no number, token counts no server sends, a list
where text belongs) naming file and line, never a traceback nor a wrong total with exit 0.
Through the real command line against the loopback stub, on real files.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from batch_engine import output_line  # noqa: E402
from stub import PYTHON, SideBySide, StubTestCase, run_main  # noqa: E402

RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class HostileReportTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.content = "Rating: 4"
        self.write_jsonl("data.jsonl", RECORDS)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 self.path("data.jsonl"), "-o", self.path("out.jsonl")])
        self.assertEqual(code, 0, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            self.records = [json.loads(line) for line in f]

    def edited(self, edit):
        """out.jsonl with its first record edited by ``edit``, as text (10**400 has no float)."""
        first = dict(self.records[0])
        edit(first)
        lines = [json.dumps(first)] + [json.dumps(r) for r in self.records[1:]]
        return self.write("edited.jsonl", "".join(line + "\n" for line in lines))

    def assert_refused(self, edit, message):
        path = self.edited(edit)
        code, out, err = run_main(["report", path])
        self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: {}\n".format(
            path, message)))

    def test_a_rating_that_is_no_number_is_refused(self):
        # "4" and true fell out of the ratings, NaN was a rating of its own, 10**400 a traceback
        for value in ("4", True, float("nan"), 10 ** 400):
            with self.subTest(value=value):
                self.assert_refused(lambda r: r.update(judge_value=value),
                                    "judge_value must be a rating on the run's scale, 1 to 5; "
                                    "got {!r}".format(value))

    def test_token_counts_no_server_sends_are_refused(self):
        # -5 prompt tokens or true were summed into the tokens line, exit 0 (what is no int,
        # the run and report both skip)
        for count in (-5, True, 10 ** 400):
            with self.subTest(count=count):
                usage = {"prompt_tokens": count, "completion_tokens": 2, "total_tokens": 102}
                self.assert_refused(lambda r: r.update(judge_usage=usage),
                                    "judge_usage must be an object of token counts (0 or more) "
                                    "or null; got {!r}".format(usage))

    def test_a_list_for_the_status_or_the_mode_names_file_and_line(self):
        # was "minijudge: error: unhashable type: 'list'", no file, no line
        self.assert_refused(lambda r: r.update(judge_status=["ok"]),
                            "judge_status must be a status minijudge writes (README, Statuses); "
                            "got ['ok']")
        self.assert_refused(lambda r: r.update(judge_run=dict(r["judge_run"], mode=["rating"])),
                            "judge_run: mode must be one of rating, binary, math, rubric, "
                            "criterion, comparative, pairwise, systems, trajectory; "
                            "got ['rating']")


def completion(content):
    return {"object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}


class BatchStatusTest(StubTestCase):
    def test_a_status_code_that_is_no_number_is_a_malformed_line(self):
        # "200" was judge_status internal_error, "TypeError: '<=' not supported between ..."
        data = self.write_jsonl("data.jsonl", RECORDS[:1])
        code, out, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                   self.path("req")])
        self.assertEqual(code, 0, err)
        key = json.loads(out)["judge_error"].split("custom_id ")[1][:64]
        for status in ("200", True, None):
            with self.subTest(status=status):
                replies = self.write_jsonl("r.jsonl", [output_line(key, status, completion(
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


class StdoutTest(SideBySide):
    side_by_side = 2  # subprocesses only: its two tests at once, one a core
    def test_records_to_stdout_that_is_a_file_the_run_reads_are_refused(self):
        # `minijudge in.jsonl >> in.jsonl` read 29 of its own records back, judged them, exit 0
        data = self.write_jsonl("in.jsonl", RECORDS)
        with open(data, "rb") as f:
            original = f.read()
        cache = self.path("cache.jsonl")
        self.write("cache.jsonl", "")
        argv = [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                "--judge-model", "m", "-q"]
        for args, stdin, stdout, named in (
                ([data], None, data, "the input file " + data),
                (["-"], data, data, "the input file (stdin)"),
                ([data, "--cache", cache], None, cache, "the --cache file " + cache)):
            with self.subTest(stdout=stdout, stdin=stdin), open(stdout, "ab") as out:
                source = open(stdin, "rb") if stdin else subprocess.DEVNULL
                done = subprocess.run(argv + args, stdin=source, stdout=out,
                                      stderr=subprocess.PIPE, cwd=os.path.dirname(HERE),
                                      timeout=60)
                if stdin:
                    source.close()
            self.assertEqual((done.returncode, done.stderr.decode()), (
                2, "minijudge: error: stdout is {}; write elsewhere\n".format(named)))
            with open(data, "rb") as f:
                self.assertEqual(f.read(), original)

    def test_a_summary_into_the_records_pipe_is_refused(self):
        # records | --summary /dev/stdout: the summary's JSON mixed into the records, exit 0
        data = self.write_jsonl("in.jsonl", RECORDS)
        argv = [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                "--judge-model", "m", "-q", data]
        for more, message in (
                (["--summary", "/dev/stdout"], "stdout is the --summary file /dev/stdout"),
                (["-o", "/dev/stdout", "--html", "/dev/stdout"],
                 "--html /dev/stdout is the -o file")):
            with self.subTest(more=more):
                done = subprocess.run(argv + more, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      cwd=os.path.dirname(HERE), timeout=60)
                self.assertEqual((done.returncode, done.stdout, done.stderr.decode()), (
                    2, b"", "minijudge: error: {}; write elsewhere\n".format(message)))
