"""Issue 31, item 1: report's lean path (_Report.add_lean) for the commonest records says
exactly what the general path says. A report of a regular file takes the lean path; the same
bytes read from a FIFO (a record seen twice is found as it is read: each record's place is
kept) are read by the general path alone, so each file is reported both ways and every output
compared: the printed summary, stderr, the exit code, --summary and --html.
"""
import json
import os
import sys
import threading
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402


def replies(request):
    """Ratings and failures by the question: a judged record, a parse error, a refusal."""
    prompt = json.dumps(request.json)
    if "QGARBLED" in prompt:
        return "no rating here"
    if "QLOW" in prompt:
        return "Rating: 2"
    return None  # the stub's content: Rating: 4


class LeanReportTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = replies
        self.srv.content = "Rating: 4"

    def scored(self, name, items, *flags):
        """The -o file of a real run over ``items``."""
        data = self.write_jsonl(name + ".in.jsonl", items)
        out = self.path(name)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q", data,
                                 "-o", out, *flags])
        self.assertIn(code, (0, 1), err)
        return out

    def corpus(self):
        """Two runs' records: judged, parse errors, a bad record, unicode, an odd line."""
        items = [{"id": i, "question": "q{} {}".format(i, ("QLOW", "QHIGH", "QGARBLED")[i % 3]),
                  "response": "r\u00e9ponse \u2603 {}".format(i)} for i in range(12)]
        items.append({"id": 99, "question": "no response"})
        first = self.scored("a.jsonl", items)
        second = self.scored("b.jsonl", items, "--scale", "1,10")
        with open(first, "a", encoding="utf-8") as f:
            f.write("{torn line\n")
        return first, second

    def both_ways(self, names, *flags):
        """(outputs from the regular files, outputs from FIFOs of the same bytes), each
        (what report said, how many records its lean path took: add_lean's True returns)."""
        regular = self.report(names, "reg", flags)
        fifos = self.report(names, "fifo", flags)
        return regular, fifos

    def report(self, names, how, flags):
        folder = self.path(how + str(len(os.listdir(self.tmp))))
        os.mkdir(folder)
        paths = [os.path.join(folder, os.path.basename(name)) for name in names]
        writers = []
        for name, path in zip(names, paths):
            with open(name, "rb") as f:
                data = f.read()
            if how == "reg":
                with open(path, "wb") as f:
                    f.write(data)
                continue
            os.mkfifo(path)
            writers.append(threading.Thread(target=self.feed, args=(path, data), daemon=True))
            writers[-1].start()
        out = {"summary": os.path.join(folder, "s.json"), "html": os.path.join(folder, "p.html")}
        taken, add_lean = [], minijudge._Report.add_lean

        def counted(report, *args):  # the records the lean path took
            taken.append(add_lean(report, *args))
            return taken[-1]
        if how == "fifo":  # the general path alone

            def counted(report, *args):  # noqa: F811
                taken.append(False)
                return False
        with mock.patch.object(minijudge._Report, "add_lean", counted):
            code, stdout, stderr = run_main(["report", *paths, "--summary", out["summary"],
                                             "--html", out["html"], *flags])
        for writer in writers:
            writer.join(5)
        files = {}
        for key, path in out.items():
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    files[key] = f.read().replace(folder, "DIR")
        said = (code, stdout.replace(folder, "DIR"), stderr.replace(folder, "DIR"), files)
        return said, sum(taken)

    @staticmethod
    def feed(path, data):
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the report stopped reading at an error
            pass

    def assertSame(self, names, *flags, lean=True):
        (regular, calls), (fifo, fifo_calls) = self.both_ways(names, *flags)
        self.assertEqual(fifo_calls, 0)  # a FIFO: the general path alone
        if lean:
            self.assertGreater(calls, 0)  # the regular file: the lean path
        self.assertEqual(regular, fifo)
        return regular

    def test_one_run_judged_failed_and_torn(self):
        first, _ = self.corpus()
        code, stdout, stderr, files = self.assertSame([first])
        self.assertEqual(code, 1, stderr)  # a third of the records failed
        self.assertIn("a.jsonl: line 14: not JSON", stderr)
        summary = json.loads(files["summary"])
        self.assertEqual(summary["statuses"], {"ok": 8, "parse_error": 4, "bad_record": 1})
        self.assertEqual(summary["ratings"], {"2": 4, "4": 4})

    def test_several_runs_mixed(self):
        first, second = self.corpus()
        code, _, stderr, files = self.assertSame([first, second], "--mixed",
                                                 "--max-error-rate", "1")
        self.assertEqual(code, 0, stderr)
        self.assertEqual(json.loads(files["summary"])["records"], 26)
        said = self.assertSame([first, second], "--max-error-rate", "1", lean=False)
        self.assertIn("are records of different runs", said[2])

    def test_a_record_seen_twice(self):
        first, _ = self.corpus()
        copy = self.path("copy.jsonl")
        with open(first, "rb") as f, open(copy, "wb") as out:
            lines = f.readlines()
            out.writelines([lines[5], lines[0]])
        said = self.assertSame([first, copy])
        self.assertEqual(said[0], 2)
        self.assertIn("are the same record", said[2])

    def test_odd_fields_take_the_general_path(self):
        """Records the lean path leaves alone (a detail, a status no run writes, a bad line
        number, a label) among lean ones: the same summary either way."""
        first, _ = self.corpus()
        with open(first, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.startswith("{\"")]
        records[1]["judge_cost"] = 0.5
        records[3]["label"] = 3
        odd = self.write("odd.jsonl", "".join(json.dumps(r) + "\n" for r in records[:8]))
        said = self.assertSame([odd], "--human-field", "label", "--max-error-rate", "1")
        self.assertEqual(said[0], 0, said[2])
        self.assertIn("agreement with label: too few judged records with a label (n=1)", said[2])
        cases = (("judge_line", 0, 2, "bad0.jsonl line 2: judge_line must be"),
                 ("judge_usage", {"prompt_tokens": "300"}, 0, "tokens: 103 prompt, 2 "),
                 ("judge_status", "fine", 2, "bad2.jsonl line 2: judge_status must be"))
        for number, (field, value, code, said) in enumerate(cases):
            broken = dict(records[4], **{field: value})
            bad = self.write("bad{}.jsonl".format(number),
                             json.dumps(records[0]) + "\n" + json.dumps(broken) + "\n")
            out = self.assertSame([bad], lean=False)
            self.assertEqual(out[0], code, out[2])
            self.assertIn(said, out[1] + out[2])
