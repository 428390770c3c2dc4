"""Issue 28, batch files: an export never writes over a file the run reads or writes, nor
over an earlier export; each file the run writes is checked against every file it reads
and against the others; two replies to one request that disagree are counted, the first
success used. All through the real command line, on real files, symlinks and hard links.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from batch_engine import failed_line, output_line  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, run_main  # noqa: E402

MODEL = ["--judge-model", "judge-model", "-q"]


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def completion(content):
    return {"object": "chat.completion", "model": "judge-model", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}


class FilesTest(StubTestCase):
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
